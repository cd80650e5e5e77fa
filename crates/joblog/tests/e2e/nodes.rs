//! Several `joblog serve` processes on one PostgreSQL database: exactly-once
//! claims, live tail across nodes, a node killed, the database restarted.
//! Skipped (with a note) unless JOBLOG_TEST_POSTGRES_URL is set.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use joblog_store::testing::{PrivateCluster, TestDatabase};
use joblog_testkit::{eventually, PATIENCE};
use serde_json::{json, Value};

use super::Server;

impl Server {
    /// A node named `name` on the PostgreSQL database `url`, with its own
    /// data directory under `dir`.
    pub(super) async fn node(dir: &Path, url: &str, name: &str, extra: &[&str]) -> Server {
        let data = dir.join(name);
        std::fs::create_dir_all(&data).unwrap();
        let mut args = vec!["--database", url, "--node", name];
        args.extend_from_slice(extra);
        Server::start(&data, &args).await
    }

    /// The whole stored log of a job, through the API.
    pub(crate) async fn whole_log(&self, id: i64) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::new();
        loop {
            let after = out.last().map(|r| r["seq"].as_u64().unwrap()).unwrap_or(0);
            let page = self.log_page(id, after, 10_000).await;
            if page.is_empty() {
                return out;
            }
            out.extend(page);
        }
    }

    pub(crate) async fn get_status(&self, path: &str) -> (u16, String) {
        match self.http.get(format!("{}{path}", self.url)).send().await {
            Ok(r) => (r.status().as_u16(), r.text().await.unwrap_or_default()),
            Err(e) => (0, e.to_string()),
        }
    }
}

/// Checks that `records` are `line 1` … `line n` with seq 1 … n.
fn assert_lines(id: i64, records: &[Value], n: usize) {
    assert_eq!(records.len(), n, "job {id}: record count");
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r["seq"].as_u64(), Some(i as u64 + 1), "job {id}: seq");
        assert_eq!(
            r["message"].as_str(),
            Some(format!("line {}", i + 1).as_str()),
            "job {id}: message at seq {}",
            i + 1
        );
    }
}

/// A script printing `line 1` … `line n`, pausing 50 ms every `every` lines.
fn paced_lines(n: u32, every: u32) -> String {
    format!(
        "i=0; while [ $i -lt {n} ]; do i=$((i+1)); echo \"line $i\"; \
         if [ $((i % {every})) = 0 ]; then sleep 0.05; fi; done"
    )
}

/// Two jobs on each of `servers`, each writing `paced_lines(lines,
/// every)`, pinned to its node by a secret.
async fn paced_jobs<'a>(servers: &[&'a Server], lines: u32, every: u32) -> Vec<(&'a Server, i64)> {
    let mut jobs = Vec::new();
    for server in servers {
        for _ in 0..2 {
            let body = json!({"script": paced_lines(lines, every), "secrets": {"K": "v"}});
            jobs.push((*server, server.submit(body).await));
        }
    }
    jobs
}

