//! Storing and loading a job's result: the blob path (checked JSON,
//! zstd-compressed with a header, in a `BLOB`/`bytea` column) beside the
//! same JSON stored as it is (`TEXT`, and on PostgreSQL `jsonb`), all in
//! one run, at 1 KB, 500 KB, 4 MB and 32 MB; and zstd's levels on the
//! same documents, which chose `result_blob::LEVEL`.
//!
//! `cargo bench -p joblog-store --bench results` (PostgreSQL too with
//! `JOBLOG_TEST_POSTGRES_URL`); `cargo test -p joblog-store --benches`
//! runs each once (CI's smoke test: no timing is checked).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use joblog_core::result_blob;
use joblog_core::ResultBlob;
use joblog_store::testing::json_records;
use rusqlite::{params, Connection};

const SIZES: [(&str, usize); 4] = [
    ("1 KB", 1_000),
    ("500 KB", 500_000),
    ("4 MB", 4_000_000),
    ("32 MB", 32_000_000),
];

fn sqlite() -> (tempfile::TempDir, Connection) {
    let dir = tempfile::tempdir().unwrap();
    let conn = Connection::open(dir.path().join("bench.db")).unwrap();
    // As the store opens its file: WAL, synchronous NORMAL.
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
         CREATE TABLE blobs (job_id INTEGER PRIMARY KEY, body BLOB NOT NULL);
         CREATE TABLE texts (job_id INTEGER PRIMARY KEY, body TEXT NOT NULL);",
    )
    .unwrap();
    (dir, conn)
}

/// What the engine does with a result before the store: check it is
/// JSON without building a tree, then encode it.
fn blob_of(raw: &[u8]) -> ResultBlob {
    serde_json::from_slice::<serde::de::IgnoredAny>(raw).unwrap();
    ResultBlob::encode(raw)
}

fn bench_sqlite(c: &mut Criterion) {
    let (_dir, conn) = sqlite();
    let mut group = c.benchmark_group("sqlite");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500));
    for (label, len) in SIZES {
        let raw = json_records(len);
        let text = std::str::from_utf8(&raw).unwrap();
        group.throughput(Throughput::Bytes(raw.len() as u64));
        group.bench_with_input(BenchmarkId::new("store blob", label), &raw, |b, raw| {
            b.iter(|| {
                let blob = blob_of(raw);
                conn.execute(
                    "INSERT OR REPLACE INTO blobs (job_id, body) VALUES (1, ?1)",
                    params![blob.as_bytes()],
                )
                .unwrap();
            })
        });
        group.bench_with_input(BenchmarkId::new("store text", label), &text, |b, text| {
            b.iter(|| {
                // The same check: a store of results must refuse non-JSON.
                serde_json::from_str::<serde::de::IgnoredAny>(text).unwrap();
                conn.execute(
                    "INSERT OR REPLACE INTO texts (job_id, body) VALUES (1, ?1)",
                    params![text],
                )
                .unwrap();
            })
        });
        group.bench_function(BenchmarkId::new("load blob", label), |b| {
            b.iter(|| {
                let stored: Vec<u8> = conn
                    .query_row("SELECT body FROM blobs WHERE job_id = 1", [], |r| r.get(0))
                    .unwrap();
                black_box(result_blob::decode(&stored).unwrap())
            })
        });
        group.bench_function(BenchmarkId::new("load text", label), |b| {
            b.iter(|| {
                let stored: String = conn
                    .query_row("SELECT body FROM texts WHERE job_id = 1", [], |r| r.get(0))
                    .unwrap();
                black_box(stored)
            })
        });
        let sizes: (i64, i64) = conn
            .query_row(
                "SELECT (SELECT length(body) FROM blobs), (SELECT length(CAST(body AS BLOB)) FROM texts)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        eprintln!(
            "sqlite {label}: blob {} bytes, text {} bytes ({:.1}× smaller)",
            sizes.0,
            sizes.1,
            sizes.1 as f64 / sizes.0 as f64
        );
    }
    group.finish();
}

