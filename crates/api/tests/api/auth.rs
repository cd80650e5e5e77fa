//! Tokens, roles and the guards against browsers being used as proxies:
//! every route for every role, the token lifecycle, and the hostile
//! requests a probe of the server found.

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use joblog_api::routes::ROUTES;
use joblog_api::rules::Access;
use joblog_core::Role;
use joblog_store::testing::TestDatabase;
use serde_json::{json, Value};

use crate::common::*;
use crate::sessions::{self, request_as, Caller};

const BOOTSTRAP: &str = "bootstrap-token-for-the-tests-0123456789";

joblog_store::backend_tests! {
    every_route_admits_exactly_the_roles_its_rule_names,
    tokens_are_shown_once_stored_hashed_listed_and_revoked,
    expired_unknown_and_malformed_tokens_get_401_with_a_challenge,
    without_a_configured_token_requests_without_one_are_admitted,
    cross_site_requests_and_foreign_hosts_are_refused,
    a_wrong_method_gets_a_json_405,
    open_streams_end_when_their_token_is_revoked_or_expires,
}

/// A request with an optional bearer token and a JSON body (for methods
/// that take one).
fn request(method: &str, uri: &str, token: Option<&str>, body: Option<&Value>) -> Request<Body> {
    let caller = match token {
        Some(t) => Caller::Token(t.to_string()),
        None => Caller::Nobody,
    };
    request_as(method, uri, &caller, body)
}

async fn create_token(t: &TestApp, by: &str, body: Value) -> Reply {
    send(
        &t.router,
        request("POST", "/api/v1/tokens", Some(by), Some(&body)),
    )
    .await
}

/// Creates a token and returns its text.
async fn token_of_role(t: &TestApp, name: &str, role: Role) -> String {
    let reply = create_token(t, BOOTSTRAP, json!({"name": name, "role": role.name()})).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.text());
    reply.json()["token"].as_str().unwrap().to_string()
}

/// Each route of the rules table, asked by each role, with a token and
/// signed in (cookie and CSRF token): refused with 403 (naming the role
/// needed) exactly when the role is below the rule's, and never refused
/// otherwise; without either, 401 unless public. The requests name a job,
/// a token, a user and a session that do not exist and carry an empty
/// JSON body, so an admitted request does nothing (404 or 400).
async fn every_route_admits_exactly_the_roles_its_rule_names(db: TestDatabase) {
    let t = start_app_with_token(db, 1, Some(BOOTSTRAP)).await;
    // Each role as a token and as a person signed in.
    let mut callers = Vec::new();
    for role in Role::ALL {
        let token = token_of_role(&t, &format!("t-{role}"), role).await;
        callers.push((role, Caller::Token(token)));
        let name = format!("u-{role}");
        sessions::add_user_by(&t, BOOTSTRAP, &name, role.name()).await;
        callers.push((role, sessions::sign_in(&t, &name).await));
    }
    assert!(ROUTES.len() >= 16, "{} routes", ROUTES.len());
    for route in ROUTES {
        let (method, path, access) = (route.method.as_str(), route.path, &route.access);
        let uri = path
            .replace("{id}", "999999")
            .replace("{name}", "no-such-token");
        let body = (method != "GET" && method != "DELETE").then(|| json!({}));
        let anonymous = send(&t.router, request(method, &uri, None, body.as_ref())).await;
        match access {
            // Public: answered, not refused (signing in with `{}` is a
            // 400 naming the missing field; single sign-on, which this
            // server has not, a 404 saying so).
            Access::Public => {
                let unconfigured = path.starts_with("/api/v1/session/oidc")
                    && anonymous.status == StatusCode::NOT_FOUND
                    && anonymous
                        .text()
                        .contains("single sign-on is not configured");
                assert!(
                    anonymous.status.is_success()
                        || anonymous.status == StatusCode::BAD_REQUEST
                        || unconfigured,
                    "{method} {path} is public: {}",
                    anonymous.status
                );
                continue;
            }
            Access::Role(..) => {
                assert_error(&anonymous, StatusCode::UNAUTHORIZED, "unauthorized");
            }
        }
        let Access::Role(needed, _) = access else {
            unreachable!()
        };
        for (role, caller) in callers.iter_mut() {
            let reply = send(&t.router, request_as(method, &uri, caller, body.as_ref())).await;
            // Signed out: signed in again for the routes after this one.
            if (method, path) == ("DELETE", "/api/v1/session") && reply.status.is_success() {
                *caller = sessions::sign_in(&t, &format!("u-{role}")).await;
            }
            let role = &*role;
            if role < needed {
                let message = assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
                assert!(
                    message.contains(&format!("needs the {needed} role"))
                        && message.contains(&format!("has the {role} role")),
                    "{method} {path} as {role} ({caller:?}): {message}"
                );
            } else {
                assert!(
                    reply.status != StatusCode::FORBIDDEN
                        && reply.status != StatusCode::UNAUTHORIZED,
                    "{method} {path} as {role} ({caller:?}): {} {}",
                    reply.status,
                    String::from_utf8_lossy(&reply.body)
                );
            }
        }
    }
    // A viewer cannot submit: nothing was queued by any refused request.
    let jobs = send(
        &t.router,
        request("GET", "/api/v1/jobs", Some(BOOTSTRAP), None),
    )
    .await;
    assert_eq!(jobs.json()["jobs"], json!([]));
    t.shutdown().await;
}

