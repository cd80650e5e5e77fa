//! `joblog notify add|list|show|edit|delete|test`: notification rules over
//! `/api/v1/notifications` (an admin's, on the server). Like every
//! command, these produce an [`Answer`] and print nothing; `test` also
//! says whether the notification was delivered, which is its exit code.

use anyhow::Context;
use serde_json::{json, Map, Value};

use super::api::{Api, REQUEST_TIMEOUT};
use super::args::{Header, NotifyCommand, RuleFields};
use super::commands::Answer;
use super::wire::{DeliveryPage, RuleView, TestSendView, WebhookView};
use super::UsageError;

/// Deliveries `notify show` lists: the latest, enough to see a pattern.
const SHOWN_DELIVERIES: u32 = 10;

/// The answer, and whether the command did what it was asked: false only
/// for a `test` whose notification was not delivered (exit code 1).
pub(super) async fn run(api: &Api, cmd: NotifyCommand) -> anyhow::Result<(Answer, bool)> {
    let answer = match cmd {
        NotifyCommand::Add {
            name,
            on,
            disabled,
            fields,
            json,
        } => {
            let mut when = Map::new();
            let states: Vec<&str> = on.0.iter().map(|s| s.name()).collect();
            when.insert("states".into(), json!(states));
            if let Some(pattern) = &fields.job_name {
                when.insert("name".into(), json!(pattern));
            }
            if let Some(id) = fields.schedule {
                when.insert("schedule_id".into(), json!(id));
            }
            let mut body = Map::new();
            body.insert("name".into(), json!(name));
            body.insert("when".into(), Value::Object(when));
            // clap's group made it exactly one of the two.
            match &fields.webhook {
                Some(url) => {
                    let hook = WebhookView {
                        url: url.clone(),
                        ..WebhookView::default()
                    };
                    body.insert("webhook".into(), webhook_of(hook, &fields)?);
                }
                None => {
                    body.insert("email".into(), email_of(&fields.email)?);
                }
            }
            if disabled {
                body.insert("enabled".into(), json!(false));
            }
            let raw = api
                .post_raw(api.url("/api/v1/notifications", &[])?, &Value::Object(body))
                .await?;
            rule_answer(api, raw, json)?
        }
        NotifyCommand::List { json } => list(api, json).await?,
        NotifyCommand::Show(a) => {
            let raw = api.get_raw(one(api, a.id, "")?, REQUEST_TIMEOUT).await?;
            // `--json` is the rule as the API gives it; its deliveries
            // are `GET …/deliveries`'s, not mixed into that document.
            if a.json {
                return Ok((Answer::Raw(raw), true));
            }
            let rule: RuleView = api.decode(&raw)?;
            let url = api.url(
                &format!("/api/v1/notifications/{}/deliveries", a.id),
                &[("limit", SHOWN_DELIVERIES.to_string())],
            )?;
            let page: DeliveryPage = api.get_json(url).await?;
            Answer::Rule {
                rule,
                deliveries: Some(page.deliveries),
            }
        }
        NotifyCommand::Edit {
            id,
            name,
            on,
            any_job_name,
            any_schedule,
            no_headers,
            no_secret_name,
            enable,
            disable,
            fields,
            json,
        } => {
            let mut body = Map::new();
            if let Some(name) = name {
                body.insert("name".into(), json!(name));
            }
            if enable || disable {
                body.insert("enabled".into(), json!(enable));
            }
            let changes_when = on.is_some()
                || fields.job_name.is_some()
                || fields.schedule.is_some()
                || any_job_name
                || any_schedule;
            let changes_hook = fields.webhook.is_some()
                || fields.format.is_some()
                || !fields.header.is_empty()
                || fields.secret_name.is_some()
                || no_headers
                || no_secret_name;
            // A PATCH replaces `when` and `webhook` whole: a part of one
            // is changed on the rule as it is now, and sent back whole.
            if changes_when || changes_hook {
                let rule: RuleView = api.get_json(one(api, id, "")?).await?;
                if changes_when {
                    let mut when = rule.when;
                    if let Some(states) = &on {
                        when.states = states.0.iter().map(|s| s.name().to_string()).collect();
                    }
                    if any_job_name {
                        when.name = None;
                    } else if let Some(pattern) = &fields.job_name {
                        when.name = Some(pattern.clone());
                    }
                    if any_schedule {
                        when.schedule_id = None;
                    } else if let Some(s) = fields.schedule {
                        when.schedule_id = Some(s);
                    }
                    body.insert("when".into(), serde_json::to_value(when)?);
                }
                if changes_hook {
                    // A new URL keeps the hook's format, headers and
                    // secret (a rotated URL is the same hook); an e-mail
                    // rule becomes a hook only with a URL.
                    let mut hook = match (rule.webhook, &fields.webhook) {
                        (Some(hook), _) => hook,
                        (None, Some(_)) => WebhookView::default(),
                        (None, None) => {
                            return Err(UsageError(format!(
                                "notify edit: rule {id} sends e-mail, not to a web hook: \
                                 give --webhook URL to make it one"
                            ))
                            .into())
                        }
                    };
                    if let Some(url) = &fields.webhook {
                        hook.url = url.clone();
                    }
                    if no_headers {
                        hook.headers.clear();
                    }
                    if no_secret_name {
                        hook.secret_name = None;
                    }
                    body.insert("webhook".into(), webhook_of(hook, &fields)?);
                }
            }
            if !fields.email.is_empty() {
                body.insert("email".into(), email_of(&fields.email)?);
            }
            if body.is_empty() {
                return Err(UsageError(
                    "notify edit: nothing to change (give the options to change)".into(),
                )
                .into());
            }
            let raw = api
                .patch_raw(one(api, id, "")?, &Value::Object(body))
                .await?;
            rule_answer(api, raw, json)?
        }
        NotifyCommand::Delete(a) => {
            api.delete_raw(one(api, a.id, "")?).await?;
            if a.json {
                Answer::Json(json!({"deleted": a.id}))
            } else {
                Answer::RuleDeleted(a.id)
            }
        }
        NotifyCommand::Test(a) => {
            let raw = api.post_raw(one(api, a.id, "/test")?, &json!({})).await?;
            let sent: TestSendView = api.decode(&raw)?;
            let delivered = sent.delivered;
            let answer = if a.json {
                Answer::Raw(raw)
            } else {
                Answer::RuleTested { id: a.id, sent }
            };
            return Ok((answer, delivered));
        }
    };
    Ok((answer, true))
}

