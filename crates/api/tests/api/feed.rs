//! The job-list feed `GET /api/v1/events`: events telling a list what was
//! queued, started and finished, commits gathered into one event, the
//! bounds on what one event lists, the viewer role and the viewer places
//! it shares with live tails.
//!
//! On PostgreSQL the store's listener announces a `reset` once it has
//! connected, at a moment no test chooses; it may fall among a test's
//! events. A reset tells nothing in particular, so a test that sees one
//! where it expects a precise event starts that step over (the listener
//! says it once per connection).

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use joblog_api::limits::Limits;
use joblog_api::ApiOptions;
use joblog_store::testing::TestDatabase;
use joblog_store::Committed;
use serde_json::{json, Value};

use crate::common::*;

const BOOTSTRAP: &str = "bootstrap-token-for-the-feed-0123456789";

joblog_store::backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    the_feed_tells_of_a_job_queued_started_and_finished,
    the_feed_gathers_commits_into_one_event_and_bounds_it,
    the_feed_needs_a_viewer_and_takes_a_viewer_place,
}

/// One `event: jobs`: `{"new", "changed", "reset"}`, nothing else.
async fn next_jobs(feed: &mut EventStream) -> Value {
    let event = feed.next().await.expect("the feed does not end");
    assert_eq!(event.kind(), "jobs", "{event:?}");
    assert_eq!(event.id, None, "{event:?}");
    let data = event.json();
    let object = data.as_object().expect("an object");
    assert_eq!(object.len(), 3, "{data}");
    assert!(data["new"].is_u64() && data["changed"].is_array(), "{data}");
    assert!(data["reset"].is_boolean(), "{data}");
    data
}

fn changed(event: &Value) -> Vec<i64> {
    let ids: Vec<i64> = event["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_i64().unwrap())
        .collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "ascending, once: {ids:?}"
    );
    ids
}

async fn the_feed_tells_of_a_job_queued_started_and_finished(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let mut feed = events(&t.router, "/api/v1/events", None).await;
    for attempt in 0..3 {
        if follow_a_job(&t, &mut feed, attempt).await {
            t.shutdown().await;
            return;
        }
    }
    panic!("three resets in a row");
}

