//! The typed calls the engine and the API make of the writer: one method per
//! kind of write, each returning its own outcome.
//!
//! The writer speaks in [`WriteOp`] and [`Outcome`] because it commits ops
//! of every kind together; callers should not have to match outcomes. Each
//! call here says which outcome its op produces, and any other is an error
//! ([`PipelineError::Mismatch`]), never a silent default.

use std::time::Duration;

use joblog_core::schedule::{ScheduleId, ValidSchedule};
use joblog_core::{
    Job, JobId, JobSpec, JobState, Labels, LogSummary, NewAudit, NewToken, ResultBlob, Timestamp,
};
use joblog_store::sealed::SealSlice;
use joblog_store::{AccountOp, Fired, Outcome, ScheduleDeleted, ScheduleSaved, WriteOp};

use crate::{Pipeline, PipelineError};

/// What dropping whole log partitions deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Jobs deleted with their partitions (their rows and results too).
    pub jobs: Vec<JobId>,
    /// Log records that went with them.
    pub records: u64,
}

/// How a job ends, for [`Pipeline::finish`].
#[derive(Debug)]
pub struct Finish {
    pub state: JobState,
    pub exit_code: Option<i32>,
    pub result: Option<ResultBlob>,
    pub summary: LogSummary,
    /// When it ended by the engine's clock (a retry's backoff counts from
    /// it).
    pub at: Timestamp,
}

impl Pipeline {
    /// Queues a job and returns it with its id.
    pub async fn insert_job(
        &self,
        name: Option<String>,
        spec: JobSpec,
    ) -> Result<Job, PipelineError> {
        match self
            .execute(WriteOp::InsertJob {
                name,
                spec: Box::new(spec),
            })
            .await?
        {
            Outcome::Job(job) => Ok(job),
            other => Err(mismatch("insert_job", other)),
        }
    }

    /// Takes the oldest queued job for `node`, whose selector its `labels`
    /// satisfy; `None` when none is queued.
    pub async fn claim_next(
        &self,
        node: String,
        labels: Labels,
        at: Timestamp,
    ) -> Result<Option<Job>, PipelineError> {
        match self
            .execute(WriteOp::ClaimNext { node, labels, at })
            .await?
        {
            Outcome::Claimed(job) => Ok(job),
            other => Err(mismatch("claim_next", other)),
        }
    }

    /// Makes the jobs of the schedules due at `now`, each fire once;
    /// none while the scheduler is paused or `node` asked to drain.
    pub async fn fire_due(&self, now: Timestamp, node: String) -> Result<Fired, PipelineError> {
        match self.execute(WriteOp::FireDue { now, node }).await? {
            Outcome::Fired(fired) => Ok(fired),
            other => Err(mismatch("fire_due", other)),
        }
    }

    /// Creates (`id` `None`) or replaces a schedule.
    pub async fn save_schedule(
        &self,
        id: Option<ScheduleId>,
        schedule: ValidSchedule,
        next_fire: Option<Timestamp>,
    ) -> Result<ScheduleSaved, PipelineError> {
        let op = WriteOp::SaveSchedule {
            id,
            schedule: Box::new(schedule),
            next_fire,
        };
        match self.execute(op).await? {
            Outcome::Schedule(saved) => Ok(saved),
            other => Err(mismatch("save_schedule", other)),
        }
    }

    /// Deletes a schedule, unless others run after it.
    pub async fn delete_schedule(&self, id: ScheduleId) -> Result<ScheduleDeleted, PipelineError> {
        match self.execute(WriteOp::DeleteSchedule { id }).await? {
            Outcome::ScheduleDeleted(deleted) => Ok(deleted),
            other => Err(mismatch("delete_schedule", other)),
        }
    }

    /// Ends a job after every record handed over before; `None` when it had
    /// already been ended (e.g. by another node that took this one for
    /// lapsed).
    pub async fn finish(&self, job: JobId, ending: Finish) -> Result<Option<Job>, PipelineError> {
        let Finish {
            state,
            exit_code,
            result,
            summary,
            at,
        } = ending;
        let op = WriteOp::Finish {
            job,
            state,
            exit_code,
            result,
            summary,
            at,
        };
        match self.execute(op).await? {
            Outcome::MaybeJob(job) => Ok(job),
            other => Err(mismatch("finish", other)),
        }
    }

