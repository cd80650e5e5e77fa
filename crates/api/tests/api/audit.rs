//! `GET /api/v1/audit`: admins only; entries handed to the pipeline come
//! back flat, filtered by actor, action and job, paged forward by `after`
//! and backward by `before` with each entry once; bad parameters get a 400
//! naming them.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use joblog_core::{NewAudit, Timestamp};
use joblog_store::testing::TestDatabase;
use serde_json::{json, Value};

use crate::common::*;

joblog_store::backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    the_audit_trail_is_for_admins_filtered_and_paged_each_entry_once,
    bad_audit_parameters_get_a_400_naming_them,
}

/// Actors of this test's entries, so that what the server itself records
/// (token creations, once it audits them) is told apart.
const ACTORS: [&str; 2] = ["audit-alice", "audit-bob"];

fn entry(actor: &str, action: &str, job_id: Option<i64>, n: usize) -> NewAudit {
    let mut detail = serde_json::Map::new();
    detail.insert("n".into(), json!(n));
    NewAudit {
        at: Timestamp(1_795_342_502_000_000 + n as i64),
        actor: actor.into(),
        action: action.into(),
        job_id,
        remote: Some("192.0.2.7:41000".into()),
        request_id: Some(format!("req-{n}")),
        node: "test-node".into(),
        detail,
    }
}

async fn get_as(t: &TestApp, uri: &str, token: Option<&str>) -> Reply {
    let mut req = Request::get(uri);
    if let Some(token) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    send(&t.router, req.body(Body::empty()).unwrap()).await
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

fn ids(page: &Value) -> Vec<u64> {
    page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_u64().unwrap())
        .collect()
}

/// `actor action` of each entry of a page.
fn who(page: &Value) -> Vec<String> {
    page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["actor"].as_str().unwrap(),
                e["action"].as_str().unwrap()
            )
        })
        .collect()
}

