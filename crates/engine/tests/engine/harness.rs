//! A node for the engine's tests; the waits they make are the kit's.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use joblog_core::Timestamp;
use joblog_engine::{Clock, Engine, EngineConfig};
use joblog_pipeline::{Pipeline, PipelineConfig, WriterThread};
use joblog_store::sqlite::SqliteStore;
use joblog_store::{Store, StoreOptions};

pub use joblog_testkit::{eventually, PATIENCE};

/// A clock a test moves by hand: whatever sleeps on it wakes once the
/// test sets it at or past the time it waits for.
pub struct ManualClock {
    now: tokio::sync::watch::Sender<Timestamp>,
}

impl ManualClock {
    pub fn set(&self, t: Timestamp) {
        self.now.send_replace(t);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.now.borrow()
    }

    fn sleep_until(&self, at: Timestamp) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let mut now = self.now.subscribe();
        Box::pin(async move {
            let _ = now.wait_for(|t| *t >= at).await;
        })
    }
}

/// One node: its engine on a SQLite file, by a manual clock. Fields drop
/// in order: the directory goes last.
pub struct Node {
    pub engine: Engine,
    pub store: Arc<dyn Store>,
    pub clock: Arc<ManualClock>,
    pipeline: Pipeline,
    writer: Option<WriterThread>,
    _dir: tempfile::TempDir,
}

impl Node {
    /// A node whose clock reads `now`.
    pub async fn start(now: Timestamp) -> Node {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(
            SqliteStore::open(dir.path().join("joblog.db"), &StoreOptions::default()).unwrap(),
        );
        let mut registry = prometheus_client::registry::Registry::default();
        let (pipeline, writer) = Pipeline::start(
            store.open_writer().unwrap(),
            PipelineConfig::default(),
            &mut registry,
        );
        let clock = Arc::new(ManualClock {
            now: tokio::sync::watch::channel(now).0,
        });
        let config = EngineConfig::new("test-node".into(), dir.path().to_path_buf());
        let engine = Engine::start_with_clock(
            store.clone(),
            pipeline.clone(),
            config,
            &mut registry,
            clock.clone(),
        )
        .await
        .unwrap();
        Node {
            engine,
            store,
            clock,
            pipeline,
            writer: Some(writer),
            _dir: dir,
        }
    }

    /// Stops the node in order: jobs, then the pipeline, then its writer.
    pub async fn shutdown(mut self) {
        self.engine.shutdown(Duration::from_secs(10)).await;
        self.pipeline.close();
        if let Some(writer) = self.writer.take() {
            tokio::task::spawn_blocking(move || writer.join())
                .await
                .unwrap();
        }
    }
}
