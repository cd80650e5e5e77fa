//! End-to-end tests of the real `joblog` binary: a server process on a
//! real SQLite file (or PostgreSQL, for several nodes), real jobs, real
//! signals.

#[path = "e2e/bench.rs"]
mod bench;
#[path = "e2e/hostile.rs"]
mod hostile;
#[path = "e2e/lifecycle.rs"]
mod lifecycle;
#[path = "e2e/limits.rs"]
mod limits;
#[path = "e2e/listing.rs"]
mod listing;
#[path = "e2e/logs.rs"]
mod logs;
#[path = "e2e/nodes.rs"]
mod nodes;
#[path = "e2e/notify.rs"]
mod notify;
#[path = "e2e/notify_cli.rs"]
mod notify_cli;
#[path = "e2e/params.rs"]
mod params;
#[path = "e2e/people.rs"]
mod people;
#[path = "e2e/placement.rs"]
mod placement;
#[path = "e2e/prometheus.rs"]
mod prometheus;
#[path = "e2e/rerun.rs"]
mod rerun;
#[path = "e2e/schedules.rs"]
mod schedules;
#[path = "e2e/sealed.rs"]
mod sealed;
#[path = "e2e/security.rs"]
mod security;
#[path = "e2e/service.rs"]
mod service;
#[path = "e2e/sso.rs"]
mod sso;
#[path = "e2e/startup.rs"]
mod startup;
#[path = "e2e/storage.rs"]
mod storage;
#[path = "e2e/ui.rs"]
mod ui;

use joblog_testkit::views::{Job, JobList, LogPage};
use joblog_testkit::{eventually, eventually_blocking, free_port, view, PATIENCE};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_joblog");

/// An HTTP client for the tests (with the TLS provider joblog uses).
fn http_client() -> reqwest::Client {
    joblog_client::install_tls_provider();
    reqwest::Client::new()
}

struct Server {
    child: Child,
    url: String,
    dir: PathBuf,
    http: reqwest::Client,
}

impl Server {
    async fn start(dir: &Path, extra: &[&str]) -> Server {
        Self::start_with(dir, extra, |_| {}).await
    }

    /// [`Server::start`], with a last say on the command (environment,
    /// where stderr goes).
    async fn start_with(
        dir: &Path,
        extra: &[&str],
        configure: impl FnOnce(&mut Command),
    ) -> Server {
        Self::start_at(free_port(), dir, extra, configure).await
    }

    /// [`Server::start_with`] on `port` (known before it starts, to be
    /// given to someone else: an OpenID provider's redirect URI).
    async fn start_at(
        port: u16,
        dir: &Path,
        extra: &[&str],
        configure: impl FnOnce(&mut Command),
    ) -> Server {
        let mut command = Command::new(BIN);
        command
            .arg("serve")
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(dir)
            .args(extra)
            .env("JOBLOG_LOG", "warn")
            .stdin(Stdio::null());
        configure(&mut command);
        let child = command.spawn().expect("spawning joblog serve");
        let (url, http) = (format!("http://127.0.0.1:{port}"), http_client());
        // A server that exits at start (a bad flag) fails the test at once,
        // its own error on stderr, instead of after the whole patience.
        let child = std::cell::RefCell::new(child);
        let healthz = format!("{url}/healthz");
        eventually("the server to become healthy", PATIENCE, || async {
            if let Some(status) = child.borrow_mut().try_wait().expect("the server's status") {
                panic!("joblog serve exited at start ({status}); its stderr says why");
            }
            let reply = http.get(&healthz).send().await;
            reply.is_ok_and(|r| r.status().is_success()).then_some(())
        })
        .await;
        Server {
            child: child.into_inner(),
            url,
            dir: dir.to_path_buf(),
            http,
        }
    }

