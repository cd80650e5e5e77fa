//! `GET /api/v1/jobs` with the filters an operator's daily questions need
//! ("what failed since yesterday?"): several states, a window of creation
//! times, name patterns and a node, paged by `next_before_id`; and a 400
//! naming the parameter for each bad value.

use axum::http::StatusCode;
use joblog_store::testing::TestDatabase;
use serde_json::{json, Value};

use crate::common::*;

joblog_store::backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    the_daily_question_is_one_request,
    bad_listing_parameters_are_refused_naming_them,
}

/// The ids of a listing, and its `next_before_id`.
async fn listed(router: &axum::Router, query: &str) -> (Vec<i64>, Value) {
    let page = get_json(router, &format!("/api/v1/jobs?{query}")).await;
    let ids = page["jobs"]
        .as_array()
        .unwrap_or_else(|| panic!("{query}: {page}"))
        .iter()
        .map(id_of)
        .collect();
    (ids, page["next_before_id"].clone())
}

async fn ids(router: &axum::Router, query: &str) -> Vec<i64> {
    listed(router, query).await.0
}

async fn run_named(router: &axum::Router, name: &str, script: &str) -> Value {
    let id = id_of(&submit(router, json!({"name": name, "script": script})).await);
    wait_finished(router, id).await
}

async fn the_daily_question_is_one_request(db: TestDatabase) {
    let t = start_app(db, 4).await;
    let r = &t.router;
    let old = run_named(r, "backup-db", "exit 1").await;
    let first = run_named(r, "backup-db", "exit 2").await;
    let ok = run_named(r, "backup-files", "true").await;
    let slow = id_of(
        &submit(
            r,
            json!({"name": "report", "script": "sleep 30", "timeout_s": 0.2}),
        )
        .await,
    );
    assert_eq!(wait_finished(r, slow).await["state"], "timed_out");
    let last = run_named(r, "backup-files", "exit 3").await;
    let running = id_of(&submit(r, json!({"name": "backup-x", "script": "sleep 30"})).await);
    wait_running(r, running).await;
    let (old, first, ok, last) = (id_of(&old), id_of(&first), id_of(&ok), id_of(&last));

    let bad = "state=failed,timed_out";
    assert_eq!(ids(r, bad).await, [last, slow, first, old]);
    assert_eq!(
        ids(r, &format!("since=24h&{bad}")).await,
        [last, slow, first, old]
    );
    assert!(ids(r, "until=24h").await.is_empty());
    // `since` keeps the job created at that very time; `until` does not.
    let created = |job: &Value| job["created_at"].as_str().unwrap().to_string();
    let first_at = created(&show(r, first).await);
    let last_at = created(&show(r, last).await);
    assert_eq!(
        ids(r, &format!("since={first_at}&{bad}")).await,
        [last, slow, first]
    );
    assert_eq!(
        ids(r, &format!("since={first_at}&until={last_at}&{bad}")).await,
        [slow, first]
    );

    assert_eq!(
        ids(r, "name=backup*").await,
        [running, last, ok, first, old]
    );
    assert_eq!(
        ids(r, &format!("name=backup*&{bad}")).await,
        [last, first, old]
    );
    assert_eq!(ids(r, "name=backup-files").await, [last, ok]);
    assert_eq!(ids(r, "name=*-files&state=succeeded").await, [ok]);
    assert_eq!(ids(r, "name=backup%3F").await, Vec::<i64>::new());
    assert_eq!(ids(r, "node=test-node&state=running").await, [running]);
    assert!(ids(r, "node=another-node").await.is_empty());

    // Pages of two, each after the `next_before_id` of the one before.
    let (page, next) = listed(r, &format!("{bad}&limit=2")).await;
    assert_eq!((page, next.clone()), (vec![last, slow], json!(slow)));
    let (page, next) = listed(r, &format!("{bad}&limit=2&before_id={next}")).await;
    assert_eq!((page, next.clone()), (vec![first, old], json!(old)));
    let (page, next) = listed(r, &format!("{bad}&limit=2&before_id={next}")).await;
    assert_eq!((page, next), (vec![], Value::Null));

    post(r, &format!("/api/v1/jobs/{running}/cancel"), &json!({})).await;
    wait_finished(r, running).await;
    t.shutdown().await;
}

async fn bad_listing_parameters_are_refused_naming_them(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let r = &t.router;
    for (query, says) in [
        (
            "state=bogus",
            &["state:", "\"bogus\"", "failed", "timed_out"][..],
        ),
        (
            "state=failed,bogus",
            &["state:", "\"bogus\"", "interrupted"],
        ),
        (
            "since=yesterday",
            &["since:", "\"yesterday\"", "24h", "2026-11-22T10:00:00Z"],
        ),
        ("until=2026-11-22T10:00", &["until:", "24h", "2026-11-22"]),
        ("since=1h&until=2h", &["since:", "not before until"]),
        (
            "since=2026-11-22T10:00:00Z&until=2026-11-22T10:00:00Z",
            &["since:", "not before until"],
        ),
        ("node=a%00b", &["node:", "control"]),
        ("name=a%01*", &["name:", "control"]),
        ("state=failed&nodes=x", &["nodes"]),
    ] {
        let message = assert_error(
            &get(r, &format!("/api/v1/jobs?{query}")).await,
            StatusCode::BAD_REQUEST,
            "invalid_query",
        );
        for word in says {
            assert!(
                message.contains(word),
                "{query}: {message:?} lacks {word:?}"
            );
        }
    }
    // Empty values are no filters.
    let id = id_of(&run_sh(r, "true").await);
    assert_eq!(ids(r, "state=&name=&node=&since=&until=").await, [id]);
    t.shutdown().await;
}
