//! A PostgreSQL database of its own for one benchmark run, made on the
//! server a `postgres://` URL names and dropped afterwards, so that every
//! run starts from an empty store whatever the given database holds.
//!
//! Compiled only with the `bench` feature, which only the `joblog` binary
//! enables.

use std::sync::atomic::{AtomicU64, Ordering};

use joblog_store::bench_support::{quote_ident, with_dbname, Postgres as Target};
use joblog_store::StoreError;

type Result<T> = std::result::Result<T, StoreError>;

/// A database made by [`ScratchDatabase::create`]; give it back with
/// [`ScratchDatabase::drop_database`] (a killed bench leaves it behind,
/// named so that it is recognisable: `<prefix>_<pid>_<n>`).
pub struct ScratchDatabase {
    /// The URL given, connected to for `CREATE` and `DROP` (a database
    /// cannot be dropped from a session on it).
    admin: Target,
    name: String,
    url: String,
}

impl ScratchDatabase {
    /// Creates `<prefix>_<pid>_<n>` on the server of `url`, connecting
    /// the way the store does (TLS as the URL's `sslmode` says). `prefix`
    /// is lower-case letters, digits and `_`.
    pub async fn create(url: &str, prefix: &str) -> Result<ScratchDatabase> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let admin = Target::parse(url)?;
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("{prefix}_{}_{n}", std::process::id());
        let new_url = with_dbname(url, &name)
            .ok_or_else(|| StoreError::Config("database URL: expected postgres://…".into()))?;
        // A leftover of a killed run with the same pid would make CREATE fail.
        let quoted = quote_ident(&name);
        execute(
            &admin,
            &format!("DROP DATABASE IF EXISTS {quoted} WITH (FORCE)"),
        )
        .await?;
        execute(&admin, &format!("CREATE DATABASE {quoted}")).await?;
        Ok(ScratchDatabase {
            admin,
            name,
            url: new_url,
        })
    }

    /// The new database's URL: the given one with another database name.
    /// May hold a password: don't print it.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Drops the database, cutting any session still on it.
    pub async fn drop_database(self) -> Result<()> {
        let sql = format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            quote_ident(&self.name)
        );
        execute(&self.admin, &sql).await
    }
}

/// One statement on a connection of its own, closed before returning so
/// that the server has ended the session before the next statement comes.
async fn execute(target: &Target, sql: &str) -> Result<()> {
    let (client, driver) = target.connect().await?;
    let result = client.batch_execute(sql).await;
    drop(client);
    let _ = driver.await;
    Ok(result?)
}
