//! The job engine: a queue in the store, a dispatcher that takes a free
//! worker slot before it claims a job, and the supervision of each job's
//! process group.
//!
//! Invariants: never more than `max_concurrency` jobs run on a node; a
//! job's records are handed to the pipeline in seq order and its `Finish`
//! after the last of them, so `finished_at` follows the last commit; a job
//! that is stopped (cancel, timeout, shutdown) has its whole process group
//! killed.

mod dispatch;
mod error;
mod nodes;
mod orphans;
mod process;
mod run;
mod scheduler;
mod sealer;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use joblog_core::{Job, JobId, JobState, NewJobRequest};
use joblog_pipeline::{LogLimits, Pipeline};
use joblog_store::{GroomPolicy, Store};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use tokio::sync::{watch, Notify, Semaphore};

pub use error::EngineError;
pub use scheduler::{Clock, SystemClock};
pub use sealer::{seal_job, SealReport, SealStatus, COUNT_UP_TO};

#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub max_concurrency: usize,
    /// This node's name, stored in the jobs it runs.
    pub node: String,
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
}

impl EngineConfig {
    pub fn new(node: String, data_dir: PathBuf) -> Self {
        EngineConfig {
            max_concurrency: 16,
            node,
            data_dir,
            log_limits: LogLimits::default(),
            kill_grace: Duration::from_secs(5),
            idle_flush: Duration::from_millis(200),
            drain_after_exit: Duration::from_secs(2),
            max_result_bytes: 64 << 20,
            heartbeat_timeout: Duration::from_secs(30),
            max_queued: 10_000,
            max_schedules: 1_000,
            server_secrets: Vec::new(),
            node_secrets: BTreeMap::new(),
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

/// Why a running job is being stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopReason {
    Cancel,
    Shutdown,
}

#[derive(Clone)]
struct Metrics {
    queue_wait: Histogram,
    run_time: Histogram,
    finished: Family<Vec<(String, String)>, Counter>,
    in_use: Gauge,
    fire_lateness: Histogram,
    fires: Counter,
    fires_skipped: Counter,
}

struct Inner {
    store: Arc<dyn Store>,
    pipeline: Pipeline,
    config: EngineConfig,
    pool: Arc<Semaphore>,
    wake: Notify,
    accepting: AtomicBool,
    shutdown: watch::Sender<bool>,
    running: Mutex<Running>,
    /// Kills what is left of ended jobs outside their process groups.
    orphans: orphans::Sweeper,
    /// Held while a job's process is spawned and its pid recorded, so the
    /// orphan sweep never takes a new main process for an orphan.
    spawning: Mutex<()>,
    /// Secrets of queued jobs: held in memory only, never stored.
    secrets: Mutex<HashMap<JobId, BTreeMap<String, String>>>,
    /// Held (shared) by each submission with secrets from before its insert
    /// until its secrets are in `secrets`: a job claimed in between waits
    /// for it (exclusive) instead of starting without them.
    submitting: tokio::sync::RwLock<()>,
    idle: Notify,
    metrics: Metrics,
    clock: Arc<dyn Clock>,
    /// A schedule was saved here: the scheduler looks again.
    schedules_changed: Notify,
    /// Sweeps asked for (a count), and the count the last finished sweep
    /// started after: a burst of job ends is served by one sweep, not
    /// one each (a sweep reads `/proc`, on a blocking thread).
    sweeps_asked: watch::Sender<u64>,
    sweeps_done: watch::Sender<u64>,
    sealer: sealer::Sealer,
    /// Counts commits that revoked API tokens (on any node), or may have
    /// (missed commits): streams held open on a token check it again.
    tokens_revoked: watch::Sender<u64>,
}

/// The jobs this node runs, and cancels that arrived for a job between its
/// claim and its registration here. One lock for both, so that a cancel
/// and a registration can never miss each other.
#[derive(Default)]
struct Running {
    jobs: HashMap<JobId, RunningJob>,
    cancel_on_start: std::collections::HashSet<JobId>,
}

/// How often processes that outlived their jobs are looked for.
const ORPHAN_SWEEP: Duration = Duration::from_secs(5);

/// A job running on this node.
struct RunningJob {
    /// Tells its supervising task to stop it.
    stop: watch::Sender<Option<StopReason>>,
    /// Its process group, once it has started: a stop signals it directly
    /// too, since the supervising task may be waiting on a writer that
    /// cannot write (a full disk) and would signal only once it returns.
    pgid: Option<u32>,
    /// The key its processes carry (`JOBLOG_JOB_KEY`), once it has
    /// started: a process claiming this job without it is not its.
    key: Option<String>,
}

/// Handle to the engine. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// What `groom` deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroomReport {
    pub jobs_deleted: u64,
    pub records_deleted: u64,
}

impl Engine {
    /// Recovers from an earlier crash (jobs left `running` become
    /// `interrupted`) and starts dispatching.
    pub async fn start(
        store: Arc<dyn Store>,
        pipeline: Pipeline,
        config: EngineConfig,
        registry: &mut Registry,
    ) -> Result<Engine, EngineError> {
        Engine::start_with_clock(store, pipeline, config, registry, Arc::new(SystemClock)).await
    }