    /// Cancels the job if it is still queued; `None` when it was not.
    pub async fn cancel_queued(&self, job: JobId) -> Result<Option<Job>, PipelineError> {
        match self.execute(WriteOp::CancelQueued { job }).await? {
            Outcome::MaybeJob(job) => Ok(job),
            other => Err(mismatch("cancel_queued", other)),
        }
    }

    /// Marks `running` jobs of `node` (every node's with `None`)
    /// interrupted, and queued ones too with `include_queued`, each with a
    /// last record saying why; returns them with the node each had.
    pub async fn interrupt(
        &self,
        node: Option<String>,
        include_queued: bool,
    ) -> Result<Vec<(JobId, Option<String>)>, PipelineError> {
        let op = WriteOp::Interrupt {
            node,
            include_queued,
        };
        interrupted("interrupt", self.execute(op).await?)
    }

    /// Deletes up to `max` of the job's records, lowest seq first; returns
    /// how many went.
    pub async fn delete_log_chunk(&self, job: JobId, max: u32) -> Result<u64, PipelineError> {
        let outcome = self.execute(WriteOp::DeleteLogChunk { job, max }).await?;
        count("delete_log_chunk", outcome)
    }

    /// Deletes audit entries from before `before`, at most `max` of the
    /// oldest; returns how many went.
    pub async fn delete_audit(&self, before: Timestamp, max: u32) -> Result<u64, PipelineError> {
        let outcome = self.execute(WriteOp::DeleteAudit { before, max }).await?;
        count("delete_audit", outcome)
    }

    /// Seals one slice of a finished job's log: true when it replaced its
    /// rows, false when they were not all there (sealed or deleted
    /// meanwhile), and nothing changed.
    pub async fn seal_slice(&self, slice: SealSlice) -> Result<bool, PipelineError> {
        let outcome = self.execute(WriteOp::SealSlice(Box::new(slice))).await?;
        Ok(count("seal_slice", outcome)? == 1)
    }

    /// Marks a finished job's log sealed once no rows of it remain: false
    /// when rows remain or it was already.
    pub async fn mark_sealed(&self, job: JobId) -> Result<bool, PipelineError> {
        let outcome = self.execute(WriteOp::MarkSealed { job }).await?;
        Ok(count("mark_sealed", outcome)? > 0)
    }

    /// Deletes a job whose log is gone; returns 1, or 0 if it was not there.
    pub async fn delete_job(&self, job: JobId) -> Result<u64, PipelineError> {
        count(
            "delete_job",
            self.execute(WriteOp::DeleteJob { job }).await?,
        )
    }

    /// Drops every log partition all of whose jobs are `candidates` (a store
    /// without partitions drops nothing).
    pub async fn drop_log_partitions(
        &self,
        candidates: Vec<JobId>,
    ) -> Result<Dropped, PipelineError> {
        match self
            .execute(WriteOp::DropLogPartitions { candidates })
            .await?
        {
            Outcome::Groomed { jobs, records } => Ok(Dropped { jobs, records }),
            other => Err(mismatch("drop_log_partitions", other)),
        }
    }

    /// Records that `node` is alive and, with `lapse`, interrupts the
    /// running jobs of nodes silent for longer; returns those jobs with
    /// the node each had.
    pub async fn heartbeat(
        &self,
        node: String,
        lapse: Option<Duration>,
    ) -> Result<Vec<(JobId, Option<String>)>, PipelineError> {
        interrupted(
            "heartbeat",
            self.execute(WriteOp::Heartbeat { node, lapse }).await?,
        )
    }

    /// Records that `node` started, running joblog `version` and holding
    /// the secrets named `secret_names`, with `labels`; `paused`: started
    /// paused (see [`WriteOp::RegisterNode`]).
    pub async fn register_node(
        &self,
        node: String,
        version: String,
        secret_names: Vec<String>,
        labels: Labels,
        paused: bool,
    ) -> Result<(), PipelineError> {
        match self
            .execute(WriteOp::RegisterNode {
                node,
                version,
                secret_names,
                labels,
                paused,
            })
            .await?
        {
            Outcome::Done => Ok(()),
            other => Err(mismatch("register_node", other)),
        }
    }