/// Each job succeeded, its log every line once, in order.
async fn assert_whole(jobs: &[(&Server, i64)], lines: u32) {
    for (server, id) in jobs {
        let job = server.wait_finished(*id).await;
        assert_eq!(job["state"], "succeeded", "{job}");
        assert_eq!(job["log"]["records"], lines, "{job}");
        assert_lines(*id, &server.whole_log(*id).await, lines as usize);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_run_each_of_200_jobs_exactly_once() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let a = Server::node(dir.path(), db.url(), "a", &["--max-concurrency", "4"]).await;
    let b = Server::node(dir.path(), db.url(), "b", &["--max-concurrency", "4"]).await;
    let runs = dir.path().join("runs");
    let script = format!(
        "echo \"ran $JOBLOG_JOB_ID\" | tee -a {}; sleep 0.02",
        runs.display()
    );
    // Half the submissions to each node, interleaved, so both queue and
    // both claim from the one shared queue at the same time.
    let mut ids = Vec::new();
    for i in 0..200 {
        let node = if i % 2 == 0 { &a } else { &b };
        ids.push(node.submit(json!({"name": "once", "script": script})).await);
    }
    let mut by_node: HashMap<String, usize> = HashMap::new();
    for id in &ids {
        let job = a.wait_finished(*id).await;
        assert_eq!(job["state"], "succeeded", "{job}");
        let node = job["node"].as_str().expect("node recorded").to_string();
        *by_node.entry(node).or_default() += 1;
        let log = b.whole_log(*id).await;
        assert_eq!(log.len(), 1, "job {id}: {log:?}");
        assert_eq!(log[0]["message"], format!("ran {id}"));
    }
    // Every job ran once: one line per job in the shared file, no repeats.
    let text = std::fs::read_to_string(&runs).unwrap();
    let mut counts: BTreeMap<i64, u32> = BTreeMap::new();
    for line in text.lines() {
        let id: i64 = line.strip_prefix("ran ").unwrap().parse().unwrap();
        *counts.entry(id).or_default() += 1;
    }
    assert_eq!(counts.len(), 200, "jobs that ran");
    assert!(
        counts.values().all(|&c| c == 1),
        "a job ran twice: {counts:?}"
    );
    assert!(ids.iter().all(|id| counts.contains_key(id)));
    eprintln!("jobs per node: {by_node:?}");
    assert_eq!(by_node.keys().len(), 2, "both nodes ran jobs: {by_node:?}");
    assert_eq!(by_node.values().sum::<usize>(), 200);
}

/// Server-Sent Events as they arrive on a streamed HTTP response.
pub(super) struct Events {
    resp: reqwest::Response,
    /// Bytes, not text: a chunk may end inside a character, and decoding
    /// each chunk on its own garbled such a character (a flaky test).
    buf: Vec<u8>,
}

pub(super) struct Event {
    pub(super) id: Option<String>,
    pub(super) event: Option<String>,
    pub(super) data: String,
}

impl Events {
    pub(super) async fn open(server: &Server, id: i64) -> Events {
        let resp = server
            .http
            .get(format!("{}/api/v1/jobs/{id}/log/events", server.url))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        Events {
            resp,
            buf: Vec::new(),
        }
    }

    /// The next event, or None when the stream ends.
    pub(super) async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let bytes: Vec<u8> = self.buf.drain(..end + 2).collect();
                let block = String::from_utf8(bytes).expect("an event is UTF-8");
                let mut ev = Event {
                    id: None,
                    event: None,
                    data: String::new(),
                };
                let mut any = false;
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        ev.id = Some(v.trim_start().to_string());
                        any = true;
                    } else if let Some(v) = line.strip_prefix("event:") {
                        ev.event = Some(v.trim_start().to_string());
                        any = true;
                    } else if let Some(v) = line.strip_prefix("data:") {
                        ev.data.push_str(v.strip_prefix(' ').unwrap_or(v));
                        any = true;
                    }
                }
                if any {
                    return Some(ev);
                }
                continue; // a keep-alive comment
            }
            match tokio::time::timeout(Duration::from_secs(120), self.resp.chunk()).await {
                Ok(Ok(Some(bytes))) => self.buf.extend_from_slice(&bytes),
                Ok(Ok(None)) => return None,
                Ok(Err(e)) => panic!("event stream failed: {e}"),
                Err(_) => panic!("no event for 120 s"),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_viewer_on_node_b_follows_a_job_running_on_node_a() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let a = Server::node(dir.path(), db.url(), "a", &[]).await;
    let b = Server::node(dir.path(), db.url(), "b", &[]).await;
    let gate = dir.path().join("gate");
    // A job with a secret runs on the node that holds the secret: a. It
    // prints 500 lines, waits for the gate, then prints 500 more.
    let script = format!(
        "{}; while [ ! -e {} ]; do sleep 0.05; done; \
         i=500; while [ $i -lt 1000 ]; do i=$((i+1)); echo \"line $i\"; done",
        paced_lines(500, 100),
        gate.display()
    );
    let id = a
        .submit(json!({"script": script, "secrets": {"TOKEN": "s3cret-value"}}))
        .await;
    let mut events = Events::open(&b, id).await;
    let mut seqs = Vec::new();
    let mut end = None;
    while let Some(ev) = events.next().await {
        if ev.event.as_deref() == Some("end") {
            end = Some(serde_json::from_str::<Value>(&ev.data).unwrap());
            break;
        }
        assert_eq!(ev.event, None, "unexpected event: {}", ev.data);
        let record: Value = serde_json::from_str(&ev.data).unwrap();
        let seq = record["seq"].as_u64().unwrap();
        assert_eq!(ev.id.as_deref(), Some(seq.to_string().as_str()));
        assert_eq!(record["message"], format!("line {}", seqs.len() + 1));
        seqs.push(seq);
        if seq == 500 {
            // Everything so far reached b while the job on a was still
            // running (it waits for this gate): the tail is live.
            let job = b.job(id).await;
            assert_eq!(job["state"], "running", "{job}");
            assert_eq!(job["node"], "a", "{job}");
            std::fs::write(&gate, "go").unwrap();
        }
    }
    let end = end.expect("an end event");
    assert_eq!(end["state"], "succeeded", "{end}");
    assert_eq!(end["node"], "a");
    assert_eq!(
        seqs,
        (1..=1000).collect::<Vec<u64>>(),
        "every record once, in order"
    );
    assert!(events.next().await.is_none(), "the stream closes after end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_a_node_interrupts_its_jobs_and_the_other_node_carries_on() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let timeout = Duration::from_secs(3);
    let hb = ["--heartbeat-timeout", "3s"];
    let mut a = Server::node(dir.path(), db.url(), "a", &hb).await;
    let b = Server::node(dir.path(), db.url(), "b", &hb).await;
    // Secrets pin each job to the node it is submitted to.
    let endless = "i=0; while :; do i=$((i+1)); echo \"line $i\"; sleep 0.01; done";
    let mut on_a = Vec::new();
    for _ in 0..2 {
        on_a.push(
            a.submit(json!({"script": endless, "secrets": {"K": "v-a"}}))
                .await,
        );
    }
    let mut on_b = Vec::new();
    for _ in 0..2 {
        let script = paced_lines(20_000, 500);
        on_b.push(
            b.submit(json!({"script": script, "secrets": {"K": "v-b"}}))
                .await,
        );
    }
    for id in &on_a {
        a.wait_until(*id, "records", |j| {
            j.state == "running" && j.log.records > 10
        })
        .await;
    }
    a.signal("KILL");
    a.wait_exit();
    let killed = Instant::now();
    for id in &on_a {
        let job = b
            .wait_until(*id, "interrupted", |j| j.state == "interrupted")
            .await;
        assert_eq!(job["node"], "a");
        // What a wrote before it died is a gap-free prefix, then the
        // record of its interruption, naming a and who judged it.
        let mut log = b.whole_log(*id).await;
        let why = log.pop().unwrap();
        assert_eq!(why["stream"], "error", "{why}");
        assert_eq!(why["fields"]["reason"], "node_lapsed", "{why}");
        assert_eq!(why["fields"]["node"], "a");
        assert_eq!(why["fields"]["declared_by"], "b");
        assert_eq!(why["seq"].as_u64(), Some(log.len() as u64 + 1));
        let n = log.len();
        assert!(n > 10, "job {id}: {n} records");
        assert_lines(*id, &log, n);
    }
    let waited = killed.elapsed();
    eprintln!("a's jobs interrupted {waited:?} after kill -9 (heartbeat timeout {timeout:?})");
    // Lapse detection runs with each heartbeat (every timeout/3): within
    // timeout + one period, plus slack for a loaded machine.
    assert!(
        waited < timeout * 4,
        "interrupted only after {waited:?} (timeout {timeout:?})"
    );
    // b carried on: its jobs end normally with every line, and it takes
    // new jobs.
    for id in &on_b {
        let job = b.wait_finished(*id).await;
        assert_eq!(job["state"], "succeeded", "{job}");
        assert_eq!(job["node"], "b");
        assert_lines(*id, &b.whole_log(*id).await, 20_000);
    }
    let id = b.submit(json!({"script": "echo line 1"})).await;
    let job = b.wait_finished(id).await;
    assert_eq!(job["state"], "succeeded");
    assert_eq!(job["node"], "b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_sent_to_node_b_stops_a_job_running_on_node_a() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let a = Server::node(dir.path(), db.url(), "a", &[]).await;
    let b = Server::node(dir.path(), db.url(), "b", &[]).await;
    let endless = "i=0; while :; do i=$((i+1)); echo \"line $i\"; sleep 0.01; done";
    let id = a
        .submit(json!({"script": endless, "secrets": {"K": "pins it to a"}}))
        .await;
    a.wait_until(id, "running", |j| j.state == "running").await;
    let r = b.cancel(id).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
    let job = b.wait_finished(id).await;
    assert_eq!(job["state"], "cancelled", "{job}");
    assert_eq!(job["node"], "a");
    // Stopped by a, which says so in the log.
    let log = b.whole_log(id).await;
    assert!(
        log.iter()
            .any(|r| r["message"].as_str().unwrap_or("").contains("cancelled")),
        "{log:?}"
    );
}

/// Two nodes; the database goes away for longer than the heartbeat
/// timeout while both write. Nothing acknowledged is lost, and neither
/// node takes the other for dead once the database is back: every node's
/// heartbeat was stale for the same reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stopped_and_restarted_mid_ingest_loses_no_record() {
    // Needs PostgreSQL's server binaries, which the variable vouches for.
    if TestDatabase::postgres().is_none() {
        return;
    }
    let cluster = PrivateCluster::start_new();
    let dir = tempfile::tempdir().unwrap();
    let hb = ["--heartbeat-timeout", "2s"];
    let a = Server::node(dir.path(), &cluster.url(), "a", &hb).await;
    let b = Server::node(dir.path(), &cluster.url(), "b", &hb).await;
    const LINES: u32 = 40_000;
    let jobs = paced_jobs(&[&a, &b], LINES, 1000).await;
    // Mid-ingest: every job running and writing.
    for (server, id) in &jobs {
        server
            .wait_until(*id, "records", |j| j.log.records > 2000)
            .await;
    }
    cluster.pg_ctl("stop");
    // While the database is away the servers run and say so.
    for server in [&a, &b] {
        eventually("healthz to say unavailable", PATIENCE, || async {
            let (status, body) = server.get_status("/healthz").await;
            (status == 503).then(|| assert!(body.contains("unavailable"), "{body}"))
        })
        .await;
    }
    let (status, metrics) = a.get_status("/metrics").await;
    assert_eq!(status, 200);
    assert!(
        metrics.contains("joblog_store_healthy 0"),
        "metrics do not show the outage"
    );
    // Longer than the heartbeat timeout; jobs print into backpressure.
    tokio::time::sleep(Duration::from_secs(4)).await;
    cluster.pg_ctl("start");
    assert_whole(&jobs, LINES).await;
    for server in [&a, &b] {
        let (status, body) = server.get_status("/healthz").await;
        assert_eq!(status, 200, "{body}");
    }
}

/// Every connection the nodes hold — the writers', the listeners', the
/// readers' — is cut again and again (`pg_terminate_backend`, one
/// backend every 100 ms, in turn) while two nodes ingest and clients
/// submit: each batch is retried or refused whole. No record is lost or
/// doubled, no job is run twice, and every submission answered `201` made
/// exactly one job (one answered `503` made none).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_connections_cut_in_a_loop_lose_and_double_nothing() {
    if TestDatabase::postgres().is_none() {
        return;
    }
    let cluster = PrivateCluster::start_new();
    let dir = tempfile::tempdir().unwrap();
    let a = Server::node(dir.path(), &cluster.url(), "a", &[]).await;
    let b = Server::node(dir.path(), &cluster.url(), "b", &[]).await;
    const LINES: u32 = 20_000;
    let jobs = paced_jobs(&[&a, &b], LINES, 500).await;

    let (killer, conn) = tokio_postgres::connect(&cluster.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cutting = {
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut cuts = 0u32;
            let mut turn = 0usize;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let pids: Vec<i32> = killer
                    .query(
                        "SELECT pid FROM pg_stat_activity WHERE application_name = 'joblog' \
                         AND pid <> pg_backend_pid() ORDER BY pid",
                        &[],
                    )
                    .await
                    .unwrap()
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                if !pids.is_empty() {
                    let pid = pids[turn % pids.len()];
                    turn += 1;
                    let row = killer
                        .query_one("SELECT pg_terminate_backend($1)", &[&pid])
                        .await
                        .unwrap();
                    cuts += u32::from(row.get::<_, bool>(0));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            cuts
        })
    };

    // Submissions meanwhile: each is made once (201) or not at all (503).
    let mut made = 0;
    let mut refused = 0;
    let until = Instant::now() + Duration::from_secs(6);
    while Instant::now() < until {
        for server in [&a, &b] {
            let r = server
                .http
                .post(format!("{}/api/v1/jobs", server.url))
                .json(&json!({"command": ["echo", "submitted"], "name": "cut"}))
                .send()
                .await
                .unwrap();
            match r.status().as_u16() {
                201 => made += 1,
                503 => refused += 1,
                other => panic!("a submission answered {other}: {}", r.text().await.unwrap()),
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let cuts = cutting.await.unwrap();
    assert!(cuts >= 20, "only {cuts} connections were cut");
    eprintln!("{cuts} connections cut; submissions: {made} made, {refused} refused");

    assert_whole(&jobs, LINES).await;
    let listed = eventually("the submitted jobs to finish", PATIENCE, || async {
        let list = a.get_json("/api/v1/jobs?name=cut&limit=1000").await;
        let jobs = list["jobs"].as_array().cloned().unwrap_or_default();
        jobs.iter()
            .all(|j| j["state"] == "succeeded")
            .then_some(jobs)
    })
    .await;
    assert_eq!(
        listed.len(),
        made,
        "{made} submissions answered 201 ({refused} answered 503)"
    );
    for job in &listed {
        assert_eq!(job["log"]["records"], 1, "run once: {job}");
    }
}

/// A primary with a synchronous streaming standby, two nodes on a URL
/// naming both (`target_session_attrs=read-write`). The primary crashes
/// mid-ingest and mid-scheduling and the standby is promoted: the nodes
/// find the new primary by themselves, no record is lost or doubled, no
/// fire makes two jobs and no job runs twice. Prints how long from the
/// promotion to each node's first commit on the new primary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_failover_to_a_synchronous_standby_loses_and_doubles_nothing() {
    if TestDatabase::postgres().is_none() {
        return;
    }
    let mut primary = PrivateCluster::init();
    primary.set("synchronous_standby_names", "standby1");
    primary.pg_ctl("start");
    let standby = PrivateCluster::standby_of(&primary, "standby1");
    let (watch, conn) = tokio_postgres::connect(&primary.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    let driver = tokio::spawn(conn);
    eventually(
        "the standby to replicate synchronously",
        PATIENCE,
        || async {
            let rows = watch
                .query("SELECT sync_state FROM pg_stat_replication", &[])
                .await
                .unwrap();
            rows.iter()
                .any(|r| r.get::<_, String>(0) == "sync")
                .then_some(())
        },
    )
    .await;
    drop(watch);
    driver.abort();

    let url = format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/postgres?target_session_attrs=read-write",
        primary.port(),
        standby.port()
    );
    let dir = tempfile::tempdir().unwrap();
    let a = Server::node(dir.path(), &url, "a", &[]).await;
    let b = Server::node(dir.path(), &url, "b", &[]).await;
    const LINES: u32 = 20_000;
    let jobs = paced_jobs(&[&a, &b], LINES, 500).await;
    let tick = a
        .create_schedule(json!({"name": "tick", "cron": "*/1 * * * * *",
                                "overlap": "allow", "command": ["true"]}))
        .await;
    for (server, id) in &jobs {
        server
            .wait_until(*id, "records", |j| j.log.records > 2000)
            .await;
    }
    eventually("the schedule to fire", PATIENCE, || async {
        (a.runs(tick).await.len() >= 2).then_some(())
    })
    .await;

    primary.crash();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let promoted = Instant::now();
    standby.promote();
    for (name, server) in [("a", &a), ("b", &b)] {
        let took = eventually("a commit on the new primary", PATIENCE, || async {
            let r = server
                .http
                .post(format!("{}/api/v1/jobs", server.url))
                .json(&json!({"command": ["true"], "name": "after"}))
                .send()
                .await
                .ok()?;
            (r.status() == 201).then(|| promoted.elapsed())
        })
        .await;
        eprintln!("node {name}: first commit on the new primary {took:?} after the promotion");
    }

    assert_whole(&jobs, LINES).await;
    // Fires on the new primary too, then none: each fire made one job.
    let before = a.runs(tick).await.len();
    eventually(
        "the schedule to fire on the new primary",
        PATIENCE,
        || async { (a.runs(tick).await.len() >= before + 2).then_some(()) },
    )
    .await;
    a.set_enabled(tick, false).await;
    let runs = a.runs(tick).await;
    let mut fires: Vec<_> = runs
        .iter()
        .map(|j| (j.fire_time.clone(), j.attempt))
        .collect();
    let made = fires.len();
    fires.sort();
    fires.dedup();
    assert_eq!(fires.len(), made, "a fire made two jobs: {runs:?}");
}
