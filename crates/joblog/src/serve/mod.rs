//! `joblog serve`: resolves the configuration (file < environment < flags),
//! starts store, pipeline, engine and API, and stops them in order.
//! `secrets` keeps the server's secrets from its jobs; `resolve` turns
//! settings into a node's configuration; `lock` keeps a second server off
//! the data directory and SQLite file; `logs` runs the server's own logs.

mod lock;
mod logs;
mod perms;
pub(crate) mod resolve;
mod run_as;
mod secrets;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use joblog_api::AppState;
use joblog_core::Backoff;
use joblog_engine::Engine;
use joblog_pipeline::{Pipeline, PipelineConfig};
use joblog_store::{GroomPolicy, ReadWait, StoreOptions};

use crate::config::{self, ServeArgs};
use resolve::resolve;
pub use secrets::{take_environment, Environment};

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

pub async fn run(args: ServeArgs, env: Environment) -> anyhow::Result<i32> {
    let (settings, sources) = config::load(&args, |var| env.get(var))?;
    let mut cfg = resolve(settings)?;
    cfg.engine.node_secrets = env.node_secrets();
    cfg.engine.node_secret_scopes = env.node_secret_scopes();
    // Before anything is created: jobs' environments and output are in
    // these files, and other local users must not read them.
    cfg.engine.job_umask = Some(perms::private_umask());
    perms::create_data_dir(&cfg.data_dir)
        .with_context(|| format!("cannot create data directory {}", cfg.data_dir.display()))?;
    // Before the store is opened or any job recovered: a second server
    // would mark this one's running jobs interrupted. Held until exit.
    let _locks = lock::take(&cfg.data_dir, cfg.sqlite_file.as_deref(), cfg.listen)?;
    // After the lock: a second server must not rotate this one's files.
    let logs = logs::start(&cfg)?;
    // The first line: a stray ./joblog.toml or a forgotten variable shows.
    tracing::info!("{sources}");
    // Names only, never values: which secrets this node gives schedules,
    // and to which (JOBLOG_SECRET_* are taken out of the environment at
    // start, so the line above does not show them).
    if !cfg.engine.node_secrets.is_empty() {
        let held: Vec<String> = cfg
            .engine
            .node_secrets
            .keys()
            .map(|name| match cfg.engine.node_secret_scopes.get(name) {
                Some(scope) if !scope.is_empty() => format!("{name} (to {})", scope.join(", ")),
                _ => format!("{name} (to no schedule: set JOBLOG_ALLOW_SECRET_{name})"),
            })
            .collect();
        tracing::info!("secrets for schedules: {}", held.join("; "));
    }
    if sources.has_flag("token") {
        tracing::warn!(
            "the API token was given with --token: every user of this host can read it in `ps`; keep it in a file of mode 0600 and use --token-file (or token_file in joblog.toml)"
        );
    }
    let mut private = vec![cfg.data_dir.as_path()];
    private.extend(cfg.sqlite_file.as_deref());
    perms::warn_if_open(&private);
    match &cfg.engine.run_as {
        Some(user) => {
            let logs_dir = cfg.logging.dir.clone().unwrap_or(cfg.data_dir.join("logs"));
            let mut kept: Vec<&std::path::Path> = vec![&cfg.data_dir, &logs_dir];
            kept.extend(cfg.sqlite_file.as_deref());
            kept.extend(cfg.token_file.as_deref());
            // The configuration file when it holds a secret (it is
            // usually readable by all, and holds none).
            kept.extend(sources.config_file().filter(|f| run_as::holds_secret(f)));
            run_as::check(user, &kept)?;
            tracing::info!(user = user.name, uid = user.uid, "jobs run as {}", user.name);
        }
        None if nix::unistd::geteuid().is_root() => tracing::warn!(
            "the server runs as root and so do its jobs: any job can read the database, the tokens and every secret; set jobs.run_as (--run-as) to another user"
        ),
        None => {}
    }
    // Loaded before anything starts: a bad certificate stops the server
    // at once, with the reason.
    let tls = match &cfg.tls {
        Some((cert, key)) => Some(crate::tls::Acceptor::load(cert, key)?),
        None => None,
    };
    let open_files = crate::http::raise_open_files_limit();
    if (cfg.http.max_connections as u64).saturating_add(256) > open_files {
        tracing::warn!(
            max_connections = cfg.http.max_connections,
            open_files,
            "http.max_connections is close to the limit on open files; connections may fail before it is reached"
        );
    }
    let mut registry = prometheus_client::registry::Registry::default();
    let options = StoreOptions {
        sync: cfg.sync,
        readers: 0,
        node: cfg.engine.node.clone(),
        read_wait: Some(read_wait_metric(&mut registry)),
        vfs: None,
    };
    let (store, store_writer) = open_store(&cfg.database, &options).await?;
    let (pipeline, writer) =
        Pipeline::start(store_writer, PipelineConfig::default(), &mut registry);
    logs.store_audit_in(pipeline.clone());
    logs.oplog.register_metrics(&mut registry);
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
        auth = cfg.api.token.is_some(),
        tls = tls.is_some(),
        "joblog is serving"
    );
    if !cfg.listen.ip().is_loopback() && tls.is_none() {
        tracing::warn!(
            listen = %cfg.listen,
            "serving plain HTTP on a network address: tokens and job output cross the network in clear text; set tls_cert and tls_key, or put a TLS proxy in front"
        );
    }
    logs.reload_on_sighup(args.clone(), Arc::new(env))?;
    if let Some(tls) = &tls {
        tls.reload_on_sighup()?;
    }
    if let Some((policy, older, every)) = cfg.retention {
        tokio::spawn(retention_loop(engine.clone(), policy, older, every));
    }
    if let Some((older, every)) = cfg.audit_retention {
        tokio::spawn(audit_retention_loop(pipeline.clone(), older, every));
    }
    let app = joblog_api::app(
        AppState::new(engine.clone(), registry, &cfg.api).with_oplog(logs.oplog.clone()),
    );

    let (stop_http, http_stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(crate::http::serve(
        listener,
        app,
        cfg.http.clone(),
        tls,
        async {
            let _ = http_stopped.await;
        },
    ));

    let signal = wait_for_signal().await?;
    tracing::info!(signal, grace = ?cfg.grace_period, "stopping: no new jobs");
    // Jobs first, while the API still answers reads (submissions get 503).
    engine.shutdown(cfg.grace_period).await;
    let _ = stop_http.send(());
    // Long polls may hold connections open: the server gives them a moment.
    let _ = tokio::time::timeout(Duration::from_secs(5), server).await;
    // The audit entries still queued go to the store before it closes.
    let oplog = logs.oplog.clone();
    tokio::task::spawn_blocking(move || oplog.flush(Duration::from_secs(10))).await?;
    pipeline.close();
    tokio::task::spawn_blocking(move || writer.join()).await?;
    tracing::info!("stopped; every record handed over is committed");
    let oplog = logs.oplog.clone();
    tokio::task::spawn_blocking(move || oplog.shutdown(Duration::from_secs(10))).await?;
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
                audit = "job.groomed",
                jobs = r.jobs_deleted,
                records = r.records_deleted,
                "retention deleted {} old jobs",
                r.jobs_deleted
            ),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "retention failed"),
        }
    }
}

