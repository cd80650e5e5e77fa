//! The writer's ops that both stores apply with the same statements,
//! written once: ending and cancelling jobs, deleting a job and its log a
//! chunk at a time (a job's end queues its notifications), sealing
//! slices, API tokens and audit retention. Each
//! runs inside the writer's transaction of its batch. What really differs
//! stays in each store's writer: appending records (SQLite inserts rows;
//! PostgreSQL sends one binary COPY), claims (`SKIP LOCKED`), nodes'
//! heartbeats and the interruption of their jobs.

use joblog_core::{JobId, LogSummary, NewToken, Timestamp};

use crate::db::{query_opt, sql, Conn, Param, Statement};
use crate::notifications;
use crate::rows::{job_columns, streams_to_text};
use crate::schedules::triggers;
use crate::schedules::writes::{retry, ScheduleWrites};
use crate::sealed::SealSlice;
use crate::{Outcome, Result, StoreError, WriteOp};

/// A job that ended with no records is sealed as it ends: there is nothing
/// for the sealer to move, and one update of the row less (on PostgreSQL
/// each update of a job writes every index of it again).
pub(crate) const FINISH: Statement = sql!(concat!(
    "UPDATE jobs SET state = $2, exit_code = $3, finished_at = $4, \
     result_bytes = $5, log_records = $6, log_bytes = $7, log_truncated = $8, log_streams = $9, \
     sealed_at = CASE WHEN $6 = CAST(0 AS BIGINT) THEN $4 ELSE sealed_at END \
     WHERE id = $1 AND state IN ('queued', 'running') RETURNING ",
    job_columns!()
));
const SAVE_RESULT: Statement = sql!(
    "INSERT INTO results (job_id, body) VALUES ($1, $2) \
     ON CONFLICT (job_id) DO UPDATE SET body = EXCLUDED.body"
);
const CANCEL_QUEUED: Statement = sql!(concat!(
    "UPDATE jobs SET state = 'cancelled', finished_at = $2 \
     WHERE id = $1 AND state = 'queued' RETURNING ",
    job_columns!()
));
const DELETE_RESULT: Statement = sql!("DELETE FROM results WHERE job_id = $1");
const DELETE_JOB: Statement =
    sql!("DELETE FROM jobs WHERE id = $1 AND state NOT IN ('queued', 'running')");
/// The job's rows up to the one `$2` rows after its first.
const DELETE_LOG_CHUNK: Statement = sql!(
    "DELETE FROM log WHERE job_id = $1 AND seq <= COALESCE(
        (SELECT seq FROM log WHERE job_id = $1 ORDER BY seq LIMIT 1 OFFSET $2),
        9223372036854775807)"
);
const SEGMENT_SPANS: Statement =
    sql!("SELECT first_seq, last_seq FROM segments WHERE job_id = $1 ORDER BY last_seq");
const DELETE_SEGMENTS: Statement =
    sql!("DELETE FROM segments WHERE job_id = $1 AND last_seq <= $2");
pub(crate) const SEAL_DELETE: Statement =
    sql!("DELETE FROM log WHERE job_id = $1 AND seq >= $2 AND seq <= $3");
const SEAL_INSERT: Statement = sql!(
    "INSERT INTO segments (job_id, last_seq, first_seq, streams, data, grams) \
     VALUES ($1, $2, $3, $4, $5, $6)"
);
const MARK_SEALED: Statement = sql!(
    "UPDATE jobs SET sealed_at = $2 WHERE id = $1 \
     AND sealed_at IS NULL AND finished_at IS NOT NULL \
     AND NOT EXISTS (SELECT 1 FROM log WHERE job_id = $1)"
);
const CREATE_TOKEN: Statement = sql!(
    "INSERT INTO tokens (name, hash, role, created_at, expires_at, folders) \
     VALUES ($1, $2, $3, $4, $5, $6) \
     ON CONFLICT (name) DO NOTHING"
);
const REVOKE_TOKEN: Statement = sql!("DELETE FROM tokens WHERE name = $1");
const TOUCH_TOKEN: Statement = sql!("UPDATE tokens SET last_used_at = $2 WHERE name = $1");
/// Audit retention: the old ones among the `$2` first entries, walked by
/// the primary key (no scan of the trail).
const DELETE_OLD_AUDIT: Statement = sql!(
    "DELETE FROM audit WHERE id IN \
     (SELECT id FROM (SELECT id, at FROM audit ORDER BY id LIMIT $2) AS head WHERE at < $1)"
);

/// Notes a job's counters, saved once per job at the end of a batch
/// (the last noted wins: they only grow).
pub(crate) fn note_summary(summaries: &mut Vec<(JobId, LogSummary)>, job: JobId, s: LogSummary) {
    match summaries.iter_mut().find(|(j, _)| *j == job) {
        Some(slot) => slot.1 = s,
        None => summaries.push((job, s)),
    }
}

