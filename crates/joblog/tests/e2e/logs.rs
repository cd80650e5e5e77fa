//! The server's own logs, end to end: the default files fill as requests
//! come, audit entries reach the file and the database, SIGHUP reopens a
//! file logrotate moved and applies a changed `[logging]` section (and
//! refuses an invalid one, keeping the old), the API replaces it live,
//! and `/metrics` counts per sink.

use std::path::Path;
use std::time::Duration;

use joblog_testkit::{eventually, PATIENCE};
use serde_json::{json, Value};

use super::Server;

/// The JSON lines of a log file (none while it does not exist).
fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Waits until `path` has a line for which `pred` holds, and returns it.
async fn wait_line(path: &Path, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    eventually(
        &format!("{} to have {what}", path.display()),
        PATIENCE,
        || async {
            let lines = lines(path);
            match lines.iter().find(|line| pred(line)) {
                Some(line) => Ok(line.clone()),
                None => Err(format!("{lines:#?}")),
            }
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_and_state_change_reaches_its_log_file_and_the_audit_api() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let logs = dir.path().join("logs");
    let r = server
        .http
        .post(format!("{}/api/v1/jobs", server.url))
        .header("x-request-id", "e2e-submit-1")
        .json(&json!({"name": "audited", "command": ["true"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(r.headers()["x-request-id"], "e2e-submit-1");
    let id = r.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
    let missing = server
        .http
        .get(format!("{}/api/v1/nothing-here", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let generated = missing.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_string();
    assert_eq!(
        generated.len(),
        16,
        "a request id is made when none is sent"
    );

    let access = logs.join("access.log");
    let submitted = wait_line(&access, "the submission", |l| {
        l["request_id"] == "e2e-submit-1"
    })
    .await;
    assert_eq!(submitted["log"], "access");
    assert_eq!(submitted["type"], "POST /api/v1/jobs");
    assert_eq!(submitted["status"], 201);
    assert_eq!(submitted["job_id"], id);
    assert_eq!(submitted["actor"], "anonymous");
    assert!(submitted["remote"]
        .as_str()
        .unwrap()
        .starts_with("127.0.0.1:"));
    assert!(submitted["bytes"].as_u64().unwrap() > 0);
    let not_found = wait_line(&access, "the 404", |l| {
        l["request_id"] == generated.as_str()
    })
    .await;
    assert_eq!(not_found["level"], "warn");
    assert_eq!(not_found["path"], "/api/v1/nothing-here");

    let audit = wait_line(&logs.join("audit.log"), "the submission", |l| {
        l["type"] == "job.submitted"
    })
    .await;
    assert_eq!(audit["job_id"], id);
    assert_eq!(audit["request_id"], "e2e-submit-1");
    assert_eq!(audit["detail"]["name"], "audited");
    server.wait_finished(id).await;
    // The end of the job run is a server line (on stderr by default).

    // The database sink stored it too.
    let stored = eventually("an audit entry in the database", PATIENCE, || async {
        let page: Value = server.get_json("/api/v1/audit?action=job.submitted").await;
        match page["entries"].as_array().and_then(|e| e.first().cloned()) {
            Some(entry) => Ok(entry),
            None => Err(page),
        }
    })
    .await;
    assert_eq!(stored["job_id"], id);
    assert_eq!(stored["actor"], "anonymous");
    assert!(stored["remote"].as_str().unwrap().starts_with("127.0.0.1:"));

    let metrics = server
        .http
        .get(format!("{}/metrics", server.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let written = metrics
        .lines()
        .find(|l| l.starts_with("joblog_log_sink_written_total{sink=\"access\"}"))
        .unwrap_or_else(|| panic!("no access sink metric in {metrics}"));
    let n: f64 = written.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(n >= 2.0, "{written}");
    for metric in [
        "joblog_log_sink_dropped_total{sink=\"audit\"}",
        "joblog_log_sink_failed_writes_total{sink=\"error\"}",
        "joblog_log_sink_lost_total{sink=\"slow\"}",
        "joblog_log_sink_queue_depth{sink=\"database\"}",
    ] {
        assert!(metrics.contains(metric), "{metric} not in /metrics");
    }
}

fn write_config(path: &Path, logging: &str) {
    std::fs::write(path, format!("[logging]\n{logging}\n")).unwrap();
}

async fn get_job(server: &Server, id: i64, request_id: &str) {
    let r = server
        .http
        .get(format!("{}/api/v1/jobs/{id}", server.url))
        .header("x-request-id", request_id)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reopens_moved_files_applies_a_changed_section_and_refuses_an_invalid_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("joblog.toml");
    write_config(&config, "slow_threshold = \"1h\"");
    let stderr = dir.path().join("stderr.log");
    let file = std::fs::File::create(&stderr).unwrap();
    let data = dir.path().join("data");
    let mut server = Server::start_with(&data, &["--config", config.to_str().unwrap()], |c| {
        c.env("NO_COLOR", "1").stderr(file);
    })
    .await;
    let logs = data.join("logs");
    let access = logs.join("access.log");
    let id = server.submit(json!({"command": ["true"]})).await;
    get_job(&server, id, "before-rotate").await;
    wait_line(&access, "the first request", |l| {
        l["request_id"] == "before-rotate"
    })
    .await;

    // logrotate moves the file away, then signals.
    let moved = logs.join("access.log.1");
    std::fs::rename(&access, &moved).unwrap();
    write_config(&config, "slow_threshold = \"0s\"");
    server.signal("HUP");
    wait_line(&logs.join("audit.log"), "the change", |l| {
        l["type"] == "config.changed" && l["detail"]["source"] == "SIGHUP"
    })
    .await;
    get_job(&server, id, "after-rotate").await;
    wait_line(&access, "the request after SIGHUP", |l| {
        l["request_id"] == "after-rotate"
    })
    .await;
    assert!(
        lines(&moved)
            .iter()
            .all(|l| l["request_id"] != "after-rotate"),
        "the moved file got a line after SIGHUP"
    );
    assert!(lines(&moved)
        .iter()
        .any(|l| l["request_id"] == "before-rotate"));
    // A 0s threshold: every request is slow now, with its timeline.
    let slow = wait_line(&logs.join("slow.log"), "the slow request", |l| {
        l["request_id"] == "after-rotate"
    })
    .await;
    assert!(slow["events"].is_array(), "{slow}");

    // An invalid section is refused and the one in force stays.
    write_config(
        &config,
        "[[logging.sinks]]\nkind = \"file\"\nlogs = [\"access\"]",
    );
    server.signal("HUP");
    let text = eventually("a refusal on stderr", PATIENCE, || async {
        let text = std::fs::read_to_string(&stderr).unwrap();
        if text.contains("logging configuration refused") {
            Ok(text)
        } else {
            Err(text)
        }
    })
    .await;
    assert!(text.contains("needs a `path`"), "{text}");
    get_job(&server, id, "after-refusal").await;
    wait_line(
        &logs.join("slow.log"),
        "a request under the old section",
        |l| l["request_id"] == "after-refusal",
    )
    .await;
    server.signal("TERM");
    assert_eq!(server.wait_exit(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_replaces_the_logging_section_through_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let url = format!("{}/api/v1/logging", server.url);
    let current: Value = server
        .http
        .get(&url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(current["slow_threshold"], "1s");
    assert!(current.get("sinks").is_none(), "the defaults: {current}");

    let only_errors = dir.path().join("logs/only-errors.log");
    let refused = server
        .http
        .put(&url)
        .json(&json!({"sinks": [{"kind": "stdout", "logs": ["access"], "keep": 3}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`keep` applies to file sinks only"),
        "{body}"
    );

    // Nothing outside the logging directory: not the store's own files.
    for path in [
        json!("../joblog.db"),
        json!(dir.path().join("joblog.db")),
        json!("/tmp/x.log"),
    ] {
        let refused = server
            .http
            .put(&url)
            .json(&json!({"sinks": [{"kind": "file", "path": path, "logs": ["access"]}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 400, "{path}");
        let body: Value = refused.json().await.unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("is outside the logging directory"),
            "{message}"
        );
    }
    // A FIFO there is refused at once, not opened and waited on.
    let fifo = dir.path().join("logs/pipe.log");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let refused = server
        .http
        .put(&url)
        .timeout(Duration::from_secs(10))
        .json(&json!({"sinks": [{"kind": "file", "path": "pipe.log", "logs": ["access"]}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is a FIFO; set `special_file = true`"),
        "{body}"
    );

    let replaced = server
        .http
        .put(&url)
        .json(&json!({"sinks": [
            {"kind": "file", "path": "only-errors.log", "logs": ["access"], "min_level": "warn"}
        ]}))
        .send()
        .await
        .unwrap();
    assert_eq!(replaced.status(), 200);
    let body: Value = replaced.json().await.unwrap();
    assert_eq!(body["changed"], true);
    // From the next request: only failures, in the new file.
    let ok = server
        .http
        .get(format!("{}/api/v1/jobs", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    server
        .http
        .get(format!("{}/nope", server.url))
        .send()
        .await
        .unwrap();
    let line = wait_line(&only_errors, "the 404", |l| l["path"] == "/nope").await;
    assert_eq!(line["status"], 404);
    assert!(lines(&only_errors)
        .iter()
        .all(|l| l["path"] != "/api/v1/jobs"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_made_used_and_refused_are_audited_by_name_never_by_text() {
    const BOOTSTRAP: &str = "e2e-logs-bootstrap-token-0123456789abcdef";
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("admin.token");
    std::fs::write(&token_file, format!("{BOOTSTRAP}\n")).unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data, &["--token-file", token_file.to_str().unwrap()]).await;
    let audit = data.join("logs").join("audit.log");

    let made: Value = server
        .http
        .post(format!("{}/api/v1/tokens", server.url))
        .bearer_auth(BOOTSTRAP)
        .json(&json!({"name": "ci", "role": "viewer"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ci = made["token"].as_str().unwrap().to_string();
    let created = wait_line(&audit, "the creation", |l| l["type"] == "token.created").await;
    assert_eq!(created["actor"], "bootstrap");
    assert_eq!(created["detail"]["token"], "ci");
    assert_eq!(created["detail"]["role"], "viewer");

    let jobs = format!("{}/api/v1/jobs", server.url);
    let used = server
        .http
        .get(&jobs)
        .bearer_auth(&ci)
        .send()
        .await
        .unwrap();
    assert_eq!(used.status(), 200);
    let used = wait_line(&audit, "the use", |l| l["type"] == "token.used").await;
    assert_eq!(used["actor"], "ci");

    let wrong = server
        .http
        .get(&jobs)
        .bearer_auth("jl_not-a-token")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let none = server
        .http
        .get(&jobs)
        .header("x-request-id", "no-token")
        .send()
        .await
        .unwrap();
    assert_eq!(none.status(), 401);
    let refused = wait_line(&audit, "the refusal", |l| l["type"] == "token.refused").await;
    assert!(refused["detail"]["reason"]
        .as_str()
        .unwrap()
        .contains("unknown API token"));
    // The request without a token is an access line only.
    wait_line(
        &data.join("logs").join("access.log"),
        "the tokenless request",
        |l| l["request_id"] == "no-token",
    )
    .await;
    // A client trying made-up tokens: every request is refused and
    // logged as an access line, but the audit trail gets at most one
    // entry per address a minute.
    for i in 0..300 {
        let r = server
            .http
            .get(&jobs)
            .bearer_auth(format!("jl_made-up-{i}"))
            .header("x-request-id", format!("made-up-{i}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
    }
    wait_line(
        &data.join("logs").join("access.log"),
        "the last made-up token's request",
        |l| l["request_id"] == "made-up-299",
    )
    .await;
    let text = std::fs::read_to_string(&audit).unwrap();
    assert_eq!(
        text.matches("token.refused").count(),
        2,
        "type and action of one entry: {text}"
    );
    // A viewer trying an admin's route: refused, and audited once a
    // minute, naming what was tried and the role it needs.
    for _ in 0..5 {
        let r = server
            .http
            .post(format!("{}/api/v1/tokens", server.url))
            .bearer_auth(&ci)
            .json(&json!({"name": "mine", "role": "admin"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
    }
    let refused = wait_line(&audit, "the refused role", |l| {
        l["type"] == "access.refused"
    })
    .await;
    assert_eq!(refused["actor"], "ci");
    assert_eq!(refused["detail"]["attempted"], "POST /api/v1/tokens");
    assert_eq!(refused["detail"]["needed"], "admin");
    server
        .http
        .get(format!("{}/nope-after-refusals", server.url))
        .send()
        .await
        .unwrap();
    wait_line(
        &data.join("logs").join("access.log"),
        "a request after the refusals",
        |l| l["path"] == "/nope-after-refusals",
    )
    .await;
    let text = std::fs::read_to_string(&audit).unwrap();
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("\"access.refused\""))
            .count(),
        1,
        "{text}"
    );
    for secret in [BOOTSTRAP, ci.as_str(), "jl_not-a-token"] {
        for log in ["access.log", "audit.log", "error.log", "slow.log"] {
            let body = std::fs::read_to_string(data.join("logs").join(log)).unwrap_or_default();
            assert!(!body.contains(secret), "a token's text is in {log}");
        }
    }
}

/// A file sink on a FIFO (allowed with `special_file`) whose reader stops
/// reading, then goes away, never holds up the server: every request is
/// answered, SIGHUP included, and the entries it could not take are
/// counted as lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_sink_whose_reader_stops_or_goes_never_freezes_the_server() {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("access.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let config = dir.path().join("joblog.toml");
    std::fs::write(
        &config,
        format!(
            "[[logging.sinks]]\nname = \"pipe\"\nkind = \"file\"\npath = {:?}\nspecial_file = true\nlogs = [\"access\"]\n",
            fifo.to_str().unwrap()
        ),
    )
    .unwrap();
    // A reader that never reads: the pipe fills.
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(&fifo)
        .unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data, &["--config", config.to_str().unwrap()]).await;
    let healthz = format!("{}/healthz", server.url);
    let answered = |n: usize| {
        let server = &server;
        let healthz = &healthz;
        async move {
            for i in 0..n {
                let r = server
                    .http
                    .get(healthz)
                    .timeout(Duration::from_secs(10))
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("request {i} was not answered: {e}"));
                assert_eq!(r.status(), 200);
            }
        }
    };
    // Far more than a pipe holds (64 KiB).
    answered(2000).await;
    drop(reader);
    answered(200).await;
    server.signal("HUP");
    answered(200).await;
    let metrics = server
        .http
        .get(format!("{}/metrics", server.url))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let lost: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("joblog_log_sink_lost_total{sink=\"pipe\"} "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no lost count for the pipe in /metrics:\n{metrics}"));
    assert!(lost > 0, "nothing counted as lost");
}

/// Audit entries older than `retention.audit` are deleted at each
/// retention round; newer ones stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_entries_past_their_retention_are_deleted() {
    use joblog_core::{NewAudit, Timestamp};
    use joblog_store::{StoreOptions, WriteOp};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    {
        let url = format!("sqlite://{}", data.join("joblog.db").display());
        let store = joblog_store::open(&url, &StoreOptions::default()).unwrap();
        let mut writer = store.open_writer().unwrap();
        let day = 86_400_000_000;
        let now = Timestamp::now().micros();
        // 12,000 entries of two years ago (more than one chunk), then 10 of
        // last week.
        let entry = |at: i64, action: &str| NewAudit {
            at: Timestamp(at),
            actor: "ops".into(),
            action: action.into(),
            job_id: None,
            remote: None,
            request_id: None,
            node: "n".into(),
            detail: serde_json::Map::new(),
        };
        let mut entries: Vec<NewAudit> = (0..12_000)
            .map(|i| entry(now - 730 * day + i, "old.entry"))
            .collect();
        entries.extend((0..10).map(|i| entry(now - 7 * day + i, "recent.entry")));
        writer.apply(&[WriteOp::Audit(entries)]).unwrap();
    }
    let server = Server::start(&data, &["--retention-every", "1s"]).await;
    let count = |action: &str| -> i64 {
        server
            .db()
            .query_row(
                "SELECT count(*) FROM audit WHERE action = ?1",
                [action],
                |r| r.get(0),
            )
            .unwrap()
    };
    eventually("the old entries to be groomed", PATIENCE, || async {
        match count("old.entry") {
            0 => Ok(()),
            left => Err(format!("{left} old entries left")),
        }
    })
    .await;
    assert_eq!(count("recent.entry"), 10);
    let groomed = wait_line(&data.join("logs/audit.log"), "the grooming", |l| {
        l["type"] == "audit.groomed"
    })
    .await;
    assert_eq!(groomed["detail"]["entries"], 12_000, "{groomed}");
}
