//! What the writer does with schedules, written once for both stores:
//! firing the due ones (`FireDue`), saving and deleting one, and queueing
//! the next attempt of a scheduled job that failed. The steps whose
//! statements really differ are [`ScheduleWrites`]' methods: PostgreSQL
//! does each for every due schedule at once, with arrays, because a round
//! trip per schedule took longer than the fire's budget
//! (docs/benchmarks.md); SQLite, in process, takes the defaults, one
//! statement per schedule.

use std::collections::HashSet;

use joblog_core::schedule::{ScheduleId, ScheduledRun, ValidSchedule};
use joblog_core::{Job, JobSpec, Timestamp};

use super::chain::{self, FOLLOWED_BY};
use super::{
    due_columns, DueRow, Fired, JobKeys, SavedColumns, ScheduleDeleted, ScheduleSaved, FIRE_BATCH,
};
use crate::db::{query_opt, sql, Conn, Decode, Param, Row, Statement};
use crate::rows::job_columns;
use crate::{Outcome, Result, StoreError};

/// The schedules due at `$1`, earliest first: one range of
/// `schedules_next_fire`, however many schedules there are. Two texts:
/// across PostgreSQL's nodes each due row is locked by the node that
/// fires it and skipped by the others; SQLite has one writer.
pub(crate) const DUE: Statement = Statement::new(
    concat!(
        "SELECT ",
        due_columns!(),
        " FROM schedules WHERE next_fire IS NOT NULL AND next_fire <= ?1 \
         ORDER BY next_fire LIMIT ?2"
    ),
    concat!(
        "SELECT ",
        due_columns!(),
        " FROM schedules WHERE next_fire IS NOT NULL AND next_fire <= $1 \
         ORDER BY next_fire LIMIT $2 FOR UPDATE SKIP LOCKED"
    ),
);
/// Whether schedule `$1` has a run queued or running.
pub(crate) const ACTIVE: Statement = sql!(
    "SELECT schedule_id FROM jobs WHERE schedule_id = $1 \
     AND state IN ('queued', 'running') LIMIT 1"
);
const DISABLE: Statement =
    sql!("UPDATE schedules SET enabled = false, next_fire = NULL WHERE id = $1");
const MOVE: Statement =
    sql!("UPDATE schedules SET next_fire = $2, skipped_fires = skipped_fires + $3 WHERE id = $1");
const INSERT: Statement = sql!(
    "INSERT INTO schedules (name, cron, timezone, spec, overlap, missed, \
     attempts, backoff_s, enabled, next_fire, after_id, after_states, created_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13) \
     ON CONFLICT (name) DO NOTHING RETURNING id"
);
const UPDATE: Statement = sql!(
    "UPDATE schedules SET name = $2, cron = $3, timezone = $4, spec = $5, \
     overlap = $6, missed = $7, attempts = $8, backoff_s = $9, enabled = $10, next_fire = $11, \
     after_id = $12, after_states = $13, updated_at = $14 WHERE id = $1"
);
const BY_NAME: Statement = sql!("SELECT id FROM schedules WHERE name = $1");
const DELETE: Statement = sql!("DELETE FROM schedules WHERE id = $1");

/// A job; nothing when it is a fire (schedule, fire time, attempt) that
/// already has its job. Two texts: PostgreSQL records the node that
/// queued a job and pins one with secrets to it (`$4`, `$5`); SQLite has
/// one node and leaves those two out.
pub(crate) const INSERT_JOB: Statement = Statement::new(
    concat!(
        "INSERT INTO jobs (name, state, spec, created_at, schedule_id, fire_time, attempt, \
         concurrency_key, max_concurrent, run_after, node_selector, folder) \
         VALUES (?1, 'queued', ?2, ?3, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) \
         ON CONFLICT (schedule_id, fire_time, attempt) DO NOTHING RETURNING ",
        job_columns!()
    ),
    concat!(
        "INSERT INTO jobs (name, state, spec, created_at, created_by, pinned_node, schedule_id, \
         fire_time, attempt, concurrency_key, max_concurrent, run_after, node_selector, folder) \
         VALUES ($1, 'queued', $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
         ON CONFLICT (schedule_id, fire_time, attempt) DO NOTHING RETURNING ",
        job_columns!()
    ),
);

/// A schedule's next fire and the fires it skipped, after a `FireDue`.
pub(crate) struct Moved {
    pub id: ScheduleId,
    pub next: Option<i64>,
    pub skipped: i64,
}

/// The writer's transaction, as schedules need it: shared statements
/// ([`Conn`]) and the steps each store does its own way.
pub(crate) trait ScheduleWrites: Conn + Sized {
    /// The node this writer writes for, where the store keeps it (several
    /// nodes share PostgreSQL); `None` on a store of one node.
    fn node(&self) -> Option<&str>;

    /// Where this writer keeps the enabled notification rules for the rest
    /// of its batch (`None` in the slot: not read yet); `None`: read them
    /// at each job's end. A batch that saves or deletes a rule forgets
    /// them.
    fn kept_rules(&mut self) -> Option<&mut Option<crate::notifications::EnabledRules>> {
        None
    }