    /// The same server, its client sending `token` with every request (so
    /// `submit`, `job` and the waits work on a server that needs one).
    fn with_token(mut self, token: &str) -> Server {
        let mut headers = reqwest::header::HeaderMap::new();
        let value = format!("Bearer {token}").parse().expect("a header value");
        headers.insert(reqwest::header::AUTHORIZATION, value);
        joblog_client::install_tls_provider();
        self.http = reqwest::Client::builder()
            .default_headers(headers)
            .build()
            .expect("an HTTP client");
        self
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    async fn submit(&self, body: Value) -> i64 {
        let r = self
            .http
            .post(format!("{}/api/v1/jobs", self.url))
            .json(&body)
            .send()
            .await
            .expect("submit");
        assert_eq!(r.status(), 201, "submit {body}");
        view::<Job>(&r.json::<Value>().await.unwrap()).id
    }

    /// The job's whole answer; [`view`] it as a [`Job`] for what the view
    /// holds.
    async fn job(&self, id: i64) -> Value {
        self.get_json(&format!("/api/v1/jobs/{id}")).await
    }

    /// `POST /api/v1/jobs/{id}/cancel`; its answer.
    async fn cancel(&self, id: i64) -> reqwest::Response {
        self.http
            .post(format!("{}/api/v1/jobs/{id}/cancel", self.url))
            .send()
            .await
            .unwrap_or_else(|e| panic!("cancel {id}: {e}"))
    }

    /// The JSON answer of `GET path` (such as `/api/v1/jobs?name=x`).
    async fn get_json(&self, path: &str) -> Value {
        self.http
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"))
            .json()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: not JSON: {e}"))
    }

    /// Polls the job until `pred` holds. Five times the kit's patience:
    /// the huge-output tests' jobs write gigabytes on a loaded machine.
    async fn wait_until(&self, id: i64, what: &str, pred: impl Fn(&Job) -> bool) -> Value {
        eventually(&format!("job {id} to get {what}"), 5 * PATIENCE, || async {
            let job = self.job(id).await;
            if pred(&view::<Job>(&job)) {
                Ok(job)
            } else {
                Err(job)
            }
        })
        .await
    }

    async fn wait_finished(&self, id: i64) -> Value {
        self.wait_until(id, "finished", Job::is_finished).await
    }

    /// The records of one page of a job's log, as JSON (the tests compare
    /// whole records); the page is read as a [`LogPage`] first.
    async fn log_page(&self, id: i64, after: u64, limit: u32) -> Vec<Value> {
        let v: Value = self
            .http
            .get(format!(
                "{}/api/v1/jobs/{id}/log?after_seq={after}&limit={limit}",
                self.url
            ))
            .send()
            .await
            .expect("log")
            .json()
            .await
            .expect("log json");
        view::<LogPage>(&v);
        v["records"].as_array().cloned().unwrap_or_default()
    }

    /// Peak resident memory of the server so far (VmHWM), in MiB.
    fn peak_rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let kb: f64 = status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap();
        kb / 1024.0
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{sig}");
    }

    /// Waits for the server process to exit and returns its exit code.
    fn wait_exit(&mut self) -> Option<i32> {
        eventually_blocking("the server to exit", PATIENCE, || {
            self.child.try_wait().unwrap().map(|status| status.code())
        })
    }

