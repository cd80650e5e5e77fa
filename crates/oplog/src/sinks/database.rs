//! The database sink: audit entries stored in joblog's own database, in
//! the writer's group commits, so `GET /api/v1/audit` and the web UI's
//! Audit page can query them. It takes the audit log only.

use std::io;
use std::sync::{Arc, OnceLock};

use joblog_core::NewAudit;
use serde_json::Value;

use crate::entry::{Entry, FieldValue, Log};
use crate::sink::Sink;

/// Where audit entries are stored: the log pipeline, which commits them
/// with everything else. Blocking: called on the sink's own thread.
pub trait AuditWriter: Send + Sync + 'static {
    fn append_audit(&self, entries: Vec<NewAudit>) -> io::Result<()>;
}

/// The store, once it is open: the logs start before the database does
/// (its connection is retried, and that is logged), so the sink is given
/// a place the writer is put in later.
pub type AuditDb = Arc<OnceLock<Arc<dyn AuditWriter>>>;

pub struct DatabaseSink {
    db: AuditDb,
    batch: Vec<NewAudit>,
}

impl DatabaseSink {
    pub fn new(db: AuditDb) -> DatabaseSink {
        DatabaseSink {
            db,
            batch: Vec::new(),
        }
    }
}

/// The stored form of an audit line.
pub fn to_audit(entry: &Entry) -> NewAudit {
    let text = |name: &str| {
        entry
            .fields
            .get(name)
            .and_then(FieldValue::as_str)
            .map(str::to_string)
    };
    NewAudit {
        at: entry.at,
        actor: text("actor").unwrap_or_else(|| "system".into()),
        action: entry.kind.clone(),
        job_id: entry.fields.get("job_id").and_then(FieldValue::as_i64),
        remote: text("remote"),
        request_id: text("request_id"),
        node: text("node").unwrap_or_default(),
        detail: match entry.fields.get("detail").and_then(FieldValue::as_json) {
            Some(Value::Object(map)) => map.clone(),
            _ => serde_json::Map::new(),
        },
    }
}

impl Sink for DatabaseSink {
    fn write(&mut self, batch: &[Arc<Entry>]) -> io::Result<()> {
        let Some(db) = self.db.get() else {
            return Err(io::Error::other("the database is not open yet"));
        };
        self.batch.clear();
        self.batch.extend(
            batch
                .iter()
                .filter(|e| e.log == Log::Audit)
                .map(|e| to_audit(e)),
        );
        if self.batch.is_empty() {
            return Ok(());
        }
        db.append_audit(std::mem::take(&mut self.batch))
    }

    fn flush(&mut self) -> io::Result<()> {
        // Each write waited for its commit.
        Ok(())
    }

    fn describe(&self) -> String {
        "the joblog database".into()
    }
}
