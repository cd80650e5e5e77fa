//! Schedules through the API, on a real engine whose scheduler fires by a
//! clock the test moves: created, shown with their next fires, changed,
//! run now and deleted; bad input refused naming the field; the overlap,
//! missed and retries policies with real `sh` jobs; and a burst of
//! submissions held to their concurrency key's limit; a schedule that
//! runs after another, given the triggering job's id, state and result.

use axum::http::StatusCode;
use joblog_core::Timestamp;
use joblog_store::testing::TestDatabase;
use serde_json::{json, Value};

use crate::common::*;

joblog_store::backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    schedules_are_created_shown_changed_run_and_deleted,
    bad_schedules_are_refused_naming_the_field,
    fires_run_by_the_clock_and_overlap_skip_skips_while_a_run_runs,
    overlap_queue_waits_for_the_running_one,
    missed_fires_after_downtime_run_as_the_policy_says,
    a_failing_run_is_retried_to_its_attempts_each_a_job_of_its_own,
    a_burst_of_submissions_is_held_to_its_concurrency_limit,
    a_run_whose_node_lacks_a_secret_fails_naming_the_variable,
    fires_wait_while_the_queue_is_full_and_schedules_are_capped,
    a_retry_waiting_out_its_backoff_says_when_it_may_start,
    each_schedule_has_its_metrics_from_its_creation,
    fixed_times_fire_once_through_both_daylight_saving_changes,
    a_schedule_after_another_runs_on_its_end_with_its_id_state_and_result,
    a_saved_job_never_fires_and_runs_when_run,
}

const MIN: i64 = 60_000_000;
/// 2026-11-24T00:00:00Z: the manual clock's start.
const T0: i64 = 1_795_478_400_000_000;

pub(crate) fn at(minutes: i64) -> Timestamp {
    Timestamp(T0 + minutes * MIN)
}

pub(crate) async fn create(router: &axum::Router, body: Value) -> Value {
    let reply = post(router, "/api/v1/schedules", &body).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    reply.json()
}

/// The schedule's runs, oldest first.
pub(crate) async fn runs(router: &axum::Router, id: i64) -> Vec<Value> {
    let page = get_json(router, &format!("/api/v1/jobs?schedule_id={id}&limit=1000")).await;
    let mut jobs = page["jobs"].as_array().unwrap().clone();
    jobs.reverse();
    jobs
}

/// Polls until the schedule has `n` runs, up to [`PATIENCE`].
pub(crate) async fn wait_runs(router: &axum::Router, id: i64, n: usize) -> Vec<Value> {
    eventually(
        &format!("schedule {id} to have {n} runs"),
        PATIENCE,
        || async {
            let jobs = runs(router, id).await;
            if jobs.len() >= n {
                Ok(jobs)
            } else {
                Err(Value::from(jobs))
            }
        },
    )
    .await
}