/// Deletes audit entries older than `older` every `every`, a chunk at a
/// time through the writer (each a short transaction).
async fn audit_retention_loop(pipeline: Pipeline, older: Duration, every: Duration) {
    const CHUNK: u32 = 5_000;
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let older = i64::try_from(older.as_micros()).unwrap_or(i64::MAX);
        let before =
            joblog_core::Timestamp(joblog_core::Timestamp::now().micros().saturating_sub(older));
        let mut deleted = 0;
        loop {
            match pipeline.delete_audit(before, CHUNK).await {
                Ok(n) => {
                    deleted += n;
                    if n < u64::from(CHUNK) {
                        break;
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "audit retention failed");
                    break;
                }
            }
        }
        if deleted > 0 {
            tracing::info!(
                audit = "audit.groomed",
                entries = deleted,
                "audit retention deleted {deleted} entries older than {}",
                in_days(Duration::from_micros(older.unsigned_abs()))
            );
        }
    }
}

/// `365 days` rather than humantime's months of 30.44 days.
fn in_days(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 86_400 && secs.is_multiple_of(86_400) {
        format!("{} days", secs / 86_400)
    } else {
        humantime::format_duration(Duration::from_secs(secs)).to_string()
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

/// `joblog_store_read_wait_seconds`: how long reads wait for a connection
/// of the store's read pool. Near zero while requests do not fight over
/// the pool (`joblog bench dispatch` reports it).
fn read_wait_metric(registry: &mut prometheus_client::registry::Registry) -> ReadWait {
    use prometheus_client::metrics::histogram::Histogram;
    // 10 µs to about 2.6 s.
    let histogram = Histogram::new(joblog_core::exponential_buckets(0.000_01, 4.0, 10));
    registry.register(
        "joblog_store_read_wait_seconds",
        "Time a read waited for a connection of the store's read pool",
        histogram.clone(),
    );
    ReadWait(std::sync::Arc::new(move |d: std::time::Duration| {
        histogram.observe(d.as_secs_f64())
    }))
}
