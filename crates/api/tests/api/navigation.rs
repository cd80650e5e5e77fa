//! The log viewer's routes through `app()`: a page read backwards
//! (`GET /log?before_seq=`), a search (`GET /log/search`) and an outline
//! (`GET /log/outline`) of a real job's log, their JSON shapes, and a 400
//! naming the parameter for each bad request.

use axum::http::StatusCode;
use joblog_store::testing::TestDatabase;
use serde_json::{json, Value};

use crate::common::*;

joblog_store::backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    a_log_is_read_backwards_searched_and_outlined,
    bad_navigation_requests_are_refused_naming_the_parameter,
}

/// Every line on stdout, so the seqs are known: 1 to 13.
const SCRIPT: &str = r#"
echo '::warning::early'
echo '::group::Build'
echo 'cc ok'
echo '::error::compile ERROR here'
echo '::group::Test'
echo '::warning::flaky'
echo '::endgroup::'
echo '::endgroup::'
echo '::progress percent=40::Copying'
echo '100% done_x'
echo '::group::Deploy'
echo '::error::boom'
echo 'Error: 50%_off'
"#;

fn seqs(records: &Value) -> Vec<u64> {
    records
        .as_array()
        .unwrap_or_else(|| panic!("records: {records}"))
        .iter()
        .map(|r| r["seq"].as_u64().unwrap())
        .collect()
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

async fn a_log_is_read_backwards_searched_and_outlined(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let r = &t.router;
    let job = run_sh(r, SCRIPT).await;
    assert_eq!(job["log"]["records"], 13, "{job}");
    let id = id_of(&job);
    let log = |q: &str| format!("/api/v1/jobs/{id}/log{q}");

    // Backwards: the nearest records before the seq, in seq order.
    let page = get_json(r, &log("?before_seq=13&limit=3")).await;
    assert_eq!(keys(&page), ["next_before_seq", "records"]);
    assert_eq!(seqs(&page["records"]), [10, 11, 12]);
    assert_eq!(page["next_before_seq"], 10);
    assert_eq!(page["records"][2]["message"], "boom");
    let page = get_json(r, &log("?before_seq=3&limit=5")).await;
    assert_eq!(seqs(&page["records"]), [1, 2]);
    assert_eq!(page["next_before_seq"], Value::Null, "nothing earlier");
    // "Previous error", from the end of the log and from the first one.
    let page = get_json(r, &log("?before_seq=999&limit=1&streams=error")).await;
    assert_eq!(
        (seqs(&page["records"]), &page["next_before_seq"]),
        (vec![12], &json!(12))
    );
    let page = get_json(r, &log("?before_seq=12&limit=1&streams=error")).await;
    assert_eq!(
        (seqs(&page["records"]), &page["next_before_seq"]),
        (vec![4], &Value::Null)
    );
    let page = get_json(r, &log("?before_seq=4&streams=error")).await;
    assert_eq!(page, json!({"records": [], "next_before_seq": null}));
    // A page forwards is as it was.
    let page = get_json(r, &log("?after_seq=11")).await;
    assert_eq!(keys(&page), ["next_after_seq", "records"]);
    assert_eq!(seqs(&page["records"]), [12, 13]);

    // Search: ASCII case folded, `%` and `_` themselves, the total of the
    // whole log on every page.
    let search = |q: &str| format!("/api/v1/jobs/{id}/log/search?{q}");
    let hits = get_json(r, &search("q=error")).await;
    assert_eq!(
        hits,
        json!({"total": 2, "seqs": [4, 13], "next_after_seq": null})
    );
    let hits = get_json(r, &search("q=ERROR&limit=1")).await;
    assert_eq!(hits, json!({"total": 2, "seqs": [4], "next_after_seq": 4}));
    let hits = get_json(r, &search("q=ERROR&limit=1&after_seq=4")).await;
    assert_eq!(
        hits,
        json!({"total": 2, "seqs": [13], "next_after_seq": null})
    );
    let hits = get_json(r, &search("q=%25")).await;
    assert_eq!(hits["seqs"], json!([10, 13]));
    let hits = get_json(r, &search("q=0%25_")).await;
    assert_eq!(hits["seqs"], json!([13]), "no wildcards");
    let hits = get_json(r, &search("q=error&streams=error")).await;
    assert_eq!(
        hits,
        json!({"total": 1, "seqs": [4], "next_after_seq": null})
    );
    let hits = get_json(r, &search("q=nowhere")).await;
    assert_eq!(
        hits,
        json!({"total": 0, "seqs": [], "next_after_seq": null})
    );

    // The outline.
    let outline = get_json(r, &format!("/api/v1/jobs/{id}/log/outline")).await;
    let progress = &outline["progress"];
    assert_eq!(
        (
            &progress["seq"],
            &progress["stream"],
            &progress["message"],
            &progress["fields"]
        ),
        (
            &json!(9),
            &json!("progress"),
            &json!("Copying"),
            &json!({"percent": 40})
        )
    );
    assert!(progress["ts"].is_string(), "{progress}");
    let mut outline = outline.clone();
    outline["progress"] = Value::Null;
    assert_eq!(
        outline,
        json!({
            "first_error_seq": 4,
            "first_warning_seq": 1,
            "groups": [
                {"seq": 2, "end_seq": 4, "title": "Build", "errors": 1, "warnings": 0},
                {"seq": 5, "end_seq": 7, "title": "Test", "errors": 0, "warnings": 1},
                {"seq": 11, "end_seq": null, "title": "Deploy", "errors": 1, "warnings": 0},
            ],
            "groups_truncated": false,
            "progress": null,
        })
    );
    let quiet = id_of(&run_sh(r, "echo only output").await);
    let outline = get_json(r, &format!("/api/v1/jobs/{quiet}/log/outline")).await;
    assert_eq!(
        outline,
        json!({"first_error_seq": null, "first_warning_seq": null, "groups": [],
               "groups_truncated": false, "progress": null})
    );
    t.shutdown().await;
}

async fn bad_navigation_requests_are_refused_naming_the_parameter(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let r = &t.router;
    let id = id_of(&run_sh(r, "echo hi").await);
    let long = "x".repeat(257);
    for (query, names) in [
        (
            "log?before_seq=5&after_seq=1".to_string(),
            &["before_seq", "after_seq"][..],
        ),
        (
            "log?before_seq=5&wait_ms=100".to_string(),
            &["wait_ms", "before_seq"],
        ),
        ("log?before_seq=-1".to_string(), &["before_seq"]),
        ("log?before_seq=5&limit=0".to_string(), &["limit"]),
        ("log/search".to_string(), &["q"]),
        ("log/search?after_seq=3".to_string(), &["q"]),
        ("log/search?q=".to_string(), &["q"]),
        (format!("log/search?q={long}"), &["q", "256"]),
        ("log/search?q=a&limit=0".to_string(), &["limit"]),
        ("log/search?q=a&limit=10001".to_string(), &["limit"]),
        ("log/search?q=a&after_seq=x".to_string(), &["after_seq"]),
        ("log/search?q=a&streams=bogus".to_string(), &["streams"]),
        ("log/search?q=a&wait_ms=5".to_string(), &["wait_ms"]),
    ] {
        let uri = format!("/api/v1/jobs/{id}/{query}");
        let message = assert_error(
            &get(r, &uri).await,
            StatusCode::BAD_REQUEST,
            "invalid_query",
        );
        for name in names {
            assert!(message.contains(name), "{uri}: {message}");
        }
    }
    // A search text of 256 bytes is fine, of any characters.
    let q = "%C3%A9".repeat(128);
    let hits = get_json(r, &format!("/api/v1/jobs/{id}/log/search?q={q}")).await;
    assert_eq!(hits["total"], 0);
    for uri in [
        "/api/v1/jobs/999999/log?before_seq=5",
        "/api/v1/jobs/999999/log/search?q=hi",
        "/api/v1/jobs/999999/log/outline",
    ] {
        let message = assert_error(&get(r, uri).await, StatusCode::NOT_FOUND, "job_not_found");
        assert!(message.contains("999999"), "{uri}: {message}");
    }
    for uri in [
        "/api/v1/jobs/abc/log/search?q=hi",
        "/api/v1/jobs/0/log/outline",
    ] {
        assert_error(&get(r, uri).await, StatusCode::BAD_REQUEST, "invalid_id");
    }
    t.shutdown().await;
}