    /// [`Engine::start`], with the clock schedules fire by.
    pub async fn start_with_clock(
        store: Arc<dyn Store>,
        pipeline: Pipeline,
        config: EngineConfig,
        registry: &mut Registry,
        clock: Arc<dyn Clock>,
    ) -> Result<Engine, EngineError> {
        // `JOBLOG_RESULT` is under it: relative, it would point elsewhere
        // for every job that runs in (or changes to) another directory.
        if config.data_dir.is_relative() {
            return Err(EngineError::Io(format!(
                "the data directory {} must be an absolute path",
                config.data_dir.display()
            )));
        }
        let shared = store.is_shared();
        // Jobs still `running` under this node's name were left by an
        // earlier process of it; with the embedded store this node is the
        // only one, so that is every running job. Before registering, so
        // their records can name the old process's last heartbeat.
        let own = shared.then(|| config.node.clone());
        let ended = pipeline.interrupt(own, false).await?;
        if !ended.is_empty() {
            tracing::warn!(
                "jobs left running by an earlier server that was killed or crashed, marked interrupted: {}",
                nodes::describe(&ended)
            );
        }
        // Registered before taking jobs. Judging the others waits for the
        // heartbeat loop (see `heartbeats`).
        pipeline
            .register_node(
                config.node.clone(),
                env!("CARGO_PKG_VERSION").to_string(),
                config.node_secrets.keys().cloned().collect(),
            )
            .await?;
        std::fs::create_dir_all(config.data_dir.join("results")).map_err(|e| {
            EngineError::Io(format!(
                "cannot create {}: {e}",
                config.data_dir.join("results").display()
            ))
        })?;
        orphans::become_subreaper();
        // On the embedded store the node is whatever server has the data
        // dir (one at a time, whatever its name); on a shared one, the
        // node of that name.
        let mark_node = if shared { config.node.as_str() } else { "" };
        let orphans = orphans::Sweeper::new(mark_node, &store.describe());
        // Before any job of ours runs: whatever carries this node's mark is
        // left from an earlier server that died without stopping its jobs.
        let leftovers = orphans.kill_leftovers();
        if !leftovers.is_empty() {
            tracing::warn!(
                pids = ?leftovers,
                "killed processes of jobs left running by an earlier server of this node"
            );
        }
        let metrics = Metrics {
            queue_wait: Histogram::new(joblog_core::exponential_buckets(0.001, 4.0, 10)),
            run_time: Histogram::new(joblog_core::exponential_buckets(0.01, 4.0, 10)),
            finished: Family::default(),
            in_use: Gauge::default(),
            // 0.5 ms to 16 s, doubling: fine enough to read a p99 of a few ms.
            fire_lateness: Histogram::new(joblog_core::exponential_buckets(0.0005, 2.0, 16)),
            fires: Counter::default(),
            fires_skipped: Counter::default(),
        };
        registry.register(
            "joblog_schedule_fire_lateness_seconds",
            "From a schedule's fire time to its job queued (committed)",
            metrics.fire_lateness.clone(),
        );
        registry.register(
            "joblog_schedule_fires",
            "Jobs made by this node's scheduler for fires of schedules",
            metrics.fires.clone(),
        );
        registry.register(
            "joblog_schedule_fires_skipped",
            "Fires that made no job (overlap skip, or missed while down)",
            metrics.fires_skipped.clone(),
        );
        registry.register(
            "joblog_job_queue_wait_seconds",
            "From submission to start",
            metrics.queue_wait.clone(),
        );
        registry.register(
            "joblog_job_run_seconds",
            "From start to finish (log committed)",
            metrics.run_time.clone(),
        );
        registry.register(
            "joblog_jobs_finished",
            "Jobs finished, by final state",
            metrics.finished.clone(),
        );
        registry.register(
            "joblog_pool_in_use",
            "Jobs running on this node (worker slots in use)",
            metrics.in_use.clone(),
        );
        let pool_max = Gauge::<i64>::default();
        pool_max.set(config.max_concurrency as i64);
        registry.register("joblog_pool_max", "Worker slots", pool_max);

        let sealer = sealer::Sealer::new(config.seal, registry);
        let engine = Engine {
            inner: Arc::new(Inner {
                store,
                pipeline,
                pool: Arc::new(Semaphore::new(config.max_concurrency.max(1))),
                config,
                wake: Notify::new(),
                accepting: AtomicBool::new(true),
                shutdown: watch::channel(false).0,
                running: Mutex::new(Running::default()),
                orphans,
                spawning: Mutex::new(()),
                secrets: Mutex::new(HashMap::new()),
                submitting: tokio::sync::RwLock::new(()),
                idle: Notify::new(),
                metrics,
                clock,
                schedules_changed: Notify::new(),
                sweeps_asked: watch::channel(0).0,
                sweeps_done: watch::channel(0).0,
                sealer,
                tokens_revoked: watch::channel(0).0,
            }),
        };
        // Other nodes' commits (a shared store announces them) go into the
        // same broadcast as this node's, so followers see every job alike.
        engine
            .inner
            .store
            .start_listener(engine.inner.pipeline.commit_sender());
        // Subscribed here, not in the task, so no commit after start is missed.
        let commits = engine.inner.pipeline.subscribe();
        tokio::spawn(engine.clone().watch_commits(commits));
        tokio::spawn(engine.clone().heartbeats());
        tokio::spawn(engine.clone().dispatch());
        tokio::spawn(engine.clone().schedule_loop());
        tokio::spawn(engine.clone().sweeper());
        tokio::spawn(engine.clone().sweep_orphans_every(ORPHAN_SWEEP));
        if engine.inner.config.reap_all_children {
            engine.clone().sweep_at_each_sigchld();
        }
        tokio::spawn(engine.clone().sealer());
        Ok(engine)
    }

