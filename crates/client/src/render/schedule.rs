//! Schedules as text: the `schedule list` table and the `schedule show`
//! listing. Every string from the server is escaped before it is shown.

use super::escape_display;
use super::job::{shell_quote, short_time, table};
use crate::wire::{labels_text, ScheduleView};
use joblog_core::params::ParamsSchema;

fn text(s: &str) -> String {
    escape_display(s, false).into_owned()
}

/// `sleep 60`, or the script's first line for a script.
fn what_it_runs(s: &ScheduleView) -> String {
    match &s.script {
        Some(script) => {
            let first = script.lines().next().unwrap_or_default();
            let more = if script.lines().nth(1).is_some() {
                " …"
            } else {
                ""
            };
            format!("{}{more}", text(first))
        }
        None => text(
            &s.command
                .iter()
                .map(|a| shell_quote(a))
                .collect::<Vec<_>>()
                .join(" "),
        ),
    }
}

/// Its latest job: `#812 succeeded 2026-11-24 01:30:02`, or `-`.
fn last_run(s: &ScheduleView) -> String {
    match &s.last_run {
        Some(r) => {
            let attempt = if r.attempt > 1 {
                format!(" (attempt {})", r.attempt)
            } else {
                String::new()
            };
            format!(
                "#{} {}{attempt} {}",
                r.job_id,
                text(&r.state),
                short_time(r.created_at.as_deref())
            )
        }
        None => "-".into(),
    }
}

/// When it runs: `30 2 * * *`, or `after backup on succeeded` (the
/// schedule by name when `name_of` knows it, else by id).
fn when(s: &ScheduleView, name_of: impl Fn(i64) -> Option<String>) -> String {
    match (&s.cron, &s.after) {
        (_, Some(after)) => {
            let by = name_of(after.schedule_id)
                .map_or_else(|| format!("#{}", after.schedule_id), |n| text(&n));
            format!("after {by} on {}", text(&after.states.join(",")))
        }
        (Some(cron), None) => text(cron),
        (None, None) => "on demand".into(),
    }
}

pub(super) fn schedules_table(schedules: &[ScheduleView]) -> String {
    let header = ["ID", "NAME", "WHEN", "TZ", "NEXT FIRE", "LAST RUN", "RUNS"];
    let name_of = |id: i64| {
        schedules
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.name.clone())
    };
    let rows: Vec<[String; 7]> = schedules
        .iter()
        .map(|s| {
            [
                s.id.to_string(),
                text(&s.name),
                when(s, name_of),
                if s.cron.is_none() {
                    "-".into()
                } else {
                    text(&s.timezone)
                },
                match (s.enabled, &s.after, &s.cron) {
                    (false, _, _) => "disabled".into(),
                    (true, Some(_), _) => "on its trigger".into(),
                    (true, None, None) => "when run".into(),
                    (true, None, Some(_)) => short_time(s.next_fires.first().map(String::as_str)),
                },
                last_run(s),
                what_it_runs(s),
            ]
        })
        .collect();
    table(
        &header,
        &rows,
        &[true, false, false, false, false, false, false],
    )
}

