//! What every answer carries besides its body: compression as the client
//! asks (gzip, br, zstd; never for event streams or backups) and the
//! security headers, on JSON, errors, 404s, refusals and streams alike.

use std::io::Read;

use axum::body::Body;
use axum::http::{header, HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use joblog_store::testing::{Backend, TestDatabase};
use serde_json::Value;
use tower::ServiceExt;

use crate::common::*;

const BOOTSTRAP: &str = "bootstrap-token-for-the-headers-0123456789";

joblog_store::backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    answers_are_compressed_as_asked_but_never_streams_or_backups,
    every_answer_carries_the_security_headers,
}

fn decode(encoding: &str, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match encoding {
        "gzip" => {
            flate2::read::GzDecoder::new(body)
                .read_to_end(&mut out)
                .unwrap();
        }
        "br" => {
            brotli::Decompressor::new(body, 4096)
                .read_to_end(&mut out)
                .unwrap();
        }
        "zstd" => out = zstd::stream::decode_all(body).unwrap(),
        other => panic!("no decoder for {other}"),
    }
    out
}

fn encoding(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap())
}

async fn answers_are_compressed_as_asked_but_never_streams_or_backups(db: TestDatabase) {
    let backend = db.backend();
    let t = start_app(db, 2).await;
    let r = &t.router;
    let job = run_sh(
        r,
        r#"for i in $(seq 1 1000); do echo "step $i of 1000: compiling module_$i"; done"#,
    )
    .await;
    let id = id_of(&job);
    let page = format!("/api/v1/jobs/{id}/log?limit=1000");

    // Without Accept-Encoding (or asking for none): the body as it is.
    let (status, headers, plain) = fetch(r, &page, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(encoding(&headers), None);
    let json: Value = serde_json::from_slice(&plain).unwrap();
    assert_eq!(json["records"].as_array().unwrap().len(), 1000);
    let (_, headers, body) = fetch(r, &page, &[("accept-encoding", "identity")]).await;
    assert_eq!(encoding(&headers), None);
    assert_eq!(body, plain);

    for asked in ["gzip", "br", "zstd"] {
        let (status, headers, body) = fetch(r, &page, &[("accept-encoding", asked)]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(encoding(&headers), Some(asked), "{headers:?}");
        assert_eq!(headers[header::VARY], "accept-encoding");
        assert!(!headers.contains_key(header::CONTENT_LENGTH), "{headers:?}");
        let decoded = decode(asked, &body);
        assert_eq!(
            serde_json::from_slice::<Value>(&decoded).unwrap(),
            json,
            "{asked} decodes to the same page"
        );
        let ratio = plain.len() as f64 / body.len() as f64;
        // A streamed body (the log as text) ends whole: the encoder polls
        // the stream again after its end, which must not fail.
        let text_uri = format!("/api/v1/jobs/{id}/log/text");
        let (status, headers, text) = fetch(r, &text_uri, &[("accept-encoding", asked)]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(encoding(&headers), Some(asked));
        let text = String::from_utf8(decode(asked, &text)).unwrap();
        assert_eq!(text.lines().count(), 1000, "{asked}: the whole log as text");
        assert!(text.ends_with("step 1000 of 1000: compiling module_1000\n"));
        assert!(
            ratio >= 4.0,
            "{asked}: {} bytes for {} plain, only {ratio:.1}x smaller",
            body.len(),
            plain.len()
        );
    }
    // The client's preference wins among those offered.
    let (_, headers, _) = fetch(r, &page, &[("accept-encoding", "gzip;q=0.5, zstd")]).await;
    assert_eq!(encoding(&headers), Some("zstd"));
    // Weighed alike, the cheaper to make: brotli only when asked for above
    // the others.
    let (_, headers, _) = fetch(r, &page, &[("accept-encoding", "gzip, br")]).await;
    assert_eq!(encoding(&headers), Some("gzip"));
    let (_, headers, _) = fetch(r, &page, &[("accept-encoding", "br, gzip;q=0.5")]).await;
    assert_eq!(encoding(&headers), Some("br"));

    // Event streams never, even when every encoding is offered: a live
    // tail (of a finished job, so that it ends) and the job-list feed.
    let every = "gzip, br, zstd";
    let tail = format!("/api/v1/jobs/{id}/log/events");
    let req = Request::get(&tail)
        .header("accept-encoding", every)
        .body(Body::empty())
        .unwrap();
    let response = r.clone().oneshot(req).await.unwrap();
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/event-stream"
    );
    assert_eq!(encoding(response.headers()), None);
    let text = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8(text.to_vec()).expect("plain text");
    assert!(
        text.contains("\nevent: end\n"),
        "{}",
        &text[text.len() - 200..]
    );
    let ids = text.lines().filter(|l| l.starts_with("id: ")).count();
    assert_eq!(ids, 1000, "every record as it is");
    for asked in ["gzip", "br", "zstd"] {
        let req = Request::get("/api/v1/events")
            .header("accept-encoding", asked)
            .body(Body::empty())
            .unwrap();
        let feed = r.clone().oneshot(req).await.unwrap();
        assert_eq!(feed.status(), StatusCode::OK);
        assert_eq!(feed.headers()[header::CONTENT_TYPE], "text/event-stream");
        assert_eq!(
            encoding(feed.headers()),
            None,
            "the feed asked with {asked}"
        );
    }

    // A backup is a file sent with its length, as it is.
    if backend == Backend::Sqlite {
        let (status, headers, body) =
            fetch(r, "/api/v1/backup", &[("accept-encoding", every)]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(encoding(&headers), None, "{headers:?}");
        assert_eq!(
            headers[header::CONTENT_LENGTH].to_str().unwrap(),
            body.len().to_string()
        );
        assert!(body.starts_with(b"SQLite format 3\0"));
    }
    t.shutdown().await;
}

/// What is asked (for the failure message), the URL, the request's
/// headers, and the status expected.
type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)], StatusCode);