async fn schedules_are_created_shown_changed_run_and_deleted(db: TestDatabase) {
    let clock = ManualClock::at(at(0));
    let t = start_app_with_clock(db, 2, clock.clone()).await;
    let r = &t.router;
    let s = create(
        r,
        json!({"name": "nightly", "cron": "30 2 * * *", "timezone": "Europe/Berlin",
               "script": "echo backup", "env": {"A": "1"}, "retries": {"attempts": 2, "backoff_s": 60},
               "missed": "one"}),
    )
    .await;
    let id = s["id"].as_i64().unwrap();
    assert_eq!(s["timezone"], "Europe/Berlin");
    assert_eq!(s["script"], "echo backup");
    assert_eq!(s["retries"], json!({"attempts": 2, "backoff_s": 60.0}));
    assert_eq!(s["enabled"], true);
    // 02:30 in Berlin is 01:30 UTC in winter: the next five nights.
    let fires: Vec<&str> = s["next_fires"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert_eq!(fires.len(), 5);
    assert_eq!(fires[0], "2026-11-24T01:30:00.000000Z");
    assert_eq!(fires[4], "2026-11-28T01:30:00.000000Z");
    assert_eq!(s["next_fire"], fires[0]);
    assert_eq!(get_json(r, &format!("/api/v1/schedules/{id}")).await, s);
    let listed = get_json(r, "/api/v1/schedules").await;
    assert_eq!(listed["schedules"][0]["id"], id);
    assert!(listed["next_after_id"].is_null());
    // Changed: only what the body names.
    let changed = patch(
        r,
        &format!("/api/v1/schedules/{id}"),
        &json!({"cron": "@hourly"}),
    )
    .await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.text());
    let changed = changed.json();
    assert_eq!(changed["cron"], "@hourly");
    assert_eq!(changed["script"], "echo backup", "the rest stays");
    assert_eq!(changed["next_fire"], "2026-11-24T01:00:00.000000Z");
    let off = patch(
        r,
        &format!("/api/v1/schedules/{id}"),
        &json!({"enabled": false}),
    )
    .await;
    assert!(off.json()["next_fire"].is_null() && off.json()["next_fires"] == json!([]));
    // Run now: a job of the schedule without a fire time.
    let job = post(r, &format!("/api/v1/schedules/{id}/run"), &json!({})).await;
    assert_eq!(job.status, StatusCode::CREATED, "{}", job.text());
    let job = job.json();
    assert_eq!(job["schedule_id"], id);
    assert!(job["fire_time"].is_null());
    assert_eq!(job["attempt"], 1);
    assert_eq!(job["name"], "nightly");
    let done = wait_finished(r, id_of(&job)).await;
    assert_eq!(done["state"], "succeeded");
    assert_eq!(runs(r, id).await.len(), 1);
    let shown = get_json(r, &format!("/api/v1/schedules/{id}")).await;
    assert_eq!(shown["last_run"]["job_id"], job["id"]);
    assert_eq!(shown["last_run"]["state"], "succeeded");
    // Names are unique.
    let twin = post(
        r,
        "/api/v1/schedules",
        &json!({"name": "nightly", "cron": "@daily", "command": ["true"]}),
    )
    .await;
    let message = assert_error(&twin, StatusCode::CONFLICT, "schedule_exists");
    assert!(message.contains("nightly"), "{message}");
    // Deleted: gone, its jobs kept.
    assert_eq!(
        delete(r, &format!("/api/v1/schedules/{id}")).await.status,
        StatusCode::NO_CONTENT
    );
    let gone = get(r, &format!("/api/v1/schedules/{id}")).await;
    assert_error(&gone, StatusCode::NOT_FOUND, "schedule_not_found");
    assert_error(
        &delete(r, &format!("/api/v1/schedules/{id}")).await,
        StatusCode::NOT_FOUND,
        "schedule_not_found",
    );
    assert_eq!(runs(r, id).await.len(), 1);
    t.shutdown().await;
}

