//! Where and when jobs run: a node's labels and the `node_selector` of
//! jobs and schedules (shown, checked, waited on with a reason, counted);
//! a node drained and undrained; the scheduler paused and resumed.

use axum::http::StatusCode;
use joblog_api::ApiOptions;
use joblog_core::{Labels, Timestamp};
use joblog_store::testing::{Backend, TestDatabase};
use joblog_testkit::{eventually, PATIENCE};
use serde_json::{json, Value};

use super::common::*;
use super::schedules::{at, runs, wait_runs};

joblog_store::backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    a_selector_goes_with_its_job_and_one_no_node_satisfies_waits_or_is_refused,
    a_drained_node_finishes_its_jobs_takes_no_new_ones_and_fires_nothing,
    a_paused_scheduler_fires_nowhere_and_resumes_by_each_missed_policy,
}

/// A schedule's id, made through the API.
async fn create(r: &axum::Router, body: Value) -> i64 {
    super::schedules::create(r, body).await["id"]
        .as_i64()
        .unwrap()
}

async fn node_state(r: &axum::Router) -> String {
    let nodes = get_json(r, "/api/v1/nodes").await;
    nodes["nodes"][0]["state"].as_str().unwrap().to_string()
}

async fn a_drained_node_finishes_its_jobs_takes_no_new_ones_and_fires_nothing(db: TestDatabase) {
    let clock = ManualClock::at(at(0));
    let t = start_app_with_clock(db, 2, clock.clone()).await;
    let r = &t.router;
    let tick = create(
        r,
        json!({"name": "tick", "cron": "*/5 * * * *", "missed": "one", "overlap": "allow",
                                "command": ["true"]}),
    )
    .await;
    let gate = t.path("gate");
    let script = format!("while [ ! -e {} ]; do sleep 0.02; done", gate.display());
    let running = submit(r, json!({"script": script})).await;
    wait_running(r, id_of(&running)).await;

    let drained = post(r, "/api/v1/nodes/test-node/drain", &json!({})).await;
    assert_eq!(drained.status, StatusCode::OK, "{}", drained.text());
    let node = drained.json();
    assert_eq!(
        (node["state"].as_str(), node["running_jobs"].as_u64()),
        (Some("draining"), Some(1))
    );
    assert!(node["drain_at"].is_string(), "{node}");
    let queued = submit(r, json!({"command": ["true"]})).await;
    // A fire comes while drained; a run-now is a job like any other.
    clock.set(at(5));
    let now = post(r, &format!("/api/v1/schedules/{tick}/run"), &json!({})).await;
    assert_eq!(now.status, StatusCode::CREATED, "{}", now.text());
    // The running job finishes; the node is then drained, and nothing
    // else started.
    std::fs::write(&gate, "").unwrap();
    wait_finished(r, id_of(&running)).await;
    eventually("the node to be drained", PATIENCE, || async {
        let state = node_state(r).await;
        if state == "drained" {
            Ok(())
        } else {
            Err(Value::from(state))
        }
    })
    .await;
    assert_eq!(show(r, id_of(&queued)).await["state"], "queued");
    let tick_runs = runs(r, tick).await;
    assert_eq!(tick_runs.len(), 1, "only the run-now: {tick_runs:?}");
    assert_eq!(tick_runs[0]["state"], "queued");

    let undrained = post(r, "/api/v1/nodes/test-node/undrain", &json!({})).await;
    assert_eq!(undrained.status, StatusCode::OK, "{}", undrained.text());
    assert_eq!(undrained.json()["state"], "up");
    assert_eq!(wait_finished(r, id_of(&queued)).await["state"], "succeeded");
    // The fire held while drained is made now, on time or as `missed`
    // says.
    let tick_runs = wait_runs(r, tick, 2).await;
    assert_eq!(tick_runs[1]["fire_time"], "2026-11-24T00:05:00.000000Z");

    let unknown = post(r, "/api/v1/nodes/nobody/drain", &json!({})).await;
    let message = assert_error(&unknown, StatusCode::NOT_FOUND, "node_not_found");
    assert!(message.contains("\"nobody\""), "{message}");
    t.shutdown().await;
}