    /// Asks `node` to drain, or to take jobs again: false when no node
    /// has that name.
    pub async fn set_drain(&self, node: String, drain: bool) -> Result<bool, PipelineError> {
        match self.execute(WriteOp::SetDrain { node, drain }).await? {
            Outcome::Count(n) => Ok(n > 0),
            other => Err(mismatch("set_drain", other)),
        }
    }

    /// Pauses every node's scheduler, `by` whom, or resumes it (`None`).
    pub async fn set_paused(&self, by: Option<String>) -> Result<(), PipelineError> {
        match self.execute(WriteOp::SetPaused { by }).await? {
            Outcome::Done => Ok(()),
            other => Err(mismatch("set_paused", other)),
        }
    }

    /// Records that `node` stopped gracefully.
    pub async fn node_stopped(&self, node: String) -> Result<(), PipelineError> {
        match self.execute(WriteOp::NodeStopped { node }).await? {
            Outcome::Done => Ok(()),
            other => Err(mismatch("node_stopped", other)),
        }
    }

    /// Asks the node running `job` to stop it.
    pub async fn request_cancel(&self, job: JobId) -> Result<(), PipelineError> {
        match self.execute(WriteOp::RequestCancel { job }).await? {
            Outcome::Done => Ok(()),
            other => Err(mismatch("request_cancel", other)),
        }
    }

    /// Stores an API token (its hash); `false` when the name is taken.
    pub async fn create_token(&self, token: NewToken) -> Result<bool, PipelineError> {
        let n = count(
            "create_token",
            self.execute(WriteOp::CreateToken(token)).await?,
        )?;
        Ok(n > 0)
    }

    /// Deletes the API token of that name; `false` when there was none.
    pub async fn revoke_token(&self, name: String) -> Result<bool, PipelineError> {
        let n = count(
            "revoke_token",
            self.execute(WriteOp::RevokeToken { name }).await?,
        )?;
        Ok(n > 0)
    }

    /// Changes users or sessions; the rows it changed (0: no such user or
    /// session, or the name is taken).
    pub async fn account(&self, op: AccountOp) -> Result<u64, PipelineError> {
        let name = op.name();
        count(name, self.execute(WriteOp::Account(op)).await?)
    }

    /// Appends entries to the audit trail, committed with whatever else is
    /// waiting (group commit); returns once they are durable. Nothing to
    /// append is not a write.
    pub async fn append_audit(&self, entries: Vec<NewAudit>) -> Result<(), PipelineError> {
        if entries.is_empty() {
            return Ok(());
        }
        match self.execute(WriteOp::Audit(entries)).await? {
            Outcome::Done => Ok(()),
            other => Err(mismatch("append_audit", other)),
        }
    }

    /// Notes that the token was used at `at`.
    pub async fn touch_token(&self, name: String, at: Timestamp) -> Result<(), PipelineError> {
        match self.execute(WriteOp::TouchToken { name, at }).await? {
            Outcome::Done => Ok(()),
            other => Err(mismatch("touch_token", other)),
        }
    }
}

fn count(op: &'static str, outcome: Outcome) -> Result<u64, PipelineError> {
    match outcome {
        Outcome::Count(n) => Ok(n),
        other => Err(mismatch(op, other)),
    }
}

fn interrupted(
    op: &'static str,
    outcome: Outcome,
) -> Result<Vec<(JobId, Option<String>)>, PipelineError> {
    match outcome {
        Outcome::Interrupted(jobs) => Ok(jobs),
        other => Err(mismatch(op, other)),
    }
}

pub(crate) fn mismatch(op: &'static str, outcome: Outcome) -> PipelineError {
    PipelineError::Mismatch {
        op,
        outcome: format!("{outcome:?}"),
    }
}

#[cfg(test)]
mod tests {
    use joblog_store::{StoreWriter, WriteOp};
    use prometheus_client::registry::Registry;

    use super::*;

    /// A store that answers every op with the same outcome, right or not.
    struct Answers(Outcome);

