//! Notifications through the API, to a real HTTP receiver: rules created,
//! listed, changed and deleted, each bad field named; a failed job's end
//! delivered once with its log, its link and a signature the receiver can
//! check; a refused hook not retried and a failing one retried (the same
//! delivery id) until it answers; a test send; and the guard that keeps
//! notifications off private addresses, at save and at send.

use hmac::{Hmac, KeyInit, Mac};
use joblog_store::testing::TestDatabase;
use joblog_testkit::receiver::Receiver;
use joblog_testkit::smtp::SmtpServer;
use serde_json::{json, Value};
use sha2::Sha256;

use crate::common::*;

joblog_store::backend_tests! {
    rules_are_created_listed_changed_and_deleted,
    a_failed_job_is_told_once_with_its_log_link_and_signature,
    a_refused_hook_is_given_up_and_a_failing_one_retried,
    a_rule_can_be_sent_a_test,
    private_targets_are_refused_at_save_and_at_send,
    an_email_rule_sends_through_smtp_and_a_refusal_is_final,
}

const KEY: &str = "hook-signing-key";

/// A node whose notifications may reach the receiver on loopback, sign
/// with `HOOK_KEY`, and link to `https://joblog.example.com`.
async fn start(db: TestDatabase) -> TestApp {
    start_app_with(db, 2, joblog_api::ApiOptions::default(), |e| {
        e.notify.allow_private_targets = true;
        e.notify.public_url = Some("https://joblog.example.com".into());
        e.node_secrets.insert("HOOK_KEY".into(), KEY.into());
    })
    .await
}

async fn create(t: &TestApp, body: Value) -> Value {
    let reply = post(&t.router, "/api/v1/notifications", &body).await;
    assert_eq!(reply.status, 201, "{}", reply.text());
    reply.json()
}

fn hook(receiver: &Receiver, extra: Value) -> Value {
    let mut hook = json!({"url": receiver.url("/hook")});
    for (k, v) in extra.as_object().unwrap() {
        hook[k] = v.clone();
    }
    hook
}

/// The job's deliveries, once each is no longer pending.
async fn settled_deliveries(t: &TestApp, job: i64, n: usize) -> Vec<Value> {
    eventually(
        &format!("{n} settled deliveries of job {job}"),
        PATIENCE,
        || async {
            let page = get_json(&t.router, &format!("/api/v1/jobs/{job}/notifications")).await;
            let all = page["deliveries"].as_array().unwrap().clone();
            if all.len() == n && all.iter().all(|d| d["state"] != "pending") {
                Ok(all)
            } else {
                Err(page)
            }
        },
    )
    .await
}

