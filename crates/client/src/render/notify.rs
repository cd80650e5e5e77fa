//! Notification rules as text: the `notify list` table, the `notify show`
//! listing with its latest deliveries, and what a `notify test` came to.
//! Every string from the server is escaped before it is shown.
//!
//! A web hook's URL is often its credential (Slack's and Teams' are): the
//! table, which is made to be pasted and shared, shows its scheme and
//! host only; `show` names one rule an admin asked for, and shows it
//! whole.

use super::escape_display;
use super::job::{short_time, table, truncate_chars};
use super::schedule::key_values;
use crate::wire::{DeliveryView, RuleView, TestSendView};

fn text(s: &str) -> String {
    escape_display(s, false).into_owned()
}

/// A server's message on one line (an answer's body may have many),
/// escaped and cut to `max` characters.
fn one_line(s: &str, max: usize) -> String {
    let joined = s.split_whitespace().collect::<Vec<_>>().join(" ");
    truncate_chars(&text(&joined), max)
}

/// `https://hooks.slack.com/…`: the URL without its path, query or any
/// credentials, which are where a hook's secret is.
fn hook_origin(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        // Not a URL the server would have taken: nothing of it is shown.
        return "(web hook)".into();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let host = rest[..end].rsplit('@').next().unwrap_or_default();
    let more = if rest[end..].trim_start_matches('/').is_empty() {
        "/"
    } else {
        "/…"
    };
    text(&format!("{scheme}://{host}{more}"))
}

/// Which jobs it tells of besides their state: `backup*`, `schedule 3`,
/// both, or `any`.
fn which_jobs(r: &RuleView) -> String {
    match (&r.when.name, r.when.schedule_id) {
        (Some(n), Some(s)) => format!("{} of schedule {s}", text(n)),
        (Some(n), None) => text(n),
        (None, Some(s)) => format!("schedule {s}"),
        (None, None) => "any".into(),
    }
}

/// Where it sends, as the table shows it.
fn target_short(r: &RuleView) -> String {
    match (&r.webhook, &r.email) {
        (Some(w), _) => format!(
            "{} {}",
            text(w.format.as_deref().unwrap_or("json")),
            hook_origin(&w.url)
        ),
        (None, Some(e)) => format!("email {}", truncate_chars(&text(&e.to.join(",")), 60)),
        (None, None) => "-".into(),
    }
}

pub(super) fn rules_table(rules: &[RuleView]) -> String {
    let header = ["ID", "NAME", "ENABLED", "ON", "JOBS", "TARGET"];
    let rows: Vec<[String; 6]> = rules
        .iter()
        .map(|r| {
            [
                r.id.to_string(),
                truncate_chars(&text(&r.name), 40),
                if r.enabled { "yes" } else { "no" }.into(),
                text(&r.when.states.join(",")),
                truncate_chars(&which_jobs(r), 40),
                target_short(r),
            ]
        })
        .collect();
    table(&header, &rows, &[true, false, false, false, false, false])
}

/// The rule in full and, for `show`, its latest deliveries (`None`: the
/// rule `add` or `edit` answered with).
pub(super) fn show_text(r: &RuleView, deliveries: Option<&[DeliveryView]>) -> String {
    let mut rows: Vec<(String, String)> = vec![
        ("id".into(), r.id.to_string()),
        ("name".into(), text(&r.name)),
        (
            "enabled".into(),
            if r.enabled { "yes" } else { "no" }.into(),
        ),
        ("on".into(), text(&r.when.states.join(", "))),
        ("jobs".into(), which_jobs(r)),
    ];
    if let Some(w) = &r.webhook {
        rows.push(("webhook".into(), text(&w.url)));
        rows.push(("format".into(), text(w.format.as_deref().unwrap_or("json"))));
        if !w.headers.is_empty() {
            let lines: Vec<String> = w
                .headers
                .iter()
                .map(|(k, v)| format!("{}: {}", text(k), text(v)))
                .collect();
            rows.push(("headers".into(), lines.join("\n")));
        }
        rows.push((
            "signed".into(),
            match &w.secret_name {
                Some(s) => format!("with the secret {}", text(s)),
                None => "no".into(),
            },
        ));
    }
    if let Some(e) = &r.email {
        let to: Vec<String> = e.to.iter().map(|a| text(a)).collect();
        rows.push(("email".into(), to.join("\n")));
    }
    if let Some(t) = &r.created_at {
        rows.push(("created".into(), short_time(Some(t))));
    }
    if let Some(t) = &r.updated_at {
        rows.push(("updated".into(), short_time(Some(t))));
    }
    let mut out = key_values(rows);
    match deliveries {
        None => {}
        Some([]) => out.push_str("\nno deliveries yet\n"),
        Some(list) => {
            out.push_str("\nlatest deliveries:\n");
            out.push_str(&deliveries_table(list));
        }
    }
    out
}

fn deliveries_table(list: &[DeliveryView]) -> String {
    let header = [
        "ID", "JOB", "STATE", "ATTEMPTS", "CREATED", "STATUS", "ERROR",
    ];
    let rows: Vec<[String; 7]> = list
        .iter()
        .map(|d| {
            let state = match (&d.next_try_at, d.state.as_str()) {
                (Some(next), "pending") => format!("pending, next try {}", short_time(Some(next))),
                _ => text(&d.state),
            };
            [
                d.id.to_string(),
                d.job_id.to_string(),
                state,
                d.attempts.to_string(),
                short_time(d.created_at.as_deref()),
                d.last_status.map_or_else(|| "-".into(), |s| s.to_string()),
                d.last_error
                    .as_deref()
                    .map_or_else(|| "-".into(), |e| one_line(e, 60)),
            ]
        })
        .collect();
    table(
        &header,
        &rows,
        &[true, true, false, true, false, true, false],
    )
}

