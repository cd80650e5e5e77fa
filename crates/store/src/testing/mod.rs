//! Throwaway databases for tests, so that one suite runs against every store.
//!
//! [`TestDatabase::sqlite`] is a fresh file in a new temp dir;
//! [`TestDatabase::postgres`] creates a fresh database on the server that
//! `JOBLOG_TEST_POSTGRES_URL` names and drops it again on `Drop`. Without
//! that variable PostgreSQL tests are skipped (with one note on stderr), so a
//! developer without a server still runs the SQLite half; with it, an
//! unreachable server fails the test, so CI cannot pass by skipping.
//! [`backend_tests!`](crate::backend_tests) runs each test of a suite once
//! per backend. [`PrivateCluster`] is a PostgreSQL server of a test's own.
//!
//! Compiled only with the `testing` feature: other crates take it as
//! `[dev-dependencies] joblog-store = { path = "../store", features = ["testing"] }`.

use std::fmt;
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;
use std::time::Duration;

use tempfile::TempDir;

use crate::postgres::dbname::{quote_ident, with_dbname};

mod cluster;

pub use cluster::PrivateCluster;

/// Instantiates each behaviour test of a suite once per backend, so that one
/// suite checks that every store behaves the same.
///
/// Each name is an `async fn(TestDatabase)` of the calling module. The macro
/// adds two modules beside them: `sqlite::<name>` runs the test on a fresh
/// SQLite file, `postgres::<name>` on a fresh PostgreSQL database, and
/// returns early (and passes) when no test server is configured
/// ([`TestDatabase::postgres`](crate::testing::TestDatabase::postgres) says
/// so on stderr).
///
/// The tests are `#[tokio::test]`s on a current-thread runtime, unless the
/// list starts with the test attribute to use instead, e.g. a multi-threaded
/// runtime for suites whose jobs and requests run side by side. The
/// attribute is expanded in the calling crate, which must depend on `tokio`
/// (with its `macros` feature).
///
/// ```ignore
/// use joblog_store::testing::TestDatabase;
///
/// joblog_store::backend_tests! {
///     #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
///     a_job_runs_to_the_end,
///     a_cancelled_job_stops,
/// }
///
/// async fn a_job_runs_to_the_end(db: TestDatabase) { /* … */ }
/// ```
#[macro_export]
macro_rules! backend_tests {
    (#[$test:meta] $($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[$test]
                async fn $name() {
                    super::$name($crate::testing::TestDatabase::sqlite()).await;
                }
            )*
        }

        mod postgres {
            $(
                #[$test]
                async fn $name() {
                    let Some(db) = $crate::testing::TestDatabase::postgres() else {
                        return;
                    };
                    super::$name(db).await;
                }
            )*
        }
    };
    ($($name:ident),* $(,)?) => {
        $crate::backend_tests! { #[tokio::test] $($name),* }
    };
}

/// The environment variable naming the PostgreSQL server for tests.
pub const POSTGRES_URL_VAR: &str = "JOBLOG_TEST_POSTGRES_URL";

/// Which store a [`TestDatabase`] is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A database that exists for one test: its URL for `joblog_store::open`,
/// and a temp dir for whatever files the test needs beside it (results dir
/// etc.), removed on drop. A PostgreSQL database is dropped on drop too.
pub struct TestDatabase {
    url: String,
    backend: Backend,
    // Dropped after the PostgreSQL database (see `Drop`), and by its own
    // drop: the directory and the SQLite file in it.
    dir: TempDir,
    pg: Option<PgAdmin>,
}

/// What it takes to drop a test database again: a connection config for
/// the database the variable names (never the test's own one, which cannot
/// be dropped while connected to) and the test database's name.
struct PgAdmin {
    admin: tokio_postgres::Config,
    dbname: String,
}

impl TestDatabase {
    /// A fresh SQLite file in a new temp dir: url `sqlite:///tmp/…/joblog.db`.
    pub fn sqlite() -> TestDatabase {
        let dir = new_dir();
        let url = format!("sqlite://{}", dir.path().join("joblog.db").display());
        TestDatabase {
            url,
            backend: Backend::Sqlite,
            dir,
            pg: None,
        }
    }