pub(super) fn show_text(s: &ScheduleView) -> String {
    let mut rows: Vec<(String, String)> = vec![
        ("id".into(), s.id.to_string()),
        ("name".into(), text(&s.name)),
        match &s.cron {
            Some(cron) => (
                "cron".into(),
                format!("{} ({})", text(cron), text(&s.timezone)),
            ),
            None => ("runs".into(), when(s, |_| s.after_name.clone())),
        },
        (
            "enabled".into(),
            if s.enabled { "yes" } else { "no" }.into(),
        ),
    ];
    match &s.script {
        Some(script) => {
            rows.push(("shell".into(), text(s.shell.as_deref().unwrap_or("sh"))));
            // One line each, escaped alone, under the first.
            let lines: Vec<String> = script.lines().map(text).collect();
            rows.push(("script".into(), lines.join("\n")));
        }
        None => rows.push(("command".into(), what_it_runs(s))),
    }
    if !s.env.is_empty() {
        let env: Vec<String> = s.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        rows.push(("env".into(), text(&env.join(" "))));
    }
    if !s.secrets.is_empty() {
        rows.push(("secrets".into(), text(&s.secrets.join(", "))));
    }
    if let Some(t) = s.timeout_s {
        rows.push(("timeout".into(), format!("{t}s")));
    }
    if let Some(c) = &s.cwd {
        rows.push(("cwd".into(), text(c)));
    }
    if let Some(k) = &s.concurrency_key {
        rows.push((
            "concurrency".into(),
            format!("{} (at most {})", text(k), s.max_concurrent.unwrap_or(1)),
        ));
    }
    if !s.node_selector.is_empty() {
        rows.push(("runs on".into(), text(&labels_text(&s.node_selector))));
    }
    if let Some(folder) = &s.folder {
        rows.push(("folder".into(), text(folder)));
    }
    for line in params_lines(s) {
        rows.push(("param".into(), line));
    }
    rows.push(("overlap".into(), text(&s.overlap)));
    rows.push(("missed".into(), text(&s.missed)));
    rows.push((
        "retries".into(),
        if s.retries.attempts <= 1 {
            "none".into()
        } else {
            format!(
                "{} attempts, backoff {}s doubling",
                s.retries.attempts, s.retries.backoff_s
            )
        },
    ));
    if let Some(followers) = s.followers.as_deref().filter(|f| !f.is_empty()) {
        let lines: Vec<String> = followers
            .iter()
            .map(|f| {
                format!(
                    "{} (#{}) on {}",
                    text(&f.name),
                    f.schedule_id,
                    text(&f.states.join(","))
                )
            })
            .collect();
        rows.push(("then runs".into(), lines.join("\n")));
    }
    rows.push(("skipped fires".into(), s.skipped_fires.to_string()));
    rows.push(("last run".into(), last_run(s)));
    let fires: Vec<String> = s.next_fires.iter().map(|f| short_time(Some(f))).collect();
    rows.push((
        "next fires".into(),
        match (fires.is_empty(), s.after.is_some()) {
            (_, true) => "- (on its trigger)".into(),
            (true, false) => "- (disabled)".into(),
            (false, false) => fires.join(", "),
        },
    ));
    key_values(rows)
}

/// `key: value` lines, values aligned, a value's further lines indented
/// under its first (a schedule, a rule).
pub(super) fn key_values(rows: Vec<(String, String)>) -> String {
    let w = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;
    let mut out = String::new();
    let indent = format!("\n{}", " ".repeat(w + 1));
    for (k, v) in rows {
        let v = v.replace('\n', &indent);
        out.push_str(&format!("{:<w$} {v}\n", format!("{k}:")));
    }
    out
}

