//! The sealer: one task per node that seals the logs of finished jobs
//! ([`seal_job`]: `joblog_store::sealed` encodes, the pipeline's writer
//! applies each slice), a few jobs at a time ([`JOBS_AT_ONCE`]), each
//! one slice at a time through the pipeline's writer, so that sealing never
//! gives the writer more than those few slices at once and never delays
//! another job's records by more.
//!
//! With sealing on it seals the jobs this node ended (and those of no
//! node) as they finish, and whatever such jobs a crash or a stop left
//! unsealed when it starts. [`Engine::seal_all`] asks it for one pass over
//! every finished job of every node, whether sealing is on or off.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use futures_util::StreamExt;
use joblog_core::{JobId, Timestamp};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::sync::Notify;

use joblog_pipeline::Pipeline;
use joblog_store::sealed::{SealSlice, SEGMENT_RECORDS, SEGMENT_TEXT_BYTES};
use joblog_store::Store;

use crate::{Engine, EngineError};

/// Jobs read from the store per look.
const JOBS_PER_LOOK: u32 = 100;

/// Jobs sealed at once: so many slices (of at most 1,000 records each) are
/// in the writer's hands at most.
const JOBS_AT_ONCE: usize = 4;

/// Unsealed jobs counted at most for a status: enough to show progress,
/// bounded so that a status costs no more than that many index entries.
pub const COUNT_UP_TO: u64 = 10_000_000;

/// How long the sealer waits for a job to finish before it looks anyway
/// (a job ended by another node's lapse is not announced one by one).
const LOOK_EVERY: Duration = Duration::from_secs(60);

/// The sealer's state and counters, shared with `/metrics`.
pub(crate) struct Sealer {
    pub(crate) enabled: bool,
    /// A pass over every finished job was asked for.
    all_asked: AtomicBool,
    /// A pass over every finished job is running.
    all_running: AtomicBool,
    wake: Notify,
    jobs: Counter,
    records: Counter,
    bytes_before: Counter,
    bytes_after: Counter,
    failures: Counter,
    /// Seconds since the oldest job waiting for this node's sealer
    /// finished (0: none waits).
    lag: Gauge<f64, AtomicU64>,
    /// Jobs whose sealing failed in this process: the passes a finish
    /// starts skip them (their error was logged once); a pass over every
    /// job tries them again.
    failed: Mutex<HashSet<JobId>>,
}

/// What `GET /api/v1/sealing` shows.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SealStatus {
    /// Sealing on: this node seals the logs of the jobs it ends.
    pub enabled: bool,
    /// A pass over every finished job is asked for or running.
    pub sealing_all: bool,
    /// Finished jobs whose log is not sealed yet, every node's (counted up
    /// to [`COUNT_UP_TO`]).
    pub unsealed_jobs: u64,
    /// Seconds since the oldest job waiting for this node's sealer finished.
    pub lag_seconds: f64,
}

impl Sealer {
    pub(crate) fn new(enabled: bool, registry: &mut Registry) -> Sealer {
        let sealer = Sealer {
            enabled,
            all_asked: AtomicBool::new(false),
            all_running: AtomicBool::new(false),
            wake: Notify::new(),
            jobs: Counter::default(),
            records: Counter::default(),
            bytes_before: Counter::default(),
            bytes_after: Counter::default(),
            failures: Counter::default(),
            lag: Gauge::default(),
            failed: Mutex::new(HashSet::new()),
        };
        registry.register(
            "joblog_sealed_jobs",
            "Jobs whose log this node sealed",
            sealer.jobs.clone(),
        );
        registry.register(
            "joblog_sealed_records",
            "Log records this node moved from rows into sealed segments",
            sealer.records.clone(),
        );
        registry.register(
            "joblog_sealed_bytes_before",
            "Text and fields (JSON) of the records sealed, in bytes",
            sealer.bytes_before.clone(),
        );
        registry.register(
            "joblog_sealed_bytes_after",
            "Bytes of the segments that replaced them",
            sealer.bytes_after.clone(),
        );
        registry.register(
            "joblog_seal_failures",
            "Jobs whose sealing failed (left as rows, tried again at the next pass)",
            sealer.failures.clone(),
        );
        registry.register(
            "joblog_seal_lag_seconds",
            "Since the oldest finished job waiting for this node's sealer finished (0: none)",
            sealer.lag.clone(),
        );
        sealer
    }
}

impl Sealer {
    fn lock_failed(&self) -> std::sync::MutexGuard<'_, HashSet<JobId>> {
        self.failed.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Engine {
    /// Asks for one pass over every finished job of every node, sealing
    /// each log not sealed yet (whether sealing is on or not).
    pub fn seal_all(&self) {
        let sealer = &self.inner.sealer;
        sealer.all_asked.store(true, Ordering::SeqCst);
        sealer.wake.notify_one();
    }

    pub async fn seal_status(&self) -> Result<SealStatus, crate::EngineError> {
        let sealer = &self.inner.sealer;
        Ok(SealStatus {
            enabled: sealer.enabled,
            sealing_all: sealer.all_asked.load(Ordering::SeqCst)
                || sealer.all_running.load(Ordering::SeqCst),
            unsealed_jobs: self.inner.store.count_unsealed(COUNT_UP_TO).await?,
            lag_seconds: sealer.lag.get(),
        })
    }

    /// A job ended (or commits were missed): the sealer looks for logs to
    /// seal. Called by the engine's one watcher of commits.
    pub(crate) fn jobs_ended(&self) {
        self.inner.sealer.wake.notify_one();
    }

    /// The sealer task (see the module's documentation).
    pub(crate) async fn sealer(self) {
        let mut shutdown = self.inner.shutdown.subscribe();
        let sealer = &self.inner.sealer;
        // The jobs of this node, and of none: on a shared store each node
        // seals what it ended, so nodes do not race for the same logs.
        let own = self
            .inner
            .store
            .is_shared()
            .then(|| self.inner.config.node.clone());
        loop {
            if sealer.all_asked.swap(false, Ordering::SeqCst) {
                sealer.all_running.store(true, Ordering::SeqCst);
                let done = self.seal_pass(None, true).await;
                sealer.all_running.store(false, Ordering::SeqCst);
                if !done {
                    return;
                }
            }
            if sealer.enabled && !self.seal_pass(own.clone(), false).await {
                return;
            }
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = sealer.wake.notified() => {}
                _ = tokio::time::sleep(LOOK_EVERY) => {}
            }
        }
    }

