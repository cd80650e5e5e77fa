//! Jobs in the embedded store: claiming the next, whose statement is
//! SQLite's own (queueing one is `crate::schedules::writes`', the other
//! shared writes `crate::writes`').

use joblog_core::{Job, Labels, Timestamp};
use rusqlite::Connection;

use super::conn::Lite;
use crate::db::Decode;
use crate::rows::JOB_COLUMNS;
use crate::schedules::writes::ScheduleWrites;
use crate::Result;

pub(super) fn query_jobs(
    conn: &Connection,
    sql: &str,
    params: &[&dyn rusqlite::ToSql],
) -> Result<Vec<Job>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(params)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(Job::decode(row)?);
    }
    Ok(out)
}

/// Takes the oldest queued job that may start at `at`: not waiting for a
/// retry's backoff, and not held back by its concurrency key; marks it
/// running on `node` since `now`. One writer, so one statement is the
/// whole claim.
///
/// A job whose selector asks for a label the node lacks stays queued: on
/// one node that happens only to a database restored on another host
/// (submissions the node cannot take are refused), so it is a filter,
/// not a queue of its own as on PostgreSQL. The selector `k=v,k=v` is
/// made a JSON array (labels hold no quote or comma).
pub(super) fn claim(
    tx: &Connection,
    node: &str,
    labels: &Labels,
    at: Timestamp,
    now: i64,
) -> Result<Option<Job>> {
    let sql = format!(
        "UPDATE jobs SET state = 'running', started_at = ?1, node = ?2 \
         WHERE NOT EXISTS (SELECT 1 FROM nodes WHERE name = ?2 AND drain_at IS NOT NULL) \
         AND id = (SELECT id FROM jobs AS q WHERE state = 'queued' \
            AND (run_after IS NULL OR run_after <= ?3) \
            AND (node_selector = '' OR NOT EXISTS (SELECT 1 FROM \
                json_each('[\"' || replace(q.node_selector, ',', '\",\"') || '\"]') AS s \
                WHERE s.value NOT IN (SELECT value FROM json_each(?4)))) \
            AND (concurrency_key IS NULL OR (SELECT count(*) FROM jobs AS r \
                WHERE r.state = 'running' AND r.concurrency_key = q.concurrency_key) \
                < q.max_concurrent) \
            ORDER BY id LIMIT 1) \
         RETURNING {JOB_COLUMNS}"
    );
    let labels = serde_json::Value::from(labels.items()).to_string();
    Ok(query_jobs(tx, &sql, &[&now, &node, &at.micros(), &labels])?.pop())
}

impl ScheduleWrites for Lite<'_> {
    fn node(&self) -> Option<&str> {
        None
    }
}