async fn rules_are_created_listed_changed_and_deleted(db: TestDatabase) {
    let t = start_app(db, 1).await;
    let r = &t.router;
    let rule = create(
        &t,
        json!({"name": "backup-failures",
               "when": {"states": ["failed", "timed_out", "interrupted"], "name": "backup*"},
               "webhook": {"url": "https://hooks.example.com/T0/B0", "format": "slack",
                           "headers": {"X-Team": "ops"}, "secret_name": "HOOK_KEY"}}),
    )
    .await;
    let id = rule["id"].as_i64().unwrap();
    assert_eq!(rule["enabled"], true);
    assert_eq!(rule["webhook"]["format"], "slack");
    let again = post(
        r,
        "/api/v1/notifications",
        &json!({"name": "backup-failures",
        "when": {"states": ["failed"]}, "webhook": {"url": "https://hooks.example.com/2"}}),
    )
    .await;
    assert_error(&again, axum::http::StatusCode::CONFLICT, "rule_exists");
    // This node has no SMTP server: an e-mail rule would never be sent.
    let mail = post(
        r,
        "/api/v1/notifications",
        &json!({"name": "mail", "when": {"states": ["failed"]}, "email": {"to": ["ops@example.com"]}}),
    )
    .await;
    let message = assert_error(
        &mail,
        axum::http::StatusCode::BAD_REQUEST,
        "invalid_request",
    );
    assert!(message.contains("notify.smtp_url"), "{message}");
    for (body, field) in [
        (
            json!({"name": "x", "when": {"states": []}, "webhook": {"url": "https://a.example.com/"}}),
            "when.states",
        ),
        (
            json!({"name": "x", "when": {"states": ["failed"]}, "webhook": {"url": "ftp://a.example.com/"}}),
            "webhook.url",
        ),
        (
            json!({"name": "x", "when": {"states": ["failed"]}}),
            "webhook",
        ),
        (
            json!({"name": "x", "when": {"states": ["failed"]}, "email": {"to": ["nobody"]}}),
            "email.to",
        ),
        (
            json!({"name": "x", "when": {"states": ["failed"]}, "webhook": {"url": "https://a.example.com/", "headers": {"Joblog-Delivery": "7"}}}),
            "webhook.headers",
        ),
    ] {
        let reply = post(r, "/api/v1/notifications", &body).await;
        let message = assert_error(
            &reply,
            axum::http::StatusCode::BAD_REQUEST,
            "invalid_request",
        );
        assert!(message.starts_with(field), "{body}: {message}");
    }
    let listed = get_json(r, "/api/v1/notifications").await;
    assert_eq!(listed["rules"].as_array().unwrap().len(), 1);
    assert_eq!(listed["next_after_id"], Value::Null);
    // Changed: another hook (the whole hook is replaced), and disabled.
    let changed = patch(
        r,
        &format!("/api/v1/notifications/{id}"),
        &json!({"webhook": {"url": "https://hooks.example.com/3"}, "enabled": false}),
    )
    .await;
    assert_eq!(changed.status, 200, "{}", changed.text());
    let changed = changed.json();
    assert_eq!(changed["webhook"]["url"], "https://hooks.example.com/3");
    assert_eq!(changed["webhook"]["format"], "json");
    assert_eq!(changed["enabled"], false);
    assert_eq!(changed["when"], rule["when"]);
    let bad = patch(
        r,
        &format!("/api/v1/notifications/{id}"),
        &json!({"when": {"states": []}}),
    )
    .await;
    assert_error(&bad, axum::http::StatusCode::BAD_REQUEST, "invalid_request");
    assert_eq!(
        delete(r, &format!("/api/v1/notifications/{id}"))
            .await
            .status,
        204
    );
    let gone = get(r, &format!("/api/v1/notifications/{id}")).await;
    assert_error(&gone, axum::http::StatusCode::NOT_FOUND, "rule_not_found");
    let bad_id = get(r, "/api/v1/notifications/0").await;
    assert_error(&bad_id, axum::http::StatusCode::BAD_REQUEST, "invalid_id");
    t.shutdown().await;
}

