//! The embedded store: one SQLite file in WAL mode, one write connection
//! (owned by the pipeline's writer thread) and a small pool of readers
//! (`pool.rs`).

use std::path::{Path, PathBuf};

mod audit;
mod backup;
pub(crate) mod conn;
mod nodes;
mod pool;
mod schedules;
mod sealed;

use async_trait::async_trait;
use joblog_core::schedule::{Schedule, ScheduleId};
use joblog_core::{result_blob, ResultBlob};
use joblog_core::{
    AuditEntry, AuditQuery, EarlierPage, Job, JobId, JobQuery, LogOutline, LogSearch, LogSummary,
    NodeInfo, Record, SearchHits, Stream, Timestamp, TokenInfo,
};
use rusqlite::config::DbConfig;
use rusqlite::{params, Connection, OpenFlags};

use crate::db::{Conn, Decode};
use crate::log_reads;
use crate::reads;
use crate::rows::{fields_text, streams_to_text, JOB_COLUMNS};
use crate::schedules::writes as schedule_writes;
use crate::writes;
use crate::{
    FinishedByName, FinishedBySchedule, GroomPolicy, Outcome, Result, Snapshot, Store, StoreError,
    StoreOptions, StoreWriter, SyncMode, WriteOp,
};

/// Schema migrations, applied in order; `PRAGMA user_version` records how
/// many ran. Append new ones, never edit old ones.
const MIGRATIONS: &[Migration] = &[
    Sql(r#"
CREATE TABLE jobs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT,
    state         TEXT NOT NULL,
    exit_code     INTEGER,
    spec          TEXT NOT NULL,
    node          TEXT,
    created_at    INTEGER NOT NULL,
    started_at    INTEGER,
    finished_at   INTEGER,
    log_records   INTEGER NOT NULL DEFAULT 0,
    log_bytes     INTEGER NOT NULL DEFAULT 0,
    log_truncated INTEGER NOT NULL DEFAULT 0,
    log_streams   TEXT NOT NULL DEFAULT '0,0,0,0,0,0,0',
    result_bytes  INTEGER
);
CREATE INDEX jobs_state ON jobs(state, id);
CREATE INDEX jobs_name ON jobs(name, id);
-- One row per record, clustered by (job_id, seq): reading a job's log is
-- one range scan however large the table grows. Rows are only inserted
-- and (by retention) deleted, never updated.
CREATE TABLE log (
    job_id  INTEGER NOT NULL,
    seq     INTEGER NOT NULL,
    ts      INTEGER NOT NULL,
    stream  INTEGER NOT NULL,
    message TEXT NOT NULL,
    fields  TEXT,
    PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;
CREATE TABLE results (
    job_id INTEGER PRIMARY KEY,
    body   BLOB NOT NULL
);
"#),
    Sql(TOKENS_MIGRATION),
    Sql(LISTING_MIGRATION),
    Sql(nodes::MIGRATION),
    // Per-name metrics read (name, state, finished_at) of every finished
    // job: from this index alone.
    Sql("CREATE INDEX jobs_name_state ON jobs(name, state, finished_at);"),
    Sql(audit::MIGRATION),
    ResultsToBlobs,
    Sql(schedules::MIGRATION),
    Sql(sealed::MIGRATION),
    // Per-schedule metrics read (schedule_id, state, finished_at) of every
    // scheduled job: from this index alone.
    Sql("CREATE INDEX jobs_schedule_state ON jobs(schedule_id, state, finished_at);"),
    // The names of the secrets each node holds (a JSON array).
    Sql("ALTER TABLE nodes ADD COLUMN secret_names TEXT;"),
];

/// Migration 3: listings by node and by creation time (`jobs --node`,
/// `--since`), each index ending in `id` like the others.
/// Migration 2: API tokens, kept by the SHA-256 of their text.
const TOKENS_MIGRATION: &str = r#"
CREATE TABLE tokens (
    name         TEXT PRIMARY KEY,
    hash         BLOB NOT NULL UNIQUE,
    role         TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER,
    last_used_at INTEGER
);
"#;

const LISTING_MIGRATION: &str = r#"
CREATE INDEX jobs_node ON jobs(node, id);
CREATE INDEX jobs_created ON jobs(created_at, id);
"#;

/// One step of the schema.
enum Migration {
    Sql(&'static str),
    /// Results were plain JSON before they were blobs: each becomes one.
    ResultsToBlobs,
}
use Migration::{ResultsToBlobs, Sql};

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

fn open_conn(path: &Path, sync: SyncMode, read_only: bool) -> Result<Connection> {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
    };
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| StoreError::Unavailable(format!("cannot open {}: {e}", path.display())))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    // One plan per statement, whatever is bound to it. Without this, SQLite
    // plans `LIMIT ?` with the value bound and so prepares the statement
    // again at every bind: a quarter of the read threads' time in `bench
    // tail` (docs/benchmarks.md). Every plan is an index search either way
    // (the plan tests below).
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    if !read_only {
        conn.pragma_update(None, "journal_mode", "WAL")?;
    }
    conn.pragma_update(
        None,
        "synchronous",
        match sync {
            SyncMode::Normal => "NORMAL",
            SyncMode::Full => "FULL",
        },
    )?;
    // Page cache in KiB (negative = KiB). The writer touches only the right
    // edges of the log's B-tree; readers mostly one job's range. Small caches
    // keep the server's memory bounded with many connections.
    conn.pragma_update(None, "cache_size", if read_only { -2_048 } else { -8_192 })?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

fn migrate(conn: &mut Connection) -> Result<()> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let known = MIGRATIONS.len() as i64;
    if version > known {
        return Err(StoreError::Config(format!(
            "database schema version {version} is newer than this joblog ({known}); upgrade joblog"
        )));
    }
    for (i, step) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let tx = conn.transaction()?;
        match step {
            Sql(sql) => tx.execute_batch(sql)?,
            ResultsToBlobs => results_to_blobs(&tx)?,
        }
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tx.commit()?;
    }
    Ok(())
}

