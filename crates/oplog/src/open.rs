//! From a checked sink plan to an open sink: files, stdout/stderr, syslog
//! or the database.

use std::io;
use std::sync::Arc;

use super::plan::{Plan, Target};
use super::sink::Sink;
use super::sinks::database::{AuditDb, DatabaseSink};
use super::sinks::{Clock, FileSink, StreamSink, SyslogSink};

/// What opening a sink may need besides its plan.
#[derive(Clone)]
pub struct Resources {
    pub clock: Arc<dyn Clock>,
    /// Where the database sink stores audit entries.
    pub audit_db: AuditDb,
}

/// Opens the sink `plan` describes.
pub fn open(plan: &Plan, resources: &Resources) -> io::Result<Box<dyn Sink>> {
    Ok(match &plan.target {
        Target::File {
            path,
            rotation,
            special,
        } => Box::new(FileSink::open(
            path.clone(),
            *rotation,
            *special,
            plan.format,
            resources.clock.clone(),
        )?),
        Target::Stdout => Box::new(StreamSink::stdout(plan.format)),
        Target::Stderr => Box::new(StreamSink::stderr(plan.format)),
        Target::Syslog { target, facility } => Box::new(SyslogSink::connect(
            target.clone(),
            *facility,
            "joblog",
            plan.format,
        )?),
        Target::Database => Box::new(DatabaseSink::new(resources.audit_db.clone())),
    })
}

/// An opener for [`super::OplogOptions`] over `resources`.
pub fn opener(resources: Resources) -> super::Opener {
    Arc::new(move |plan: &Plan| open(plan, &resources))
}
