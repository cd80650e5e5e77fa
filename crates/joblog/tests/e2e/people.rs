//! People on the real server: `joblog user` reading passwords from stdin,
//! signing in and out through HTTP with the audit trail's record of it
//! (and no password in any log), a session kept across a restart, and
//! a session shared by two nodes until it is signed out on one.

use std::io::Write;
use std::process::{Command, Stdio};

use joblog_store::testing::TestDatabase;
use joblog_testkit::{eventually, PATIENCE};
use serde_json::{json, Value};

use super::{Server, BIN};

const BOOTSTRAP: &str = "e2e-people-bootstrap-token-0123456789abc";
const PASSWORD: &str = "a long enough password";

/// The CLI with `input` on its stdin (not a terminal), as the admin.
fn cli_fed(server: &Server, input: &str, args: &[&str]) -> (i32, String, String) {
    let mut child = Command::new(BIN)
        .arg("--server")
        .arg(&server.url)
        .args(["--token", BOOTSTRAP])
        .args(args)
        .env_remove("JOBLOG_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running the joblog CLI");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A browser's session: its cookie and CSRF token.
struct Session {
    cookie: String,
    csrf: String,
}

async fn sign_in(server: &Server, name: &str, password: &str) -> Result<Session, (u16, Value)> {
    let reply = server
        .http
        .post(format!("{}/api/v1/session", server.url))
        .json(&json!({"name": name, "password": password}))
        .send()
        .await
        .unwrap();
    let status = reply.status().as_u16();
    let cookie = reply
        .headers()
        .get("set-cookie")
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_string());
    let body: Value = reply.json().await.unwrap();
    match cookie {
        Some(cookie) if status == 200 => Ok(Session {
            cookie,
            csrf: body["csrf_token"].as_str().unwrap().to_string(),
        }),
        _ => Err((status, body)),
    }
}

/// `method path` with the session's cookie (and its CSRF token on a
/// change); the status.
async fn with_session(server: &Server, s: &Session, method: &str, path: &str) -> u16 {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let plain = reqwest::Client::new();
    let mut req = plain
        .request(method.clone(), format!("{}{path}", server.url))
        .header("cookie", &s.cookie);
    if method != reqwest::Method::GET {
        req = req.header("x-csrf-token", &s.csrf);
    }
    req.send().await.unwrap().status().as_u16()
}