    /// Changes each time a commit on any node revoked an API token (or
    /// commits may have been missed): a stream held open on a token
    /// checks it again then.
    pub fn tokens_revoked(&self) -> watch::Receiver<u64> {
        self.inner.tokens_revoked.subscribe()
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

    /// Validates and queues a job.
    pub async fn submit(&self, request: NewJobRequest) -> Result<Job, EngineError> {
        if !self.is_accepting() {
            return Err(EngineError::ShuttingDown);
        }
        let joblog_core::ValidJob {
            name,
            spec,
            secrets,
        } = request.validate()?;
        self.check_writable()?;
        self.check_queue().await?;
        let submitting = if secrets.is_empty() {
            None
        } else {
            Some(self.inner.submitting.read().await)
        };
        let job = self.inner.pipeline.insert_job(name, spec).await?;
        if !secrets.is_empty() {
            self.lock_secrets().insert(job.id, secrets);
        }
        drop(submitting);
        self.inner.wake.notify_one();
        Ok(job)
    }

    /// Refuses a new job while `max_queued` wait already.
    async fn check_queue(&self) -> Result<(), EngineError> {
        let max = self.inner.config.max_queued;
        let queued = self.inner.store.count_queued(max).await?;
        if queued >= max {
            return Err(EngineError::QueueFull(queued));
        }
        Ok(())
    }

    /// Stores an API token by its hash: false when one of that name
    /// exists. Fails fast while the store refuses writes, as every other
    /// change does: a token whose client gave up must not appear later.
    pub async fn create_token(&self, token: joblog_core::NewToken) -> Result<bool, EngineError> {
        self.check_writable()?;
        Ok(self.inner.pipeline.create_token(token).await?)
    }

    /// Revokes the token of that name: false when there is none. Fails
    /// fast while the store refuses writes.
    pub async fn revoke_token(&self, name: String) -> Result<bool, EngineError> {
        self.check_writable()?;
        Ok(self.inner.pipeline.revoke_token(name).await?)
    }

    /// Fails fast while the store refuses writes (a full disk, a lost
    /// database): a write asked of it would wait until it recovers, and a
    /// client that gave up and retried would then find its job twice.
    fn check_writable(&self) -> Result<(), EngineError> {
        match self.inner.pipeline.health() {
            joblog_pipeline::Health::Ok => Ok(()),
            joblog_pipeline::Health::Failing(why) => Err(EngineError::WritesFailing(why)),
        }
    }

    /// Cancels a queued job at once, or stops a running one (its state
    /// becomes `cancelled` once its process group is gone).
    pub async fn cancel(&self, id: JobId) -> Result<Job, EngineError> {
        if self.stop_if_running(id) {
            return self.get(id).await;
        }
        if let Some(job) = self.inner.pipeline.cancel_queued(id).await? {
            self.lock_secrets().remove(&id);
            return Ok(job);
        }
        let job = self.get(id).await?;
        if job.state.is_finished() {
            return Err(EngineError::AlreadyFinished(id));
        }
        if job.node.as_deref() != Some(self.node()) {
            if !self.inner.store.is_shared() {
                return Err(EngineError::NotHere(id));
            }
            // Running on another node: its engine hears the request
            // through the store's notifications and stops it.
            self.inner.pipeline.request_cancel(id).await?;
            return Ok(job);
        }
        // Claimed by our dispatcher and not registered yet: it will be
        // stopped the moment it is.
        if !self.stop_if_running(id) {
            self.lock_running().cancel_on_start.insert(id);
        }
        Ok(job)
    }

    fn stop_if_running(&self, id: JobId) -> bool {
        self.stop_job(id, StopReason::Cancel)
    }

    /// Asks the job's task to stop it and, if its process has started,
    /// sends its group SIGTERM now and SIGKILL after `kill_grace`; false
    /// when the job does not run here.
    fn stop_job(&self, id: JobId, reason: StopReason) -> bool {
        let pgid = match self.lock_running().jobs.get(&id) {
            Some(job) => {
                let _ = job.stop.send(Some(reason));
                job.pgid
            }
            None => return false,
        };
        if let Some(pgid) = pgid {
            process::signal_group(Some(pgid), nix::sys::signal::Signal::SIGTERM);
            let engine = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(engine.inner.config.kill_grace).await;
                let same = engine
                    .lock_running()
                    .jobs
                    .get(&id)
                    .is_some_and(|j| j.pgid == Some(pgid));
                if same {
                    process::signal_group(Some(pgid), nix::sys::signal::Signal::SIGKILL);
                }
            });
        }
        true
    }

