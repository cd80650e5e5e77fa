//! Results as stored blobs, through the API: a large result served whole
//! with its length, as the stored zstd to a client that takes it, gzip'd
//! to one that asks for gzip; never in listings; an over-size result
//! refused; a damaged one a clear error that leaves the server up.

use std::io::Read;

use axum::http::{header, HeaderMap, StatusCode};
use joblog_store::testing::{Backend, PgSession, TestDatabase};
use serde_json::Value;

use crate::common::*;

joblog_store::backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    a_large_result_is_served_whole_as_stored_or_decoded_and_never_listed,
    an_over_size_result_fails_its_job_and_the_log_says_why,
    a_damaged_stored_result_is_a_clear_error_and_the_server_goes_on,
}

const RECORD: &str = r#"{"host":"web-01.example.net","state":"ok","ms":12.5},"#;

/// A script that writes `records` records of JSON (an array, one a line)
/// to its result file, and the bytes it writes.
fn writes_result(records: u64) -> (String, u64) {
    let script = format!(
        r#"{{ printf '['; yes '{RECORD}' | head -n {records}; printf '0]'; }} > "$JOBLOG_RESULT""#
    );
    (script, 1 + records * (RECORD.len() as u64 + 1) + 2)
}

/// GETs `uri`, with `Accept-Encoding: accept` when given.
async fn fetch_as(
    router: &axum::Router,
    uri: &str,
    accept: Option<&str>,
) -> (StatusCode, HeaderMap, Vec<u8>) {
    let headers: Vec<(&str, &str)> = accept.map(|a| ("accept-encoding", a)).into_iter().collect();
    fetch(router, uri, &headers).await
}

fn header_of(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).map(|v| v.to_str().unwrap())
}