/// The audit trail's actions and actors, oldest first, once `action`
/// is among them.
async fn audit_once(server: &Server, action: &str) -> Vec<Value> {
    eventually(
        &format!("{action} in the audit trail"),
        PATIENCE,
        || async {
            let page: Value = server
                .get_json(&format!("/api/v1/audit?action={action}"))
                .await;
            let entries = page["entries"].as_array().cloned().unwrap_or_default();
            (!entries.is_empty()).then_some(entries)
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_are_managed_with_the_cli_and_sign_ins_are_audited_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--token", BOOTSTRAP])
        .await
        .with_token(BOOTSTRAP);
    // The password comes from stdin, never from the command line.
    let (code, out, err) = cli_fed(
        &server,
        &format!("{PASSWORD}\n"),
        &["user", "add", "ada", "--role", "operator"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("ada") && out.contains("operator") && out.contains("enabled"),
        "{out}"
    );
    assert!(!out.contains(PASSWORD) && !err.contains(PASSWORD));
    let (code, _, err) = cli_fed(&server, "", &["user", "add", "bob", "--role", "viewer"]);
    assert_eq!(code, 1);
    assert!(err.contains("no password on stdin"), "{err}");
    let (code, _, err) = cli_fed(
        &server,
        "short\n",
        &["user", "add", "bob", "--role", "viewer"],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("at least 12 characters") && !err.contains("short\n"),
        "{err}"
    );
    let (code, _, err) = cli_fed(&server, "", &["user", "set", "ada"]);
    assert_eq!(code, 2, "nothing to change is a usage error: {err}");

    // Signing in: a failure and a success, both in the trail.
    let (status, body) = sign_in(&server, "ada", "not her password")
        .await
        .err()
        .unwrap();
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (401, Some("sign_in_failed"))
    );
    let failed = audit_once(&server, "session.failed").await;
    assert_eq!(failed[0]["detail"]["user"], "ada");
    assert_eq!(failed[0]["detail"]["reason"], "wrong password");
    let ada = sign_in(&server, "ada", PASSWORD).await.ok().unwrap();
    let opened = audit_once(&server, "session.opened").await;
    assert_eq!(opened[0]["actor"], "ada");
    assert_eq!(
        with_session(&server, &ada, "GET", "/api/v1/jobs").await,
        200
    );

    // A restart keeps the session: it lives in the database.
    drop(server);
    let server = Server::start(dir.path(), &["--token", BOOTSTRAP])
        .await
        .with_token(BOOTSTRAP);
    assert_eq!(
        with_session(&server, &ada, "GET", "/api/v1/jobs").await,
        200
    );
    let (code, out, err) = cli_fed(&server, "", &["user", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("LAST SIGN-IN") && out.contains("ada"), "{out}");

    // A new password (from stdin) signs her out; signing out is audited.
    let (code, _, err) = cli_fed(
        &server,
        "another long password\n",
        &["user", "set", "ada", "--password"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        with_session(&server, &ada, "GET", "/api/v1/jobs").await,
        401
    );
    let ada = sign_in(&server, "ada", "another long password")
        .await
        .ok()
        .unwrap();
    assert_eq!(
        with_session(&server, &ada, "DELETE", "/api/v1/session").await,
        204
    );
    let closed = audit_once(&server, "session.closed").await;
    assert_eq!(closed[0]["actor"], "ada");
    let changed = audit_once(&server, "user.changed").await;
    assert_eq!(changed[0]["detail"]["new_password"], true);
    let (code, out, err) = cli_fed(&server, "", &["user", "remove", "ada"]);
    assert_eq!((code, out.trim()), (0, "removed user ada"), "{err}");

    // No password reached any of the server's logs.
    for entry in std::fs::read_dir(dir.path().join("logs")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for secret in [PASSWORD, "another long password", "not her password"] {
            assert!(
                !text.contains(secret),
                "{} holds a password",
                path.display()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_opened_on_one_node_works_on_another_until_signed_out_there() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let token = ["--token", BOOTSTRAP];
    let a = Server::node(dir.path(), db.url(), "people-a", &token)
        .await
        .with_token(BOOTSTRAP);
    let b = Server::node(dir.path(), db.url(), "people-b", &token)
        .await
        .with_token(BOOTSTRAP);
    let (code, _, err) = cli_fed(
        &a,
        &format!("{PASSWORD}\n"),
        &["user", "add", "ada", "--role", "viewer"],
    );
    assert_eq!(code, 0, "{err}");
    let ada = sign_in(&a, "ada", PASSWORD).await.ok().unwrap();
    assert_eq!(with_session(&b, &ada, "GET", "/api/v1/jobs").await, 200);
    assert_eq!(
        with_session(&b, &ada, "DELETE", "/api/v1/session").await,
        204
    );
    assert_eq!(with_session(&a, &ada, "GET", "/api/v1/jobs").await, 401);
}

/// The CLI with `token`, nothing on stdin (the suite's `cli`).
fn cli_as(server: &Server, token: &str, args: &[&str]) -> (i32, String, String) {
    super::cli(server, &[&["--token", token], args].concat())
}

/// Folders from the command line: a token limited to one submits there
/// and nowhere else, lists its folder's jobs only, and says so in `token
/// list`; a user's folders are set and lifted by `user set`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folders_limit_tokens_and_users_made_with_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--token", BOOTSTRAP])
        .await
        .with_token(BOOTSTRAP);
    let (code, token, err) = cli_as(
        &server,
        BOOTSTRAP,
        &[
            "token",
            "create",
            "--name",
            "team-a-ci",
            "--role",
            "viewer",
            "--folder",
            "team-a=operator",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let token = token.trim().to_string();
    let (code, out, err) = cli_as(&server, BOOTSTRAP, &["token", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("viewer (team-a=operator)"), "{out}");

    let (code, out, err) = cli_as(
        &server,
        &token,
        &["run", "--folder", "team-a", "--", "echo", "mine"],
    );
    assert_eq!((code, out.as_str()), (0, "mine\n"), "{err}");
    let (code, _, err) = cli_as(
        &server,
        &token,
        &["run", "--folder", "team-b", "--detach", "--", "true"],
    );
    assert_ne!(code, 0);
    assert!(err.contains("may not reach folder \"team-b\""), "{err}");
    let (code, _, err) = cli_as(
        &server,
        BOOTSTRAP,
        &["run", "--folder", "team-b", "--", "true"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = cli_as(&server, &token, &["run", "--folder", "a b", "--", "true"]);
    assert_eq!(code, 2, "a bad folder name is a usage error: {err}");

    let (code, out, err) = cli_as(&server, &token, &["jobs", "--json"]);
    assert_eq!(code, 0, "{err}");
    let jobs: Value = serde_json::from_str(&out).unwrap();
    let folders: Vec<&str> = jobs["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["folder"].as_str().unwrap())
        .collect();
    assert_eq!(folders, ["team-a"]);
    let (code, out, _) = cli_as(
        &server,
        BOOTSTRAP,
        &["jobs", "--folder", "team-b", "--json"],
    );
    assert_eq!(code, 0);
    let jobs: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(jobs["jobs"].as_array().unwrap().len(), 1, "{jobs}");

    let (code, out, err) = cli_fed(
        &server,
        &format!("{PASSWORD}\n"),
        &[
            "user",
            "add",
            "carol",
            "--role",
            "viewer",
            "--folder",
            "team-a=viewer",
            "--folder",
            "ops=operator",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("viewer (ops=operator, team-a=viewer)"),
        "{out}"
    );
    let (code, out, err) = cli_fed(&server, "", &["user", "set", "carol", "--all-folders"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("carol") && !out.contains("team-a"), "{out}");
}