/// [`WriteOp::Finish`]: ends a job stamped `now` (once: a job already
/// ended is left as it is), stores its result, and queues its schedule's
/// next attempt if its retries say so, or else the runs it triggers. Its
/// counters are written with its end, or, when it had ended already,
/// noted in `summaries`. → [`Outcome::MaybeJob`]
pub(crate) async fn finish<T: ScheduleWrites>(
    tx: &mut T,
    op: &WriteOp,
    summaries: &mut Vec<(JobId, LogSummary)>,
    now: i64,
) -> Result<Outcome> {
    let finishing = Finishing::of(op)?;
    let done = query_opt(tx, &FINISH, &finishing.params(now)).await?;
    finishing.ended(tx, done, summaries, now).await
}

/// A [`WriteOp::Finish`] in two steps, so that a writer may send the first
/// statement ([`FINISH`] with [`Finishing::params`]) of several at once
/// (PostgreSQL pipelines them) and go on with each answer
/// ([`Finishing::ended`]).
pub(crate) struct Finishing<'a> {
    job: JobId,
    state: joblog_core::JobState,
    exit_code: Option<i32>,
    result: Option<&'a joblog_core::ResultBlob>,
    summary: &'a LogSummary,
    at: Timestamp,
}

impl<'a> Finishing<'a> {
    pub(crate) fn of(op: &'a WriteOp) -> Result<Self> {
        match op {
            WriteOp::Finish {
                job,
                state,
                exit_code,
                result,
                summary,
                at,
            } => Ok(Finishing {
                job: *job,
                state: *state,
                exit_code: *exit_code,
                result: result.as_ref(),
                summary,
                at: *at,
            }),
            _ => Err(StoreError::Database(format!(
                "a {} op applied as a finish",
                op.name()
            ))),
        }
    }

    /// The values of [`FINISH`] for an end stamped `now`.
    pub(crate) fn params(&self, now: i64) -> [Param; 9] {
        let summary = self.summary;
        [
            self.job.into(),
            self.state.name().into(),
            self.exit_code.map(i64::from).into(),
            now.into(),
            self.result.map(|b| b.raw_len() as i64).into(),
            (summary.records as i64).into(),
            (summary.bytes as i64).into(),
            summary.truncated.into(),
            streams_to_text(&summary.streams).into(),
        ]
    }

    /// The rest of the end, given what [`FINISH`] answered: the job as it
    /// ended, or `None` when it had ended already (on PostgreSQL,
    /// elsewhere: its node was declared lapsed).
    pub(crate) async fn ended<T: ScheduleWrites>(
        &self,
        tx: &mut T,
        done: Option<joblog_core::Job>,
        summaries: &mut Vec<(JobId, LogSummary)>,
        now: i64,
    ) -> Result<Outcome> {
        let job = self.job;
        let Some(done) = done else {
            // Its records were stored all the same: their counters with them.
            note_summary(summaries, job, *self.summary);
            return Ok(Outcome::MaybeJob(None));
        };
        // The end wrote the final counters; the batch's earlier ones for the
        // job need not be written again.
        summaries.retain(|(j, _)| *j != job);
        if let Some(body) = self.result {
            let params = [job.into(), body.as_bytes().to_vec().into()];
            tx.execute(&SAVE_RESULT, &params).await?;
        }
        // A retried job triggers once, at its last attempt's end.
        if !retry(tx, &done, self.at).await? {
            let result = self.result.map(|b| b.as_bytes());
            triggers::on_end(tx, &done, result, now).await?;
        }
        notifications::on_end(tx, &done, now).await?;
        Ok(Outcome::MaybeJob(Some(done)))
    }
}

/// → [`Outcome::MaybeJob`]: the job, if it was still queued.
pub(crate) async fn cancel_queued<T: ScheduleWrites>(
    tx: &mut T,
    job: JobId,
    now: i64,
) -> Result<Outcome> {
    let params = [job.into(), now.into()];
    let cancelled: Option<joblog_core::Job> = query_opt(tx, &CANCEL_QUEUED, &params).await?;
    if let Some(job) = &cancelled {
        triggers::on_end(tx, job, None, now).await?;
        notifications::on_end(tx, job, now).await?;
    }
    Ok(Outcome::MaybeJob(cancelled))
}

/// Deletes a finished job and its result. → [`Outcome::Count`]
pub(crate) async fn delete_job<C: Conn>(tx: &mut C, job: JobId) -> Result<Outcome> {
    tx.execute(&DELETE_RESULT, &[job.into()]).await?;
    tx.execute(&notifications::DELETE_JOB_DELIVERIES, &[job.into()])
        .await?;
    Ok(Outcome::Count(
        tx.execute(&DELETE_JOB, &[job.into()]).await?,
    ))
}

