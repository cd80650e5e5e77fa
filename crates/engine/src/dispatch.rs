//! The dispatcher: takes free worker slots first, then claims queued jobs
//! for them in one batch, and starts a task per claimed job.
//!
//! Jobs never pile up fighting over the pool: a job is claimed only once a
//! slot is held for it, and tasks are created as jobs start, never one per
//! request.

use std::time::Duration;

use joblog_core::{Job, Timestamp};
use std::sync::Arc;

use tokio::sync::{watch, Notify, Semaphore};
use tracing::Instrument;

use crate::{Engine, StopReason};

/// The dispatcher's state: the worker slots, and the wake-up of an idle
/// dispatcher (a submission, an end, a fire).
pub(crate) struct Dispatcher {
    pub(crate) pool: Arc<Semaphore>,
    pub(crate) wake: Notify,
}

impl Dispatcher {
    pub(crate) fn new(max_concurrency: usize) -> Dispatcher {
        Dispatcher {
            pool: Arc::new(Semaphore::new(max_concurrency.max(1))),
            wake: Notify::new(),
        }
    }
}

/// The longest an idle dispatcher waits without looking at the queue.
const SAFETY_POLL: Duration = Duration::from_secs(5);

/// Claims sent together by the dispatcher, at most.
const MAX_CLAIMS_AT_ONCE: usize = 64;

impl Engine {
    /// Takes a free slot first, then claims the oldest queued job, so that
    /// jobs never pile up fighting over the pool.
    pub(crate) async fn dispatch(self) {
        let mut shutdown = self.inner.shutdown.subscribe();
        loop {
            let first = tokio::select! {
                p = self.inner.dispatcher.pool.clone().acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => return,
                },
                _ = shutdown.wait_for(|s| *s) => return,
            };
            // Every free slot claims at once: the claims travel in one
            // batch, so a burst of jobs costs one commit instead of one
            // commit per job (which is milliseconds on PostgreSQL).
            let mut permits = vec![first];
            while permits.len() < MAX_CLAIMS_AT_ONCE {
                match self.inner.dispatcher.pool.clone().try_acquire_owned() {
                    Ok(p) => permits.push(p),
                    Err(_) => break,
                }
            }
            let jobs = loop {
                if !self.is_accepting() {
                    return;
                }
                let notified = self.inner.dispatcher.wake.notified();
                // The engine's clock, which retries' backoffs are counted
                // by too.
                let at = self.inner.clock.now();
                let claims = permits.iter().map(|_| {
                    self.inner.pipeline.claim_next(
                        self.inner.config.node.clone(),
                        self.inner.config.labels.clone(),
                        at,
                    )
                });
                let mut jobs = Vec::new();
                let mut failed = false;
                for claimed in futures_util::future::join_all(claims).await {
                    match claimed {
                        Ok(Some(job)) => jobs.push(job),
                        Ok(None) => {}
                        Err(e) => {
                            tracing::error!(error = %e, "claiming a job failed");
                            failed = true;
                        }
                    }
                }
                if !jobs.is_empty() {
                    break jobs;
                }
                if failed {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
                let retry = self.next_retry().await;
                tokio::select! {
                    _ = notified => {}
                    _ = shutdown.wait_for(|s| *s) => return,
                    // Submissions and ends wake us directly; this wakes us
                    // for a retry's backoff, by the engine's clock...
                    _ = async {
                        match retry {
                            Some(at) => self.inner.clock.sleep_until(at).await,
                            None => std::future::pending().await,
                        }
                    } => {}
                    // ...and this is a safety net.
                    _ = tokio::time::sleep(SAFETY_POLL) => {}
                }
            };
            // Slots without a job are given back as `permits` drops.
            for (job, permit) in jobs.into_iter().zip(permits.drain(..)) {
                self.launch(job, permit);
            }
        }
    }

    /// When the first queued job waiting for its retry's backoff may
    /// start; `None` when none waits (or it cannot be read: the safety
    /// poll looks again).
    async fn next_retry(&self) -> Option<Timestamp> {
        match self.inner.store.next_run_after().await {
            Ok(at) => at,
            Err(e) => {
                tracing::warn!(error = %e, "reading when queued retries start failed");
                None
            }
        }
    }

    /// Runs a claimed job on the slot `permit` holds.
    fn launch(&self, job: Job, permit: tokio::sync::OwnedSemaphorePermit) {
        let (stop_tx, stop_rx) = watch::channel(None);
        {
            let mut running = self.lock_running();
            if running.cancel_on_start.remove(&job.id) {
                let _ = stop_tx.send(Some(StopReason::Cancel));
            }
            running.jobs.insert(
                job.id,
                crate::running::RunningJob {
                    stop: stop_tx,
                    pgid: None,
                    key: None,
                },
            );
        }
        self.inner.metrics.in_use.set(self.in_use() as i64);
        let engine = self.clone();
        tokio::spawn(async move {
            let id = job.id;
            // The run's operation unit in the server's own logs: what the
            // engine logs about the job joins it, and one line ends it.
            let unit = tracing::info_span!(
                "job",
                unit = "job",
                job_id = id,
                name = job.name.as_deref(),
                state = tracing::field::Empty,
                exit_code = tracing::field::Empty,
            );
            engine.run_job(job, stop_rx).instrument(unit).await;
            drop(permit);
            engine.lock_running().jobs.remove(&id);
            engine.inner.metrics.in_use.set(engine.in_use() as i64);
            // Anything of the job's that left its process group goes now.
            engine.sweep_soon().await;
            engine.inner.jobs.idle.notify_waiters();
        });
    }
}