async fn tokens_are_shown_once_stored_hashed_listed_and_revoked(db: TestDatabase) {
    let t = start_app_with_token(db, 1, Some(BOOTSTRAP)).await;
    let reply = create_token(
        &t,
        BOOTSTRAP,
        json!({"name": "ci", "role": "operator", "expires_s": 3600}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let created = reply.json();
    let token = created["token"].as_str().unwrap().to_string();
    assert!(token.starts_with("jl_") && token.len() == 46, "{token}");
    assert_eq!(created["name"], "ci");
    assert_eq!(created["role"], "operator");
    assert!(created["expires_at"].is_string(), "{created}");

    // The operator token submits; the job is run.
    let reply = send(
        &t.router,
        request(
            "POST",
            "/api/v1/jobs",
            Some(&token),
            Some(&json!({"command": ["true"]})),
        ),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());

    // Listed without its text or hash; its use is noted (written in the
    // background, so wait for it).
    let listed = eventually("the token's use to be noted", PATIENCE, || async {
        let list = send(
            &t.router,
            request("GET", "/api/v1/tokens", Some(BOOTSTRAP), None),
        )
        .await;
        assert_eq!(list.status, StatusCode::OK);
        let text = list.text();
        assert!(!text.contains(&token) && !text.contains("hash"), "{text}");
        let listed = list.json()["tokens"][0].clone();
        if listed["last_used_at"].is_string() {
            Ok(listed)
        } else {
            Err(listed)
        }
    })
    .await;
    assert_eq!(listed["name"], "ci");
    assert_eq!(listed["role"], "operator");

    // Names are unique and plain; roles are the three.
    let again = create_token(&t, BOOTSTRAP, json!({"name": "ci", "role": "viewer"})).await;
    assert_error(&again, StatusCode::CONFLICT, "token_exists");
    let bad = create_token(&t, BOOTSTRAP, json!({"name": "a b", "role": "viewer"})).await;
    let message = assert_error(&bad, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(message.starts_with("name:"), "{message}");
    let bad = create_token(&t, BOOTSTRAP, json!({"name": "x", "role": "root"})).await;
    assert_error(&bad, StatusCode::BAD_REQUEST, "invalid_json");
    let bad = create_token(
        &t,
        BOOTSTRAP,
        json!({"name": "x", "role": "viewer", "expires_s": -1}),
    )
    .await;
    let message = assert_error(&bad, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(message.starts_with("expires_s:"), "{message}");

    // An operator cannot make itself an admin.
    let escalate = create_token(&t, &token, json!({"name": "mine", "role": "admin"})).await;
    assert_error(&escalate, StatusCode::FORBIDDEN, "forbidden");

    // Revoked: gone at once.
    let revoke = send(
        &t.router,
        request("DELETE", "/api/v1/tokens/ci", Some(BOOTSTRAP), None),
    )
    .await;
    assert_eq!(revoke.status, StatusCode::OK, "{}", revoke.text());
    assert_eq!(revoke.json(), json!({"revoked": "ci"}));
    let after = send(
        &t.router,
        request("GET", "/api/v1/jobs", Some(&token), None),
    )
    .await;
    assert_error(&after, StatusCode::UNAUTHORIZED, "unauthorized");
    let twice = send(
        &t.router,
        request("DELETE", "/api/v1/tokens/ci", Some(BOOTSTRAP), None),
    )
    .await;
    assert_error(&twice, StatusCode::NOT_FOUND, "token_not_found");
    // A name no token can have (PostgreSQL would refuse its NUL).
    let impossible = send(
        &t.router,
        request("DELETE", "/api/v1/tokens/a%00b", Some(BOOTSTRAP), None),
    )
    .await;
    assert_error(&impossible, StatusCode::NOT_FOUND, "token_not_found");
    t.shutdown().await;
}

async fn expired_unknown_and_malformed_tokens_get_401_with_a_challenge(db: TestDatabase) {
    let t = start_app_with_token(db, 1, Some(BOOTSTRAP)).await;
    let reply = create_token(
        &t,
        BOOTSTRAP,
        json!({"name": "brief", "role": "admin", "expires_s": 0.05}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED);
    let brief = reply.json()["token"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let valid_looking = format!("jl_{}", "A".repeat(43));
    let mut wrong_bootstrap = BOOTSTRAP.to_string();
    wrong_bootstrap.pop();
    for (auth, why) in [
        (None, "needs an API token"),
        (Some(format!("Bearer {brief}")), "expired"),
        (Some(format!("Bearer {valid_looking}")), "unknown"),
        (Some(format!("Bearer {wrong_bootstrap}")), "unknown"),
        (Some(format!("Basic {BOOTSTRAP}")), "Bearer <token>"),
        (Some(BOOTSTRAP.to_string()), "Bearer <token>"),
    ] {
        let mut req = Request::get("/api/v1/jobs");
        if let Some(auth) = &auth {
            req = req.header(header::AUTHORIZATION, auth);
        }
        let reply = send(&t.router, req.body(Body::empty()).unwrap()).await;
        let message = assert_error(&reply, StatusCode::UNAUTHORIZED, "unauthorized");
        assert!(message.contains(why), "{auth:?}: {message}");
        assert_eq!(
            reply.www_authenticate.as_deref(),
            Some("Bearer realm=\"joblog\""),
            "{auth:?}"
        );
    }
    t.shutdown().await;
}

async fn without_a_configured_token_requests_without_one_are_admitted(db: TestDatabase) {
    let t = start_app(db, 1).await;
    // No token: admitted as admin (a loopback server, as before tokens).
    let reply = create_token(&t, "", json!({"name": "v", "role": "viewer"})).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "unauthorized");
    let reply = send(
        &t.router,
        request(
            "POST",
            "/api/v1/tokens",
            None,
            Some(&json!({"name": "v", "role": "viewer"})),
        ),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let viewer = reply.json()["token"].as_str().unwrap().to_string();
    // A request that carries a token is held to that token's role.
    let reply = send(
        &t.router,
        request(
            "POST",
            "/api/v1/jobs",
            Some(&viewer),
            Some(&json!({"command": ["true"]})),
        ),
    )
    .await;
    assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    assert_eq!(get_json(&t.router, "/api/v1/jobs").await["jobs"], json!([]));
    t.shutdown().await;
}

/// The probe's high finding: a web page could make the operator's browser
/// run a command on a loopback server with no token (a `text/plain` POST
/// from a foreign origin), or reach it through DNS rebinding.
async fn cross_site_requests_and_foreign_hosts_are_refused(db: TestDatabase) {
    let t = start_app(db, 1).await;
    let job = json!({"command": ["touch", t.path("pwned").to_str().unwrap()]}).to_string();
    let attempts: Vec<(Request<Body>, StatusCode, &str)> = vec![
        (
            Request::post("/api/v1/jobs")
                .header(header::CONTENT_TYPE, "text/plain")
                .body(Body::from(job.clone()))
                .unwrap(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (
            Request::post("/api/v1/jobs")
                .body(Body::from(job.clone()))
                .unwrap(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (
            Request::post("/api/v1/jobs")
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::HOST, "127.0.0.1:7878")
                .header(header::ORIGIN, "http://attacker.example")
                .body(Body::from(job.clone()))
                .unwrap(),
            StatusCode::FORBIDDEN,
            "cross_site_request",
        ),
        (
            Request::post("/api/v1/jobs")
                .header(header::CONTENT_TYPE, "application/json")
                .header("sec-fetch-site", "cross-site")
                .body(Body::from(job.clone()))
                .unwrap(),
            StatusCode::FORBIDDEN,
            "cross_site_request",
        ),
        (
            Request::post("/api/v1/jobs")
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::HOST, "attacker.example:7878")
                .body(Body::from(job.clone()))
                .unwrap(),
            StatusCode::MISDIRECTED_REQUEST,
            "host_not_allowed",
        ),
        (
            Request::get("/api/v1/jobs")
                .header(header::HOST, "attacker.example")
                .body(Body::empty())
                .unwrap(),
            StatusCode::MISDIRECTED_REQUEST,
            "host_not_allowed",
        ),
    ];
    for (req, status, code) in attempts {
        let what = format!("{} {:?}", req.method(), req.headers());
        let reply = send(&t.router, req).await;
        assert_eq!(reply.status, status, "{what}: {}", reply.text());
        assert_error(&reply, status, code);
    }
    // The same server's own page may post.
    let reply = send(
        &t.router,
        Request::post("/api/v1/jobs")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::HOST, "127.0.0.1:7878")
            .header(header::ORIGIN, "http://127.0.0.1:7878")
            .header("sec-fetch-site", "same-origin")
            .body(Body::from(r#"{"command": ["true"]}"#))
            .unwrap(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let jobs = get_json(&t.router, "/api/v1/jobs").await;
    assert_eq!(jobs["jobs"].as_array().unwrap().len(), 1, "{jobs}");
    assert!(!t.path("pwned").exists());
    // Reads from another site (`<img src=…/api/v1/backup>`) are refused
    // before anything is built; the server's pages and /healthz are not
    // state, and the same origin, a typed address or a non-browser read.
    let read = |path: &str, site: Option<&str>| {
        let mut req = Request::get(path);
        if let Some(site) = site {
            req = req.header("sec-fetch-site", site);
        }
        req.body(Body::empty()).unwrap()
    };
    for path in [
        "/api/v1/backup",
        "/api/v1/jobs",
        "/api/v1/audit",
        "/metrics",
    ] {
        for site in ["cross-site", "same-site"] {
            let reply = send(&t.router, read(path, Some(site))).await;
            assert_error(&reply, StatusCode::FORBIDDEN, "cross_site_request");
        }
    }
    for (path, site) in [
        ("/api/v1/jobs", Some("same-origin")),
        ("/api/v1/jobs", Some("none")),
        ("/api/v1/jobs", None),
        ("/healthz", Some("cross-site")),
        ("/", Some("cross-site")),
        ("/api/v1/openapi.json", Some("cross-site")),
    ] {
        let reply = send(&t.router, read(path, site)).await;
        assert_eq!(reply.status, StatusCode::OK, "{path} {site:?}");
    }
    t.shutdown().await;
}

async fn a_wrong_method_gets_a_json_405(db: TestDatabase) {
    let t = start_app(db, 1).await;
    let reply = send(&t.router, request("DELETE", "/api/v1/jobs", None, None)).await;
    assert_error(&reply, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
    let reply = send(&t.router, request("PUT", "/healthz", None, None)).await;
    assert_error(&reply, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
    t.shutdown().await;
}

/// Reads a response body until it ends; `None` if it is still open after
/// `within`.
async fn ends_within(response: axum::response::Response, within: Duration) -> Option<String> {
    use http_body_util::BodyExt;
    let body = response.into_body().collect();
    let bytes = tokio::time::timeout(within, body).await.ok()?.ok()?;
    Some(String::from_utf8_lossy(&bytes.to_bytes()).into_owned())
}

/// A live tail and a job feed opened with a token end once the token is
/// revoked (through the API) or expires; the bootstrap token's go on.
async fn open_streams_end_when_their_token_is_revoked_or_expires(db: TestDatabase) {
    use tower::ServiceExt;
    let t = start_app_with_token(db, 2, Some(BOOTSTRAP)).await;
    // A job that runs for the whole test: its tail never ends by itself.
    let job = send(
        &t.router,
        request(
            "POST",
            "/api/v1/jobs",
            Some(BOOTSTRAP),
            Some(&json!({"command": ["sleep", "60"]})),
        ),
    )
    .await;
    assert_eq!(job.status, StatusCode::CREATED, "{}", job.text());
    let id = job.json()["id"].as_i64().unwrap();
    let viewer = token_of_role(&t, "watcher", Role::Viewer).await;
    let reply = create_token(
        &t,
        BOOTSTRAP,
        json!({"name": "brief", "role": "viewer", "expires_s": 1.5}),
    )
    .await;
    let brief = reply.json()["token"].as_str().unwrap().to_string();
    let open = |token: String, uri: String| {
        let router = t.router.clone();
        async move {
            let response = router
                .oneshot(request("GET", &uri, Some(&token), None))
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{uri}");
            response
        }
    };
    let tail = format!("/api/v1/jobs/{id}/log/events");
    let streams = [
        ("revoked tail", open(viewer.clone(), tail.clone()).await),
        (
            "revoked feed",
            open(viewer.clone(), "/api/v1/events".into()).await,
        ),
        ("expiring tail", open(brief.clone(), tail.clone()).await),
        (
            "expiring feed",
            open(brief.clone(), "/api/v1/events".into()).await,
        ),
    ];
    let bootstrap_tail = open(BOOTSTRAP.into(), tail.clone()).await;
    let revoke = send(
        &t.router,
        request("DELETE", "/api/v1/tokens/watcher", Some(BOOTSTRAP), None),
    )
    .await;
    assert_eq!(revoke.status, StatusCode::OK, "{}", revoke.text());
    // The streams' bodies are first read only now, after the engine has
    // heard of the revocation: one that began watching for revocations
    // only then used to miss this one and stay open.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let ended = futures_util::future::join_all(
        streams
            .into_iter()
            .map(|(what, r)| async move { (what, ends_within(r, Duration::from_secs(20)).await) }),
    )
    .await;
    for (what, body) in ended {
        assert!(body.is_some(), "the {what} stayed open");
    }
    assert!(
        ends_within(bootstrap_tail, Duration::from_secs(1))
            .await
            .is_none(),
        "the bootstrap token's tail ended"
    );
    send(
        &t.router,
        request(
            "POST",
            &format!("/api/v1/jobs/{id}/cancel"),
            Some(BOOTSTRAP),
            Some(&json!({})),
        ),
    )
    .await;
    t.shutdown().await;
}
