//! Jobs on PostgreSQL: queueing one (pinned to this node when it carries
//! secrets), the fires of a `FireDue` for every due schedule at once with
//! arrays (`crate::schedules::writes`), and claiming the next job.
//!
//! A claim of a job with a concurrency key takes the key's advisory lock
//! with `pg_try_advisory_xact_lock` and counts the key's running jobs
//! after it: claims of one key commit one after another, and a claim
//! that finds the lock taken leaves that key's jobs for the next round
//! instead of waiting (waiting could deadlock two batches that took keys
//! in opposite orders).

use std::collections::HashSet;

use joblog_core::schedule::ScheduleId;
use joblog_core::{Job, JobSpec, Labels, Timestamp};

use super::conn::PgTx;
use super::sql::jobs_from_rows;
use crate::db::Decode;
use crate::rows::{job_columns, JOB_COLUMN_COUNT};
use crate::schedules::writes::{Moved, ScheduleWrites};
use crate::schedules::JobKeys;
use crate::Result;

/// Which of the schedules `$1` have a run queued or running.
const ACTIVE: &str = "SELECT DISTINCT schedule_id FROM jobs WHERE schedule_id = ANY($1) \
     AND state IN ('queued', 'running')";
/// The fires' jobs, in the order given (a fire that has its job already
/// makes none).
const INSERT_FIRES: &str = concat!(
    "INSERT INTO jobs (name, state, spec, created_at, created_by, schedule_id, fire_time, \
     attempt, concurrency_key, max_concurrent, node_selector, folder) \
     SELECT u.name, 'queued', u.spec, $3, $4, u.sid, u.fire, u.attempt, u.key, u.max, u.sel, \
            u.folder \
     FROM unnest($1::text[], $2::text[], $5::bigint[], $6::bigint[], $7::bigint[], \
                 $8::text[], $9::bigint[], $10::text[], $11::text[]) WITH ORDINALITY \
          AS u(name, spec, sid, fire, attempt, key, max, sel, folder, ord) \
     ORDER BY u.ord \
     ON CONFLICT (schedule_id, fire_time, attempt) DO NOTHING RETURNING ",
    job_columns!()
);
/// Each schedule's next fire and its newly skipped fires.
const MOVE: &str = "UPDATE schedules SET next_fire = u.next, \
     skipped_fires = skipped_fires + u.skipped \
     FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS u(id, next, skipped) \
     WHERE schedules.id = u.id";
const DISABLE: &str = "UPDATE schedules SET enabled = false, next_fire = NULL WHERE id = ANY($1)";

/// The oldest queued job `$2` may take at `$1`: of the jobs whose
/// selector its labels `$4` (`k=v` items) satisfy, not pinned to another
/// node, its key not among `$3` and not at its limit as committed so far,
/// and not among `$5` (found locked by another claim); nothing while the
/// node is asked to drain.
///
/// Each selector is a queue of its own in `jobs_queued_selector`: the
/// recursive part finds the distinct selectors of the queued jobs (one
/// index probe each, a loose index scan), those the node satisfies are
/// kept, and the head of each is one more probe; the oldest head wins.
/// So jobs that only other nodes may take are never walked, however many
/// wait. Not locked here: a `FOR UPDATE` in the lateral part would lock
/// every head; the row is taken with `SKIP LOCKED` by [`CLAIM_KEYLESS`]
/// (or [`CLAIM_ID`], for a job with a key).
macro_rules! claim_candidate {
    () => {
        "WITH RECURSIVE sel(s) AS ( \
         (SELECT node_selector FROM jobs WHERE state = 'queued' ORDER BY node_selector LIMIT 1) \
         UNION ALL \
         SELECT (SELECT node_selector FROM jobs WHERE state = 'queued' AND node_selector > sel.s \
                 ORDER BY node_selector LIMIT 1) \
         FROM sel WHERE sel.s IS NOT NULL) \
     SELECT c.id, c.concurrency_key, c.max_concurrent, c.ctid FROM sel, LATERAL ( \
         SELECT id, concurrency_key, max_concurrent, ctid FROM jobs q \
         WHERE state = 'queued' AND node_selector = sel.s \
            AND (pinned_node IS NULL OR pinned_node = $2) \
            AND (run_after IS NULL OR run_after <= $1) \
            AND NOT (id = ANY($5)) \
            AND (concurrency_key IS NULL OR (NOT (concurrency_key = ANY($3)) \
                AND (SELECT count(*) FROM jobs r WHERE r.state = 'running' \
                     AND r.concurrency_key = q.concurrency_key) < q.max_concurrent)) \
         ORDER BY id LIMIT 1) c \
     WHERE sel.s IS NOT NULL AND (sel.s = '' OR string_to_array(sel.s, ',') <@ $4::text[]) \
        AND NOT EXISTS (SELECT 1 FROM nodes WHERE name = $2 AND drain_at IS NOT NULL) \
     ORDER BY c.id LIMIT 1"
    };
}
/// Advisory lock key (arbitrary, fixed) of the saves and deletes that
/// change chains of triggers (`crate::schedules::chain`).
const CHAINS_LOCK: i64 = 0x6a6f_626c_6f67_0002;
/// The key's lock, held to the commit, if no other transaction holds it.
pub(super) const TRY_KEY_LOCK: &str =
    "SELECT pg_try_advisory_xact_lock(hashtextextended('joblog-key:' || $1, 0))";
