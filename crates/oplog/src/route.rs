//! Routing: a finished unit becomes the lines of the logs it belongs in
//! (an access line per request; an audit entry per state change; an
//! error entry per warning or error, with its operation's context; a slow
//! entry, with the whole timeline, for a request slower than the
//! threshold; server lines for what happened outside any operation,
//! below warnings), and
//! each sink takes the lines its filter accepts.

use std::time::Duration;

use std::sync::Arc;

use serde_json::{Map, Value as Json};

use super::entry::{Entry, EntryFields, Level, Log, LogSet};
use super::event::{Event, Value};
use super::unit::{Unit, UnitKind};

/// The event field that makes an event an audit entry; its value is the
/// action: `tracing::info!(audit = "job.submitted", job_id, "…")`.
pub const AUDIT_FIELD: &str = "audit";

/// Fields of a unit that say who acted and on what, copied into its
/// audit and error entries.
const CONTEXT: [&str; 6] = ["request_id", "method", "path", "actor", "remote", "job_id"];

/// What routing needs besides the unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteOptions {
    /// A request whose answer took longer than this (to its headers: a
    /// live tail streams for as long as it is watched) goes to the slow
    /// log.
    pub slow_threshold: Duration,
    /// This server's node name, on every entry.
    pub node: String,
    /// The logs some sink takes: lines of the others are not built (with
    /// no sink at all, a unit costs the router nothing but its drop).
    pub wanted: LogSet,
}

/// The lines `unit` makes, in the logs `options.wanted` holds.
pub fn entries(unit: &Arc<Unit>, options: &RouteOptions) -> Vec<Entry> {
    let wanted = |log| options.wanted.contains(log);
    let mut out = Vec::new();
    match unit.kind {
        UnitKind::Request => {
            if wanted(Log::Access) {
                out.push(access(unit, options));
            }
            if wanted(Log::Slow) {
                out.extend(slow(unit, options));
            }
        }
        UnitKind::Job => {
            if wanted(Log::Server) {
                out.push(job_end(unit, options));
            }
        }
        UnitKind::Server => {
            // Warnings and errors go to the error log alone: a sink that
            // takes both logs (stderr, by default) shows each line once.
            if wanted(Log::Server) {
                for event in unit.events.iter().filter(|e| e.level < Level::Warn) {
                    out.push(event_entry(Log::Server, unit, event, options));
                }
            }
        }
    }
    for event in &unit.events {
        if wanted(Log::Audit) {
            if let Some(action) = event.field(AUDIT_FIELD).and_then(Value::as_str) {
                out.push(audit(unit, event, action, options));
            }
        }
        if event.level >= Level::Warn && wanted(Log::Error) {
            out.push(event_entry(Log::Error, unit, event, options));
        }
    }
    out
}

fn millis(d: Duration) -> Json {
    // Three decimals: microseconds, as the timestamps have.
    Json::from((d.as_secs_f64() * 1e6).round() / 1e3)
}

/// The unit's own fields (shared with it, not copied) and the node's.
fn unit_fields(unit: &Arc<Unit>, options: &RouteOptions) -> EntryFields {
    let mut fields = EntryFields::of_unit(unit);
    fields.insert("node", Json::from(options.node.as_str()));
    fields
}

fn access(unit: &Arc<Unit>, options: &RouteOptions) -> Entry {
    let status = unit.field("status").and_then(Value::as_u64).unwrap_or(0);
    let level = match status {
        500.. => Level::Error,
        400..=499 => Level::Warn,
        _ => Level::Info,
    };
    let route = unit
        .str_field("route")
        .or(unit.str_field("path"))
        .unwrap_or("");
    let text = |name| Shown(unit.field(name));
    let mut fields = unit_fields(unit, options);
    fields.insert("duration_ms", millis(unit.duration));
    Entry {
        log: Log::Access,
        level,
        at: unit.started,
        kind: format!("{} {route}", text("method")),
        message: format!(
            "{} {} {status} {}B {:.1}ms",
            text("method"),
            text("path"),
            text("bytes"),
            unit.duration.as_secs_f64() * 1e3
        ),
        fields,
    }
}

/// A unit's value as text in a message, nothing when it has none
/// (written straight into the message: no string of its own).
struct Shown<'a>(Option<&'a Value>);

impl std::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(value) => value.fmt(f),
            None => Ok(()),
        }
    }
}