/// Deletes the job's records, lowest seq first: whole segments until they
/// hold `max` records, then rows up to `max` in all. → [`Outcome::Count`]
pub(crate) async fn delete_log_chunk<C: Conn>(tx: &mut C, job: JobId, max: u32) -> Result<Outcome> {
    // `max - 1` is the OFFSET below: 0 would still delete one record.
    if max == 0 {
        return Ok(Outcome::Count(0));
    }
    let sealed = delete_segments(tx, job, u64::from(max)).await?;
    if sealed >= u64::from(max) {
        return Ok(Outcome::Count(sealed));
    }
    let offset = i64::from(max) - sealed as i64 - 1;
    let rows = tx
        .execute(&DELETE_LOG_CHUNK, &[job.into(), offset.into()])
        .await?;
    Ok(Outcome::Count(sealed + rows))
}

/// Deletes whole segments from the start of the job's log until they hold
/// `max` records or none remain; returns the records they held.
async fn delete_segments<C: Conn>(tx: &mut C, job: JobId, max: u64) -> Result<u64> {
    let mut upto = None;
    let mut records = 0u64;
    tx.each(
        &SEGMENT_SPANS,
        &[job.into()],
        |(first, last): (i64, i64)| {
            if records >= max {
                return Ok(false);
            }
            records += (last - first + 1) as u64;
            upto = Some(last);
            Ok(true)
        },
    )
    .await?;
    if let Some(upto) = upto {
        tx.execute(&DELETE_SEGMENTS, &[job.into(), upto.into()])
            .await?;
    }
    Ok(records)
}

/// The writer's seal of one slice: its rows go and its segment comes,
/// under a savepoint, so a slice whose rows are not all there (sealed or
/// deleted meanwhile) changes nothing. → [`Outcome::Count`] 1 or 0
pub(crate) async fn seal_slice<C: Conn>(tx: &mut C, slice: &SealSlice) -> Result<Outcome> {
    let key = &slice.key;
    let (first, last) = (key.first_seq as i64, key.last_seq as i64);
    tx.batch("SAVEPOINT seal").await?;
    let deleted = tx
        .execute(&SEAL_DELETE, &[slice.job.into(), first.into(), last.into()])
        .await?;
    if deleted != slice.records() {
        tx.batch("ROLLBACK TO SAVEPOINT seal; RELEASE SAVEPOINT seal")
            .await?;
        return Ok(Outcome::Count(0));
    }
    let params = [
        slice.job.into(),
        last.into(),
        first.into(),
        key.streams.into(),
        slice.data.clone().into(),
        slice.grams.clone().into(),
    ];
    tx.execute(&SEAL_INSERT, &params).await?;
    tx.batch("RELEASE SAVEPOINT seal").await?;
    Ok(Outcome::Count(1))
}

/// Marks the job's log sealed once it is finished and no rows remain. →
/// [`Outcome::Count`]
pub(crate) async fn mark_sealed<C: Conn>(tx: &mut C, job: JobId, now: i64) -> Result<Outcome> {
    let n = tx.execute(&MARK_SEALED, &[job.into(), now.into()]).await?;
    Ok(Outcome::Count(n))
}

/// → `Count(1)`, or `Count(0)` when the name is taken.
pub(crate) async fn create_token<C: Conn>(tx: &mut C, t: &NewToken) -> Result<Outcome> {
    let params = [
        t.name.as_str().into(),
        t.hash.to_vec().into(),
        t.role.name().into(),
        t.created_at.micros().into(),
        t.expires_at.map(Timestamp::micros).into(),
        crate::rows::folders_text(t.folders.as_ref()).into(),
    ];
    Ok(Outcome::Count(tx.execute(&CREATE_TOKEN, &params).await?))
}

pub(crate) async fn revoke_token<C: Conn>(tx: &mut C, name: &str) -> Result<Outcome> {
    Ok(Outcome::Count(
        tx.execute(&REVOKE_TOKEN, &[name.into()]).await?,
    ))
}

pub(crate) async fn touch_token<C: Conn>(tx: &mut C, name: &str, at: Timestamp) -> Result<Outcome> {
    tx.execute(&TOUCH_TOKEN, &[name.into(), at.micros().into()])
        .await?;
    Ok(Outcome::Done)
}

/// Audit retention. → [`Outcome::Count`]: how many went.
pub(crate) async fn delete_audit<C: Conn>(
    tx: &mut C,
    before: Timestamp,
    max: u32,
) -> Result<Outcome> {
    let params = [before.micros().into(), max.into()];
    Ok(Outcome::Count(
        tx.execute(&DELETE_OLD_AUDIT, &params).await?,
    ))
}
