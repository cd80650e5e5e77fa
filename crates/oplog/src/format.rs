//! How an entry becomes bytes: a JSON line (for machines: `jq`, log
//! shippers) or a line of human text (for a terminal or the journal).
//! Runs on the sinks' threads only.

use std::io::Write;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::entry::{Entry, FieldValue};

/// A sink's line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `{"ts":…,"log":…,"level":…,"type":…,"msg":…, fields…}`
    Json,
    /// `2026-11-24T02:45:47.123456Z WARN  error joblog_api: msg k=v`, a
    /// slow operation's events on the lines after, indented.
    Human,
}

/// Appends `entry` to `out` in `format`, ending with a newline.
pub fn write_line(entry: &Entry, format: Format, out: &mut Vec<u8>) {
    match format {
        Format::Json => json_line(entry, out),
        Format::Human => human_line(entry, out),
    }
    out.push(b'\n');
}

/// The entry as one JSON object, without a newline (syslog frames it).
pub fn json_line(entry: &Entry, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"ts\":\"");
    let _ = write!(out, "{}", entry.at.rfc3339());
    out.extend_from_slice(b"\",\"log\":\"");
    out.extend_from_slice(entry.log.as_str().as_bytes());
    out.extend_from_slice(b"\",\"level\":\"");
    out.extend_from_slice(entry.level.as_str().as_bytes());
    out.extend_from_slice(b"\",\"type\":");
    json_string(&entry.kind, out);
    out.extend_from_slice(b",\"msg\":");
    json_string(&entry.message, out);
    for (key, value) in entry.fields.iter() {
        if matches!(key, "ts" | "log" | "level" | "type" | "msg") {
            continue;
        }
        out.push(b',');
        json_string(key, out);
        out.push(b':');
        value.write_json(out);
    }
    out.push(b'}');
}

fn json_string(s: &str, out: &mut Vec<u8>) {
    let _ = serde_json::to_writer(&mut *out, s);
}

/// The entry as human text, without the final newline. Control
/// characters in values are escaped, so one entry is one line (plus its
/// timeline's lines): a request path cannot forge a log line.
pub fn human_line(entry: &Entry, out: &mut Vec<u8>) {
    let _ = write!(
        out,
        "{} {:<5} {} {}: ",
        entry.at.rfc3339(),
        entry.level.as_str().to_ascii_uppercase(),
        entry.log,
        plain(&entry.kind)
    );
    out.extend_from_slice(plain(&entry.message).as_bytes());
    for (key, value) in entry.fields.iter() {
        // Where in the code and which node: in the JSON, noise to a
        // person reading one server's terminal.
        if matches!(key, "events" | "file" | "line" | "node") {
            continue;
        }
        let _ = write!(out, " {}={}", plain(key), human_value(&value.to_json()));
    }
    if let Some(Value::Array(events)) = entry.fields.get("events").and_then(FieldValue::as_json) {
        for event in events {
            out.extend_from_slice(b"\n    ");
            human_event(event, out);
        }
    }
}

/// One event of a timeline: `+1.204ms WARN target: msg k=v (file:line)`.
fn human_event(event: &Value, out: &mut Vec<u8>) {
    let Value::Object(map) = event else {
        out.extend_from_slice(plain(&event.to_string()).as_bytes());
        return;
    };
    let text = |k: &str| match map.get(k) {
        Some(Value::String(s)) => plain(s),
        Some(other) => plain(&other.to_string()),
        None => String::new(),
    };
    let _ = write!(
        out,
        "+{}ms {:<5} {}: {}",
        text("offset_ms"),
        text("level").to_ascii_uppercase(),
        text("target"),
        text("msg")
    );
    for (key, value) in map {
        if matches!(
            key.as_str(),
            "offset_ms" | "level" | "target" | "msg" | "file" | "line" | "ts"
        ) {
            continue;
        }
        let _ = write!(out, " {}={}", plain(key), human_value(value));
    }
    if let Some(file) = map.get("file") {
        let _ = write!(out, " ({}:{})", human_value(file), text("line"));
    }
}

