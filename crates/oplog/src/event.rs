//! What a thread logs, captured as values: the event's time, level,
//! target, source location, message and fields. Capturing copies the
//! values (a borrowed value cannot outlive the call); it formats no line,
//! opens no file and takes no lock: that is the sinks' work, on theirs.

use std::fmt;

use joblog_core::Timestamp;
use tracing::field::{Field, Visit};

use super::entry::Level;

/// A field's value as the event gave it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
}

impl Value {
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Str(s) => serde_json::Value::from(s.as_str()),
            Value::I64(n) => serde_json::Value::from(*n),
            Value::U64(n) => serde_json::Value::from(*n),
            Value::F64(n) => serde_json::Value::from(*n),
            Value::Bool(b) => serde_json::Value::from(*b),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::U64(n) => Some(*n),
            Value::I64(n) => u64::try_from(*n).ok(),
            Value::Str(s) => s.parse().ok(),
            Value::F64(_) | Value::Bool(_) => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Str(s) => f.write_str(s),
            Value::I64(n) => write!(f, "{n}"),
            Value::U64(n) => write!(f, "{n}"),
            Value::F64(n) => write!(f, "{n}"),
            Value::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// Named values, in the order given.
pub type Fields = Vec<(&'static str, Value)>;

/// The value of `name` among `fields`, the last one given winning.
pub fn field<'a>(fields: &'a Fields, name: &str) -> Option<&'a Value> {
    fields
        .iter()
        .rev()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
}

/// One logged event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub at: Timestamp,
    pub level: Level,
    /// The module that logged it (`joblog_api::routes`).
    pub target: &'static str,
    pub file: Option<&'static str>,
    pub line: Option<u32>,
    pub message: String,
    pub fields: Fields,
}

impl Event {
    /// An event given directly, not through `tracing`.
    pub fn new(level: Level, target: &'static str, message: impl Into<String>) -> Event {
        Event {
            at: Timestamp::now(),
            level,
            target,
            file: None,
            line: None,
            message: message.into(),
            fields: Vec::new(),
        }
    }

    pub fn with(mut self, name: &'static str, value: Value) -> Event {
        self.fields.push((name, value));
        self
    }

    /// The event `tracing` hands a layer, captured.
    pub fn from_tracing(event: &tracing::Event<'_>) -> Event {
        let meta = event.metadata();
        let mut captured = Event {
            at: Timestamp::now(),
            level: Level::from_tracing(meta.level()),
            target: meta.target(),
            file: meta.file(),
            line: meta.line(),
            message: String::new(),
            fields: Vec::with_capacity(meta.fields().len()),
        };
        event.record(&mut Capture {
            message: Some(&mut captured.message),
            fields: &mut captured.fields,
        });
        captured
    }

    pub fn field(&self, name: &str) -> Option<&Value> {
        field(&self.fields, name)
    }
}

/// Copies an event's or span's fields; `message` (the format string's
/// text) goes apart when there is a place for it.
pub struct Capture<'a> {
    pub message: Option<&'a mut String>,
    pub fields: &'a mut Fields,
}

impl Visit for Capture<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.fields
            .push((field.name(), Value::Str(value.to_string())));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.fields.push((field.name(), Value::I64(value)));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.fields.push((field.name(), Value::U64(value)));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.fields.push((field.name(), Value::F64(value)));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.fields.push((field.name(), Value::Bool(value)));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        use std::fmt::Write;
        match (&mut self.message, field.name()) {
            (Some(message), "message") => {
                let _ = write!(message, "{value:?}");
            }
            (_, name) => self.fields.push((name, Value::Str(format!("{value:?}")))),
        }
    }
}