    /// Kills what is left of ended jobs: processes that escaped their
    /// job's process group and were handed to this process (see
    /// `orphans`).
    pub(crate) fn sweep_orphans(&self) {
        let reap_all = self.inner.config.reap_all_children;
        self.inner.orphans.sweep(reap_all, || {
            let _spawning = self
                .inner
                .spawning
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let running = self.lock_running();
            (
                running
                    .jobs
                    .iter()
                    .filter_map(|(id, j)| Some((*id, j.key.clone()?)))
                    .collect(),
                running.jobs.values().filter_map(|j| j.pgid).collect(),
            )
        });
    }

    /// Returns once a sweep that started after this call has finished:
    /// what the caller's job left behind is gone. Calls that come while a
    /// sweep runs share the next one.
    pub(crate) async fn sweep_soon(&self) {
        let mut asked = 0;
        self.inner.sweeps_asked.send_modify(|n| {
            *n += 1;
            asked = *n;
        });
        let mut done = self.inner.sweeps_done.subscribe();
        let _ = done.wait_for(|d| *d >= asked).await;
    }

    /// Runs the sweeps asked for, one at a time: each serves every ask
    /// made before it started.
    async fn sweeper(self) {
        let mut asked = self.inner.sweeps_asked.subscribe();
        loop {
            let done = *self.inner.sweeps_done.borrow();
            let Ok(now) = asked.wait_for(|a| *a > done).await.map(|a| *a) else {
                return;
            };
            let engine = self.clone();
            let _ = tokio::task::spawn_blocking(move || engine.sweep_orphans()).await;
            self.inner.sweeps_done.send_replace(now);
        }
    }