fn human_value(value: &Value) -> String {
    match value {
        Value::String(s) => {
            let p = plain(s);
            if p.is_empty() || p.contains([' ', '=', '"']) {
                format!("{p:?}")
            } else {
                p
            }
        }
        other => plain(&other.to_string()),
    }
}

/// `s` with control characters escaped (`\n`, `\u{1b}`), and the
/// invisible format characters that could reorder or hide a line's text
/// (`\u{202e}`), as the API's escaped text log shows them.
fn plain(s: &str) -> String {
    let hidden = |c: char| c.is_control() || joblog_core::is_hidden_format(c);
    if !s.chars().any(hidden) {
        return s.to_string();
    }
    s.chars()
        .flat_map(|c| {
            if hidden(c) {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use joblog_core::Timestamp;
    use serde_json::json;

    use super::*;
    use crate::entry::{Level, Log};

    fn entry() -> Entry {
        let mut fields = crate::entry::EntryFields::new();
        fields.insert("status", json!(200));
        fields.insert("path", json!("/api/v1/jobs/7\n200 forged"));
        fields.insert("msg", json!("shadowed"));
        Entry {
            log: Log::Access,
            level: Level::Info,
            at: Timestamp(1_700_000_000_000_000),
            kind: "GET /api/v1/jobs/{id}".into(),
            message: "GET /api/v1/jobs/7 200".into(),
            fields,
        }
    }

    #[test]
    fn a_json_line_parses_back_with_the_fixed_keys_first() {
        let mut out = Vec::new();
        write_line(&entry(), Format::Json, &mut out);
        assert_eq!(out.last(), Some(&b'\n'));
        assert_eq!(out.iter().filter(|b| **b == b'\n').count(), 1);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("{\"ts\":\"2023-11-14T22:13:20"), "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["log"], "access");
        assert_eq!(v["type"], "GET /api/v1/jobs/{id}");
        assert_eq!(
            v["msg"], "GET /api/v1/jobs/7 200",
            "a field cannot shadow msg"
        );
        assert_eq!(v["status"], 200);
    }

    #[test]
    fn human_text_is_one_line_whatever_the_values_hold() {
        let mut out = Vec::new();
        write_line(&entry(), Format::Human, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("INFO  access GET /api/v1/jobs/{id}: GET /api/v1/jobs/7 200"));
        assert!(
            text.contains(r#"path="/api/v1/jobs/7\\n200 forged""#),
            "{text}"
        );
    }

    /// A job named with a right-to-left override would show its line
    /// reordered on a terminal: the human text shows the character's
    /// code instead.
    #[test]
    fn human_text_escapes_bidi_and_invisible_format_characters() {
        let mut e = entry();
        e.message = "job \u{202E}gnp.exe\u{202C} ended".into();
        e.fields.insert("name", json!("a\u{2066}b\u{200B}c"));
        let mut out = Vec::new();
        human_line(&e, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(r"job \u{202e}gnp.exe\u{202c} ended"),
            "{text}"
        );
        assert!(text.contains(r"name=a\u{2066}b\u{200b}c"), "{text}");
        assert!(!text.chars().any(joblog_core::is_hidden_format), "{text}");
    }

    #[test]
    fn a_timeline_follows_its_entry_indented() {
        let mut e = entry();
        e.log = Log::Slow;
        e.fields.insert(
            "events",
            json!([{"offset_ms": 1.5, "level": "warn", "target": "joblog_api", "msg": "slow store", "file": "a.rs", "line": 3, "rows": 9}]),
        );
        let mut out = Vec::new();
        human_line(&e, &mut out);
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(
            lines[1],
            "    +1.5ms WARN  joblog_api: slow store rows=9 (a.rs:3)"
        );
    }
}
