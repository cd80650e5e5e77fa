//! The embedded store: one SQLite file in WAL mode, one write connection
//! (owned by the pipeline's writer thread) and a small pool of readers.
//!
//! Laid out as the PostgreSQL store is: `schema` migrates and opens
//! connections, `pool` serves reads, `conn` runs the shared logic of
//! `crate::db` on a connection, `writer` applies batches, `jobs` queues
//! and claims jobs; `audit`, `nodes`, `schedules` and `sealed` hold their
//! tables and what SQLite writes its own way; `backup` makes snapshots.

use std::path::{Path, PathBuf};

mod audit;
mod backup;
pub(crate) mod conn;
mod jobs;
mod nodes;
mod pool;
mod schedules;
mod schema;
mod sealed;
mod writer;

use joblog_core::schedule::{Schedule, ScheduleId};
use joblog_core::{
    AuditEntry, AuditQuery, EarlierPage, Job, JobId, JobQuery, LogOutline, LogSearch, NodeInfo,
    Record, SearchHits, Stream, Timestamp, TokenInfo,
};

use crate::reads;
use crate::store_impl::store_impl;
use crate::{GroomPolicy, Result, Snapshot, StoreError, StoreOptions, StoreWriter, SyncMode};
use schema::{migrate, open_conn};

/// The embedded store: reads on the pool, the writer opened once.
pub struct SqliteStore {
    path: PathBuf,
    sync: SyncMode,
    vfs: Option<String>,
    readers: pool::Readers,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file, in a directory that
    /// must exist, and brings its schema up to date.
    pub fn open(path: impl AsRef<Path>, options: &StoreOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        // A typo in a URL must not quietly make a new tree of directories
        // (and an empty database in it): the directory must exist.
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.is_dir() {
                return Err(StoreError::Config(format!(
                    "the directory of the database, {}, does not exist",
                    dir.display()
                )));
            }
        }
        let vfs = options.vfs.clone();
        let mut conn = open_conn(&path, options.sync, false, vfs.as_deref())?;
        migrate(&mut conn)?;
        Ok(SqliteStore {
            readers: pool::Readers::new(
                path.clone(),
                options.sync,
                vfs.clone(),
                options.readers,
                options.read_wait.clone(),
            ),
            path,
            sync: options.sync,
            vfs,
        })
    }

    /// Runs the store's shared logic (`crate::db`) on a pooled read
    /// connection, on the blocking thread pool.
    async fn shared<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> AsyncFnOnce(&mut conn::Lite<'c>) -> Result<T> + Send + 'static,
    {
        self.readers.read(move |c| conn::run(c, f)).await
    }
}

/// Shared logic on a pooled read connection, on the blocking pool.
macro_rules! run {
    ($self:ident, $c:ident => $call:expr) => {
        $self.shared(async move |$c| $call.await).await
    };
}

store_impl!(SqliteStore, run, {
    fn open_writer(&self) -> Result<Box<dyn StoreWriter>> {
        Ok(Box::new(writer::SqliteWriter {
            conn: open_conn(&self.path, self.sync, false, self.vfs.as_deref())?,
        }))
    }

    async fn ping(&self) -> Result<()> {
        self.shared(async |c| reads::ping(c).await).await
    }

    async fn snapshot(&self) -> Result<Snapshot> {
        let path = self.path.clone();
        let sync = self.sync;
        tokio::task::spawn_blocking(move || backup::snapshot(&path, sync))
            .await
            .map_err(|e| StoreError::Database(format!("snapshot task failed: {e}")))?
    }

    fn describe(&self) -> String {
        format!("sqlite://{}", self.path.display())
    }
});

#[cfg(test)]
mod tests;
