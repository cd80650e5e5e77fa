//! The two job-log designs `joblog bench psu` measures beside joblog, on
//! the same messages in the same run: the designs the job-log post-mortem
//! moved away from. Each job's log kept as **one row rewritten per
//! message** (`UPDATE … SET log = log || ?`, one autocommit statement per
//! line), and **one autocommit INSERT per message** into a log table.
//! They live in a scratch database of their own, never in joblog's.
//!
//! Compiled only with the `bench` feature, like the rest of `baseline`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use joblog_store::bench_support::Postgres as Target;
use joblog_store::{Database, StoreError};

type Result<T> = std::result::Result<T, StoreError>;

/// A job-log design of the past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// The log is one text column of the job's row, appended to by
    /// rewriting the row for every message.
    RowRewrite,
    /// Every message is its own row, each inserted in its own transaction.
    InsertPerMessage,
}

impl Design {
    pub const ALL: [Design; 2] = [Design::RowRewrite, Design::InsertPerMessage];

    pub fn name(self) -> &'static str {
        match self {
            Design::RowRewrite => "one row rewritten per message",
            Design::InsertPerMessage => "autocommit INSERT per message",
        }
    }

    /// A short key for JSON and file names.
    pub fn key(self) -> &'static str {
        match self {
            Design::RowRewrite => "row_rewrite",
            Design::InsertPerMessage => "insert_per_message",
        }
    }
}

/// The message `line` of job `job` writes: the text of the psu job.
pub fn message(job: i64, line: u32) -> String {
    format!("message {line} of job {job}")
}

/// The designs' scratch database.
#[derive(Clone)]
pub struct Designs {
    backend: Backend,
}

#[derive(Clone)]
enum Backend {
    Sqlite(PathBuf),
    Postgres(Arc<Target>),
}

const SQLITE_SCHEMA: &str = "
    PRAGMA journal_mode = WAL;
    CREATE TABLE IF NOT EXISTS rowlog (job_id INTEGER PRIMARY KEY, log TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS msglog (
        id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, ts INTEGER NOT NULL, message TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS msglog_job ON msglog (job_id);";

const POSTGRES_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS rowlog (job_id bigint PRIMARY KEY, log text NOT NULL);
    CREATE TABLE IF NOT EXISTS msglog (
        id bigserial PRIMARY KEY, job_id bigint NOT NULL, ts bigint NOT NULL, message text NOT NULL);
    CREATE INDEX IF NOT EXISTS msglog_job ON msglog (job_id);";

fn now_us() -> i64 {
    joblog_core::Timestamp::now().micros()
}

fn blocking_failed(e: tokio::task::JoinError) -> StoreError {
    StoreError::Database(format!("a baseline thread failed: {e}"))
}

/// SQLite as a server's writer would have it: WAL, `synchronous = NORMAL`,
/// waiting for the write lock rather than failing.
fn sqlite(path: &std::path::Path) -> Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(60))?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(conn)
}

impl Designs {
    /// Makes the designs' tables in the scratch database at `url`.
    pub async fn create(url: &str) -> Result<Designs> {
        let backend = match Database::of(url)? {
            Database::Sqlite(path) => {
                let path = path.to_path_buf();
                let p = path.clone();
                tokio::task::spawn_blocking(move || -> Result<()> {
                    Ok(sqlite(&p)?.execute_batch(SQLITE_SCHEMA)?)
                })
                .await
                .map_err(blocking_failed)??;
                Backend::Sqlite(path)
            }
            Database::Postgres => {
                let target = Arc::new(Target::parse(url)?);
                let client = connect(&target).await?;
                client.batch_execute(POSTGRES_SCHEMA).await?;
                Backend::Postgres(target)
            }
        };
        Ok(Designs { backend })
    }