async fn a_failed_job_is_told_once_with_its_log_link_and_signature(db: TestDatabase) {
    let receiver = Receiver::start().await;
    let t = start(db).await;
    let r = &t.router;
    create(
        &t,
        json!({"name": "failures", "when": {"states": ["failed"]},
               "webhook": hook(&receiver, json!({"headers": {"X-Team": "ops"}, "secret_name": "HOOK_KEY"}))}),
    )
    .await;
    let ok = run_sh(r, "echo fine").await;
    assert_eq!(ok["state"], "succeeded");
    let failed = submit(
        r,
        json!({"name": "backup-db", "script": "echo starting; echo 'disk full' >&2; echo \"pw=$PW\"; echo done; exit 3",
               "secrets": {"PW": "hunter2"}}),
    )
    .await;
    let id = id_of(&failed);
    wait_finished(r, id).await;
    let deliveries = settled_deliveries(&t, id, 1).await;
    let d = &deliveries[0];
    assert_eq!(
        (d["state"].as_str(), d["attempts"].as_u64()),
        (Some("delivered"), Some(1))
    );
    assert_eq!(d["last_status"], 200);
    let got = receiver.received();
    assert_eq!(got.len(), 1, "only the failed job is told, once: {got:?}");
    let request = &got[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/hook")
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("x-team"), Some("ops"));
    assert_eq!(
        request.header("joblog-delivery"),
        Some(d["id"].to_string().as_str())
    );
    // The receiver checks the signature as GitHub's receivers do.
    let mut mac = Hmac::<Sha256>::new_from_slice(KEY.as_bytes()).unwrap();
    mac.update(&request.body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        request.header("joblog-signature-256"),
        Some(format!("sha256={hex}").as_str())
    );
    let doc = request.json();
    assert_eq!(doc["event"], "job.finished");
    assert_eq!(doc["delivery_id"], d["id"]);
    assert_eq!(doc["job"]["id"], id);
    assert_eq!(doc["job"]["name"], "backup-db");
    assert_eq!(doc["job"]["state"], "failed");
    assert_eq!(doc["job"]["exit_code"], 3);
    assert_eq!(doc["job"]["node"], "test-node");
    assert_eq!(doc["first_error"]["message"], "disk full");
    let seq = doc["first_error"]["seq"].as_u64().unwrap();
    assert_eq!(
        doc["url"],
        format!("https://joblog.example.com/jobs/{id}#seq-{seq}")
    );
    let tail: Vec<&str> = doc["output_tail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["message"].as_str().unwrap())
        .collect();
    assert_eq!(tail, ["starting", "pw=***", "done"], "masked as stored");
    assert!(!String::from_utf8_lossy(&request.body).contains("hunter2"));
    t.shutdown().await;
}

async fn a_refused_hook_is_given_up_and_a_failing_one_retried(db: TestDatabase) {
    // The engine's clock runs ahead of the wall clock by a minute, so the
    // deliveries the store stamps are due at once, and a retry's backoff
    // passes when the test moves it.
    let start_at = joblog_core::Timestamp(joblog_core::Timestamp::now().0 + 60_000_000);
    let clock = ManualClock::at(start_at);
    let receiver = Receiver::start().await;
    let t = start_app_with_clock_and(db, 2, clock.clone(), |e| {
        e.notify.allow_private_targets = true;
    })
    .await;
    let r = &t.router;
    create(&t, json!({"name": "all", "when": {"states": ["failed"]}, "webhook": hook(&receiver, json!({}))})).await;
    receiver.answer_next(&[404]);
    let gone = id_of(&run_sh(r, "exit 1").await);
    let d = &settled_deliveries(&t, gone, 1).await[0];
    assert_eq!(
        (d["state"].as_str(), d["attempts"].as_u64()),
        (Some("failed"), Some(1))
    );
    assert_eq!(d["last_status"], 404);
    assert!(
        d["last_error"].as_str().unwrap().contains("received"),
        "{d}"
    );
    // A 503, then a dropped connection, then a 200: the same delivery.
    receiver.answer_next(&[503]);
    let busy = id_of(&run_sh(r, "exit 2").await);
    let first = eventually("the first try to be answered 503", PATIENCE, || async {
        let page = get_json(r, &format!("/api/v1/jobs/{busy}/notifications")).await;
        let d = page["deliveries"][0].clone();
        if d["last_status"] == 503 {
            Ok(d)
        } else {
            Err(page)
        }
    })
    .await;
    assert_eq!(
        (first["state"].as_str(), first["attempts"].as_u64()),
        (Some("pending"), Some(1))
    );
    assert!(first["next_try_at"].is_string(), "{first}");
    receiver.go_down();
    clock.set(joblog_core::Timestamp(start_at.0 + 11_000_000));
    eventually("the second try to fail", PATIENCE, || async {
        let page = get_json(r, &format!("/api/v1/jobs/{busy}/notifications")).await;
        let d = page["deliveries"][0].clone();
        // Tried (not only claimed): the dropped connection left no status.
        if d["attempts"] == 2 && d["state"] == "pending" && d["last_status"].is_null() {
            // Shown to whoever reads the job: never the hook's URL.
            let error = d["last_error"].as_str().unwrap_or_default();
            assert!(!error.contains("/hook"), "{error}");
            Ok(())
        } else {
            Err(page)
        }
    })
    .await;
    receiver.answer_with(200);
    clock.set(joblog_core::Timestamp(start_at.0 + 40_000_000));
    let done = &settled_deliveries(&t, busy, 1).await[0];
    assert_eq!(
        (done["state"].as_str(), done["attempts"].as_u64()),
        (Some("delivered"), Some(3))
    );
    let ids: Vec<String> = receiver
        .received()
        .iter()
        .filter(|q| q.json()["job"]["id"] == busy)
        .map(|q| q.header("joblog-delivery").unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 3, "three tries reached the receiver");
    let id = done["id"].to_string();
    assert!(ids.iter().all(|i| *i == id), "{ids:?}");
    t.shutdown().await;
}

async fn a_rule_can_be_sent_a_test(db: TestDatabase) {
    let receiver = Receiver::start().await;
    let t = start(db).await;
    let rule = create(
        &t,
        json!({"name": "teams", "when": {"states": ["failed"]},
               "webhook": hook(&receiver, json!({"format": "teams"}))}),
    )
    .await;
    let id = rule["id"].as_i64().unwrap();
    let sent = post(
        &t.router,
        &format!("/api/v1/notifications/{id}/test"),
        &json!({}),
    )
    .await;
    assert_eq!(sent.status, 200, "{}", sent.text());
    let sent = sent.json();
    assert_eq!(sent["delivered"], true, "{sent}");
    assert_eq!(sent["job_id"], Value::Null, "no job failed yet: an example");
    let got = receiver.wait_for(1).await;
    assert_eq!(
        got[0].header("joblog-delivery"),
        None,
        "a test is no delivery"
    );
    let card = got[0].json();
    assert_eq!(card["attachments"][0]["content"]["type"], "AdaptiveCard");
    let headline = card["attachments"][0]["content"]["body"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        headline.starts_with(r"\[test\] example (job 0) failed"),
        "{headline}"
    );
    assert_eq!(
        card["attachments"][0]["content"]["actions"],
        Value::Null,
        "an example has no page"
    );
    receiver.answer_with(500);
    let failed = post(
        &t.router,
        &format!("/api/v1/notifications/{id}/test"),
        &json!({}),
    )
    .await;
    let failed = failed.json();
    assert_eq!(
        (failed["delivered"].as_bool(), failed["status"].as_u64()),
        (Some(false), Some(500))
    );
    t.shutdown().await;
}

async fn private_targets_are_refused_at_save_and_at_send(db: TestDatabase) {
    let receiver = Receiver::start().await;
    let t = start_app(db, 1).await;
    let r = &t.router;
    // An address written out: refused when saved.
    let reply = post(
        r,
        "/api/v1/notifications",
        &json!({"name": "loop", "when": {"states": ["failed"]}, "webhook": {"url": receiver.url("/hook")}}),
    )
    .await;
    let message = assert_error(
        &reply,
        axum::http::StatusCode::BAD_REQUEST,
        "invalid_request",
    );
    assert!(message.contains("private address"), "{message}");
    // A name that resolves there: saved (names are checked at each send),
    // then refused at send, never reaching the receiver.
    let url = format!("http://localhost:{}/hook", receiver.port());
    create(
        &t,
        json!({"name": "by-name", "when": {"states": ["failed"]}, "webhook": {"url": url}}),
    )
    .await;
    let job = id_of(&run_sh(r, "exit 1").await);
    let d = &settled_deliveries(&t, job, 1).await[0];
    assert_eq!(d["state"], "failed");
    assert!(
        d["last_error"]
            .as_str()
            .unwrap()
            .contains("private address"),
        "{d}"
    );
    assert!(receiver.received().is_empty());
    t.shutdown().await;
}

async fn an_email_rule_sends_through_smtp_and_a_refusal_is_final(db: TestDatabase) {
    let smtp = SmtpServer::start().await;
    let t = start_app_with(db, 2, joblog_api::ApiOptions::default(), |e| {
        e.notify.smtp_url = Some(smtp.url());
        e.notify.smtp_from = "joblog@example.com".into();
        e.notify.public_url = Some("https://joblog.example.com".into());
    })
    .await;
    let r = &t.router;
    create(
        &t,
        json!({"name": "mail", "when": {"states": ["failed"]},
               "email": {"to": ["ops@example.com", "oncall@example.com"]}}),
    )
    .await;
    let id = id_of(&run_sh(r, "echo '<b>bold</b> & more' >&2; exit 5").await);
    let d = &settled_deliveries(&t, id, 1).await[0];
    assert_eq!(
        (d["state"].as_str(), d["last_status"].as_u64()),
        (Some("delivered"), Some(250))
    );
    let mail = &smtp.wait_for(1).await[0];
    assert_eq!(mail.from, "joblog@example.com");
    assert_eq!(mail.to, ["ops@example.com", "oncall@example.com"]);
    let subject = mail.header("subject").unwrap();
    assert!(
        subject.contains(&format!("job {id} failed with exit code 5")),
        "{subject}"
    );
    assert_eq!(mail.header("joblog-delivery"), Some(d["id"].to_string()));
    assert!(
        mail.data.contains("text/plain") && mail.data.contains("text/html"),
        "{}",
        mail.data
    );
    let html = mail.part("text/html").expect("an HTML part");
    assert!(
        html.contains("[1] &lt;b&gt;bold&lt;/b&gt; &amp; more"),
        "escaped: {html}"
    );
    assert!(!html.contains("<b>bold"), "output never becomes HTML");
    let text = mail.part("text/plain").expect("a text part");
    assert!(text.contains("[1] <b>bold</b> & more"), "{text}");
    // A permanent refusal (550) fails the delivery at once.
    smtp.answer_next(&[550]);
    let refused = id_of(&run_sh(r, "exit 6").await);
    let d = &settled_deliveries(&t, refused, 1).await[0];
    assert_eq!(
        (d["state"].as_str(), d["attempts"].as_u64()),
        (Some("failed"), Some(1))
    );
    assert_eq!(d["last_status"], 550);
    t.shutdown().await;
}
