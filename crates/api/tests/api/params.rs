//! Saved jobs' parameters through the API, with real `sh` jobs: a schema
//! refused at save naming the keyword, values refused before a job
//! exists naming the parameter, the values a job sees (one variable each
//! and a JSON file), secret ones masked and never shown, a rerun asking
//! for them again, an ad-hoc job's own schema, and a trigger taking them
//! from the triggering job's result.

use axum::http::StatusCode;
use joblog_store::testing::TestDatabase;
use serde_json::{json, Value};

use crate::common::*;
use crate::schedules::{create, runs, wait_runs};

joblog_store::backend_tests! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    a_run_is_given_checked_parameters_as_variables_and_a_file,
    a_schema_a_form_could_not_show_is_refused_at_save,
    a_rerun_reuses_the_values_and_asks_for_secret_ones_again,
    an_ad_hoc_job_declares_its_own_parameters,
    a_trigger_takes_parameters_from_the_result,
    a_retry_is_given_the_secret_parameters_of_its_first_attempt,
}

/// A restore job's schema: every kind of parameter.
fn restore_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "env": {"type": "string", "enum": ["prod", "staging"], "description": "where"},
            "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
            "dry_run": {"type": "boolean", "default": false},
            "notes": {"type": "string", "format": "multiline"},
            "password": {"type": "string", "secret": true}
        },
        "required": ["env"]
    })
}

/// Prints each parameter's variable, then makes the file `JOBLOG_PARAMS`
/// names its result (in a last line without newline).
const SHOW_PARAMS: &str = r#"printf 'env=%s\n' "$JOBLOG_PARAM_ENV"
printf 'count=%s dry_run=%s\n' "$JOBLOG_PARAM_COUNT" "$JOBLOG_PARAM_DRY_RUN"
printf 'password=%s\n' "$JOBLOG_PARAM_PASSWORD"
printf '::set-result::'; cat "$JOBLOG_PARAMS""#;

/// The saved job `restore-db`: [`SHOW_PARAMS`] under [`restore_schema`].
async fn restore_db(r: &axum::Router) -> Value {
    create(
        r,
        json!({"name": "restore-db", "script": SHOW_PARAMS, "params": restore_schema()}),
    )
    .await
}

async fn run(r: &axum::Router, id: i64, params: Value) -> Reply {
    post(
        r,
        &format!("/api/v1/schedules/{id}/run"),
        &json!({"params": params}),
    )
    .await
}

async fn result(r: &axum::Router, job: i64) -> Value {
    let reply = get(r, &format!("/api/v1/jobs/{job}/result")).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json()
}

