//! Schedules in the embedded store: their table, reads, and `FireDue` —
//! one writer, so a due schedule's fires and its moved `next_fire`
//! commit together and no other writer can see them half done.

use joblog_core::schedule::{Schedule, ScheduleId, ValidSchedule};
use joblog_core::{Job, Timestamp};
use rusqlite::{params, Connection, OptionalExtension, Row, Transaction};

use super::insert_job;
use crate::schedules::{
    due_columns, schedule_columns, schedule_from, DueRow, Fired, SavedColumns, ScheduleRow,
    ScheduleSaved, FIRE_BATCH,
};
use crate::{Outcome, Result};

/// Migration 8: schedules, and what jobs carry for them and for
/// concurrency limits.
pub(super) const MIGRATION: &str = r#"
CREATE TABLE schedules (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT NOT NULL UNIQUE,
    cron          TEXT NOT NULL,
    timezone      TEXT NOT NULL,
    spec          TEXT NOT NULL,
    overlap       TEXT NOT NULL,
    missed        TEXT NOT NULL,
    attempts      INTEGER NOT NULL,
    backoff_s     REAL NOT NULL,
    enabled       INTEGER NOT NULL,
    -- NULL while disabled: the scheduler walks this index only.
    next_fire     INTEGER,
    skipped_fires INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
CREATE INDEX schedules_next_fire ON schedules(next_fire) WHERE next_fire IS NOT NULL;
ALTER TABLE jobs ADD COLUMN schedule_id INTEGER;
ALTER TABLE jobs ADD COLUMN fire_time INTEGER;
ALTER TABLE jobs ADD COLUMN attempt INTEGER;
ALTER TABLE jobs ADD COLUMN concurrency_key TEXT;
ALTER TABLE jobs ADD COLUMN max_concurrent INTEGER;
ALTER TABLE jobs ADD COLUMN run_after INTEGER;
-- Each fire of a schedule is one job per attempt, whatever happens.
CREATE UNIQUE INDEX jobs_fire ON jobs(schedule_id, fire_time, attempt);
CREATE INDEX jobs_schedule ON jobs(schedule_id, id);
CREATE INDEX jobs_schedule_active ON jobs(schedule_id) WHERE state IN ('queued', 'running');
CREATE INDEX jobs_running_key ON jobs(concurrency_key) WHERE state = 'running';
CREATE INDEX jobs_run_after ON jobs(run_after) WHERE state = 'queued' AND run_after IS NOT NULL;
"#;

fn schedule_from_row(row: &Row) -> rusqlite::Result<ScheduleRow> {
    Ok(ScheduleRow {
        id: row.get(0)?,
        name: row.get(1)?,
        cron: row.get(2)?,
        timezone: row.get(3)?,
        spec: row.get(4)?,
        overlap: row.get(5)?,
        missed: row.get(6)?,
        attempts: row.get(7)?,
        backoff_s: row.get(8)?,
        enabled: row.get(9)?,
        next_fire: row.get(10)?,
        skipped_fires: row.get(11)?,
        created_at: row.get(12)?,
        updated_at: row.get(13)?,
        last_id: row.get(14)?,
        last_state: row.get(15)?,
        last_fire: row.get(16)?,
        last_attempt: row.get(17)?,
        last_created: row.get(18)?,
        last_finished: row.get(19)?,
    })
}

fn query_schedules(
    c: &Connection,
    sql: &str,
    params: &[&dyn rusqlite::ToSql],
) -> Result<Vec<Schedule>> {
    let mut stmt = c.prepare_cached(sql)?;
    let rows = stmt.query_map(params, schedule_from_row)?;
    let mut out = Vec::new();
    for row in rows {
        out.push(row?.into_schedule()?);
    }
    Ok(out)
}

pub(super) fn get(c: &Connection, id: ScheduleId) -> Result<Option<Schedule>> {
    let sql = concat!(
        "SELECT ",
        schedule_columns!(),
        " ",
        schedule_from!(),
        " WHERE s.id = ?1"
    );
    Ok(query_schedules(c, sql, &[&id])?.pop())
}

pub(super) fn list(c: &Connection, after_id: ScheduleId, limit: u32) -> Result<Vec<Schedule>> {
    let sql = concat!(
        "SELECT ",
        schedule_columns!(),
        " ",
        schedule_from!(),
        " WHERE s.id > ?1 ORDER BY s.id LIMIT ?2"
    );
    query_schedules(c, sql, &[&after_id, &limit])
}

/// The schedules due at `?1`, earliest first: one range of
/// `schedules_next_fire`, however many schedules there are.
pub(super) const DUE: &str = concat!(
    "SELECT ",
    due_columns!(),
    " FROM schedules WHERE next_fire IS NOT NULL AND next_fire <= ?1 \
     ORDER BY next_fire LIMIT ?2"
);
pub(super) const NEXT_FIRE: &str =
    "SELECT min(next_fire) FROM schedules WHERE next_fire IS NOT NULL";
pub(super) const ACTIVE: &str = "SELECT 1 FROM jobs WHERE schedule_id = ?1 \
     AND state IN ('queued', 'running') LIMIT 1";

pub(super) fn next_fire(c: &Connection) -> Result<Option<Timestamp>> {
    let t: Option<i64> = c.prepare_cached(NEXT_FIRE)?.query_row([], |r| r.get(0))?;
    Ok(t.map(Timestamp))
}

pub(super) fn next_run_after(c: &Connection) -> Result<Option<Timestamp>> {
    let t: Option<i64> = c
        .prepare_cached(
            "SELECT min(run_after) FROM jobs WHERE state = 'queued' AND run_after IS NOT NULL",
        )?
        .query_row([], |r| r.get(0))?;
    Ok(t.map(Timestamp))
}

pub(super) fn save(
    tx: &Transaction,
    id: Option<ScheduleId>,
    s: &ValidSchedule,
    next_fire: Option<Timestamp>,
    now: i64,
) -> Result<Outcome> {
    let cols = SavedColumns::of(s)?;
    let taken: Option<ScheduleId> = tx
        .prepare_cached("SELECT id FROM schedules WHERE name = ?1")?
        .query_row([&s.name], |r| r.get(0))
        .optional()?;
    if taken.is_some_and(|t| Some(t) != id) {
        return Ok(Outcome::Schedule(ScheduleSaved::NameTaken));
    }
    let next = next_fire.map(Timestamp::micros);
    let id = match id {
        None => tx
            .prepare_cached(
                "INSERT INTO schedules (name, cron, timezone, spec, overlap, missed, attempts, \
                 backoff_s, enabled, next_fire, created_at, updated_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11) RETURNING id",
            )?
            .query_row(
                params![
                    s.name,
                    cols.cron,
                    cols.timezone,
                    cols.spec,
                    cols.overlap,
                    cols.missed,
                    cols.attempts,
                    cols.backoff_s,
                    s.enabled,
                    next,
                    now
                ],
                |r| r.get(0),
            )?,
        Some(id) => {
            let n = tx
                .prepare_cached(
                    "UPDATE schedules SET name = ?2, cron = ?3, timezone = ?4, spec = ?5, \
                     overlap = ?6, missed = ?7, attempts = ?8, backoff_s = ?9, enabled = ?10, \
                     next_fire = ?11, updated_at = ?12 WHERE id = ?1",
                )?
                .execute(params![
                    id,
                    s.name,
                    cols.cron,
                    cols.timezone,
                    cols.spec,
                    cols.overlap,
                    cols.missed,
                    cols.attempts,
                    cols.backoff_s,
                    s.enabled,
                    next,
                    now
                ])?;
            if n == 0 {
                return Ok(Outcome::Schedule(ScheduleSaved::NotFound));
            }
            id
        }
    };
    match get(tx, id)? {
        Some(saved) => Ok(Outcome::Schedule(ScheduleSaved::Saved(Box::new(saved)))),
        None => Ok(Outcome::Schedule(ScheduleSaved::NotFound)),
    }
}

pub(super) fn delete(tx: &Transaction, id: ScheduleId) -> Result<Outcome> {
    let n = tx
        .prepare_cached("DELETE FROM schedules WHERE id = ?1")?
        .execute([id])?;
    Ok(Outcome::Count(n as u64))
}

fn due_from_row(row: &Row) -> rusqlite::Result<DueRow> {
    Ok(DueRow {
        id: row.get(0)?,
        name: row.get(1)?,
        cron: row.get(2)?,
        timezone: row.get(3)?,
        spec: row.get(4)?,
        overlap: row.get(5)?,
        missed: row.get(6)?,
        attempts: row.get(7)?,
        backoff_s: row.get(8)?,
        next_fire: row.get(9)?,
    })
}

pub(super) fn fire_due(tx: &Transaction, now: Timestamp, written_at: i64) -> Result<Outcome> {
    let rows = tx
        .prepare_cached(DUE)?
        .query_map(params![now.micros(), FIRE_BATCH + 1], due_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut fired = Fired {
        more: rows.len() > FIRE_BATCH as usize,
        ..Fired::default()
    };
    for row in rows.into_iter().take(FIRE_BATCH as usize) {
        let id = row.id;
        let plan = match row.plan(now) {
            Ok(plan) => plan,
            Err(why) => {
                // Never fail the batch (it carries other jobs' records):
                // the schedule stops until someone mends it.
                tx.prepare_cached(
                    "UPDATE schedules SET enabled = 0, next_fire = NULL WHERE id = ?1",
                )?
                .execute([id])?;
                fired.broken.push((id, why));
                continue;
            }
        };
        let active = plan.skip_if_active
            && tx
                .prepare_cached(ACTIVE)?
                .query_row([id], |_| Ok(()))
                .optional()?
                .is_some();
        let (making, skipped) = plan.to_make(active);
        for spec in making {
            if let Some(job) = insert_job(tx, Some(&plan.name), spec, None, written_at)? {
                fired.jobs.push(job);
            }
        }
        tx.prepare_cached(
            "UPDATE schedules SET next_fire = ?2, skipped_fires = skipped_fires + ?3 WHERE id = ?1",
        )?
        .execute(params![
            id,
            plan.next.map(Timestamp::micros),
            skipped as i64
        ])?;
        fired.skipped += skipped;
    }
    Ok(Outcome::Fired(fired))
}

/// Queues the next attempt of a scheduled job that just ended, if its
/// retries say so, in the transaction that ended it.
pub(super) fn retry(tx: &Transaction, ended: &Job, now: i64) -> Result<()> {
    let Some(run) = ended.spec.schedule else {
        return Ok(());
    };
    if let Some((next, after)) = run.retry(ended.state, Timestamp(now)) {
        let mut spec = ended.spec.clone();
        spec.schedule = Some(next);
        insert_job(tx, ended.name.as_deref(), &spec, Some(after), now)?;
    }
    Ok(())
}
