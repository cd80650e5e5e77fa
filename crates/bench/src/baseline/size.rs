//! The size of a database on disk, for the storage figure of `joblog bench
//! psu` and `ingest`: bytes per record are the growth of this size over
//! the records written (the file's, and what its data takes once logs are
//! sealed).

use std::time::Duration;

use joblog_store::{Database, StoreError};

type Result<T> = std::result::Result<T, StoreError>;

/// The database's bytes on disk after a checkpoint. SQLite: what the file
/// takes once its WAL is folded in (`page_count` × `page_size`), after
/// `wal_checkpoint(TRUNCATE)` (retried while a reader holds the WAL). Not
/// the files' lengths: a WAL that a reader kept from being emptied when
/// one size was taken, and not at the next, made the growth between them
/// read 0.
/// PostgreSQL: `pg_database_size` after `CHECKPOINT` (skipped where the
/// role may not). Blocking; call from a blocking thread.
pub fn database_bytes(url: &str) -> Result<u64> {
    match Database::of(url)? {
        Database::Sqlite(path) => sqlite_bytes(path),
        Database::Postgres => postgres_bytes(url),
    }
}

/// The bytes a database's data takes, free space left by deleted rows
/// not counted: the figure for sealed logs, whose rows were deleted.
/// SQLite: the pages in use (`page_count - freelist_count`) after a
/// checkpoint. PostgreSQL: the sealed segments' relations (tables, TOAST,
/// indexes), where every sealed log lives; the space of the rows they
/// replaced is reused by later rows once vacuumed. Blocking; call from a
/// blocking thread.
pub fn live_bytes(url: &str) -> Result<u64> {
    match Database::of(url)? {
        Database::Sqlite(path) => {
            let conn = checkpointed(path)?;
            let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
            let free: i64 = conn.query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
            let size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
            Ok(u64::try_from((pages - free) * size).unwrap_or(0))
        }
        Database::Postgres => postgres_query(
            url,
            "SELECT COALESCE(sum(pg_total_relation_size(inhrelid)), 0)::bigint \
             FROM pg_inherits WHERE inhparent = 'segments'::regclass",
        ),
    }
}

/// The bytes of every sealed segment's blob: what the sealed logs
/// themselves take, before the database's own overhead (rows, pages,
/// indexes). Blocking; call from a blocking thread.
pub fn segment_bytes(url: &str) -> Result<u64> {
    column_bytes(
        url,
        "SELECT COALESCE(sum(length(data)), 0) FROM segments",
        "SELECT COALESCE(sum(octet_length(data)), 0)::bigint FROM segments",
    )
}

/// The bytes of every sealed segment's text index (`segments.grams`).
/// Blocking; call from a blocking thread.
pub fn index_bytes(url: &str) -> Result<u64> {
    column_bytes(
        url,
        "SELECT COALESCE(sum(length(grams)), 0) FROM segments",
        "SELECT COALESCE(sum(octet_length(grams)), 0)::bigint FROM segments",
    )
}

/// A sum over `segments`, by its SQLite and its PostgreSQL statement.
fn column_bytes(url: &str, sqlite: &str, postgres: &'static str) -> Result<u64> {
    match Database::of(url)? {
        Database::Sqlite(path) => {
            let conn = rusqlite::Connection::open(path)?;
            conn.busy_timeout(Duration::from_secs(5))?;
            let n: i64 = conn.query_row(sqlite, [], |r| r.get(0))?;
            Ok(u64::try_from(n).unwrap_or(0))
        }
        Database::Postgres => postgres_query(url, postgres),
    }
}

/// A connection to the SQLite file after its WAL was checkpointed into it.
fn checkpointed(path: &std::path::Path) -> Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    for _ in 0..50 {
        let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
        if busy == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(conn)
}

fn sqlite_bytes(path: &std::path::Path) -> Result<u64> {
    let conn = checkpointed(path)?;
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
    let size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
    Ok(u64::try_from(pages * size).unwrap_or(0))
}

fn postgres_bytes(url: &str) -> Result<u64> {
    postgres_query(url, "SELECT pg_database_size(current_database())")
}

/// A size `sql` reads, after a checkpoint.
fn postgres_query(url: &str, sql: &'static str) -> Result<u64> {
    let target = joblog_store::bench_support::Postgres::parse(url)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StoreError::Database(format!("starting a runtime: {e}")))?;
    rt.block_on(async move {
        let (client, _driver) = target.connect().await?;
        // Only a superuser or pg_checkpoint may: without it the relation
        // files are still their size, with some pages not yet written.
        let _ = client.batch_execute("CHECKPOINT").await;
        let row = client.query_one(sql, &[]).await?;
        Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_sqlite_database_grows_by_what_is_written_into_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("size.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch("CREATE TABLE t (x BLOB)").unwrap();
        let url = format!("sqlite://{}", path.display());
        let before = database_bytes(&url).unwrap();
        conn.execute("INSERT INTO t VALUES (zeroblob(1000000))", [])
            .unwrap();
        // The connection stays open, as the server's does.
        let after = database_bytes(&url).unwrap();
        assert!(
            (950_000..1_100_000).contains(&(after - before)),
            "{before} → {after}"
        );
        let wal = dir.path().join("size.db-wal");
        assert_eq!(std::fs::metadata(wal).map_or(0, |m| m.len()), 0);
        // Deleted, the blob's pages are free: the file keeps them, the
        // data no longer counts them.
        let live = live_bytes(&url).unwrap();
        conn.execute("DELETE FROM t", []).unwrap();
        assert_eq!(database_bytes(&url).unwrap(), after);
        let freed = live - live_bytes(&url).unwrap();
        assert!(
            (950_000..1_100_000).contains(&freed),
            "{live} → freed {freed}"
        );
    }
}
