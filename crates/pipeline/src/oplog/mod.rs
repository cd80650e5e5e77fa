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
//! never stops the others or the server.

pub mod config;
pub mod entry;
mod event;
pub mod format;
mod layer;
mod metrics;
pub mod open;
pub mod queue;
pub mod route;
mod router;
mod runner;
pub mod sink;
pub mod sinks;
mod unit;

pub use config::{LoggingConfig, Plan, SinkConfig, SinkKind, Target};
pub use entry::{Entry, Level, Log, LogSet};
pub use event::{Event, Value};
pub use format::Format;
pub use layer::OplogLayer;
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