/// `rule 4: test delivered (HTTP 200) of job 812`, or why it was not.
pub(super) fn tested(id: i64, s: &TestSendView) -> String {
    let status = s.status.map(|c| format!(" (HTTP {c})")).unwrap_or_default();
    let job = match s.job_id {
        Some(j) => format!("job {j}"),
        None => "an example job".into(),
    };
    if s.delivered {
        format!("rule {id}: test delivered{status} of {job}\n")
    } else {
        let why = s
            .error
            .as_deref()
            .map(|e| format!(": {}", one_line(e, 300)))
            .unwrap_or_default();
        format!("rule {id}: test of {job} not delivered{status}{why}\n")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rule(overrides: serde_json::Value) -> RuleView {
        let mut v = json!({
            "id": 4, "name": "backup-failures",
            "when": {"states": ["failed", "timed_out"], "name": "backup*", "schedule_id": null},
            "webhook": {"url": "https://hooks.slack.com/services/T0/B0/s3cr3t?x=1", "format": "slack",
                        "headers": {"X-Team": "ops"}, "secret_name": "HOOK_KEY"},
            "enabled": true,
            "created_at": "2026-11-24T01:30:00.100000Z", "updated_at": "2026-11-24T01:30:00.100000Z"
        });
        for (k, val) in overrides.as_object().unwrap() {
            v[k] = val.clone();
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_list_shows_a_hook_by_its_host_only() {
        let mail = rule(json!({"id": 12, "name": "all\u{1b}", "enabled": false,
            "when": {"states": ["succeeded"], "schedule_id": 3},
            "webhook": null, "email": {"to": ["ops@example.com", "me@example.com"]}}));
        let plain = rule(json!({"id": 13, "name": "root",
            "when": {"states": ["interrupted"]},
            "webhook": {"url": "http://user:pw@10.0.0.1:8080"}}));
        let shown = rules_table(&[rule(json!({})), mail, plain]);
        assert_eq!(
            shown,
            "ID  NAME             ENABLED  ON                JOBS        TARGET\n \
             4  backup-failures  yes      failed,timed_out  backup*     slack https://hooks.slack.com/…\n\
             12  all\\x1b          no       succeeded         schedule 3  email ops@example.com,me@example.com\n\
             13  root             yes      interrupted       any         json http://10.0.0.1:8080/\n"
        );
        assert!(
            !shown.contains("s3cr3t") && !shown.contains("pw"),
            "{shown}"
        );
        assert_eq!(
            hook_origin("https://h.example/?token=s"),
            "https://h.example/…"
        );
        assert_eq!(hook_origin("hooks.example/s3cr3t"), "(web hook)");
    }

    #[test]
    fn a_rule_is_shown_whole_with_its_deliveries() {
        let deliveries: Vec<DeliveryView> = serde_json::from_value(json!([
            {"id": 31, "rule_id": 4, "job_id": 812, "state": "failed", "attempts": 5,
             "created_at": "2026-11-24T01:30:00.100000Z", "next_try_at": null,
             "delivered_at": null, "last_status": 500, "last_error": "upstream\nbroke"},
            {"id": 30, "rule_id": 4, "job_id": 811, "state": "delivered", "attempts": 1,
             "created_at": "2026-11-23T01:30:00.100000Z", "next_try_at": null,
             "delivered_at": "2026-11-23T01:30:01.000000Z", "last_status": 200, "last_error": null}
        ]))
        .unwrap();
        let shown = show_text(&rule(json!({})), Some(&deliveries));
        for line in [
            "on:      failed, timed_out\n",
            "jobs:    backup*\n",
            "webhook: https://hooks.slack.com/services/T0/B0/s3cr3t?x=1\n",
            "format:  slack\n",
            "headers: X-Team: ops\n",
            "signed:  with the secret HOOK_KEY\n",
            "\nlatest deliveries:\n",
            "ID  JOB  STATE      ATTEMPTS  CREATED                  STATUS  ERROR\n",
            "31  812  failed            5  2026-11-24 01:30:00 UTC     500  upstream broke\n",
            "30  811  delivered         1  2026-11-23 01:30:00 UTC     200  -\n",
        ] {
            assert!(shown.contains(line), "{line:?} not in:\n{shown}");
        }
        let mail = rule(json!({"webhook": null, "email": {"to": ["a@x.org", "b@x.org"]}}));
        let shown = show_text(&mail, Some(&[]));
        assert!(
            shown.contains("email:   a@x.org\n         b@x.org\n"),
            "{shown}"
        );
        assert!(shown.ends_with("\nno deliveries yet\n"), "{shown}");
        assert!(!show_text(&mail, None).contains("deliveries"));
    }

    #[test]
    fn a_test_says_what_came_of_it() {
        let sent = |v| serde_json::from_value::<TestSendView>(v).unwrap();
        assert_eq!(
            tested(
                4,
                &sent(json!({"delivered": true, "status": 200, "error": null, "job_id": 812}))
            ),
            "rule 4: test delivered (HTTP 200) of job 812\n"
        );
        assert_eq!(
            tested(
                4,
                &sent(json!({"delivered": false, "status": null,
                             "error": "connection refused\n", "job_id": null}))
            ),
            "rule 4: test of an example job not delivered: connection refused\n"
        );
    }
}
