//! Jobs as text for a person: the aligned `jobs` table and the `show`
//! listing, with durations and times shortened to what a terminal needs.
//! Every string from the server is escaped before it is shown.

use joblog_core::Stream;

use super::escape_display;
use crate::wire::{labels_text, JobView};

/// A duration as people read one, in at most two units: `0.4ms`, `85ms`,
/// `20.0s`, `4m05s`, `1h02m`, `3d04h`. Each form is used only while it
/// would not round up to the next (`59.96s` is `1m00s`, never `60.0s`).
fn format_duration_ms(ms: f64) -> String {
    if !ms.is_finite() || ms < 0.0 {
        return "-".to_string();
    }
    if ms < 9.95 {
        return format!("{ms:.1}ms");
    }
    if ms < 999.5 {
        return format!("{ms:.0}ms");
    }
    let tenths = (ms / 100.0).round();
    if tenths < 600.0 {
        return format!("{:.1}s", tenths / 10.0);
    }
    // Whole seconds from here, as u64 (a f64 past u64::MAX saturates).
    let s = (ms / 1000.0).round() as u64;
    match s {
        0..3_600 => format!("{}m{:02}s", s / 60, s % 60),
        3_600..86_400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        86_400.. => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// `2026-11-22T10:15:01.000001Z` → `2026-11-22 10:15:01 UTC`, or in the
/// local zone with its offset (`--local`).
pub(super) fn short_time(ts: Option<&str>) -> String {
    match ts {
        Some(t) => super::times::short(t).unwrap_or_else(|| escape_display(t, false).into_owned()),
        None => "-".to_string(),
    }
}

/// A time in full, in the chosen zone (`2026-11-22T10:15:01.000001Z`).
pub(crate) fn full_time(ts: &str) -> String {
    super::times::full(ts).unwrap_or_else(|| escape_display(ts, false).into_owned())
}

pub(super) fn truncate_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}

pub(super) fn jobs_table(jobs: &[JobView]) -> String {
    let header = [
        "ID", "STATE", "NAME", "NODE", "EXIT", "CREATED", "DURATION", "RECORDS",
    ];
    let rows: Vec<[String; 8]> = jobs
        .iter()
        .map(|j| {
            [
                j.id.to_string(),
                escape_display(&j.state, false).into_owned(),
                j.name
                    .as_deref()
                    .map(|n| truncate_chars(&escape_display(n, false), 40))
                    .unwrap_or_else(|| "-".to_string()),
                j.node
                    .as_deref()
                    .map(|n| truncate_chars(&escape_display(n, false), 30))
                    .unwrap_or_else(|| "-".to_string()),
                j.exit_code
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "-".to_string()),
                short_time(j.created_at.as_deref()),
                j.duration_ms
                    .map(format_duration_ms)
                    .unwrap_or_else(|| "-".to_string()),
                j.log.records.to_string(),
            ]
        })
        .collect();
    // Numbers read best right-aligned.
    let right = [true, false, false, false, true, false, true, true];
    table(&header, &rows, &right)
}

/// Aligned columns, two spaces apart; `right[i]` aligns column i right.
pub(super) fn table<const N: usize>(
    header: &[&str; N],
    rows: &[[String; N]],
    right: &[bool; N],
) -> String {
    let mut widths: [usize; N] = header.map(str::len);
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = widths[i].saturating_sub(c.chars().count());
            if i > 0 {
                l.push_str("  ");
            }
            if right[i] {
                l.push_str(&" ".repeat(pad));
                l.push_str(c);
            } else {
                l.push_str(c);
                if i + 1 < cells.len() {
                    l.push_str(&" ".repeat(pad));
                }
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&header.map(String::from));
    for r in rows {
        line(r);
    }
    out
}