async fn a_large_result_is_served_whole_as_stored_or_decoded_and_never_listed(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let r = &t.router;
    let (script, bytes) = writes_result(100_000);
    let job = run_sh(r, &script).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let id = id_of(&job);
    assert_eq!(job["result"]["bytes"].as_u64(), Some(bytes), "{job}");
    let uri = format!("/api/v1/jobs/{id}/result");

    // No Accept-Encoding: the JSON, with its length, decoded as it is sent.
    let (status, headers, plain) = fetch_as(r, &uri, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(header_of(&headers, header::CONTENT_ENCODING), None);
    assert_eq!(
        header_of(&headers, header::CONTENT_LENGTH),
        Some(bytes.to_string().as_str())
    );
    assert_eq!(plain.len() as u64, bytes);
    assert!(plain.starts_with(b"[{\"host\""));
    assert!(plain.ends_with(b"0]"));
    let parsed: Value = serde_json::from_slice(&plain).unwrap();
    assert!(parsed.as_array().unwrap().len() > 80_000);

    // zstd accepted: the stored frame, much smaller, as it is.
    let (status, headers, stored) = fetch_as(r, &uri, Some("gzip, deflate, br, zstd")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(header_of(&headers, header::CONTENT_ENCODING), Some("zstd"));
    assert_eq!(
        header_of(&headers, header::CONTENT_LENGTH),
        Some(stored.len().to_string().as_str())
    );
    assert!(
        stored.len() < plain.len() / 20,
        "{} bytes sent",
        stored.len()
    );
    assert!(zstd::stream::decode_all(&stored[..]).unwrap() == plain);
    assert!(header_of(&headers, header::VARY)
        .unwrap()
        .contains("accept-encoding"));

    // gzip only: decoded here, compressed by the server's layer.
    let (status, headers, gzipped) = fetch_as(r, &uri, Some("gzip")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(header_of(&headers, header::CONTENT_ENCODING), Some("gzip"));
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(&gzipped[..])
        .read_to_end(&mut unzipped)
        .unwrap();
    assert!(unzipped == plain);

    // Listings and the job itself say how large, never what.
    for uri in [
        "/api/v1/jobs".to_string(),
        format!("/api/v1/jobs?limit=1&before_id={}", id + 1),
        format!("/api/v1/jobs/{id}"),
    ] {
        let reply = get(r, &uri).await;
        assert_eq!(reply.status, StatusCode::OK, "{uri}");
        assert!(
            reply.body.len() < 10_000,
            "{uri}: {} bytes",
            reply.body.len()
        );
        let v = reply.json();
        let job = v.get("jobs").map(|jobs| jobs[0].clone()).unwrap_or(v);
        assert_eq!(job["result"], serde_json::json!({"bytes": bytes}), "{uri}");
    }
    t.shutdown().await;
}

async fn an_over_size_result_fails_its_job_and_the_log_says_why(db: TestDatabase) {
    let t = start_app_with(db, 2, Default::default(), |c| c.max_result_bytes = 100_000).await;
    let r = &t.router;
    let (script, bytes) = writes_result(3_000);
    assert!(bytes > 100_000);
    let over = run_sh(r, &script).await;
    assert_eq!(over["state"], "failed", "{over}");
    assert_eq!(over["result"], Value::Null);
    let errors = messages_of(&whole_log(r, id_of(&over)).await, "error").join("\n");
    assert!(
        errors.contains("over the limit of 100000 bytes"),
        "{errors}"
    );
    let (script, bytes) = writes_result(1_500);
    assert!(bytes < 100_000);
    let under = run_sh(r, &script).await;
    assert_eq!(under["state"], "succeeded", "{under}");
    t.shutdown().await;
}

async fn a_damaged_stored_result_is_a_clear_error_and_the_server_goes_on(db: TestDatabase) {
    let backend = db.backend();
    let url = db.url().to_owned();
    let t = start_app(db, 2).await;
    let r = &t.router;
    let job = run_sh(r, &writes_result(4_000).0).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let id = id_of(&job);
    // One byte in the middle of the stored body flipped, behind the
    // server's back (a disk or a hand that damaged it).
    let flip = |mut body: Vec<u8>| {
        body[100] ^= 0xff;
        body
    };
    match backend {
        Backend::Sqlite => {
            let conn = rusqlite::Connection::open(t.path("joblog.db")).unwrap();
            let body: Vec<u8> = conn
                .query_row("SELECT body FROM results WHERE job_id = ?1", [id], |r| {
                    r.get(0)
                })
                .unwrap();
            conn.execute(
                "UPDATE results SET body = ?2 WHERE job_id = ?1",
                rusqlite::params![id, flip(body)],
            )
            .unwrap();
        }
        Backend::Postgres => {
            let pg = PgSession::connect(&url).await;
            let body: Vec<u8> = pg
                .client
                .query_one("SELECT body FROM results WHERE job_id = $1", &[&id])
                .await
                .unwrap()
                .get(0);
            pg.client
                .execute(
                    "UPDATE results SET body = $2 WHERE job_id = $1",
                    &[&id, &flip(body)],
                )
                .await
                .unwrap();
            pg.close().await;
        }
    }
    for accept in [None, Some("zstd")] {
        let (status, headers, body) =
            fetch_as(r, &format!("/api/v1/jobs/{id}/result"), accept).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        // The error itself may come compressed, as any answer.
        let body = match header_of(&headers, header::CONTENT_ENCODING) {
            Some("zstd") => zstd::stream::decode_all(&body[..]).unwrap(),
            _ => body,
        };
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["error"]["code"], "result_damaged", "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains(&format!("stored result of job {id} is damaged")),
            "{v}"
        );
    }
    // The job, its log and other jobs' results are still served.
    assert_eq!(show(r, id).await["state"], "succeeded");
    let other = run_sh(r, "echo '::set-result::{\"fine\":true}'").await;
    let reply = get(r, &format!("/api/v1/jobs/{}/result", id_of(&other))).await;
    assert_eq!(reply.json(), serde_json::json!({"fine": true}));
    t.shutdown().await;
}
