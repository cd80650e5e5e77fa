//! Opening a store from a database URL, and the options it is opened
//! with.

use crate::{postgres, sqlite, Result, Store, StoreError};

/// The kind of store a database URL names, before anything is opened:
/// what a server must lock (a SQLite file) or may share (PostgreSQL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Database<'a> {
    /// The SQLite file, as the URL writes it (relative or absolute).
    Sqlite(&'a std::path::Path),
    Postgres,
}

impl<'a> Database<'a> {
    /// `postgres://user@host/db` (or `postgresql://`),
    /// `sqlite:///path/joblog.db`, `sqlite://relative.db` or a bare path.
    pub fn of(url: &'a str) -> Result<Database<'a>> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Database::Postgres);
        }
        let path = match url.split_once("://") {
            Some(("sqlite", path)) => path,
            Some((scheme, _)) => {
                return Err(StoreError::Config(format!(
                "database URL scheme {scheme:?} is not supported (use sqlite://PATH or postgres://…)"
            )))
            }
            None => url,
        };
        if path.is_empty() {
            return Err(StoreError::Config(format!(
                "database URL {url:?} names no file"
            )));
        }
        Ok(Database::Sqlite(std::path::Path::new(path)))
    }
}

/// Opens the store a database URL names (see [`Database::of`]).
/// PostgreSQL must be reachable: a node does not start on a database it
/// cannot migrate.
pub fn open(url: &str, options: &StoreOptions) -> Result<std::sync::Arc<dyn Store>> {
    Ok(match Database::of(url)? {
        Database::Postgres => std::sync::Arc::new(postgres::PgStore::open(url, options)?),
        Database::Sqlite(path) => std::sync::Arc::new(sqlite::SqliteStore::open(path, options)?),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncMode {
    /// Survives a crash of the process (WAL, synchronous=NORMAL).
    #[default]
    Normal,
    /// Survives power loss (synchronous=FULL).
    Full,
}

impl SyncMode {
    pub fn parse(s: &str) -> Option<SyncMode> {
        match s {
            "normal" => Some(SyncMode::Normal),
            "full" => Some(SyncMode::Full),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    pub sync: SyncMode,
    /// Read connections: the most reads at once, each connection kept
    /// open between reads (0 = the store's default).
    pub readers: usize,
    /// The node this store is opened by (PostgreSQL records it with the
    /// jobs it submits and the batches it commits).
    pub node: String,
    /// Told how long each read waited for a connection of the read pool
    /// (the server's `joblog_store_read_wait_seconds`).
    pub read_wait: Option<ReadWait>,
    /// SQLite only: the VFS the file is opened through, registered by the
    /// caller beforehand (`None`: SQLite's default, the operating
    /// system's files). `joblog bench faults` opens the store through one
    /// that cuts the power.
    pub vfs: Option<String>,
}

/// Observes the wait of each read for a pooled connection. The store
/// only measures; what is done with the figure (a metric) is the
/// caller's.
#[derive(Clone)]
pub struct ReadWait(pub std::sync::Arc<dyn Fn(std::time::Duration) + Send + Sync>);

impl ReadWait {
    pub(crate) fn observe(this: &Option<ReadWait>, since: std::time::Instant) {
        if let Some(w) = this {
            (w.0)(since.elapsed());
        }
    }
}

impl std::fmt::Debug for ReadWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadWait(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_url_names_its_kind_and_a_sqlite_file() {
        use std::path::Path;
        assert_eq!(
            Database::of("postgresql://u@h/db").unwrap(),
            Database::Postgres
        );
        assert_eq!(
            Database::of("sqlite:///var/lib/joblog.db").unwrap(),
            Database::Sqlite(Path::new("/var/lib/joblog.db"))
        );
        assert_eq!(
            Database::of("sqlite://rel.db").unwrap(),
            Database::Sqlite(Path::new("rel.db"))
        );
        assert_eq!(
            Database::of("x/j.db").unwrap(),
            Database::Sqlite(Path::new("x/j.db"))
        );
        let e = Database::of("mysql://h/db").unwrap_err().to_string();
        assert!(e.contains("\"mysql\""), "{e}");
        assert!(Database::of("sqlite://").is_err());
    }
}
