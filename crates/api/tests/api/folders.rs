//! Folders: every route asked by callers limited to folders, for objects
//! in their folder, in another and in none; what listings, the feed and
//! submissions let them see and do; and how tokens and users get their
//! folders.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use joblog_api::routes::ROUTES;
use joblog_api::rules::{Access, Reach};
use joblog_core::Role;
use joblog_store::testing::TestDatabase;
use serde_json::{json, Value};

use crate::common::*;
use crate::sessions::{self, call, Caller};

const BOOTSTRAP: &str = "bootstrap-token-for-the-folders-0123456789";

joblog_store::backend_tests! {
    every_route_admits_a_limited_caller_by_its_role_in_the_objects_folder,
    a_limited_caller_lists_submits_and_follows_only_its_folders,
    folders_of_tokens_and_users_are_checked_and_shown,
}

fn admin() -> Caller {
    Caller::Token(BOOTSTRAP.into())
}

/// Waits for the job to end, asking as the admin.
async fn finished(t: &TestApp, id: i64) {
    eventually("the job to end", PATIENCE, || async {
        let job = call(t, "GET", &format!("/api/v1/jobs/{id}"), &admin(), None)
            .await
            .json();
        match job["finished_at"].is_string() {
            true => Ok(()),
            false => Err(job),
        }
    })
    .await
}