pub(super) const RUNNING_WITH_KEY: &str =
    "SELECT count(*) FROM jobs WHERE state = 'running' AND concurrency_key = $1";
/// The candidate `$3`, unless another claim holds it or took it: locked
/// by its `ctid`, as in [`CLAIM_KEYLESS`], for the same reason.
pub(super) const CLAIM_ID: &str = concat!(
    "UPDATE jobs SET state = 'running', started_at = $1, node = $2 \
     WHERE ctid = (SELECT ctid FROM jobs \
                   WHERE ctid = (SELECT ctid FROM jobs WHERE id = $3) AND state = 'queued' \
                   FOR UPDATE SKIP LOCKED) \
     RETURNING ",
    job_columns!()
);
/// `claim_candidate!` and, when the candidate has no concurrency key,
/// its claim as [`CLAIM_ID`] makes it, in one statement (`$6`: running
/// since): the claimed job's columns (all `NULL` when it was not
/// claimed), then the candidate's id, key and limit. No row: no
/// candidate. Most jobs have no key, so most claims are one round trip
/// instead of two.
///
/// The candidate's row is locked and updated by its `ctid` (TID scans):
/// no plan can walk the queue there. The statement's generic plan is made
/// once, from statistics that may say the queue is empty or the table
/// tiny: a join with `c` by id, or `state = 'queued'` beside an id, was
/// planned on `jobs_queued_selector` and walked every queued job to find
/// the one (measured: 544–1,576 rows a claim in a burst of 2,000), and an
/// update by id on a table of a few pages became a sequential scan.
/// Should the row change between the candidate's read and its lock
/// (another claim took it), the lock's recheck finds a new `ctid` and
/// skips it: nothing is updated, and the claim tries the next candidate.
pub(crate) const CLAIM_KEYLESS: &str = concat!(
    "WITH c AS (",
    claim_candidate!(),
    "), u AS (UPDATE jobs SET state = 'running', started_at = $6, node = $2 \
         WHERE ctid = (SELECT j.ctid FROM jobs j \
                       WHERE j.ctid = (SELECT c.ctid FROM c WHERE c.concurrency_key IS NULL) \
                         AND j.state = 'queued' \
                       FOR UPDATE SKIP LOCKED) \
         RETURNING ",
    job_columns!(),
    ") SELECT u.*, c.id, c.concurrency_key, c.max_concurrent FROM c LEFT JOIN u ON u.id = c.id"
);

impl ScheduleWrites for PgTx<'_> {
    fn node(&self) -> Option<&str> {
        Some(self.node)
    }

    fn kept_rules(&mut self) -> Option<&mut Option<crate::notifications::EnabledRules>> {
        Some(self.rules)
    }

    fn queued_delivery(&mut self) {
        *self.queued = true;
    }

    async fn lock_chains(&mut self) -> Result<()> {
        self.tx
            .execute("SELECT pg_advisory_xact_lock($1)", &[&CHAINS_LOCK])
            .await?;
        Ok(())
    }

    /// One statement for all the fires of a `FireDue`.
    async fn insert_fires(&mut self, fires: &[(&str, &JobSpec)], now: i64) -> Result<Vec<Job>> {
        let mut new = NewJobs::default();
        for (name, spec) in fires {
            new.push(name, spec)?;
        }
        let st = self.prepared(INSERT_FIRES).await?;
        let rows = self
            .tx
            .query(
                &st,
                &[
                    &new.names,
                    &new.specs,
                    &now,
                    &self.node,
                    &new.schedules,
                    &new.fires,
                    &new.attempts,
                    &new.keys,
                    &new.maxes,
                    &new.selectors,
                    &new.folders,
                ],
            )
            .await?;
        jobs_from_rows(&rows)
    }

    async fn active(&mut self, ids: &[ScheduleId]) -> Result<HashSet<ScheduleId>> {
        let st = self.prepared(ACTIVE).await?;
        let rows = self.tx.query(&st, &[&ids]).await?;
        Ok(rows
            .iter()
            .map(|r| r.try_get(0))
            .collect::<std::result::Result<_, _>>()?)
    }

    async fn disable(&mut self, ids: &[ScheduleId]) -> Result<()> {
        let st = self.prepared(DISABLE).await?;
        self.tx.execute(&st, &[&ids]).await?;
        Ok(())
    }

    async fn move_fires(&mut self, moved: &[Moved]) -> Result<()> {
        let ids: Vec<i64> = moved.iter().map(|m| m.id).collect();
        let nexts: Vec<Option<i64>> = moved.iter().map(|m| m.next).collect();
        let skips: Vec<i64> = moved.iter().map(|m| m.skipped).collect();
        let st = self.prepared(MOVE).await?;
        self.tx.execute(&st, &[&ids, &nexts, &skips]).await?;
        Ok(())
    }
}

