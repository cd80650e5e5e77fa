//! The read pool: async connections kept open between requests, each with
//! the statements it has prepared. At most `size` reads run at once, each
//! on a connection the pool keeps: a burst beyond that waits for one
//! instead of opening more. A connection opened for a burst and closed
//! after it costs the server a backend process started and ended, and the
//! statements prepared again (docs/benchmarks.md, `bench tail`: 100
//! live-tail viewers woken by each commit made PostgreSQL start some 145
//! backends a second, most of the machine's CPU time).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Statement};

use super::Target;
use crate::error::pg_message;
use crate::{ReadWait, Result, StoreError};

/// Read connections, each with the statements it has prepared.
pub(super) struct Pool {
    target: Target,
    idle: Mutex<Vec<PooledConn>>,
    /// One permit per connection the pool may have: a read holds one from
    /// before it takes a connection until it has given it back.
    in_use: Arc<tokio::sync::Semaphore>,
    /// Connections opened so far.
    opened: AtomicUsize,
    read_wait: Option<ReadWait>,
}

/// Reads at once on one node (and connections kept) unless the options
/// say otherwise.
pub(super) const DEFAULT_READERS: usize = 16;

pub(super) struct PooledConn {
    pub(super) client: Client,
    statements: HashMap<&'static str, Statement>,
}

impl PooledConn {
    pub(super) async fn prepared(&mut self, sql: &'static str) -> Result<Statement> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql).await?;
        self.statements.insert(sql, s.clone());
        Ok(s)
    }

    pub(super) async fn query(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>> {
        let stmt = self.prepared(sql).await?;
        Ok(self.client.query(&stmt, params).await?)
    }

    /// Like [`Self::query`], but hands the rows over one by one as they
    /// come, for reads that fold many rows into little.
    pub(super) async fn query_rows(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<tokio_postgres::RowStream> {
        let stmt = self.prepared(sql).await?;
        Ok(self.client.query_raw(&stmt, params.iter().copied()).await?)
    }
}

impl Pool {
    /// A pool of `readers` connections (0 = [`DEFAULT_READERS`]), opened
    /// as reads first need them.
    pub(super) fn new(target: Target, readers: usize, read_wait: Option<ReadWait>) -> Pool {
        // A connection costs the server a process, and opening one takes
        // milliseconds: enough for a busy node's concurrent requests, kept
        // rather than reconnected per request.
        let size = if readers == 0 {
            DEFAULT_READERS
        } else {
            readers
        };
        Pool {
            target,
            idle: Mutex::new(Vec::with_capacity(size)),
            in_use: Arc::new(tokio::sync::Semaphore::new(size)),
            opened: AtomicUsize::new(0),
            read_wait,
        }
    }

    /// Runs `f` on a connection of the pool, once one is free.
    pub(super) async fn read<T>(
        &self,
        f: impl for<'c> FnOnce(&'c mut PooledConn) -> BoxFuture<'c, Result<T>>,
    ) -> Result<T> {
        let asked = std::time::Instant::now();
        let _permit = self
            .in_use
            .acquire()
            .await
            .map_err(|_| StoreError::Unavailable("read pool closed".into()))?;
        let mut conn = self.get().await?;
        ReadWait::observe(&self.read_wait, asked);
        let out = f(&mut conn).await;
        self.put(conn);
        out
    }

    async fn get(&self) -> Result<PooledConn> {
        loop {
            let pooled = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
            match pooled {
                Some(c) if !c.client.is_closed() => return Ok(c),
                Some(_) => continue,
                None => break,
            }
        }
        self.opened.fetch_add(1, Ordering::Relaxed);
        let (client, conn) = self.target.connect().await.map_err(|e| {
            StoreError::Unavailable(format!(
                "cannot connect to {}: {}",
                self.target.describe(),
                pg_message(&e)
            ))
        })?;
        tokio::spawn(async move {
            if let Err(e) = super::notices::drive(conn).await {
                tracing::debug!(error = %e, "read connection closed");
            }
        });
        Ok(PooledConn {
            client,
            statements: HashMap::new(),
        })
    }

    fn put(&self, conn: PooledConn) {
        if conn.client.is_closed() {
            return;
        }
        // Never more than the permits: each connection was taken under one.
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(conn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::postgres::PgStore;
    use crate::testing::TestDatabase;
    use crate::StoreOptions;

    /// A burst of slow reads waits for the pool: no more than
    /// DEFAULT_READERS connections are busy at once or ever opened, and
    /// every read succeeds rather than the server refusing connections.
    #[test]
    fn reads_in_flight_are_bounded() {
        let Some(db) = TestDatabase::postgres() else {
            return;
        };
        let store = Arc::new(PgStore::open(db.url(), &StoreOptions::default()).unwrap());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let now = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        rt.block_on(async {
            let reads: Vec<_> = (0..DEFAULT_READERS * 3)
                .map(|_| {
                    let (store, now, peak) = (store.clone(), now.clone(), peak.clone());
                    tokio::spawn(async move {
                        store
                            .pool
                            .read(move |c| {
                                Box::pin(async move {
                                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                                    peak.fetch_max(n, Ordering::SeqCst);
                                    c.client.simple_query("SELECT pg_sleep(0.2)").await?;
                                    now.fetch_sub(1, Ordering::SeqCst);
                                    Ok(())
                                })
                            })
                            .await
                    })
                })
                .collect();
            for r in reads {
                r.await.unwrap().unwrap();
            }
        });
        let peak = peak.load(Ordering::SeqCst);
        assert!(peak <= DEFAULT_READERS, "{peak} reads at once");
        assert!(peak > 1, "reads ran one at a time: {peak}");
        let opened = store.pool.opened.load(Ordering::Relaxed);
        assert!(opened <= DEFAULT_READERS, "{opened} connections opened");
    }
}
