//! `joblog schedule add|list|show|edit|enable|disable|delete|run`:
//! schedules over `/api/v1/schedules`. Like every command, these produce
//! an [`Answer`] and print nothing.

use anyhow::Context;
use serde_json::{json, Map, Value};

use super::api::{Api, REQUEST_TIMEOUT};
use super::args::{ScheduleCommand, ScheduleFields, TriggerArgs};
use super::commands::{check_command, read_script, resolve_kvs, Answer};
use super::wire::{JobView, ScheduleView};

pub(super) async fn run(api: &Api, cmd: ScheduleCommand) -> anyhow::Result<Answer> {
    match cmd {
        ScheduleCommand::Add {
            name,
            cron,
            trigger,
            disabled,
            fields,
            json,
        } => {
            if fields.script.is_none() && fields.command.is_empty() {
                return Err(super::UsageError(
                    "schedule add needs the command its jobs run (after --) or --script FILE"
                        .into(),
                )
                .into());
            }
            let mut body = body_of(fields)?;
            body.insert("name".into(), json!(name));
            if let Some(cron) = cron {
                body.insert("cron".into(), json!(cron));
            }
            if let Some(after) = after_body(api, trigger).await? {
                body.insert("after".into(), after);
            }
            if disabled {
                body.insert("enabled".into(), json!(false));
            }
            let raw = api
                .post_raw(api.url("/api/v1/schedules", &[])?, &Value::Object(body))
                .await?;
            schedule_answer(api, raw, json).await
        }
        ScheduleCommand::List { json } => list(api, json).await,
        ScheduleCommand::Show(a) => {
            let raw = api.get_raw(one(api, a.id, "")?, REQUEST_TIMEOUT).await?;
            schedule_answer(api, raw, a.json).await
        }
        ScheduleCommand::Edit {
            id,
            name,
            cron,
            trigger,
            fields,
            json,
        } => {
            let mut body = body_of(fields)?;
            if let Some(name) = name {
                body.insert("name".into(), json!(name));
            }
            if let Some(cron) = cron {
                body.insert("cron".into(), json!(cron));
            }
            if let Some(after) = after_body(api, trigger).await? {
                body.insert("after".into(), after);
            }
            if body.is_empty() {
                return Err(super::UsageError(
                    "schedule edit: nothing to change (give the options to change)".into(),
                )
                .into());
            }
            let raw = api
                .patch_raw(one(api, id, "")?, &Value::Object(body))
                .await?;
            schedule_answer(api, raw, json).await
        }
        ScheduleCommand::Enable(a) => set_enabled(api, a.id, true, a.json).await,
        ScheduleCommand::Disable(a) => set_enabled(api, a.id, false, a.json).await,
        ScheduleCommand::Delete(a) => {
            api.delete_raw(one(api, a.id, "")?).await?;
            if a.json {
                return Ok(Answer::Json(json!({"deleted": a.id})));
            }
            Ok(Answer::ScheduleDeleted(a.id))
        }
        ScheduleCommand::Run(a) => {
            let id = schedule_id(api, &a.schedule, "schedule run").await?;
            // Its parameters' types read each --param's text.
            let params = if a.param.is_empty() {
                Map::new()
            } else {
                let raw = api.get_raw(one(api, id, "")?, REQUEST_TIMEOUT).await?;
                let shown: Value = api.decode(&raw)?;
                super::params::typed(shown.get("params"), a.param)?
            };
            let raw = api
                .post_raw(one(api, id, "/run")?, &json!({"params": params}))
                .await?;
            if a.json {
                return Ok(Answer::Raw(raw));
            }
            let job: JobView = api.decode(&raw)?;
            Ok(Answer::Submitted(job.id))
        }
    }
}

/// `/api/v1/schedules/{id}{tail}`.
fn one(api: &Api, id: i64, tail: &str) -> anyhow::Result<reqwest::Url> {
    api.url(&format!("/api/v1/schedules/{id}{tail}"), &[])
}

/// `{"schedule_id": N, "states": [...]}` for `--after` and `--on`; the
/// schedule named by its name or its id.
async fn after_body(api: &Api, t: TriggerArgs) -> anyhow::Result<Option<Value>> {
    let Some(after) = t.after else {
        return Ok(None);
    };
    let states: Vec<&str> =
        t.on.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
    let id = schedule_id(api, &after, "--after").await?;
    Ok(Some(json!({"schedule_id": id, "states": states})))
}

