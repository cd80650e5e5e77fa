//! `joblog notify` on the real binary, against a web hook served by the
//! test on loopback: a rule made, listed (its hook by its host only, the
//! path being its secret), tested, changed, shown with the delivery of a
//! job's end, tested again against a closed port (exit 1), and deleted.
//! (E-mail rules need the server's SMTP settings: the client's side of
//! them is the unit tests'.)

use std::sync::{Arc, Mutex};

use joblog_testkit::{eventually, free_port, PATIENCE};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::{cli, Server};

/// The requests a web hook was sent (head and body, as text).
type Seen = Arc<Mutex<Vec<String>>>;

/// A web hook on a loopback port answering every request 200; returns
/// its `http://127.0.0.1:PORT` and what it is sent.
async fn hook() -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen: Seen = Arc::default();
    let kept = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                // The head, then as much body as its Content-Length says.
                loop {
                    match conn.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + length {
                        break;
                    }
                }
                kept.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf).into_owned());
                let _ = conn
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
            });
        }
    });
    (base, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notification_rules_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    // The hook is on loopback, which a rule may reach only when allowed.
    let server = Server::start(dir.path(), &["--notify-allow-private-targets", "true"]).await;
    let (base, seen) = hook().await;
    let url = format!("{base}/services/T0/s3cr3t-path");

    let (code, out, err) = cli(
        &server,
        &[
            "notify",
            "add",
            "--name",
            "e2e-failures",
            "--on",
            "timed_out,failed",
            "--job-name",
            "e2e-*",
            "--webhook",
            &url,
            "--header",
            "X-Team: ops",
        ],
    );
    assert_eq!(code, 0, "{err}");
    for line in [
        "name:    e2e-failures\n",
        "on:      failed, timed_out\n",
        "jobs:    e2e-*\n",
        &format!("webhook: {url}\n"),
        "headers: X-Team: ops\n",
    ] {
        assert!(out.contains(line), "{line:?} not in:\n{out}");
    }
    // Neither a web hook nor an e-mail: refused before any request.
    let (code, _, err) = cli(&server, &["notify", "add", "--name", "x", "--on", "failed"]);
    assert_eq!(code, 2, "{err}");

    // The table shows the hook's host, never its path.
    let (code, table, _) = cli(&server, &["notify", "list"]);
    assert_eq!(code, 0);
    assert!(
        table.contains("e2e-failures") && table.contains(&format!("json {base}/…")),
        "{table}"
    );
    assert!(!table.contains("s3cr3t"), "{table}");
    let (code, listed, _) = cli(&server, &["notify", "list", "--json"]);
    assert_eq!(code, 0);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["rules"][0]["webhook"]["url"], url.as_str());
    let id = listed["rules"][0]["id"].as_i64().unwrap().to_string();

    // No job ended yet: the test tells of an example job.
    let (code, out, err) = cli(&server, &["notify", "test", &id]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out,
        format!("rule {id}: test delivered (HTTP 200) of an example job\n")
    );
    let sent = seen
        .lock()
        .unwrap()
        .pop()
        .expect("the hook was sent the test");
    assert!(sent.starts_with("POST /services/T0/s3cr3t-path "), "{sent}");
    assert!(sent.to_ascii_lowercase().contains("x-team: ops"), "{sent}");

    let (code, _, err) = cli(&server, &["notify", "edit", &id]);
    assert_eq!(code, 2);
    assert!(err.contains("nothing to change"), "{err}");
    // A part of `when` changes, the rest stays.
    let (code, out, err) = cli(
        &server,
        &["notify", "edit", &id, "--on", "failed", "--no-headers"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("on:      failed\n") && out.contains("jobs:    e2e-*\n"),
        "{out}"
    );
    assert!(!out.contains("headers:"), "{out}");

    // A job's end is delivered, and `show` lists the delivery.
    let job = server
        .submit(json!({"name": "e2e-break", "command": ["sh", "-c", "exit 3"]}))
        .await;
    server.wait_finished(job).await;
    let deliveries = format!("{}/api/v1/notifications/{id}/deliveries", server.url);
    eventually("the job's end to be delivered", PATIENCE, || async {
        let page: Value = server
            .http
            .get(&deliveries)
            .send()
            .await
            .expect("deliveries")
            .json()
            .await
            .expect("deliveries json");
        let d = &page["deliveries"][0];
        (d["job_id"] == job && d["state"] == "delivered").then_some(())
    })
    .await;
    let (code, out, err) = cli(&server, &["notify", "show", &id]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\nlatest deliveries:\n"), "{out}");
    let row = out
        .lines()
        .find(|l| l.contains(" delivered "))
        .unwrap_or_else(|| panic!("no delivered row in:\n{out}"));
    assert!(
        row.contains(&format!("  {job}  ")) && row.contains(" 200"),
        "{row}"
    );
    assert!(
        seen.lock().unwrap().iter().any(|r| r.contains("e2e-break")),
        "the hook was not told of the job"
    );

    // A hook that does not answer: not delivered, exit 1, with or
    // without --json.
    let closed = format!("http://127.0.0.1:{}/gone", free_port());
    let (code, _, err) = cli(&server, &["notify", "edit", &id, "--webhook", &closed]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = cli(&server, &["notify", "test", &id]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.starts_with(&format!("rule {id}: test of job {job} not delivered")),
        "{out}"
    );
    let (code, out, _) = cli(&server, &["notify", "test", &id, "--json"]);
    assert_eq!(code, 1, "{out}");
    let sent: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(sent["delivered"], false);

    let (code, out, _) = cli(&server, &["notify", "delete", &id]);
    assert_eq!(code, 0);
    assert_eq!(out, format!("deleted notification rule {id}\n"));
    let (code, _, _) = cli(&server, &["notify", "show", &id]);
    assert_eq!(code, 1);
}
