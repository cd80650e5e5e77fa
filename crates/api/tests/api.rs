//! The HTTP API end to end: the router over a real engine, a real store and
//! real `sh` jobs, requests sent without a socket. One suite for every
//! store: each behaviour is an `async fn(TestDatabase)` that
//! `joblog_store::backend_tests!` runs once on a SQLite file (`sqlite::…`)
//! and once on a fresh PostgreSQL database (`postgres::…`, skipped without
//! `JOBLOG_TEST_POSTGRES_URL`).

#[path = "api/audit.rs"]
mod audit;
#[path = "api/auth.rs"]
mod auth;
#[path = "api/backup.rs"]
mod backup;
mod common;
#[path = "api/feed.rs"]
mod feed;
#[path = "api/folders.rs"]
mod folders;
#[path = "api/hardening.rs"]
mod hardening;
#[path = "api/listing.rs"]
mod listing;
#[path = "api/navigation.rs"]
mod navigation;
#[path = "api/notifications.rs"]
mod notifications;
#[path = "api/params.rs"]
mod params;
#[path = "api/placement.rs"]
mod placement;
#[path = "api/responses.rs"]
mod responses;
#[path = "api/results.rs"]
mod results;
#[path = "api/schedules.rs"]
mod schedules;
#[path = "api/search.rs"]
mod search;
#[path = "api/sessions.rs"]
mod sessions;

use std::collections::BTreeMap;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use common::*;
use joblog_api::ApiOptions;
use joblog_store::testing::TestDatabase;
use serde_json::{json, Value};

// A multi-threaded runtime: jobs, pipeline and requests run side by side.
joblog_store::backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    concurrent_jobs_keep_every_line_in_order_within_the_pool,
    workflow_commands_and_masking_through_a_real_job,
    results_from_the_result_file_and_invalid_results,
    bad_input_gets_a_clear_error,
    invalid_utf8_and_nul_bytes_are_stored_and_served_as_json,
    the_token_guards_the_api_but_not_healthz,
    a_timeout_stops_the_job_and_its_whole_process_group,
    cancel_of_running_queued_and_finished_jobs,
    exit_codes_and_commands_that_cannot_start,
    a_long_poll_returns_when_new_records_come,
    log_pages_of_long_lines_stop_at_about_a_mebibyte,
    groom_keeps_the_newest_jobs_of_each_name,
    a_job_shows_what_it_was_given_and_reruns_as_it_was_submitted,
    metrics_healthz_and_openapi,
    metrics_tell_each_names_last_success_and_failure_within_a_bound,
    the_event_stream_follows_a_job_live_and_ends_with_the_job,
    the_event_stream_resumes_after_last_event_id_or_after_seq,
    the_event_stream_sends_only_the_streams_asked_for,
    the_event_stream_refuses_bad_requests_before_it_starts,
    the_event_stream_of_a_queued_job_starts_when_it_runs,
    a_viewer_holds_one_subscription_until_it_leaves_or_the_job_ends,
}

/// `(stream, message, fields)` of a record as JSON, fields `null` when absent.
fn record_view(record: &Value) -> Value {
    json!({
        "stream": record["stream"],
        "message": record["message"],
        "fields": record.get("fields").cloned().unwrap_or(Value::Null),
    })
}

fn rec(stream: &str, message: &str, fields: Value) -> Value {
    json!({"stream": stream, "message": message, "fields": fields})
}

fn assert_gapless(records: &[Value]) {
    let seqs: Vec<u64> = records.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    let expected: Vec<u64> = (1..=records.len() as u64).collect();
    assert_eq!(seqs, expected, "seq must be gapless from 1");
}

fn error_messages(records: &[Value]) -> String {
    messages_of(records, "error").join("\n")
}

