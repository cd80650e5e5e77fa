//! The server's own logs, usable by any Rust program: a `tracing` layer
//! (and a direct API) hands structured events, gathered into operation
//! units (an API request, a job run), to a router thread that turns them
//! into access, audit, error, slow and server lines and hands each to the
//! sinks that take it (files with rotation, stdout/stderr, syslog, the
//! database), each on its own thread behind its own bounded queue.
//!
//! Invariants: the thread that logs only captures values and pushes onto
//! a queue (no I/O, no formatting to text, no shared lock); a full queue
//! does what its policy says and counts what it drops; a failing sink
//! never stops the others or the server. The crate depends on `core`
//! only: the database sink writes through [`sinks::database::AuditWriter`],
//! which the binary implements with the pipeline.
//!
//! Where things are: `event` and `unit` (what the layer captures),
//! `layer` (the `tracing` layer), `router` and `route` (a finished unit to
//! the access, audit, error, slow and server entries, and which sinks take
//! each), `runner` and `queue` (a sink's thread and bounded queue),
//! `config` and `plan` (the `[logging]` shape, checked whole into one plan
//! per sink, API-given paths confined), `open` (a plan to a sink),
//! `entry`, `fields` and `format` (lines, their fields shared with
//! their unit, as text or JSON), `metrics`, and `sinks`
//! (files with rotation, stdout/stderr, syslog, the database).
//! `benches/oplog.rs` measures the part joblog writes.

pub mod config;
pub mod entry;
mod event;
mod fields;
pub mod format;
mod layer;
mod metrics;
pub mod open;
pub mod plan;
pub mod queue;
pub mod route;
mod router;
mod runner;
pub mod sink;
pub mod sinks;
mod unit;

pub use config::{LoggingConfig, SinkConfig, SinkKind};
pub use entry::{Entry, EntryFields, FieldValue, Level, Log, LogSet};
pub use event::{Event, Value};
pub use format::Format;
pub use layer::OplogLayer;
pub use plan::{Plan, Target};
pub use route::AUDIT_FIELD;
pub use router::{Opener, Oplog, OplogOptions};
pub use runner::SinkStats;
pub use sink::Sink;
pub use unit::{Unit, UnitKind, UNIT_FIELD};

/// Why the logs could not start or take a configuration.
#[derive(Debug, thiserror::Error)]
pub enum OplogError {
    /// The configuration is invalid; the message names the sink and field.
    #[error("invalid logging configuration: {0}")]
    Invalid(String),
    /// A sink could not open its destination.
    #[error("{0}")]
    Open(String),
    #[error("the server's logs are stopped")]
    Closed,
}

#[cfg(test)]
mod tests;
