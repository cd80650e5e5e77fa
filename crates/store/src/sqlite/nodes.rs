//! Nodes in the embedded store (one at a time, but remembered across
//! restarts and renames) and the interruption of jobs a node left running.

use joblog_core::{Labels, LogSummary, Timestamp};
use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::jobs::query_jobs;
use crate::interrupt::{interruption, Cause};
use crate::rows::{fields_text, JOB_COLUMNS};
use crate::{Outcome, Result};

/// Migration 3: the nodes table (heartbeats, so that a job interrupted by
/// a crash can say when its node was last alive).
pub(super) const MIGRATION: &str = r#"
CREATE TABLE nodes (
    name         TEXT PRIMARY KEY,
    version      TEXT,
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    stopped_at   INTEGER
);
"#;

/// A node silent this long is forgotten (its row, not its jobs).
const FORGET_AFTER_MICROS: i64 = 7 * 86_400 * 1_000_000;

pub(super) fn register(
    tx: &Transaction,
    node: &str,
    version: &str,
    secret_names: &[String],
    labels: &Labels,
    now: i64,
) -> Result<Outcome> {
    tx.prepare_cached(
        "INSERT INTO nodes (name, version, started_at, heartbeat_at, secret_names, labels) \
         VALUES (?1, ?2, ?3, ?3, ?4, ?5) \
         ON CONFLICT (name) DO UPDATE SET version = ?2, started_at = ?3, heartbeat_at = ?3, \
         stopped_at = NULL, secret_names = ?4, labels = ?5, presumed_lapsed = 0",
    )?
    .execute(params![
        node,
        version,
        now,
        crate::rows::secret_names_text(secret_names),
        labels.canonical()
    ])?;
    tx.prepare_cached("DELETE FROM nodes WHERE heartbeat_at < ?1")?
        .execute([now - FORGET_AFTER_MICROS])?;
    Ok(Outcome::Done)
}

pub(super) fn heartbeat(tx: &Transaction, node: &str, now: i64) -> Result<Outcome> {
    tx.prepare_cached("UPDATE nodes SET heartbeat_at = ?2, presumed_lapsed = 0 WHERE name = ?1")?
        .execute(params![node, now])?;
    // One node, no one else to judge.
    Ok(Outcome::Interrupted(Vec::new()))
}

pub(super) fn stopped(tx: &Transaction, node: &str, now: i64) -> Result<Outcome> {
    tx.prepare_cached("UPDATE nodes SET stopped_at = ?2, heartbeat_at = ?2 WHERE name = ?1")?
        .execute(params![node, now])?;
    Ok(Outcome::Done)
}

/// Ends the `running` jobs of `node` (of every node if `None`), and queued
/// ones with `include_queued`, each with its interruption record.
/// `summaries` holds counters this batch has yet to save; they win over the
/// stored ones, and the interruption's are noted there.
pub(super) fn interrupt(
    tx: &Transaction,
    node: Option<&str>,
    include_queued: bool,
    now: i64,
    summaries: &mut Vec<(i64, LogSummary)>,
) -> Result<Outcome> {
    let states = if include_queued {
        "('running', 'queued')"
    } else {
        "('running')"
    };
    let sql = format!(
        "SELECT {JOB_COLUMNS} FROM jobs WHERE state IN {states} AND (?1 IS NULL OR node = ?1) \
         ORDER BY id"
    );
    let victims = query_jobs(tx, &sql, &[&node])?;
    let mut insert = tx.prepare_cached(
        "INSERT INTO log (job_id, seq, ts, stream, message, fields) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut end =
        tx.prepare_cached("UPDATE jobs SET state = 'interrupted', finished_at = ?2 WHERE id = ?1")?;
    let mut ended = Vec::with_capacity(victims.len());
    for mut job in victims {
        if let Some((_, pending)) = summaries.iter().find(|(j, _)| *j == job.id) {
            job.log = *pending;
        }
        let heartbeat = match &job.node {
            Some(n) => last_heartbeat(tx, n)?,
            None => None,
        };
        let (record, summary) = interruption(
            &job,
            job.node.as_deref(),
            heartbeat,
            Cause::Restarted,
            Timestamp(now),
        );
        insert.execute(params![
            job.id,
            record.seq as i64,
            record.ts.micros(),
            record.stream.code(),
            record.message,
            fields_text(&record)
        ])?;
        end.execute(params![job.id, now])?;
        super::conn::run(tx, async |c| {
            crate::notifications::on_interrupted(c, &job, now).await
        })?;
        crate::writes::note_summary(summaries, job.id, summary);
        ended.push((job.id, job.node));
    }
    Ok(Outcome::Interrupted(ended))
}

fn last_heartbeat(c: &Connection, node: &str) -> Result<Option<Timestamp>> {
    Ok(
        c.prepare_cached("SELECT heartbeat_at FROM nodes WHERE name = ?1")?
            .query_row([node], |r| r.get::<_, i64>(0))
            .optional()?
            .map(Timestamp),
    )
}