    /// A fresh PostgreSQL database on the server named by
    /// `JOBLOG_TEST_POSTGRES_URL` (e.g. `postgres://postgres@127.0.0.1:5432/test`),
    /// dropped again on drop; its URL is the variable's with the new
    /// database's name.
    ///
    /// `None` when the variable is unset or empty (the test should then
    /// return early; a note saying so goes to stderr once per process).
    /// Panics when it is set but the database cannot be created (server
    /// down, wrong URL, no CREATEDB right): CI must fail, not skip.
    ///
    /// Works from any context, also inside a `#[tokio::test]`: the SQL runs
    /// on a thread of its own with its own runtime.
    pub fn postgres() -> Option<TestDatabase> {
        let server_url = match std::env::var(POSTGRES_URL_VAR) {
            Ok(url) if !url.trim().is_empty() => url,
            Ok(_) | Err(std::env::VarError::NotPresent) => {
                note_postgres_skipped();
                return None;
            }
            Err(std::env::VarError::NotUnicode(_)) => {
                panic!("{POSTGRES_URL_VAR} is not valid UTF-8")
            }
        };
        let mut admin: tokio_postgres::Config = server_url.parse().unwrap_or_else(|e| {
            // The parse error names the bad part, never the whole URL, which
            // may hold a password.
            panic!("{POSTGRES_URL_VAR} is not a PostgreSQL URL: {e}")
        });
        if admin.get_connect_timeout().is_none() {
            // A server that does not answer must fail the test in seconds,
            // not hang CI until its own timeout.
            admin.connect_timeout(Duration::from_secs(10));
        }
        let dbname = unique_name();
        let url = with_dbname(&server_url, &dbname)
            .unwrap_or_else(|| panic!("{POSTGRES_URL_VAR} must be a postgres://… URL"));
        let server = describe(&admin);

        let create = format!("CREATE DATABASE {}", quote_ident(&dbname));
        if let Err(e) = run_sql(&admin, create) {
            panic!(
                "{POSTGRES_URL_VAR} is set, but creating test database {dbname} on {server} failed: {e}\n\
                 (is the server running and does the user have CREATEDB? unset {POSTGRES_URL_VAR} to skip PostgreSQL tests)"
            );
        }
        Some(TestDatabase {
            url,
            backend: Backend::Postgres,
            dir: new_dir(),
            pg: Some(PgAdmin { admin, dbname }),
        })
    }

    /// A fresh database of `backend`; `None` only for PostgreSQL without
    /// `JOBLOG_TEST_POSTGRES_URL` (see [`TestDatabase::postgres`]).
    pub fn new(backend: Backend) -> Option<TestDatabase> {
        match backend {
            Backend::Sqlite => Some(TestDatabase::sqlite()),
            Backend::Postgres => TestDatabase::postgres(),
        }
    }

    /// The URL to pass to `joblog_store::open`. May hold a password: don't
    /// print it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A temp dir for files beside the database (for SQLite, the database
    /// file `joblog.db` is in it too).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }
}

/// About `len` bytes (at most, and one record at least) of a JSON array
/// of records as a report job writes them: repeated keys, host names,
/// numbers, flags and non-ASCII text. Results of a realistic shape for
/// the store's tests and its bench.
pub fn json_records(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 256);
    out.push(b'[');
    let mut i: u64 = 0;
    while out.len() < len.saturating_sub(120) || i == 0 {
        if i > 0 {
            out.push(b',');
        }
        let row = serde_json::json!({
            "id": i,
            "host": format!("web-{:03}.example.net", i % 997),
            "ok": !i.is_multiple_of(7),
            "latency_ms": (i % 1000) as f64 / 8.0,
            "tags": ["deploy", "ü", i.to_string()],
        });
        serde_json::to_writer(&mut out, &row).expect("writing into a Vec");
        i += 1;
    }
    out.push(b']');
    out
}

/// A plain connection to a PostgreSQL test database, for a test that
/// reads or changes it behind the store's back. [`PgSession::close`]
/// waits for the connection to end, so the database can be dropped after.
pub struct PgSession {
    pub client: tokio_postgres::Client,
    driver: tokio::task::JoinHandle<()>,
}

impl PgSession {
    pub async fn connect(url: &str) -> PgSession {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to the test database: {e}"));
        let driver = tokio::spawn(async move {
            let _ = conn.await;
        });
        PgSession { client, driver }
    }

    pub async fn close(self) {
        drop(self.client);
        let _ = self.driver.await;
    }
}

impl fmt::Debug for TestDatabase {
    // By hand, so that a password in the URL never ends up in test output.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("TestDatabase");
        d.field("backend", &self.backend);
        match &self.pg {
            Some(pg) => d.field("database", &pg.dbname),
            None => d.field("url", &self.url),
        };
        d.field("dir", &self.dir.path()).finish()
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let Some(pg) = self.pg.take() else { return };
        // FORCE: a store under test may still hold connections (a leaked
        // Arc, a listener task); they are cut rather than failing the drop.
        let drop_sql = format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            quote_ident(&pg.dbname)
        );
        if let Err(e) = run_sql(&pg.admin, drop_sql) {
            // No panic here: this may run while a failed test unwinds, where
            // a second panic would abort the whole test binary.
            let _ = writeln!(
                std::io::stderr(),
                "warning: could not drop test database {} on {}: {e}",
                pg.dbname,
                describe(&pg.admin)
            );
        }
    }
}

fn new_dir() -> TempDir {
    tempfile::Builder::new()
        .prefix("joblog-test-")
        .tempdir()
        .expect("cannot create a temp dir for a test database")
}

/// Writes the skip note once per process, straight to stderr: libtest
/// captures `eprintln!` of passing tests, so a note sent that way would
/// never be seen and skipped tests would look like passing ones.
fn note_postgres_skipped() {
    static NOTE: Once = Once::new();
    NOTE.call_once(|| {
        let _ = writeln!(
            std::io::stderr(),
            "note: PostgreSQL tests SKIPPED — set {POSTGRES_URL_VAR}=postgres://postgres@127.0.0.1:5432/test to run them"
        );
    });
}