async fn concurrent_jobs_keep_every_line_in_order_within_the_pool(db: TestDatabase) {
    const JOBS: usize = 20;
    const LINES: usize = 1000;
    const POOL: usize = 4;
    let t = start_app(db, POOL).await;

    // Every 10th line goes to stderr.
    let script = |j: usize| {
        format!(
            r#"i=1
while [ $i -le {LINES} ]; do
  if [ $((i % 10)) -eq 0 ]; then echo "job {j} err $i" >&2; else echo "job {j} out $i"; fi
  i=$((i + 1))
done"#
        )
    };
    let submissions = (0..JOBS).map(|j| {
        let router = t.router.clone();
        let script = script(j);
        async move {
            let job = submit(
                &router,
                json!({"name": "load", "command": ["sh", "-c", script]}),
            )
            .await;
            (j, id_of(&job))
        }
    });
    let ids = futures_util::future::join_all(submissions).await;

    for &(j, id) in &ids {
        let job = wait_finished(&t.router, id).await;
        assert_eq!(job["state"], "succeeded", "{job}");
        assert_eq!(job["exit_code"], 0);
        assert_eq!(job["node"], "test-node");
        assert_eq!(
            job["log"],
            json!({"records": LINES, "bytes": job["log"]["bytes"], "truncated": false,
                   "streams": {"output": LINES - LINES / 10, "error": LINES / 10}})
        );
        let records = whole_log(&t.router, id).await;
        assert_eq!(records.len(), LINES, "job {id}");
        assert_gapless(&records);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        for i in 1..=LINES {
            if i % 10 == 0 {
                err.push(format!("job {j} err {i}"));
            } else {
                out.push(format!("job {j} out {i}"));
            }
        }
        assert_eq!(messages_of(&records, "output"), out, "job {id} stdout");
        assert_eq!(messages_of(&records, "error"), err, "job {id} stderr");
        let bytes: usize = out.iter().chain(&err).map(String::len).sum();
        assert_eq!(job["log"]["bytes"], bytes);
    }

    // The pool: from the stored [started_at, finished_at] of every job (a
    // slot is taken before started_at and released after finished_at).
    let list = get_json(&t.router, "/api/v1/jobs?name=load&limit=1000").await;
    let jobs = list["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), JOBS);
    let mut events = Vec::new();
    for job in jobs {
        let (start, end) = (
            timestamp(&job["started_at"]),
            timestamp(&job["finished_at"]),
        );
        assert!(start <= end, "{job}");
        // At equal times an end sorts before a start: a released slot may be
        // taken in the same microsecond.
        events.push((start, 1i32));
        events.push((end, -1i32));
    }
    events.sort();
    let (mut running, mut most) = (0, 0);
    for (_, delta) in events {
        running += delta;
        most = most.max(running);
    }
    assert!(
        most <= POOL as i32,
        "{most} jobs ran at once with a pool of {POOL}"
    );
    assert!(most >= 2, "jobs never overlapped (at most {most} at once)");
    t.shutdown().await;
}

async fn workflow_commands_and_masking_through_a_real_job(db: TestDatabase) {
    const SECRET: &str = "s3cr3t-value-XYZ";
    let t = start_app(db, 2).await;
    let script = r#"
echo '::error file=app.py,line=3::bad thing'
echo '::warning::careful'
echo '::notice::note this'
echo '::info::for info'
echo '::verbose::chatty'
echo '::debug::details'
echo '::progress percent=40::Copying files'
echo '::group::Build'
echo 'inside group'
echo '::endgroup::'
echo 'before mask hunter2'
echo '::add-mask::hunter2'
echo 'after mask hunter2'
echo '::warning user=hunter2::masked field'
echo '::set-result::{"ok":true,"n":3}'
echo '::stop-commands::tok123'
echo '::warning::not a command'
echo '::tok123::'
echo '::warning::a command again'
echo "secret is $MYSECRET"
printf %s "$MYSECRET" | base64
head -c 65533 /dev/zero | tr '\0' a; printf %s "$MYSECRET"; echo
head -c 65540 /dev/zero | tr '\0' b; echo
echo '::notice::from stderr' >&2
echo 'plain stderr' >&2
"#;
    let job = submit(
        &t.router,
        json!({"name": "wf", "command": ["sh", "-c", script], "secrets": {"MYSECRET": SECRET}}),
    )
    .await;
    let id = id_of(&job);
    let job = wait_finished(&t.router, id).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let records = whole_log(&t.router, id).await;
    assert_gapless(&records);

    let a_line = "a".repeat(65533);
    let b_line = "b".repeat(65540);
    let expected = vec![
        rec("error", "bad thing", json!({"file": "app.py", "line": 3})),
        rec("warning", "careful", Value::Null),
        rec("information", "note this", Value::Null),
        rec("information", "for info", Value::Null),
        rec("verbose", "chatty", Value::Null),
        rec("debug", "details", Value::Null),
        rec("progress", "Copying files", json!({"percent": 40})),
        rec("information", "Build", json!({"group": "start"})),
        rec("output", "inside group", Value::Null),
        rec("information", "", json!({"group": "end"})),
        rec("output", "before mask hunter2", Value::Null),
        rec("output", "after mask ***", Value::Null),
        rec("warning", "masked field", json!({"user": "***"})),
        rec("output", "::warning::not a command", Value::Null),
        rec("warning", "a command again", Value::Null),
        rec("output", "secret is ***", Value::Null),
        rec("output", "***", Value::Null),
        // The secret straddles the 64 KiB split: the cut moves before it.
        rec("output", &a_line, Value::Null),
        rec("output", "***", json!({"continued": true})),
        // A line just over 64 KiB is split too, masks or not.
        rec("output", &b_line[..65536], Value::Null),
        rec("output", &b_line[65536..], json!({"continued": true})),
    ];
    // stderr's records keep their order among themselves only.
    let (from_stderr, got): (Vec<Value>, Vec<Value>) = records
        .iter()
        .map(record_view)
        .partition(|r| r["message"].as_str().unwrap().ends_with(" stderr"));
    assert_eq!(
        from_stderr,
        [
            rec("information", "from stderr", Value::Null),
            rec("error", "plain stderr", Value::Null)
        ]
    );
    // Compare without the 64 KiB lines first, for a readable failure.
    let short = |v: &[Value]| -> Vec<Value> {
        v.iter()
            .map(|r| {
                let m = r["message"].as_str().unwrap();
                if m.len() > 100 {
                    rec(
                        r["stream"].as_str().unwrap(),
                        &format!("<{} bytes>", m.len()),
                        r["fields"].clone(),
                    )
                } else {
                    r.clone()
                }
            })
            .collect()
    };
    assert_eq!(short(&got), short(&expected));
    assert_eq!(got, expected);

    let base64_secret = "czNjcjN0LXZhbHVlLVhZWg==";
    let raw_log = get(&t.router, &format!("/api/v1/jobs/{id}/log?limit=10000"))
        .await
        .text();
    for leak in [
        SECRET,
        base64_secret,
        "add-mask",
        "set-result",
        "stop-commands",
        "tok123",
    ] {
        assert!(!raw_log.contains(leak), "{leak:?} is in the stored log");
    }
    assert!(raw_log.contains("***"));
    assert!(records
        .iter()
        .all(|r| r["message"].as_str().unwrap().len() <= 64 * 1024));

    assert_eq!(job["log"]["records"], expected.len() + 2);
    assert_eq!(
        job["log"]["streams"],
        json!({"output": 10, "error": 2, "warning": 3, "information": 5,
               "verbose": 1, "debug": 1, "progress": 1})
    );
    let result = get(&t.router, &format!("/api/v1/jobs/{id}/result")).await;
    assert_eq!(result.status, StatusCode::OK);
    assert_eq!(result.json(), json!({"ok": true, "n": 3}));
    assert!(job["result"]["bytes"].as_u64().unwrap() > 0, "{job}");
    t.shutdown().await;
}

async fn results_from_the_result_file_and_invalid_results(db: TestDatabase) {
    let t = start_app(db, 4).await;
    let document = json!({"rows": [1, 2, 3], "name": "big", "nested": {"ok": true}});
    let good = submit_sh(
        &t.router,
        &format!("printf '%s' '{document}' > \"$JOBLOG_RESULT\""),
    )
    .await;
    let bad_file = submit_sh(&t.router, "printf 'not json' > \"$JOBLOG_RESULT\"").await;
    let bad_command = submit_sh(&t.router, "echo '::set-result::{bad'").await;
    // Valid JSON, but deeper than results may nest (128 levels).
    let deep_file = submit_sh(
        &t.router,
        "awk 'BEGIN { for (i = 0; i < 5000; i++) printf \"[\"; for (i = 0; i < 5000; i++) printf \"]\" }' > \"$JOBLOG_RESULT\"",
    )
    .await;
    let deep_command = submit_sh(
        &t.router,
        "printf '::set-result::'; awk 'BEGIN { for (i = 0; i < 129; i++) printf \"{\\\"a\\\":\"; printf 1; for (i = 0; i < 129; i++) printf \"}\"; print \"\" }'",
    )
    .await;
    let none = submit_sh(&t.router, "echo no result").await;
    // A secret, and a value masked after a partial line, get out through
    // neither result path nor the log.
    let masked_file = submit(
        &t.router,
        json!({"command": ["sh", "-c", r#"printf 'working... '; echo '::add-mask::later-value-7'
printf '{"t":"%s","u":"x?later-value-7"}' "$TOK" > "$JOBLOG_RESULT"; echo "used $TOK later-value-7""#],
               "secrets": {"TOK": "tok-secret-9"}}),
    )
    .await;
    let masked_command = submit(
        &t.router,
        json!({"command": ["sh", "-c", r#"echo "::set-result::{\"$TOK\": [\"$TOK\"]}""#],
               "secrets": {"TOK": "tok-secret-9"}}),
    )
    .await;

    let job = wait_finished(&t.router, id_of(&good)).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    assert!(job["result"]["bytes"].as_u64().unwrap() > 0, "{job}");
    let reply = get(&t.router, &format!("/api/v1/jobs/{}/result", id_of(&good))).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.content_type.as_deref(), Some("application/json"));
    assert_eq!(reply.json(), document);

    for (job, why) in [
        (&bad_file, "result file is not valid JSON"),
        (&bad_command, "::set-result:: is not valid JSON"),
        (
            &deep_file,
            "the result file is refused: it is nested more than 128 levels deep (at byte 128)",
        ),
        (
            &deep_command,
            "::set-result:: is refused: it is nested more than 128 levels deep",
        ),
    ] {
        let id = id_of(job);
        let job = wait_finished(&t.router, id).await;
        assert_eq!(job["state"], "failed", "{job}");
        assert_eq!(job["result"], Value::Null);
        let errors = error_messages(&whole_log(&t.router, id).await);
        assert!(errors.contains(why), "job {id} errors: {errors}");
        let reply = get(&t.router, &format!("/api/v1/jobs/{id}/result")).await;
        assert_error(&reply, StatusCode::NOT_FOUND, "result_not_found");
    }

    let job = wait_finished(&t.router, id_of(&none)).await;
    assert_eq!(
        (job["state"].as_str(), &job["result"]),
        (Some("succeeded"), &Value::Null)
    );
    let reply = get(&t.router, &format!("/api/v1/jobs/{}/result", id_of(&none))).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "result_not_found");

    for (job, expected) in [
        (&masked_file, json!({"t": "***", "u": "x?***"})),
        (&masked_command, json!({"***": ["***"]})),
    ] {
        let id = id_of(job);
        let job = wait_finished(&t.router, id).await;
        assert_eq!(job["state"], "succeeded", "{job}");
        let reply = get(&t.router, &format!("/api/v1/jobs/{id}/result")).await;
        assert_eq!(reply.json(), expected);
    }
    let log = messages_of(&whole_log(&t.router, id_of(&masked_file)).await, "output");
    assert_eq!(log, ["working... ", "used *** ***"]);
    t.shutdown().await;
}

async fn bad_input_gets_a_clear_error(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let r = &t.router;

    // Submissions.
    let reply = post_raw(r, "/api/v1/jobs", r#"{"command": ["#).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_json");
    let reply = post_raw(r, "/api/v1/jobs", "").await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_json");
    let reply = post(r, "/api/v1/jobs", &json!({"command": ["true"], "bogus": 1})).await;
    let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_json");
    assert!(message.contains("bogus"), "{message}");
    let reply = post(r, "/api/v1/jobs", &json!({"name": "x"})).await;
    let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(message.contains("command"), "{message}");
    let reply = post(
        r,
        "/api/v1/jobs",
        &json!({"command": ["true"], "timeout_s": -1}),
    )
    .await;
    let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(message.contains("timeout_s"), "{message}");
    let reply = post(r, "/api/v1/jobs", &json!({"command": "true"})).await;
    let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_json");
    assert!(
        message.contains("command") || message.contains("sequence"),
        "{message}"
    );
    let big = json!({"command": ["echo", "x".repeat(joblog_api::limits::Limits::default().max_body_bytes + 10)]});
    let reply = post(r, "/api/v1/jobs", &big).await;
    assert_error(&reply, StatusCode::PAYLOAD_TOO_LARGE, "body_too_large");
    let list = get_json(r, "/api/v1/jobs").await;
    assert_eq!(list["jobs"], json!([]), "no bad submission was queued");

    // Unknown and malformed job ids.
    for uri in [
        "/api/v1/jobs/999999",
        "/api/v1/jobs/999999/log",
        "/api/v1/jobs/999999/log/text",
        "/api/v1/jobs/999999/result",
    ] {
        let message = assert_error(&get(r, uri).await, StatusCode::NOT_FOUND, "job_not_found");
        assert!(message.contains("999999"), "{uri}: {message}");
    }
    let reply = post_raw(r, "/api/v1/jobs/999999/cancel", "").await;
    assert_error(&reply, StatusCode::NOT_FOUND, "job_not_found");
    for uri in [
        "/api/v1/jobs/abc",
        "/api/v1/jobs/abc/log",
        "/api/v1/jobs/0",
        "/api/v1/jobs/-3/result",
    ] {
        assert_error(&get(r, uri).await, StatusCode::BAD_REQUEST, "invalid_id");
    }
    let reply = post_raw(r, "/api/v1/jobs/1.5/cancel", "").await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_id");
    assert_error(
        &get(r, "/api/v1/nothing-here").await,
        StatusCode::NOT_FOUND,
        "not_found",
    );

    // Query parameters, each named in the message.
    let id = id_of(&run_sh(r, "echo hi").await);
    for (query, param) in [
        ("/api/v1/jobs?limit=0".to_string(), "limit"),
        ("/api/v1/jobs?limit=abc".to_string(), "limit"),
        ("/api/v1/jobs?limit=1001".to_string(), "limit"),
        ("/api/v1/jobs?state=bogus".to_string(), "state"),
        ("/api/v1/jobs?before_id=x".to_string(), "before_id"),
        ("/api/v1/jobs?colour=red".to_string(), "colour"),
        // No job has such a name, and PostgreSQL refuses a NUL.
        ("/api/v1/jobs?name=a%00b".to_string(), "name"),
        (format!("/api/v1/jobs/{id}/log?limit=0"), "limit"),
        (format!("/api/v1/jobs/{id}/log?limit=abc"), "limit"),
        (format!("/api/v1/jobs/{id}/log?limit=10001"), "limit"),
        (format!("/api/v1/jobs/{id}/log?streams=bogus"), "streams"),
        (
            format!("/api/v1/jobs/{id}/log?streams=output,bogus"),
            "bogus",
        ),
        (format!("/api/v1/jobs/{id}/log?after_seq=-1"), "after_seq"),
        (format!("/api/v1/jobs/{id}/log?wait_ms=soon"), "wait_ms"),
        (
            format!("/api/v1/jobs/{id}/log/text?streams=bogus"),
            "streams",
        ),
    ] {
        let message = assert_error(
            &get(r, &query).await,
            StatusCode::BAD_REQUEST,
            "invalid_query",
        );
        assert!(message.contains(param), "{query}: {message}");
    }
    // Good queries still work.
    let page = get_json(
        r,
        &format!("/api/v1/jobs/{id}/log?streams=output,error&limit=5"),
    )
    .await;
    assert_eq!(
        lines(page["records"].as_array().unwrap()),
        [("output".to_string(), "hi".to_string())]
    );
    t.shutdown().await;
}

async fn invalid_utf8_and_nul_bytes_are_stored_and_served_as_json(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let job = run_sh(
        &t.router,
        r"printf 'a\377b\000c\n'; printf 'tab\there\033[31mred\n'",
    )
    .await;
    let id = id_of(&job);
    assert_eq!(job["state"], "succeeded", "{job}");

    let reply = get(&t.router, &format!("/api/v1/jobs/{id}/log")).await;
    assert_eq!(reply.status, StatusCode::OK);
    let body = std::str::from_utf8(&reply.body).expect("the log is served as UTF-8");
    assert!(body.contains(r"\u0000"), "NUL escaped in JSON: {body}");
    let records = reply.json()["records"].as_array().unwrap().clone();
    assert_eq!(
        lines(&records),
        [
            ("output".to_string(), "a\u{FFFD}b\u{0}c".to_string()),
            ("output".to_string(), "tab\there\u{1b}[31mred".to_string()),
        ]
    );
    // Raw: the stored bytes, as a file to save (a terminal would run the
    // escapes).
    let response = tower::ServiceExt::oneshot(
        t.router.clone(),
        Request::get(format!("/api/v1/jobs/{id}/log/text"))
            .body(Body::empty())
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(
        response.headers()[header::CONTENT_DISPOSITION],
        format!("attachment; filename=\"job-{id}.log\"").as_str()
    );
    assert_eq!(
        response.headers()[header::X_CONTENT_TYPE_OPTIONS],
        "nosniff"
    );
    let text = get(&t.router, &format!("/api/v1/jobs/{id}/log/text")).await;
    assert_eq!(text.status, StatusCode::OK);
    assert_eq!(text.text(), "a\u{FFFD}b\u{0}c\ntab\there\u{1b}[31mred\n");
    // Escaped: safe to show, every control character but TAB visible.
    let text = get(
        &t.router,
        &format!("/api/v1/jobs/{id}/log/text?escape=true"),
    )
    .await;
    assert_eq!(text.text(), "a\u{FFFD}b\\0c\ntab\there\\x1b[31mred\n");
    assert!(
        !text.body.iter().any(|b| *b == 0x1b || *b == 0),
        "{:?}",
        text.text()
    );
    // JSON lines: each record as GET /log gives it, streams and times kept.
    let jsonl = get(
        &t.router,
        &format!("/api/v1/jobs/{id}/log/text?format=jsonl"),
    )
    .await;
    assert_eq!(jsonl.status, StatusCode::OK);
    assert_eq!(jsonl.content_type.as_deref(), Some("application/x-ndjson"));
    let page = get_json(&t.router, &format!("/api/v1/jobs/{id}/log")).await;
    let lines: Vec<Value> = jsonl
        .text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(Value::from(lines), page["records"]);
    let refused = get(
        &t.router,
        &format!("/api/v1/jobs/{id}/log/text?format=jsonl&timestamps=true"),
    )
    .await;
    let said = assert_error(&refused, StatusCode::BAD_REQUEST, "invalid_query");
    assert!(said.contains("timestamps"), "{said}");
    let refused = get(&t.router, &format!("/api/v1/jobs/{id}/log/text?format=xml")).await;
    let said = assert_error(&refused, StatusCode::BAD_REQUEST, "invalid_query");
    assert!(said.contains("format"), "{said}");
    t.shutdown().await;
}

async fn the_token_guards_the_api_but_not_healthz(db: TestDatabase) {
    let t = start_app_with_token(db, 2, Some("s3cret")).await;
    let with = |uri: &str, auth: Option<&str>| {
        let mut req = Request::get(uri);
        if let Some(auth) = auth {
            req = req.header(header::AUTHORIZATION, auth);
        }
        req.body(Body::empty()).unwrap()
    };
    for uri in [
        "/api/v1/jobs",
        "/api/v1/jobs/1",
        "/api/v1/jobs/1/log/events",
        "/metrics",
    ] {
        for auth in [
            None,
            Some("Bearer wrong"),
            Some("s3cret"),
            Some("Bearer s3cre"),
            Some("Bearer s3cret2"),
        ] {
            let reply = send(&t.router, with(uri, auth)).await;
            assert_error(&reply, StatusCode::UNAUTHORIZED, "unauthorized");
        }
    }
    let reply = send(&t.router, with("/api/v1/jobs", Some("Bearer s3cret"))).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["jobs"], json!([]));
    let reply = send(&t.router, with("/metrics", Some("Bearer s3cret"))).await;
    assert_eq!(reply.status, StatusCode::OK);

    // A submission without the token is refused and queues nothing.
    let reply = post(&t.router, "/api/v1/jobs", &json!({"command": ["true"]})).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "unauthorized");
    let reply = send(&t.router, with("/api/v1/jobs", Some("Bearer s3cret"))).await;
    assert_eq!(reply.json()["jobs"], json!([]));

    let health = get(&t.router, "/healthz").await;
    assert_eq!(health.status, StatusCode::OK);
    assert_eq!(health.json()["status"], "ok");
    t.shutdown().await;
}

async fn a_timeout_stops_the_job_and_its_whole_process_group(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let pidfile = t.path("child.pid");
    let sleeper = submit(
        &t.router,
        json!({"command": ["sleep", "30"], "timeout_s": 1}),
    )
    .await;
    let parent = submit(
        &t.router,
        json!({
            "command": ["sh", "-c", r#"sleep 300 & echo $! > "$PIDFILE"; wait"#],
            "env": {"PIDFILE": pidfile.to_str().unwrap()},
            "timeout_s": 1,
        }),
    )
    .await;

    for job in [&sleeper, &parent] {
        let id = id_of(job);
        let job = wait_finished(&t.router, id).await;
        assert_eq!(job["state"], "timed_out", "{job}");
        assert_eq!(job["exit_code"], Value::Null);
        let errors = error_messages(&whole_log(&t.router, id).await);
        assert!(errors.contains("timed out after 1s"), "{errors}");
    }

    let pid: i32 = std::fs::read_to_string(&pidfile)
        .expect("the job wrote its child's pid")
        .trim()
        .parse()
        .unwrap();
    let what = format!("the job's child {pid} to end with the timeout");
    eventually(&what, PATIENCE, || async {
        (!process_alive(pid)).then_some(())
    })
    .await;
    t.shutdown().await;
}

async fn cancel_of_running_queued_and_finished_jobs(db: TestDatabase) {
    let t = start_app(db, 1).await;
    let r = &t.router;
    let long = id_of(&submit_sh(r, "echo started; sleep 30; echo never").await);
    wait_running(r, long).await;
    wait_records(r, long, 1).await;
    let queued = id_of(&submit_sh(r, "echo never").await);
    assert_eq!(
        show(r, queued).await["state"],
        "queued",
        "the only slot is taken"
    );

    // A queued job is cancelled at once.
    let reply = post_raw(r, &format!("/api/v1/jobs/{queued}/cancel"), "").await;
    assert_eq!(reply.status, StatusCode::OK);
    let job = reply.json();
    assert_eq!(
        (job["id"].as_i64(), job["state"].as_str()),
        (Some(queued), Some("cancelled"))
    );
    assert_eq!(job["started_at"], Value::Null);
    assert!(job["finished_at"].is_string());

    // A running job is stopped, its process group killed.
    let reply = post_raw(r, &format!("/api/v1/jobs/{long}/cancel"), "").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let job = wait_finished(r, long).await;
    assert_eq!(job["state"], "cancelled", "{job}");
    let records = whole_log(r, long).await;
    assert_eq!(messages_of(&records, "output"), ["started"]);
    assert!(
        error_messages(&records).contains("cancelled"),
        "{records:?}"
    );

    // The slot is free again, and the cancelled job never ran.
    let after = run_sh(r, "echo after").await;
    assert_eq!(after["state"], "succeeded");
    assert_eq!(show(r, queued).await["log"]["records"], 0);

    for id in [queued, long, id_of(&after)] {
        let reply = post_raw(r, &format!("/api/v1/jobs/{id}/cancel"), "").await;
        let message = assert_error(&reply, StatusCode::CONFLICT, "job_finished");
        assert!(message.contains(&id.to_string()), "{message}");
    }
    t.shutdown().await;
}

async fn exit_codes_and_commands_that_cannot_start(db: TestDatabase) {
    let t = start_app(db, 3).await;
    let ok = submit_sh(&t.router, "echo out; echo err >&2").await;
    let three = submit_sh(&t.router, "echo before; exit 3").await;
    let missing = submit(
        &t.router,
        json!({"command": ["/nonexistent/joblog-no-such-program", "--flag"]}),
    )
    .await;

    let job = wait_finished(&t.router, id_of(&ok)).await;
    assert_eq!(
        (job["state"].as_str(), job["exit_code"].as_i64()),
        (Some("succeeded"), Some(0))
    );
    let job = wait_finished(&t.router, id_of(&three)).await;
    assert_eq!(
        (job["state"].as_str(), job["exit_code"].as_i64()),
        (Some("failed"), Some(3))
    );
    assert_eq!(
        lines(&whole_log(&t.router, id_of(&three)).await),
        [("output".to_string(), "before".to_string())]
    );

    let job = wait_finished(&t.router, id_of(&missing)).await;
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["exit_code"], Value::Null);
    let errors = error_messages(&whole_log(&t.router, id_of(&missing)).await);
    assert!(errors.contains("failed to start"), "{errors}");
    assert!(errors.contains("joblog-no-such-program"), "{errors}");
    t.shutdown().await;
}

async fn a_long_poll_returns_when_new_records_come(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let go = t.path("go");
    let job = submit(
        &t.router,
        json!({
            "command": ["sh", "-c", r#"echo first; while [ ! -e "$GO" ]; do sleep 0.05; done; echo second"#],
            "env": {"GO": go.to_str().unwrap()},
        }),
    )
    .await;
    let id = id_of(&job);
    // The first line, waiting for it with a long poll as well.
    let page = eventually("the first line", PATIENCE, || async {
        let page = get_json(&t.router, &format!("/api/v1/jobs/{id}/log?wait_ms=5000")).await;
        if view::<LogPage>(&page).records.is_empty() {
            Err(page)
        } else {
            Ok(page)
        }
    })
    .await;
    assert_eq!(
        lines(page["records"].as_array().unwrap()),
        [("output".into(), "first".into())]
    );
    assert_eq!(page["next_after_seq"], 1, "the job is still running");

    // Nothing new yet: the request waits until the job writes again.
    let router = t.router.clone();
    let poll = tokio::spawn(async move {
        get_json(
            &router,
            &format!("/api/v1/jobs/{id}/log?after_seq=1&wait_ms=5000"),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(show(&t.router, id).await["state"], "running");
    std::fs::write(&go, b"").unwrap();
    let page = poll.await.unwrap();
    let records = page["records"].as_array().unwrap();
    assert_eq!(
        lines(records),
        [("output".into(), "second".into())],
        "{page}"
    );
    assert_eq!(records[0]["seq"], 2);

    // On a finished job a long poll past the end answers at once: no more.
    wait_finished(&t.router, id).await;
    let page = get_json(
        &t.router,
        &format!("/api/v1/jobs/{id}/log?after_seq=2&wait_ms=30000"),
    )
    .await;
    assert_eq!(page, json!({"records": [], "next_after_seq": null}));
    t.shutdown().await;
}

async fn log_pages_of_long_lines_stop_at_about_a_mebibyte(db: TestDatabase) {
    let app = start_app(db, 2).await;
    // 2,000,000 bytes without a newline: 31 records of up to 64 KiB.
    let job = run_sh(&app.router, "head -c 2000000 /dev/zero | tr '\\0' y").await;
    assert_eq!(job["log"]["records"], 31);
    let id = id_of(&job);
    let page = get_json(&app.router, &format!("/api/v1/jobs/{id}/log?limit=10000")).await;
    let first = page["records"].as_array().unwrap();
    // 16 × 64 KiB = 1 MiB: the page ends there although the job finished
    // and the limit allows more, and says where to go on.
    assert_eq!(first.len(), 16);
    assert_eq!(page["next_after_seq"], 16);
    let all = whole_log(&app.router, id).await;
    assert_eq!(all.len(), 31);
    let bytes: usize = all
        .iter()
        .map(|r| r["message"].as_str().unwrap().len())
        .sum();
    assert_eq!(bytes, 2_000_000);
    app.shutdown().await;
}

async fn a_job_shows_what_it_was_given_and_reruns_as_it_was_submitted(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let r = &t.router;
    let job = submit(
        r,
        json!({
            "name": "report",
            "script": "cd sub && echo \"$STAGE $TOKEN\" && pwd",
            "shell": "sh",
            "env": {"STAGE": "prod"},
            "secrets": {"TOKEN": "s3cr3t-value"},
            "timeout_s": 60,
            "cwd": "/",
        }),
    )
    .await;
    let id = id_of(&job);
    let first = wait_finished(r, id).await;
    assert_eq!(first["state"], "failed", "no /sub: {first}");
    // What it was given, never a secret's value.
    assert_eq!(first["cwd"], "/");
    assert_eq!(first["timeout_s"], 60.0);
    assert_eq!(first["env"], json!({"STAGE": "prod"}));
    assert_eq!(first["secret_names"], json!(["TOKEN"]));
    assert_eq!(first["script"], "cd sub && echo \"$STAGE $TOKEN\" && pwd");
    assert_eq!(first["shell"], "sh");
    assert!(!first.to_string().contains("s3cr3t-value"));
    let listed = get_json(r, "/api/v1/jobs").await;
    assert_eq!(listed["jobs"][0]["env"], json!({"STAGE": "prod"}));

    // A rerun needs the secrets again, by name.
    let reply = post(r, &format!("/api/v1/jobs/{id}/rerun"), &json!({})).await;
    let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(message.contains("TOKEN"), "{message}");
    let reply = post(r, "/api/v1/jobs/999999/rerun", &json!({})).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "job_not_found");
    let reply = post(
        r,
        &format!("/api/v1/jobs/{id}/rerun"),
        &json!({"secrets": {"TOKEN": "again"}}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let again = reply.json();
    let again_id = id_of(&again);
    assert_ne!(again_id, id);
    assert_eq!(again["rerun_of"], id);
    let again = wait_finished(r, again_id).await;
    for field in [
        "name",
        "command",
        "script",
        "shell",
        "env",
        "timeout_s",
        "cwd",
        "secret_names",
    ] {
        assert_eq!(again[field], first[field], "{field}");
    }
    // It ran as the first did, with the new secret's value (masked).
    assert_eq!(again["state"], "failed");
    // A job submitted as a command reruns as a command.
    let plain = id_of(&submit(r, json!({"command": ["echo", "plain"]})).await);
    wait_finished(r, plain).await;
    let reply = post(r, &format!("/api/v1/jobs/{plain}/rerun"), &json!({})).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let rerun = wait_finished(r, id_of(&reply.json())).await;
    assert_eq!(rerun["command"], json!(["echo", "plain"]));
    assert!(rerun.get("script").is_none(), "{rerun}");
    assert_eq!(
        messages_of(&whole_log(r, id_of(&rerun)).await, "output"),
        ["plain"]
    );
    t.shutdown().await;
}

async fn groom_keeps_the_newest_jobs_of_each_name(db: TestDatabase) {
    let t = start_app(db, 4).await;
    let r = &t.router;
    // Job k writes k lines; submitted one after another, so ids follow this order.
    let plan = [
        Some("a"),
        Some("a"),
        Some("b"),
        None,
        Some("a"),
        Some("b"),
        None,
    ];
    let mut ids = Vec::new();
    for (k, name) in plan.iter().enumerate() {
        let mut body = json!({"command": ["sh", "-c", format!("seq 1 {}", k + 1)]});
        if let Some(name) = name {
            body["name"] = json!(name);
        }
        ids.push(id_of(&submit(r, body).await));
    }
    for &id in &ids {
        assert_eq!(wait_finished(r, id).await["state"], "succeeded");
    }
    let reply = post(r, "/api/v1/groom", &json!({})).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
    let reply = post(r, "/api/v1/groom", &json!({"keep_per_name": 1, "older": 3})).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_json");
    let reply = post(r, "/api/v1/groom", &json!({"older_than_s": -1})).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
    // Older than the epoch: matches nothing, and must not overflow.
    let reply = post(r, "/api/v1/groom", &json!({"older_than_s": 1e300})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(reply.json()["jobs_deleted"], 0);

    // A dry run says what would go and deletes nothing. The two unnamed
    // jobs ran different commands, so each is the newest of its command.
    let reply = post(
        r,
        "/api/v1/groom",
        &json!({"keep_per_name": 1, "dry_run": true}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let preview = reply.json();
    assert_eq!(preview["dry_run"], true);
    assert_eq!(preview["jobs_deleted"], 3);
    assert_eq!(preview["records_deleted"], 1 + 2 + 3);
    let listed: Vec<i64> = preview["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_i64().unwrap())
        .collect();
    assert_eq!(listed, [ids[0], ids[1], ids[2]]);
    for &id in &ids {
        let reply = get(r, &format!("/api/v1/jobs/{id}")).await;
        assert_eq!(reply.status, StatusCode::OK, "dry run deleted job {id}");
    }

    let reply = post(r, "/api/v1/groom", &json!({"keep_per_name": 1})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    // Deleted: the first two "a", the first "b".
    let deleted = [ids[0], ids[1], ids[2]];
    let kept = [ids[3], ids[4], ids[5], ids[6]];
    assert_eq!(
        reply.json(),
        json!({"dry_run": false, "jobs_deleted": 3, "records_deleted": 1 + 2 + 3})
    );
    for id in deleted {
        assert_error(
            &get(r, &format!("/api/v1/jobs/{id}")).await,
            StatusCode::NOT_FOUND,
            "job_not_found",
        );
        assert_error(
            &get(r, &format!("/api/v1/jobs/{id}/log")).await,
            StatusCode::NOT_FOUND,
            "job_not_found",
        );
        let stored = t.engine.store().read_log(id, 0, 100, None).await.unwrap();
        assert!(
            stored.is_empty(),
            "job {id} still has {} records",
            stored.len()
        );
    }
    for (k, id) in [(4, kept[0]), (5, kept[1]), (6, kept[2]), (7, kept[3])] {
        assert_eq!(show(r, id).await["state"], "succeeded");
        let expected: Vec<String> = (1..=k).map(|i| i.to_string()).collect();
        assert_eq!(messages_of(&whole_log(r, id).await, "output"), expected);
    }
    let list = get_json(r, "/api/v1/jobs").await;
    let listed: Vec<i64> = list["jobs"].as_array().unwrap().iter().map(id_of).collect();
    assert_eq!(listed, [kept[3], kept[2], kept[1], kept[0]]);

    // Nothing more to do under the same policy.
    let reply = post(r, "/api/v1/groom", &json!({"keep_per_name": 1})).await;
    assert_eq!(
        reply.json(),
        json!({"dry_run": false, "jobs_deleted": 0, "records_deleted": 0})
    );
    t.shutdown().await;
}

async fn metrics_tell_each_names_last_success_and_failure_within_a_bound(db: TestDatabase) {
    let options = ApiOptions {
        max_job_names: 2,
        ..ApiOptions::default()
    };
    let t = start_app_with(db, 2, options, |_| {}).await;
    let r = &t.router;
    let run = |name: Option<&'static str>, script: &'static str| async move {
        let mut body = json!({"script": script});
        if let Some(n) = name {
            body["name"] = json!(n);
        }
        let id = id_of(&submit(r, body).await);
        wait_finished(r, id).await
    };
    // Oldest first: "old" is the name past the bound of 2.
    let old = run(Some("old"), "exit 0").await;
    let failed = run(Some("backup"), "exit 1").await;
    let ok = run(Some("backup"), "true").await;
    run(None, "sleep 0.01").await;
    let text = get(r, "/metrics").await.text();
    let sample = |line: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(line).and_then(|v| v.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("no `{line}` in\n{text}"))
            .parse()
            .unwrap()
    };
    let seconds = |job: &Value| -> f64 {
        let t = humantime::parse_rfc3339(job["finished_at"].as_str().unwrap()).unwrap();
        t.duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    let success = sample(r#"joblog_job_last_success_timestamp_seconds{name="backup"}"#);
    assert!((success - seconds(&ok)).abs() < 1e-3, "{success} vs {ok}");
    let failure = sample(r#"joblog_job_last_failure_timestamp_seconds{name="backup"}"#);
    assert!(
        (failure - seconds(&failed)).abs() < 1e-3,
        "{failure} vs {failed}"
    );
    assert_eq!(
        sample(r#"joblog_job_finished{name="backup",state="succeeded"}"#),
        1.0
    );
    assert_eq!(
        sample(r#"joblog_job_finished{name="backup",state="failed"}"#),
        1.0
    );
    assert_eq!(
        sample(r#"joblog_job_finished{name="(unnamed)",state="succeeded"}"#),
        1.0
    );
    // Past the bound: summed under (other), and counted.
    assert!(!text.contains(r#"name="old""#), "{text}");
    let other = sample(r#"joblog_job_last_success_timestamp_seconds{name="(other)"}"#);
    assert!((other - seconds(&old)).abs() < 1e-3);
    assert_eq!(sample("joblog_job_names_folded"), 1.0);
    t.shutdown().await;
}

async fn metrics_healthz_and_openapi(db: TestDatabase) {
    let t = start_app(db, 2).await;
    // Running jobs only: the dispatcher holds the free slots while it
    // waits for work, and an idle node once read as 2 of 2 here.
    let in_use = healthz_pool_in_use(&t.router).await;
    assert_eq!(in_use, 0, "an idle node runs no job");
    let sleeper = id_of(&submit_sh(&t.router, "sleep 30").await);
    wait_pool_in_use(&t.router, 1).await;
    let text = get(&t.router, "/metrics").await.text();
    assert!(text.lines().any(|l| l == "joblog_pool_in_use 1"), "{text}");
    post(
        &t.router,
        &format!("/api/v1/jobs/{sleeper}/cancel"),
        &json!({}),
    )
    .await;
    wait_finished(&t.router, sleeper).await;
    wait_pool_in_use(&t.router, 0).await;

    let job = run_sh(&t.router, "echo one; echo two; echo three").await;
    assert_eq!(job["log"]["records"], 3);

    // Without Accept, and to text-format scrapers, the Prometheus text
    // format: a counter's TYPE names its _total sample. The writer counts
    // a batch's records just after its commit, which a reader on another
    // connection may see first: the count is waited for.
    let text = eventually("the job's 3 records counted", PATIENCE, || async {
        let metrics = get(&t.router, "/metrics").await;
        assert_eq!(metrics.status, StatusCode::OK);
        assert_eq!(
            metrics.content_type.as_deref(),
            Some("text/plain; version=0.0.4; charset=utf-8")
        );
        let text = metrics.text();
        let written: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("joblog_log_records_written_total "))
            .unwrap_or_else(|| panic!("no joblog_log_records_written sample in\n{text}"))
            .trim()
            .parse()
            .unwrap();
        (written >= 3.0).then_some(text)
    })
    .await;
    assert!(text.contains("joblog_store_batch_records"), "{text}");
    assert!(
        text.lines()
            .any(|l| l == "# TYPE joblog_log_records_written_total counter"),
        "{text}"
    );
    assert!(
        !text.contains("# EOF") && !text.contains("# UNIT"),
        "{text}"
    );
    // Histogram bounds as written, without float noise.
    for line in text.lines().filter(|l| l.contains("_bucket{")) {
        let le = line
            .split("le=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert!(
            le == "+Inf" || le.len() <= 8,
            "a bound with float noise: {line}"
        );
    }
    // What Prometheus asks for first: OpenMetrics.
    let accept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    let request = Request::get("/metrics")
        .header(header::ACCEPT, accept)
        .body(Body::empty())
        .unwrap();
    let open = send(&t.router, request).await;
    assert_eq!(
        open.content_type.as_deref(),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    let open = open.text();
    assert!(
        open.trim_end().ends_with("# EOF"),
        "OpenMetrics text ends with # EOF"
    );
    assert!(
        open.lines()
            .any(|l| l == "# TYPE joblog_log_records_written counter"),
        "{open}"
    );
    let health = get(&t.router, "/healthz").await;
    assert_eq!(health.status, StatusCode::OK);
    let health = health.json();
    assert_eq!(
        (
            health["status"].as_str(),
            health["store"].as_str(),
            health["accepting_jobs"].as_bool()
        ),
        (Some("ok"), Some("ok"), Some(true))
    );
    assert_eq!(health["node"], "test-node");

    let doc = get_json(&t.router, "/api/v1/openapi.json").await;
    assert_eq!(get_json(&t.router, "/openapi.json").await, doc);
    let paths = doc["paths"]
        .as_object()
        .unwrap_or_else(|| panic!("the OpenAPI document has no paths: {doc}"));
    let routes: BTreeMap<&str, &[&str]> = BTreeMap::from([
        ("/jobs", &["get", "post"][..]),
        ("/jobs/{id}", &["get"][..]),
        ("/jobs/{id}/cancel", &["post"][..]),
        ("/jobs/{id}/log", &["get"][..]),
        ("/jobs/{id}/log/text", &["get"][..]),
        ("/jobs/{id}/log/events", &["get"][..]),
        ("/jobs/{id}/result", &["get"][..]),
        ("/groom", &["post"][..]),
        ("/openapi.json", &["get"][..]),
        ("/healthz", &["get"][..]),
        ("/metrics", &["get"][..]),
    ]);
    for (path, methods) in routes {
        let item = paths.get(path).unwrap_or_else(|| {
            panic!(
                "{path} is missing from the OpenAPI paths {:?}",
                paths.keys()
            )
        });
        for method in methods {
            assert!(
                item.get(*method).is_some(),
                "{method} {path} is not documented"
            );
        }
    }
    let events = &paths["/jobs/{id}/log/events"]["get"]["responses"]["200"]["content"];
    assert!(
        events.get("text/event-stream").is_some(),
        "the live tail is documented as an event stream: {events}"
    );
    t.shutdown().await;
}

/// Checks that `events` are record events with increasing seqs from
/// `first_seq` on (`contiguous`: every seq, none skipped), each event's `id`
/// its record's seq, followed by one `end` event; returns the records and
/// the job the `end` event carries.
fn records_then_end(events: &[SseEvent], first_seq: u64, contiguous: bool) -> (Vec<Value>, Value) {
    let (end, records) = events.split_last().expect("at least the end event");
    assert_eq!(
        (end.kind(), end.id.as_deref()),
        ("end", None),
        "the last event ends the stream: {end:?}"
    );
    let mut previous = first_seq - 1;
    let records: Vec<Value> = records
        .iter()
        .map(|e| {
            assert_eq!(e.kind(), "message", "a record event has no type: {e:?}");
            let record = e.json();
            let seq = record["seq"].as_u64().expect("seq");
            assert_eq!(
                e.id.as_deref(),
                Some(seq.to_string().as_str()),
                "id is the seq: {e:?}"
            );
            if contiguous {
                assert_eq!(seq, previous + 1, "seq {seq} after {previous}");
            } else {
                assert!(seq > previous, "seq {seq} after {previous}");
            }
            previous = seq;
            record
        })
        .collect();
    if contiguous {
        if let Some(first) = records.first() {
            assert_eq!(first["seq"], first_seq);
        }
    }
    (records, end.json())
}

fn events_uri(id: i64, query: &str) -> String {
    format!("/api/v1/jobs/{id}/log/events{query}")
}

async fn the_event_stream_follows_a_job_live_and_ends_with_the_job(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let (go, half) = (t.path("go"), t.path("half"));
    // Waits for GO, then 2000 lines with pauses; after line 1000 it also
    // waits for HALF, so the job cannot finish before the test says so.
    let script = r#"while [ ! -e "$GO" ]; do sleep 0.01; done
for i in $(seq 1 2000); do
  echo line $i
  if [ $((i % 200)) = 0 ]; then sleep 0.05; fi
  if [ $i = 1000 ]; then while [ ! -e "$HALF" ]; do sleep 0.01; done; fi
done"#;
    let job = submit(
        &t.router,
        json!({"command": ["sh", "-c", script],
               "env": {"GO": go.to_str().unwrap(), "HALF": half.to_str().unwrap()}}),
    )
    .await;
    let id = id_of(&job);
    let mut stream = events(&t.router, &events_uri(id, ""), None).await;
    std::fs::write(&go, b"").unwrap();

    let first = stream.next().await.expect("a first event");
    assert_eq!(
        show(&t.router, id).await["state"],
        "running",
        "events come while the job runs, not only once it has finished"
    );
    std::fs::write(&half, b"").unwrap();
    let mut all = vec![first];
    all.extend(stream.rest().await);
    assert!(stream.next().await.is_none(), "the body stays ended");

    let (records, end) = records_then_end(&all, 1, true);
    assert_eq!(records.len(), 2000);
    let expected: Vec<String> = (1..=2000).map(|i| format!("line {i}")).collect();
    assert_eq!(messages_of(&records, "output"), expected);
    assert_eq!(end["state"], "succeeded", "{end}");
    assert_eq!(end["log"]["records"], records.len());
    // The same JSON as the other endpoints give.
    assert_eq!(end, show(&t.router, id).await);
    assert_eq!(records, whole_log(&t.router, id).await);
    t.shutdown().await;
}

async fn the_event_stream_resumes_after_last_event_id_or_after_seq(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let job = run_sh(&t.router, "seq 1 2000").await;
    let id = id_of(&job);
    assert_eq!(job["log"]["records"], 2000);

    // From the start: two full pages, then an empty read, then the end.
    let all = events(&t.router, &events_uri(id, ""), None)
        .await
        .rest()
        .await;
    let (records, end) = records_then_end(&all, 1, true);
    assert_eq!(records.len(), 2000);
    assert_eq!(end, job);

    for (query, last_event_id, first) in [
        ("", Some("500"), 501),
        ("?after_seq=1990", None, 1991),
        // Last-Event-ID wins over after_seq.
        ("?after_seq=1990", Some("500"), 501),
        ("?after_seq=3", Some("1999"), 2000),
        // An empty id is no id.
        ("?after_seq=1990", Some(""), 1991),
        // At or past the end: only `end`.
        ("", Some("2000"), 2001),
        ("?after_seq=99999", None, 2001),
    ] {
        let uri = events_uri(id, query);
        let all = events(&t.router, &uri, last_event_id).await.rest().await;
        let (records, end) = records_then_end(&all, first, true);
        assert_eq!(
            records.len() as u64,
            2001 - first,
            "{uri} after {last_event_id:?}"
        );
        if let Some(last) = records.last() {
            assert_eq!(last["message"], "2000");
        }
        assert_eq!(end, job, "{uri}");
    }
    t.shutdown().await;
}

async fn the_event_stream_sends_only_the_streams_asked_for(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let go = t.path("go");
    let script = r#"while [ ! -e "$GO" ]; do sleep 0.01; done
for i in $(seq 1 300); do
  echo out $i
  if [ $((i % 3)) = 0 ]; then echo err $i >&2; fi
  if [ $((i % 50)) = 0 ]; then sleep 0.02; fi
done"#;
    let job = submit(
        &t.router,
        json!({"command": ["sh", "-c", script], "env": {"GO": go.to_str().unwrap()}}),
    )
    .await;
    let id = id_of(&job);
    let mut errors = events(&t.router, &events_uri(id, "?streams=error"), None).await;
    let mut both = events(&t.router, &events_uri(id, "?streams=output,error"), None).await;
    std::fs::write(&go, b"").unwrap();

    let (records, end) = records_then_end(&errors.rest().await, 1, false);
    let expected: Vec<String> = (1..=100).map(|i| format!("err {}", 3 * i)).collect();
    assert_eq!(messages_of(&records, "error"), expected);
    assert_eq!(records.len(), 100, "nothing but the error stream");
    assert_eq!(end["log"]["records"], 400, "the end carries the whole job");
    let all = whole_log(&t.router, id).await;
    let stderr: Vec<Value> = all
        .iter()
        .filter(|r| r["stream"] == "error")
        .cloned()
        .collect();
    assert_eq!(records, stderr);

    let (records, _) = records_then_end(&both.rest().await, 1, true);
    assert_eq!(records, all);
    t.shutdown().await;
}

async fn the_event_stream_refuses_bad_requests_before_it_starts(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let r = &t.router;
    let reply = open_events(r, &events_uri(999_999, ""), None)
        .await
        .err()
        .expect("no stream for an unknown job");
    let message = assert_error(&reply, StatusCode::NOT_FOUND, "job_not_found");
    assert!(message.contains("999999"), "{message}");
    let reply = open_events(r, "/api/v1/jobs/abc/log/events", None)
        .await
        .err()
        .expect("no stream for a bad id");
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_id");

    let id = id_of(&run_sh(r, "echo hi").await);
    for (query, param) in [
        ("?after_seq=abc", "after_seq"),
        ("?after_seq=-1", "after_seq"),
        ("?streams=bogus", "streams"),
        ("?limit=5", "limit"),
    ] {
        let reply = open_events(r, &events_uri(id, query), None)
            .await
            .err()
            .unwrap_or_else(|| panic!("{query} opened a stream"));
        let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_query");
        assert!(message.contains(param), "{query}: {message}");
    }
    for bad in ["abc", "-1", "1.5", "18446744073709551616"] {
        let reply = open_events(r, &events_uri(id, ""), Some(bad))
            .await
            .err()
            .unwrap_or_else(|| panic!("Last-Event-ID {bad:?} opened a stream"));
        let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_header");
        assert!(message.contains("Last-Event-ID"), "{message}");
    }
    t.shutdown().await;
}

async fn the_event_stream_of_a_queued_job_starts_when_it_runs(db: TestDatabase) {
    let t = start_app(db, 1).await;
    let r = &t.router;
    let go = t.path("go");
    let blocker = submit(
        r,
        json!({"command": ["sh", "-c", r#"while [ ! -e "$GO" ]; do sleep 0.02; done"#],
               "env": {"GO": go.to_str().unwrap()}}),
    )
    .await;
    wait_running(r, id_of(&blocker)).await;
    let id = id_of(&submit_sh(r, "echo a; echo b >&2; echo c").await);
    assert_eq!(
        show(r, id).await["state"],
        "queued",
        "the only slot is taken"
    );

    let mut stream = events(r, &events_uri(id, ""), None).await;
    let early = tokio::time::timeout(Duration::from_millis(300), stream.next()).await;
    assert!(
        early.is_err(),
        "an event while the job was queued: {early:?}"
    );
    assert_eq!(show(r, id).await["state"], "queued");

    std::fs::write(&go, b"").unwrap();
    let (records, end) = records_then_end(&stream.rest().await, 1, true);
    // stdout and stderr are separate pipes: their relative order is the
    // order the job's records were read in, not necessarily this one.
    assert_eq!(messages_of(&records, "output"), ["a", "c"]);
    assert_eq!(messages_of(&records, "error"), ["b"]);
    assert_eq!(records, whole_log(r, id).await);
    assert_eq!(end["state"], "succeeded", "{end}");
    assert_eq!(end["log"]["records"], 3);
    assert!(end["started_at"].is_string(), "{end}");
    wait_finished(r, id_of(&blocker)).await;
    t.shutdown().await;
}

async fn a_viewer_holds_one_subscription_until_it_leaves_or_the_job_ends(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let subscribers = || t.pipeline.commit_sender().receiver_count();
    // The engine holds one subscription of its own from start.
    assert_eq!(subscribers(), 1, "the engine's own subscription");
    let before = subscribers();
    let go = t.path("go");
    let job = submit(
        &t.router,
        json!({"command": ["sh", "-c", r#"echo x; while [ ! -e "$GO" ]; do sleep 0.02; done; echo y"#],
               "env": {"GO": go.to_str().unwrap()}}),
    )
    .await;
    let id = id_of(&job);

    // A client that goes away mid-stream frees its viewer at once.
    let mut leaving = events(&t.router, &events_uri(id, ""), None).await;
    assert_eq!(subscribers(), before + 1);
    let first = leaving.next().await.expect("the first record");
    assert_eq!(first.json()["message"], "x");
    drop(leaving);
    assert_eq!(subscribers(), before, "the dropped stream still subscribes");

    // One that stays to the end lets go when the stream ends.
    let mut staying = events(&t.router, &events_uri(id, "?after_seq=1"), None).await;
    assert_eq!(subscribers(), before + 1);
    std::fs::write(&go, b"").unwrap();
    let (records, end) = records_then_end(&staying.rest().await, 2, true);
    assert_eq!(messages_of(&records, "output"), ["y"]);
    assert_eq!(end["state"], "succeeded");
    assert_eq!(subscribers(), before, "the ended stream still subscribes");
    t.shutdown().await;
}

async fn healthz_pool_in_use(router: &axum::Router) -> u64 {
    let health = get(router, "/healthz").await.json();
    health["pool_in_use"]
        .as_u64()
        .unwrap_or_else(|| panic!("no pool_in_use in {health}"))
}

/// Polls `/healthz` until `pool_in_use` is `n` (a job is counted from the
/// moment its task starts to the moment it ends, a little after its state).
async fn wait_pool_in_use(router: &axum::Router, n: u64) {
    eventually(&format!("pool_in_use to be {n}"), PATIENCE, || async {
        let in_use = healthz_pool_in_use(router).await;
        if in_use == n {
            Ok(())
        } else {
            Err(in_use)
        }
    })
    .await;
}

/// The check every answer of these tests goes through (`common::openapi`)
/// can fail: a status the document does not list, a media type it does not
/// list, a body against its schema (a wrong type, a field missing, a field
/// it does not have, a value outside an enum) are each caught.
#[test]
fn the_openapi_check_catches_what_the_document_does_not_say() {
    use axum::http::Method;
    use common::openapi::check;
    let json = Some("application/json");
    let health = json!({"status": "ok", "store": "ok", "storage": "ok", "accepting_jobs": true,
                        "node": "n", "pool_in_use": 0});
    let body = |v: &Value| v.to_string().into_bytes();
    // What the document says passes.
    check(
        &Method::GET,
        "/healthz",
        StatusCode::OK,
        json,
        &body(&health),
    );
    let fails =
        |method: Method, path: &str, status: StatusCode, media: Option<&str>, b: Vec<u8>| {
            let path = path.to_string();
            std::panic::catch_unwind(move || check(&method, &path, status, media, &b)).is_err()
        };
    assert!(fails(
        Method::GET,
        "/healthz",
        StatusCode::IM_A_TEAPOT,
        json,
        body(&health)
    ));
    assert!(fails(
        Method::GET,
        "/healthz",
        StatusCode::OK,
        Some("text/html"),
        body(&health)
    ));
    let mut wrong_type = health.clone();
    wrong_type["pool_in_use"] = json!("none");
    assert!(fails(
        Method::GET,
        "/healthz",
        StatusCode::OK,
        json,
        body(&wrong_type)
    ));
    let mut missing = health.clone();
    missing.as_object_mut().unwrap().remove("node");
    assert!(fails(
        Method::GET,
        "/healthz",
        StatusCode::OK,
        json,
        body(&missing)
    ));
    let mut extra = health.clone();
    extra["surprise"] = json!(1);
    assert!(fails(
        Method::GET,
        "/healthz",
        StatusCode::OK,
        json,
        body(&extra)
    ));
    // Through a `$ref` to a shared schema: a state no job has.
    let error = json!({"error": {"code": "no_such_code", "message": "m"}});
    assert!(fails(
        Method::GET,
        "/api/v1/jobs/7",
        StatusCode::NOT_FOUND,
        json,
        body(&error)
    ));
    let error = json!({"error": {"code": "job_not_found", "message": "no job with id 7"}});
    check(
        &Method::GET,
        "/api/v1/jobs/7",
        StatusCode::NOT_FOUND,
        json,
        &body(&error),
    );
}
