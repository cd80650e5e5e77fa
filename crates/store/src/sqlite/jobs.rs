//! Jobs in the embedded store: queueing one and claiming the next, the
//! two writes whose statements are SQLite's own (the shared ones are
//! `crate::writes`, `crate::schedules::writes`).

use joblog_core::{Job, JobSpec, Timestamp};
use rusqlite::Connection;

use super::conn::Lite;
use crate::db::Decode;
use crate::rows::JOB_COLUMNS;
use crate::schedules::writes::ScheduleWrites;
use crate::{Result, StoreError};

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

/// Queues a job; `None` when it is a fire (schedule, fire time,
/// attempt) that already has its job.
pub(super) fn insert_job(
    tx: &Connection,
    name: Option<&str>,
    spec: &JobSpec,
    run_after: Option<Timestamp>,
    now: i64,
) -> Result<Option<Job>> {
    let spec_json = serde_json::to_string(spec)
        .map_err(|e| StoreError::Database(format!("encoding job spec: {e}")))?;
    let keys = crate::schedules::JobKeys::of(spec);
    let sql = format!(
        "INSERT INTO jobs (name, state, spec, created_at, schedule_id, fire_time, attempt, \
         concurrency_key, max_concurrent, run_after) \
         VALUES (?1, 'queued', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
         ON CONFLICT (schedule_id, fire_time, attempt) DO NOTHING RETURNING {JOB_COLUMNS}"
    );
    Ok(query_jobs(
        tx,
        &sql,
        &[
            &name,
            &spec_json,
            &now,
            &keys.schedule_id,
            &keys.fire_time,
            &keys.attempt,
            &keys.concurrency_key,
            &keys.max_concurrent,
            &run_after.map(Timestamp::micros),
        ],
    )?
    .pop())
}

/// Takes the oldest queued job that may start at `now`: not waiting for
/// a retry's backoff, and not held back by its concurrency key; marks it
/// running on `node`. One writer, so one statement is the whole claim.
pub(super) fn claim(tx: &Connection, node: &str, now: i64) -> Result<Option<Job>> {
    let sql = format!(
        "UPDATE jobs SET state = 'running', started_at = ?1, node = ?2 \
         WHERE id = (SELECT id FROM jobs AS q WHERE state = 'queued' \
            AND (run_after IS NULL OR run_after <= ?1) \
            AND (concurrency_key IS NULL OR (SELECT count(*) FROM jobs AS r \
                WHERE r.state = 'running' AND r.concurrency_key = q.concurrency_key) \
                < q.max_concurrent) \
            ORDER BY id LIMIT 1) \
         RETURNING {JOB_COLUMNS}"
    );
    Ok(query_jobs(tx, &sql, &[&now, &node])?.pop())
}

impl ScheduleWrites for Lite<'_> {
    async fn insert_job(
        &mut self,
        name: Option<&str>,
        spec: &JobSpec,
        run_after: Option<Timestamp>,
        now: i64,
    ) -> Result<Option<Job>> {
        insert_job(self.0, name, spec, run_after, now)
    }
}