fn results_to_blobs(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    let ids = tx
        .prepare("SELECT job_id FROM results WHERE substr(body, 1, 4) IS NOT ?1")?
        .query_map([&result_blob::MAGIC[..]], |r| r.get::<_, i64>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for id in ids {
        // One at a time: a store of many large results is converted in
        // the memory of the largest.
        let body: Vec<u8> =
            tx.query_row("SELECT body FROM results WHERE job_id = ?1", [id], |r| {
                r.get(0)
            })?;
        let blob = ResultBlob::encode(&body);
        tx.execute(
            "UPDATE results SET body = ?2 WHERE job_id = ?1",
            params![id, blob.as_bytes()],
        )?;
    }
    Ok(())
}

pub(super) fn query_jobs(
    conn: &Connection,
    sql: &str,
    params: &[&dyn rusqlite::ToSql],
) -> Result<Vec<Job>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(params)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(Job::decode(row)?);
    }
    Ok(out)
}

/// Queues a job; `None` when it is a fire (schedule, fire time,
/// attempt) that already has its job.
pub(super) fn insert_job(
    tx: &Connection,
    name: Option<&str>,
    spec: &joblog_core::JobSpec,
    run_after: Option<Timestamp>,
    now: i64,
) -> Result<Option<Job>> {
    let spec_json = serde_json::to_string(spec)
        .map_err(|e| StoreError::Database(format!("encoding job spec: {e}")))?;
    let keys = crate::schedules::JobKeys::of(spec);
    let sql = format!(
        "INSERT INTO jobs (name, state, spec, created_at, schedule_id, fire_time, attempt, \
         concurrency_key, max_concurrent, run_after) \
         VALUES (?1, 'queued', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
         ON CONFLICT (schedule_id, fire_time, attempt) DO NOTHING RETURNING {JOB_COLUMNS}"
    );
    Ok(query_jobs(
        tx,
        &sql,
        &[
            &name,
            &spec_json,
            &now,
            &keys.schedule_id,
            &keys.fire_time,
            &keys.attempt,
            &keys.concurrency_key,
            &keys.max_concurrent,
            &run_after.map(Timestamp::micros),
        ],
    )?
    .pop())
}

