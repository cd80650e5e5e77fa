//! `joblog serve`: resolves the configuration (file < environment < flags),
//! starts store, pipeline, engine and API, and stops them in order.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use joblog_api::limits::Limits;
use joblog_api::{ApiOptions, AppState};
use joblog_core::Backoff;
use joblog_engine::{Engine, EngineConfig};
use joblog_pipeline::{LogLimits, Pipeline, PipelineConfig};
use joblog_store::{GroomPolicy, StoreOptions, SyncMode};

use crate::config::{self, GlobalSecrets, ServeArgs, Settings};
use crate::http::HttpLimits;

/// Shortest bootstrap token accepted: 32 characters of a random token are
/// at least 128 bits however they are written.
const MIN_TOKEN_CHARS: usize = 32;

/// Environment variables that hold the server's secrets. They are read
/// once, then removed from the process's environment, so that nothing the
/// server starts inherits them.
const SECRET_VARS: &[&str] = &["JOBLOG_TOKEN", "JOBLOG_DATABASE_URL"];

/// The `JOBLOG_*` environment as it was when the server started.
#[derive(Debug, Default)]
pub struct Environment(std::collections::HashMap<String, String>);

impl Environment {
    fn get(&self, var: &str) -> Option<String> {
        self.0.get(var).cloned()
    }
}

/// Takes the server's environment before any thread starts: keeps a copy
/// of the `JOBLOG_*` variables, removes the secret ones from the process,
/// and makes the process non-dumpable, which makes `/proc/<pid>/environ`
/// (the environment as it was at exec, secrets included), `mem` and `fd`
/// readable by root only, not by the server's own jobs. Must run before
/// the runtime starts threads (changing the environment is not thread
/// safe).
pub fn take_environment() -> Environment {
    let vars = std::env::vars()
        .filter(|(k, _)| k.starts_with("JOBLOG_"))
        .collect();
    for var in SECRET_VARS {
        std::env::remove_var(var);
    }
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        eprintln!(
            "joblog: warning: cannot hide the process's memory and environment from jobs: {e}"
        );
    }
    Environment(vars)
}

/// The resolved configuration of one node.
#[derive(Debug)]
struct ServeConfig {
    listen: SocketAddr,
    data_dir: PathBuf,
    database: String,
    api: ApiOptions,
    http: HttpLimits,
    /// Certificate and key files, for HTTPS.
    tls: Option<(PathBuf, PathBuf)>,
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
    let token = bootstrap_token(s.token.clone(), s.token_file.as_deref())?;
    if !listen.ip().is_loopback() && token.is_none() {
        bail!(
            "refusing to listen on {listen} without an API token: set token_file (or JOBLOG_TOKEN), or listen on 127.0.0.1"
        );
    }
    if s.retention_every < Duration::from_secs(1) {
        bail!("retention.every: must be at least 1s");
    }
    if s.log_max_bytes.0 < 1024 {
        bail!("log.max_bytes: must be at least 1KiB");
    }
    let tls = match (s.tls_cert.clone(), s.tls_key.clone()) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => bail!("tls_cert and tls_key go together: set both, or neither"),
    };
    let (http, limits) = http_limits(&s)?;
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
    engine.max_queued = s.max_queued;
    engine.server_secrets = token
        .iter()
        .cloned()
        .chain(database_password(&database))
        .collect();
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
        api: ApiOptions {
            token,
            allowed_hosts: s.allowed_hosts.0,
            limits,
        },
        http,
        tls,
        sync: s.sync,
        grace_period: s.grace_period,
        engine,
        retention,
    })
}

/// The limits on connections and requests, each checked for a value that
/// would make the server unusable.
fn http_limits(s: &Settings) -> anyhow::Result<(HttpLimits, Limits)> {
    let at_least = |name: &str, value: u64, min: u64, unit: &str| {
        if value < min {
            bail!("{name}: must be at least {min}{unit}");
        }
        Ok(())
    };
    at_least("max_queued", s.max_queued, 1, "")?;
    at_least("http.max_connections", s.http_max_connections as u64, 1, "")?;
    at_least(
        "http.max_header_bytes",
        s.http_max_header_bytes.0,
        8192,
        " bytes",
    )?;
    at_least("http.max_uri_bytes", s.http_max_uri_bytes.0, 256, " bytes")?;
    at_least(
        "http.max_body_bytes",
        s.http_max_body_bytes.0,
        1024,
        " bytes",
    )?;
    at_least("http.max_viewers", s.http_max_viewers as u64, 1, "")?;
    at_least(
        "http.max_viewers_per_job",
        s.http_max_viewers_per_job as u64,
        1,
        "",
    )?;
    if s.http_header_read_timeout < Duration::from_secs(1) {
        bail!("http.header_read_timeout: must be at least 1s");
    }
    // A long poll may wait 30 s for records: the timeout must let it.
    if s.http_request_timeout <= Duration::from_secs(30) {
        bail!("http.request_timeout: must be more than 30s (a long poll waits up to 30s)");
    }
    let size = |b: crate::config::value::ByteSize| usize::try_from(b.0).unwrap_or(usize::MAX);
    Ok((
        HttpLimits {
            max_connections: s.http_max_connections,
            header_read_timeout: s.http_header_read_timeout,
            max_header_bytes: size(s.http_max_header_bytes),
        },
        Limits {
            request_timeout: s.http_request_timeout,
            max_uri_bytes: size(s.http_max_uri_bytes),
            max_body_bytes: size(s.http_max_body_bytes),
            max_viewers: s.http_max_viewers,
            max_viewers_per_job: s.http_max_viewers_per_job,
        },
    ))
}

