//! What a sink writes: one line of one of the server's logs (an access
//! line, an audit entry, a warning with its operation's context, a slow
//! operation with its timeline), built on the router's thread from an
//! operation unit, never on the thread that logged.

use std::fmt;

use joblog_core::Timestamp;
use serde::{Deserialize, Serialize};

pub use super::fields::{EntryFields, FieldValue};

/// Severity, as `tracing` has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Trace => "trace",
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }

    pub fn from_tracing(level: &tracing::Level) -> Level {
        match *level {
            tracing::Level::TRACE => Level::Trace,
            tracing::Level::DEBUG => Level::Debug,
            tracing::Level::INFO => Level::Info,
            tracing::Level::WARN => Level::Warn,
            tracing::Level::ERROR => Level::Error,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The server's logs; a unit is routed to one or several.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Log {
    /// One line per API request.
    Access,
    /// Every state change: who, what, when, from where.
    Audit,
    /// Warnings and errors, with their operation's context.
    Error,
    /// Operations longer than the threshold, with their whole timeline.
    Slow,
    /// The server's life outside any operation: start, configuration,
    /// reloads, stop.
    Server,
}

impl Log {
    pub const ALL: [Log; 5] = [Log::Access, Log::Audit, Log::Error, Log::Slow, Log::Server];

    pub fn as_str(self) -> &'static str {
        match self {
            Log::Access => "access",
            Log::Audit => "audit",
            Log::Error => "error",
            Log::Slow => "slow",
            Log::Server => "server",
        }
    }
}

/// A set of logs: those some sink takes, so routing builds no line that
/// no sink would write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogSet(u8);

impl LogSet {
    pub const ALL: LogSet = LogSet(0b1_1111);

    fn bit(log: Log) -> u8 {
        1 << log as u8
    }

    pub fn contains(self, log: Log) -> bool {
        self.0 & LogSet::bit(log) != 0
    }

    pub fn insert(&mut self, log: Log) {
        self.0 |= LogSet::bit(log);
    }
}

impl FromIterator<Log> for LogSet {
    fn from_iter<I: IntoIterator<Item = Log>>(logs: I) -> LogSet {
        let mut set = LogSet::default();
        for log in logs {
            set.insert(log);
        }
        set
    }
}

impl fmt::Display for Log {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One line of one log.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub log: Log,
    pub level: Level,
    pub at: Timestamp,
    /// What a sink's `ignore` list matches: the route of an access line
    /// (`GET /api/v1/jobs/{id}`), the action of an audit entry
    /// (`job.submitted`), the target of an event (`joblog_api::sse`), the
    /// kind of a slow operation (`request`, `job`).
    pub kind: String,
    /// One line for people: `GET /api/v1/jobs/7 200 1.2ms`.
    pub message: String,
    /// Everything else, structured. An `events` array holds a slow
    /// operation's timeline.
    pub fields: EntryFields,
}
