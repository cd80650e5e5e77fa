//! Backups over the API: an admin gets the whole SQLite database as one
//! file while a job goes on writing (the file opens and holds the jobs),
//! lower roles are refused, and a PostgreSQL store answers with a code
//! that names the tool to use instead.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use joblog_core::{JobQuery, JobState};
use joblog_store::sqlite::SqliteStore;
use joblog_store::testing::{Backend, TestDatabase};
use joblog_store::{Store, StoreOptions};
use serde_json::json;
use tower::ServiceExt;

use crate::common::*;

joblog_store::backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    an_admin_gets_the_whole_database_while_jobs_write_and_others_are_refused,
}

/// `GET /api/v1/backup` with `token` (none: the loopback default, admin):
/// the status, `Content-Length` and the body.
async fn backup(t: &TestApp, token: Option<&str>) -> (StatusCode, Option<u64>, Vec<u8>) {
    let mut req = Request::get("/api/v1/backup");
    if let Some(token) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let response = t
        .router
        .clone()
        .oneshot(req.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let length = response
        .headers()
        .get(header::CONTENT_LENGTH)
        .map(|v| v.to_str().unwrap().parse().unwrap());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, length, body.to_vec())
}

async fn token(t: &TestApp, name: &str, role: &str) -> String {
    let reply = post(
        &t.router,
        "/api/v1/tokens",
        &json!({"name": name, "role": role}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    reply.json()["token"].as_str().unwrap().to_string()
}

async fn an_admin_gets_the_whole_database_while_jobs_write_and_others_are_refused(
    db: TestDatabase,
) {
    let backend = db.backend();
    let t = start_app(db, 2).await;
    let r = &t.router;
    let viewer = token(&t, "v", "viewer").await;
    let operator = token(&t, "o", "operator").await;
    let admin = token(&t, "a", "admin").await;

    for (role, token) in [("viewer", &viewer), ("operator", &operator)] {
        let (status, _, body) = backup(&t, Some(token)).await;
        let reply = Reply {
            status,
            content_type: None,
            www_authenticate: None,
            body,
        };
        let message = assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
        assert!(
            message.contains("needs the admin role"),
            "{role}: {message}"
        );
    }

    let done = run_sh(r, "seq 1 500").await;
    assert_eq!(done["state"], "succeeded", "{done}");
    // Writes until its flag file appears: it is running, and writing,
    // while the copy is made.
    let flag = t.path("stop");
    let writer = id_of(
        &submit_sh(
            r,
            &format!(
                "i=0; while [ ! -e {} ]; do i=$((i+1)); echo \"line $i\"; done",
                flag.display()
            ),
        )
        .await,
    );
    let records = |n: u64| move |j: &Job| j.log.records >= n;
    wait_for(r, writer, "100 records", records(100)).await;

    let (status, length, body) = backup(&t, Some(&admin)).await;
    if backend == Backend::Postgres {
        let reply = Reply {
            status,
            content_type: None,
            www_authenticate: None,
            body,
        };
        let message = assert_error(&reply, StatusCode::CONFLICT, "backup_unsupported");
        assert!(message.contains("pg_dump"), "{message}");
        std::fs::write(&flag, b"").unwrap();
        wait_finished(r, writer).await;
        t.shutdown().await;
        return;
    }
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert_eq!(length, Some(body.len() as u64));
    let copy = t.path("copy.db");
    std::fs::write(&copy, &body).unwrap();

    // The running job's log in the copy: a gap-free prefix of what it
    // printed, and it went on writing after the copy was made.
    let in_copy = {
        let conn = rusqlite::Connection::open(&copy).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        let mut stmt = conn
            .prepare("SELECT seq, message FROM log WHERE job_id = ?1 ORDER BY seq")
            .unwrap();
        let rows: Vec<(i64, String)> = stmt
            .query_map([writer], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for (i, (seq, message)) in rows.iter().enumerate() {
            assert_eq!(*seq, i as i64 + 1);
            assert_eq!(*message, format!("line {}", i + 1));
        }
        rows.len() as u64
    };
    assert!(in_copy >= 100, "{in_copy} records of the running job");
    wait_for(r, writer, "more records", records(in_copy + 100)).await;
    std::fs::write(&flag, b"").unwrap();
    assert_eq!(wait_finished(r, writer).await["state"], "succeeded");

    // The copy opens as a store: the finished job whole, the running one
    // as it was, each log a gap-free prefix.
    let store = SqliteStore::open(&copy, &StoreOptions::default()).unwrap();
    let jobs = store
        .list_jobs(JobQuery {
            limit: 10,
            ..JobQuery::default()
        })
        .await
        .unwrap();
    let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
    assert_eq!(ids, [writer, id_of(&done)]);
    assert_eq!(jobs[1].state, JobState::Succeeded);
    assert_eq!(jobs[0].state, JobState::Running);
    let log = store.read_log(id_of(&done), 0, 1000, None).await.unwrap();
    let lines: Vec<String> = log.iter().map(|r| r.message.clone()).collect();
    let expected: Vec<String> = (1..=500).map(|i| i.to_string()).collect();
    assert_eq!(lines, expected);
    assert_eq!(jobs[0].log.records, in_copy, "counters as of the copy");
    // The tokens came along, by their hashes.
    assert_eq!(store.list_tokens().await.unwrap().len(), 3);
    t.shutdown().await;
}