    /// Every child that dies is reaped soon after, not at the next
    /// periodic sweep: a job forking thousands of short-lived orphans
    /// must not fill the process table with zombies. Signals that come
    /// while a sweep runs are served by the next one.
    fn sweep_at_each_sigchld(self) {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::child()) {
            Ok(mut children) => {
                tokio::spawn(async move {
                    while children.recv().await.is_some() {
                        self.sweep_soon().await;
                    }
                });
            }
            Err(e) => tracing::warn!(
                error = %e,
                "cannot watch SIGCHLD: orphans that exit are reaped only by the sweep every 5 s"
            ),
        }
    }

    /// A sweep now and then reaps what the one at each job's end could not
    /// see yet (a daemon whose parent exited after its job).
    async fn sweep_orphans_every(self, period: Duration) {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            self.sweep_soon().await;
        }
    }

    /// Notes the process group of a job that has started.
    pub(crate) fn set_started(&self, id: JobId, pgid: Option<u32>, key: String) {
        if let Some(job) = self.lock_running().jobs.get_mut(&id) {
            job.pgid = pgid;
            job.key = Some(key);
        }
    }

    async fn get(&self, id: JobId) -> Result<Job, EngineError> {
        self.inner
            .store
            .get_job(id)
            .await?
            .ok_or(EngineError::NotFound(id))
    }

    /// Deletes finished jobs the policy names, log first, in small
    /// transactions so that the writer never holds the store for long.
    pub async fn groom(&self, policy: GroomPolicy) -> Result<GroomReport, EngineError> {
        const CHUNK: u32 = 5_000;
        self.check_writable()?;
        let mut report = GroomReport::default();
        let mut candidates = self.inner.store.groom_candidates(policy).await?;
        if candidates.is_empty() {
            return Ok(report);
        }
        // Whole partitions first (a cheap DROP each, where the store has
        // them); what remains is deleted row by row.
        let pipeline = &self.inner.pipeline;
        let dropped = pipeline.drop_log_partitions(candidates.clone()).await?;
        report.jobs_deleted += dropped.jobs.len() as u64;
        report.records_deleted += dropped.records;
        let dropped: std::collections::HashSet<JobId> = dropped.jobs.into_iter().collect();
        candidates.retain(|id| !dropped.contains(id));
        for id in candidates {
            loop {
                let n = pipeline.delete_log_chunk(id, CHUNK).await?;
                report.records_deleted += n;
                if n < u64::from(CHUNK) {
                    break;
                }
            }
            report.jobs_deleted += pipeline.delete_job(id).await?;
        }
        Ok(report)
    }

    /// Graceful stop: no new jobs; running ones get `grace` to finish, then
    /// are stopped (state `interrupted`). Returns when every job task has
    /// handed its last record to the pipeline.
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.accepting.store(false, Ordering::Relaxed);
        let _ = self.inner.shutdown.send(true);
        self.inner.wake.notify_waiters();
        let n = self.lock_running().jobs.len();
        if n > 0 {
            tracing::info!(jobs = n, ?grace, "waiting for running jobs to finish");
        }
        if tokio::time::timeout(grace, self.wait_idle()).await.is_err() {
            let ids: Vec<JobId> = self.lock_running().jobs.keys().copied().collect();
            tracing::warn!(jobs = ids.len(), "grace period over; stopping running jobs");
            for id in ids {
                self.stop_job(id, StopReason::Shutdown);
            }
            self.wait_idle().await;
        }
        let node = self.inner.config.node.clone();
        if let Err(e) = self.inner.pipeline.node_stopped(node).await {
            tracing::warn!(error = %e, "could not record this node's stop");
        }
    }

    async fn wait_idle(&self) {
        loop {
            let notified = self.inner.idle.notified();
            if self.lock_running().jobs.is_empty() {
                return;
            }
            notified.await;
        }
    }

    fn lock_running(&self) -> std::sync::MutexGuard<'_, Running> {
        self.inner.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_secrets(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, BTreeMap<String, String>>> {
        self.inner.secrets.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn state_label(s: JobState) -> Vec<(String, String)> {
    vec![("state".to_string(), s.name().to_string())]
}
