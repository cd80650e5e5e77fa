//! Where jobs run: a node's labels and the `node_selector` of jobs and
//! schedules — shown, checked, waited on with a reason, counted.

use axum::http::StatusCode;
use joblog_api::ApiOptions;
use joblog_core::Labels;
use joblog_store::testing::{Backend, TestDatabase};
use serde_json::json;

use super::common::*;

joblog_store::backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    a_selector_goes_with_its_job_and_one_no_node_satisfies_waits_or_is_refused,
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
