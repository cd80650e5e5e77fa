//! One powered run of `bench faults`: jobs queued, claimed, writing
//! their logs, ended, sealed and deleted by retention through the real
//! pipeline and the real SQLite writer, until the power goes; and the
//! [`Ledger`] of what the pipeline acknowledged meanwhile.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use joblog_core::{JobId, JobSpec, JobState, Labels, LogSummary, Record, Stream, Timestamp};
use joblog_pipeline::{Finish, Pipeline, PipelineConfig, PipelineError, WriterThread};
use joblog_store::{Outcome, Store, StoreError, StoreWriter, WriteOp};

use super::vfs::PowerCut;

/// The node the runs claim jobs for.
pub const NODE: &str = "faults";
/// Jobs claimed by each producer in a run.
const JOBS_PER_PRODUCER: usize = 6;
const PRODUCERS: usize = 4;
/// Appends per job, and records per append.
const APPENDS: u64 = 8;
const PER_APPEND: u64 = 25;
/// Records retention deletes per commit (a job's log goes in several).
const RETENTION_CHUNK: u32 = 60;

/// What the pipeline acknowledged in a run.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Every commit, in commit order, as the pipeline announced it.
    pub commits: Vec<Commit>,
    /// Jobs whose queueing was acknowledged.
    pub inserted: Vec<JobId>,
    /// Jobs whose deletion by retention was asked (acknowledged or not):
    /// their logs may be anything from whole to gone, lowest seqs first.
    pub retention: HashSet<JobId>,
    /// Jobs whose deletion was acknowledged.
    pub deleted: Vec<JobId>,
    /// Segments whose sealing was acknowledged.
    pub sealed: u64,
    /// What each producer was doing when its ops began to fail (the power
    /// went): "sealing", "retention", …
    pub cut_during: Vec<&'static str>,
    /// Commits the ledger missed (its receiver fell behind).
    pub lagged: u64,
}

/// One acknowledged commit, with what the checks can see of it.
#[derive(Debug, Default, Clone)]
pub struct Commit {
    /// The power cut's event count when the ledger heard of it: at or
    /// after the commit's own events.
    pub at_event: u64,
    pub appended: Vec<(JobId, u64)>,
    pub finished: Vec<JobId>,
    pub started: Vec<JobId>,
}

/// The text of record `seq` of `job`: the checks know what each line
/// must read.
pub fn message(job: JobId, seq: u64) -> String {
    format!("job {job} line {seq}: the quick brown fox jumps over the lazy dog")
}

/// A job of `true`: what it runs does not matter, only what it logs.
pub fn true_job() -> JobSpec {
    JobSpec {
        command: vec!["true".into()],
        ..JobSpec::default()
    }
}

/// Records `first..first + n` of `job`, as [`message`] writes them,
/// counted into `summary`.
pub fn records(job: JobId, first: u64, n: u64, summary: &mut LogSummary) -> Vec<Record> {
    (first..first + n)
        .map(|seq| {
            let r = Record {
                seq,
                ts: Timestamp::now(),
                stream: Stream::Output,
                message: message(job, seq),
                fields: None,
            };
            summary.records += 1;
            summary.bytes += r.message.len() as u64;
            summary.streams.add(r.stream, 1);
            r
        })
        .collect()
}

/// How every job of the harness ends.
pub fn succeeded(summary: LogSummary) -> Finish {
    Finish {
        state: JobState::Succeeded,
        exit_code: Some(0),
        result: None,
        summary,
        at: Timestamp::now(),
    }
}

/// The real pipeline on `writer` (its metrics registered nowhere).
pub fn start(writer: Box<dyn StoreWriter>) -> (Pipeline, WriterThread) {
    let mut registry = prometheus_client::registry::Registry::default();
    Pipeline::start(writer, PipelineConfig::default(), &mut registry)
}

/// Closes the pipeline and waits for its writer: every op handed over
/// has then been applied or answered with an error.
pub async fn stop(pipeline: Pipeline, thread: WriterThread) -> anyhow::Result<()> {
    pipeline.close();
    drop(pipeline);
    tokio::task::spawn_blocking(move || thread.join()).await?;
    Ok(())
}

