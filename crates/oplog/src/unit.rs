//! An operation unit: one API request or one job run, with everything
//! logged while it ran. It is built in its `tracing` span (or by hand) and
//! submitted whole when the operation ends, then routed to the logs.

use std::time::Duration;

use joblog_core::Timestamp;

use super::event::{field, Event, Fields, Value};

/// The span field that makes a span an operation unit; its value names
/// the kind: `tracing::info_span!("request", unit = "request", …)`.
pub const UNIT_FIELD: &str = "unit";

/// A unit holds at most this many events; the rest are counted, so one
/// chatty operation cannot hold unbounded memory.
pub const MAX_UNIT_EVENTS: usize = 1000;

/// What kind of operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitKind {
    /// An API request: one access line; slow-logged past the threshold.
    Request,
    /// A job run: one server-log line when it ends.
    Job,
    /// An event logged outside any operation (start, reload, stop).
    Server,
}

impl UnitKind {
    pub fn parse(s: &str) -> Option<UnitKind> {
        match s {
            "request" => Some(UnitKind::Request),
            "job" => Some(UnitKind::Job),
            "server" => Some(UnitKind::Server),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            UnitKind::Request => "request",
            UnitKind::Job => "job",
            UnitKind::Server => "server",
        }
    }
}

/// One operation, whole.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    pub kind: UnitKind,
    pub started: Timestamp,
    /// From its start to its end (a request's: until its answer's body
    /// was sent).
    pub duration: Duration,
    /// The operation's own fields: for a request `request_id`, `method`,
    /// `path`, `route`, `status`, `bytes`, `headers_us`, `actor`,
    /// `remote`, `job_id`; for a job `job_id`, `name`, `state`,
    /// `exit_code`.
    pub fields: Fields,
    pub events: Vec<Event>,
    /// Events past [`MAX_UNIT_EVENTS`], not kept.
    pub events_dropped: u64,
}

impl Unit {
    pub fn new(kind: UnitKind) -> Unit {
        Unit {
            kind,
            started: Timestamp::now(),
            duration: Duration::ZERO,
            fields: Vec::new(),
            events: Vec::new(),
            events_dropped: 0,
        }
    }

    /// A lone event, as the unit of the server's own doing.
    pub fn server_event(event: Event) -> Unit {
        Unit {
            kind: UnitKind::Server,
            started: event.at,
            duration: Duration::ZERO,
            fields: Vec::new(),
            events: vec![event],
            events_dropped: 0,
        }
    }

    pub fn with(mut self, name: &'static str, value: Value) -> Unit {
        self.fields.push((name, value));
        self
    }

    pub fn push_event(&mut self, event: Event) {
        if self.events.len() < MAX_UNIT_EVENTS {
            self.events.push(event);
        } else {
            self.events_dropped += 1;
        }
    }

    pub fn field(&self, name: &str) -> Option<&Value> {
        field(&self.fields, name)
    }

    pub fn str_field(&self, name: &str) -> Option<&str> {
        self.field(name).and_then(Value::as_str)
    }
}