async fn a_run_is_given_checked_parameters_as_variables_and_a_file(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let r = &t.router;
    let s = restore_db(r).await;
    let id = s["id"].as_i64().unwrap();
    assert_eq!(
        s["params"]["properties"]["env"]["enum"],
        json!(["prod", "staging"])
    );
    assert_eq!(s["params"]["required"], json!(["env"]));

    // Refused before a job exists, naming the parameter and the fault.
    for (params, names) in [
        (
            json!({"env": "qa"}),
            r#"params.env: "qa" is not one of prod, staging"#,
        ),
        (json!({}), "params.env: missing"),
        (json!({"env": "prod", "count": 11}), "params.count"),
        (json!({"env": "prod", "count": "3"}), "params.count"),
        (json!({"env": "prod", "dry_run": "yes"}), "params.dry_run"),
        (json!({"env": "prod", "bogus": 1}), "params.bogus"),
    ] {
        let reply = run(r, id, params.clone()).await;
        let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
        assert!(message.starts_with(names), "{params}: {message}");
    }
    assert!(runs(r, id).await.is_empty(), "no job for a refused run");

    let notes = "first line\nsecond 'quoted' $HOME `uname` ; rm -rf / é 中文 🙂";
    let reply = run(
        r,
        id,
        json!({"env": "staging", "notes": notes, "password": "hunter2-sekrit"}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let job = wait_finished(r, id_of(&reply.json())).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    // Recorded with defaults filled, the secret by name only.
    assert_eq!(
        job["params"],
        json!({"env": "staging", "count": 3, "dry_run": false, "notes": notes, "password": null})
    );
    assert_eq!(
        job["params_schema"]["properties"]["password"]["secret"],
        true
    );
    let lines = messages_of(&whole_log(r, id_of(&job)).await, "output");
    assert_eq!(
        lines,
        ["env=staging", "count=3 dry_run=false", "password=***"],
        "the secret is masked in the log"
    );
    // The file holds every value, the secret one too, byte for byte.
    assert_eq!(
        result(r, id_of(&job)).await,
        json!({"env": "staging", "count": 3, "dry_run": false, "notes": notes,
               "password": "***"}),
        "a result is masked like the log"
    );

    // A run without a body runs with the defaults, when there are enough.
    let plain = create(
        r,
        json!({"name": "plain", "script": SHOW_PARAMS,
               "params": {"properties": {"env": {"type": "string", "default": "prod"}}}}),
    )
    .await;
    let reply = post_raw(
        r,
        &format!("/api/v1/schedules/{}/run", plain["id"]),
        axum::body::Body::empty(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let job = wait_finished(r, id_of(&reply.json())).await;
    assert_eq!(job["params"], json!({"env": "prod"}));
    assert_eq!(
        messages_of(&whole_log(r, id_of(&job)).await, "output")[0],
        "env=prod"
    );
    // A schedule without parameters takes none.
    let bare = create(r, json!({"name": "bare", "command": ["true"]})).await;
    let reply = run(r, bare["id"].as_i64().unwrap(), json!({"x": 1})).await;
    let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(
        message.contains("params.x: this job takes no parameters"),
        "{message}"
    );
}

async fn a_schema_a_form_could_not_show_is_refused_at_save(db: TestDatabase) {
    let t = start_app(db, 1).await;
    let r = &t.router;
    let refused = |body: Value, at: &'static str| async move {
        let reply = post(r, "/api/v1/schedules", &body).await;
        let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
        assert!(message.starts_with(at), "{body}: {message}");
        message
    };
    let base = |params: Value| json!({"name": "x", "command": ["true"], "params": params});
    refused(
        base(json!({"properties": {"a": {"type": "string", "oneOf": []}}})),
        "params.properties.a.oneOf: not supported",
    )
    .await;
    refused(
        base(json!({"properties": {"a": {"type": "array"}}})),
        "params.properties.a.type",
    )
    .await;
    refused(
        base(json!({"properties": {"a": {"type": "integer", "secret": true}}})),
        "params.properties.a.secret",
    )
    .await;
    refused(
        base(json!({"properties": {"a": {"type": "string", "enum": ["x"], "default": "y"}}})),
        "params.properties.a.default",
    )
    .await;
    refused(
        base(json!({"additionalProperties": false})),
        "params.additionalProperties",
    )
    .await;
    // A schedule that fires by itself runs with the defaults: a required
    // parameter without one would leave it nothing to run with.
    let message = refused(
        json!({"name": "nightly", "cron": "@daily", "command": ["true"],
               "params": {"properties": {"db": {"type": "string"}}, "required": ["db"]}}),
        "params: ",
    )
    .await;
    assert!(
        message.contains("db is required without a default"),
        "{message}"
    );
    refused(
        json!({"name": "nightly", "cron": "@daily", "command": ["true"],
               "params": {"properties": {"db": {"type": "string", "default": "x"}}},
               "params_from_result": {"db": "/db"}}),
        "params_from_result: ",
    )
    .await;
    // A saved job may ask for it; made a cron schedule, it may not.
    let saved = create(
        r,
        json!({"name": "restore", "command": ["true"],
               "params": {"properties": {"db": {"type": "string"}}, "required": ["db"]}}),
    )
    .await;
    let id = saved["id"].as_i64().unwrap();
    let reply = patch(
        r,
        &format!("/api/v1/schedules/{id}"),
        &json!({"cron": "@daily"}),
    )
    .await;
    let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(message.starts_with("params: "), "{message}");
    // Its parameters change with a patch, and go with null.
    let changed = patch(
        r,
        &format!("/api/v1/schedules/{id}"),
        &json!({"params": {"properties": {"db": {"type": "string", "default": "main"}}}}),
    )
    .await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.text());
    assert_eq!(
        changed.json()["params"]["properties"]["db"]["default"],
        "main"
    );
    let cleared = patch(
        r,
        &format!("/api/v1/schedules/{id}"),
        &json!({"params": null}),
    )
    .await;
    assert_eq!(cleared.json()["params"], Value::Null);
}

async fn a_rerun_reuses_the_values_and_asks_for_secret_ones_again(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let r = &t.router;
    let s = restore_db(r).await;
    let id = s["id"].as_i64().unwrap();
    let first = run(
        r,
        id,
        json!({"env": "prod", "count": 5, "password": "pw-one"}),
    )
    .await;
    let first = wait_finished(r, id_of(&first.json())).await;
    let rerun = format!("/api/v1/jobs/{}/rerun", id_of(&first));
    let reply = post(r, &rerun, &json!({})).await;
    let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(message.starts_with("params.password: "), "{message}");
    assert!(message.contains("give it again"), "{message}");
    let reply = post(
        r,
        &rerun,
        &json!({"params": {"password": "pw-two", "count": 7}}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.text());
    let again = wait_finished(r, id_of(&reply.json())).await;
    assert_eq!(again["state"], "succeeded", "{again}");
    assert_eq!(again["rerun_of"], first["id"]);
    assert_eq!(
        again["params"],
        json!({"env": "prod", "count": 7, "dry_run": false, "password": null})
    );
    let lines = messages_of(&whole_log(r, id_of(&again)).await, "output");
    assert_eq!(lines[..2], ["env=prod", "count=7 dry_run=false"]);
    assert_eq!(lines[2], "password=***");
    // A value the schema refuses is refused on a rerun too.
    let reply = post(
        r,
        &rerun,
        &json!({"params": {"password": "x", "env": "qa"}}),
    )
    .await;
    let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(message.starts_with("params.env: "), "{message}");
}

async fn an_ad_hoc_job_declares_its_own_parameters(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let r = &t.router;
    let reply = post(
        r,
        "/api/v1/jobs",
        &json!({"script": "echo \"$JOBLOG_PARAM_HOST\"", "params": {"host": "db1"}}),
    )
    .await;
    let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(message.starts_with("params: "), "{message}");
    let reply = post(
        r,
        "/api/v1/jobs",
        &json!({"script": "echo \"$JOBLOG_PARAM_HOST\"",
                "params_schema": {"properties": {"host": {"type": "string", "pattern": "^db[0-9]+$"}}},
                "params": {"host": "web1"}}),
    )
    .await;
    let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(message.starts_with("params.host: "), "{message}");
    let reply = post(
        r,
        "/api/v1/jobs",
        &json!({"script": "echo x", "params_schema": {"properties": {"h": {"type": "str"}}}}),
    )
    .await;
    let message = assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_request");
    assert!(
        message.starts_with("params_schema.properties.h.type: "),
        "{message}"
    );
    let job = submit(
        r,
        json!({"script": "echo \"$JOBLOG_PARAM_HOST\"",
               "params_schema": {"properties": {"host": {"type": "string", "pattern": "^db[0-9]+$"}}},
               "params": {"host": "db7"}}),
    )
    .await;
    let job = wait_finished(r, id_of(&job)).await;
    assert_eq!(job["params"], json!({"host": "db7"}));
    assert_eq!(
        messages_of(&whole_log(r, id_of(&job)).await, "output"),
        ["db7"]
    );
}

async fn a_trigger_takes_parameters_from_the_result(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let r = &t.router;
    let backup = create(
        r,
        json!({"name": "backup", "script": "printf '{\"database\": \"%s\"}' \"$JOBLOG_PARAM_DB\" > \"$JOBLOG_RESULT\"",
               "params": {"properties": {"db": {"type": "string", "default": "sales"}}}}),
    )
    .await;
    let backup_id = backup["id"].as_i64().unwrap();
    let restore = create(
        r,
        json!({"name": "verify", "after": {"schedule_id": backup_id, "states": ["succeeded"]},
               "script": "echo \"verify $JOBLOG_PARAM_DB keep=$JOBLOG_PARAM_KEEP\"",
               "params": {"properties": {"db": {"type": "string", "pattern": "^[a-z]+$"},
                                         "keep": {"type": "integer", "default": 7}},
                          "required": ["db"]},
               "params_from_result": {"db": "/database"}}),
    )
    .await;
    let verify_id = restore["id"].as_i64().unwrap();
    assert_eq!(restore["params_from_result"], json!({"db": "/database"}));

    let first = run(r, backup_id, json!({})).await;
    assert_eq!(
        wait_finished(r, id_of(&first.json())).await["state"],
        "succeeded"
    );
    let verify = wait_runs(r, verify_id, 1).await.remove(0);
    let verify = wait_finished(r, id_of(&verify)).await;
    assert_eq!(verify["state"], "succeeded", "{verify}");
    assert_eq!(verify["params"], json!({"db": "sales", "keep": 7}));
    assert_eq!(
        messages_of(&whole_log(r, id_of(&verify)).await, "output"),
        ["verify sales keep=7"]
    );

    // A result the schema refuses: the run is queued (the trigger
    // happened) and fails at once, its log naming the parameter.
    let second = run(r, backup_id, json!({"db": "Not Valid"})).await;
    assert_eq!(
        wait_finished(r, id_of(&second.json())).await["state"],
        "succeeded"
    );
    let verify = wait_runs(r, verify_id, 2).await.remove(1);
    let verify = wait_finished(r, id_of(&verify)).await;
    assert_eq!(verify["state"], "failed", "{verify}");
    let errors = messages_of(&whole_log(r, id_of(&verify)).await, "error");
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("joblog: not started: params.db: ")
                && e.contains(&format!("job {}'s result", id_of(&second.json())))),
        "{errors:?}"
    );
}

async fn a_retry_is_given_the_secret_parameters_of_its_first_attempt(db: TestDatabase) {
    let t = start_app(db, 2).await;
    let r = &t.router;
    let marker = t.path("first-attempt-ran");
    let s = create(
        r,
        json!({"name": "flaky-restore",
               "script": format!("echo \"token=$JOBLOG_PARAM_TOKEN\"; [ -e {m} ] || {{ touch {m}; exit 1; }}",
                                 m = marker.display()),
               "params": {"properties": {"token": {"type": "string", "secret": true}},
                          "required": ["token"]},
               "retries": {"attempts": 2, "backoff_s": 0}}),
    )
    .await;
    let id = s["id"].as_i64().unwrap();
    let first = run(r, id, json!({"token": "tok-retry-7"})).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text());
    let first = wait_finished(r, id_of(&first.json())).await;
    assert_eq!(first["state"], "failed");
    let second = wait_runs(r, id, 2).await.remove(1);
    let second = wait_finished(r, id_of(&second)).await;
    assert_eq!(
        (second["state"].as_str(), second["attempt"].as_u64()),
        (Some("succeeded"), Some(2)),
        "{second}"
    );
    assert_eq!(
        messages_of(&whole_log(r, id_of(&second)).await, "output"),
        ["token=***"],
        "the second attempt has the secret, masked"
    );
}