fn bench_postgres(c: &mut Criterion) {
    let Ok(url) = std::env::var("JOBLOG_TEST_POSTGRES_URL") else {
        eprintln!(
            "postgres: skipped (set JOBLOG_TEST_POSTGRES_URL=postgres://user@host/db to measure bytea and jsonb too)"
        );
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (client, conn) = rt
        .block_on(tokio_postgres::connect(&url, tokio_postgres::NoTls))
        .unwrap();
    rt.spawn(conn);
    let schema = format!("joblog_bench_results_{}", std::process::id());
    rt.block_on(client.batch_execute(&format!(
        "CREATE SCHEMA {schema}; SET search_path = {schema};
         CREATE TABLE blobs (job_id bigint PRIMARY KEY, body bytea NOT NULL);
         CREATE TABLE texts (job_id bigint PRIMARY KEY, body text NOT NULL);
         CREATE TABLE docs (job_id bigint PRIMARY KEY, body jsonb NOT NULL);"
    )))
    .unwrap();
    let upsert = |table: &str, cast: &str| {
        format!(
            "INSERT INTO {table} (job_id, body) VALUES (1, $1{cast}) \
             ON CONFLICT (job_id) DO UPDATE SET body = EXCLUDED.body"
        )
    };
    let mut group = c.benchmark_group("postgres");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500));
    for (label, len) in SIZES {
        let raw = json_records(len);
        let text = String::from_utf8(raw.clone()).unwrap();
        group.throughput(Throughput::Bytes(raw.len() as u64));
        group.bench_function(BenchmarkId::new("store blob", label), |b| {
            let sql = upsert("blobs", "");
            b.iter(|| {
                let blob = blob_of(&raw);
                rt.block_on(client.execute(&sql, &[&blob.as_bytes()]))
                    .unwrap();
            })
        });
        group.bench_function(BenchmarkId::new("store text", label), |b| {
            let sql = upsert("texts", "");
            b.iter(|| {
                serde_json::from_str::<serde::de::IgnoredAny>(&text).unwrap();
                rt.block_on(client.execute(&sql, &[&text])).unwrap();
            })
        });
        group.bench_function(BenchmarkId::new("store jsonb", label), |b| {
            let sql = upsert("docs", "::text::jsonb");
            b.iter(|| rt.block_on(client.execute(&sql, &[&text])).unwrap())
        });
        group.bench_function(BenchmarkId::new("load blob", label), |b| {
            b.iter(|| {
                let row = rt
                    .block_on(client.query_one("SELECT body FROM blobs WHERE job_id = 1", &[]))
                    .unwrap();
                let stored: &[u8] = row.get(0);
                black_box(result_blob::decode(stored).unwrap())
            })
        });
        group.bench_function(BenchmarkId::new("load text", label), |b| {
            b.iter(|| {
                let row = rt
                    .block_on(client.query_one("SELECT body FROM texts WHERE job_id = 1", &[]))
                    .unwrap();
                black_box(row.get::<_, String>(0))
            })
        });
        group.bench_function(BenchmarkId::new("load jsonb", label), |b| {
            b.iter(|| {
                let row = rt
                    .block_on(client.query_one("SELECT body::text FROM docs WHERE job_id = 1", &[]))
                    .unwrap();
                black_box(row.get::<_, String>(0))
            })
        });
        let row = rt
            .block_on(client.query_one(
                "SELECT (SELECT pg_column_size(body) FROM blobs), \
                        (SELECT pg_column_size(body) FROM texts), \
                        (SELECT pg_column_size(body) FROM docs)",
                &[],
            ))
            .unwrap();
        let (blob, text, doc): (i32, i32, i32) = (row.get(0), row.get(1), row.get(2));
        eprintln!(
            "postgres {label}: bytea {blob} bytes, text {text} (TOAST-compressed), jsonb {doc}"
        );
    }
    group.finish();
    rt.block_on(client.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")))
        .unwrap();
}

/// zstd's levels on a 4 MB document: the time to compress it and what
/// it comes to. The blob's `LEVEL` is the one these figures chose.
fn bench_levels(c: &mut Criterion) {
    let raw = json_records(4_000_000);
    let mut group = c.benchmark_group("zstd level, 4 MB");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500));
    group.throughput(Throughput::Bytes(raw.len() as u64));
    for level in [-1, 1, 3, 6] {
        let size = zstd::bulk::compress(&raw, level).unwrap().len();
        eprintln!(
            "zstd level {level}: {size} bytes of {} ({:.1}×)",
            raw.len(),
            raw.len() as f64 / size as f64
        );
        group.bench_with_input(BenchmarkId::from_parameter(level), &level, |b, &level| {
            b.iter(|| black_box(zstd::bulk::compress(&raw, level).unwrap()))
        });
    }
    group.bench_function("decompress (level 1)", |b| {
        let packed = zstd::bulk::compress(&raw, 1).unwrap();
        b.iter(|| black_box(zstd::bulk::decompress(&packed, raw.len()).unwrap()))
    });
    group.bench_function("check JSON (IgnoredAny)", |b| {
        b.iter(|| serde_json::from_slice::<serde::de::IgnoredAny>(black_box(&raw)).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench_levels, bench_sqlite, bench_postgres);
criterion_main!(benches);