/// A job in `folder` (none when `None`), run to its end.
async fn job_in(t: &TestApp, folder: Option<&str>) -> i64 {
    let mut body = json!({"command": ["sh", "-c", "echo in-a-folder"]});
    if let Some(f) = folder {
        body["folder"] = json!(f);
    }
    let reply = call(t, "POST", "/api/v1/jobs", &admin(), Some(&body)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let id = id_of(&reply.json());
    finished(t, id).await;
    id
}

/// A disabled schedule in `folder`.
async fn schedule_in(t: &TestApp, name: &str, folder: Option<&str>) -> i64 {
    let mut body =
        json!({"name": name, "cron": "0 0 1 1 *", "command": ["true"], "enabled": false});
    if let Some(f) = folder {
        body["folder"] = json!(f);
    }
    let reply = call(t, "POST", "/api/v1/schedules", &admin(), Some(&body)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    reply.json()["id"].as_i64().unwrap()
}

/// A token limited to `folders`, with `role` elsewhere.
async fn limited_token(t: &TestApp, name: &str, role: Role, folders: Value) -> Caller {
    let body = json!({"name": name, "role": role.name(), "folders": folders});
    let reply = call(t, "POST", "/api/v1/tokens", &admin(), Some(&body)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    assert_eq!(reply.json()["folders"], folders);
    Caller::Token(reply.json()["token"].as_str().unwrap().to_string())
}

/// A user limited to `folders`, signed in.
async fn limited_user(t: &TestApp, name: &str, role: Role, folders: Value) -> Caller {
    let body = json!({"name": name, "password": sessions::PASSWORD, "role": role.name(), "folders": folders});
    let reply = call(t, "POST", "/api/v1/users", &admin(), Some(&body)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    sessions::sign_in(t, name).await
}

/// Which object a request names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    Mine,
    Other,
    Nowhere,
}

/// Each route of the rules table asked by a token and a person limited to
/// folder `team-a`, as a viewer there and as an operator there (a viewer
/// elsewhere), for a job and a schedule in `team-a`, in `team-b` and in
/// no folder: a job or schedule out of reach is answered exactly as one
/// that does not exist (404, same message); within reach the role in its
/// folder decides (403 naming the folder when too low); a route over
/// every folder is refused; a filtered route lets in the best role of
/// the caller anywhere.
async fn every_route_admits_a_limited_caller_by_its_role_in_the_objects_folder(db: TestDatabase) {
    let t = start_app_with_token(db, 2, Some(BOOTSTRAP)).await;
    let jobs = BTreeMap::from([
        (Place::Mine, job_in(&t, Some("team-a")).await),
        (Place::Other, job_in(&t, Some("team-b")).await),
        (Place::Nowhere, job_in(&t, None).await),
    ]);
    let mut schedules = BTreeMap::new();
    for (place, name, folder) in [
        (Place::Mine, "s-mine", Some("team-a")),
        (Place::Other, "s-other", Some("team-b")),
        (Place::Nowhere, "s-nowhere", None),
    ] {
        schedules.insert(place, (schedule_in(&t, name, folder).await, name, folder));
    }
    let mut callers = Vec::new();
    for in_folder in [Role::Viewer, Role::Operator] {
        let folders = json!({"team-a": in_folder.name()});
        let token =
            limited_token(&t, &format!("t-{in_folder}"), Role::Viewer, folders.clone()).await;
        callers.push((in_folder, token));
        let user = limited_user(&t, &format!("u-{in_folder}"), Role::Viewer, folders).await;
        callers.push((in_folder, user));
    }
    let mut asked = 0;
    for route in ROUTES {
        let (method, path) = (route.method.as_str(), route.path);
        let Access::Role(needed, reach) = route.access else {
            continue;
        };
        let places: &[Place] = match reach {
            Reach::Job | Reach::Schedule => &[Place::Mine, Place::Other, Place::Nowhere],
            Reach::Any | Reach::Filtered | Reach::All => &[Place::Mine],
        };
        for &place in places {
            for (in_folder, caller) in callers.iter_mut() {
                let (id, expected_404) = match reach {
                    Reach::Schedule => {
                        let id = schedules[&place].0;
                        (id, format!("no schedule with id {id}"))
                    }
                    _ => {
                        let id = jobs[&place];
                        (id, format!("no job with id {id}"))
                    }
                };
                let uri = path
                    .replace("{id}", &id.to_string())
                    .replace("{name}", "no-such-name");
                // A filtered route's body names the caller's folder: what
                // it files there is then judged by its role in it.
                let body = (method != "GET" && method != "DELETE").then(|| match reach {
                    Reach::Filtered => json!({"folder": "team-a"}),
                    _ => json!({}),
                });
                let reply = call(&t, method, &uri, caller, body.as_ref()).await;
                asked += 1;
                let what = format!(
                    "{method} {uri} ({path}) by {caller:?} ({in_folder} in team-a), {place:?}"
                );
                // Signed out: signed in again for the routes after this one.
                if (method, path) == ("DELETE", "/api/v1/session") && reply.status.is_success() {
                    *caller = sessions::sign_in(&t, &format!("u-{in_folder}")).await;
                }
                let role_there = match reach {
                    Reach::All => None,
                    Reach::Any => Some(Role::Viewer),
                    Reach::Filtered => Some(*in_folder),
                    Reach::Job | Reach::Schedule => (place == Place::Mine).then_some(*in_folder),
                };
                match role_there {
                    None if matches!(reach, Reach::Job | Reach::Schedule) => {
                        let code = if reach == Reach::Job {
                            "job_not_found"
                        } else {
                            "schedule_not_found"
                        };
                        let message = assert_error(&reply, StatusCode::NOT_FOUND, code);
                        assert_eq!(message, expected_404, "{what}");
                    }
                    None => {
                        let message = assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
                        assert!(
                            message.contains("reaches every folder"),
                            "{what}: {message}"
                        );
                    }
                    Some(role) if role < needed => {
                        let message = assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
                        assert!(
                            message.contains(&format!("needs the {needed} role")),
                            "{what}: {message}"
                        );
                        if matches!(reach, Reach::Job | Reach::Schedule) {
                            assert!(
                                message.contains("in folder \"team-a\""),
                                "{what}: {message}"
                            );
                        }
                    }
                    Some(_) => {
                        let refused = matches!(
                            reply.status,
                            StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED
                        );
                        let hidden = reply.status == StatusCode::NOT_FOUND
                            && reply.text().contains(&expected_404);
                        assert!(
                            !refused && !hidden,
                            "{what}: {} {}",
                            reply.status,
                            reply.text()
                        );
                    }
                }
                // An admitted delete of the schedule: made again for the
                // next caller.
                if (method, path) == ("DELETE", "/api/v1/schedules/{id}")
                    && reply.status.is_success()
                {
                    let (_, name, folder) = schedules[&place];
                    let id = schedule_in(&t, name, folder).await;
                    schedules.insert(place, (id, name, folder));
                }
            }
        }
    }
    assert!(asked > 4 * ROUTES.len(), "{asked} requests");
    // Nothing out of reach was touched: the other folder's schedule and
    // job are as they were.
    let (id, _, _) = schedules[&Place::Other];
    let reply = call(
        &t,
        "GET",
        &format!("/api/v1/schedules/{id}"),
        &admin(),
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let listed = call(&t, "GET", "/api/v1/jobs?folder=team-b", &admin(), None).await;
    assert_eq!(
        listed.json()["jobs"].as_array().unwrap().len(),
        1,
        "{}",
        listed.text()
    );
    t.shutdown().await;
}

fn ids(listing: &Value, key: &str) -> Vec<i64> {
    listing[key]
        .as_array()
        .unwrap_or_else(|| panic!("{listing}"))
        .iter()
        .map(|o| o["id"].as_i64().unwrap())
        .collect()
}

async fn a_limited_caller_lists_submits_and_follows_only_its_folders(db: TestDatabase) {
    let t = start_app_with_token(db, 2, Some(BOOTSTRAP)).await;
    let a = job_in(&t, Some("team-a")).await;
    let b = job_in(&t, Some("team-b")).await;
    let none = job_in(&t, None).await;
    let sa = schedule_in(&t, "sa", Some("team-a")).await;
    schedule_in(&t, "sb", Some("team-b")).await;
    let viewer = limited_token(
        &t,
        "va",
        Role::Viewer,
        json!({"team-a": "viewer", "team-c": "operator"}),
    )
    .await;

    // Listings: their folders only, whatever is asked.
    let listed = call(&t, "GET", "/api/v1/jobs", &viewer, None).await;
    assert_eq!(ids(&listed.json(), "jobs"), vec![a]);
    let all = call(&t, "GET", "/api/v1/jobs", &admin(), None).await;
    assert_eq!(ids(&all.json(), "jobs"), vec![none, b, a]);
    let other = call(&t, "GET", "/api/v1/jobs?folder=team-b", &viewer, None).await;
    assert_eq!(ids(&other.json(), "jobs"), Vec::<i64>::new());
    let by_state = call(&t, "GET", "/api/v1/jobs?state=succeeded", &viewer, None).await;
    assert_eq!(ids(&by_state.json(), "jobs"), vec![a]);
    let schedules = call(&t, "GET", "/api/v1/schedules", &viewer, None).await;
    assert_eq!(ids(&schedules.json(), "schedules"), vec![sa]);
    // A search across logs: their folders' jobs only, whatever is asked.
    let hit_jobs = |v: &Value| -> Vec<i64> {
        v["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["job_id"].as_i64().unwrap())
            .collect()
    };
    let found = call(&t, "GET", "/api/v1/search?q=in-a-folder", &viewer, None).await;
    assert_eq!(hit_jobs(&found.json()), vec![a]);
    let found = call(
        &t,
        "GET",
        "/api/v1/search?q=in-a-folder&folder=team-b",
        &viewer,
        None,
    )
    .await;
    assert_eq!(hit_jobs(&found.json()), Vec::<i64>::new());
    let found = call(&t, "GET", "/api/v1/search?q=in-a-folder", &admin(), None).await;
    assert_eq!(hit_jobs(&found.json()), vec![none, b, a]);
    let bad = call(&t, "GET", "/api/v1/jobs?folder=a%20b", &admin(), None).await;
    let message = assert_error(&bad, StatusCode::BAD_REQUEST, "invalid_query");
    assert!(message.starts_with("folder:"), "{message}");

    // Another folder's job by id, log, search and result: as if absent.
    for path in [
        "",
        "/log",
        "/log/text",
        "/log/search?q=in",
        "/result",
        "/log/events",
    ] {
        let reply = call(&t, "GET", &format!("/api/v1/jobs/{b}{path}"), &viewer, None).await;
        let message = assert_error(&reply, StatusCode::NOT_FOUND, "job_not_found");
        assert_eq!(message, format!("no job with id {b}"), "{path}");
    }
    let own = call(
        &t,
        "GET",
        &format!("/api/v1/jobs/{a}/log/text"),
        &viewer,
        None,
    )
    .await;
    assert_eq!(own.text(), "in-a-folder\n");

    // Submitting needs the operator role in the folder named.
    for (folder, status) in [
        (json!("team-c"), StatusCode::CREATED),
        (json!("team-a"), StatusCode::FORBIDDEN),
        (json!("team-b"), StatusCode::FORBIDDEN),
        (Value::Null, StatusCode::FORBIDDEN),
    ] {
        let body = json!({"command": ["true"], "folder": folder});
        let reply = call(&t, "POST", "/api/v1/jobs", &viewer, Some(&body)).await;
        assert_eq!(reply.status, status, "{folder}: {}", reply.text());
        if status == StatusCode::CREATED {
            let job = reply.json();
            assert_eq!(job["folder"], "team-c");
            finished(&t, id_of(&job)).await;
        }
    }
    let bad = json!({"command": ["true"], "folder": "../x"});
    let reply = call(&t, "POST", "/api/v1/jobs", &admin(), Some(&bad)).await;
    let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(message.starts_with("folder:"), "{message}");
    // A schedule moved out of a folder where one is an operator to one
    // where one is not: refused.
    let sc = call(&t, "POST", "/api/v1/schedules", &viewer,
        Some(&json!({"name": "sc", "cron": "0 0 1 1 *", "command": ["true"], "folder": "team-c", "enabled": false}))).await;
    assert_eq!(sc.status, StatusCode::CREATED, "{}", sc.text());
    let sc = sc.json()["id"].as_i64().unwrap();
    let moved = call(
        &t,
        "PATCH",
        &format!("/api/v1/schedules/{sc}"),
        &viewer,
        Some(&json!({"folder": "team-a"})),
    )
    .await;
    assert_error(&moved, StatusCode::FORBIDDEN, "forbidden");
    // Its run inherits the folder.
    let run = call(
        &t,
        "POST",
        &format!("/api/v1/schedules/{sc}/run"),
        &viewer,
        None,
    )
    .await;
    assert_eq!(run.status, StatusCode::CREATED, "{}", run.text());
    assert_eq!(run.json()["folder"], "team-c");
    finished(&t, id_of(&run.json())).await;

    // The feed counts and lists only its folders' jobs.
    let mut feed = match open_events_with(
        &t.router,
        sessions::request_as("GET", "/api/v1/events", &viewer, None),
    )
    .await
    {
        Ok(feed) => feed,
        Err(reply) => panic!("{} {}", reply.status, reply.text()),
    };
    let hidden = job_in(&t, Some("team-b")).await;
    let seen = call(
        &t,
        "POST",
        "/api/v1/jobs",
        &viewer,
        Some(&json!({"command": ["true"], "folder": "team-c"})),
    )
    .await;
    let seen = id_of(&seen.json());
    finished(&t, seen).await;
    let mut new = 0;
    let mut changed = Vec::new();
    while !changed.contains(&seen) {
        let event = feed.next().await.expect("the feed goes on");
        let data = event.json();
        if data["reset"] == true {
            continue;
        }
        new += data["new"].as_u64().unwrap();
        changed.extend(
            data["changed"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap()),
        );
    }
    assert!(!changed.contains(&hidden), "{changed:?}");
    assert_eq!(new, 1, "only its folder's job is counted");
    t.shutdown().await;
}

async fn folders_of_tokens_and_users_are_checked_and_shown(db: TestDatabase) {
    let t = start_app_with_token(db, 1, Some(BOOTSTRAP)).await;
    for (body, field) in [
        (
            json!({"name": "x", "role": "admin", "folders": {"a": "viewer"}}),
            "role",
        ),
        (
            json!({"name": "x", "role": "viewer", "folders": {}}),
            "folders",
        ),
        (
            json!({"name": "x", "role": "viewer", "folders": {"a b": "viewer"}}),
            "folders",
        ),
    ] {
        let reply = call(&t, "POST", "/api/v1/tokens", &admin(), Some(&body)).await;
        let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
        assert!(
            message.starts_with(&format!("{field}:")),
            "{body}: {message}"
        );
    }
    let token = limited_token(&t, "ta", Role::Viewer, json!({"team-a": "operator"})).await;
    let me = call(&t, "GET", "/api/v1/whoami", &token, None).await;
    assert_eq!(me.json()["folders"], json!({"team-a": "operator"}));
    let listed = call(&t, "GET", "/api/v1/tokens", &admin(), None).await;
    assert_eq!(
        listed.json()["tokens"][0]["folders"],
        json!({"team-a": "operator"})
    );

    // A user's folders change, and go, by PATCH; each request reads them.
    let user = limited_user(&t, "ua", Role::Viewer, json!({"team-a": "viewer"})).await;
    let b = job_in(&t, Some("team-b")).await;
    let hidden = call(&t, "GET", &format!("/api/v1/jobs/{b}"), &user, None).await;
    assert_error(&hidden, StatusCode::NOT_FOUND, "job_not_found");
    let admin_of_folders = call(
        &t,
        "PATCH",
        "/api/v1/users/ua",
        &admin(),
        Some(&json!({"role": "admin"})),
    )
    .await;
    let message = assert_error(
        &admin_of_folders,
        StatusCode::BAD_REQUEST,
        "invalid_request",
    );
    assert!(message.starts_with("role:"), "{message}");
    let widened = call(
        &t,
        "PATCH",
        "/api/v1/users/ua",
        &admin(),
        Some(&json!({"folders": {"team-b": "viewer"}})),
    )
    .await;
    assert_eq!(
        widened.json()["folders"],
        json!({"team-b": "viewer"}),
        "{}",
        widened.text()
    );
    let seen = call(&t, "GET", &format!("/api/v1/jobs/{b}"), &user, None).await;
    assert_eq!(seen.status, StatusCode::OK);
    let freed = call(
        &t,
        "PATCH",
        "/api/v1/users/ua",
        &admin(),
        Some(&json!({"folders": null})),
    )
    .await;
    assert!(freed.json().get("folders").is_none(), "{}", freed.text());
    let metrics = call(&t, "GET", "/metrics", &user, None).await;
    assert_eq!(metrics.status, StatusCode::OK, "every folder again");
    t.shutdown().await;
}
