//! The shared store: PostgreSQL, for teams and for several nodes on one
//! queue. Reads use a small pool of async connections; the single writer of
//! each node commits batches with one binary `COPY` of all their records;
//! commits are announced with `NOTIFY` so that every node can follow every
//! job live.
//!
//! Invariants: the log table is partitioned by job-id range, so retention
//! drops whole partitions; a queued job is claimed by exactly one node
//! (`FOR UPDATE SKIP LOCKED`); every write transaction stamps its node's row
//! with a batch marker, so that a commit whose acknowledgement was lost to a
//! dropped connection is recognised on retry and never applied twice.
//!
//! This module ties the parts together behind [`Store`], laid out as the
//! SQLite store is: `schema` migrates at open, `pool` serves reads, `conn`
//! runs the shared logic of `crate::db` on a read connection or the
//! writer's transaction, `writer` applies batches (with the statements of
//! `sql` that are PostgreSQL's own), `jobs` queues and claims jobs;
//! `audit`, `schedules` and `sealed` hold their tables and what
//! PostgreSQL writes its own way. Beyond SQLite's: `listener` hears the
//! commits of other nodes, `partitions` creates and drops the log's
//! job-id ranges, `notices` drives connections, logging the server's
//! notices at their weight, `tls` makes its TLS, and `dbname` names
//! another database of the server (for throwaway ones).

mod audit;
mod conn;
// Used only by throwaway databases (tests, benchmarks).
#[cfg(any(test, feature = "testing", feature = "bench"))]
pub(crate) mod dbname;
pub(crate) mod jobs;
mod listener;
pub(crate) mod notices;
pub(crate) mod partitions;
mod pool;
mod schedules;
mod schema;
mod sealed;
mod sql;
mod tls;
pub(crate) mod writer;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use joblog_core::schedule::{Schedule, ScheduleId};
use joblog_core::{
    AuditEntry, AuditQuery, EarlierPage, Job, JobId, JobQuery, LogOutline, LogSearch, NodeInfo,
    Record, SearchHits, Stream, Timestamp, TokenInfo,
};
use tokio::sync::broadcast;
use tokio_postgres::config::Host;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{Client, Config, Socket};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::pg_message;
use crate::store_impl::store_impl;
use crate::{Committed, GroomPolicy, Result, Snapshot, StoreError, StoreOptions, StoreWriter};
use pool::Pool;
use writer::PgWriter;

pub use partitions::PARTITION_JOBS;

/// A PostgreSQL database that several nodes may share.
pub struct PgStore {
    target: Target,
    description: String,
    node: String,
    pool: Arc<Pool>,
}

impl PgStore {
    /// Connects, brings the schema up to date and prepares the read pool.
    /// Works from any thread, inside a tokio runtime or not.
    pub fn open(url: &str, options: &StoreOptions) -> Result<Self> {
        let target = Target::parse(url)?;
        let description = target.describe();
        let first = target.clone();
        on_own_runtime(move || async move {
            let (mut client, conn) = first.connect().await.map_err(|e| {
                let message = format!("cannot connect to {}: {}", first.describe(), pg_message(&e));
                // A certificate not accepted, or a server without TLS, is
                // not worth waiting for: say so at once.
                if tls_refused(&e) {
                    StoreError::Config(message)
                } else {
                    StoreError::Unavailable(message)
                }
            })?;
            let driver = tokio::spawn(notices::drive(conn));
            let out = schema::migrate(&mut client).await;
            drop(client);
            let _ = driver.await;
            out
        })?;
        let node = if options.node.is_empty() {
            "joblog".to_string()
        } else {
            options.node.clone()
        };
        Ok(PgStore {
            pool: Arc::new(Pool::new(
                target.clone(),
                options.readers,
                options.read_wait.clone(),
            )),
            target,
            description,
            node,
        })
    }
}

/// How this node reaches its database: the URL as tokio-postgres parsed
/// it, and the TLS that libpq's `sslmode` in it asks for. Every connection
/// of the store (reads, the writer, the listener) is made through it.
#[derive(Clone)]
pub(crate) struct Target {
    config: Config,
    tls: MakeRustlsConnect,
    mode: tls::SslMode,
}