    /// Adds the finished jobs `first..first + jobs`, `lines` messages
    /// each, the fastest way in (not timed): the database grows to the
    /// size the next measurement is made at.
    pub async fn fill(&self, design: Design, first: i64, jobs: u64, lines: u32) -> Result<()> {
        let last = first + jobs as i64 - 1;
        if jobs == 0 {
            return Ok(());
        }
        match &self.backend {
            Backend::Sqlite(path) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || fill_sqlite(&path, design, first, last, lines))
                    .await
                    .map_err(blocking_failed)?
            }
            Backend::Postgres(target) => {
                let client = connect(target).await?;
                // Made by the server itself: no rows cross the wire.
                let sql = match design {
                    Design::RowRewrite => {
                        "INSERT INTO rowlog (job_id, log) \
                         SELECT j, string_agg('message ' || s || ' of job ' || j || E'\\n', '' ORDER BY s) \
                         FROM generate_series($1::bigint, $2::bigint) j, generate_series(1, $3::int) s GROUP BY j"
                    }
                    Design::InsertPerMessage => {
                        "INSERT INTO msglog (job_id, ts, message) \
                         SELECT j, $4::bigint, 'message ' || s || ' of job ' || j \
                         FROM generate_series($1::bigint, $2::bigint) j, generate_series(1, $3::int) s ORDER BY j, s"
                    }
                };
                let n = lines as i32;
                let ts = now_us();
                match design {
                    Design::RowRewrite => client.execute(sql, &[&first, &last, &n]).await?,
                    Design::InsertPerMessage => {
                        client.execute(sql, &[&first, &last, &n, &ts]).await?
                    }
                };
                Ok(())
            }
        }
    }

    /// Runs job `id` the design's way: `lines` messages, each written by
    /// its own autocommit statement on the job's own connection (opened
    /// before the clock starts). Returns the time from before the first
    /// write to after the last.
    pub async fn run_job(&self, design: Design, id: i64, lines: u32) -> Result<Duration> {
        match &self.backend {
            Backend::Sqlite(path) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || run_sqlite(&path, design, id, lines))
                    .await
                    .map_err(blocking_failed)?
            }
            Backend::Postgres(target) => {
                let client = connect(target).await?;
                let started = Instant::now();
                match design {
                    Design::RowRewrite => {
                        client
                            .execute("INSERT INTO rowlog (job_id, log) VALUES ($1, '')", &[&id])
                            .await?;
                        let update = client
                            .prepare("UPDATE rowlog SET log = log || $2 WHERE job_id = $1")
                            .await?;
                        for line in 1..=lines {
                            let text = message(id, line) + "\n";
                            client.execute(&update, &[&id, &text]).await?;
                        }
                    }
                    Design::InsertPerMessage => {
                        let insert = client
                            .prepare("INSERT INTO msglog (job_id, ts, message) VALUES ($1, $2, $3)")
                            .await?;
                        for line in 1..=lines {
                            client
                                .execute(&insert, &[&id, &now_us(), &message(id, line)])
                                .await?;
                        }
                    }
                }
                Ok(started.elapsed())
            }
        }
    }

    /// Reads job `id`'s whole log the design's way, into its lines.
    /// Returns how many there were and how long the read took (the
    /// connection opened before the clock starts).
    pub async fn read_job(&self, design: Design, id: i64) -> Result<(usize, Duration)> {
        match &self.backend {
            Backend::Sqlite(path) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || read_sqlite(&path, design, id))
                    .await
                    .map_err(blocking_failed)?
            }
            Backend::Postgres(target) => {
                let client = connect(target).await?;
                let started = Instant::now();
                let n = match design {
                    Design::RowRewrite => {
                        let row = client
                            .query_opt("SELECT log FROM rowlog WHERE job_id = $1", &[&id])
                            .await?;
                        row.map_or(0, |r| r.get::<_, String>(0).lines().count())
                    }
                    Design::InsertPerMessage => {
                        let rows = client
                            .query(
                                "SELECT ts, message FROM msglog WHERE job_id = $1 ORDER BY id",
                                &[&id],
                            )
                            .await?;
                        let lines: Vec<(i64, String)> =
                            rows.iter().map(|r| (r.get(0), r.get(1))).collect();
                        lines.len()
                    }
                };
                Ok((n, started.elapsed()))
            }
        }
    }
}

async fn connect(target: &Target) -> Result<tokio_postgres::Client> {
    let (client, _driver) = target.connect().await?;
    Ok(client)
}