/// How long a request took to answer: to its headers when known.
fn answer_time(unit: &Unit) -> Duration {
    unit.field("headers_us")
        .and_then(Value::as_u64)
        .map(Duration::from_micros)
        .unwrap_or(unit.duration)
}

fn slow(unit: &Arc<Unit>, options: &RouteOptions) -> Option<Entry> {
    let took = answer_time(unit);
    if took <= options.slow_threshold {
        return None;
    }
    let mut fields = unit_fields(unit, options);
    fields.insert("duration_ms", millis(unit.duration));
    fields.insert("answer_ms", millis(took));
    fields.insert(
        "events",
        Json::Array(
            unit.events
                .iter()
                .map(|e| timeline_event(unit, e))
                .collect(),
        ),
    );
    if unit.events_dropped > 0 {
        fields.insert("events_dropped", Json::from(unit.events_dropped));
    }
    let text = |name| {
        unit.field(name)
            .map(ToString::to_string)
            .unwrap_or_default()
    };
    Some(Entry {
        log: Log::Slow,
        level: Level::Warn,
        at: unit.started,
        kind: unit.kind.as_str().to_string(),
        message: format!(
            "{} {} answered in {:.1}ms (threshold {}ms)",
            text("method"),
            text("path"),
            took.as_secs_f64() * 1e3,
            options.slow_threshold.as_millis()
        ),
        fields,
    })
}

fn timeline_event(unit: &Unit, event: &Event) -> Json {
    let mut map = Map::new();
    let offset = event.at.0.saturating_sub(unit.started.0).max(0);
    map.insert("offset_ms".into(), Json::from(offset as f64 / 1e3));
    map.insert("ts".into(), Json::from(event.at.to_rfc3339()));
    map.insert("level".into(), Json::from(event.level.as_str()));
    map.insert("target".into(), Json::from(event.target));
    map.insert("msg".into(), Json::from(event.message.as_str()));
    for (name, value) in &event.fields {
        map.insert((*name).to_string(), value.to_json());
    }
    if let Some(file) = event.file {
        map.insert("file".into(), Json::from(file));
        map.insert("line".into(), Json::from(event.line.unwrap_or(0)));
    }
    Json::Object(map)
}

fn job_end(unit: &Arc<Unit>, options: &RouteOptions) -> Entry {
    let text = |name| {
        unit.field(name)
            .map(ToString::to_string)
            .unwrap_or_default()
    };
    let mut fields = unit_fields(unit, options);
    fields.insert("duration_ms", millis(unit.duration));
    let name = unit
        .str_field("name")
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    Entry {
        log: Log::Server,
        level: Level::Info,
        at: unit.started,
        kind: "job".into(),
        message: format!(
            "job {}{name} ended {} after {:.3}s",
            text("job_id"),
            text("state"),
            unit.duration.as_secs_f64()
        ),
        fields,
    }
}

/// An event with its operation's context.
fn event_entry(log: Log, unit: &Unit, event: &Event, options: &RouteOptions) -> Entry {
    let mut fields = EntryFields::new();
    if unit.kind != UnitKind::Server {
        fields.insert("unit", Json::from(unit.kind.as_str()));
        for name in CONTEXT {
            if let Some(value) = unit.field(name) {
                fields.insert(name, value.to_json());
            }
        }
    }
    for (name, value) in &event.fields {
        fields.insert(*name, value.to_json());
    }
    if let Some(file) = event.file {
        fields.insert("file", Json::from(file));
        fields.insert("line", Json::from(event.line.unwrap_or(0)));
    }
    fields.insert("node", Json::from(options.node.as_str()));
    Entry {
        log,
        level: event.level,
        at: event.at,
        kind: event.target.to_string(),
        message: event.message.clone(),
        fields,
    }
}

fn audit(unit: &Unit, event: &Event, action: &str, options: &RouteOptions) -> Entry {
    let who = |name: &str| event.field(name).or(unit.field(name)).map(Value::to_json);
    let mut fields = EntryFields::new();
    let actor = who("actor").unwrap_or_else(|| {
        Json::from(match unit.kind {
            UnitKind::Request => "anonymous",
            UnitKind::Job | UnitKind::Server => "system",
        })
    });
    fields.insert("actor", actor);
    fields.insert("action", Json::from(action));
    for name in ["job_id", "remote", "request_id"] {
        if let Some(value) = who(name) {
            fields.insert(name, value);
        }
    }
    fields.insert("node", Json::from(options.node.as_str()));
    let mut detail = Map::new();
    for (name, value) in &event.fields {
        if !matches!(
            *name,
            AUDIT_FIELD | "actor" | "job_id" | "remote" | "request_id"
        ) {
            detail.insert((*name).to_string(), value.to_json());
        }
    }
    fields.insert("detail", Json::Object(detail));
    Entry {
        log: Log::Audit,
        level: event.level,
        at: event.at,
        kind: action.to_string(),
        message: event.message.clone(),
        fields,
    }
}

