//! `joblog serve`: resolves the configuration (file < environment < flags),
//! starts store, pipeline, engine and API, and stops them in order.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use joblog_api::AppState;
use joblog_core::Backoff;
use joblog_engine::{Engine, EngineConfig};
use joblog_pipeline::{LogLimits, Pipeline, PipelineConfig};
use joblog_store::{GroomPolicy, StoreOptions, SyncMode};
use serde::Deserialize;

#[derive(Args, Debug, Default)]
pub struct ServeArgs {
    /// Address to listen on (a non-loopback address needs an API token).
    #[arg(long, env = "JOBLOG_LISTEN")]
    pub listen: Option<String>,
    /// Directory for the SQLite database and result files.
    #[arg(long, env = "JOBLOG_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Database URL; default sqlite://<data-dir>/joblog.db.
    #[arg(long, env = "JOBLOG_DATABASE_URL", hide_env_values = true)]
    pub database: Option<String>,
    /// Jobs run at once on this node.
    #[arg(long, env = "JOBLOG_MAX_CONCURRENCY")]
    pub max_concurrency: Option<usize>,
    /// This node's name, stored with the jobs it runs; default
    /// hostname:port, so that two nodes on one host differ.
    #[arg(long, env = "JOBLOG_NODE")]
    pub node: Option<String>,
    /// With PostgreSQL: a node silent for this long (e.g. 30s) is taken for
    /// dead and its running jobs are marked interrupted.
    #[arg(long, env = "JOBLOG_HEARTBEAT_TIMEOUT")]
    pub heartbeat_timeout: Option<String>,
    /// Configuration file; default ./joblog.toml when it exists.
    #[arg(long, env = "JOBLOG_CONFIG")]
    pub config: Option<PathBuf>,
    /// SQLite durability: normal (survives a crash of joblog) or full
    /// (survives power loss).
    #[arg(long, env = "JOBLOG_SYNC")]
    pub sync: Option<String>,
    /// On SIGTERM/SIGINT, how long running jobs may go on before they are
    /// stopped (e.g. 30s).
    #[arg(long, env = "JOBLOG_GRACE_PERIOD")]
    pub grace_period: Option<String>,
}

/// `joblog.toml`. Every key is optional; unknown keys are an error so that
/// a typo does not silently fall back to a default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    data_dir: Option<PathBuf>,
    database: Option<String>,
    max_concurrency: Option<usize>,
    node: Option<String>,
    heartbeat_timeout: Option<String>,
    token: Option<String>,
    sync: Option<String>,
    grace_period: Option<String>,
    kill_grace: Option<String>,
    #[serde(default)]
    log: LogConfig,
    #[serde(default)]
    retention: RetentionConfig,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LogConfig {
    max_records: Option<u64>,
    max_bytes: Option<u64>,
    tail_records: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RetentionConfig {
    older_than: Option<String>,
    keep_per_name: Option<u32>,
    every: Option<String>,
}

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

fn load_file(args: &ServeArgs) -> anyhow::Result<FileConfig> {
    let (path, required) = match &args.config {
        Some(p) => (p.clone(), true),
        None => (PathBuf::from("joblog.toml"), false),
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => toml::from_str(&text)
            .with_context(|| format!("invalid configuration file {}", path.display())),
        Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => {
            Ok(FileConfig::default())
        }
        Err(e) => {
            Err(e).with_context(|| format!("cannot read configuration file {}", path.display()))
        }
    }
}

fn duration(what: &str, s: &str) -> anyhow::Result<Duration> {
    joblog_core::parse_duration(s).map_err(|e| anyhow::anyhow!("{what}: {e}"))
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

fn resolve(args: ServeArgs, token: Option<String>) -> anyhow::Result<ServeConfig> {
    let file = load_file(&args)?;
    let listen_text = args
        .listen
        .or(file.listen)
        .unwrap_or_else(|| "127.0.0.1:7878".into());
    let listen: SocketAddr = listen_text.parse().with_context(|| {
        format!("listen: {listen_text:?} is not an address like 127.0.0.1:7878")
    })?;
    let token = token.or(file.token).filter(|t| !t.is_empty());
    if !listen.ip().is_loopback() && token.is_none() {
        bail!(
            "refusing to listen on {listen} without an API token: set JOBLOG_TOKEN (or token in joblog.toml), or listen on 127.0.0.1"
        );
    }
    let data_dir = args
        .data_dir
        .or(file.data_dir)
        .unwrap_or_else(|| PathBuf::from("joblog-data"));
    let database = args
        .database
        .or(file.database)
        .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("joblog.db").display()));
    let sync_text = args.sync.or(file.sync).unwrap_or_else(|| "normal".into());
    let sync = SyncMode::parse(&sync_text)
        .with_context(|| format!("sync: {sync_text:?} is not normal or full"))?;
    let max_concurrency = args.max_concurrency.or(file.max_concurrency).unwrap_or(16);
    if max_concurrency == 0 || max_concurrency > 10_000 {
        bail!("max-concurrency: {max_concurrency} is not between 1 and 10000");
    }
    let grace_period = duration(
        "grace-period",
        &args
            .grace_period
            .or(file.grace_period)
            .unwrap_or_else(|| "30s".into()),
    )?;
    let node = args
        .node
        .or(file.node)
        .unwrap_or_else(|| format!("{}:{}", hostname(), listen.port()));
    let mut engine = EngineConfig::new(node, data_dir.clone());
    engine.max_concurrency = max_concurrency;
    engine.heartbeat_timeout = duration(
        "heartbeat-timeout",
        &args
            .heartbeat_timeout
            .or(file.heartbeat_timeout)
            .unwrap_or_else(|| "30s".into()),
    )?;
    if engine.heartbeat_timeout < Duration::from_secs(1) {
        bail!("heartbeat-timeout: must be at least 1s");
    }
    if let Some(k) = file.kill_grace {
        engine.kill_grace = duration("kill_grace", &k)?;
    }
    let defaults = LogLimits::default();
    engine.log_limits = LogLimits {
        max_records: file.log.max_records.unwrap_or(defaults.max_records),
        max_bytes: file.log.max_bytes.unwrap_or(defaults.max_bytes),
        tail_records: file.log.tail_records.unwrap_or(defaults.tail_records),
        ..defaults
    };
    if engine.log_limits.tail_records as u64 >= engine.log_limits.max_records {
        bail!("log.tail_records must be smaller than log.max_records");
    }
    let retention = match (&file.retention.older_than, file.retention.keep_per_name) {
        (None, None) => None,
        (older, keep) => {
            let older = older
                .as_deref()
                .map(|o| duration("retention.older_than", o))
                .transpose()?;
            let every = duration(
                "retention.every",
                file.retention.every.as_deref().unwrap_or("1h"),
            )?;
            Some((
                GroomPolicy {
                    finished_before: None,
                    keep_per_name: keep,
                },
                older.unwrap_or(Duration::ZERO),
                every,
            ))
        }
    };
    Ok(ServeConfig {
        listen,
        data_dir,
        database,
        token,
        sync,
        grace_period,
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
    let cfg = resolve(args, token)?;
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
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("JOBLOG_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
