//! The server's own logs in `joblog serve`: started from the `[logging]`
//! settings before anything else logs, installed as the `tracing`
//! subscriber, given the store once it is open (for the audit log), read
//! again on SIGHUP, and flushed on a panic and at the end.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use joblog_oplog::open::{opener, Resources};
use joblog_oplog::sinks::database::{AuditDb, AuditWriter};
use joblog_oplog::sinks::SystemClock;
use joblog_oplog::{LoggingConfig, Oplog, OplogOptions, AUDIT_FIELD, UNIT_FIELD};
use joblog_pipeline::Pipeline;

use super::resolve::ServeConfig;
use super::Environment;
use crate::config::{self, ServeArgs};

/// The logs, and where their audit entries will be stored.
pub(super) struct Logs {
    pub(super) oplog: Oplog,
    audit_db: AuditDb,
}

/// Starts the logs and makes them the process's `tracing` subscriber,
/// filtered by `JOBLOG_LOG` (default `info`). An invalid `[logging]`
/// section, or a sink that cannot open (an unwritable directory), stops
/// the server with the reason.
pub(super) fn start(cfg: &ServeConfig) -> anyhow::Result<Logs> {
    use tracing_subscriber::filter::{filter_fn, FilterExt};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let audit_db = AuditDb::default();
    let resources = Resources {
        clock: Arc::new(SystemClock),
        audit_db: audit_db.clone(),
    };
    let options = OplogOptions {
        default_dir: cfg.data_dir.join("logs"),
        node: cfg.engine.node.clone(),
        opener: opener(resources),
    };
    let oplog =
        Oplog::start(cfg.logging.clone(), options).context("cannot start the server's logs")?;
    let level = EnvFilter::try_from_env("JOBLOG_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    // Whatever JOBLOG_LOG says, operation units (the access log) and
    // audit events are always captured: the level is for diagnostics,
    // not for what the server must account for.
    let accounted = filter_fn(|meta| {
        let fields = meta.fields();
        fields.field(UNIT_FIELD).is_some() || fields.field(AUDIT_FIELD).is_some()
    });
    // Only the first subscriber of a process counts (tests may start
    // servers in one process; the binary starts one).
    let _ = tracing_subscriber::registry()
        .with(oplog.layer().with_filter(level.or(accounted)))
        .try_init();
    log_panics(oplog.clone());
    Ok(Logs { oplog, audit_db })
}

/// A panic is logged (error log, with where it happened) and the logs
/// flushed, besides Rust's own message on stderr.
fn log_panics(oplog: Oplog) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        let thread = std::thread::current();
        tracing::error!(
            thread = thread.name().unwrap_or("unnamed"),
            location = info.location().map(ToString::to_string),
            "panic: {}",
            panic_message(info)
        );
        oplog.flush(Duration::from_secs(2));
    }));
}

fn panic_message(info: &std::panic::PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Stores audit entries through the log pipeline, from a sink's thread.
struct PipelineAudit {
    pipeline: Pipeline,
    runtime: tokio::runtime::Handle,
}

impl AuditWriter for PipelineAudit {
    fn append_audit(&self, entries: Vec<joblog_core::NewAudit>) -> std::io::Result<()> {
        self.runtime
            .block_on(self.pipeline.append_audit(entries))
            .map_err(std::io::Error::other)
    }
}

impl Logs {
    /// From now on the audit log is stored in the database too.
    pub(super) fn store_audit_in(&self, pipeline: Pipeline) {
        let writer: Arc<dyn AuditWriter> = Arc::new(PipelineAudit {
            pipeline,
            runtime: tokio::runtime::Handle::current(),
        });
        let _ = self.audit_db.set(writer);
    }

    /// On each SIGHUP: reads the `[logging]` section again (from the same
    /// file, environment and flags) and applies it if it changed, then
    /// has every sink reopen its file (logrotate moved it).
    pub(super) fn reload_on_sighup(
        &self,
        args: ServeArgs,
        env: Arc<Environment>,
    ) -> anyhow::Result<()> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hup = signal(SignalKind::hangup()).context("cannot listen for SIGHUP")?;
        let oplog = self.oplog.clone();
        tokio::spawn(async move {
            while hup.recv().await.is_some() {
                let args = args.clone();
                let env = env.clone();
                let oplog2 = oplog.clone();
                let applied = tokio::task::spawn_blocking(move || {
                    let config = read_logging(&args, &env)?;
                    oplog2.reconfigure(config).map_err(anyhow::Error::from)
                })
                .await;
                match applied {
                    Ok(Ok(true)) => tracing::info!(
                        audit = "config.changed",
                        section = "logging",
                        source = "SIGHUP",
                        "SIGHUP: logging configuration changed"
                    ),
                    Ok(Ok(false)) => {}
                    Ok(Err(e)) => tracing::error!(
                        error = format!("{e:#}"),
                        "SIGHUP: logging configuration refused; the one in force stays"
                    ),
                    Err(e) => {
                        tracing::error!(error = %e, "SIGHUP: reading the logging configuration failed")
                    }
                }
                oplog.reopen();
            }
        });
        Ok(())
    }
}

/// The `[logging]` settings as the layers give them now.
fn read_logging(args: &ServeArgs, env: &Environment) -> anyhow::Result<LoggingConfig> {
    let (settings, _) = config::load(args, |var| env.get(var))?;
    super::resolve::logging(&settings)
}