async fn the_audit_trail_is_for_admins_filtered_and_paged_each_entry_once(db: TestDatabase) {
    let t = start_app(db, 1).await;
    let viewer = token(&t, "v", "viewer").await;
    let operator = token(&t, "o", "operator").await;
    let admin = token(&t, "a", "admin").await;
    let [alice, bob] = ACTORS;
    t.pipeline
        .append_audit(vec![
            entry(alice, "job.submitted", Some(7), 0),
            entry(bob, "job.submitted", Some(8), 1),
            entry(alice, "job.cancelled", Some(7), 2),
        ])
        .await
        .unwrap();
    t.pipeline
        .append_audit(vec![
            entry(bob, "token.created", None, 3),
            entry(alice, "job.submitted", Some(9), 4),
        ])
        .await
        .unwrap();

    for (role, token) in [("viewer", &viewer), ("operator", &operator)] {
        let reply = get_as(&t, "/api/v1/audit", Some(token)).await;
        let message = assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
        assert!(
            message.contains("needs the admin role"),
            "{role}: {message}"
        );
    }

    // An entry as the API gives it: flat, times in RFC 3339.
    let mine = |q: &str| format!("/api/v1/audit?actor={alice}{q}");
    let reply = get_as(&t, &mine(""), Some(&admin)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let page = reply.json();
    let first = &page["entries"][0];
    let id = first["id"].as_u64().unwrap();
    assert_eq!(
        *first,
        json!({"id": id, "at": "2026-11-22T10:15:02.000000Z", "actor": alice,
               "action": "job.submitted", "job_id": 7, "remote": "192.0.2.7:41000",
               "request_id": "req-0", "node": "test-node", "detail": {"n": 0}})
    );
    assert_eq!(
        who(&page),
        [
            "audit-alice job.submitted",
            "audit-alice job.cancelled",
            "audit-alice job.submitted"
        ]
    );
    assert_eq!(page["next_after"], Value::Null, "the page is not full");
    assert_eq!(page["next_before"], Value::Null);

    // Each filter, and filters together (an empty one is none).
    let filtered = |q: &str| {
        let uri = format!("/api/v1/audit?{q}");
        let admin = admin.clone();
        let t = &t;
        async move {
            let reply = get_as(t, &uri, Some(&admin)).await;
            assert_eq!(reply.status, StatusCode::OK, "{uri}: {}", reply.text());
            who(&reply.json())
        }
    };
    assert_eq!(
        filtered("action=job.submitted").await,
        [
            "audit-alice job.submitted",
            "audit-bob job.submitted",
            "audit-alice job.submitted"
        ]
    );
    assert_eq!(
        filtered("job_id=7").await,
        ["audit-alice job.submitted", "audit-alice job.cancelled"]
    );
    assert_eq!(
        filtered(&format!("actor={bob}&action=token.created")).await,
        ["audit-bob token.created"]
    );
    assert_eq!(
        filtered("actor=&action=job.cancelled").await,
        ["audit-alice job.cancelled"]
    );
    assert_eq!(
        filtered(&format!("actor={alice}&action=job.submitted&job_id=9")).await,
        ["audit-alice job.submitted"]
    );
    assert!(filtered("actor=nobody").await.is_empty());

    // Forward by `after`, two at a time: every entry once, in order.
    let all = get_json(&t.router, "/api/v1/audit?limit=1000").await;
    let all_ids = ids(&all);
    assert!(all_ids.len() >= 5, "{all}");
    assert!(all_ids.windows(2).all(|w| w[0] < w[1]), "{all_ids:?}");
    let (mut paged, mut after, mut pages) = (Vec::new(), 0, 0);
    loop {
        let page = get_json(&t.router, &format!("/api/v1/audit?after={after}&limit=2")).await;
        pages += 1;
        assert!(ids(&page).len() <= 2);
        paged.extend(ids(&page));
        assert_eq!(page["next_before"], Value::Null);
        match page["next_after"].as_u64() {
            Some(next) => {
                assert_eq!(Some(&next), paged.last());
                after = next;
            }
            None => break,
        }
        assert!(pages <= all_ids.len(), "paging does not end");
    }
    assert_eq!(paged, all_ids);

    // Backward by `before`, newest page first: every entry once.
    let mut before = u64::MAX.to_string();
    let mut newest_first: Vec<u64> = Vec::new();
    loop {
        let page = get_json(&t.router, &format!("/api/v1/audit?before={before}&limit=2")).await;
        let page_ids = ids(&page);
        assert!(
            page_ids.windows(2).all(|w| w[0] < w[1]),
            "a page is oldest first"
        );
        newest_first.extend(page_ids.iter().rev());
        assert_eq!(page["next_after"], Value::Null);
        match page["next_before"].as_u64() {
            Some(next) => {
                assert_eq!(Some(&next), page_ids.first());
                before = next.to_string();
            }
            None => break,
        }
    }
    newest_first.reverse();
    assert_eq!(newest_first, all_ids);
    // A filtered page below an entry.
    let below = get_json(
        &t.router,
        &format!(
            "/api/v1/audit?actor={alice}&before={}",
            all_ids[all_ids.len() - 1]
        ),
    )
    .await;
    assert_eq!(
        who(&below),
        ["audit-alice job.submitted", "audit-alice job.cancelled"]
    );
    t.shutdown().await;
}

async fn bad_audit_parameters_get_a_400_naming_them(db: TestDatabase) {
    let t = start_app(db, 1).await;
    for (query, param) in [
        ("after=-1", "after"),
        ("after=x", "after"),
        ("before=0", "before"),
        ("after=5&before=5", "before"),
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("job_id=0", "job_id"),
        ("job_id=abc", "job_id"),
        ("actor=a%00b", "actor"),
        ("action=a%0Ab", "action"),
        ("wat=1", "wat"),
    ] {
        let reply = get(&t.router, &format!("/api/v1/audit?{query}")).await;
        let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_query");
        assert!(message.contains(param), "{query}: {message}");
    }
    let long = "x".repeat(joblog_core::MAX_AUDIT_FIELD + 1);
    let reply = get(&t.router, &format!("/api/v1/audit?actor={long}")).await;
    let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_query");
    assert!(message.starts_with("actor:"), "{message}");
    t.shutdown().await;
}