/// A claim of the oldest job `node`, with `labels`, may start at `at` (see
/// `claim_candidate!`), running since `now`, in two steps, so that a
/// batch may send the first statement of
/// several claims at once (pipelined, `super::writer::pipeline`): the
/// first [`CLAIM_KEYLESS`] with nothing passed or held, then, given its
/// answer, whatever else the claim needs. Claims sent together are run by
/// the server one after another, each seeing what the ones before it took.
pub(crate) struct Claiming<'a> {
    node: &'a str,
    labels: Vec<String>,
    at: i64,
    now: i64,
}

impl<'a> Claiming<'a> {
    pub(crate) fn new(node: &'a str, labels: &Labels, at: Timestamp, now: i64) -> Self {
        Claiming {
            node,
            labels: labels.items(),
            at: at.micros(),
            now,
        }
    }

    /// The first [`CLAIM_KEYLESS`] (prepared as `st`).
    pub(crate) async fn first(
        &self,
        tx: &tokio_postgres::Client,
        st: &tokio_postgres::Statement,
    ) -> Result<Option<tokio_postgres::Row>> {
        self.keyless(tx, st, &[], &[]).await
    }

    async fn keyless(
        &self,
        tx: &tokio_postgres::Client,
        st: &tokio_postgres::Statement,
        passed: &[String],
        held: &[i64],
    ) -> Result<Option<tokio_postgres::Row>> {
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 6] = [
            &self.at,
            &self.node,
            &passed,
            &self.labels,
            &held,
            &self.now,
        ];
        Ok(tx.query_opt(st, &params).await?)
    }

    /// The claim, given the first statement's answer `row`.
    pub(crate) async fn then(
        &self,
        tx: &mut PgTx<'_>,
        mut row: Option<tokio_postgres::Row>,
    ) -> Result<Option<Job>> {
        let (node, now) = (self.node, self.now);
        // Keys whose lock another claim holds, or found at their limit once
        // locked, and jobs another claim holds: left for the next round.
        let mut passed: Vec<String> = Vec::new();
        let mut held: Vec<i64> = Vec::new();
        loop {
            let Some(found) = row.take() else {
                return Ok(None);
            };
            if found.try_get::<_, Option<i64>>(0)?.is_some() {
                return Ok(Some(Job::decode(&found)?));
            }
            let id: i64 = found.try_get(JOB_COLUMN_COUNT)?;
            if let Some(key) = found.try_get::<_, Option<String>>(JOB_COLUMN_COUNT + 1)? {
                let max: Option<i64> = found.try_get(JOB_COLUMN_COUNT + 2)?;
                let lock = tx.prepared(TRY_KEY_LOCK).await?;
                let locked: bool = tx.tx.query_one(&lock, &[&key]).await?.try_get(0)?;
                let fits = locked && {
                    let count = tx.prepared(RUNNING_WITH_KEY).await?;
                    let running: i64 = tx.tx.query_one(&count, &[&key]).await?.try_get(0)?;
                    running < max.unwrap_or(1)
                };
                if !fits {
                    passed.push(key);
                } else {
                    let st = tx.prepared(CLAIM_ID).await?;
                    let rows = tx.tx.query(&st, &[&now, &node, &id]).await?;
                    match jobs_from_rows(&rows)?.pop() {
                        Some(job) => return Ok(Some(job)),
                        None => held.push(id),
                    }
                }
            } else {
                // Keyless, and not claimed: another claim holds it.
                held.push(id);
            }
            let st = tx.prepared(CLAIM_KEYLESS).await?;
            row = self.keyless(tx.tx, &st, &passed, &held).await?;
        }
    }
}

/// The columns of the jobs one `FireDue` makes, as arrays for `unnest`.
#[derive(Default)]
struct NewJobs {
    names: Vec<String>,
    specs: Vec<String>,
    schedules: Vec<Option<i64>>,
    fires: Vec<Option<i64>>,
    attempts: Vec<Option<i64>>,
    keys: Vec<Option<String>>,
    maxes: Vec<Option<i64>>,
    selectors: Vec<String>,
    folders: Vec<Option<String>>,
}

impl NewJobs {
    fn push(&mut self, name: &str, spec: &JobSpec) -> Result<()> {
        let keys = JobKeys::of(spec);
        self.names.push(name.to_owned());
        self.specs.push(
            serde_json::to_string(spec)
                .map_err(|e| crate::StoreError::Database(format!("encoding job spec: {e}")))?,
        );
        self.schedules.push(keys.schedule_id);
        self.fires.push(keys.fire_time);
        self.attempts.push(keys.attempt);
        self.keys.push(keys.concurrency_key);
        self.maxes.push(keys.max_concurrent);
        self.selectors.push(keys.node_selector);
        self.folders.push(keys.folder);
        Ok(())
    }
}
