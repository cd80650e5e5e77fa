//! `GET /api/v1/search` through `app()`: real jobs' logs searched, running
//! and sealed, newest job first, with the jobs' filters, streams, regular
//! expressions and cursors; masked secrets never found by their value;
//! a 400 naming the parameter for each bad request.

use axum::http::StatusCode;
use joblog_store::testing::TestDatabase;
use serde_json::{json, Value};

use crate::common::*;

joblog_store::backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    every_jobs_log_is_searched_newest_first_sealed_or_not,
    bad_searches_are_refused_naming_the_parameter,
}

fn hits(page: &Value) -> Vec<(i64, u64, String)> {
    page["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("hits: {page}"))
        .iter()
        .map(|h| {
            (
                h["job_id"].as_i64().unwrap(),
                h["seq"].as_u64().unwrap(),
                h["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Every page of a search, its hits joined, and how many pages it took.
async fn search_all(t: &TestApp, query: &str) -> (Vec<(i64, u64, String)>, Value, usize) {
    let mut all = Vec::new();
    let mut uri = format!("/api/v1/search?{query}");
    for pages in 1..1000 {
        let page = get_json(&t.router, &uri).await;
        all.extend(hits(&page));
        match page["next_cursor"].as_str() {
            Some(c) => uri = format!("/api/v1/search?{query}&cursor={c}"),
            None => return (all, page, pages),
        }
    }
    panic!("{query}: no end in 1000 pages");
}

async fn sealed_all(t: &TestApp) {
    let reply = post(&t.router, "/api/v1/sealing", &json!({})).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED, "{}", reply.text());
    for _ in 0..500 {
        let status = get_json(&t.router, "/api/v1/sealing").await;
        if status["unsealed_jobs"] == 0 && status["sealing_all"] == false {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("sealing did not finish");
}

async fn every_jobs_log_is_searched_newest_first_sealed_or_not(db: TestDatabase) {
    let t = start_app(db, 3).await;
    let r = &t.router;
    let named = |name: &str, script: &str, extra: Value| {
        let mut body = json!({"name": name, "script": script});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let db_job = id_of(
        &submit(
            r,
            named(
                "backup-db",
                "echo 'ERROR: disk full'; echo ok; echo 'Disk Full' >&2",
                json!({}),
            ),
        )
        .await,
    );
    wait_finished(r, db_job).await;
    let web = id_of(
        &submit(
            r,
            named(
                "backup-web",
                "echo \"pw=$PW in use\"; echo 'disk FULL again'; echo 'É é'",
                json!({"secrets": {"PW": "hunter2-sekrit"}}),
            ),
        )
        .await,
    );
    wait_finished(r, web).await;
    sealed_all(&t).await;
    let report = id_of(
        &submit(
            r,
            named(
                "report",
                "for i in 1 2 3 4 5 6; do echo \"row $i: disk full\"; done",
                json!({}),
            ),
        )
        .await,
    );
    wait_finished(r, report).await;
    // Running, its lines in rows.
    let live = id_of(
        &submit(
            r,
            named("live", "echo 'disk full, live'; sleep 30", json!({})),
        )
        .await,
    );
    wait_records(r, live, 1).await;

    // Newest job first, each job's hits in order, as stored.
    let (found, last, _) = search_all(&t, "q=disk%20full").await;
    assert_eq!(
        found.iter().map(|(j, s, _)| (*j, *s)).collect::<Vec<_>>(),
        vec![
            (live, 1),
            (report, 1),
            (report, 2),
            (report, 3),
            (report, 4),
            (report, 5),
            (report, 6),
            (web, 2),
            (db_job, 1),
            (db_job, 3)
        ]
    );
    assert_eq!(last["jobs_matched"], 4);
    let page = get_json(r, "/api/v1/search?q=disk%20full&limit=1").await;
    let hit = &page["hits"][0];
    assert_eq!(
        (
            &hit["job_id"],
            &hit["job_name"],
            &hit["seq"],
            &hit["stream"],
            &hit["message"]
        ),
        (
            &json!(live),
            &json!("live"),
            &json!(1),
            &json!("output"),
            &json!("disk full, live")
        )
    );
    assert!(hit["ts"].as_str().unwrap().ends_with('Z'));
    assert_eq!(page["jobs_matched"], Value::Null);
    // Cursors: a page at a time, the same hits.
    let (paged, _, pages) = search_all(&t, "q=disk%20full&limit=3").await;
    assert_eq!(paged, found);
    assert!(pages >= 4, "{pages} pages");

    // The jobs' filters and streams.
    let (only, _, _) = search_all(&t, "q=disk&name=backup*").await;
    let jobs: Vec<i64> = only.iter().map(|h| h.0).collect();
    assert_eq!(jobs, [web, db_job, db_job]);
    let (only, _, _) = search_all(&t, "q=disk&state=running").await;
    assert_eq!(only.iter().map(|h| h.0).collect::<Vec<_>>(), [live]);
    let (only, _, _) = search_all(&t, "q=full&streams=error").await;
    assert_eq!(only, [(db_job, 3, "Disk Full".to_string())]);
    let (only, _, _) = search_all(&t, &format!("q=full&until={}", "2000-01-01")).await;
    assert!(only.is_empty());

    // Regular expressions, case-insensitive unless told.
    let (rows, _, _) = search_all(&t, "q=row%20[2-4]:&regex=true").await;
    assert_eq!(rows.iter().map(|h| h.1).collect::<Vec<_>>(), [2, 3, 4]);
    let (exact, _, _) = search_all(&t, "q=(%3F-i)FULL&regex=true").await;
    assert_eq!(exact, [(web, 2, "disk FULL again".to_string())]);
    // Unicode as itself, ASCII letters in either case.
    let (accented, _, _) = search_all(&t, "q=%C3%A9").await;
    assert_eq!(accented.len(), 1);

    // A masked secret is never found by its value, only as stored.
    let (secret, _, _) = search_all(&t, "q=hunter2-sekrit").await;
    assert!(secret.is_empty(), "{secret:?}");
    let (masked, _, _) = search_all(&t, "q=pw%3D***").await;
    assert_eq!(masked, [(web, 1, "pw=*** in use".to_string())]);

    let reply = post(r, &format!("/api/v1/jobs/{live}/cancel"), &json!({})).await;
    assert!(reply.status.is_success(), "{}", reply.text());
    wait_finished(r, live).await;
}

async fn bad_searches_are_refused_naming_the_parameter(db: TestDatabase) {
    let t = start_app(db, 1).await;
    let cases: &[(&str, &str)] = &[
        ("", "q"),
        ("q=", "q"),
        (&format!("q={}", "x".repeat(257)), "q"),
        ("q=(unclosed&regex=true", "q"),
        (
            "q=%5Cw%7B1000%7D%5Cw%7B1000%7D%5Cw%7B1000%7D&regex=true",
            "q",
        ),
        ("q=a&regex=maybe", "regex"),
        ("q=a&limit=0", "limit"),
        ("q=a&limit=1001", "limit"),
        ("q=a&cursor=nonsense", "cursor"),
        ("q=a&cursor=5-1-0-7", "cursor"),
        ("q=a&streams=stdout", "streams"),
        ("q=a&state=done", "state"),
        ("q=a&since=yesterday", "since"),
        ("q=a&since=1h&until=2h", "since"),
        ("q=a&folder=a%20b", "folder"),
        ("q=a&page=2", "page"),
    ];
    for (query, param) in cases {
        let reply = get(&t.router, &format!("/api/v1/search?{query}")).await;
        let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_query");
        assert!(
            message.starts_with(&format!("{param}:"))
                || message.contains(&format!("query string: {param}:")),
            "{query}: {message}"
        );
        assert!(!message.contains('\n'), "{message}");
    }
}