/// The id of the schedule `given` names: an id as it is, a name looked up.
async fn schedule_id(api: &Api, given: &str, flag: &str) -> anyhow::Result<i64> {
    if let Ok(id) = given.parse::<i64>() {
        return Ok(id);
    }
    let all = api
        .every_page("/api/v1/schedules", "schedules", REQUEST_TIMEOUT)
        .await?;
    let id = all
        .iter()
        .find(|s| s["name"] == given)
        .and_then(|s| s["id"].as_i64())
        .ok_or_else(|| {
            super::UsageError(format!(
                "{flag}: no schedule is named {given:?} (`joblog schedule list` shows them)"
            ))
        })?;
    Ok(id)
}

/// A schedule shown, with the name of the schedule it runs after (one
/// request more; a schedule deleted since shows its id alone).
async fn schedule_answer(api: &Api, raw: Vec<u8>, json: bool) -> anyhow::Result<Answer> {
    if json {
        return Ok(Answer::Raw(raw));
    }
    let mut s: ScheduleView = api.decode(&raw)?;
    if let Some(after) = &s.after {
        if let Ok(raw) = api
            .get_raw(one(api, after.schedule_id, "")?, REQUEST_TIMEOUT)
            .await
        {
            let named: ScheduleView = api.decode(&raw)?;
            s.after_name = Some(named.name);
        }
    }
    Ok(Answer::Schedule(s))
}

async fn set_enabled(api: &Api, id: i64, enabled: bool, json: bool) -> anyhow::Result<Answer> {
    let raw = api
        .patch_raw(one(api, id, "")?, &json!({ "enabled": enabled }))
        .await?;
    schedule_answer(api, raw, json).await
}

/// Every schedule, page by page.
async fn list(api: &Api, json: bool) -> anyhow::Result<Answer> {
    let all = api
        .every_page("/api/v1/schedules", "schedules", REQUEST_TIMEOUT)
        .await?;
    if json {
        return Ok(Answer::Json(
            json!({"schedules": all, "next_after_id": null}),
        ));
    }
    let views: Vec<ScheduleView> = all
        .into_iter()
        .map(serde_json::from_value)
        .collect::<Result<_, _>>()
        .with_context(|| format!("unexpected schedule list from {}", api.shown()))?;
    Ok(Answer::Schedules(views))
}

/// The request body the options given make: only what they name.
fn body_of(f: ScheduleFields) -> anyhow::Result<Map<String, Value>> {
    let mut body = Map::new();
    match &f.script {
        Some(file) => {
            body.insert("script".into(), json!(read_script(file)?));
            if let Some(shell) = &f.shell {
                body.insert("shell".into(), json!(shell));
            }
        }
        None if !f.command.is_empty() => {
            check_command(&f.command)?;
            body.insert("command".into(), json!(f.command));
        }
        None => {}
    }
    let env = resolve_kvs("--env", f.env)?;
    if !env.is_empty() {
        body.insert("env".into(), json!(env));
    }
    match f.params_schema.as_deref() {
        Some("none") => {
            body.insert("params".into(), Value::Null);
        }
        Some(file) => {
            body.insert("params".into(), super::params::read_schema(file)?);
        }
        None => {}
    }
    if !f.param_from_result.is_empty() {
        let mut mapping = Map::new();
        for kv in f.param_from_result {
            let Some(pointer) = kv.value else {
                return Err(super::UsageError(format!(
                    "--param-from-result {}: give NAME=POINTER, such as db=/database",
                    kv.key
                ))
                .into());
            };
            mapping.insert(kv.key, json!(pointer));
        }
        body.insert("params_from_result".into(), Value::Object(mapping));
    }
    if !f.secret.is_empty() {
        body.insert("secrets".into(), json!(f.secret));
    }
    if let Some(tz) = f.tz {
        body.insert("timezone".into(), json!(tz));
    }
    if let Some(t) = f.timeout {
        body.insert("timeout_s".into(), json!(t.as_secs_f64()));
    }
    if let Some(c) = f.cwd {
        body.insert("cwd".into(), json!(c));
    }
    if let Some(o) = f.overlap {
        body.insert("overlap".into(), json!(o));
    }
    if let Some(m) = f.missed {
        body.insert("missed".into(), json!(m));
    }
    if f.attempts.is_some() || f.backoff.is_some() {
        body.insert(
            "retries".into(),
            json!({
                "attempts": f.attempts.unwrap_or(1),
                "backoff_s": f.backoff.map_or(0.0, |d| d.as_secs_f64()),
            }),
        );
    }
    if let Some(k) = f.concurrency_key {
        body.insert("concurrency_key".into(), json!(k));
    }
    if let Some(m) = f.max_concurrent {
        body.insert("max_concurrent".into(), json!(m));
    }
    if let Some(labels) = f.node_selector {
        body.insert("node_selector".into(), json!(labels));
    }
    if let Some(folder) = f.folder {
        body.insert("folder".into(), json!(folder));
    }
    Ok(body)
}