    fn db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.dir.join("joblog.db")).unwrap()
    }

    /// Kills the server (`kill -9`) and opens its database, which SQLite
    /// must find whole.
    fn kill_9(&mut self) -> rusqlite::Connection {
        self.signal("KILL");
        self.wait_exit();
        let db = self.db();
        let check: String = db
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        db
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A job printing `line 1`, `line 2`, … until it is stopped; on SIGTERM it
/// writes the last number it reached to `last`.
fn endless_counter(dir: &Path, tag: &str) -> Value {
    let last = dir.join(format!("last-{tag}"));
    json!({
        "name": format!("counter-{tag}"),
        "script": format!(
            "trap 'echo $i > {}; exit 143' TERM; i=0; while :; do i=$((i+1)); echo \"line $i\"; done",
            last.display()
        ),
    })
}

/// Reads a job's stored messages straight from the database file: its
/// sealed segments (decoded), then its rows.
fn stored_lines(db: &rusqlite::Connection, id: i64) -> Vec<(i64, String, i64)> {
    let mut out: Vec<(i64, String, i64)> = Vec::new();
    let mut stmt = db
        .prepare("SELECT data FROM segments WHERE job_id = ?1 ORDER BY last_seq")
        .unwrap();
    let segments = stmt
        .query_map([id], |r| r.get::<_, Vec<u8>>(0))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    for data in segments {
        for r in joblog_core::segment::decode(&data).unwrap() {
            out.push((r.seq as i64, r.message, i64::from(r.stream.code())));
        }
    }
    let mut stmt = db
        .prepare("SELECT seq, message, stream FROM log WHERE job_id = ?1 ORDER BY seq")
        .unwrap();
    let rows = stmt
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    out.extend(rows);
    out
}

/// Records stored in the database file, rows and sealed, of every job.
fn stored_record_count(db: &rusqlite::Connection) -> i64 {
    let rows: i64 = db
        .query_row("SELECT count(*) FROM log", [], |r| r.get(0))
        .unwrap();
    let sealed: i64 = db
        .query_row(
            "SELECT COALESCE(sum(last_seq - first_seq + 1), 0) FROM segments",
            [],
            |r| r.get(0),
        )
        .unwrap();
    rows + sealed
}

/// The `line N` records of a job: seq gapless from 1 and N == seq, i.e. a
/// gap-free prefix of what the job printed. Returns the last N.
fn assert_gapless_prefix(lines: &[(i64, String, i64)]) -> i64 {
    let mut last = 0;
    for (i, (seq, msg, _)) in lines.iter().enumerate() {
        assert_eq!(*seq, i as i64 + 1, "seq gap before {seq}");
        if let Some(n) = msg.strip_prefix("line ") {
            let n: i64 = n.parse().unwrap_or_else(|_| panic!("bad line {msg:?}"));
            assert_eq!(n, last + 1, "line {n} follows line {last}");
            last = n;
        }
    }
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_write_leaves_gapless_prefixes_and_interrupted_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), &[]).await;
    let mut ids = Vec::new();
    for t in 0..4 {
        ids.push(
            server
                .submit(endless_counter(dir.path(), &t.to_string()))
                .await,
        );
    }
    for &id in &ids {
        server
            .wait_until(id, "2000 records", |j| j.log.records >= 2000)
            .await;
    }
    {
        let db = server.kill_9();
        for &id in &ids {
            let last = assert_gapless_prefix(&stored_lines(&db, id));
            assert!(last >= 2000, "job {id} kept only {last} lines");
        }
    }

    drop(server);
    let server = Server::start(dir.path(), &[]).await;
    for &id in &ids {
        let job = server.job(id).await;
        assert_eq!(job["state"], "interrupted", "{job}");
        assert!(job["finished_at"].is_string());
    }
    // The restarted server runs new jobs normally.
    let id = server
        .submit(json!({"command": ["sh", "-c", "echo after restart"]}))
        .await;
    assert_eq!(server.wait_finished(id).await["state"], "succeeded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stores_every_line_printed_before_the_stop() {
    let dir = tempfile::tempdir().unwrap();
    // The endless jobs print a few hundred thousand lines a second: lift
    // the per-job cap so that what is checked is the stop, not the cap.
    let config = dir.path().join("joblog.toml");
    std::fs::write(
        &config,
        "[log]\nmax_records = 100000000\nmax_bytes = 4294967296\n",
    )
    .unwrap();
    let config = config.display().to_string();
    let mut server = Server::start(
        dir.path(),
        &["--grace-period", "5s", "--config", config.as_str()],
    )
    .await;
    // One job that ends within the grace period, two that must be stopped.
    let short = server
        .submit(json!({"name": "short", "script": "for i in $(seq 1 30); do echo \"line $i\"; sleep 0.05; done"}))
        .await;
    let endless: Vec<i64> = [
        server.submit(endless_counter(dir.path(), "a")).await,
        server.submit(endless_counter(dir.path(), "b")).await,
    ]
    .to_vec();
    for &id in &endless {
        server
            .wait_until(id, "1000 records", |j| j.log.records >= 1000)
            .await;
    }
    server.signal("TERM");
    assert_eq!(server.wait_exit(), Some(0), "graceful stop exits 0");
    // The WAL was folded into the database at the stop: joblog.db alone
    // is the whole store.
    let wal = std::fs::metadata(dir.path().join("joblog.db-wal")).map_or(0, |m| m.len());
    assert_eq!(wal, 0, "joblog.db-wal holds {wal} bytes after a clean stop");

    let db = server.db();
    let state = |id: i64| -> String {
        db.query_row("SELECT state FROM jobs WHERE id = ?1", [id], |r| r.get(0))
            .unwrap()
    };
    let short_lines = stored_lines(&db, short);
    assert_eq!(assert_gapless_prefix(&short_lines), 30);
    assert_eq!(state(short), "succeeded");
    for (&id, tag) in endless.iter().zip(["a", "b"]) {
        let stored = assert_gapless_prefix(&stored_lines(&db, id));
        let printed: i64 = std::fs::read_to_string(dir.path().join(format!("last-{tag}")))
            .expect("the job saw SIGTERM and wrote how far it got")
            .trim()
            .parse()
            .unwrap();
        // The trap may run between `i=$((i+1))` and its echo.
        assert!(
            stored == printed || stored == printed - 1,
            "job {id} printed up to {printed}, stored up to {stored}"
        );
        assert_eq!(state(id), "interrupted");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_outputs_keep_memory_bounded_and_cap_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let long_line = server
        .submit(json!({"name": "no-newline", "script": "head -c 200000000 /dev/zero | tr '\\0' x"}))
        .await;
    let many = server
        .submit(json!({"name": "many-lines", "command": ["seq", "1", "2000000"]}))
        .await;
    let long_job = server.wait_finished(long_line).await;
    let many_job = server.wait_finished(many).await;
    let peak = server.peak_rss_mib();
    println!("server peak RSS through 200 MB without newline + 2,000,000 lines: {peak:.1} MiB");

    // 200 MB in 64 KiB records, each after the first marked continued.
    assert_eq!(long_job["state"], "succeeded");
    assert_eq!(long_job["log"]["bytes"], 200_000_000);
    // 64 KiB records; a few more only if the producer itself paused for
    // the 200 ms idle delay on a loaded machine.
    let records = long_job["log"]["records"].as_u64().unwrap();
    let full = 200_000_000u64.div_ceil(65_536);
    assert!((full..full + 32).contains(&records), "{records} records");
    assert_eq!(long_job["log"]["truncated"], false);
    let first = server.log_page(long_line, 0, 2).await;
    assert!(first[0].get("fields").is_none());
    assert_eq!(first[1]["fields"]["continued"], true);

    // Over the 1,000,000-record cap: the first 990,000, one marker, the
    // last 10,000.
    assert_eq!(many_job["state"], "succeeded");
    assert_eq!(many_job["log"]["truncated"], true);
    assert_eq!(many_job["log"]["records"], 1_000_001);
    let around = server.log_page(many, 989_999, 3).await;
    assert_eq!(around[0]["message"], "990000");
    assert_eq!(around[1]["seq"], 990_001);
    assert_eq!(around[1]["stream"], "warning");
    assert_eq!(around[1]["fields"]["truncated"], true);
    assert_eq!(around[1]["fields"]["dropped_records"], 1_000_000);
    assert_eq!(around[2]["message"], "1990001");
    let end = server.log_page(many, 1_000_000, 10).await;
    assert_eq!(end.len(), 1);
    assert_eq!(end[0]["message"], "2000000");
    assert_eq!(end[0]["seq"], 1_000_001);

    // Loose bound, so the test fails on unbounded buffering (hundreds of
    // MiB) and not on noise; the budget is measured by `joblog bench`.
    assert!(peak < 256.0, "server peak RSS {peak:.1} MiB");
}

#[test]
fn refuses_a_public_address_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    // Not `Server`: this start must fail, and its output is the answer.
    let out = Command::new(BIN)
        .args(["serve", "--listen", "0.0.0.0:0", "--data-dir"])
        .arg(dir.path())
        .env_remove("JOBLOG_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("token"), "{err}");
}

/// Runs the CLI against `server`, returning (exit code, stdout, stderr).
fn cli(server: &Server, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .arg("--server")
        .arg(&server.url)
        .args(args)
        .env_remove("JOBLOG_TOKEN")
        .stdin(Stdio::null())
        .output()
        .expect("running the joblog CLI");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_run_follows_the_log_and_exits_with_the_jobs_code() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let (code, out, err) = cli(
        &server,
        &[
            "run",
            "--name",
            "cli",
            "--secret",
            "PW=hunter22",
            "--",
            "sh",
            "-c",
            "echo one; sleep 0.3; echo \"two $PW\"; echo bad >&2; echo '::warning::careful'; exit 3",
        ],
    );
    assert_eq!(code, 3, "stdout {out:?} stderr {err:?}");
    assert_eq!(out, "one\ntwo ***\n");
    assert!(err.contains("bad"), "{err}");
    assert!(err.contains("warning: careful"), "{err}");
    assert!(!err.contains("hunter22") && !out.contains("hunter22"));

    let (code, out, _) = cli(
        &server,
        &["run", "--detach", "--", "sh", "-c", "echo detached"],
    );
    assert_eq!(code, 0);
    let id: i64 = out.trim().parse().expect("--detach prints the job id");
    server.wait_finished(id).await;
    let (code, out, _) = cli(&server, &["logs", &id.to_string()]);
    assert_eq!((code, out.as_str()), (0, "detached\n"));
    let (code, out, _) = cli(&server, &["show", "--json", &id.to_string()]);
    assert_eq!(code, 0);
    let job: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(job["state"], "succeeded");

    let (code, out, _) = cli(&server, &["jobs", "--json", "--name", "cli"]);
    assert_eq!(code, 0);
    let listed: Value = serde_json::from_str(&out).unwrap();
    let jobs = listed["jobs"]
        .as_array()
        .or(listed.as_array())
        .cloned()
        .unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["exit_code"], 3);

    let (code, _, err) = cli(&server, &["show", "999999"]);
    assert_eq!(code, 1);
    assert!(err.contains("no job with id 999999"), "{err}");
    let (code, _, _) = cli(&server, &["run", "--timeout", "soon", "--", "true"]);
    assert_eq!(code, 2, "a bad duration is bad usage");
}