async fn bad_schedules_are_refused_naming_the_field(db: TestDatabase) {
    let t = start_app_with_clock(db, 1, ManualClock::at(at(0))).await;
    let r = &t.router;
    let base = json!({"name": "n", "cron": "0 * * * *", "command": ["true"]});
    for (key, value, says) in [
        (
            "cron",
            json!("0 25 * * *"),
            "cron: \"0 25 * * *\" is not a cron expression",
        ),
        ("cron", json!("* * * * * *"), "cron: "),
        ("cron", json!("0 0 30 2 *"), "never fires again"),
        (
            "timezone",
            json!("Mars/Olympus"),
            "timezone: \"Mars/Olympus\" is not an IANA time zone",
        ),
        ("overlap", json!("sometimes"), "overlap"),
        ("retries", json!({"attempts": 0}), "retries.attempts"),
        ("secrets", json!({"K": "v"}), "secrets"),
        ("concurrency_key", json!("schedule:1"), "concurrency_key"),
    ] {
        let mut body = base.clone();
        body[key] = value;
        let reply = post(r, "/api/v1/schedules", &body).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{key}: {}",
            reply.text()
        );
        let message = reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            message.contains(says),
            "{key}: {message:?} should say {says:?}"
        );
    }
    // Every second, said plainly, is taken.
    let every = create(
        r,
        json!({"name": "s", "cron": "*/1 * * * * *", "command": ["true"]}),
    )
    .await;
    assert_eq!(every["next_fire"], "2026-11-24T00:00:01.000000Z");
    let id = every["id"].as_i64().unwrap();
    let bad = patch(
        r,
        &format!("/api/v1/schedules/{id}"),
        &json!({"timezone": "Nowhere"}),
    )
    .await;
    let message = assert_error(&bad, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(message.starts_with("timezone:"), "{message}");
    let bad = patch(
        r,
        &format!("/api/v1/schedules/{id}"),
        &json!({"colour": "red"}),
    )
    .await;
    let message = assert_error(&bad, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(message.contains("colour"), "{message}");
    assert_error(
        &get(r, "/api/v1/schedules/x").await,
        StatusCode::BAD_REQUEST,
        "invalid_id",
    );
    assert_error(
        &get(r, "/api/v1/schedules/99").await,
        StatusCode::NOT_FOUND,
        "schedule_not_found",
    );
    let unchanged = get_json(r, &format!("/api/v1/schedules/{id}")).await;
    assert_eq!(unchanged["timezone"], "UTC");
    t.shutdown().await;
}

async fn fires_run_by_the_clock_and_overlap_skip_skips_while_a_run_runs(db: TestDatabase) {
    let clock = ManualClock::at(at(0));
    let t = start_app_with_clock(db, 4, clock.clone()).await;
    let r = &t.router;
    let s = create(
        r,
        json!({"name": "long", "cron": "* * * * *", "script": "sleep 60"}),
    )
    .await;
    let id = s["id"].as_i64().unwrap();
    assert!(
        runs(r, id).await.is_empty(),
        "nothing before its first fire"
    );
    clock.set(at(1));
    let first = wait_runs(r, id, 1).await.remove(0);
    assert_eq!(first["fire_time"], "2026-11-24T00:01:00.000000Z");
    assert_eq!(first["attempt"], 1);
    wait_running(r, id_of(&first)).await;
    // The next fire finds it running: skipped, counted.
    clock.set(at(2));
    let shown = eventually("the fire to be skipped", PATIENCE, || async {
        let shown = get_json(r, &format!("/api/v1/schedules/{id}")).await;
        if shown["skipped_fires"] == 1 {
            Ok(shown)
        } else {
            Err(shown)
        }
    })
    .await;
    assert_eq!(shown["next_fire"], "2026-11-24T00:03:00.000000Z");
    assert_eq!(runs(r, id).await.len(), 1);
    post(
        r,
        &format!("/api/v1/jobs/{}/cancel", id_of(&first)),
        &json!({}),
    )
    .await;
    wait_finished(r, id_of(&first)).await;
    clock.set(at(3));
    let jobs = wait_runs(r, id, 2).await;
    assert_eq!(jobs[1]["fire_time"], "2026-11-24T00:03:00.000000Z");
    post(
        r,
        &format!("/api/v1/jobs/{}/cancel", id_of(&jobs[1])),
        &json!({}),
    )
    .await;
    t.shutdown().await;
}

async fn overlap_queue_waits_for_the_running_one(db: TestDatabase) {
    let clock = ManualClock::at(at(0));
    let t = start_app_with_clock(db, 4, clock.clone()).await;
    let r = &t.router;
    let s = create(
        r,
        json!({"name": "q", "cron": "* * * * *", "overlap": "queue", "script": "sleep 60"}),
    )
    .await;
    let id = s["id"].as_i64().unwrap();
    clock.set(at(1));
    let first = wait_runs(r, id, 1).await.remove(0);
    wait_running(r, id_of(&first)).await;
    clock.set(at(2));
    let second = wait_runs(r, id, 2).await.remove(1);
    // Free slots remain, and a job behind it runs: the second is held by
    // its schedule's key, not by the pool.
    let other = run_sh(r, "true").await;
    assert!(id_of(&other) > id_of(&second));
    assert_eq!(other["state"], "succeeded");
    assert_eq!(show(r, id_of(&second)).await["state"], "queued");
    post(
        r,
        &format!("/api/v1/jobs/{}/cancel", id_of(&first)),
        &json!({}),
    )
    .await;
    wait_running(r, id_of(&second)).await;
    post(
        r,
        &format!("/api/v1/jobs/{}/cancel", id_of(&second)),
        &json!({}),
    )
    .await;
    t.shutdown().await;
}

async fn missed_fires_after_downtime_run_as_the_policy_says(db: TestDatabase) {
    let clock = ManualClock::at(at(0));
    let t = start_app_with_clock(db, 4, clock.clone()).await;
    let r = &t.router;
    let mut ids = Vec::new();
    for missed in ["skip", "one", "all"] {
        let s = create(
            r,
            json!({"name": format!("every-5-{missed}"), "cron": "*/5 * * * *", "overlap": "allow",
                   "missed": missed, "command": ["true"]}),
        )
        .await;
        ids.push(s["id"].as_i64().unwrap());
    }
    // The clock jumps an hour and a half minute: the fires 00:05 to 00:55
    // were missed (11), 01:00 is due.
    clock.set(Timestamp(at(60).0 + 30_000_000));
    for (id, (expect, skipped)) in ids.iter().zip([(1, 11), (2, 10), (12, 0)]) {
        let jobs = wait_runs(r, *id, expect).await;
        assert_eq!(jobs.len(), expect, "{jobs:?}");
        assert_eq!(
            jobs.last().unwrap()["fire_time"],
            "2026-11-24T01:00:00.000000Z"
        );
        let shown = get_json(r, &format!("/api/v1/schedules/{id}")).await;
        assert_eq!(shown["skipped_fires"], skipped, "{shown}");
        assert_eq!(shown["next_fire"], "2026-11-24T01:05:00.000000Z");
    }
    t.shutdown().await;
}

async fn a_failing_run_is_retried_to_its_attempts_each_a_job_of_its_own(db: TestDatabase) {
    let clock = ManualClock::at(at(0));
    let t = start_app_with_clock(db, 2, clock.clone()).await;
    let r = &t.router;
    let s = create(
        r,
        json!({"name": "flaky", "cron": "@hourly", "script": "echo try; exit 3",
               "retries": {"attempts": 3, "backoff_s": 0}}),
    )
    .await;
    let id = s["id"].as_i64().unwrap();
    clock.set(at(60));
    let jobs = wait_runs(r, id, 3).await;
    for job in &jobs {
        wait_finished(r, id_of(job)).await;
    }
    let jobs = runs(r, id).await;
    assert_eq!(jobs.len(), 3, "three attempts and no fourth: {jobs:?}");
    for (i, job) in jobs.iter().enumerate() {
        assert_eq!(job["attempt"], i + 1);
        assert_eq!(job["fire_time"], "2026-11-24T01:00:00.000000Z");
        assert_eq!(job["state"], "failed");
        assert_eq!(job["exit_code"], 3);
    }
    t.shutdown().await;
}

/// 200 jobs of one key submitted at once on a pool of 8: never more than
/// 2 of them run at a time (as committed: a job's run is from its claim
/// to its finish), the jobs without a key run beside them, and all end.
async fn a_burst_of_submissions_is_held_to_its_concurrency_limit(db: TestDatabase) {
    let t = start_app(db, 8).await;
    let r = &t.router;
    let mut keyed = Vec::new();
    let mut free = Vec::new();
    let submissions = (0..200).map(|i| {
        let body = if i % 10 == 9 {
            json!({"command": ["true"]})
        } else {
            json!({"command": ["sh", "-c", "sleep 0.02"], "concurrency_key": "db", "max_concurrent": 2})
        };
        async move { (i, submit(r, body).await) }
    });
    for (i, job) in futures_util::future::join_all(submissions).await {
        if i % 10 == 9 {
            free.push(id_of(&job));
        } else {
            assert_eq!(job["concurrency_key"], "db");
            keyed.push(id_of(&job));
        }
    }
    let mut spans = Vec::new();
    for id in keyed {
        let job = wait_finished(r, id).await;
        assert_eq!(job["state"], "succeeded", "{job}");
        let started = humantime::parse_rfc3339(job["started_at"].as_str().unwrap()).unwrap();
        let finished = humantime::parse_rfc3339(job["finished_at"].as_str().unwrap()).unwrap();
        spans.push((started, finished));
    }
    for id in free {
        assert_eq!(wait_finished(r, id).await["state"], "succeeded");
    }
    // The most runs at once: a sweep over starts and ends (an end at the
    // same instant as a start comes first: the claim followed the finish).
    let mut events: Vec<(std::time::SystemTime, i32)> = spans
        .iter()
        .flat_map(|(s, f)| [(*s, 1), (*f, -1)])
        .collect();
    events.sort();
    let (mut running, mut most) = (0, 0);
    for (_, delta) in events {
        running += delta;
        most = most.max(running);
    }
    assert!(most <= 2, "{most} jobs of the key ran at once");
    assert_eq!(most, 2, "the limit is 2, not 1");
    t.shutdown().await;
}

/// A schedule keeps secret names only: a node without the variable for
/// one does not start the run, and its log says which variable to set.
/// A schedule may name only the secrets the node allows its name.
async fn a_run_whose_node_lacks_a_secret_fails_naming_the_variable(db: TestDatabase) {
    let t = start_app_with_clock_and(db, 1, ManualClock::at(at(0)), |e| {
        e.node_secret_scopes
            .insert("API_KEY".into(), vec!["needs-*".into()]);
        e.node_secrets.insert("DB_PASSWORD".into(), "s3cret".into());
    })
    .await;
    let r = &t.router;
    // Not allowed to it: refused, naming the variable that would allow it.
    for (name, secret) in [("sneaky", "API_KEY"), ("needs-db", "DB_PASSWORD")] {
        let refused = post(
            r,
            "/api/v1/schedules",
            &json!({"name": name, "cron": "@daily", "secrets": [secret], "command": ["true"]}),
        )
        .await;
        let message = assert_error(&refused, StatusCode::BAD_REQUEST, "invalid_request");
        assert!(
            message.contains(&format!("JOBLOG_ALLOW_SECRET_{secret}")),
            "{message}"
        );
    }
    let s = create(
        r,
        json!({"name": "needs-key", "cron": "@daily", "secrets": ["API_KEY"], "command": ["true"]}),
    )
    .await;
    assert_eq!(s["secrets"], json!(["API_KEY"]));
    let job = post(r, &format!("/api/v1/schedules/{}/run", s["id"]), &json!({})).await;
    assert_eq!(job.status, StatusCode::CREATED, "{}", job.text());
    let done = wait_finished(r, id_of(&job.json())).await;
    assert_eq!(done["state"], "failed", "{done}");
    assert_eq!(done["secret_names"], json!(["API_KEY"]));
    let log = whole_log(r, id_of(&done)).await;
    let said = log[0]["message"].as_str().unwrap();
    assert!(
        said.contains("set JOBLOG_SECRET_API_KEY") && said.contains("test-node"),
        "{said}"
    );
    // Which node holds which secret is listed, by name only.
    let nodes = get(r, "/api/v1/nodes").await.text();
    let listed: Value = serde_json::from_str(&nodes).unwrap();
    assert_eq!(listed["nodes"][0]["secret_names"], json!(["DB_PASSWORD"]));
    assert!(!nodes.contains("s3cret"), "{nodes}");
    t.shutdown().await;
}

/// Schedules are held to `max_queued` as submissions are: while the
/// queue is full a due fire waits (and runs once there is room, a minute
/// late at most); and no more than `max_schedules` exist.
async fn fires_wait_while_the_queue_is_full_and_schedules_are_capped(db: TestDatabase) {
    let clock = ManualClock::at(at(0));
    let t = start_app_with_clock_and(db, 1, clock.clone(), |e| {
        e.max_queued = 2;
        e.max_schedules = 2;
    })
    .await;
    let r = &t.router;
    let sleeper = json!({"command": ["sleep", "60"]});
    let running = id_of(&submit(r, sleeper.clone()).await);
    wait_running(r, running).await;
    let queued = [
        id_of(&submit(r, sleeper.clone()).await),
        id_of(&submit(r, sleeper.clone()).await),
    ];
    let s = create(
        r,
        json!({"name": "minutely", "cron": "* * * * *", "script": "true"}),
    )
    .await;
    let id = s["id"].as_i64().unwrap();
    clock.set(at(1));
    // The scheduler looks at least every second while the queue is full.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    assert!(runs(r, id).await.is_empty(), "it fired into a full queue");
    // A second schedule is allowed, a third is not.
    create(
        r,
        json!({"name": "second", "cron": "@daily", "script": "true"}),
    )
    .await;
    let third = post(
        r,
        "/api/v1/schedules",
        &json!({"name": "third", "cron": "@daily", "script": "true"}),
    )
    .await;
    let message = assert_error(&third, StatusCode::CONFLICT, "too_many_schedules");
    assert!(message.contains("max_schedules"), "{message}");
    // Room again: the fire of 00:01 runs, less than a minute late.
    for job in queued {
        post(r, &format!("/api/v1/jobs/{job}/cancel"), &json!({})).await;
    }
    let jobs = wait_runs(r, id, 1).await;
    assert_eq!(jobs[0]["fire_time"], "2026-11-24T00:01:00.000000Z");
    post(r, &format!("/api/v1/jobs/{running}/cancel"), &json!({})).await;
    t.shutdown().await;
}

/// A retry queued behind its backoff carries `run_after`, later than its
/// creation; a job that is no retry has none.
async fn a_retry_waiting_out_its_backoff_says_when_it_may_start(db: TestDatabase) {
    let clock = ManualClock::at(at(0));
    let t = start_app_with_clock(db, 2, clock.clone()).await;
    let r = &t.router;
    let s = create(
        r,
        json!({"name": "patient", "cron": "@hourly", "script": "exit 3",
               "retries": {"attempts": 2, "backoff_s": 3600}}),
    )
    .await;
    let id = s["id"].as_i64().unwrap();
    clock.set(at(60));
    let jobs = wait_runs(r, id, 2).await;
    let first = wait_finished(r, id_of(&jobs[0])).await;
    assert!(first.get("run_after").is_none(), "{first}");
    let second = get_json(r, &format!("/api/v1/jobs/{}", id_of(&jobs[1]))).await;
    assert_eq!(second["state"], "queued", "{second}");
    let after = second["run_after"]
        .as_str()
        .expect("a retry says when it may start");
    assert!(
        after > second["created_at"].as_str().unwrap(),
        "{after} is not after its creation: {second}"
    );
    let listed = runs(r, id).await;
    assert_eq!(listed[1]["run_after"], after, "listings carry it too");
    post(
        r,
        &format!("/api/v1/jobs/{}/cancel", id_of(&jobs[1])),
        &json!({}),
    )
    .await;
    t.shutdown().await;
}

/// Per schedule, by name: 0 for what has not happened yet (so an alert on
/// a schedule that never succeeded has a series to fire on), its own last
/// success and failure, its next fire, its longest gap between fires and
/// whether it is enabled.
async fn each_schedule_has_its_metrics_from_its_creation(db: TestDatabase) {
    let clock = ManualClock::at(at(0));
    let t = start_app_with_clock(db, 2, clock.clone()).await;
    let r = &t.router;
    let nightly = create(
        r,
        json!({"name": "nightly", "cron": "30 2 * * *", "timezone": "Europe/Berlin", "script": "exit 3"}),
    )
    .await;
    let weekdays = create(
        r,
        json!({"name": "weekdays", "cron": "0 9 * * 1-5", "script": "true"}),
    )
    .await;
    let idle = create(
        r,
        json!({"name": "idle", "cron": "@hourly", "script": "true"}),
    )
    .await;
    let off = patch(
        r,
        &format!("/api/v1/schedules/{}", idle["id"]),
        &json!({"enabled": false}),
    )
    .await;
    assert_eq!(off.status, StatusCode::OK);
    let mut finished = Vec::new();
    for s in [&nightly, &weekdays] {
        let job = post(r, &format!("/api/v1/schedules/{}/run", s["id"]), &json!({})).await;
        finished.push(wait_finished(r, id_of(&job.json())).await);
    }
    let text = get(r, "/metrics").await.text();
    let sample = |metric: &str, schedule: &str| -> f64 {
        let prefix = format!("joblog_schedule_{metric}{{schedule=\"{schedule}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .unwrap_or_else(|| panic!("no `{prefix}` in\n{text}"))
            .parse()
            .unwrap()
    };
    let seconds = |v: &Value| -> f64 {
        let t = humantime::parse_rfc3339(v.as_str().unwrap()).unwrap();
        t.duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    let close = |a: f64, b: f64| (a - b).abs() < 1e-3;
    let failed = sample("last_failure_timestamp_seconds", "nightly");
    assert!(
        close(failed, seconds(&finished[0]["finished_at"])),
        "{failed}"
    );
    assert_eq!(sample("last_success_timestamp_seconds", "nightly"), 0.0);
    let succeeded = sample("last_success_timestamp_seconds", "weekdays");
    assert!(close(succeeded, seconds(&finished[1]["finished_at"])));
    assert_eq!(sample("last_failure_timestamp_seconds", "weekdays"), 0.0);
    for s in [&nightly, &weekdays] {
        let name = s["name"].as_str().unwrap();
        assert!(close(
            sample("next_fire_timestamp_seconds", name),
            seconds(&s["next_fire"])
        ));
        assert!(close(
            sample("created_timestamp_seconds", name),
            seconds(&s["created_at"])
        ));
        assert_eq!(sample("enabled", name), 1.0);
    }
    // A day; a weekday schedule's longest gap is its weekend.
    assert_eq!(sample("period_seconds", "nightly"), 86_400.0);
    assert_eq!(sample("period_seconds", "weekdays"), 3.0 * 86_400.0);
    // Never ran, disabled: every series is there, at 0.
    for metric in [
        "last_success_timestamp_seconds",
        "last_failure_timestamp_seconds",
        "next_fire_timestamp_seconds",
        "enabled",
    ] {
        assert_eq!(sample(metric, "idle"), 0.0, "{metric}");
    }
    assert_eq!(sample("period_seconds", "idle"), 3_600.0);
    t.shutdown().await;
}

fn utc(text: &str) -> Timestamp {
    let t = humantime::parse_rfc3339(text).unwrap();
    Timestamp(t.duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as i64)
}

/// The live scheduler, its clock walked minute by minute through the
/// nights Berlin's clocks change: a fixed time written as a list or a
/// range (also with seconds) fires right after the skipped hour, once,
/// and once in the repeated hour — the promise of docs/cli.md, kept by
/// what runs, not only by the preview of next fires.
async fn fixed_times_fire_once_through_both_daylight_saving_changes(db: TestDatabase) {
    let crons = [
        "30,40 2 * * *",
        "30 2,3 * * *",
        "30 1-3 * * *",
        "0 30,40 2 * * *",
    ];
    // Fire times in UTC. Spring, 2026-03-29: 02:00 CET (01:00Z) becomes
    // 03:00 CEST. Autumn, 2026-10-25: 03:00 CEST (01:00Z) goes back to
    // 02:00 CET.
    let spring: [&[&str]; 4] = [
        &["2026-03-29T01:00:00.000000Z"],
        &["2026-03-29T01:00:00.000000Z", "2026-03-29T01:30:00.000000Z"],
        &[
            "2026-03-29T00:30:00.000000Z",
            "2026-03-29T01:00:00.000000Z",
            "2026-03-29T01:30:00.000000Z",
        ],
        &["2026-03-29T01:00:00.000000Z"],
    ];
    let autumn: [&[&str]; 4] = [
        &["2026-10-25T00:30:00.000000Z", "2026-10-25T00:40:00.000000Z"],
        &["2026-10-25T00:30:00.000000Z", "2026-10-25T02:30:00.000000Z"],
        &[
            "2026-10-24T23:30:00.000000Z",
            "2026-10-25T00:30:00.000000Z",
            "2026-10-25T02:30:00.000000Z",
        ],
        &["2026-10-25T00:30:00.000000Z", "2026-10-25T00:40:00.000000Z"],
    ];
    // Midnight local to 04:00 local, each night.
    let nights = [
        ("2026-03-28T23:00:00Z", 180, spring),
        ("2026-10-24T22:00:00Z", 300, autumn),
    ];
    let clock = ManualClock::at(utc(nights[0].0));
    let t = start_app_with_clock(db, 4, clock.clone()).await;
    let r = &t.router;
    for (night, (start, minutes, expected)) in nights.into_iter().enumerate() {
        clock.set(utc(start));
        let mut ids = Vec::new();
        for (i, cron) in crons.iter().enumerate() {
            let s = create(
                r,
                // `allow`: a run still going when the clock jumps ahead
                // must not make the next fire a skipped one.
                json!({"name": format!("dst-{night}-{i}"), "cron": cron,
                       "timezone": "Europe/Berlin", "script": "true", "overlap": "allow"}),
            )
            .await;
            ids.push(s["id"].as_i64().unwrap());
        }
        for minute in 1..=minutes {
            let now = Timestamp(utc(start).0 + minute * MIN);
            clock.set(now);
            // The scheduler has done this minute when every next fire is
            // past it.
            let what = format!("the scheduler to pass {start} + {minute} min");
            eventually(&what, PATIENCE, || async {
                let mut behind = false;
                for id in &ids {
                    let s = get_json(r, &format!("/api/v1/schedules/{id}")).await;
                    let next = utc(s["next_fire"].as_str().unwrap());
                    behind |= next <= now;
                }
                (!behind).then_some(())
            })
            .await;
        }
        for ((id, cron), want) in ids.iter().zip(crons).zip(expected) {
            let fired: Vec<String> = runs(r, *id)
                .await
                .iter()
                .map(|j| j["fire_time"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(fired, want, "{cron} on the night of {start}");
        }
        for id in ids {
            assert_eq!(
                delete(r, &format!("/api/v1/schedules/{id}")).await.status,
                StatusCode::NO_CONTENT
            );
        }
    }
    t.shutdown().await;
}

async fn a_schedule_after_another_runs_on_its_end_with_its_id_state_and_result(db: TestDatabase) {
    let t = start_app_with_clock(db, 2, ManualClock::at(at(0))).await;
    let r = &t.router;
    let backup = create(
        r,
        json!({"name": "backup", "cron": "@daily",
               "script": "printf '{\"rows\": 3}' > \"$JOBLOG_RESULT\""}),
    )
    .await;
    let backup_id = backup["id"].as_i64().unwrap();
    let report = create(
        r,
        json!({"name": "report", "after": {"schedule_id": backup_id, "states": ["succeeded", "failed"]},
               "script": "echo \"by=$JOBLOG_TRIGGER_JOB_ID state=$JOBLOG_TRIGGER_STATE\"; cat \"$JOBLOG_TRIGGER_RESULT\""}),
    )
    .await;
    let report_id = report["id"].as_i64().unwrap();
    assert!(report["cron"].is_null());
    assert_eq!(
        report["after"],
        json!({"schedule_id": backup_id, "states": ["succeeded", "failed"]})
    );
    assert!(report["next_fire"].is_null() && report["next_fires"] == json!([]));
    let shown = get_json(r, &format!("/api/v1/schedules/{backup_id}")).await;
    assert_eq!(
        shown["followers"],
        json!([{"schedule_id": report_id, "name": "report", "states": ["succeeded", "failed"]}])
    );

    // Its end queues one run, given what the triggering job was and made.
    let job = post(r, &format!("/api/v1/schedules/{backup_id}/run"), &json!({})).await;
    let job = job.json();
    assert_eq!(wait_finished(r, id_of(&job)).await["state"], "succeeded");
    let run = wait_runs(r, report_id, 1).await.remove(0);
    assert_eq!(run["triggered_by"], job["id"]);
    assert!(run["fire_time"].is_null());
    let run = wait_finished(r, id_of(&run)).await;
    assert_eq!(run["state"], "succeeded", "{run}");
    let lines: Vec<String> = whole_log(r, id_of(&run))
        .await
        .iter()
        .map(|rec| rec["message"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        lines,
        [
            format!("by={} state=succeeded", job["id"]),
            "{\"rows\": 3}".into()
        ]
    );
    assert_eq!(runs(r, report_id).await.len(), 1, "once");

    // Refused: no such schedule, a cycle, both cron and after; a
    // followed schedule is kept.
    let none = post(
        r,
        "/api/v1/schedules",
        &json!({"name": "x", "after": {"schedule_id": 9999, "states": ["failed"]}, "command": ["true"]}),
    )
    .await;
    let message = assert_error(&none, StatusCode::BAD_REQUEST, "invalid_request");
    assert_eq!(message, "after: there is no schedule 9999");
    let cycle = patch(
        r,
        &format!("/api/v1/schedules/{backup_id}"),
        &json!({"after": {"schedule_id": report_id, "states": ["succeeded"]}}),
    )
    .await;
    let message = assert_error(&cycle, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(
        message.starts_with("after: ") && message.contains("cycle"),
        "{message}"
    );
    let both = post(
        r,
        "/api/v1/schedules",
        &json!({"name": "y", "cron": "@daily", "after": {"schedule_id": backup_id, "states": ["failed"]},
                "command": ["true"]}),
    )
    .await;
    assert_error(&both, StatusCode::BAD_REQUEST, "invalid_request");
    let kept = delete(r, &format!("/api/v1/schedules/{backup_id}")).await;
    let message = assert_error(&kept, StatusCode::CONFLICT, "schedule_followed");
    assert!(message.contains("\"report\""), "{message}");

    // Moved onto cron, it follows no more, and the other one goes.
    let moved = patch(
        r,
        &format!("/api/v1/schedules/{report_id}"),
        &json!({"cron": "@daily"}),
    )
    .await;
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.text());
    let moved = moved.json();
    assert!(moved["after"].is_null() && moved["next_fire"].is_string());
    assert_eq!(
        delete(r, &format!("/api/v1/schedules/{backup_id}"))
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    t.shutdown().await;
}

/// A schedule with neither `cron` nor `after` is a saved job: no next
/// fire however the clock moves, a run each time it is run, and a cron
/// schedule edited to `"cron": null` becomes one.
async fn a_saved_job_never_fires_and_runs_when_run(db: TestDatabase) {
    let clock = ManualClock::at(at(0));
    let t = start_app_with_clock(db, 2, clock.clone()).await;
    let r = &t.router;
    let s = create(
        r,
        json!({"name": "restore-db", "command": ["echo", "restored"]}),
    )
    .await;
    let id = s["id"].as_i64().unwrap();
    assert_eq!(
        (&s["cron"], &s["after"], &s["next_fire"]),
        (&Value::Null, &Value::Null, &Value::Null),
        "{s}"
    );
    assert_eq!(s["next_fires"], json!([]));
    clock.set(at(60 * 24 * 400));
    let run = post(r, &format!("/api/v1/schedules/{id}/run"), &json!({})).await;
    assert_eq!(run.status, StatusCode::CREATED, "{}", run.text());
    let job = run.json();
    assert_eq!(
        (job["schedule_id"].as_i64(), &job["fire_time"]),
        (Some(id), &Value::Null)
    );
    wait_finished(r, id_of(&job)).await;
    // The clock moved a year on: still the one run it was asked for.
    assert_eq!(runs(r, id).await.len(), 1);
    let listed = get_json(r, "/api/v1/schedules").await;
    assert_eq!(listed["schedules"][0]["cron"], Value::Null);

    let nightly = create(
        r,
        json!({"name": "nightly", "cron": "0 2 * * *", "command": ["true"]}),
    )
    .await;
    let nid = nightly["id"].as_i64().unwrap();
    assert!(nightly["next_fire"].is_string());
    let reply = patch(
        r,
        &format!("/api/v1/schedules/{nid}"),
        &json!({"cron": null}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(reply.json()["next_fire"], Value::Null, "{}", reply.text());
    t.shutdown().await;
}
