//! The job engine: a queue in the store, a dispatcher that takes a free
//! worker slot before it claims a job, and the supervision of each job's
//! process group.
//!
//! Invariants: never more than `max_concurrency` jobs run on a node; a
//! job's records are handed to the pipeline in seq order and its `Finish`
//! after the last of them, so `finished_at` follows the last commit; a job
//! that is stopped (cancel, timeout, shutdown) has its whole process group
//! killed.
//!
//! Where things are: `start` (recovery, registration, the tasks),
//! `control` (submit, cancel, tokens, shutdown) with `admission` (the
//! `max_queued` check, counted now and then), `dispatch` (free slots,
//! then claims in one batch), `run` (one job's task: pipes, timeout,
//! finish) with `process` (the process group, its environment) and
//! `result_file`, `scheduler` (fires, and the `Clock` every timed step
//! goes by), `sealer` (a finished job's log into segments, a slice at a
//! time), `sweeps` and `orphans` (processes that left their group: they
//! bear this node's marks in their environment), `nodes` (other nodes'
//! commits, heartbeats, lapsed nodes), `retention`, `running` (the jobs
//! of this node and the secrets of queued ones, in memory only),
//! `notify` (rules, and the sender of the outbox's deliveries),
//! `metrics`, `config`. Each owns its state in `Inner`; the timings
//! (claims at once, safety polls, slice sizes) are constants beside the
//! code they pace.

mod admission;
mod config;
mod control;
mod dispatch;
mod error;
mod job_input;
mod metrics;
mod nodes;
mod notify;
mod orphans;
mod process;
mod result_file;
mod retention;
mod run;
mod running;
mod scheduler;
mod sealer;
mod start;
mod storage;
mod sweeps;
mod trigger_input;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use joblog_pipeline::Pipeline;
use joblog_store::Store;
use tokio::sync::watch;

pub use config::{EngineConfig, RunAs};
pub use error::EngineError;
pub use notify::{NotifyConfig, TestSend};
pub use retention::GroomReport;
pub use scheduler::{Clock, SystemClock};
pub use sealer::{seal_job, SealReport, SealStatus, COUNT_UP_TO};

/// Why a running job is being stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopReason {
    Cancel,
    Shutdown,
}

/// The engine's state, each part owned by the module that works it.
struct Inner {
    store: Arc<dyn Store>,
    pipeline: Pipeline,
    config: EngineConfig,
    /// The one clock fires, retries and claims go by.
    clock: Arc<dyn Clock>,
    accepting: AtomicBool,
    /// Submissions admitted against `max_queued` (`admission`).
    admission: admission::Admission,
    shutdown: watch::Sender<bool>,
    /// Worker slots and the wake-up of an idle dispatcher (`dispatch`).
    dispatcher: dispatch::Dispatcher,
    /// The jobs running here (`running`).
    jobs: running::Jobs,
    /// Orphan sweeps (`sweeps`, `orphans`).
    sweeps: sweeps::Sweeps,
    /// A schedule was saved here: the scheduler looks again (`scheduler`).
    scheduler: scheduler::Scheduler,
    sealer: sealer::Sealer,
    /// The notification sender (`notify`).
    notifier: notify::Notifier,
    metrics: metrics::Metrics,
    /// Counts commits that revoked API tokens or ended sessions (on any
    /// node), or may have (missed commits): streams held open on one
    /// check it again.
    revocations: watch::Sender<u64>,
}

/// Handle to the engine. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl Engine {
    /// Changes each time a commit on any node revoked an API token or
    /// ended a session (or commits may have been missed): a stream held
    /// open on one checks it again then.
    pub fn revocations(&self) -> watch::Receiver<u64> {
        self.inner.revocations.subscribe()
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    pub fn pipeline(&self) -> &Pipeline {
        &self.inner.pipeline
    }

    pub fn node(&self) -> &str {
        &self.inner.config.node
    }

    /// The silence after which this node takes another for lapsed.
    pub fn heartbeat_timeout(&self) -> Duration {
        self.inner.config.heartbeat_timeout
    }

    /// Jobs running on this node right now. Not the pool's taken permits:
    /// the dispatcher holds every free slot while it waits for work, so
    /// those would count an idle node as full.
    pub fn in_use(&self) -> usize {
        self.lock_running().jobs.len()
    }

    pub fn is_accepting(&self) -> bool {
        self.inner.accepting.load(Ordering::Relaxed)
    }
}