    /// Notes that this batch queued a notification delivery (see
    /// [`crate::StoreWriter::take_queued_deliveries`]); a writer that
    /// does not tell has nothing to note.
    fn queued_delivery(&mut self) {}

    /// Serialises the saves and deletes that change chains of triggers
    /// until the commit, across every node of the store (see
    /// `chain.rs`). A store of one writer has nothing to do.
    async fn lock_chains(&mut self) -> Result<()> {
        Ok(())
    }

    /// The fires' jobs, each named for its schedule (a fire that has its
    /// job already makes none), in any order.
    async fn insert_fires(&mut self, fires: &[(&str, &JobSpec)], now: i64) -> Result<Vec<Job>> {
        let mut jobs = Vec::new();
        for (name, spec) in fires {
            jobs.extend(insert_job(self, Some(name), spec, None, now).await?);
        }
        Ok(jobs)
    }

    /// Which of the schedules `ids` have a run queued or running.
    async fn active(&mut self, ids: &[ScheduleId]) -> Result<HashSet<ScheduleId>> {
        let mut active = HashSet::new();
        for &id in ids {
            if query_opt::<Self, (i64,)>(self, &ACTIVE, &[id.into()])
                .await?
                .is_some()
            {
                active.insert(id);
            }
        }
        Ok(active)
    }

    /// Stops schedules whose row cannot be read, until someone mends them.
    async fn disable(&mut self, ids: &[ScheduleId]) -> Result<()> {
        for &id in ids {
            self.execute(&DISABLE, &[id.into()]).await?;
        }
        Ok(())
    }

    /// Moves each schedule's next fire past the ones just made.
    async fn move_fires(&mut self, moved: &[Moved]) -> Result<()> {
        for m in moved {
            let params = [m.id.into(), m.next.into(), m.skipped.into()];
            self.execute(&MOVE, &params).await?;
        }
        Ok(())
    }
}

/// Queues a job; `None` when it is a fire (schedule, fire time,
/// attempt) that already has its job. A job with secrets in memory (a
/// submission's, or secret parameters) is pinned to this node, which
/// holds them; a schedule's named secrets are not: the node that runs
/// it takes them from its environment.
pub(crate) async fn insert_job<T: ScheduleWrites>(
    tx: &mut T,
    name: Option<&str>,
    spec: &JobSpec,
    run_after: Option<Timestamp>,
    now: i64,
) -> Result<Option<Job>> {
    let params = insert_job_params(tx.node(), name, spec, run_after, now)?;
    query_opt(tx, &INSERT_JOB, &params).await
}

/// The values of [`INSERT_JOB`] for [`insert_job`] by `node` (the
/// writer's node, on PostgreSQL): apart, so that a writer may send it
/// with other statements at once.
pub(crate) fn insert_job_params(
    node: Option<&str>,
    name: Option<&str>,
    spec: &JobSpec,
    run_after: Option<Timestamp>,
    now: i64,
) -> Result<[Param; 13]> {
    let spec_json = serde_json::to_string(spec)
        .map_err(|e| StoreError::Database(format!("encoding job spec: {e}")))?;
    let pinned = node.filter(|_| spec.holds_secrets_in_memory());
    let keys = JobKeys::of(spec);
    Ok([
        name.into(),
        spec_json.into(),
        now.into(),
        node.into(),
        pinned.into(),
        keys.schedule_id.into(),
        keys.fire_time.into(),
        keys.attempt.into(),
        keys.concurrency_key.into(),
        keys.max_concurrent.into(),
        run_after.map(Timestamp::micros).into(),
        keys.node_selector.into(),
        keys.folder.into(),
    ])
}

