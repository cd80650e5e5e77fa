//! People: users managed by admins, signing in with a password (a session
//! cookie and its CSRF token), the limits on failed sign-ins, signing out,
//! revoking, and what ends a session: idleness, its lifetime, its user
//! disabled, deleted or given a new password.

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use joblog_api::{ApiOptions, SessionOptions};
use joblog_store::testing::TestDatabase;
use serde_json::{json, Value};

use crate::common::*;

pub const BOOTSTRAP: &str = "bootstrap-token-for-the-session-tests-012345";
pub const PASSWORD: &str = "correct horse battery";

joblog_store::backend_tests! {
    a_signed_in_browser_is_known_by_its_cookie_in_every_tab,
    a_change_by_cookie_needs_the_sessions_csrf_token,
    a_failed_sign_in_never_tells_whether_the_name_exists_and_failures_are_limited,
    signing_out_or_a_revocation_ends_a_session_and_only_admins_end_others,
    disabling_deleting_or_a_new_password_ends_sessions_and_a_new_role_applies_at_once,
    sessions_end_when_idle_or_at_their_lifetime,
    users_are_checked_listed_without_passwords_and_admins_cannot_lock_themselves_out,
    an_open_stream_ends_when_its_session_does,
}

/// How a test's request is authenticated.
#[derive(Debug, Clone)]
pub enum Caller {
    Token(String),
    /// The session cookie's value and its CSRF token.
    Session {
        cookie: String,
        csrf: String,
    },
    /// The cookie alone, as a page of another site would send it.
    CookieOnly(String),
    Nobody,
}

pub fn request_as(method: &str, uri: &str, caller: &Caller, body: Option<&Value>) -> Request<Body> {
    let mut req = Request::builder()
        .method(Method::from_bytes(method.as_bytes()).unwrap())
        .uri(uri);
    match caller {
        Caller::Token(t) => req = req.header(header::AUTHORIZATION, format!("Bearer {t}")),
        Caller::Session { cookie, csrf } => {
            req = req
                .header(header::COOKIE, format!("joblog_session={cookie}"))
                .header("x-csrf-token", csrf.as_str())
        }
        Caller::CookieOnly(cookie) => {
            req = req.header(header::COOKIE, format!("joblog_session={cookie}"))
        }
        Caller::Nobody => {}
    }
    match body {
        Some(b) => req
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(b.to_string()))
            .unwrap(),
        None => req.body(Body::empty()).unwrap(),
    }
}

pub async fn call(
    t: &TestApp,
    method: &str,
    uri: &str,
    caller: &Caller,
    body: Option<&Value>,
) -> Reply {
    send(&t.router, request_as(method, uri, caller, body)).await
}

fn admin() -> Caller {
    Caller::Token(BOOTSTRAP.into())
}

pub async fn add_user(t: &TestApp, name: &str, role: &str) {
    add_user_by(t, BOOTSTRAP, name, role).await
}

/// Makes a user with [`PASSWORD`], as the admin whose token is `by`.
pub async fn add_user_by(t: &TestApp, by: &str, name: &str, role: &str) {
    let body = json!({"name": name, "password": PASSWORD, "role": role});
    let by = Caller::Token(by.into());
    let reply = call(t, "POST", "/api/v1/users", &by, Some(&body)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
}

/// Signs in; the answer and the session as a [`Caller`].
async fn sign_in_answer(
    t: &TestApp,
    name: &str,
    password: &str,
) -> (axum::response::Response, Value) {
    use tower::ServiceExt;
    let body = json!({"name": name, "password": password});
    let response = t
        .router
        .clone()
        .oneshot(request_as(
            "POST",
            "/api/v1/session",
            &Caller::Nobody,
            Some(&body),
        ))
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let bytes = http_body_util::BodyExt::collect(body)
        .await
        .unwrap()
        .to_bytes();
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (
        axum::response::Response::from_parts(parts, Body::empty()),
        json,
    )
}

/// Signs `name` in with [`PASSWORD`].
pub async fn sign_in(t: &TestApp, name: &str) -> Caller {
    let (response, json) = sign_in_answer(t, name, PASSWORD).await;
    assert_eq!(response.status(), StatusCode::OK, "{json}");
    let cookie = set_cookie(&response);
    let value = cookie
        .strip_prefix("joblog_session=")
        .and_then(|c| c.split(';').next())
        .unwrap()
        .to_string();
    Caller::Session {
        cookie: value,
        csrf: json["csrf_token"].as_str().unwrap().to_string(),
    }
}

/// `caller`'s session no longer works: a read gets `401 unauthorized`.
async fn assert_ended(t: &TestApp, caller: &Caller) -> String {
    let reply = call(t, "GET", "/api/v1/jobs", caller, None).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "unauthorized")
}