/// Quotes an argument the way a POSIX shell would need it.
pub(super) fn shell_quote(a: &str) -> String {
    let plain = !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if plain {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

/// What the job was given besides its command, as `show` lists it: only
/// what was set, values escaped, secrets by name only.
fn given_rows(j: &JobView) -> Vec<(String, String)> {
    let text = |s: &str| escape_display(s, false).into_owned();
    let mut rows = Vec::new();
    if let Some(shell) = &j.shell {
        rows.push(("script in".into(), text(shell)));
    }
    if let Some(cwd) = &j.cwd {
        rows.push(("cwd".into(), text(cwd)));
    }
    if let Some(t) = j.timeout_s {
        rows.push(("timeout".into(), format!("{t}s")));
    }
    for (k, v) in &j.env {
        rows.push(("env".into(), format!("{}={}", text(k), text(v))));
    }
    if !j.secret_names.is_empty() {
        let names: Vec<String> = j.secret_names.iter().map(|n| text(n)).collect();
        rows.push((
            "secrets".into(),
            format!("{} (values not kept)", names.join(", ")),
        ));
    }
    if let Some(id) = j.rerun_of {
        rows.push(("rerun of".into(), format!("job {id}")));
    }
    if let Some(id) = j.triggered_by {
        rows.push(("triggered by".into(), format!("job {id}")));
    }
    if !j.node_selector.is_empty() {
        rows.push(("runs on".into(), text(&labels_text(&j.node_selector))));
    }
    if let Some(folder) = &j.folder {
        rows.push(("folder".into(), text(folder)));
    }
    for (k, v) in j.params.iter().flatten() {
        let shown = match v {
            serde_json::Value::Null => format!("{} (secret, not kept)", text(k)),
            serde_json::Value::String(s) => format!("{}={}", text(k), text(s)),
            other => format!("{}={other}", text(k)),
        };
        rows.push(("param".into(), shown));
    }
    rows
}

pub(super) fn show_text(j: &JobView) -> String {
    let opt = |v: Option<&str>| {
        v.map(|s| escape_display(s, false).into_owned())
            .unwrap_or_else(|| "-".to_string())
    };
    let time = |v: Option<&str>| v.map(full_time).unwrap_or_else(|| "-".to_string());
    let mut rows: Vec<(String, String)> = vec![
        ("id".into(), j.id.to_string()),
        ("name".into(), opt(j.name.as_deref())),
        ("state".into(), escape_display(&j.state, false).into_owned()),
        (
            "exit code".into(),
            j.exit_code
                .map(|c| c.to_string())
                .unwrap_or_else(|| "-".into()),
        ),
        (
            "command".into(),
            escape_display(
                &j.command
                    .iter()
                    .map(|a| shell_quote(a))
                    .collect::<Vec<_>>()
                    .join(" "),
                false,
            )
            .into_owned(),
        ),
        ("node".into(), opt(j.node.as_deref())),
        ("created".into(), time(j.created_at.as_deref())),
        ("started".into(), time(j.started_at.as_deref())),
        ("finished".into(), time(j.finished_at.as_deref())),
        (
            "duration".into(),
            j.duration_ms
                .map(format_duration_ms)
                .unwrap_or_else(|| "-".into()),
        ),
        ("records".into(), j.log.records.to_string()),
    ];
    // A job no node can take says why, under its state.
    if let Some(why) = j.waiting_for.as_deref() {
        let at = rows
            .iter()
            .position(|(k, _)| k == "state")
            .map_or(rows.len(), |i| i + 1);
        rows.insert(
            at,
            (
                "waiting for".into(),
                escape_display(why, false).into_owned(),
            ),
        );
    }
    // A retry waiting out its backoff says when it may start.
    if let Some(after) = j.run_after.as_deref() {
        let at = rows
            .iter()
            .position(|(k, _)| k == "created")
            .map_or(rows.len(), |i| i + 1);
        rows.insert(at, ("runs after".into(), full_time(after)));
    }
    let at = rows
        .iter()
        .position(|(k, _)| k == "command")
        .map_or(rows.len(), |i| i + 1);
    rows.splice(at..at, given_rows(j));
    // Streams in their canonical order, then any the client does not know.
    let mut streams: Vec<(&str, u64)> = Stream::ALL
        .iter()
        .filter_map(|s| j.log.streams.get(s.name()).map(|n| (s.name(), *n)))
        .collect();
    for (k, n) in &j.log.streams {
        if Stream::parse(k).is_none() {
            streams.push((k.as_str(), *n));
        }
    }
    for (k, n) in streams {
        rows.push((format!("  {}", escape_display(k, false)), n.to_string()));
    }
    rows.push(("log bytes".into(), j.log.bytes.to_string()));
    rows.push((
        "truncated".into(),
        if j.log.truncated { "yes" } else { "no" }.into(),
    ));
    rows.push((
        "result".into(),
        match &j.result {
            Some(r) => format!("{} bytes", r.bytes),
            None => "none".into(),
        },
    ));
    let w = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;
    let mut out = String::new();
    for (k, v) in rows {
        out.push_str(&format!("{:<w$} {v}\n", format!("{k}:")));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        let cases = [
            (0.42, "0.4ms"),
            (9.96, "10ms"),
            (85.0, "85ms"),
            (999.4, "999ms"),
            (999.6, "1.0s"),
            (1234.0, "1.2s"),
            (20_000.0, "20.0s"),
            (59_940.0, "59.9s"),
            (59_960.0, "1m00s"),
            (184_000.0, "3m04s"),
            (245_000.0, "4m05s"),
            (3_599_600.0, "1h00m"),
            (3_720_000.0, "1h02m"),
            (7_500_000.0, "2h05m"),
            (86_399_000.0, "23h59m"),
            (86_400_000.0, "1d00h"),
            (274_000_000.0, "3d04h"),
            (1e300, "213503982334601d07h"),
        ];
        for (ms, text) in cases {
            assert_eq!(format_duration_ms(ms), text, "{ms} ms");
        }
        assert_eq!(format_duration_ms(f64::NAN), "-");
        assert_eq!(format_duration_ms(-1.0), "-");
    }

    #[test]
    fn times() {
        assert_eq!(
            short_time(Some("2026-11-22T10:15:01.000001Z")),
            "2026-11-22 10:15:01 UTC"
        );
        assert_eq!(
            short_time(Some("soon\x1b")),
            "soon\\x1b",
            "not a time: escaped"
        );
        assert_eq!(short_time(None), "-");
    }

    fn job(v: Value) -> JobView {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn table_is_aligned() {
        let jobs = vec![
            job(
                json!({"id": 42, "name": "backup", "state": "succeeded", "exit_code": 0,
                "node": "host-a:7878",
                "created_at": "2026-11-22T10:15:01.000001Z", "duration_ms": 245_000.0,
                "log": {"records": 1002}}),
            ),
            job(
                json!({"id": 7, "name": null, "state": "queued", "exit_code": null,
                "created_at": "2026-11-22T10:15:01.000001Z", "duration_ms": null}),
            ),
        ];
        let t = jobs_table(&jobs);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "ID  STATE      NAME    NODE         EXIT  CREATED                  DURATION  RECORDS"
        );
        assert_eq!(
            lines[1],
            "42  succeeded  backup  host-a:7878     0  2026-11-22 10:15:01 UTC     4m05s     1002"
        );
        assert_eq!(
            lines[2],
            " 7  queued     -       -               -  2026-11-22 10:15:01 UTC         -        0"
        );
    }

    #[test]
    fn show_lists_stream_counts() {
        let j = job(
            json!({"id": 42, "name": "backup", "state": "succeeded", "exit_code": 0,
            "command": ["sh", "-c", "echo 'hi'"], "node": "host-a",
            "created_at": "2026-11-22T10:15:01.000001Z", "duration_ms": 28.0,
            "log": {"records": 1002, "bytes": 9870, "truncated": false,
                    "streams": {"warning": 1, "output": 1000, "error": 1}},
            "result": {"bytes": 120}}),
        );
        let t = show_text(&j);
        assert!(t.contains("command:   sh -c 'echo '\\''hi'\\'''\n"), "{t}");
        let out = t.find("  output:").unwrap();
        let err = t.find("  error:").unwrap();
        let warn = t.find("  warning:").unwrap();
        assert!(out < err && err < warn, "{t}");
        assert!(t.contains("result:    120 bytes"), "{t}");
        assert!(t.contains("truncated: no"), "{t}");
        assert!(t.contains("duration:  28ms\n"), "{t}");
        assert!(!t.contains("runs after"), "{t}");
        let retry = job(json!({"id": 43, "state": "queued",
            "created_at": "2026-11-22T10:15:01.000001Z",
            "run_after": "2026-11-22T11:15:01.000001Z"}));
        let t = show_text(&retry);
        assert!(
            t.contains("\nruns after: 2026-11-22T11:15:01.000001Z\n"),
            "{t}"
        );
    }
}