/// A connection's driver, to be spawned (or polled for notifications).
pub(crate) type Connection =
    tokio_postgres::Connection<Socket, <MakeRustlsConnect as MakeTlsConnect<Socket>>::Stream>;

impl Target {
    pub(crate) fn parse(url: &str) -> Result<Target> {
        let bad = |e: String| StoreError::Config(format!("database URL {}: {e}", redact(url)));
        let (rest, params) = tls::split_url(url).map_err(bad)?;
        let mut config = Config::from_str(&rest).map_err(|e| bad(e.to_string()))?;
        config.ssl_mode(params.mode.for_driver());
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        // Notice a vanished server on idle connections (the listener) in
        // about a minute rather than the kernel's two hours.
        config.keepalives_idle(Duration::from_secs(30));
        if config.get_application_name().is_none() {
            config.application_name("joblog");
        }
        Ok(Target {
            config,
            tls: tls::connector(&params).map_err(bad)?,
            mode: params.mode,
        })
    }

    pub(crate) async fn connect(
        &self,
    ) -> std::result::Result<(Client, Connection), tokio_postgres::Error> {
        self.config.connect(self.tls.clone()).await
    }

    /// `postgres://user@host:port/db`, with `?sslmode=…` unless it is the
    /// default; never the password.
    pub(crate) fn describe(&self) -> String {
        let url = format!(
            "postgres://{}/{}",
            server(&self.config),
            self.config.get_dbname().unwrap_or("")
        );
        match self.mode {
            tls::SslMode::Prefer => url,
            mode => format!("{url}?sslmode={}", mode.name()),
        }
    }
}

/// Whether `e` is a TLS failure no retry mends: the server has no TLS, or
/// a certificate (its or ours) was not accepted. A connection cut during
/// the handshake is not one.
fn tls_refused(e: &tokio_postgres::Error) -> bool {
    if e.to_string() != "error performing TLS handshake" {
        return false;
    }
    match std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>()) {
        Some(io) => io
            .get_ref()
            .is_some_and(|inner| inner.is::<rustls::Error>()),
        // "server does not support TLS"
        None => true,
    }
}

/// Runs `f` to completion on a private current-thread runtime on a thread
/// of its own, so that blocking callers work inside a runtime or outside.
fn on_own_runtime<T, F, Fut>(f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<T>>,
{
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::Database(format!("starting a runtime: {e}")))?;
        rt.block_on(f())
    })
    .join()
    .map_err(|_| StoreError::Database("database setup thread panicked".into()))?
}

/// The URL without its password.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &url[s + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{}@{}", &url[..s + 3], user, &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

/// `user@host:port[,host:port…]` of a connection config, never the password.
pub(crate) fn server(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let host = match host {
                Host::Tcp(h) => h.clone(),
                Host::Unix(p) => p.display().to_string(),
            };
            let port = config
                .get_ports()
                .get(i)
                .or(config.get_ports().first())
                .copied()
                .unwrap_or(5432);
            format!("{host}:{port}")
        })
        .collect();
    let user = config.get_user().unwrap_or("(default user)");
    format!("{user}@{}", hosts.join(","))
}

/// Shared logic on a pooled read connection.
macro_rules! run {
    ($self:ident, $c:ident => $call:expr) => {
        $self
            .pool
            .read(move |$c| Box::pin(async move { $call.await }))
            .await
    };
}

store_impl!(PgStore, run, {
    fn open_writer(&self) -> Result<Box<dyn StoreWriter>> {
        Ok(Box::new(PgWriter::new(
            self.target.clone(),
            self.node.clone(),
        )?))
    }

    async fn ping(&self) -> Result<()> {
        self.pool
            .read(|c| {
                Box::pin(async move {
                    c.client.simple_query("SELECT 1").await?;
                    Ok(())
                })
            })
            .await
    }

    async fn snapshot(&self) -> Result<Snapshot> {
        Err(StoreError::Unsupported(
            "joblog makes snapshots of its SQLite store only; back up a PostgreSQL store with pg_dump"
                .into(),
        ))
    }

    fn describe(&self) -> String {
        self.description.clone()
    }

    fn is_shared(&self) -> bool {
        true
    }

    fn start_listener(&self, sink: broadcast::Sender<Arc<Committed>>) {
        tokio::spawn(listener::listen(
            self.target.clone(),
            self.node.clone(),
            sink,
        ));
    }
});