/// The bootstrap token from `token` or the first line of `token_file`
/// (not both), at least [`MIN_TOKEN_CHARS`] long. Errors never quote it.
fn bootstrap_token(
    token: Option<String>,
    file: Option<&std::path::Path>,
) -> anyhow::Result<Option<String>> {
    let token = match (token.filter(|t| !t.is_empty()), file) {
        (Some(_), Some(_)) => bail!("token and token_file are both set; keep one"),
        (Some(t), None) => t,
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("token_file: cannot read {}", path.display()))?;
            let line = text.lines().next().unwrap_or("").trim().to_string();
            if line.is_empty() {
                bail!("token_file: {} is empty", path.display());
            }
            line
        }
        (None, None) => return Ok(None),
    };
    if token.chars().count() < MIN_TOKEN_CHARS {
        bail!(
            "the API token is {} characters; it must be at least {MIN_TOKEN_CHARS} (make one with `openssl rand -base64 32`)",
            token.chars().count()
        );
    }
    if token.chars().any(|c| c.is_control() || c == ' ') {
        bail!("the API token must not contain spaces or control characters");
    }
    Ok(Some(token))
}

/// The password of a `postgres://user:password@…` URL, to be masked in
/// jobs' logs.
fn database_password(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let userinfo = &rest[..rest.rfind('@')?];
    let password = userinfo.split_once(':')?.1;
    (!password.is_empty()).then(|| password.to_string())
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

pub async fn run(args: ServeArgs, global: GlobalSecrets, env: Environment) -> anyhow::Result<i32> {
    init_tracing();
    let cfg = resolve(config::load(&args, global, |var| env.get(var))?)?;
    std::fs::create_dir_all(&cfg.data_dir)
        .with_context(|| format!("cannot create data directory {}", cfg.data_dir.display()))?;
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
    if let Some(tls) = &tls {
        tls.reload_on_sighup()?;
    }
    if let Some((policy, older, every)) = cfg.retention {
        tokio::spawn(retention_loop(engine.clone(), policy, older, every));
    }
    let app = joblog_api::app(AppState::new(engine.clone(), registry, &cfg.api));

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
    fn the_bootstrap_token_is_long_from_one_place_and_never_quoted() {
        let long = "x".repeat(40);
        assert_eq!(
            bootstrap_token(Some(long.clone()), None).unwrap(),
            Some(long.clone())
        );
        assert_eq!(bootstrap_token(Some(String::new()), None).unwrap(), None);
        let e = bootstrap_token(Some("hunter2".into()), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 32") && !e.contains("hunter2"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, format!("{long}\n")).unwrap();
        assert_eq!(
            bootstrap_token(None, Some(&file)).unwrap(),
            Some(long.clone())
        );
        let e = bootstrap_token(Some(long), Some(&file))
            .unwrap_err()
            .to_string();
        assert!(e.contains("both"), "{e}");
        let e = format!(
            "{:#}",
            bootstrap_token(None, Some(&dir.path().join("none"))).unwrap_err()
        );
        assert!(e.contains("token_file: cannot read"), "{e}");
    }

    /// Values that would panic a task or make the server unusable are
    /// refused at load, naming the setting.
    #[test]
    fn unusable_values_are_refused_at_load_naming_the_setting() {
        use crate::config::layers::{Layers, Origin};
        let resolve_with = |pairs: &[(&'static str, &str)]| {
            let mut layers = Layers::default();
            for (key, value) in pairs {
                layers.give(key, value.to_string(), Origin::Flag("test"));
            }
            resolve(Settings::resolve(&layers).unwrap()).map(|_| ())
        };
        assert!(resolve_with(&[]).is_ok());
        for (pairs, named) in [
            (&[("retention.every", "0s")][..], "retention.every"),
            (
                &[("http.request_timeout", "30s")][..],
                "http.request_timeout",
            ),
            (
                &[("http.header_read_timeout", "0s")][..],
                "http.header_read_timeout",
            ),
            (&[("http.max_connections", "0")][..], "http.max_connections"),
            (
                &[("http.max_header_bytes", "1KiB")][..],
                "http.max_header_bytes",
            ),
            (&[("max_queued", "0")][..], "max_queued"),
            (&[("log.max_bytes", "10")][..], "log.max_bytes"),
            (&[("tls_cert", "/x.pem")][..], "tls_cert and tls_key"),
        ] {
            let e = resolve_with(pairs).unwrap_err().to_string();
            assert!(e.contains(named), "{pairs:?}: {e}");
        }
    }

    #[test]
    fn a_database_password_is_found_for_masking() {
        assert_eq!(
            database_password("postgres://u:p%40ss@h:5432/db"),
            Some("p%40ss".into())
        );
        assert_eq!(database_password("postgres://u@h/db"), None);
        assert_eq!(database_password("sqlite:///x/joblog.db"), None);
    }

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(use_colour(true, None));
        assert!(use_colour(true, Some(OsStr::new(""))));
        assert!(!use_colour(true, Some(OsStr::new("1"))));
        assert!(!use_colour(false, None));
    }
}