    impl StoreWriter for Answers {
        fn apply(&mut self, ops: &[WriteOp]) -> joblog_store::Result<Vec<Outcome>> {
            Ok(ops.iter().map(|_| self.0.clone()).collect())
        }
    }

    fn pipeline(answer: Outcome) -> Pipeline {
        let (pipeline, _writer) = Pipeline::start(
            Box::new(Answers(answer)),
            crate::PipelineConfig::default(),
            &mut Registry::default(),
        );
        pipeline
    }

    #[tokio::test]
    async fn a_mismatched_outcome_is_an_error_naming_the_op() {
        let p = pipeline(Outcome::Done);
        let e = p.delete_log_chunk(1, 10).await.unwrap_err();
        assert!(
            matches!(
                e,
                PipelineError::Mismatch {
                    op: "delete_log_chunk",
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "the store answered delete_log_chunk with Done"
        );
        let e = p
            .claim_next("n".into(), Labels::default(), Timestamp::now())
            .await
            .unwrap_err();
        assert!(matches!(
            e,
            PipelineError::Mismatch {
                op: "claim_next",
                ..
            }
        ));
        let p = pipeline(Outcome::Count(3));
        assert!(p.request_cancel(1).await.is_err());
        let e = p.append_audit(vec![audit("token.used")]).await.unwrap_err();
        assert!(
            matches!(
                e,
                PipelineError::Mismatch {
                    op: "append_audit",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(p.insert_job(None, JobSpec::default()).await.is_err());
    }

    fn audit(action: &str) -> NewAudit {
        NewAudit {
            at: Timestamp(1),
            actor: "alice".into(),
            action: action.into(),
            job_id: Some(3),
            remote: None,
            request_id: None,
            node: "n".into(),
            detail: serde_json::Map::new(),
        }
    }

    /// A store that records the ops it is handed.
    struct Records(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    impl StoreWriter for Records {
        fn apply(&mut self, ops: &[WriteOp]) -> joblog_store::Result<Vec<Outcome>> {
            let mut seen = self.0.lock().unwrap();
            for op in ops {
                match op {
                    WriteOp::Audit(entries) if entries.is_empty() => seen.push("(none)".into()),
                    WriteOp::Audit(entries) => {
                        seen.extend(entries.iter().map(|e| e.action.clone()))
                    }
                    other => seen.push(format!("{other:?}")),
                }
            }
            Ok(ops.iter().map(|_| Outcome::Done).collect())
        }
    }

    #[tokio::test]
    async fn audit_entries_reach_the_store_in_order_and_none_is_no_write() {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (p, writer) = Pipeline::start(
            Box::new(Records(seen.clone())),
            crate::PipelineConfig::default(),
            &mut Registry::default(),
        );
        p.append_audit(vec![audit("job.submitted"), audit("job.cancelled")])
            .await
            .unwrap();
        p.append_audit(Vec::new()).await.unwrap();
        p.append_audit(vec![audit("token.used")]).await.unwrap();
        p.close();
        tokio::task::spawn_blocking(move || writer.join())
            .await
            .unwrap();
        assert_eq!(
            *seen.lock().unwrap(),
            ["job.submitted", "job.cancelled", "token.used"]
        );
    }

    #[tokio::test]
    async fn each_call_returns_its_own_outcome() {
        let ended = vec![(7, Some("gone".to_string()))];
        assert_eq!(
            pipeline(Outcome::Interrupted(ended.clone()))
                .heartbeat("n".into(), None)
                .await
                .unwrap(),
            ended
        );
        assert!(pipeline(Outcome::Count(3))
            .heartbeat("n".into(), None)
            .await
            .is_err());
        assert_eq!(
            pipeline(Outcome::Claimed(None))
                .claim_next("n".into(), Labels::default(), Timestamp::now())
                .await
                .unwrap(),
            None
        );
        let dropped = pipeline(Outcome::Groomed {
            jobs: vec![4, 5],
            records: 9,
        })
        .drop_log_partitions(vec![4, 5, 6])
        .await
        .unwrap();
        assert_eq!(
            dropped,
            Dropped {
                jobs: vec![4, 5],
                records: 9
            }
        );
    }
}