async fn a_paused_scheduler_fires_nowhere_and_resumes_by_each_missed_policy(db: TestDatabase) {
    let clock = ManualClock::at(at(0));
    let t = start_app_with_clock(db, 4, clock.clone()).await;
    let r = &t.router;
    let mut ids = Vec::new();
    for missed in ["skip", "one", "all"] {
        let body = json!({"name": format!("every-5-{missed}"), "cron": "*/5 * * * *",
                          "overlap": "allow", "missed": missed, "command": ["true"]});
        ids.push(create(r, body).await);
    }
    let follower = create(
        r,
        json!({"name": "after-skip", "after": {"schedule_id": ids[0], "states": ["succeeded"]},
                                    "command": ["true"]}),
    )
    .await;
    assert_eq!(get_json(r, "/api/v1/scheduler").await["paused"], false);
    let paused = post(r, "/api/v1/scheduler/pause", &json!({})).await;
    assert_eq!(paused.status, StatusCode::OK, "{}", paused.text());
    let state = paused.json();
    assert_eq!(
        (state["paused"].as_bool(), state["paused_by"].as_str()),
        (Some(true), Some("anonymous"))
    );
    assert!(state["paused_at"].is_string(), "{state}");
    // An hour and a half minute pass while paused: 00:05 to 00:55 are
    // late, 01:00 is due. A run-now still runs, and its end triggers
    // nothing while paused.
    clock.set(Timestamp(at(60).0 + 30_000_000));
    let now = post(r, &format!("/api/v1/schedules/{}/run", ids[0]), &json!({})).await;
    assert_eq!(now.status, StatusCode::CREATED, "{}", now.text());
    assert_eq!(
        wait_finished(r, id_of(&now.json())).await["state"],
        "succeeded"
    );
    for id in &ids[1..] {
        assert!(
            runs(r, *id).await.is_empty(),
            "schedule {id} fired while paused"
        );
    }
    assert!(runs(r, follower).await.is_empty());
    let shown = get_json(r, &format!("/api/v1/schedules/{follower}")).await;
    assert_eq!(shown["skipped_fires"], 1, "{shown}");

    let resumed = post(r, "/api/v1/scheduler/resume", &json!({})).await;
    assert_eq!(resumed.status, StatusCode::OK, "{}", resumed.text());
    assert_eq!(resumed.json()["paused"], false);
    // As after downtime: skip runs the fire due, one the latest missed
    // too, all every one.
    for (id, expect) in ids.iter().zip([1 + 1, 2, 12]) {
        let jobs = wait_runs(r, *id, expect).await;
        assert_eq!(jobs.len(), expect, "{jobs:?}");
        assert_eq!(
            jobs.last().unwrap()["fire_time"],
            "2026-11-24T01:00:00.000000Z"
        );
    }
    t.shutdown().await;
}

async fn a_selector_goes_with_its_job_and_one_no_node_satisfies_waits_or_is_refused(
    db: TestDatabase,
) {
    let shared = db.backend() == Backend::Postgres;
    let t = start_app_with(db, 2, ApiOptions::default(), |c| {
        c.labels = Labels::parse("role=db,os=linux").unwrap();
    })
    .await;
    let r = &t.router;

    let nodes = get_json(r, "/api/v1/nodes").await;
    assert_eq!(
        nodes["nodes"][0]["labels"],
        json!({"role": "db", "os": "linux"})
    );

    // A selector this node satisfies: it runs here and says so.
    let db_job = submit(
        r,
        json!({"command": ["true"], "node_selector": {"role": "db"}}),
    )
    .await;
    assert_eq!(db_job["node_selector"], json!({"role": "db"}));
    let done = wait_finished(r, id_of(&db_job)).await;
    assert_eq!(
        (done["state"].as_str(), done["node"].as_str()),
        (Some("succeeded"), Some("test-node"))
    );
    assert!(done.get("waiting_for").is_none(), "{done}");

    // A malformed selector is refused on any store, naming the field.
    let bad = post(
        r,
        "/api/v1/jobs",
        &json!({"command": ["true"], "node_selector": {"role": "d b"}}),
    )
    .await;
    let message = assert_error(&bad, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(message.starts_with("node_selector: "), "{message}");

    let gpu = json!({"command": ["true"], "node_selector": {"gpu": "yes"}});
    let gpu_schedule = json!({"name": "render", "cron": "0 3 * * *", "command": ["true"],
                              "node_selector": {"gpu": "yes"}});
    if !shared {
        // One node, without the label: nothing could ever run it.
        let refused = post(r, "/api/v1/jobs", &gpu).await;
        let message = assert_error(&refused, StatusCode::BAD_REQUEST, "invalid_request");
        assert!(
            message.starts_with("node_selector: gpu=yes asks for labels this server lacks")
                && message.contains("os=linux,role=db"),
            "{message}"
        );
        let refused = post(r, "/api/v1/schedules", &gpu_schedule).await;
        let message = assert_error(&refused, StatusCode::BAD_REQUEST, "invalid_request");
        assert!(message.starts_with("node_selector: "), "{message}");
        t.shutdown().await;
        return;
    }
    // Several nodes: another may have the label, or come; it waits, and
    // says what for.
    let waiting = submit(r, gpu).await;
    let id = id_of(&waiting);
    assert_eq!(waiting["waiting_for"], "no up node has labels gpu=yes");
    let after = submit(r, json!({"command": ["true"]})).await;
    wait_finished(r, id_of(&after)).await;
    let still = show(r, id).await;
    assert_eq!(still["state"], "queued", "{still}");
    assert_eq!(still["waiting_for"], "no up node has labels gpu=yes");
    let listed = get_json(r, "/api/v1/jobs?state=queued").await;
    assert_eq!(
        listed["jobs"][0]["waiting_for"],
        "no up node has labels gpu=yes"
    );
    let metrics = get(r, "/metrics").await.text();
    assert!(
        metrics.contains("\njoblog_jobs_waiting_for_node 1\n"),
        "{metrics}"
    );
    let saved = post(r, "/api/v1/schedules", &gpu_schedule).await;
    assert_eq!(saved.status, StatusCode::CREATED);
    assert_eq!(saved.json()["node_selector"], json!({"gpu": "yes"}));
    let cancelled = post(r, &format!("/api/v1/jobs/{id}/cancel"), &json!({})).await;
    assert_eq!(cancelled.status, StatusCode::OK, "{}", cancelled.text());
    let ended = wait_for(r, id, "cancelled", |j| j.state == "cancelled").await;
    assert!(ended.get("waiting_for").is_none(), "{ended}");
    t.shutdown().await;
}