#[async_trait]
impl Store for SqliteStore {
    fn open_writer(&self) -> Result<Box<dyn StoreWriter>> {
        Ok(Box::new(SqliteWriter {
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

struct SqliteWriter {
    conn: Connection,
}

/// The writer goes last, at a clean stop: what the WAL holds is folded
/// into the database file and the WAL emptied, so `joblog.db` alone is
/// the whole store (a copy of it is a backup; a `-wal` left beside it is
/// empty). Failing that, the WAL stays as it was and is read at the next
/// open: nothing is lost.
impl Drop for SqliteWriter {
    fn drop(&mut self) {
        let checkpoint = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                r.get::<_, i64>(0)
            });
        match checkpoint {
            Ok(0) => {}
            Ok(_) => tracing::info!("the WAL could not be emptied at the stop (a reader held it); it is read at the next start"),
            Err(e) => tracing::warn!(error = %e, "checkpointing the WAL at the stop failed; it is read at the next start"),
        }
    }
}

impl StoreWriter for SqliteWriter {
    fn apply(&mut self, ops: &[WriteOp]) -> Result<Vec<Outcome>> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut outcomes = Vec::with_capacity(ops.len());
        // Counters are written once per job per batch, not once per Append.
        let mut summaries: Vec<(JobId, LogSummary)> = Vec::new();
        for op in ops {
            outcomes.push(apply_one(&tx, op, &mut summaries)?);
        }
        if !summaries.is_empty() {
            let mut stmt = tx.prepare_cached(
                "UPDATE jobs SET log_records = ?2, log_bytes = ?3, log_truncated = ?4, \
                 log_streams = ?5 WHERE id = ?1",
            )?;
            for (job, s) in &summaries {
                stmt.execute(params![
                    job,
                    s.records as i64,
                    s.bytes as i64,
                    s.truncated,
                    streams_to_text(&s.streams)
                ])?;
            }
        }
        tx.commit()?;
        Ok(outcomes)
    }
}

pub(super) fn note_summary(summaries: &mut Vec<(JobId, LogSummary)>, job: JobId, s: LogSummary) {
    match summaries.iter_mut().find(|(j, _)| *j == job) {
        Some(slot) => slot.1 = s,
        None => summaries.push((job, s)),
    }
}

fn apply_one(
    tx: &rusqlite::Transaction,
    op: &WriteOp,
    summaries: &mut Vec<(JobId, LogSummary)>,
) -> Result<Outcome> {
    let now = Timestamp::now().micros();
    match op {
        WriteOp::InsertJob { name, spec } => {
            let job = insert_job(tx, name.as_deref(), spec, None, now)?.ok_or_else(|| {
                StoreError::Database("a job for a fire that already has one".into())
            })?;
            Ok(Outcome::Job(job))
        }
        WriteOp::ClaimNext { node } => {
            let sql = format!(
                "UPDATE jobs SET state = 'running', started_at = ?1, node = ?2 \
                 WHERE id = (SELECT id FROM jobs AS q WHERE state = 'queued' \
                    AND (run_after IS NULL OR run_after <= ?1) \
                    AND (concurrency_key IS NULL OR (SELECT count(*) FROM jobs AS r \
                        WHERE r.state = 'running' AND r.concurrency_key = q.concurrency_key) \
                        < q.max_concurrent) \
                    ORDER BY id LIMIT 1) \
                 RETURNING {JOB_COLUMNS}"
            );
            Ok(Outcome::Claimed(query_jobs(tx, &sql, &[&now, node])?.pop()))
        }
        WriteOp::FireDue { now: at } => {
            conn::run(tx, async |c| schedule_writes::fire_due(c, *at, now).await)
        }
        WriteOp::SaveSchedule {
            id,
            schedule,
            next_fire,
        } => conn::run(tx, async |c| {
            schedule_writes::save(c, *id, schedule, *next_fire, now).await
        }),
        WriteOp::DeleteSchedule { id } => {
            conn::run(tx, async |c| schedule_writes::delete(c, *id).await)
        }
        WriteOp::Append {
            job,
            records,
            summary,
        } => {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO log (job_id, seq, ts, stream, message, fields) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for r in records {
                stmt.execute(params![
                    job,
                    r.seq as i64,
                    r.ts.micros(),
                    r.stream.code(),
                    r.message,
                    fields_text(r)
                ])?;
            }
            note_summary(summaries, *job, *summary);
            Ok(Outcome::Done)
        }
        WriteOp::Finish {
            job,
            state,
            exit_code,
            result,
            summary,
        } => {
            note_summary(summaries, *job, *summary);
            let (state, exit_code, result) = (*state, *exit_code, result.as_ref());
            conn::run(tx, async |c| {
                writes::finish(c, *job, state, exit_code, result, summary, now).await
            })
        }
        WriteOp::CancelQueued { job } => {
            conn::run(tx, async |c| writes::cancel_queued(c, *job, now).await)
        }
        WriteOp::Interrupt {
            node,
            include_queued,
        } => nodes::interrupt(tx, node.as_deref(), *include_queued, now, summaries),
        WriteOp::DeleteLogChunk { job, max } => {
            conn::run(tx, async |c| writes::delete_log_chunk(c, *job, *max).await)
        }
        WriteOp::SealSlice(slice) => conn::run(tx, async |c| writes::seal_slice(c, slice).await),
        WriteOp::MarkSealed { job } => {
            conn::run(tx, async |c| writes::mark_sealed(c, *job, now).await)
        }
        // One node, no partitions, nobody else to tell.
        WriteOp::DropLogPartitions { .. } => Ok(Outcome::Groomed {
            jobs: Vec::new(),
            records: 0,
        }),
        WriteOp::Heartbeat { node, .. } => nodes::heartbeat(tx, node, now),
        WriteOp::RegisterNode {
            node,
            version,
            secret_names,
        } => nodes::register(tx, node, version, secret_names, now),
        WriteOp::NodeStopped { node } => nodes::stopped(tx, node, now),
        WriteOp::RequestCancel { .. } => Ok(Outcome::Done),
        WriteOp::CreateToken(token) => {
            conn::run(tx, async |c| writes::create_token(c, token).await)
        }
        WriteOp::RevokeToken { name } => {
            conn::run(tx, async |c| writes::revoke_token(c, name).await)
        }
        WriteOp::TouchToken { name, at } => {
            conn::run(tx, async |c| writes::touch_token(c, name, *at).await)
        }
        WriteOp::Audit(entries) => audit::append(tx, entries),
        WriteOp::DeleteAudit { before, max } => {
            conn::run(tx, async |c| writes::delete_audit(c, *before, *max).await)
        }
        WriteOp::DeleteJob { job } => conn::run(tx, async |c| writes::delete_job(c, *job).await),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page of the log read again and again with other bounds runs the
    /// statement prepared once, not re-planned at each bind.
    #[test]
    fn log_reads_are_not_prepared_again_at_every_bind() {
        use rusqlite::StatementStatus;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("joblog.db");
        SqliteStore::open(&path, &StoreOptions::default()).unwrap();
        let conn = open_conn(&path, SyncMode::Normal, true).unwrap();
        let mut stmt = conn
            .prepare("SELECT seq FROM log WHERE job_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3")
            .unwrap();
        for (after, limit) in [(0, 10), (5, 1000), (7, 3)] {
            let n = stmt
                .query_map(params![1, after, limit], |r| r.get::<_, i64>(0))
                .unwrap()
                .count();
            assert_eq!(n, 0);
        }
        assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0);
    }

    fn plan_of(conn: &Connection, q: &str, params: &[crate::db::Param]) -> Vec<String> {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {q}")).unwrap();
        let params: Vec<&dyn rusqlite::ToSql> =
            params.iter().map(|p| p as &dyn rusqlite::ToSql).collect();
        stmt.query_map(params.as_slice(), |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    /// Every query a request runs must be an index search, never a scan:
    /// that is what keeps listing and log reads O(log n) as the database
    /// grows to tens of millions of records. A listing may merge several
    /// searches (`MERGE`, `LEFT`, `RIGHT`), each in id order, so it never
    /// sorts either; a subquery (a segment's bound) is a search too.
    #[test]
    fn request_queries_search_indexes_and_never_scan() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.db");
        SqliteStore::open(&path, &StoreOptions::default()).unwrap();
        let conn = open_conn(&path, SyncMode::Normal, true).unwrap();
        let mut queries: Vec<(String, Vec<crate::listing::Param>)> = [
            crate::reads::SELECT_JOB.sqlite.replace("?1", "1"),
            crate::reads::READ_RESULT.sqlite.replace("?1", "1"),
            crate::reads::TOKEN_BY_HASH.sqlite.replace("?1", "x'00'"),
            // The scheduler's: due schedules, the next fire, a run active.
            schedule_writes::DUE
                .sqlite
                .replace("?1", "5")
                .replace("?2", "257"),
            crate::schedules::reads::NEXT_FIRE.sqlite.into(),
            schedule_writes::ACTIVE.sqlite.replace("?1", "3"),
        ]
        .into_iter()
        .map(|q| (q, Vec::new()))
        .collect();
        // Every statement under a log read (segments included): each one
        // job's log by its primary key. The sealer's own walk of unsealed
        // jobs and its count are index searches too.
        let reads = crate::log_reads::every_statement();
        assert_eq!(reads.len(), 12);
        let bound = |st: crate::db::Statement, mut params: Vec<crate::db::Param>| {
            // As the connection binds them: as many as its text has.
            let used = (1..=params.len())
                .filter(|i| st.sqlite.contains(&format!("?{i}")))
                .max();
            params.truncate(used.unwrap_or(0));
            (st.sqlite.to_string(), params)
        };
        for (name, st, params) in reads {
            if name == "COUNT_UNSEALED" {
                // A count bounded by its LIMIT: a walk of the partial
                // index of unsealed jobs, never of the table.
                let (text, params) = bound(st, params);
                let plan = plan_of(&conn, &text, &params);
                assert!(
                    plan.iter().any(|p| p.contains("USING INDEX jobs_unsealed")),
                    "{text}: {plan:?}"
                );
                continue;
            }
            queries.push(bound(st, params));
        }
        let listings = crate::listing::tests::every_statement(crate::listing::Dialect::Sqlite);
        assert!(listings.len() > 10);
        // The audit trail's listings: each walk, forward and backward.
        let audit = crate::audit::every_statement(crate::listing::Dialect::Sqlite);
        assert_eq!(audit.len(), 16);
        queries.extend(
            listings
                .into_iter()
                .chain(audit)
                .map(|s| (s.text.into_owned(), s.params)),
        );
        for (q, params) in &queries {
            let plan = plan_of(&conn, q, params);
            assert!(
                plan.iter().any(|p| p.starts_with("SEARCH"))
                    && plan.iter().all(|p| p.starts_with("SEARCH")
                        || p.starts_with("SCALAR SUBQUERY")
                        || ["MERGE (UNION ALL)", "LEFT", "RIGHT"].contains(&p.as_str())),
                "{q}\n  plan: {plan:?}"
            );
            assert!(
                !plan.iter().any(|p| p.contains("TEMP B-TREE")),
                "{q} sorts in memory: {plan:?}"
            );
        }
    }
}