/// Every time the CLI shows says its zone: UTC by default and with
/// `--utc`, the machine's zone with its offset with `--local` or
/// `JOBLOG_TIMES=local`, the same instant either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_times_say_their_zone_utc_or_local() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let id = server
        .submit(json!({"name": "when", "command": ["true"]}))
        .await;
    let job = server.wait_finished(id).await;
    let created = job["created_at"].as_str().unwrap().to_string();
    let shown = |args: &[&str], env: &[(&str, &str)]| -> String {
        let out = Command::new(BIN)
            .arg("--server")
            .arg(&server.url)
            .args(args)
            .env_remove("JOBLOG_TIMES")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .expect("running the joblog CLI");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let id = id.to_string();
    let berlin = [("TZ", "Europe/Berlin")];
    let created_shown = |out: &str| -> String {
        out.lines()
            .find_map(|l| l.strip_prefix("created:"))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| panic!("no created: line in\n{out}"))
    };
    assert_eq!(
        created_shown(&shown(&["show", &id], &berlin)),
        created,
        "the default is UTC"
    );
    assert_eq!(
        created_shown(&shown(&["show", &id, "--utc"], &berlin)),
        created
    );
    // November in Berlin: an hour ahead, said as +01:00.
    let hour: u32 = created[11..13].parse().unwrap();
    let local = format!(
        "{}T{:02}{}+01:00",
        &created[..10],
        (hour + 1) % 24,
        &created[13..26]
    );
    for (args, env) in [
        (vec!["show", &id, "--local"], vec![berlin[0]]),
        (
            vec!["show", &id],
            vec![berlin[0], ("JOBLOG_TIMES", "local")],
        ),
    ] {
        let out = shown(&args, &env);
        if hour < 23 {
            assert_eq!(created_shown(&out), local, "{args:?} {env:?}");
        }
        assert!(created_shown(&out).ends_with("+01:00"), "{out}");
    }
    let list = shown(&["jobs", "--name", "when"], &berlin);
    assert!(list.contains(" UTC "), "{list}");
    let list = shown(&["jobs", "--name", "when", "--local"], &berlin);
    assert!(list.contains(" +01:00 "), "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_groom_keeps_the_newest_per_name() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let mut ids = Vec::new();
    for (name, n) in [("nightly", 3), ("hourly", 2)] {
        for i in 0..n {
            let id = server
                .submit(json!({"name": name, "script": format!("seq 1 {}", 100 * (i + 1))}))
                .await;
            server.wait_finished(id).await;
            ids.push((name, id));
        }
    }
    // A dry run lists what would go and deletes nothing.
    let (code, out, err) = cli(&server, &["groom", "--keep-per-name", "1", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.ends_with("dry run: would delete 3 jobs and 400 records\n"),
        "{out}"
    );
    let listed: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(listed.len(), 4, "3 jobs and the summary: {out}");
    for (_, id) in &ids {
        assert_eq!(server.job(*id).await["id"], *id, "dry run deleted job {id}");
    }
    let (code, out, err) = cli(&server, &["groom", "--keep-per-name", "1", "--json"]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    // nightly keeps its third job, hourly its second.
    assert_eq!(report["jobs_deleted"], 3);
    assert_eq!(report["records_deleted"], 100 + 200 + 100);
    for (name, id) in &ids {
        let status = server
            .http
            .get(format!("{}/api/v1/jobs/{id}", server.url))
            .send()
            .await
            .unwrap()
            .status();
        let newest = ids.iter().filter(|(n, _)| n == name).map(|(_, i)| *i).max();
        let expect = if Some(*id) == newest { 200 } else { 404 };
        assert_eq!(status, expect, "job {id} ({name})");
    }
    let left = stored_record_count(&server.db());
    assert_eq!(left, 300 + 200, "only the kept jobs' records remain");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_file_retention_grooms_periodically() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("joblog.toml");
    std::fs::write(
        &config,
        "max_concurrency = 1\n[retention]\nkeep_per_name = 1\nevery = \"1s\"\n",
    )
    .unwrap();
    let server = Server::start(dir.path(), &["--config", config.to_str().unwrap()]).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = server
            .submit(json!({"name": "report", "command": ["seq", "1", "50"]}))
            .await;
        server.wait_finished(id).await;
        ids.push(id);
    }
    // The periodic policy removes the two older jobs of the name.
    eventually("retention to keep the newest report", PATIENCE, || async {
        let listed: Value = server.get_json("/api/v1/jobs?name=report").await;
        let left: Vec<i64> = view::<JobList>(&listed).jobs.iter().map(|j| j.id).collect();
        if left == [ids[2]] {
            Ok(())
        } else {
            Err(format!("retention left {left:?}"))
        }
    })
    .await;

    // A typo in the file is an error that names it, not a silent default.
    std::fs::write(&config, "max_concurency = 4\n").unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("max_concurency"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_log_has_no_colour_codes_when_stderr_is_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stderr.log");
    let file = std::fs::File::create(&log).unwrap();
    let mut server = Server::start_with(dir.path(), &[], |c| {
        c.env("JOBLOG_LOG", "info")
            .env_remove("NO_COLOR")
            .stderr(file);
    })
    .await;
    let id = server.submit(json!({"command": ["true"]})).await;
    server.wait_finished(id).await;
    server.signal("TERM");
    assert_eq!(server.wait_exit(), Some(0));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("joblog is serving"), "{text}");
    assert!(
        !text.contains('\x1b'),
        "colour codes in a log file: {text:?}"
    );
}