/// The four headers, exactly.
fn assert_security_headers(what: &str, headers: &HeaderMap) {
    let expected = [
        (
            "content-security-policy",
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        ),
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
    ];
    for (name, value) in expected {
        let got: Vec<&str> = headers
            .get_all(name)
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        assert_eq!(got, [value], "{what}: {name}");
    }
}

async fn every_answer_carries_the_security_headers(db: TestDatabase) {
    let t = start_app_with_token(db, 1, Some(BOOTSTRAP)).await;
    let r = &t.router;
    let bearer = format!("Bearer {BOOTSTRAP}");
    let token = [("authorization", bearer.as_str())];
    let gzip = [
        ("authorization", bearer.as_str()),
        ("accept-encoding", "gzip"),
    ];
    let cases: [Case; 8] = [
        ("a JSON route", "/api/v1/jobs", &token, StatusCode::OK),
        ("a public route", "/healthz", &[], StatusCode::OK),
        (
            "a compressed answer",
            "/openapi.json",
            &gzip,
            StatusCode::OK,
        ),
        ("a 404", "/no/such/page", &token, StatusCode::NOT_FOUND),
        (
            "a 404 of a job",
            "/api/v1/jobs/999999",
            &token,
            StatusCode::NOT_FOUND,
        ),
        ("a 400", "/api/v1/jobs/abc", &token, StatusCode::BAD_REQUEST),
        ("a 401", "/api/v1/jobs", &[], StatusCode::UNAUTHORIZED),
        (
            "a refused host",
            "/api/v1/jobs",
            &[("host", "evil.example")],
            StatusCode::MISDIRECTED_REQUEST,
        ),
    ];
    for (what, uri, headers, status) in cases {
        let (got, head, _) = fetch(r, uri, headers).await;
        assert_eq!(got, status, "{what}");
        assert_security_headers(what, &head);
    }
    let (_, head, _) = fetch(r, "/openapi.json", &gzip).await;
    assert_eq!(encoding(&head), Some("gzip"), "the compressed case was");

    // An event stream's head, before any event.
    let req = Request::get("/api/v1/events")
        .header("authorization", bearer.as_str())
        .body(Body::empty())
        .unwrap();
    let feed = r.clone().oneshot(req).await.unwrap();
    assert_eq!(feed.status(), StatusCode::OK);
    assert_security_headers("an event stream", feed.headers());
    drop(feed);
    t.shutdown().await;
}
