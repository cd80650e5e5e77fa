//! Where and when jobs run: across PostgreSQL nodes with labels, each job
//! only on a node its selector allows, none lost or doubled when a node is
//! killed mid-burst, and a selector no node has waiting with its reason
//! (skipped, with a note, unless JOBLOG_TEST_POSTGRES_URL is set); and a
//! restored copy started paused.

use std::collections::BTreeMap;

use joblog_store::testing::TestDatabase;
use joblog_testkit::{eventually, PATIENCE};
use serde_json::json;

use super::{cli, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_labelled_nodes_run_each_job_where_its_selector_allows_through_a_kill() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let opts = |labels: &'static str| {
        [
            "--heartbeat-timeout",
            "3s",
            "--max-concurrency",
            "3",
            "--node-labels",
            labels,
        ]
    };
    let a = Server::node(dir.path(), db.url(), "a", &opts("role=db")).await;
    let b = Server::node(dir.path(), db.url(), "b", &opts("role=web")).await;
    let mut c = Server::node(dir.path(), db.url(), "c", &opts("role=db,os=linux")).await;
    let runs = dir.path().join("runs");
    let script = format!(
        "echo \"ran $JOBLOG_JOB_ID\" >> {}; sleep 0.1",
        runs.display()
    );
    // A third each for the databases, the web and anyone.
    let selectors = [json!({"role": "db"}), json!({"role": "web"}), json!(null)];
    let mut jobs: Vec<(i64, usize)> = Vec::new();
    for i in 0..90 {
        // To every node in turn while c lives, then to a and b.
        let to = match (i > 45, i % 3) {
            (_, 0) => &a,
            (_, 1) | (true, 2) => &b,
            _ => &c,
        };
        let kind = (i / 3) % 3;
        let body = json!({"script": script, "node_selector": selectors[kind]});
        jobs.push((to.submit(body).await, kind));
        if i == 45 {
            // Mid-burst: the node with the most labels dies.
            c.signal("KILL");
            c.wait_exit();
        }
    }
    let nowhere = a
        .submit(json!({"command": ["true"], "node_selector": {"gpu": "yes"}}))
        .await;
    let mut by_kind: BTreeMap<usize, BTreeMap<String, usize>> = BTreeMap::new();
    for (id, kind) in &jobs {
        let job = a.wait_finished(*id).await;
        let node = job["node"].as_str().expect("a node took it").to_string();
        let state = job["state"].as_str().unwrap();
        // Only the jobs c was running when it died end otherwise.
        assert!(
            state == "succeeded" || (state == "interrupted" && node == "c"),
            "job {id}: {job}"
        );
        *by_kind.entry(*kind).or_default().entry(node).or_default() += 1;
    }
    eprintln!("nodes by selector (db, web, any): {by_kind:?}");
    let ran_on = |kind: usize| by_kind[&kind].keys().cloned().collect::<Vec<_>>();
    assert!(
        ran_on(0).iter().all(|n| n == "a" || n == "c"),
        "{by_kind:?}"
    );
    assert_eq!(ran_on(1), ["b"], "{by_kind:?}");
    // Every job ran at most once, and each that succeeded exactly once.
    let text = std::fs::read_to_string(&runs).unwrap();
    let mut counts: BTreeMap<i64, u32> = BTreeMap::new();
    for line in text.lines() {
        *counts
            .entry(line.strip_prefix("ran ").unwrap().parse().unwrap())
            .or_default() += 1;
    }
    assert!(
        counts.values().all(|&n| n == 1),
        "a job ran twice: {counts:?}"
    );
    for (id, _) in &jobs {
        let job = b.job(*id).await;
        if job["state"] == "succeeded" {
            assert_eq!(
                counts.get(id),
                Some(&1),
                "job {id} succeeded without running"
            );
        }
    }
    // No node has gpu=yes: it waits, and says so.
    let waiting = b.job(nowhere).await;
    assert_eq!(waiting["state"], "queued", "{waiting}");
    assert_eq!(waiting["waiting_for"], "no up node has labels gpu=yes");
}

