//! What a hostile or careless job does to the server it runs on, against
//! the real binary: orphans that exit at once are reaped (no zombies
//! fill the process table); what the server creates is its own alone.

use std::time::Duration;

use joblog_testkit::{eventually, PATIENCE};
use serde_json::json;

use super::Server;

/// The server's children that are zombies now, from `/proc`.
fn zombie_children(server: u32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            let state = fields.next();
            let ppid = fields.next().and_then(|p| p.parse::<u32>().ok());
            state == Some("Z") && ppid == Some(server)
        })
        .collect()
}

/// Jobs whose orphans exit at once (`(true &)`, the shell's way to start
/// something detached): each is handed to the server, a subreaper, and
/// must be reaped at once, never left a zombie until the server exits.
/// Twenty such jobs at once, 100 orphans each: none is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphans_that_exit_at_once_are_reaped_even_under_a_fork_storm() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--max-concurrency", "20"]).await;
    let storm =
        json!({"command": ["sh", "-c", "for i in $(seq 100); do (true &); done; echo forked"]});
    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.push(server.submit(storm.clone()).await);
    }
    for id in ids {
        let job = server.wait_finished(id).await;
        assert_eq!(job["state"], "succeeded", "{job}");
    }
    eventually("the server to reap every child", PATIENCE, || async {
        let zombies = zombie_children(server.pid());
        if zombies.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{} zombie children (the first: {:?})",
                zombies.len(),
                &zombies[..zombies.len().min(10)]
            ))
        }
    })
    .await;
    // The server still runs jobs (none of their statuses was stolen).
    let id = server
        .submit(json!({"command": ["sh", "-c", "(true &); exit 3"]}))
        .await;
    let job = server.wait_finished(id).await;
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["exit_code"], 3, "{job}");
}

/// Started with umask 000, the server still makes its data directory,
/// database, results and logs its user's alone, while a job's own files
/// follow the umask it was started with; a data directory already open
/// to others is warned about.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_server_creates_is_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| {
        std::fs::metadata(p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .permissions()
            .mode()
            & 0o777
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let job_file = dir.path().join("made-by-the-job");
    // The same command, started by a shell that set umask 000 first.
    let server = Server::start_with(&data, &[], |c| {
        let mut wrapped = std::process::Command::new("sh");
        wrapped
            .args(["-c", "umask 000 && exec \"$0\" \"$@\"", super::BIN])
            .args(c.get_args())
            .envs(c.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .stdin(std::process::Stdio::null());
        *c = wrapped;
    })
    .await;
    let id = server
        .submit(json!({"command": ["sh", "-c", format!(
            "echo '{{\"a\": 1}}' > \"$JOBLOG_RESULT\"; touch {}", job_file.display()
        )]}))
        .await;
    let job = server.wait_finished(id).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    assert_eq!(mode(&data), 0o700, "the data directory");
    for name in ["joblog.db", "joblog.db-wal", "joblog.db-shm"] {
        let path = data.join(name);
        if path.exists() {
            assert_eq!(mode(&path), 0o600, "{name}");
        }
    }
    assert_eq!(mode(&data.join("results")), 0o700, "results");
    let logs = data.join("logs");
    assert_eq!(mode(&logs), 0o700, "logs");
    eventually("access.log", PATIENCE, || async {
        logs.join("access.log").exists().then_some(())
    })
    .await;
    assert_eq!(mode(&logs.join("access.log")), 0o600, "access.log");
    assert_eq!(
        mode(&job_file),
        0o666,
        "the job keeps the umask it was given"
    );
    drop(server);

    // Opened up by hand: the next start warns.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let stderr = dir.path().join("stderr.log");
    let file = std::fs::File::create(&stderr).unwrap();
    let mut server = Server::start_with(&data, &[], |c| {
        c.env("NO_COLOR", "1").stderr(file);
    })
    .await;
    server.signal("TERM");
    assert_eq!(server.wait_exit(), Some(0));
    let text = std::fs::read_to_string(&stderr).unwrap();
    assert!(
        text.contains("is open to other users (mode 0755)"),
        "{text}"
    );
}

/// `serve --token` puts the token in every user's `ps`: the server says
/// so at start (never printing it); `--token-file` does not warn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_given_as_a_flag_is_warned_about() {
    const TOKEN: &str = "e2e-flag-token-0123456789abcdef0123456789";
    let dir = tempfile::tempdir().unwrap();
    let start = |args: Vec<String>, log: &str| {
        let stderr = dir.path().join(log);
        let file = std::fs::File::create(&stderr).unwrap();
        let data = dir.path().join("data");
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let mut server = Server::start_with(&data, &args, |c| {
                c.env("NO_COLOR", "1").stderr(file);
            })
            .await;
            server.signal("TERM");
            assert_eq!(server.wait_exit(), Some(0));
            std::fs::read_to_string(&stderr).unwrap()
        }
    };
    let text = start(vec!["--token".into(), TOKEN.into()], "flag.log").await;
    assert!(
        text.contains("the API token was given with --token: every user of this host can read it"),
        "{text}"
    );
    assert!(!text.contains(TOKEN), "the token itself was printed");
    let token_file = dir.path().join("admin.token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let text = start(
        vec!["--token-file".into(), token_file.display().to_string()],
        "file.log",
    )
    .await;
    assert!(!text.contains("--token:"), "{text}");
}