/// Which lines one sink takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkFilter {
    pub logs: Vec<Log>,
    pub min_level: Level,
    /// Entry kinds left out: exact (`GET /healthz`), or a prefix ending in
    /// `*` (`token.*`).
    pub ignore: Vec<String>,
}

impl SinkFilter {
    pub fn accepts(&self, entry: &Entry) -> bool {
        self.logs.contains(&entry.log)
            && entry.level >= self.min_level
            && !self
                .ignore
                .iter()
                .any(|pattern| match pattern.strip_suffix('*') {
                    Some(prefix) => entry.kind.starts_with(prefix),
                    None => entry.kind == *pattern,
                })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unit::UNIT_FIELD;

    fn entries(unit: &Unit, options: &RouteOptions) -> Vec<Entry> {
        super::entries(&Arc::new(unit.clone()), options)
    }

    fn options() -> RouteOptions {
        RouteOptions {
            slow_threshold: Duration::from_millis(500),
            node: "n1".into(),
            wanted: LogSet::ALL,
        }
    }

    fn request(status: u64, took: Duration) -> Unit {
        let mut unit = Unit::new(UnitKind::Request)
            .with(UNIT_FIELD, Value::Str("request".into()))
            .with("request_id", Value::Str("r-1".into()))
            .with("method", Value::Str("POST".into()))
            .with("path", Value::Str("/api/v1/jobs".into()))
            .with("route", Value::Str("/api/v1/jobs".into()))
            .with("remote", Value::Str("10.0.0.9:4242".into()))
            .with("actor", Value::Str("ci".into()))
            .with("status", Value::U64(status))
            .with("bytes", Value::U64(57))
            .with("headers_us", Value::U64(took.as_micros() as u64));
        unit.duration = took;
        unit
    }

    fn kinds(entries: &[Entry]) -> Vec<(Log, &str)> {
        entries.iter().map(|e| (e.log, e.kind.as_str())).collect()
    }

    #[test]
    fn one_request_goes_to_each_log_it_belongs_in() {
        let mut unit = request(201, Duration::from_millis(900));
        unit.push_event(
            Event::new(Level::Info, "joblog_api::routes", "job submitted")
                .with(AUDIT_FIELD, Value::Str("job.submitted".into()))
                .with("job_id", Value::U64(7))
                .with("name", Value::Str("backup".into())),
        );
        unit.push_event(
            Event::new(Level::Warn, "joblog_store", "slow query").with("rows", Value::U64(9)),
        );
        unit.push_event(Event::new(Level::Debug, "joblog_api", "detail"));
        let entries = entries(&unit, &options());
        assert_eq!(
            kinds(&entries),
            [
                (Log::Access, "POST /api/v1/jobs"),
                (Log::Slow, "request"),
                (Log::Audit, "job.submitted"),
                (Log::Error, "joblog_store"),
            ]
        );
        let access = &entries[0];
        assert_eq!(access.level, Level::Info);
        assert_eq!(access.fields.get_json("status").unwrap(), 201);
        assert_eq!(access.fields.get_json("actor").unwrap(), "ci");
        assert_eq!(access.fields.get_json("node").unwrap(), "n1");
        assert!(access.fields.get("unit").is_none());
        let slow = &entries[1];
        assert_eq!(
            slow.fields
                .get_json("events")
                .unwrap()
                .as_array()
                .unwrap()
                .len(),
            3
        );
        assert_eq!(slow.fields.get_json("events").unwrap()[1]["rows"], 9);
        let audit = &entries[2];
        assert_eq!(audit.fields.get_json("actor").unwrap(), "ci");
        assert_eq!(audit.fields.get_json("remote").unwrap(), "10.0.0.9:4242");
        assert_eq!(audit.fields.get_json("request_id").unwrap(), "r-1");
        assert_eq!(audit.fields.get_json("job_id").unwrap(), 7);
        assert_eq!(
            audit.fields.get_json("detail").unwrap(),
            serde_json::json!({"name": "backup"})
        );
        let error = &entries[3];
        assert_eq!(error.level, Level::Warn);
        assert_eq!(
            error.fields.get_json("request_id").unwrap(),
            "r-1",
            "a warning keeps its request's context"
        );
        assert_eq!(error.fields.get_json("path").unwrap(), "/api/v1/jobs");
        assert_eq!(error.fields.get_json("rows").unwrap(), 9);
    }

    #[test]
    fn a_fast_request_is_not_slow_logged_and_failures_raise_the_access_level() {
        let fast = entries(&request(200, Duration::from_millis(3)), &options());
        assert_eq!(kinds(&fast), [(Log::Access, "POST /api/v1/jobs")]);
        assert_eq!(
            entries(&request(404, Duration::ZERO), &options())[0].level,
            Level::Warn
        );
        assert_eq!(
            entries(&request(503, Duration::ZERO), &options())[0].level,
            Level::Error
        );
        // A live tail streams for minutes; its answer came at once.
        let mut tail = request(200, Duration::from_millis(2));
        tail.duration = Duration::from_secs(600);
        assert_eq!(entries(&tail, &options()).len(), 1);
    }

    #[test]
    fn events_outside_operations_are_server_lines_and_the_system_acts() {
        let unit = Unit::server_event(
            Event::new(
                Level::Info,
                "joblog::serve",
                "logging configuration changed",
            )
            .with(AUDIT_FIELD, Value::Str("config.changed".into())),
        );
        let entries = entries(&unit, &options());
        assert_eq!(
            kinds(&entries),
            [
                (Log::Server, "joblog::serve"),
                (Log::Audit, "config.changed")
            ]
        );
        assert_eq!(entries[1].fields.get_json("actor").unwrap(), "system");
        let warn = Unit::server_event(Event::new(Level::Error, "joblog", "disk full"));
        assert_eq!(
            kinds(&self::entries(&warn, &options())),
            [(Log::Error, "joblog")],
            "once, in the error log"
        );
    }

    #[test]
    fn a_job_run_is_one_server_line_with_its_warnings_in_the_error_log() {
        let mut unit = Unit::new(UnitKind::Job)
            .with("job_id", Value::U64(12))
            .with("name", Value::Str("backup".into()))
            .with("state", Value::Str("failed".into()));
        unit.push_event(Event::new(
            Level::Warn,
            "joblog_engine",
            "result file unreadable",
        ));
        let entries = entries(&unit, &options());
        assert_eq!(
            kinds(&entries),
            [(Log::Server, "job"), (Log::Error, "joblog_engine")]
        );
        assert!(entries[0]
            .message
            .starts_with("job 12 (backup) ended failed"));
        assert_eq!(entries[1].fields.get_json("job_id").unwrap(), 12);
        assert_eq!(entries[1].fields.get_json("unit").unwrap(), "job");
    }

    #[test]
    fn lines_of_logs_no_sink_takes_are_not_built() {
        let mut unit = request(503, Duration::from_secs(2));
        unit.push_event(
            Event::new(Level::Error, "joblog_api", "store down")
                .with(AUDIT_FIELD, Value::Str("job.cancelled".into())),
        );
        let mut only_audit = options();
        only_audit.wanted = [Log::Audit].into_iter().collect();
        assert_eq!(
            kinds(&entries(&unit, &only_audit)),
            [(Log::Audit, "job.cancelled")]
        );
        let mut nothing = options();
        nothing.wanted = LogSet::default();
        assert!(entries(&unit, &nothing).is_empty());
        assert_eq!(
            entries(&unit, &options()).len(),
            4,
            "access, slow, audit and error"
        );
    }

    #[test]
    fn a_sink_takes_its_logs_from_its_level_up_minus_what_it_ignores() {
        let unit = request(200, Duration::ZERO);
        let access = &entries(&unit, &options())[0];
        let mut filter = SinkFilter {
            logs: vec![Log::Access],
            min_level: Level::Info,
            ignore: vec![],
        };
        assert!(filter.accepts(access));
        filter.ignore = vec!["POST /api/*".into()];
        assert!(!filter.accepts(access));
        filter.ignore = vec!["POST /api/v1/jobs".into()];
        assert!(!filter.accepts(access));
        filter.ignore = vec!["GET /api/v1/jobs".into()];
        assert!(filter.accepts(access));
        filter.min_level = Level::Warn;
        assert!(!filter.accepts(access));
        filter.min_level = Level::Trace;
        filter.logs = vec![Log::Error];
        assert!(!filter.accepts(access));
    }
}