/// A restore drill: a backup of a server with a due schedule and a queued
/// job, started on another host's data directory with `--paused`. It
/// fires nothing and runs nothing, shows the old node as lapsed, and
/// goes to work once resumed and undrained, each step audited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_copy_started_paused_runs_nothing_until_resumed_and_undrained() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("prod");
    std::fs::create_dir_all(&data).unwrap();
    let prod = Server::start(&data, &["--node", "prod"]).await;
    let tick = prod
        .create_schedule(json!({"name": "health-check", "cron": "* * * * *",
                                "overlap": "allow", "missed": "one", "command": ["true"]}))
        .await;
    let copy = dir.path().join("copy.db");
    let (code, out, err) = cli(&prod, &["backup", &copy.display().to_string()]);
    assert_eq!(code, 0, "{out}{err}");
    drop(prod);
    // Its fire is due the moment the copy starts.
    {
        let db = rusqlite::Connection::open(&copy).unwrap();
        let due = joblog_core::Timestamp::now().micros() - 10_000_000;
        db.execute("UPDATE schedules SET next_fire = ?1", [due])
            .unwrap();
    }
    let drill = dir.path().join("drill");
    std::fs::create_dir_all(&drill).unwrap();
    std::fs::copy(&copy, drill.join("joblog.db")).unwrap();
    let server = Server::start(&drill, &["--node", "drill", "--paused"]).await;

    let (code, out, _) = cli(&server, &["scheduler"]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("scheduler: paused since ")
            && out.contains("by node drill, started paused"),
        "{out}"
    );
    let nodes = server.get_json("/api/v1/nodes").await;
    let state = |name: &str| {
        nodes["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name)
            .map(|n| n["state"].as_str().unwrap().to_string())
    };
    assert_eq!(state("prod").as_deref(), Some("lapsed"), "{nodes}");
    assert_eq!(state("drill").as_deref(), Some("drained"), "{nodes}");
    let job = server.submit(json!({"command": ["true"]})).await;
    assert_eq!(runs(&server, tick).await, 0, "a paused copy fired");
    assert_eq!(server.job(job).await["state"], "queued");

    let (code, out, err) = cli(&server, &["scheduler", "resume"]);
    assert_eq!(
        (code, out.as_str()),
        (0, "scheduler: running (schedules fire)\n"),
        "{err}"
    );
    // Resumed, but the node is still drained: it takes nothing and
    // fires nothing.
    assert_eq!(server.job(job).await["state"], "queued");
    let (code, out, err) = cli(&server, &["nodes", "undrain", "drill"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("node drill: up, "), "{out}");
    assert_eq!(server.wait_finished(job).await["state"], "succeeded");
    // The fire due all along, made once the node may fire.
    eventually("the due fire to run", PATIENCE, || async {
        (runs(&server, tick).await == 1).then_some(())
    })
    .await;
    let (code, _, err) = cli(&server, &["nodes", "drain", "nobody"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("node_not_found") || err.contains("no node named"),
        "{err}"
    );

    for action in ["scheduler.resumed", "node.undrained"] {
        eventually(&format!("an audit entry {action}"), PATIENCE, || async {
            let page = server
                .get_json(&format!("/api/v1/audit?action={action}"))
                .await;
            let entries = page["entries"].as_array().cloned().unwrap_or_default();
            (entries.len() == 1 && entries[0]["actor"] == "anonymous").then_some(())
        })
        .await;
    }
}

/// How many runs schedule `id` has.
async fn runs(server: &Server, id: i64) -> usize {
    let page = server
        .get_json(&format!("/api/v1/jobs?schedule_id={id}"))
        .await;
    page["jobs"].as_array().map_or(0, Vec::len)
}
