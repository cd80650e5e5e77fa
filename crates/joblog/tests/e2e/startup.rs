//! `joblog serve` is safe to start: a second server on a data directory or
//! SQLite file in use is refused, a relative data directory still gives
//! jobs absolute paths, the first log line names every configuration
//! source, and a restart on PostgreSQL logs no notices.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use joblog_store::testing::TestDatabase;
use joblog_testkit::{free_port, within_blocking};
use serde_json::{json, Value};

use super::{cli, Server, BIN};

/// Runs `joblog serve` with `args` as a server that should not start:
/// returns its exit code and stderr. One that is still serving after 30 s
/// is killed and reported with no exit code.
fn refused_start(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(BIN)
        .arg("serve")
        .arg("--listen")
        .arg(format!("127.0.0.1:{}", free_port()))
        .args(args)
        .env("JOBLOG_LOG", "warn")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let exited = within_blocking(Duration::from_secs(30), || child.try_wait().unwrap());
    let code = match exited {
        Some(status) => status.code(),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (code, err)
}

/// The operator's report: a second server on the same data directory
/// started and marked the first one's running job `interrupted`. Now it is
/// refused before it opens anything, naming what is in use and by whom;
/// so is a server on another data directory whose `--database` is the
/// first one's SQLite file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_on_a_data_dir_or_sqlite_file_in_use_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data, &[]).await;
    let id = server
        .submit(json!({"name": "long", "command": ["sleep", "600"]}))
        .await;
    server
        .wait_until(id, "running", |j| j.state == "running")
        .await;
    let pid = format!("pid {}", server.pid());

    let data_arg = data.display().to_string();
    let (code, err) = refused_start(&["--data-dir", &data_arg]);
    assert!(matches!(code, Some(c) if c != 0), "{code:?}: {err}");
    assert!(err.contains(&data_arg) && err.contains(&pid), "{err}");

    let db_file = data.join("joblog.db").display().to_string();
    let other = dir.path().join("other").display().to_string();
    let url = format!("sqlite://{db_file}");
    let (code, err) = refused_start(&["--data-dir", &other, "--database", &url]);
    assert!(matches!(code, Some(c) if c != 0), "{code:?}: {err}");
    assert!(err.contains(&db_file) && err.contains(&pid), "{err}");

    assert_eq!(server.job(id).await["state"], "running");
    let r = server.cancel(id).await;
    assert!(r.status().is_success(), "{}", r.status());
    server.wait_finished(id).await;
}

/// With a relative data directory, `JOBLOG_RESULT` was relative too: a
/// job with a `cwd`, or one that changed directory, could not write its
/// result. The data directory is made absolute (from the server's working
/// directory) at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relative_data_dir_gives_jobs_an_absolute_result_path() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with(Path::new("data"), &[], |c| {
        c.current_dir(dir.path());
    })
    .await;
    let id = server
        .submit(json!({
            "cwd": "/tmp",
            "script": "cd / && echo \"$JOBLOG_RESULT\" && echo '{\"ok\":1}' > \"$JOBLOG_RESULT\"",
        }))
        .await;
    let job = server.wait_finished(id).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let log = server.log_page(id, 0, 10).await;
    let path = log[0]["message"].as_str().unwrap();
    let data = dir.path().canonicalize().unwrap().join("data");
    assert!(
        path.starts_with('/') && Path::new(path).starts_with(&data),
        "JOBLOG_RESULT={path}"
    );
    let (code, out, err) = cli(&server, &["result", &id.to_string()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!({"ok": 1})
    );
}

/// A stray `./joblog.toml` was read without a word. The server's first
/// log line names the file (absolute), the `JOBLOG_*` variables (names,
/// never values) and the flags it was given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_log_line_names_every_configuration_source() {
    const TOKEN: &str = "bootstrap-token-value-not-for-logs-0123456789";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("joblog.toml"), "max_queued = 500\n").unwrap();
    let log = dir.path().join("stderr.log");
    let file = std::fs::File::create(&log).unwrap();
    let mut server = Server::start_with(&dir.path().join("data"), &[], |c| {
        c.current_dir(dir.path())
            .env("JOBLOG_LOG", "info")
            .env("NO_COLOR", "1")
            .env("JOBLOG_TOKEN", TOKEN)
            .env("JOBLOG_KILL_GRACE", "1234ms")
            .stderr(file);
    })
    .await;
    server.signal("TERM");
    assert_eq!(server.wait_exit(), Some(0));
    let text = std::fs::read_to_string(&log).unwrap();
    let first = text.lines().next().unwrap_or_default();
    let config = dir.path().canonicalize().unwrap().join("joblog.toml");
    for named in [
        config.display().to_string().as_str(),
        "JOBLOG_TOKEN",
        "JOBLOG_KILL_GRACE",
        "JOBLOG_LOG",
        "--listen",
        "--data-dir",
    ] {
        assert!(first.contains(named), "{named} not in {first:?}");
    }
    assert!(!text.contains(TOKEN), "the token is in the log: {text}");
    assert!(
        !text.contains("1234ms"),
        "a variable's value is in the log: {text}"
    );
}

/// Migrations and partitions use `CREATE … IF NOT EXISTS`, and PostgreSQL
/// answers each with a NOTICE, which was logged at every start. A second
/// start on the same database (and a job, which makes the writer look for
/// its partition) logs no notice and no warning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_on_postgres_logs_no_notices() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("second.log");
    for round in 0..2 {
        let file = std::fs::File::create(&log).unwrap();
        let mut server = Server::start_with(&data, &["--database", db.url()], |c| {
            c.env("JOBLOG_LOG", "info")
                .env("NO_COLOR", "1")
                .stderr(file);
        })
        .await;
        let id = server
            .submit(json!({"command": ["echo", format!("round {round}")]}))
            .await;
        assert_eq!(server.wait_finished(id).await["state"], "succeeded");
        server.signal("TERM");
        assert_eq!(server.wait_exit(), Some(0));
    }
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("joblog is serving"), "{text}");
    // As root without jobs.run_as the server rightly warns that its jobs
    // run as root (CI is root): that warning is not this test's business.
    assert!(
        !text.contains("NOTICE")
            && !text
                .lines()
                .any(|l| l.contains(" WARN ") && !l.contains("set jobs.run_as")),
        "{text}"
    );
}
