//! Where jobs run across PostgreSQL nodes with labels: each job only on a
//! node its selector allows, none lost or doubled when a node is killed
//! mid-burst, and a selector no node has waiting with its reason.
//! Skipped (with a note) unless JOBLOG_TEST_POSTGRES_URL is set.

use std::collections::BTreeMap;

use joblog_store::testing::TestDatabase;
use serde_json::json;

use super::Server;

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
