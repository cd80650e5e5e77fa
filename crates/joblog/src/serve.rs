//! `joblog serve`: resolves the configuration (file < environment < flags),
//! starts store, pipeline, engine and API, and stops them in order.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use joblog_api::AppState;
use joblog_core::Backoff;
use joblog_engine::{Engine, EngineConfig};
use joblog_pipeline::{LogLimits, Pipeline, PipelineConfig};
use joblog_store::{GroomPolicy, StoreOptions, SyncMode};

use crate::config::{self, ServeArgs, Settings};

/// The resolved configuration of one node.
#[derive(Debug)]
struct ServeConfig {
    listen: SocketAddr,
    data_dir: PathBuf,
    database: String,
    token: Option<String>,
    sync: SyncMode,
    grace_period: Duration,
    engine: EngineConfig,
    retention: Option<(GroomPolicy, Duration, Duration)>,
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Checks the settings against each other and derives what defaults to
/// other settings (the database from the data dir, the node from the port).
fn resolve(s: Settings) -> anyhow::Result<ServeConfig> {
    let listen = s.listen;
    let token = s.token.filter(|t| !t.is_empty());
    if !listen.ip().is_loopback() && token.is_none() {
        bail!(
            "refusing to listen on {listen} without an API token: set JOBLOG_TOKEN (or token in joblog.toml), or listen on 127.0.0.1"
        );
    }
    let database = s
        .database
        .unwrap_or_else(|| format!("sqlite://{}", s.data_dir.join("joblog.db").display()));
    if s.max_concurrency == 0 || s.max_concurrency > 10_000 {
        bail!(
            "max_concurrency: {} is not between 1 and 10000",
            s.max_concurrency
        );
    }
    if s.heartbeat_timeout < Duration::from_secs(1) {
        bail!("heartbeat_timeout: must be at least 1s");
    }
    if s.log_tail_records as u64 >= s.log_max_records {
        bail!("log.tail_records must be smaller than log.max_records");
    }
    let node = s
        .node
        .unwrap_or_else(|| format!("{}:{}", hostname(), listen.port()));
    let mut engine = EngineConfig::new(node, s.data_dir.clone());
    engine.max_concurrency = s.max_concurrency;
    engine.heartbeat_timeout = s.heartbeat_timeout;
    engine.kill_grace = s.kill_grace;
    engine.log_limits = LogLimits {
        max_records: s.log_max_records,
        max_bytes: s.log_max_bytes.0,
        tail_records: s.log_tail_records,
        ..LogLimits::default()
    };
    let retention = match (s.retention_older_than, s.retention_keep_per_name) {
        (None, None) => None,
        (older, keep) => Some((
            GroomPolicy {
                finished_before: None,
                keep_per_name: keep,
            },
            older.unwrap_or(Duration::ZERO),
            s.retention_every,
        )),
    };
    Ok(ServeConfig {
        listen,
        data_dir: s.data_dir,
        database,
        token,
        sync: s.sync,
        grace_period: s.grace_period,
        engine,
        retention,
    })
}

/// Opens the store and its writer. A database that is not reachable yet
/// (starting at the same time as joblog, say) is waited for, for a minute.
async fn open_store(
    url: &str,
    options: &StoreOptions,
) -> anyhow::Result<(
    Arc<dyn joblog_store::Store>,
    Box<dyn joblog_store::StoreWriter>,
)> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(5));
    loop {
        let opened = joblog_store::open(url, options)
            .and_then(|store| store.open_writer().map(|writer| (store, writer)));
        match opened {
            Ok(pair) => return Ok(pair),
            Err(e) if e.is_transient() && tokio::time::Instant::now() < deadline => {
                let delay = backoff.next_delay();
                tracing::warn!(error = %e, "database not available yet; retrying in {delay:?}");
                tokio::time::sleep(delay).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

pub async fn run(args: ServeArgs, token: Option<String>) -> anyhow::Result<i32> {
    init_tracing();
    let cfg = resolve(config::load(&args, token)?)?;
    std::fs::create_dir_all(&cfg.data_dir)
        .with_context(|| format!("cannot create data directory {}", cfg.data_dir.display()))?;
    let options = StoreOptions {
        sync: cfg.sync,
        readers: 0,
        node: cfg.engine.node.clone(),
    };
    let (store, store_writer) = open_store(&cfg.database, &options).await?;
    let mut registry = prometheus_client::registry::Registry::default();
    let (pipeline, writer) =
        Pipeline::start(store_writer, PipelineConfig::default(), &mut registry);
    let engine = Engine::start(
        store.clone(),
        pipeline.clone(),
        cfg.engine.clone(),
        &mut registry,
    )
    .await?;
    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .with_context(|| format!("cannot listen on {}", cfg.listen))?;
    tracing::info!(
        listen = %cfg.listen,
        store = %store.describe(),
        node = engine.node(),
        max_concurrency = cfg.engine.max_concurrency,
        auth = cfg.token.is_some(),
        "joblog is serving"
    );
    if let Some((policy, older, every)) = cfg.retention {
        tokio::spawn(retention_loop(engine.clone(), policy, older, every));
    }
    let app = joblog_api::app(AppState {
        engine: engine.clone(),
        token: cfg.token.map(Arc::from),
        registry: Arc::new(registry),
    });

    let (stop_http, http_stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = http_stopped.await;
            })
            .await
    });

    let signal = wait_for_signal().await?;
    tracing::info!(signal, grace = ?cfg.grace_period, "stopping: no new jobs");
    // Jobs first, while the API still answers reads (submissions get 503).
    engine.shutdown(cfg.grace_period).await;
    let _ = stop_http.send(());
    // Long polls may hold connections open; do not wait for them for long.
    let _ = tokio::time::timeout(Duration::from_secs(2), server).await;
    pipeline.close();
    tokio::task::spawn_blocking(move || writer.join()).await?;
    tracing::info!("stopped; every record handed over is committed");
    Ok(0)
}

async fn retention_loop(engine: Engine, policy: GroomPolicy, older: Duration, every: Duration) {
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let mut p = policy;
        if !older.is_zero() {
            let older = i64::try_from(older.as_micros()).unwrap_or(i64::MAX);
            p.finished_before = Some(joblog_core::Timestamp::now().micros().saturating_sub(older));
        }
        match engine.groom(p).await {
            Ok(r) if r.jobs_deleted > 0 => tracing::info!(
                jobs = r.jobs_deleted,
                records = r.records_deleted,
                "retention deleted old jobs"
            ),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "retention failed"),
        }
    }
}

async fn wait_for_signal() -> anyhow::Result<&'static str> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    })
}

fn init_tracing() {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("JOBLOG_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let colour = use_colour(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Colour only on a terminal, and never when `NO_COLOR` is set to anything
/// but the empty string (no-color.org): escape codes in a log file or a
/// pipe are noise.
fn use_colour(is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    is_terminal && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(use_colour(true, None));
        assert!(use_colour(true, Some(OsStr::new(""))));
        assert!(!use_colour(true, Some(OsStr::new("1"))));
        assert!(!use_colour(false, None));
    }
}
