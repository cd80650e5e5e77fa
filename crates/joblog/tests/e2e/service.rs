//! Running joblog as a service: `joblog backup` of a live server and the
//! restore of its copy on a new one, and `joblog health` as a container's
//! health check.

use std::process::{Command, Stdio};

use joblog_testkit::{eventually, PATIENCE};
use serde_json::{json, Value};

use super::{cli, stored_lines, Server, BIN};

/// The ids and states in a `joblog jobs --json` listing.
fn listed(out: &str) -> Vec<(i64, String)> {
    let v: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
    v["jobs"]
        .as_array()
        .unwrap_or_else(|| panic!("no jobs in {out}"))
        .iter()
        .map(|j| {
            (
                j["id"].as_i64().unwrap(),
                j["state"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn file_names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_of_a_running_server_restores_on_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = dir.path().join("backups");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let server = Server::start(&data, &[]).await;
    let done = server
        .submit(json!({"name": "done", "script": "seq 1 300"}))
        .await;
    server.wait_finished(done).await;
    let flag = dir.path().join("stop");
    let running = server
        .submit(json!({
            "name": "running",
            "script": format!(
                "i=0; while [ ! -e {} ]; do i=$((i+1)); echo \"line $i\"; sleep 0.01; done",
                flag.display()
            ),
        }))
        .await;
    server
        .wait_until(running, "10 records", |j| j.log.records >= 10)
        .await;

    let copy = out.join("joblog-copy.db");
    let copy_arg = copy.display().to_string();
    let (code, stdout, stderr) = cli(&server, &["backup", &copy_arg]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let size = std::fs::metadata(&copy).unwrap().len();
    assert!(
        stdout.starts_with(&format!("wrote {copy_arg} ("))
            && stdout.contains(&format!("{size} bytes")),
        "{stdout}"
    );
    // No partial file beside it, no snapshot left in the data directory.
    assert_eq!(file_names(&out), ["joblog-copy.db"]);
    assert!(
        !file_names(&data).iter().any(|n| n.contains(".backup-")),
        "{:?}",
        file_names(&data)
    );

    // An existing file is kept unless --force.
    let before = std::fs::read(&copy).unwrap();
    let (code, _, stderr) = cli(&server, &["backup", &copy_arg]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("exists") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&copy).unwrap(), before);
    assert_eq!(file_names(&out), ["joblog-copy.db"]);
    let (code, _, stderr) = cli(&server, &["backup", "--force", &copy_arg]);
    assert_eq!(code, 0, "{stderr}");

    // The copy opens with SQLite and holds the jobs: the finished one
    // whole, the running one as it was.
    {
        let db = rusqlite::Connection::open(&copy).unwrap();
        let state = |id: i64| -> String {
            db.query_row("SELECT state FROM jobs WHERE id = ?1", [id], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(state(done), "succeeded");
        assert_eq!(state(running), "running");
        assert_eq!(stored_lines(&db, done).len(), 300);
    }
    std::fs::write(&flag, b"").unwrap();
    server.wait_finished(running).await;
    drop(server);

    // The restore: a new server on a data directory holding the copy as
    // joblog.db. The job that was running when the copy was made did not
    // finish in it, so it is interrupted.
    let restored = dir.path().join("restored");
    std::fs::create_dir_all(&restored).unwrap();
    std::fs::copy(&copy, restored.join("joblog.db")).unwrap();
    let server = Server::start(&restored, &[]).await;
    let (code, stdout, stderr) = cli(&server, &["jobs", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        listed(&stdout),
        [
            (running, "interrupted".to_string()),
            (done, "succeeded".to_string())
        ]
    );
    let (code, stdout, _) = cli(&server, &["logs", &done.to_string()]);
    assert_eq!(code, 0);
    let expected: String = (1..=300).map(|i| format!("{i}\n")).collect();
    assert_eq!(stdout, expected);
}

/// Runs `joblog health` against `url` with `JOBLOG_TOKEN_FILE` naming a
/// file that does not exist (the check must not need it).
fn health(url: &str, json: bool) -> (i32, String, String) {
    let mut command = Command::new(BIN);
    command
        .args(["--server", url, "health"])
        .env_remove("JOBLOG_TOKEN")
        .env("JOBLOG_TOKEN_FILE", "/nonexistent/joblog.token")
        .stdin(Stdio::null());
    if json {
        command.arg("--json");
    }
    let out = command.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_exits_0_when_healthy_and_1_when_stopping_or_gone() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("admin.token");
    std::fs::write(&token, "e2e-health-token-0123456789abcdefghijkl\n").unwrap();
    let mut server = Server::start(
        dir.path(),
        &[
            "--token-file",
            &token.display().to_string(),
            "--grace-period",
            "5m",
        ],
    )
    .await;
    let url = server.url.clone();
    let (code, stdout, stderr) = health(&url, false);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.starts_with("ok (node "), "{stdout}");
    let (code, stdout, _) = health(&url, true);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["status"], "ok");

    // A stopping server (its grace period holds a running job) is not
    // healthy: it takes no jobs.
    let flag = dir.path().join("stop");
    let (code, _, stderr) = cli(
        &server,
        &[
            "--token-file",
            &token.display().to_string(),
            "run",
            "--detach",
            "--",
            "sh",
            "-c",
            &format!("while [ ! -e {} ]; do sleep 0.05; done", flag.display()),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    server.signal("TERM");
    let stdout = eventually("the draining server to be unhealthy", PATIENCE, || async {
        let (code, stdout, stderr) = health(&url, false);
        assert!(code == 0 || code == 1, "{stderr}");
        (code == 1).then_some(stdout)
    })
    .await;
    assert!(
        stdout.starts_with("unavailable") && stdout.contains("not taking jobs"),
        "{stdout}"
    );
    std::fs::write(&flag, b"").unwrap();
    assert_eq!(server.wait_exit(), Some(0));

    let (code, stdout, stderr) = health(&url, false);
    assert_eq!(code, 1, "{stdout}");
    assert!(stderr.contains("cannot connect"), "{stderr}");
}

/// `joblog --version` names the crate's version and the commit the binary
/// was built from (build.rs), as a bug report needs.
#[test]
fn version_names_the_commit() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).unwrap();
    let git = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    // Built from a checkout: its commit; from a tarball: `unknown`.
    let commit = match git {
        Ok(o) if o.status.success() => String::from_utf8(o.stdout).unwrap().trim().to_string(),
        _ => "unknown".to_string(),
    };
    assert_eq!(
        line.trim(),
        format!("joblog {} (commit {commit})", env!("CARGO_PKG_VERSION"))
    );
}