/// The store's writer as the power cut sees it: once the power is off
/// nothing is applied, and an error is final rather than transient (a
/// machine without power retries nothing).
pub struct Unplugged {
    pub inner: Box<dyn StoreWriter>,
    pub cut: &'static PowerCut,
}

impl StoreWriter for Unplugged {
    fn apply(&mut self, ops: &[WriteOp]) -> joblog_store::Result<Vec<Outcome>> {
        if self.cut.is_dead() {
            return Err(StoreError::Database("the power is off".into()));
        }
        self.inner.apply(ops).map_err(|e| match self.cut.is_dead() {
            true => StoreError::Database(format!("the power went off: {e}")),
            false => e,
        })
    }

    fn may_have_committed(&self) -> bool {
        self.inner.may_have_committed()
    }
}

/// Runs the load until it is done or the power goes; every commit the
/// pipeline announces goes into `ledger` (through `commits`).
pub async fn run(store: Arc<dyn Store>, pipeline: &Pipeline, ledger: &Arc<Mutex<Ledger>>) {
    let mut tasks = Vec::with_capacity(PRODUCERS);
    for _ in 0..PRODUCERS {
        let (store, pipeline, ledger) = (store.clone(), pipeline.clone(), ledger.clone());
        tasks.push(tokio::spawn(async move {
            // An error ends the producer: after the cut every op fails.
            let mut doing = "queueing";
            if produce(store.as_ref(), &pipeline, &ledger, &mut doing)
                .await
                .is_err()
            {
                lock(&ledger).cut_during.push(doing);
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// Follows the pipeline's commits into the ledger until it closes.
pub fn follow(
    pipeline: &Pipeline,
    ledger: Arc<Mutex<Ledger>>,
    cut: &'static PowerCut,
) -> tokio::task::JoinHandle<()> {
    let mut rx = pipeline.subscribe();
    tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            match rx.recv().await {
                Ok(c) => {
                    let commit = Commit {
                        at_event: cut.events(),
                        appended: c.appended.clone(),
                        finished: c.finished.clone(),
                        started: c.started.clone(),
                    };
                    lock(&ledger).commits.push(commit);
                }
                Err(RecvError::Lagged(n)) => lock(&ledger).lagged += n,
                Err(RecvError::Closed) => break,
            }
        }
    })
}

pub fn lock(ledger: &Mutex<Ledger>) -> std::sync::MutexGuard<'_, Ledger> {
    ledger.lock().unwrap_or_else(|p| p.into_inner())
}

async fn produce(
    store: &dyn Store,
    pipeline: &Pipeline,
    ledger: &Mutex<Ledger>,
    doing: &mut &'static str,
) -> Result<(), anyhow::Error> {
    for _ in 0..JOBS_PER_PRODUCER {
        *doing = "queueing";
        let job = pipeline
            .insert_job(Some("faults".into()), true_job())
            .await?;
        lock(ledger).inserted.push(job.id);
        *doing = "claiming";
        let Some(job) = pipeline
            .claim_next(NODE.into(), Labels::default(), Timestamp::now())
            .await?
        else {
            continue;
        };
        let id = job.id;
        *doing = "logging";
        let summary = write_log(pipeline, id).await?;
        *doing = "ending";
        pipeline.finish(id, succeeded(summary)).await?;
        // Some logs stay rows, some are sealed, some sealed and deleted.
        if id % 3 != 0 {
            *doing = "sealing";
            let report = joblog_engine::seal_job(store, pipeline, id).await?;
            lock(ledger).sealed += report.segments;
        }
        if id % 3 == 2 {
            *doing = "retention";
            lock(ledger).retention.insert(id);
            while pipeline.delete_log_chunk(id, RETENTION_CHUNK).await? > 0 {}
            if pipeline.delete_job(id).await? == 1 {
                lock(ledger).deleted.push(id);
            }
        }
    }
    Ok(())
}

/// The job's log, appended as a job's output is: a few records at a time.
async fn write_log(pipeline: &Pipeline, id: JobId) -> Result<LogSummary, PipelineError> {
    let share = pipeline.job_share();
    let mut summary = LogSummary::default();
    for i in 0..APPENDS {
        let records = records(id, 1 + i * PER_APPEND, PER_APPEND, &mut summary);
        pipeline.append(&share, id, records, summary).await?;
        tokio::task::yield_now().await;
    }
    Ok(summary)
}