/// A row of [`due_columns!`].
impl Decode for DueRow {
    fn decode(row: &impl Row) -> Result<DueRow> {
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
}

/// Makes the jobs of the schedules due at `at` (at most [`FIRE_BATCH`]),
/// each fire once, and moves each schedule's next fire past `at`; jobs
/// are stamped `now`. → [`Outcome::Fired`]
pub(crate) async fn fire_due<T: ScheduleWrites>(
    tx: &mut T,
    at: Timestamp,
    node: &str,
    now: i64,
) -> Result<Outcome> {
    if crate::controls::holds_fires(tx, node).await? {
        return Ok(Outcome::Fired(Fired {
            held: true,
            ..Fired::default()
        }));
    }
    let params = [at.micros().into(), (FIRE_BATCH + 1).into()];
    let rows: Vec<DueRow> = tx.query(&DUE, &params).await?;
    let mut fired = Fired {
        more: rows.len() > FIRE_BATCH as usize,
        ..Fired::default()
    };
    let mut plans = Vec::new();
    let mut broken = Vec::new();
    for due in rows.into_iter().take(FIRE_BATCH as usize) {
        let id = due.id;
        match due.plan(at) {
            Ok(plan) => plans.push((id, plan)),
            // Never fail the batch (it carries other jobs' records).
            Err(why) => {
                broken.push(id);
                fired.broken.push((id, why));
            }
        }
    }
    if !broken.is_empty() {
        tx.disable(&broken).await?;
    }
    if plans.is_empty() {
        return Ok(Outcome::Fired(fired));
    }
    let skipping: Vec<ScheduleId> = plans
        .iter()
        .filter(|(_, p)| p.skip_if_active)
        .map(|(id, _)| *id)
        .collect();
    let active = if skipping.is_empty() {
        HashSet::new()
    } else {
        tx.active(&skipping).await?
    };
    let mut fires = Vec::new();
    let mut moved = Vec::new();
    for (id, plan) in &plans {
        let (making, skipped) = plan.to_make(active.contains(id));
        fires.extend(making.iter().map(|spec| (plan.name.as_str(), spec)));
        moved.push(Moved {
            id: *id,
            next: plan.next.map(Timestamp::micros),
            skipped: skipped as i64,
        });
        fired.skipped += skipped;
    }
    if !fires.is_empty() {
        let mut jobs = tx.insert_fires(&fires, now).await?;
        jobs.sort_by_key(|j| j.id);
        fired.jobs = jobs;
    }
    tx.move_fires(&moved).await?;
    Ok(Outcome::Fired(fired))
}

/// Creates a schedule (`id` `None`) or replaces one. →
/// [`Outcome::Schedule`]
pub(crate) async fn save<T: ScheduleWrites>(
    tx: &mut T,
    id: Option<ScheduleId>,
    s: &ValidSchedule,
    next_fire: Option<Timestamp>,
    now: i64,
) -> Result<Outcome> {
    let cols = SavedColumns::of(s)?;
    let columns = [
        Param::from(s.name.as_str()),
        cols.cron.into(),
        cols.timezone.into(),
        cols.spec.into(),
        cols.overlap.into(),
        cols.missed.into(),
        cols.attempts.into(),
        cols.backoff_s.into(),
        s.enabled.into(),
        next_fire.map(Timestamp::micros).into(),
        cols.after_id.into(),
        cols.after_states.into(),
    ];
    if let Some(after) = s.firing.after() {
        tx.lock_chains().await?;
        if let Some(why) = chain::refusal(tx, id, after.schedule_id).await? {
            return Ok(Outcome::Schedule(ScheduleSaved::BadTrigger(why)));
        }
    }
    let id = match id {
        None => {
            let mut params = columns.to_vec();
            params.push(now.into());
            match query_opt::<T, (i64,)>(tx, &INSERT, &params).await? {
                Some((id,)) => id,
                None => return Ok(Outcome::Schedule(ScheduleSaved::NameTaken)),
            }
        }
        Some(id) => {
            let taken = query_opt::<T, (i64,)>(tx, &BY_NAME, &[s.name.as_str().into()]).await?;
            if taken.is_some_and(|(t,)| t != id) {
                return Ok(Outcome::Schedule(ScheduleSaved::NameTaken));
            }
            let mut params = vec![id.into()];
            params.extend(columns);
            params.push(now.into());
            if tx.execute(&UPDATE, &params).await? == 0 {
                return Ok(Outcome::Schedule(ScheduleSaved::NotFound));
            }
            id
        }
    };
    Ok(Outcome::Schedule(match super::reads::get(tx, id).await? {
        Some(saved) => ScheduleSaved::Saved(Box::new(saved)),
        None => ScheduleSaved::NotFound,
    }))
}

/// Deletes a schedule (its jobs stay, still naming it), unless others
/// run after it: they would never run again. →
/// [`Outcome::ScheduleDeleted`]
pub(crate) async fn delete<T: ScheduleWrites>(tx: &mut T, id: ScheduleId) -> Result<Outcome> {
    tx.lock_chains().await?;
    let followers: Vec<(ScheduleId, String)> = tx.query(&FOLLOWED_BY, &[id.into()]).await?;
    Ok(Outcome::ScheduleDeleted(if !followers.is_empty() {
        ScheduleDeleted::Followed(followers)
    } else if tx.execute(&DELETE, &[id.into()]).await? == 0 {
        ScheduleDeleted::NotFound
    } else {
        ScheduleDeleted::Deleted
    }))
}

/// Queues the next attempt of a scheduled job that just ended at `ended_at`
/// (by the engine's clock, which claims compare with), if its retries say
/// so, in the transaction that ended it. The attempt is made then, by the
/// same clock, and waits its backoff from there. Whether it queued one.
pub(crate) async fn retry<T: ScheduleWrites>(
    tx: &mut T,
    ended: &Job,
    ended_at: Timestamp,
) -> Result<bool> {
    let Some(run) = ended.spec.schedule else {
        return Ok(false);
    };
    let Some((next, after)) = run.retry(ended.state, ended_at) else {
        return Ok(false);
    };
    let mut spec = ended.spec.clone();
    spec.schedule = Some(ScheduledRun {
        previous: Some(ended.id),
        ..next
    });
    let made = ended_at.micros();
    insert_job(tx, ended.name.as_deref(), &spec, Some(after), made).await?;
    Ok(true)
}
