//! The jobs this node runs: their stop handles and process groups, the
//! secrets of queued jobs (in memory only), and the locks that keep a
//! claim, a cancel and a submission with secrets from missing each other.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use joblog_core::JobId;
use tokio::sync::{watch, Notify};

use crate::{Engine, StopReason};

/// The running jobs' state.
#[derive(Default)]
pub(crate) struct Jobs {
    pub(crate) running: Mutex<Running>,
    /// Secrets of queued jobs: held in memory only, never stored.
    pub(crate) secrets: Mutex<HashMap<JobId, BTreeMap<String, String>>>,
    /// The secrets in memory of jobs that ended with an attempt to follow,
    /// by the ended job: its next attempt takes them (`previous`).
    pub(crate) held_for_retry: Mutex<HashMap<JobId, BTreeMap<String, String>>>,
    /// Held (shared) by each submission with secrets from before its insert
    /// until its secrets are in `secrets`: a job claimed in between waits
    /// for it (exclusive) instead of starting without them.
    pub(crate) submitting: tokio::sync::RwLock<()>,
    /// Told each time a job ends here.
    pub(crate) idle: Notify,
}

/// The jobs this node runs, and cancels that arrived for a job between its
/// claim and its registration here. One lock for both, so that a cancel
/// and a registration can never miss each other.
#[derive(Default)]
pub(crate) struct Running {
    pub(crate) jobs: HashMap<JobId, RunningJob>,
    pub(crate) cancel_on_start: std::collections::HashSet<JobId>,
}

/// A job running on this node.
pub(crate) struct RunningJob {
    /// Tells its supervising task to stop it.
    pub(crate) stop: watch::Sender<Option<StopReason>>,
    /// Its process group, once it has started: a stop signals it directly
    /// too, since the supervising task may be waiting on a writer that
    /// cannot write (a full disk) and would signal only once it returns.
    pub(crate) pgid: Option<u32>,
    /// The key its processes carry (`JOBLOG_JOB_KEY`), once it has
    /// started: a process claiming this job without it is not its.
    pub(crate) key: Option<String>,
}

impl Engine {
    /// Notes the process group of a job that has started.
    pub(crate) fn set_started(&self, id: JobId, pgid: Option<u32>, key: String) {
        if let Some(job) = self.lock_running().jobs.get_mut(&id) {
            job.pgid = pgid;
            job.key = Some(key);
        }
    }

    pub(crate) fn lock_running(&self) -> std::sync::MutexGuard<'_, Running> {
        self.inner
            .jobs
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn lock_secrets(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<JobId, BTreeMap<String, String>>> {
        self.inner
            .jobs
            .secrets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}