/// Submits a job that writes nothing and waits for its flag file, and
/// follows it through the feed; false when a reset cut the steps short.
async fn follow_a_job(t: &TestApp, feed: &mut EventStream, attempt: usize) -> bool {
    let r = &t.router;
    let go = t.path(&format!("go-{attempt}"));
    let job = submit(
        r,
        json!({"command": ["sh", "-c", r#"while [ ! -e "$GO" ]; do sleep 0.02; done"#],
               "env": {"GO": go.to_str().unwrap()}}),
    )
    .await;
    let id = id_of(&job);

    // Queued, then claimed: one event or two, as the commits fall.
    let mut new = 0;
    loop {
        let event = next_jobs(feed).await;
        if event["reset"] == true {
            std::fs::write(&go, b"").unwrap();
            wait_finished(r, id).await;
            return false;
        }
        new += event["new"].as_u64().unwrap();
        if changed(&event).contains(&id) {
            break;
        }
    }
    assert!(new >= 1, "the submission was told of");
    // Nothing but its start changed the job so far: it writes nothing.
    assert_eq!(show(r, id).await["state"], "running");

    std::fs::write(&go, b"").unwrap();
    loop {
        let event = next_jobs(feed).await;
        if event["reset"] == true {
            wait_finished(r, id).await;
            return false;
        }
        if changed(&event).contains(&id) {
            break;
        }
    }
    // Its only change since it started is its end.
    let job = show(r, id).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    assert_eq!(job["log"]["records"], 0, "{job}");
    true
}

async fn the_feed_gathers_commits_into_one_event_and_bounds_it(db: TestDatabase) {
    let t = start_app(db, 2).await;
    // Commits as the pipeline broadcasts them, for jobs that need not
    // exist: the feed reads nothing but the commits.
    let commits = t.pipeline.commit_sender();
    let send = |c: Committed| {
        commits.send(Arc::new(c)).unwrap();
    };
    let mut feed = events(&t.router, "/api/v1/events", None).await;
    let mut attempts = 0;
    loop {
        // Sent before the stream's body is first read: all are waiting.
        send(Committed {
            queued: 2,
            ..Committed::default()
        });
        send(Committed {
            started: vec![1001],
            ..Committed::default()
        });
        send(Committed {
            finished: vec![1000],
            appended: vec![(1002, 7)],
            ..Committed::default()
        });
        send(Committed {
            appended: vec![(1001, 3)],
            // A cancel request changes nothing a list shows.
            cancel: vec![1003],
            ..Committed::default()
        });
        let event = next_jobs(&mut feed).await;
        if event["reset"] == true && attempts < 3 {
            attempts += 1;
            continue;
        }
        assert_eq!(
            event,
            json!({"new": 2, "changed": [1000, 1001, 1002], "reset": false}),
            "four commits, one event"
        );
        break;
    }

    // More ids than one event lists: re-read everything.
    send(Committed {
        appended: (1..=1001).map(|id| (id, 1)).collect(),
        queued: 3,
        ..Committed::default()
    });
    let event = next_jobs(&mut feed).await;
    assert_eq!(event, json!({"new": 3, "changed": [], "reset": true}));

    // A reset commit (missed commits of other nodes): the same.
    send(Committed {
        reset: true,
        finished: vec![5],
        ..Committed::default()
    });
    let event = next_jobs(&mut feed).await;
    assert_eq!(event, json!({"new": 0, "changed": [], "reset": true}));
    t.shutdown().await;
}

fn with_token(uri: &str, token: Option<&str>) -> Request<Body> {
    let mut req = Request::get(uri);
    if let Some(token) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    req.body(Body::empty()).unwrap()
}

async fn the_feed_needs_a_viewer_and_takes_a_viewer_place(db: TestDatabase) {
    let options = ApiOptions {
        token: Some(BOOTSTRAP.into()),
        limits: Limits {
            max_viewers: 2,
            ..Limits::default()
        },
        ..ApiOptions::default()
    };
    let t = start_app_with(db, 1, options, |_| {}).await;
    let r = &t.router;
    let subscribers = || t.pipeline.commit_sender().receiver_count();
    let before = subscribers();

    let reply = open_events_with(r, with_token("/api/v1/events", None))
        .await
        .err()
        .expect("no feed without a token");
    assert_error(&reply, StatusCode::UNAUTHORIZED, "unauthorized");

    let created = send(
        r,
        Request::post("/api/v1/tokens")
            .header(header::AUTHORIZATION, format!("Bearer {BOOTSTRAP}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(
                json!({"name": "wall", "role": "viewer"}).to_string(),
            ))
            .unwrap(),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let viewer = created.json()["token"].as_str().unwrap().to_string();
    let open = || async { open_events_with(r, with_token("/api/v1/events", Some(&viewer))).await };

    let first = open().await.expect("a viewer opens the feed");
    let second = open().await.expect("a second feed");
    assert_eq!(subscribers(), before + 2, "one subscription per feed");
    let reply = open()
        .await
        .err()
        .expect("a third is past http.max_viewers");
    let message = assert_error(&reply, StatusCode::TOO_MANY_REQUESTS, "too_many_viewers");
    assert!(message.contains("http.max_viewers"), "{message}");
    // Log tails count in the same bound.
    let job = send(
        r,
        Request::post("/api/v1/jobs")
            .header(header::AUTHORIZATION, format!("Bearer {BOOTSTRAP}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(json!({"command": ["true"]}).to_string()))
            .unwrap(),
    )
    .await;
    assert_eq!(job.status, StatusCode::CREATED, "{}", job.text());
    let tail = format!("/api/v1/jobs/{}/log/events", id_of(&job.json()));
    let reply = open_events_with(r, with_token(&tail, Some(&viewer)))
        .await
        .err()
        .expect("no place for a live tail either");
    assert_error(&reply, StatusCode::TOO_MANY_REQUESTS, "too_many_viewers");

    // A feed that is dropped gives its place and subscription back.
    drop(first);
    assert_eq!(subscribers(), before + 1);
    let third = open().await.expect("the place given back");
    drop((second, third));
    assert_eq!(
        subscribers(),
        before,
        "every feed let go of its subscription"
    );
    t.shutdown().await;
}