/// `/api/v1/notifications/{id}{tail}`.
fn one(api: &Api, id: i64, tail: &str) -> anyhow::Result<reqwest::Url> {
    api.url(&format!("/api/v1/notifications/{id}{tail}"), &[])
}

fn rule_answer(api: &Api, raw: Vec<u8>, json: bool) -> anyhow::Result<Answer> {
    if json {
        return Ok(Answer::Raw(raw));
    }
    Ok(Answer::Rule {
        rule: api.decode(&raw)?,
        deliveries: None,
    })
}

/// Every rule, page by page.
async fn list(api: &Api, json: bool) -> anyhow::Result<Answer> {
    let all = api
        .every_page("/api/v1/notifications", "rules", REQUEST_TIMEOUT)
        .await?;
    if json {
        return Ok(Answer::Json(json!({"rules": all, "next_after_id": null})));
    }
    let views: Vec<RuleView> = all
        .into_iter()
        .map(serde_json::from_value)
        .collect::<Result<_, _>>()
        .with_context(|| format!("unexpected rule list from {}", api.shown()))?;
    Ok(Answer::Rules(views))
}

/// `hook` with the options given applied: `--format`, `--secret-name`,
/// and `--header`s, which replace the hook's headers (all of them, so a
/// header can be dropped by giving the others).
fn webhook_of(mut hook: WebhookView, f: &RuleFields) -> anyhow::Result<Value> {
    if let Some(format) = &f.format {
        hook.format = Some(format.clone());
    }
    if let Some(secret) = &f.secret_name {
        hook.secret_name = Some(secret.clone());
    }
    if !f.header.is_empty() {
        hook.headers = headers_of(&f.header)?;
    }
    Ok(serde_json::to_value(hook)?)
}

/// The `--header`s as the API takes them; a name given twice (HTTP names
/// are case-insensitive) is refused rather than one of them dropped.
fn headers_of(given: &[Header]) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
    let mut out = std::collections::BTreeMap::new();
    for h in given {
        if out.keys().any(|k: &String| k.eq_ignore_ascii_case(&h.name)) {
            return Err(UsageError(format!(
                "--header {}: given twice (send one value, or join them with a comma)",
                h.name
            ))
            .into());
        }
        out.insert(h.name.clone(), h.value.clone());
    }
    Ok(out)
}

/// `{"to": [...]}` of `--email a@x,b@x` (or repeated); an empty item
/// (`a@x,,b@x`) is a slip, refused here.
fn email_of(given: &[String]) -> anyhow::Result<Value> {
    let to: Vec<&str> = given.iter().map(|a| a.trim()).collect();
    if to.iter().any(|a| a.is_empty()) {
        return Err(UsageError(format!(
            "--email {}: an empty address in the list",
            given.join(",")
        ))
        .into());
    }
    Ok(json!({ "to": to }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str, value: &str) -> Header {
        Header {
            name: name.into(),
            value: value.into(),
        }
    }

    fn fields() -> RuleFields {
        RuleFields {
            job_name: None,
            schedule: None,
            webhook: None,
            format: None,
            header: Vec::new(),
            secret_name: None,
            email: Vec::new(),
        }
    }

    #[test]
    fn a_hook_keeps_what_no_option_changes() {
        let old: WebhookView = serde_json::from_value(json!({
            "url": "https://hooks.example.com/T0/B0", "format": "slack",
            "headers": {"X-Team": "ops"}, "secret_name": "HOOK_KEY", "future": 1
        }))
        .unwrap();
        let f = RuleFields {
            format: Some("teams".into()),
            ..fields()
        };
        assert_eq!(
            webhook_of(old.clone(), &f).unwrap(),
            json!({"url": "https://hooks.example.com/T0/B0", "format": "teams",
                   "headers": {"X-Team": "ops"}, "secret_name": "HOOK_KEY", "future": 1})
        );
        let f = RuleFields {
            header: vec![header("X-A", "1"), header("X-B", "2")],
            ..fields()
        };
        assert_eq!(
            webhook_of(old, &f).unwrap()["headers"],
            json!({"X-A": "1", "X-B": "2"})
        );
        let fresh = WebhookView {
            url: "https://h/x".into(),
            ..WebhookView::default()
        };
        assert_eq!(
            webhook_of(fresh, &fields()).unwrap(),
            json!({"url": "https://h/x", "headers": {}})
        );
    }

    #[test]
    fn a_header_twice_and_an_empty_address_are_refused() {
        let e = headers_of(&[header("X-Team", "a"), header("x-team", "b")]).unwrap_err();
        assert!(e.downcast_ref::<UsageError>().is_some());
        assert!(e.to_string().contains("x-team"), "{e}");
        let e = email_of(&["a@x.org".into(), " ".into()]).unwrap_err();
        assert!(e.to_string().contains("empty address"), "{e}");
        assert_eq!(
            email_of(&[" a@x.org".into(), "b@x.org".into()]).unwrap(),
            json!({"to": ["a@x.org", "b@x.org"]})
        );
    }
}