/// With `--run-as`, jobs run as that user: they cannot read the database,
/// the data directory or the token file, write their result through the
/// descriptor they are given, and are still cancelled; a token file that
/// user could read keeps the server from starting, and a root server
/// without `--run-as` says its jobs run as root. Needs root (CI is).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_run_as_another_user_cannot_reach_the_servers_files() {
    use std::os::unix::fs::PermissionsExt;
    if !nix::unistd::geteuid().is_root() {
        eprintln!("note: run_as test SKIPPED — it needs root (to switch jobs to `nobody`)");
        return;
    }
    const TOKEN: &str = "e2e-run-as-token-0123456789abcdef0123456789";
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let token_file = dir.path().join("admin.token");
    std::fs::write(&token_file, TOKEN).unwrap();
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let data = dir.path().join("data");
    let args = [
        "--run-as",
        "nobody",
        "--token-file",
        token_file.to_str().unwrap(),
    ];
    let server = Server::start(&data, &args).await;
    let script = format!(
        r#"echo "uid=$(id -u) home=$HOME"
cat {db} >/dev/null 2>&1 && echo "db: READ" || echo "db: denied"
ls {data} >/dev/null 2>&1 && echo "data: LISTED" || echo "data: denied"
cat {token} >/dev/null 2>&1 && echo "token: READ" || echo "token: denied"
echo '{{"ran_as": "nobody"}}' > "$JOBLOG_RESULT""#,
        db = data.join("joblog.db").display(),
        data = data.display(),
        token = token_file.display(),
    );
    let server = server.with_token(TOKEN);
    let id = server
        .submit(json!({"command": ["sh", "-c", script]}))
        .await;
    let job = server.wait_finished(id).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let get = |path: String| server.http.get(format!("{}{path}", server.url)).send();
    let text = get(format!("/api/v1/jobs/{id}/log/text"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        "uid=65534 home=",
        "db: denied",
        "data: denied",
        "token: denied",
    ] {
        assert!(text.contains(line), "{line:?} not in:\n{text}");
    }
    let result: serde_json::Value = get(format!("/api/v1/jobs/{id}/result"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(result, json!({"ran_as": "nobody"}));
    // A job of another user is still stopped.
    let id = server.submit(json!({"command": ["sleep", "60"]})).await;
    server
        .wait_until(id, "running", |j| j.state == "running")
        .await;
    let cancel = server
        .http
        .post(format!("{}/api/v1/jobs/{id}/cancel", server.url))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status(), 200);
    server
        .wait_until(id, "cancelled", |j| j.state == "cancelled")
        .await;
    drop(server);

    // A token file the job user could read: refused at start (run by
    // hand, not by `Server`: the start must fail).
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = std::process::Command::new(super::BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("admin.token (mode 0644") && err.contains("is readable by \"nobody\""),
        "{err}"
    );
}

/// Sends `GET /healthz` on a fresh connection from `local` and returns
/// what came back (status line and body).
async fn healthz_from(server: &Server, local: std::net::IpAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr: std::net::SocketAddr = server.url.trim_start_matches("http://").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind((local, 0).into()).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut text = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_string(&mut text)).await;
    text
}

/// Opens `n` idle connections from `local` (they send nothing).
async fn idle_connections(
    server: &Server,
    local: std::net::IpAddr,
    n: usize,
) -> Vec<tokio::net::TcpStream> {
    let addr: std::net::SocketAddr = server.url.trim_start_matches("http://").parse().unwrap();
    let mut held = Vec::new();
    for _ in 0..n {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind((local, 0).into()).unwrap();
        held.push(socket.connect(addr).await.unwrap());
    }
    held
}