fn fill_sqlite(
    path: &std::path::Path,
    design: Design,
    first: i64,
    last: i64,
    lines: u32,
) -> Result<()> {
    let mut conn = sqlite(path)?;
    let ts = now_us();
    // Transactions of about 100,000 messages.
    let per_tx = (100_000 / i64::from(lines.max(1))).max(1);
    let mut job = first;
    while job <= last {
        let tx = conn.transaction()?;
        {
            let mut row = tx.prepare_cached("INSERT INTO rowlog (job_id, log) VALUES (?1, ?2)")?;
            let mut msg =
                tx.prepare_cached("INSERT INTO msglog (job_id, ts, message) VALUES (?1, ?2, ?3)")?;
            for j in job..=(job + per_tx - 1).min(last) {
                match design {
                    Design::RowRewrite => {
                        let log: String = (1..=lines).map(|l| message(j, l) + "\n").collect();
                        row.execute(rusqlite::params![j, log])?;
                    }
                    Design::InsertPerMessage => {
                        for l in 1..=lines {
                            msg.execute(rusqlite::params![j, ts, message(j, l)])?;
                        }
                    }
                }
            }
        }
        tx.commit()?;
        job += per_tx;
    }
    Ok(())
}

fn run_sqlite(path: &std::path::Path, design: Design, id: i64, lines: u32) -> Result<Duration> {
    let conn = sqlite(path)?;
    let started = Instant::now();
    match design {
        Design::RowRewrite => {
            conn.execute("INSERT INTO rowlog (job_id, log) VALUES (?1, '')", [id])?;
            let mut update = conn.prepare("UPDATE rowlog SET log = log || ?2 WHERE job_id = ?1")?;
            for line in 1..=lines {
                update.execute(rusqlite::params![id, message(id, line) + "\n"])?;
            }
        }
        Design::InsertPerMessage => {
            let mut insert =
                conn.prepare("INSERT INTO msglog (job_id, ts, message) VALUES (?1, ?2, ?3)")?;
            for line in 1..=lines {
                insert.execute(rusqlite::params![id, now_us(), message(id, line)])?;
            }
        }
    }
    Ok(started.elapsed())
}

fn read_sqlite(path: &std::path::Path, design: Design, id: i64) -> Result<(usize, Duration)> {
    let conn = sqlite(path)?;
    let started = Instant::now();
    let n = match design {
        Design::RowRewrite => {
            let log: Option<String> = conn
                .query_row("SELECT log FROM rowlog WHERE job_id = ?1", [id], |r| {
                    r.get(0)
                })
                .map(Some)
                .or_else(|e| match e {
                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                    e => Err(e),
                })?;
            log.map_or(0, |l| l.lines().count())
        }
        Design::InsertPerMessage => {
            let mut stmt =
                conn.prepare("SELECT ts, message FROM msglog WHERE job_id = ?1 ORDER BY id")?;
            let rows =
                stmt.query_map([id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
            rows.collect::<std::result::Result<Vec<_>, _>>()?.len()
        }
    };
    Ok((n, started.elapsed()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each design keeps every message of a job it ran and of the jobs it
    /// was filled with, and reads them back; on SQLite (PostgreSQL: the
    /// psu bench's end-to-end test).
    #[tokio::test]
    async fn each_design_writes_and_reads_back_every_message() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("designs.db").display());
        let designs = Designs::create(&url).await.unwrap();
        for design in Design::ALL {
            designs.fill(design, 1, 3, 50).await.unwrap();
            designs.run_job(design, 4, 20).await.unwrap();
            for (job, lines) in [(1, 50), (3, 50), (4, 20), (5, 0)] {
                let (n, _) = designs.read_job(design, job).await.unwrap();
                assert_eq!(n, lines, "{design:?} job {job}");
            }
        }
        let conn = rusqlite::Connection::open(dir.path().join("designs.db")).unwrap();
        let log: String = conn
            .query_row("SELECT log FROM rowlog WHERE job_id = 4", [], |r| r.get(0))
            .unwrap();
        assert!(
            log.starts_with("message 1 of job 4\nmessage 2 of job 4\n"),
            "{log}"
        );
        let last: String = conn
            .query_row(
                "SELECT message FROM msglog WHERE job_id = 3 ORDER BY id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(last, "message 50 of job 3");
    }
}