/// `joblog_t_<pid>_<counter>_<random>`: the pid and counter keep parallel
/// tests and test binaries apart; the random part keeps a run apart from
/// leftovers of an earlier one (a killed run cannot drop its databases) that
/// had the same pid.
fn unique_name() -> String {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    // RandomState is seeded randomly per process (and varies per call), so
    // this needs no random-number crate.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(n);
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    let random = h.finish() & 0xffff_ffff;
    format!("joblog_t_{}_{n}_{random:08x}", std::process::id())
}

/// `user@host:port` of a config, for messages; never the password.
fn describe(config: &tokio_postgres::Config) -> String {
    crate::postgres::server(config)
}

/// What went wrong, for a test's failure message (never the password).
fn pg_error(e: &tokio_postgres::Error) -> String {
    crate::error::pg_message(e)
}

/// Runs one statement on a connection of its own, on a new thread with its
/// own runtime, so that it works from synchronous code, from `Drop`, and
/// from inside an async test alike (a runtime cannot be blocked on from
/// within another one).
fn run_sql(config: &tokio_postgres::Config, sql: String) -> Result<(), String> {
    let config = config.clone();
    let thread = std::thread::Builder::new()
        .name("joblog-test-db".into())
        .spawn(move || -> Result<(), String> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot build a runtime: {e}"))?;
            rt.block_on(async move {
                let (client, connection) = config
                    .connect(tokio_postgres::NoTls)
                    .await
                    .map_err(|e| format!("cannot connect: {}", pg_error(&e)))?;
                let conn = tokio::spawn(connection);
                let result = client.batch_execute(&sql).await.map_err(|e| pg_error(&e));
                // Closing the client ends the connection task; waiting for
                // it means the server has seen the session end before the
                // next statement (a DROP after this CREATE) comes.
                drop(client);
                let _ = conn.await;
                result
            })
        })
        .map_err(|e| format!("cannot start a thread: {e}"))?;
    thread
        .join()
        .unwrap_or_else(|_| Err("the database thread panicked".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_valid_identifiers() {
        let a = unique_name();
        let b = unique_name();
        assert_ne!(a, b);
        for name in [&a, &b] {
            assert!(name.starts_with("joblog_t_"), "{name}");
            assert!(
                name.len() <= 63,
                "PostgreSQL truncates longer names: {name}"
            );
            assert!(
                name.bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_'),
                "{name}"
            );
        }
    }

    #[test]
    fn sqlite_databases_are_files_in_their_own_dir() {
        let a = TestDatabase::sqlite();
        let b = TestDatabase::sqlite();
        assert_eq!(a.backend(), Backend::Sqlite);
        assert_eq!(
            a.url(),
            format!("sqlite://{}", a.dir().join("joblog.db").display())
        );
        assert!(a.url().starts_with("sqlite:///"), "{}", a.url());
        assert_ne!(a.dir(), b.dir());
        let dir = a.dir().to_path_buf();
        assert!(dir.is_dir());
        drop(a);
        assert!(!dir.exists(), "the temp dir goes with the database");
    }

    #[test]
    fn describe_never_shows_the_password() {
        let config: tokio_postgres::Config = "postgres://alice:s3cret@db.example:6543/test"
            .parse()
            .unwrap();
        assert_eq!(describe(&config), "alice@db.example:6543");
    }

    /// Creation and drop against a real server (skipped without one),
    /// from inside a current-thread runtime as the store tests call them.
    #[tokio::test]
    async fn postgres_databases_are_created_and_dropped() {
        let Some(db) = TestDatabase::postgres() else {
            return;
        };
        assert_eq!(db.backend(), Backend::Postgres);
        assert!(db.dir().is_dir());
        let dbname = db.pg.as_ref().unwrap().dbname.clone();
        assert!(format!("{db:?}").contains(&dbname));
        assert!(
            db.url().ends_with(&format!("/{dbname}")) || db.url().contains(&format!("/{dbname}?"))
        );

        // The URL reaches the new, empty database.
        let (client, conn) = db
            .url()
            .parse::<tokio_postgres::Config>()
            .unwrap()
            .connect(tokio_postgres::NoTls)
            .await
            .unwrap();
        let conn = tokio::spawn(conn);
        let row = client
            .query_one("SELECT current_database()", &[])
            .await
            .unwrap();
        assert_eq!(row.get::<_, String>(0), dbname);
        // Left connected on purpose: the drop must not fail on it.

        let admin = db.pg.as_ref().unwrap().admin.clone();
        let dir = db.dir().to_path_buf();
        drop(db);
        assert!(!dir.exists());
        let _ = conn.await;
        drop(client);
        let (client, conn) = admin.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        let row = client
            .query_one(
                "SELECT count(*) FROM pg_database WHERE datname = $1",
                &[&dbname],
            )
            .await
            .unwrap();
        assert_eq!(row.get::<_, i64>(0), 0, "{dbname} was dropped");
    }
}
