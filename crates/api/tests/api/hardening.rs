//! The request-level hard limits (URL length, body sizes declared or not,
//! the request timeout, live-tail viewers, the queue) and the other
//! findings of a hostile-input probe (huge commands in listings, relative
//! and missing working directories, result paths that are links).

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use joblog_api::limits::{Limits, SMALL_BODY_BYTES};
use joblog_api::ApiOptions;
use joblog_store::testing::TestDatabase;
use serde_json::json;

use crate::common::*;

joblog_store::backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    long_urls_and_large_bodies_are_refused_before_they_are_read,
    a_request_past_its_timeout_gets_408_and_the_connection_closes,
    live_tail_viewers_are_bounded_per_job_and_in_total,
    a_full_queue_refuses_submissions_with_retry_after,
    listings_carry_an_abbreviated_command,
    working_directories_are_absolute_and_must_exist,
    a_result_path_that_is_a_link_or_a_directory_is_refused_and_removed,
    a_daemon_that_leaves_its_process_group_ends_with_its_job,
}

fn options(limits: Limits) -> ApiOptions {
    ApiOptions {
        limits,
        ..ApiOptions::default()
    }
}

async fn long_urls_and_large_bodies_are_refused_before_they_are_read(db: TestDatabase) {
    let limits = Limits {
        max_uri_bytes: 1024,
        max_body_bytes: 100_000,
        ..Limits::default()
    };
    let t = start_app_with(db, 1, options(limits), |_| {}).await;
    let long = format!("/api/v1/jobs?name={}", "x".repeat(1100));
    let message = assert_error(
        &get(&t.router, &long).await,
        StatusCode::URI_TOO_LONG,
        "uri_too_long",
    );
    assert!(message.contains("http.max_uri_bytes"), "{message}");

    // Declared too large: refused from the header, and the connection is
    // not kept for the body.
    let reply_for = |uri: &str, length: &str| {
        Request::post(uri)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::CONTENT_LENGTH, length)
            .body(Body::empty())
            .unwrap()
    };
    let response =
        tower::ServiceExt::oneshot(t.router.clone(), reply_for("/api/v1/jobs", "99999999999"))
            .await
            .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(response.headers()[header::CONNECTION], "close");
    // Other routes take small bodies only.
    let reply = send(
        &t.router,
        reply_for("/api/v1/tokens", &(SMALL_BODY_BYTES + 1).to_string()),
    )
    .await;
    assert_error(&reply, StatusCode::PAYLOAD_TOO_LARGE, "body_too_large");

    // Not declared (streamed): cut at the limit all the same.
    let big = json!({"command": ["echo", "x".repeat(150_000)]}).to_string();
    let chunks: Vec<Result<String, std::io::Error>> = big
        .as_bytes()
        .chunks(10_000)
        .map(|c| Ok(String::from_utf8(c.to_vec()).unwrap()))
        .collect();
    let reply = send(
        &t.router,
        Request::post("/api/v1/jobs")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from_stream(futures_util::stream::iter(chunks)))
            .unwrap(),
    )
    .await;
    assert_error(&reply, StatusCode::PAYLOAD_TOO_LARGE, "body_too_large");
    // Under the limit, a large submission is fine.
    submit(&t.router, json!({"command": ["echo", "x".repeat(90_000)]})).await;
    assert_eq!(
        get_json(&t.router, "/api/v1/jobs").await["jobs"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    t.shutdown().await;
}

async fn a_request_past_its_timeout_gets_408_and_the_connection_closes(db: TestDatabase) {
    let limits = Limits {
        request_timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let t = start_app_with(db, 1, options(limits), |_| {}).await;
    let id = id_of(&submit_sh(&t.router, "sleep 30").await);
    wait_running(&t.router, id).await;
    // A long poll for records that do not come outlasts the timeout.
    let response = tower::ServiceExt::oneshot(
        t.router.clone(),
        Request::get(format!("/api/v1/jobs/{id}/log?after_seq=0&wait_ms=5000"))
            .body(Body::empty())
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), StatusCode::REQUEST_TIMEOUT);
    assert_eq!(response.headers()[header::CONNECTION], "close");
    // A stream answers within the timeout and goes on past it.
    let mut events = events(&t.router, &format!("/api/v1/jobs/{id}/log/events"), None).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cancel = post(&t.router, &format!("/api/v1/jobs/{id}/cancel"), &json!({})).await;
    assert_eq!(cancel.status, StatusCode::OK);
    let mut last = None;
    while let Some(e) = events.next().await {
        last = Some(e.kind().to_string());
    }
    assert_eq!(last.as_deref(), Some("end"));
    t.shutdown().await;
}

async fn live_tail_viewers_are_bounded_per_job_and_in_total(db: TestDatabase) {
    let limits = Limits {
        max_viewers: 3,
        max_viewers_per_job: 2,
        ..Limits::default()
    };
    let t = start_app_with(db, 4, options(limits), |_| {}).await;
    let a = id_of(&submit_sh(&t.router, "sleep 30").await);
    let b = id_of(&submit_sh(&t.router, "sleep 30").await);
    let c = id_of(&submit_sh(&t.router, "sleep 30").await);
    let tail = |id: i64| format!("/api/v1/jobs/{id}/log/events");
    let a1 = events(&t.router, &tail(a), None).await;
    let _a2 = events(&t.router, &tail(a), None).await;
    let refused = open_events(&t.router, &tail(a), None).await.err().unwrap();
    let message = assert_error(&refused, StatusCode::TOO_MANY_REQUESTS, "too_many_viewers");
    assert!(message.contains(&format!("job {a}")), "{message}");
    let _b1 = events(&t.router, &tail(b), None).await;
    let refused = open_events(&t.router, &tail(c), None).await.err().unwrap();
    let message = assert_error(&refused, StatusCode::TOO_MANY_REQUESTS, "too_many_viewers");
    assert!(message.contains("http.max_viewers"), "{message}");
    // A viewer that leaves gives its place back.
    drop(a1);
    let _c1 = events(&t.router, &tail(c), None).await;
    for id in [a, b, c] {
        post(&t.router, &format!("/api/v1/jobs/{id}/cancel"), &json!({})).await;
    }
    t.shutdown().await;
}

async fn a_full_queue_refuses_submissions_with_retry_after(db: TestDatabase) {
    let t = start_app_with(db, 1, ApiOptions::default(), |e| e.max_queued = 2).await;
    let running = id_of(&submit_sh(&t.router, "sleep 30").await);
    wait_running(&t.router, running).await;
    submit_sh(&t.router, "true").await;
    submit_sh(&t.router, "true").await;
    let response = tower::ServiceExt::oneshot(
        t.router.clone(),
        Request::post("/api/v1/jobs")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(r#"{"command": ["true"]}"#))
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(response.headers().contains_key(header::RETRY_AFTER));
    let jobs = get_json(&t.router, "/api/v1/jobs").await;
    assert_eq!(
        jobs["jobs"].as_array().unwrap().len(),
        3,
        "nothing queued past the limit"
    );
    post(
        &t.router,
        &format!("/api/v1/jobs/{running}/cancel"),
        &json!({}),
    )
    .await;
    t.shutdown().await;
}

/// The probe's finding: a job with a 1 MB argument made every listing
/// 1 MB. Listings abbreviate; the job itself still has all of it.
async fn listings_carry_an_abbreviated_command(db: TestDatabase) {
    let t = start_app(db, 1).await;
    let huge = "x".repeat(900_000);
    let id = id_of(&submit(&t.router, json!({"command": ["echo", huge]})).await);
    let list = get(&t.router, "/api/v1/jobs").await;
    assert!(list.body.len() < 10_000, "{} bytes", list.body.len());
    let listed = &list.json()["jobs"][0];
    assert_eq!(listed["command_truncated"], true);
    assert!(listed["command"][1].as_str().unwrap().ends_with('…'));
    let full = show(&t.router, id).await;
    assert_eq!(full["command"][1].as_str().unwrap().len(), 900_000);
    assert!(full.get("command_truncated").is_none(), "{}", full["id"]);
    wait_finished(&t.router, id).await;
    // The second probe's: large environments did the same (7.7 MB pages).
    let env: serde_json::Map<String, serde_json::Value> = (0..40)
        .map(|i| (format!("BIG_{i:02}"), json!("v".repeat(20_000))))
        .collect();
    let id = id_of(&submit(&t.router, json!({"command": ["true"], "env": env})).await);
    let list = get(&t.router, "/api/v1/jobs").await;
    assert!(list.body.len() < 20_000, "{} bytes", list.body.len());
    let listed = &list.json()["jobs"][0];
    assert_eq!(listed["id"], id);
    assert_eq!(listed["env_truncated"], true);
    assert!(listed["env"]["BIG_00"].as_str().unwrap().ends_with('…'));
    let full = show(&t.router, id).await;
    assert_eq!(full["env"].as_object().unwrap().len(), 40);
    assert!(full.get("env_truncated").is_none());
    wait_finished(&t.router, id).await;
    t.shutdown().await;
}

/// The probe's findings: a relative `cwd` resolved against the server's
/// directory, and a missing one was reported as the program not existing.
async fn working_directories_are_absolute_and_must_exist(db: TestDatabase) {
    let t = start_app(db, 1).await;
    let reply = post(
        &t.router,
        "/api/v1/jobs",
        &json!({"command": ["pwd"], "cwd": "some/dir"}),
    )
    .await;
    let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(
        message.contains("cwd") && message.contains("absolute"),
        "{message}"
    );
    let missing = t.path("no-such-dir");
    let job = submit(
        &t.router,
        json!({"command": ["pwd"], "cwd": missing.to_str().unwrap()}),
    )
    .await;
    let job = wait_finished(&t.router, id_of(&job)).await;
    assert_eq!(job["state"], "failed");
    let log = whole_log(&t.router, id_of(&job)).await;
    let text = log[0]["message"].as_str().unwrap();
    assert!(
        text.contains("working directory") && text.contains("no-such-dir"),
        "{text}"
    );
    let here = t.path("");
    let job = submit(
        &t.router,
        json!({"command": ["pwd"], "cwd": here.to_str().unwrap()}),
    )
    .await;
    let job = wait_finished(&t.router, id_of(&job)).await;
    assert_eq!(job["state"], "succeeded");
    t.shutdown().await;
}

/// The probe's findings: a `JOBLOG_RESULT` made a link was followed (a
/// job could have the server read any file it can), and one made a
/// directory was left behind.
async fn a_result_path_that_is_a_link_or_a_directory_is_refused_and_removed(db: TestDatabase) {
    let t = start_app(db, 1).await;
    let secret = t.path("server-only.json");
    std::fs::write(&secret, r#"{"server": "secret"}"#).unwrap();
    let link = run_sh(
        &t.router,
        &format!("ln -s {} \"$JOBLOG_RESULT\"", secret.display()),
    )
    .await;
    assert_eq!(link["state"], "failed", "{link}");
    assert!(link["result"].is_null(), "{link}");
    let log = whole_log(&t.router, id_of(&link)).await;
    assert!(
        log.iter()
            .any(|r| r["message"].as_str().unwrap().contains("symbolic link")),
        "{log:?}"
    );
    let dir = run_sh(
        &t.router,
        "mkdir \"$JOBLOG_RESULT\"; touch \"$JOBLOG_RESULT/x\"",
    )
    .await;
    assert_eq!(dir["state"], "failed", "{dir}");
    let results = t.path("results");
    let left: Vec<_> = std::fs::read_dir(&results).unwrap().collect();
    assert!(left.is_empty(), "left in {}: {left:?}", results.display());
    assert!(secret.exists(), "the link's target is never touched");
    t.shutdown().await;
}

/// The probe's finding: `setsid` and an ignored SIGTERM left a process
/// running after its job had succeeded. The server is its subreaper and
/// kills it when the job ends.
async fn a_daemon_that_leaves_its_process_group_ends_with_its_job(db: TestDatabase) {
    let t = start_app(db, 1).await;
    let pidfile = t.path("daemon.pid");
    let job = submit(
        &t.router,
        json!({
            "command": ["sh", "-c", r#"setsid sh -c 'trap "" TERM; echo $$ > "$PIDFILE"; exec sleep 300' </dev/null >/dev/null 2>&1 &
while [ ! -s "$PIDFILE" ]; do sleep 0.05; done"#],
            "env": {"PIDFILE": pidfile.to_str().unwrap()},
        }),
    )
    .await;
    let job = wait_finished(&t.router, id_of(&job)).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    eventually(
        &format!("the daemon {pid} to end with its job"),
        PATIENCE,
        || async {
            // Gone, or dead and waiting to be reaped.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next());
            if matches!(state, None | Some("Z" | "X")) {
                Ok(())
            } else {
                Err(stat)
            }
        },
    )
    .await;
    t.shutdown().await;
}

/// The probe's finding: with the store refusing writes (a full disk), a
/// submission hung and ran later (a client's retry became a duplicate),
/// and a cancel answered 200 while the job ran on. Now a submission fails
/// at once with 503, and a cancel stops the job's processes at once, even
/// while its log waits for the store. (SQLite: another connection holding
/// the database's write lock stalls the writer as a full disk does.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_writes_failing_submissions_fail_fast_and_cancel_still_stops_the_job() {
    let db = TestDatabase::sqlite();
    let db_path = db.url().trim_start_matches("sqlite://").to_string();
    let t = start_app_with(db, 1, ApiOptions::default(), |e| {
        e.kill_grace = Duration::from_millis(500)
    })
    .await;
    let pidfile = t.path("job.pid");
    let job = submit(
        &t.router,
        json!({
            "command": ["sh", "-c", r#"echo $$ > "$PIDFILE"; while :; do echo "a line of output that fills the pipeline's budget"; done"#],
            "env": {"PIDFILE": pidfile.to_str().unwrap()},
        }),
    )
    .await;
    let id = id_of(&job);
    wait_for(&t.router, id, "writing", |j| j.log.records > 1000).await;
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();

    let lock = rusqlite::Connection::open(&db_path).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    eventually("writes to fail", PATIENCE, || async {
        let health = get(&t.router, "/healthz").await;
        (health.status == StatusCode::SERVICE_UNAVAILABLE).then(|| {
            assert_eq!(health.json()["store"], "unavailable: writes fail");
        })
    })
    .await;
    let started = tokio::time::Instant::now();
    let reply = post(&t.router, "/api/v1/jobs", &json!({"command": ["true"]})).await;
    assert_error(&reply, StatusCode::SERVICE_UNAVAILABLE, "store_unavailable");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the submission waited"
    );
    // Tokens too (the second probe found both waiting, and a token made
    // after its client had given up).
    let token = tokio::time::timeout(
        Duration::from_secs(10),
        post(
            &t.router,
            "/api/v1/tokens",
            &json!({"name": "late", "role": "viewer"}),
        ),
    )
    .await
    .expect("token creation answered");
    assert_error(&token, StatusCode::SERVICE_UNAVAILABLE, "store_unavailable");
    let revoke = tokio::time::timeout(
        Duration::from_secs(10),
        send(
            &t.router,
            Request::delete("/api/v1/tokens/late")
                .body(Body::empty())
                .unwrap(),
        ),
    )
    .await
    .expect("token revocation answered");
    assert_error(
        &revoke,
        StatusCode::SERVICE_UNAVAILABLE,
        "store_unavailable",
    );

    // Cancel: the process goes, though its last records cannot be stored.
    let cancel = tokio::time::timeout(
        Duration::from_secs(10),
        post(&t.router, &format!("/api/v1/jobs/{id}/cancel"), &json!({})),
    )
    .await
    .expect("cancel answered");
    assert_eq!(cancel.status, StatusCode::OK, "{}", cancel.text());
    eventually(&format!("job process {pid} to end"), PATIENCE, || async {
        (!nix_alive(pid)).then_some(())
    })
    .await;

    // Space is back: the job ends cancelled with a gap-free log.
    lock.execute_batch("ROLLBACK").unwrap();
    drop(lock);
    let job = wait_finished(&t.router, id).await;
    assert_eq!(job["state"], "cancelled", "{job}");
    let log = whole_log(&t.router, id).await;
    let seqs: Vec<u64> = log.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    // The refused token was never made.
    let tokens = get_json(&t.router, "/api/v1/tokens").await;
    assert_eq!(tokens["tokens"], json!([]), "{tokens}");
    t.shutdown().await;
}

/// Whether a process runs (a zombie does not count).
fn nix_alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit(')')
        .next()
        .and_then(|r| r.split_whitespace().next());
    !matches!(state, None | Some("Z" | "X"))
}
