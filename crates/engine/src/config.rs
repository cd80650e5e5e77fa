//! How an engine is configured ([`EngineConfig`]), built by `joblog
//! serve` from its settings and passed in whole.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use joblog_core::Labels;
use joblog_pipeline::LogLimits;

#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub max_concurrency: usize,
    /// This node's name, stored in the jobs it runs.
    pub node: String,
    /// This node's labels: it takes only jobs whose `node_selector` they
    /// satisfy.
    pub labels: Labels,
    /// Start paused (`serve --paused`): this node drained and the
    /// scheduler paused, in the store, until an operator says otherwise.
    pub paused_at_start: bool,
    /// Where `JOBLOG_RESULT` files are created; absolute (`start` refuses
    /// a relative one), as every path handed to a job must be.
    pub data_dir: PathBuf,
    pub log_limits: LogLimits,
    /// Between SIGTERM and SIGKILL when a job is stopped.
    pub kill_grace: Duration,
    /// How long a partial line waits for its newline before it is shown.
    pub idle_flush: Duration,
    /// How long to keep reading the pipes after the job's main process
    /// exited (children that inherited them are then killed).
    pub drain_after_exit: Duration,
    /// Largest `JOBLOG_RESULT` file accepted.
    pub max_result_bytes: u64,
    /// On a shared store: a node silent for this long is taken for dead and
    /// its running jobs are marked interrupted. Nodes heartbeat three times
    /// per period.
    pub heartbeat_timeout: Duration,
    /// Jobs that may wait in the queue (on a shared store: of all nodes);
    /// a submission past it is refused, to be retried later.
    pub max_queued: u64,
    /// Below this many free bytes on the data directory's disk, new jobs
    /// are refused (`0`: never): the database and the server's own logs
    /// keep room to finish what runs.
    pub min_free_bytes: u64,
    /// Schedules that may exist (of all nodes); creating one more is
    /// refused.
    pub max_schedules: u64,
    /// The server's own secrets (its API token, the database password):
    /// masked in every job's log, like a job's own secrets, in case a job
    /// finds them.
    pub server_secrets: Vec<String>,
    /// Secrets this node gives the runs of schedules that name them
    /// (a schedule keeps names only): `JOBLOG_SECRET_<NAME>` from the
    /// server's environment.
    pub node_secrets: BTreeMap<String, String>,
    /// Which schedules may be given each node secret: a secret's name →
    /// patterns (`*`, `?`) of the schedule names allowed it. A secret not
    /// listed is given to no schedule.
    pub node_secret_scopes: BTreeMap<String, Vec<String>>,
    /// Seal the logs of jobs this node ends (`crate::sealer`).
    pub seal: bool,
    /// Run every job as this user instead of the server's own.
    pub run_as: Option<RunAs>,
    /// The process is this engine's alone (`joblog serve`): every child it
    /// is handed that is not a job's main process is reaped when it dies,
    /// marked or not (`orphans`). Off where other code in the process has
    /// children of its own to wait for (tests).
    pub reap_all_children: bool,
    /// The umask jobs start with, when the server's own differs (`joblog
    /// serve` keeps `077` for itself and gives jobs the one it was
    /// started with).
    pub job_umask: Option<u32>,
    /// How this node sends notifications (`crate::notify`).
    pub notify: crate::NotifyConfig,
}

impl EngineConfig {
    pub fn new(node: String, data_dir: PathBuf) -> Self {
        EngineConfig {
            max_concurrency: 16,
            node,
            labels: Labels::default(),
            paused_at_start: false,
            data_dir,
            log_limits: LogLimits::default(),
            kill_grace: Duration::from_secs(5),
            idle_flush: Duration::from_millis(200),
            drain_after_exit: Duration::from_secs(2),
            max_result_bytes: 64 << 20,
            heartbeat_timeout: Duration::from_secs(30),
            max_queued: 10_000,
            min_free_bytes: 256 << 20,
            max_schedules: 1_000,
            server_secrets: Vec::new(),
            node_secrets: BTreeMap::new(),
            notify: crate::NotifyConfig::default(),
            node_secret_scopes: BTreeMap::new(),
            run_as: None,
            seal: true,
            reap_all_children: false,
            job_umask: None,
        }
    }
}

/// The user every job runs as (`jobs.run_as`): its ids, looked up once at
/// start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    /// Its supplementary groups.
    pub groups: Vec<u32>,
    /// Its home directory: a job's directory when it names none, and
    /// `HOME`.
    pub home: PathBuf,
}
