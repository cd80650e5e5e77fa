//! Starting an engine: recovery of what an earlier process of this node
//! left (jobs marked interrupted, processes killed), registration of the
//! node, and the tasks that run for its life.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use joblog_pipeline::Pipeline;
use joblog_store::Store;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

use crate::dispatch::Dispatcher;
use crate::metrics::Metrics;
use crate::running::Jobs;
use crate::scheduler::Scheduler;
use crate::sweeps::{Sweeps, ORPHAN_SWEEP};
use crate::{
    nodes, notify, orphans, sealer, Clock, Engine, EngineConfig, EngineError, Inner, SystemClock,
};

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
                config.labels.clone(),
                config.paused_at_start,
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
        let metrics = Metrics::register(registry, config.max_concurrency);
        let sealer = sealer::Sealer::new(config.seal, registry);
        let notifier = notify::Notifier::new(&config.notify, registry)?;
        let engine = Engine {
            inner: Arc::new(Inner {
                store,
                pipeline,
                dispatcher: Dispatcher::new(config.max_concurrency),
                config,
                accepting: AtomicBool::new(true),
                admission: Default::default(),
                shutdown: watch::channel(false).0,
                jobs: Jobs::default(),
                sweeps: Sweeps::new(orphans),
                scheduler: Scheduler::default(),
                metrics,
                clock,
                sealer,
                notifier,
                revocations: watch::channel(0).0,
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
        tokio::spawn(engine.clone().notify_loop());
        Ok(engine)
    }
}
