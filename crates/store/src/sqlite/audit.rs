//! The audit trail in the embedded store: its table and indexes (one per
//! filter, each ending in `id` so a page is one range), entries appended
//! in the writer's transaction (listings are `crate::audit`'s).

use joblog_core::NewAudit;
use rusqlite::{params, Connection};

use crate::audit::AuditInsert;
use crate::{Outcome, Result};

/// Migration 6: the audit table. `job_id` is no foreign key: a job's
/// deletion by retention leaves its entries.
pub(super) const MIGRATION: &str = r#"
CREATE TABLE audit (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at         INTEGER NOT NULL,
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    job_id     INTEGER,
    remote     TEXT,
    request_id TEXT,
    node       TEXT NOT NULL,
    detail     TEXT NOT NULL
);
CREATE INDEX audit_actor ON audit(actor, id);
CREATE INDEX audit_action ON audit(action, id);
CREATE INDEX audit_job ON audit(job_id, id);
"#;

/// → `Done`.
pub(super) fn append(c: &Connection, entries: &[NewAudit]) -> Result<Outcome> {
    let mut stmt = c.prepare_cached(
        "INSERT INTO audit (at, actor, action, job_id, remote, request_id, node, detail) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for e in entries {
        let row = AuditInsert::of(e);
        stmt.execute(params![
            row.at,
            row.actor,
            row.action,
            row.job_id,
            row.remote,
            row.request_id,
            row.node,
            row.detail
        ])?;
    }
    Ok(Outcome::Done)
}