/// One line per parameter: `env: string, one of prod, staging, required`.
fn params_lines(s: &ScheduleView) -> Vec<String> {
    let Some(schema) = s.params.as_ref().and_then(|p| ParamsSchema::parse(p).ok()) else {
        return Vec::new();
    };
    let shown = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    schema
        .params
        .iter()
        .map(|p| {
            let mut parts = vec![p.kind.name().to_owned()];
            if let Some(choices) = &p.choices {
                let list: Vec<String> = choices.iter().map(shown).collect();
                parts.push(format!("one of {}", list.join(", ")));
            }
            if let Some(d) = &p.default {
                parts.push(format!("default {d}"));
            }
            if p.secret {
                parts.push("secret".into());
            }
            if p.required {
                parts.push("required".into());
            }
            if let Some(pointer) = s.params_from_result.get(&p.name) {
                parts.push(format!("from the result at {pointer}"));
            }
            text(&format!("{}: {}", p.name, parts.join(", ")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn view(overrides: serde_json::Value) -> ScheduleView {
        let mut v = json!({
            "id": 3, "name": "nightly", "cron": "30 2 * * *", "timezone": "Europe/Berlin",
            "command": ["sh", "-c", "pg_dump app"], "script": "pg_dump app\necho done",
            "shell": "sh", "env": {}, "secrets": ["PGPASSWORD"], "overlap": "skip",
            "missed": "one", "retries": {"attempts": 3, "backoff_s": 60.0}, "enabled": true,
            "next_fires": ["2026-11-25T01:30:00.000000Z", "2026-11-26T01:30:00.000000Z"],
            "skipped_fires": 2,
            "last_run": {"job_id": 812, "state": "succeeded", "created_at": "2026-11-24T01:30:00.100000Z", "attempt": 1}
        });
        for (k, val) in overrides.as_object().unwrap() {
            v[k] = val.clone();
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn schedules_are_listed_aligned_with_their_next_fire_and_last_run() {
        let off = view(
            json!({"id": 12, "name": "tick\u{1b}", "enabled": false, "script": null,
                              "command": ["true"], "last_run": null, "next_fires": []}),
        );
        let after = view(
            json!({"id": 14, "name": "report", "cron": null, "script": null, "command": ["true"],
                   "after": {"schedule_id": 3, "states": ["succeeded", "failed"]},
                   "last_run": null, "next_fires": []}),
        );
        let saved = view(
            json!({"id": 15, "name": "restore", "cron": null, "script": null, "command": ["true"],
                   "last_run": null, "next_fires": []}),
        );
        assert_eq!(
            schedules_table(&[view(json!({})), off, after, saved]),
            "ID  NAME      WHEN                               TZ             NEXT FIRE                LAST RUN                                RUNS\n \
             3  nightly   30 2 * * *                         Europe/Berlin  2026-11-25 01:30:00 UTC  #812 succeeded 2026-11-24 01:30:00 UTC  pg_dump app …\n\
             12  tick\\x1b  30 2 * * *                         Europe/Berlin  disabled                 -                                       true\n\
             14  report    after nightly on succeeded,failed  -              on its trigger           -                                       true\n\
             15  restore   on demand                          -              when run                 -                                       true\n"
        );
    }

    #[test]
    fn a_schedule_is_shown_with_its_policies_and_next_fires() {
        let shown = show_text(&view(json!({})));
        for line in [
            "cron:          30 2 * * * (Europe/Berlin)\n",
            "script:        pg_dump app\n               echo done\n",
            "secrets:       PGPASSWORD\n",
            "retries:       3 attempts, backoff 60s doubling\n",
            "skipped fires: 2\n",
            "next fires:    2026-11-25 01:30:00 UTC, 2026-11-26 01:30:00 UTC\n",
        ] {
            assert!(shown.contains(line), "{line:?} not in:\n{shown}");
        }
        assert!(
            show_text(&view(json!({"next_fires": [], "enabled": false})))
                .contains("next fires:    - (disabled)")
        );
        // One that runs after another, and one that others run after.
        let mut after = view(json!({"cron": null, "next_fires": [],
                                    "after": {"schedule_id": 9, "states": ["failed"]}}));
        assert!(show_text(&after).contains("runs:          after #9 on failed\n"));
        after.after_name = Some("backup".into());
        let shown = show_text(&after);
        assert!(
            shown.contains("runs:          after backup on failed\n"),
            "{shown}"
        );
        assert!(
            shown.contains("next fires:    - (on its trigger)"),
            "{shown}"
        );
        let followed = show_text(&view(json!({"followers": [
            {"schedule_id": 4, "name": "report", "states": ["succeeded"]},
            {"schedule_id": 5, "name": "page", "states": ["failed", "timed_out"]}]})));
        assert!(
            followed.contains("then runs:     report (#4) on succeeded\n               page (#5) on failed,timed_out\n"),
            "{followed}"
        );
    }
}
