//! The raw write limit of a database, for `joblog bench ingest`: the same
//! records written by plain client code, without joblog's pipeline, so the
//! pipeline's throughput can be stated as a share of what the database
//! takes at all. PostgreSQL is measured three ways, to show why the writer
//! uses binary COPY.
//!
//! `designs` holds the two job-log designs `bench psu` sets beside
//! joblog, and `size` a database's bytes on disk for the storage figure.
//!
//! Compiled only with the `bench` feature, which only the `joblog` binary
//! enables: nothing else links this code.

pub mod designs;
mod size;

pub use size::{database_bytes, index_bytes, live_bytes, segment_bytes};

use std::time::{Duration, Instant};

use joblog_core::{JobId, Record};
use tokio_postgres::types::ToSql;

use joblog_store::bench_support::fields_text;
use joblog_store::StoreError;

type Result<T> = std::result::Result<T, StoreError>;

/// How the records are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// A prepared single-row INSERT per record, one transaction per batch
    /// (what the SQLite writer does).
    Insert,
    /// PostgreSQL: one `INSERT … SELECT FROM unnest($1, $2, …)` per batch.
    Unnest,
    /// PostgreSQL: one binary `COPY … FROM STDIN` per batch (what the
    /// PostgreSQL writer does).
    Copy,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Insert => "prepared INSERT per record",
            Method::Unnest => "INSERT … SELECT FROM unnest(arrays)",
            Method::Copy => "binary COPY",
        }
    }
}

/// The methods that apply to the database `url` names, fastest expected
/// last.
pub fn methods(url: &str) -> Vec<Method> {
    if is_postgres(url) {
        vec![Method::Insert, Method::Unnest, Method::Copy]
    } else {
        vec![Method::Insert]
    }
}

fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// One transaction's worth: runs of records, each of one job.
pub type Batch = Vec<(JobId, Vec<Record>)>;

/// Writes the batches into the log table of the (already migrated)
/// database at `url`, one transaction each, and returns how long that
/// took. Blocking; call from a blocking thread.
pub fn write(url: &str, method: Method, batches: &[Batch]) -> Result<Duration> {
    if is_postgres(url) {
        write_postgres(url, method, batches)
    } else {
        write_sqlite(url, batches)
    }
}

fn flat(batch: &Batch) -> impl Iterator<Item = (&JobId, &Record)> + Clone {
    batch
        .iter()
        .flat_map(|(j, rs)| rs.iter().map(move |r| (j, r)))
}

fn write_sqlite(url: &str, batches: &[Batch]) -> Result<Duration> {
    let path = url.strip_prefix("sqlite://").unwrap_or(url);
    let mut conn = rusqlite::Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let started = Instant::now();
    for chunk in batches {
        let tx = conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO log (job_id, seq, ts, stream, message, fields) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for (job, r) in flat(chunk) {
                stmt.execute(rusqlite::params![
                    job,
                    r.seq as i64,
                    r.ts.micros(),
                    r.stream.code(),
                    r.message,
                    fields_text(r)
                ])?;
            }
        }
        tx.commit()?;
    }
    Ok(started.elapsed())
}

fn write_postgres(url: &str, method: Method, batches: &[Batch]) -> Result<Duration> {
    // The store's own way in, TLS included, so both sides of the
    // comparison pay for the same encryption.
    let target = joblog_store::bench_support::Postgres::parse(url)?;
    // Like the writer: the connection is driven by a worker thread while
    // this thread encodes, so the baseline is not handicapped by doing
    // both on one thread.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| StoreError::Database(format!("starting a runtime: {e}")))?;
    rt.block_on(async move {
        let (mut client, _driver) = target.connect().await?;
        client.batch_execute("SET synchronous_commit TO on").await?;
        // Partitions first, outside the timing: the writer makes them once
        // per 10,000 jobs.
        let mut parts: Vec<i64> = batches
            .iter()
            .flatten()
            .map(|(j, _)| j.div_euclid(joblog_store::bench_support::PARTITION_JOBS))
            .collect();
        parts.sort_unstable();
        parts.dedup();
        let tx = client.transaction().await?;
        for p in parts {
            joblog_store::bench_support::create_partition(&tx, p).await?;
        }
        tx.commit().await?;

        let insert = client
            .prepare(
                "INSERT INTO log (job_id, seq, ts, stream, message, fields) VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .await?;
        let unnest = client
            .prepare(
                "INSERT INTO log (job_id, seq, ts, stream, message, fields) \
                 SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::smallint[], $5::bytea[], $6::text[])",
            )
            .await?;
        let started = Instant::now();
        for chunk in batches {
            let tx = client.transaction().await?;
            match method {
                Method::Insert => {
                    for (job, r) in flat(chunk) {
                        let (seq, ts, stream) = (r.seq as i64, r.ts.micros(), r.stream.code() as i16);
                        let fields = fields_text(r);
                        let params: [&(dyn ToSql + Sync); 6] =
                            [job, &seq, &ts, &stream, &r.message.as_bytes(), &fields];
                        tx.execute(&insert, &params).await?;
                    }
                }
                Method::Unnest => {
                    let rows = flat(chunk);
                    let jobs: Vec<i64> = rows.clone().map(|(j, _)| *j).collect();
                    let seqs: Vec<i64> = rows.clone().map(|(_, r)| r.seq as i64).collect();
                    let ts: Vec<i64> = rows.clone().map(|(_, r)| r.ts.micros()).collect();
                    let streams: Vec<i16> =
                        rows.clone().map(|(_, r)| r.stream.code() as i16).collect();
                    let messages: Vec<&[u8]> =
                        rows.clone().map(|(_, r)| r.message.as_bytes()).collect();
                    let fields: Vec<Option<String>> = rows.map(|(_, r)| fields_text(r)).collect();
                    tx.execute(&unnest, &[&jobs, &seqs, &ts, &streams, &messages, &fields])
                        .await?;
                }
                // The writer's own COPY routine.
                Method::Copy => {
                    joblog_store::bench_support::copy_records(&tx, chunk.iter().map(|(j, rs)| (*j, rs)))
                        .await?
                }
            }
            tx.commit().await?;
        }
        Ok(started.elapsed())
    })
}
