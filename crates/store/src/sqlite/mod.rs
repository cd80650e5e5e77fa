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

use async_trait::async_trait;
use joblog_core::schedule::{Schedule, ScheduleId};
use joblog_core::{
    AuditEntry, AuditQuery, EarlierPage, Job, JobId, JobQuery, LogOutline, LogSearch, NodeInfo,
    Record, SearchHits, Stream, Timestamp, TokenInfo,
};

use crate::db::Conn;
use crate::log_reads;
use crate::reads;
use crate::{
    FinishedByName, FinishedBySchedule, GroomPolicy, Result, Snapshot, Store, StoreError,
    StoreOptions, StoreWriter, SyncMode,
};
use schema::{migrate, open_conn};

/// The embedded store: reads on the pool, the writer opened once.
pub struct SqliteStore {
    path: PathBuf,
    sync: SyncMode,
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
        let mut conn = open_conn(&path, options.sync, false)?;
        migrate(&mut conn)?;
        Ok(SqliteStore {
            readers: pool::Readers::new(
                path.clone(),
                options.sync,
                options.readers,
                options.read_wait.clone(),
            ),
            path,
            sync: options.sync,
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

#[async_trait]
impl Store for SqliteStore {
    fn open_writer(&self) -> Result<Box<dyn StoreWriter>> {
        Ok(Box::new(writer::SqliteWriter {
            conn: open_conn(&self.path, self.sync, false)?,
        }))
    }

    async fn get_job(&self, id: JobId) -> Result<Option<Job>> {
        self.shared(async move |c| reads::get_job(c, id).await)
            .await
    }
    async fn list_jobs(&self, q: JobQuery) -> Result<Vec<Job>> {
        self.shared(async move |c| crate::listing::list(c, &q).await)
            .await
    }

    async fn read_log(
        &self,
        id: JobId,
        after_seq: u64,
        limit: u32,
        streams: Option<Vec<Stream>>,
    ) -> Result<Vec<Record>> {
        self.shared(async move |c| log_reads::read_log(c, id, after_seq, limit, &streams).await)
            .await
    }

    async fn read_log_before(
        &self,
        id: JobId,
        before_seq: u64,
        limit: u32,
        streams: Option<Vec<Stream>>,
    ) -> Result<EarlierPage> {
        self.shared(async move |c| log_reads::read_before(c, id, before_seq, limit, &streams).await)
            .await
    }

    async fn search_log(
        &self,
        id: JobId,
        search: &LogSearch,
        after_seq: u64,
        limit: u32,
        streams: Option<Vec<Stream>>,
    ) -> Result<SearchHits> {
        let search = search.clone();
        self.shared(async move |c| {
            log_reads::search(c, id, &search, after_seq, limit, &streams).await
        })
        .await
    }

    async fn log_outline(&self, id: JobId, max_groups: usize) -> Result<LogOutline> {
        self.shared(async move |c| log_reads::outline(c, id, max_groups).await)
            .await
    }

    async fn unsealed_rows(&self, id: JobId, limit: u32) -> Result<Vec<Record>> {
        self.shared(async move |c| log_reads::unsealed_rows(c, id, limit).await)
            .await
    }

    async fn count_unsealed(&self, up_to: u64) -> Result<u64> {
        self.shared(async move |c| log_reads::count_unsealed(c, up_to).await)
            .await
    }

    async fn unsealed_jobs(
        &self,
        after: JobId,
        limit: u32,
        node: Option<String>,
    ) -> Result<Vec<(JobId, Timestamp)>> {
        self.shared(async move |c| log_reads::unsealed_jobs(c, after, limit, node.as_deref()).await)
            .await
    }

    async fn read_result(&self, id: JobId) -> Result<Option<Vec<u8>>> {
        self.shared(async move |c| reads::read_result(c, id).await)
            .await
    }
    async fn groom_candidates(&self, policy: GroomPolicy) -> Result<Vec<JobId>> {
        self.shared(async move |c| reads::groom_candidates(c, policy).await)
            .await
    }
    async fn count_queued(&self, up_to: u64) -> Result<u64> {
        self.shared(async move |c| reads::count_queued(c, up_to).await)
            .await
    }
    async fn token_by_hash(&self, hash: [u8; 32]) -> Result<Option<TokenInfo>> {
        self.shared(async move |c| reads::token_by_hash(c, hash).await)
            .await
    }
    async fn list_tokens(&self) -> Result<Vec<TokenInfo>> {
        self.shared(async |c| reads::list_tokens(c).await).await
    }
    async fn finished_by_name(&self) -> Result<Vec<FinishedByName>> {
        self.shared(async |c| c.query(&crate::FINISHED_BY_NAME, &[]).await)
            .await
    }

    async fn finished_by_schedule(&self) -> Result<Vec<FinishedBySchedule>> {
        self.shared(async |c| c.query(&crate::FINISHED_BY_SCHEDULE, &[]).await)
            .await
    }

    async fn list_nodes(&self) -> Result<Vec<NodeInfo>> {
        self.shared(async |c| reads::list_nodes(c).await).await
    }
    async fn list_audit(&self, q: AuditQuery) -> Result<Vec<AuditEntry>> {
        self.shared(async move |c| crate::audit::list(c, &q).await)
            .await
    }

    async fn get_schedule(&self, id: ScheduleId) -> Result<Option<Schedule>> {
        self.shared(async move |c| crate::schedules::reads::get(c, id).await)
            .await
    }

    async fn list_schedules(&self, after_id: ScheduleId, limit: u32) -> Result<Vec<Schedule>> {
        self.shared(async move |c| crate::schedules::reads::list(c, after_id, limit).await)
            .await
    }

    async fn next_fire(&self) -> Result<Option<Timestamp>> {
        self.shared(async |c| crate::schedules::reads::next_fire(c).await)
            .await
    }

    async fn next_run_after(&self) -> Result<Option<Timestamp>> {
        self.shared(async |c| crate::schedules::reads::next_run_after(c).await)
            .await
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
}

#[cfg(test)]
mod tests;