/// One address cannot take every connection, one token cannot take every
/// live viewer, and the last connections still let an admin (and
/// `/healthz`) in while a viewer is turned away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_of_one_address_and_streams_of_one_identity_are_bounded() {
    const TOKEN: &str = "e2e-limits-token-0123456789abcdef0123456789";
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("admin.token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let args = [
        "--token-file",
        token_file.to_str().unwrap(),
        "--http-max-connections",
        "32",
        "--http-max-connections-per-address",
        "8",
        "--http-max-viewers-per-identity",
        "3",
    ];
    let server = Server::start(&dir.path().join("data"), &args).await;
    let a: std::net::IpAddr = [127, 0, 0, 2].into();
    let held = idle_connections(&server, a, 8).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let refused = healthz_from(&server, a).await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(
        refused.contains("http.max_connections_per_address"),
        "{refused}"
    );
    let other = healthz_from(&server, [127, 0, 0, 3].into()).await;
    assert!(
        other.starts_with("HTTP/1.1 200"),
        "another address: {other}"
    );
    drop(held);

    // A viewer's live feeds: three, not four.
    let made: serde_json::Value = server
        .http
        .post(format!("{}/api/v1/tokens", server.url))
        .bearer_auth(TOKEN)
        .json(&json!({"name": "watcher", "role": "viewer"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let viewer = made["token"].as_str().unwrap().to_string();
    let feed = || {
        server
            .http
            .get(format!("{}/api/v1/events", server.url))
            .bearer_auth(&viewer)
            .send()
    };
    let mut feeds = Vec::new();
    for _ in 0..3 {
        let r = feed().await.unwrap();
        assert_eq!(r.status(), 200);
        feeds.push(r);
    }
    let fourth = feed().await.unwrap();
    assert_eq!(fourth.status(), 429);
    let body: serde_json::Value = fourth.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("http.max_viewers_per_identity"),
        "{body}"
    );
    drop(feeds);

    // 28 of 32 connections held (from four addresses): the last four are
    // the reserve, for /healthz and admins only.
    let mut held = Vec::new();
    for k in 10..14u8 {
        held.extend(idle_connections(&server, [127, 0, 0, k].into(), 7).await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let fresh = http_client_for_reserve();
    let as_viewer = fresh
        .get(format!("{}/api/v1/jobs", server.url))
        .bearer_auth(&viewer)
        .send()
        .await
        .unwrap();
    assert_eq!(as_viewer.status(), 503, "a viewer on a reserved connection");
    let fresh = http_client_for_reserve();
    let as_admin = fresh
        .get(format!("{}/api/v1/jobs", server.url))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(as_admin.status(), 200, "an admin on a reserved connection");
    let health = healthz_from(&server, [127, 0, 0, 20].into()).await;
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    drop(held);
}

/// A client with a connection of its own (not the shared pool's).
fn http_client_for_reserve() -> reqwest::Client {
    joblog_client::install_tls_provider();
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

/// HTTP/2 runs many requests on one connection: their bodies together are
/// held to one connection's budget (the largest body a route takes, 1 MiB
/// by default), so a client cannot make the server buffer a hundred
/// bodies at once. Two submissions of 700 KB each, sent at once on one
/// h2c connection and held open: one is refused `503 server_busy`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_streams_share_one_connections_body_budget() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("data"), &[]).await;
    joblog_client::install_tls_provider();
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    // 700 KB of a submission's JSON at once, the rest 2 s later.
    let body = || {
        let head = format!(
            "{{\"command\": [\"true\"], \"env\": {{\"PAD\": \"{}",
            "x".repeat(700_000)
        );
        let pieces: Vec<Result<Vec<u8>, std::io::Error>> =
            vec![Ok(head.into_bytes()), Ok(b"\"}}".to_vec())];
        let stream = futures_util::stream::iter(pieces.into_iter().enumerate()).then(
            |(i, piece)| async move {
                if i == 1 {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
                piece
            },
        );
        reqwest::Body::wrap_stream(stream)
    };
    use futures_util::StreamExt;
    let send = || {
        h2.post(format!("{}/api/v1/jobs", server.url))
            .header("content-type", "application/json")
            .body(body())
            .send()
    };
    let (a, b) = tokio::join!(send(), send());
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.version(), reqwest::Version::HTTP_2);
    let mut statuses = [a.status().as_u16(), b.status().as_u16()];
    statuses.sort_unstable();
    assert_eq!(
        statuses,
        [201, 503],
        "one fits the connection's budget, not two"
    );
    let busy = if a.status() == 503 { a } else { b };
    let e: serde_json::Value = busy.json().await.unwrap();
    assert_eq!(e["error"]["code"], "server_busy", "{e}");
}
