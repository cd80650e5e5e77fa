//! The embedded store's schema and connections: the migrations, applied
//! in order at open (`PRAGMA user_version` records how many ran), and
//! how every connection is opened (WAL, synchronous mode, cache sizes,
//! one plan per statement).

use std::path::Path;

use joblog_core::{result_blob, ResultBlob};
use rusqlite::config::DbConfig;
use rusqlite::{params, Connection, OpenFlags};

use super::{audit, nodes, schedules, sealed};
use crate::{Result, StoreError, SyncMode};

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
    Sql(NOTIFICATIONS_MIGRATION),
    Sql(schedules::TRIGGERS_MIGRATION),
    Sql(PLACEMENT_MIGRATION),
    Sql(CONTROLS_MIGRATION),
    Sql(crate::accounts::MIGRATION),
    Sql(crate::accounts::SSO_MIGRATION),
    Sql(crate::accounts::FOLDERS_MIGRATION),
    Sql(schedules::SAVED_JOBS_MIGRATION),
    Sql(sealed::INDEX_MIGRATION),
];

/// Drain and pause (`crate::controls`): since when a node is asked to
/// drain (micros), whether a paused start found it in the database (a
/// restored copy's node, lapsed until it heartbeats), and the scheduler's
/// one row: paused since when and by whom.
const CONTROLS_MIGRATION: &str = r#"
ALTER TABLE nodes ADD COLUMN drain_at INTEGER;
ALTER TABLE nodes ADD COLUMN presumed_lapsed INTEGER NOT NULL DEFAULT 0;
CREATE TABLE scheduler_state (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    paused_at INTEGER,
    paused_by TEXT
);
INSERT INTO scheduler_state (id) VALUES (1);
"#;

/// Where jobs run: a node's labels (`role=db,os=linux`, sorted; empty for
/// none) and the labels a job asks of its node (its `node_selector` in
/// the same form), beside its spec so that a claim reads them without
/// decoding it.
const PLACEMENT_MIGRATION: &str = r#"
ALTER TABLE nodes ADD COLUMN labels TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN node_selector TEXT NOT NULL DEFAULT '';
"#;

/// Notification rules (the rule as sent, and its conditions apart, read
/// at every job's end) and their deliveries: the outbox, one row per rule
/// and job, written in the transaction that ends the job.
const NOTIFICATIONS_MIGRATION: &str = r#"
CREATE TABLE notification_rules (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL UNIQUE,
    spec       TEXT NOT NULL,
    when_spec  TEXT NOT NULL,
    enabled    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE deliveries (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    rule_id      INTEGER NOT NULL,
    job_id       INTEGER NOT NULL,
    state        TEXT NOT NULL,
    attempts     INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    next_try_at  INTEGER,
    claimed_by   TEXT,
    delivered_at INTEGER,
    last_status  INTEGER,
    last_error   TEXT,
    UNIQUE (rule_id, job_id)
);
CREATE INDEX deliveries_due ON deliveries(next_try_at) WHERE state = 'pending';
CREATE INDEX deliveries_pending ON deliveries(created_at) WHERE state = 'pending';
CREATE INDEX deliveries_rule ON deliveries(rule_id, id);
CREATE INDEX deliveries_job ON deliveries(job_id, id);
"#;

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

/// Opens a connection to the store's file; `vfs` names the SQLite VFS it
/// goes through (`None`: SQLite's default, the operating system's files).
pub(super) fn open_conn(
    path: &Path,
    sync: SyncMode,
    read_only: bool,
    vfs: Option<&str>,
) -> Result<Connection> {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
    };
    let conn = match vfs {
        None => Connection::open_with_flags(path, flags),
        Some(vfs) => Connection::open_with_flags_and_vfs(path, flags, vfs),
    }
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

pub(super) fn migrate(conn: &mut Connection) -> Result<()> {
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
    // A new database starts without free pages: the migrations that
    // rebuild a table (the triggers') leave the old one's pages free. On
    // an empty file this costs nothing; an upgraded one keeps its few.
    if version == 0 {
        conn.execute_batch("VACUUM")?;
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
