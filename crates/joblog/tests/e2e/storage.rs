//! A full disk under the real server: its data directory on a small tmpfs
//! that the test fills (mounting needs root, as CI runs; elsewhere the
//! test says it was skipped and how to run it), and the floor below which
//! new jobs are refused (`store.min_free_bytes`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use joblog_testkit::{eventually, PATIENCE};
use serde_json::{json, Value};

use super::Server;

/// A tmpfs of `size` mounted on a fresh directory, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None`, having said why, where this machine does not let the test
    /// mount one (not root, or no `mount`).
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output();
        match mounted {
            Ok(out) if out.status.success() => Some(Tmpfs { dir }),
            Ok(out) => {
                eprintln!(
                    "SKIPPED: cannot mount a tmpfs for the full-disk test ({}); run the tests as root to run it",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("SKIPPED: cannot run mount for the full-disk test ({e}); run the tests as root with mount installed to run it");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// `ENOSPC` on Linux.
const ENOSPC: i32 = 28;

/// Writes zeros to `path` until the filesystem has no room left.
fn fill(path: &Path) {
    let mut file = std::fs::File::create(path).unwrap();
    let chunk = vec![0u8; 64 << 10];
    loop {
        if let Err(e) = file.write_all(&chunk) {
            assert_eq!(e.raw_os_error(), Some(ENOSPC), "filling: {e}");
            // What a partial write left room for, too.
            while file.write_all(&[0]).is_ok() {}
            return;
        }
    }
}

/// `/healthz`'s status and body.
async fn healthz(server: &Server) -> (u16, Value) {
    let (status, body) = server.get_status("/healthz").await;
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

async fn metrics(server: &Server) -> String {
    server.get_status("/metrics").await.1
}

/// A submission's status and error code, and how long it took.
async fn try_submit(server: &Server) -> (u16, Value, Duration) {
    let started = Instant::now();
    let r = tokio::time::timeout(
        Duration::from_secs(30),
        server
            .http
            .post(format!("{}/api/v1/jobs", server.url))
            .json(&json!({"command": ["true"]}))
            .send(),
    )
    .await
    .expect("the submission was answered")
    .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap(), started.elapsed())
}

/// The disk fills under a running job: a submission gets `503
/// storage_full` at once and is never done, `/healthz` and `/metrics` say
/// why, the job is held (not killed, its output not dropped), and a cancel
/// stops another job's process at once though its end cannot be written;
/// once space returns everything goes on by itself, the cancelled job
/// ends `cancelled`, and the first job's log has every line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_new_work_holds_the_running_and_resumes_when_space_returns() {
    let Some(disk) = Tmpfs::mount("48m") else {
        return;
    };
    let data = disk.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let stop: PathBuf = outside.path().join("stop");
    let server = Server::start(&data, &["--store-min-free-bytes", "0"]).await;

    // A job writing a numbered line every few milliseconds until told.
    let id = server
        .submit(json!({
            "command": ["sh", "-c", r#"i=0; while [ ! -e "$STOP" ]; do i=$((i+1)); echo "line $i"; sleep 0.002; done; echo "last $i""#],
            "env": {"STOP": stop.to_str().unwrap()},
        }))
        .await;
    server
        .wait_until(id, "some records", |j| j.log.records > 20)
        .await;
    // One to cancel while the disk is full; it says where its process is.
    let pid_file = outside.path().join("pid");
    let doomed = server
        .submit(json!({
            "command": ["sh", "-c", r#"echo $$ > "$PID_FILE"; exec sleep 600"#],
            "env": {"PID_FILE": pid_file.to_str().unwrap()},
        }))
        .await;
    let pid: i32 = eventually("the job to start its process", PATIENCE, || async {
        std::fs::read_to_string(&pid_file).ok()?.trim().parse().ok()
    })
    .await;

    let filler = disk.path().join("filler");
    fill(&filler);
    eventually("the store to report its disk full", PATIENCE, || async {
        let (status, body) = healthz(&server).await;
        (status == 503 && body["store"] == "unavailable: storage full").then_some(())
    })
    .await;
    let (status, body, took) = try_submit(&server).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "storage_full", "{body}");
    assert!(
        took < Duration::from_secs(5),
        "the submission waited {took:?}"
    );
    assert!(metrics(&server).await.contains("joblog_store_full 1"));
    let job = server.job(id).await;
    assert_eq!(
        job["state"], "running",
        "the job was held, not ended: {job}"
    );
    let asked = Instant::now();
    let r = server.cancel(doomed).await;
    assert!(r.status().is_success(), "cancel while full: {}", r.status());
    eventually(
        "the cancelled job's process to be gone",
        PATIENCE,
        || async {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
            // Gone, or dead and not yet reaped.
            stat.is_none_or(|s| s.contains(") Z ")).then_some(())
        },
    )
    .await;
    eprintln!(
        "the cancelled job's process was gone {:?} after the cancel, the disk full",
        asked.elapsed()
    );

    std::fs::remove_file(&filler).unwrap();
    eventually("writes to succeed again", PATIENCE, || async {
        let (status, _) = healthz(&server).await;
        (status == 200).then_some(())
    })
    .await;
    std::fs::write(&stop, b"").unwrap();
    let done = server.wait_finished(id).await;
    assert_eq!(done["state"], "succeeded", "{done}");
    let cancelled = server.wait_finished(doomed).await;
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");

    let log = server.whole_log(id).await;
    let lines: Vec<&str> = log.iter().filter_map(|r| r["message"].as_str()).collect();
    let last = lines.last().expect("a log");
    let n: u64 = last
        .strip_prefix("last ")
        .unwrap_or_else(|| panic!("the last line is {last:?}"))
        .parse()
        .unwrap();
    let expected: Vec<String> = (1..=n).map(|i| format!("line {i}")).collect();
    assert_eq!(
        &lines[..lines.len() - 1],
        &expected[..],
        "a line is missing"
    );
    for (i, r) in log.iter().enumerate() {
        assert_eq!(r["seq"].as_u64(), Some(i as u64 + 1), "a gap in the seqs");
    }

    // Nothing refused was done later: the only jobs are the first two.
    let listed = server.get_json("/api/v1/jobs").await;
    assert_eq!(listed["jobs"].as_array().map(Vec::len), Some(2), "{listed}");
    let (status, body, _) = try_submit(&server).await;
    assert_eq!(status, 201, "{body}");
    assert!(metrics(&server).await.contains("joblog_store_full 0"));
}

/// Below `store.min_free_bytes` new jobs are refused before the disk is
/// full, and `/healthz` and `/metrics` say so. (No mount needed: the
/// floor is set above what any disk here has free.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn below_the_floor_new_jobs_are_refused_before_the_disk_is_full() {
    let dir = tempfile::tempdir().unwrap();
    // Started by hand: `Server::start` waits for a healthy server, and
    // this one is not.
    let port = joblog_testkit::free_port();
    let mut child = Command::new(super::BIN)
        .arg("serve")
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--store-min-free-bytes", "1000000TiB"])
        .env("JOBLOG_LOG", "warn")
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let http = super::http_client();
    let (status, body) = eventually("the server to answer", PATIENCE, || async {
        let r = http.get(format!("{url}/healthz")).send().await.ok()?;
        let status = r.status().as_u16();
        Some((status, r.json::<Value>().await.ok()?))
    })
    .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["store"], "ok", "{body}");
    let storage = body["storage"].as_str().unwrap();
    assert!(
        storage.starts_with("low: ") && storage.contains("store.min_free_bytes"),
        "{body}"
    );
    let r = http
        .post(format!("{url}/api/v1/jobs"))
        .json(&json!({"command": ["true"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "storage_full", "{body}");
    let text = http
        .get(format!("{url}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("joblog_storage_low 1"), "{text}");
    let _ = child.kill();
    let _ = child.wait();
}