    /// Seals every finished unsealed job of `node` (all with `None`),
    /// oldest first, and those that failed before only with
    /// `retry_failed`; false once the node is stopping.
    async fn seal_pass(&self, node: Option<String>, retry_failed: bool) -> bool {
        let sealer = &self.inner.sealer;
        let mut after: JobId = 0;
        loop {
            if *self.inner.shutdown.borrow() {
                return false;
            }
            let jobs = match self
                .inner
                .store
                .unsealed_jobs(after, JOBS_PER_LOOK, node.clone())
                .await
            {
                Ok(jobs) => jobs,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot list the jobs to seal; trying again later");
                    return true;
                }
            };
            let Some(&(_, oldest)) = jobs.first() else {
                sealer.lag.set(0.0);
                return true;
            };
            // Jobs are listed in id order, about the order they finished
            // in: the first is about the oldest still waiting.
            let now = Timestamp::now().micros();
            sealer.lag.set((now - oldest.micros()).max(0) as f64 / 1e6);
            after = jobs.last().map_or(after, |(id, _)| *id);
            let todo: Vec<JobId> = jobs
                .into_iter()
                .map(|(id, _)| id)
                .filter(|id| retry_failed || !sealer.lock_failed().contains(id))
                .collect();
            // A few jobs at once: each waits for the writer between its
            // slices, and a busy node ends jobs faster than one sealer
            // waiting on every commit keeps up with.
            futures_util::stream::iter(todo)
                .for_each_concurrent(JOBS_AT_ONCE, |id| async move {
                    if !*self.inner.shutdown.borrow() {
                        self.seal_one(id).await;
                    }
                })
                .await;
            if *self.inner.shutdown.borrow() {
                return false;
            }
        }
    }

    async fn seal_one(&self, id: JobId) {
        let sealer = &self.inner.sealer;
        match seal_job(self.inner.store.as_ref(), &self.inner.pipeline, id).await {
            Ok(report) => {
                sealer.lock_failed().remove(&id);
                sealer.records.inc_by(report.records);
                sealer.bytes_before.inc_by(report.bytes_before);
                sealer.bytes_after.inc_by(report.bytes_after);
                if report.marked {
                    sealer.jobs.inc();
                }
                tracing::debug!(job = id, ?report, "log sealed");
            }
            // Stopped by the server's stop (the pipeline closes under it):
            // not a failure; its log stays as rows and the next start
            // seals it.
            Err(e) if *self.inner.shutdown.borrow() => {
                tracing::debug!(job = id, error = %e, "sealing left for the next start");
            }
            Err(e) => {
                sealer.lock_failed().insert(id);
                sealer.failures.inc();
                tracing::warn!(job = id, error = %e, "cannot seal the job's log; it stays as rows");
            }
        }
    }
}

/// What sealing one job did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SealReport {
    /// Segments written, and the records and bytes (text and fields) they
    /// replaced.
    pub segments: u64,
    pub records: u64,
    pub bytes_before: u64,
    /// Bytes of the segments written.
    pub bytes_after: u64,
    /// The job's log is now sealed whole (false: it was not finished, was
    /// deleted, or another sealer marked it).
    pub marked: bool,
}

/// Seals a finished job's log: slice by slice, each read from the rows,
/// encoded off the writer and handed to the pipeline's writer, then
/// marked sealed. One slice at a time is in the writer's hands, so
/// sealing never holds it for more than one slice. A slice whose rows
/// changed meanwhile (another node sealing the job, retention deleting
/// it) is read again, a few times at most.
pub async fn seal_job(
    store: &dyn Store,
    pipeline: &Pipeline,
    job: JobId,
) -> Result<SealReport, EngineError> {
    const LOST_SLICES: u32 = 3;
    let mut report = SealReport::default();
    let mut lost = 0;
    loop {
        let mut rows = store.unsealed_rows(job, SEGMENT_RECORDS).await?;
        if rows.is_empty() {
            break;
        }
        let mut text = 0;
        let keep = rows
            .iter()
            .position(|r| {
                text += r.message.len();
                text >= SEGMENT_TEXT_BYTES
            })
            .map_or(rows.len(), |i| i + 1);
        rows.truncate(keep);
        let slice = tokio::task::spawn_blocking(move || SealSlice::encode(job, &rows))
            .await
            .map_err(|e| EngineError::Io(format!("sealing task failed: {e}")))??;
        let (records, before, after) = (slice.records(), slice.raw_bytes, slice.data.len());
        if pipeline.seal_slice(slice).await? {
            report.segments += 1;
            report.records += records;
            report.bytes_before += before;
            report.bytes_after += after as u64;
        } else if lost < LOST_SLICES {
            lost += 1;
        } else {
            return Ok(report);
        }
    }
    report.marked = pipeline.mark_sealed(job).await?;
    Ok(report)
}