fn set_cookie(response: &axum::response::Response) -> String {
    response
        .headers()
        .get(header::SET_COOKIE)
        .expect("a Set-Cookie")
        .to_str()
        .unwrap()
        .to_string()
}

async fn start(db: TestDatabase, sessions: SessionOptions) -> TestApp {
    let options = ApiOptions {
        token: Some(BOOTSTRAP.into()),
        sessions,
        ..ApiOptions::default()
    };
    start_app_with(db, 2, options, |_| {}).await
}

async fn a_signed_in_browser_is_known_by_its_cookie_in_every_tab(db: TestDatabase) {
    let t = start(db, SessionOptions::default()).await;
    add_user(&t, "ada", "operator").await;
    let (response, json) = sign_in_answer(&t, "ada", PASSWORD).await;
    assert_eq!(response.status(), StatusCode::OK, "{json}");
    let cookie = set_cookie(&response);
    for part in ["Path=/", "HttpOnly", "SameSite=Strict", "Max-Age=604800"] {
        assert!(cookie.contains(part), "{cookie}");
    }
    assert!(!cookie.contains("Secure"), "served over HTTP: {cookie}");
    assert!(cookie.starts_with("joblog_session=js_"), "{cookie}");
    assert_eq!(
        (json["name"].as_str(), json["role"].as_str()),
        (Some("ada"), Some("operator"))
    );
    let me = sign_in(&t, "ada").await;
    let Caller::Session { csrf, .. } = &me else {
        unreachable!()
    };
    // Any tab: the cookie alone says who, and whoami gives the CSRF token.
    let who = call(&t, "GET", "/api/v1/whoami", &me, None).await.json();
    assert_eq!(
        who,
        json!({"name": "ada", "role": "operator", "via": "session", "csrf_token": csrf})
    );
    let token = call(&t, "GET", "/api/v1/whoami", &admin(), None)
        .await
        .json();
    assert_eq!(
        token,
        json!({"name": "bootstrap", "role": "admin", "via": "bootstrap"})
    );
    // Two sign-ins are two sessions, each with its own CSRF token.
    let Caller::Session { csrf: first, .. } = sign_in(&t, "ada").await else {
        unreachable!()
    };
    assert_ne!(&first, csrf);
    let mine = call(&t, "GET", "/api/v1/sessions", &me, None).await.json();
    let sessions = mine["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 3, "{mine}");
    assert_eq!(
        sessions
            .iter()
            .filter(|s| s["current"] == json!(true))
            .count(),
        1
    );
    let user = call(&t, "GET", "/api/v1/users/ada", &admin(), None)
        .await
        .json();
    assert!(user["last_sign_in_at"].is_string(), "{user}");
    t.shutdown().await;
}

async fn a_change_by_cookie_needs_the_sessions_csrf_token(db: TestDatabase) {
    let t = start(db, SessionOptions::default()).await;
    add_user(&t, "ada", "operator").await;
    let me = sign_in(&t, "ada").await;
    let Caller::Session { cookie, .. } = &me else {
        unreachable!()
    };
    let job = json!({"command": ["true"]});
    let bare = call(
        &t,
        "POST",
        "/api/v1/jobs",
        &Caller::CookieOnly(cookie.clone()),
        Some(&job),
    )
    .await;
    assert_error(&bare, StatusCode::FORBIDDEN, "csrf_token_missing");
    let Caller::Session { csrf: other, .. } = sign_in(&t, "ada").await else {
        unreachable!()
    };
    let wrong = Caller::Session {
        cookie: cookie.clone(),
        csrf: other,
    };
    let reply = call(&t, "POST", "/api/v1/jobs", &wrong, Some(&job)).await;
    assert_error(&reply, StatusCode::FORBIDDEN, "csrf_token_invalid");
    let jobs = call(&t, "GET", "/api/v1/jobs", &admin(), None).await.json();
    assert_eq!(
        jobs["jobs"],
        json!([]),
        "nothing was queued by a refused change"
    );
    // Reads need no CSRF token; a change with it is made, as the user.
    let reply = call(
        &t,
        "GET",
        "/api/v1/jobs",
        &Caller::CookieOnly(cookie.clone()),
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply = call(&t, "POST", "/api/v1/jobs", &me, Some(&job)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    // A token's changes need none.
    let reply = call(&t, "POST", "/api/v1/jobs", &admin(), Some(&job)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    t.shutdown().await;
}

async fn a_failed_sign_in_never_tells_whether_the_name_exists_and_failures_are_limited(
    db: TestDatabase,
) {
    let t = start(db, SessionOptions::default()).await;
    add_user(&t, "ada", "viewer").await;
    add_user(&t, "bob", "viewer").await;
    let (wrong, wrong_body) = sign_in_answer(&t, "ada", "not the password").await;
    let (nobody, nobody_body) = sign_in_answer(&t, "nobody", "not the password").await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        (nobody.status(), &nobody_body),
        (wrong.status(), &wrong_body)
    );
    assert_eq!(wrong_body["error"]["code"], json!("sign_in_failed"));
    assert!(!wrong_body.to_string().contains("not the password"));
    assert!(wrong.headers().get(header::SET_COOKIE).is_none());
    // Five failures of a name hold it, even with the right password.
    for _ in 1..5 {
        sign_in_answer(&t, "ada", "not the password").await;
    }
    let (held, body) = sign_in_answer(&t, "ada", PASSWORD).await;
    assert_eq!(held.status(), StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(body["error"]["code"], json!("too_many_sign_ins"));
    let wait: u64 = held.headers()[header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=900).contains(&wait), "{wait}");
    // Another name is not held by ada's failures.
    sign_in(&t, "bob").await;
    // A disabled user's right password says so; a wrong one says nothing.
    let off = json!({"disabled": true});
    call(&t, "PATCH", "/api/v1/users/bob", &admin(), Some(&off)).await;
    let (disabled, body) = sign_in_answer(&t, "bob", PASSWORD).await;
    assert_eq!(disabled.status(), StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], json!("user_disabled"));
    let (_, body) = sign_in_answer(&t, "bob", "not the password").await;
    assert_eq!(body["error"]["code"], json!("sign_in_failed"));
    t.shutdown().await;
}

async fn signing_out_or_a_revocation_ends_a_session_and_only_admins_end_others(db: TestDatabase) {
    let t = start(db, SessionOptions::default()).await;
    add_user(&t, "ada", "viewer").await;
    add_user(&t, "root", "admin").await;
    let tab = sign_in(&t, "ada").await;
    let Caller::Session { cookie, .. } = &tab else {
        unreachable!()
    };
    let other = sign_in(&t, "ada").await;
    // Signing out answers a cleared cookie and ends the session.
    let out = {
        use tower::ServiceExt;
        let req = request_as("DELETE", "/api/v1/session", &tab, None);
        t.router.clone().oneshot(req).await.unwrap()
    };
    assert_eq!(out.status(), StatusCode::NO_CONTENT);
    assert!(set_cookie(&out).starts_with("joblog_session=; Path=/; Max-Age=0"));
    let message = assert_ended(&t, &Caller::CookieOnly(cookie.clone())).await;
    assert!(message.contains("session ended"), "{message}");
    // The other session goes on; a token cannot sign out.
    assert_eq!(
        call(&t, "GET", "/api/v1/jobs", &other, None).await.status,
        StatusCode::OK
    );
    let reply = call(&t, "DELETE", "/api/v1/session", &admin(), None).await;
    assert_error(&reply, StatusCode::CONFLICT, "no_session");
    // Ada sees only her sessions and cannot end another's.
    let root = sign_in(&t, "root").await;
    let listed = call(&t, "GET", "/api/v1/sessions", &root, None)
        .await
        .json();
    let root_id = listed["sessions"][0]["id"].as_str().unwrap().to_string();
    let reply = call(
        &t,
        "DELETE",
        &format!("/api/v1/sessions/{root_id}"),
        &other,
        None,
    )
    .await;
    assert_error(&reply, StatusCode::NOT_FOUND, "session_not_found");
    let reply = call(&t, "GET", "/api/v1/sessions?all=true", &other, None).await;
    assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    // An admin lists everyone's and ends ada's.
    let all = call(&t, "GET", "/api/v1/sessions?all=true", &admin(), None)
        .await
        .json();
    let users: Vec<&str> = all["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["user"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["ada", "root"], "{all}");
    let adas = call(&t, "GET", "/api/v1/sessions?user=ada", &root, None)
        .await
        .json();
    let ada_id = adas["sessions"][0]["id"].as_str().unwrap().to_string();
    let reply = call(
        &t,
        "DELETE",
        &format!("/api/v1/sessions/{ada_id}"),
        &root,
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT, "{}", reply.text());
    assert_ended(&t, &other).await;
    let reply = call(
        &t,
        "DELETE",
        &format!("/api/v1/sessions/{ada_id}"),
        &root,
        None,
    )
    .await;
    assert_error(&reply, StatusCode::NOT_FOUND, "session_not_found");
    t.shutdown().await;
}

async fn disabling_deleting_or_a_new_password_ends_sessions_and_a_new_role_applies_at_once(
    db: TestDatabase,
) {
    let t = start(db, SessionOptions::default()).await;
    add_user(&t, "ada", "viewer").await;
    let me = sign_in(&t, "ada").await;
    let job = json!({"command": ["true"]});
    let reply = call(&t, "POST", "/api/v1/jobs", &me, Some(&job)).await;
    assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    let promote = json!({"role": "operator"});
    let reply = call(&t, "PATCH", "/api/v1/users/ada", &admin(), Some(&promote)).await;
    assert_eq!(reply.json()["role"], json!("operator"));
    let reply = call(&t, "POST", "/api/v1/jobs", &me, Some(&job)).await;
    assert_eq!(
        reply.status,
        StatusCode::CREATED,
        "the same session, its new role"
    );
    // A new role keeps the session; a new password ends it.
    let new = json!({"password": "a brand new password"});
    let reply = call(&t, "PATCH", "/api/v1/users/ada", &admin(), Some(&new)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert!(!reply.text().contains("brand new"));
    assert_ended(&t, &me).await;
    let (old, _) = sign_in_answer(&t, "ada", PASSWORD).await;
    assert_eq!(old.status(), StatusCode::UNAUTHORIZED, "the old password");
    let (_, body) = sign_in_answer(&t, "ada", "a brand new password").await;
    assert_eq!(body["name"], json!("ada"), "{body}");
    // Disabling ends every session of the user.
    let again = json!({"password": PASSWORD});
    call(&t, "PATCH", "/api/v1/users/ada", &admin(), Some(&again)).await;
    let me = sign_in(&t, "ada").await;
    let off = json!({"disabled": true});
    let reply = call(&t, "PATCH", "/api/v1/users/ada", &admin(), Some(&off)).await;
    assert_eq!(reply.json()["disabled"], json!(true));
    assert_ended(&t, &me).await;
    // And so does deleting.
    let on = json!({"disabled": false});
    call(&t, "PATCH", "/api/v1/users/ada", &admin(), Some(&on)).await;
    let me = sign_in(&t, "ada").await;
    let reply = call(&t, "DELETE", "/api/v1/users/ada", &admin(), None).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    assert_ended(&t, &me).await;
    let all = call(&t, "GET", "/api/v1/sessions?all=true", &admin(), None)
        .await
        .json();
    assert_eq!(all["sessions"], json!([]), "no session outlives its user");
    t.shutdown().await;
}

async fn sessions_end_when_idle_or_at_their_lifetime(db: TestDatabase) {
    let idle = SessionOptions {
        idle_timeout: Duration::from_millis(600),
        ..SessionOptions::default()
    };
    let t = start(db, idle).await;
    add_user(&t, "ada", "viewer").await;
    let me = sign_in(&t, "ada").await;
    assert_eq!(
        call(&t, "GET", "/api/v1/jobs", &me, None).await.status,
        StatusCode::OK
    );
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_ended(&t, &me).await;
    t.shutdown().await;
}

async fn users_are_checked_listed_without_passwords_and_admins_cannot_lock_themselves_out(
    db: TestDatabase,
) {
    let t = start(db, SessionOptions::default()).await;
    let bad = [
        (
            json!({"name": "a b", "password": PASSWORD, "role": "viewer"}),
            "name:",
        ),
        (
            json!({"name": "ada", "password": "too-short", "role": "viewer"}),
            "at least 12 characters",
        ),
    ];
    for (body, says) in bad {
        let reply = call(&t, "POST", "/api/v1/users", &admin(), Some(&body)).await;
        let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
        assert!(
            message.contains(says) && !message.contains("too-short"),
            "{message}"
        );
    }
    let unknown = json!({"name": "ada", "password": PASSWORD, "role": "root"});
    let reply = call(&t, "POST", "/api/v1/users", &admin(), Some(&unknown)).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());
    add_user(&t, "root", "admin").await;
    add_user(&t, "ada", "viewer").await;
    let again = json!({"name": "ada", "password": PASSWORD, "role": "admin"});
    let reply = call(&t, "POST", "/api/v1/users", &admin(), Some(&again)).await;
    assert_error(&reply, StatusCode::CONFLICT, "user_exists");
    // Users and tokens never share a name: the audit trail tells them
    // apart by it.
    let token = json!({"name": "ada", "role": "viewer"});
    let reply = call(&t, "POST", "/api/v1/tokens", &admin(), Some(&token)).await;
    let message = assert_error(&reply, StatusCode::CONFLICT, "token_exists");
    assert!(message.contains("a user is named"), "{message}");
    let token = json!({"name": "ci", "role": "viewer"});
    let reply = call(&t, "POST", "/api/v1/tokens", &admin(), Some(&token)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let user = json!({"name": "ci", "password": PASSWORD, "role": "viewer"});
    let reply = call(&t, "POST", "/api/v1/users", &admin(), Some(&user)).await;
    let message = assert_error(&reply, StatusCode::CONFLICT, "user_exists");
    assert!(message.contains("an API token is named"), "{message}");
    let list = call(&t, "GET", "/api/v1/users", &admin(), None).await;
    assert!(!list.text().contains("argon2") && !list.text().contains(PASSWORD));
    let users = list.json();
    let names: Vec<&str> = users["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ada", "root"]);
    let root = sign_in(&t, "root").await;
    for (method, body) in [
        ("PATCH", Some(json!({"role": "viewer"}))),
        ("PATCH", Some(json!({"disabled": true}))),
        ("DELETE", None),
    ] {
        let reply = call(&t, method, "/api/v1/users/root", &root, body.as_ref()).await;
        let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
        assert!(message.contains("yourself"), "{message}");
    }
    let reply = call(&t, "DELETE", "/api/v1/users/ada", &root, None).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    for (method, uri) in [
        ("GET", "/api/v1/users/ada"),
        ("DELETE", "/api/v1/users/ada"),
        ("GET", "/api/v1/users/no%00body"),
    ] {
        let reply = call(&t, method, uri, &root, None).await;
        assert_error(&reply, StatusCode::NOT_FOUND, "user_not_found");
    }
    t.shutdown().await;
}

async fn an_open_stream_ends_when_its_session_does(db: TestDatabase) {
    use tower::ServiceExt;
    let t = start(db, SessionOptions::default()).await;
    add_user(&t, "ada", "viewer").await;
    let me = sign_in(&t, "ada").await;
    let feed = t
        .router
        .clone()
        .oneshot(request_as("GET", "/api/v1/events", &me, None))
        .await
        .unwrap();
    assert_eq!(feed.status(), StatusCode::OK);
    let reply = call(&t, "DELETE", "/api/v1/session", &me, None).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    let body = http_body_util::BodyExt::collect(feed.into_body());
    let ended = tokio::time::timeout(PATIENCE, body).await;
    assert!(
        ended.is_ok(),
        "the feed of a signed-out session stayed open"
    );
    t.shutdown().await;
}
