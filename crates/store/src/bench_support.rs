//! What `joblog bench`'s baseline designs (crates/bench) take from the
//! store, so that a baseline pays for what the store pays: its way into
//! PostgreSQL (TLS as the URL's `sslmode` says, notices logged), its COPY
//! of records and its partitions. Compiled only with the `bench` feature,
//! which only `joblog-bench` enables.

use joblog_core::{JobId, Record};
use tokio_postgres::{Client, Transaction};

pub use crate::postgres::partitions::PARTITION_JOBS;
use crate::Result;

/// `url` naming the database `dbname` instead; `None` for a URL that is
/// not PostgreSQL's.
pub fn with_dbname(url: &str, dbname: &str) -> Option<String> {
    crate::postgres::dbname::with_dbname(url, dbname)
}

/// `name` quoted as an SQL identifier.
pub fn quote_ident(name: &str) -> String {
    crate::postgres::dbname::quote_ident(name)
}

/// A record's fields as the store keeps them (JSON text, or none).
pub fn fields_text(r: &Record) -> Option<String> {
    crate::rows::fields_text(r)
}

/// A PostgreSQL server as the store reaches it.
pub struct Postgres(crate::postgres::Target);

impl Postgres {
    pub fn parse(url: &str) -> Result<Postgres> {
        crate::postgres::Target::parse(url).map(Postgres)
    }

    /// A connection, and the task that drives it (ends when the client is
    /// dropped).
    pub async fn connect(&self) -> Result<(Client, tokio::task::JoinHandle<()>)> {
        let (client, conn) = self.0.connect().await?;
        let driver = tokio::spawn(async move {
            let _ = crate::postgres::notices::drive(conn).await;
        });
        Ok((client, driver))
    }
}

/// The log partition `p` (jobs `p * PARTITION_JOBS` and up), as the writer
/// makes it.
pub async fn create_partition(tx: &Transaction<'_>, p: i64) -> Result<()> {
    crate::postgres::partitions::create_partition(tx.client(), p).await
}

/// Records in one binary COPY, as the writer sends them.
pub async fn copy_records<'a>(
    tx: &Transaction<'_>,
    appends: impl Iterator<Item = (JobId, &'a Vec<Record>)>,
) -> Result<()> {
    crate::postgres::writer::batch::copy_records(tx.client(), appends).await
}
