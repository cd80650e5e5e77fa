//! The store's errors.

/// What went wrong in the store. `Unavailable` and `Full` are transient
/// (locked or unreachable; out of disk space): callers retry them; the
/// rest are not.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// The disk under the database is full (SQLite's `SQLITE_FULL`,
    /// PostgreSQL's `53100 disk_full`): writes succeed again once space
    /// is freed.
    #[error("database storage full: {0}")]
    Full(String),
    #[error("database error: {0}")]
    Database(String),
    #[error("configuration: {0}")]
    Config(String),
    #[error("stored data is invalid: {0}")]
    Corrupt(String),
    /// A sealed segment of the job's log failed its checks: that job's log
    /// cannot be read (others can); `detail` says which segment and how.
    #[error("job {job}: its sealed log is damaged: {detail}")]
    DamagedLog {
        job: joblog_core::JobId,
        detail: String,
    },
    /// This store does not do what was asked (e.g. a snapshot of a
    /// PostgreSQL store, which its own tools make); the text says what to
    /// use instead.
    #[error("not supported: {0}")]
    Unsupported(String),
}

impl StoreError {
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Unavailable(_) | StoreError::Full(_))
    }

    /// Whether the store failed for want of disk space.
    pub fn is_full(&self) -> bool {
        matches!(self, StoreError::Full(_))
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode::*;
        match e.sqlite_error_code() {
            Some(DiskFull) => StoreError::Full(e.to_string()),
            Some(DatabaseBusy | DatabaseLocked | SystemIoFailure | CannotOpen) => {
                StoreError::Unavailable(e.to_string())
            }
            _ => StoreError::Database(e.to_string()),
        }
    }
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        let text = pg_message(&e);
        if e.code() == Some(&tokio_postgres::error::SqlState::DISK_FULL) {
            StoreError::Full(text)
        } else if is_transient_pg(&e) {
            StoreError::Unavailable(text)
        } else {
            StoreError::Database(text)
        }
    }
}

/// tokio-postgres says only "db error" or "error connecting to server";
/// the server's message and the I/O cause are in the source chain.
pub(crate) fn pg_message(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{} {}: {}", db.severity(), db.code().code(), db.message());
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Whether retrying later can help: the connection is gone or the server
/// is restarting, out of resources or resolving a conflict.
fn is_transient_pg(e: &tokio_postgres::Error) -> bool {
    if let Some(code) = e.code() {
        let code = code.code();
        return code.starts_with("08") // connection exception
            || code.starts_with("53") // insufficient resources (disk full, …)
            || code.starts_with("57P") // admin/crash shutdown, cannot connect now
            || code.starts_with("58") // system error (I/O)
            || code == "40001" // serialization failure
            || code == "40P01" // deadlock detected
            || code == "55P03"; // lock not available
    }
    // No SQLSTATE: the client side failed — closed socket, I/O, connect.
    e.is_closed()
        || std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
        || e.to_string().contains("connection")
}
