//! `joblog bench search`: a search across every job's log on a store of
//! --store-records sealed records (10M; --quick: 200K), 1,000 per job, of
//! varied text (request lines with ids and timings, stack traces, SQL,
//! JSON, warnings and errors) over a year of jobs. The logs are sealed as
//! the sealer seals them (`SealSlice::encode`: the segment and its text
//! index, both timed) and written straight into the server's database.
//! Then `GET /api/v1/search` is timed, in turn, for a rare term (in 1 job
//! of them all), the same as a regular expression, a common term, a term
//! found nowhere, and the rare term within the last 30 days: the first
//! page and the whole answer (every page to the end), with what each
//! page read (segments read, skipped by their index).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use joblog_core::search::build_index;
use joblog_core::{Record, Stream, Timestamp};
use joblog_store::sealed::SealSlice;
use serde_json::{json, Value};

use super::chart::{Bar, Chart};
use super::output::Report;
use super::server::on_own_server;
use super::stats::{fmt_ms, median, percentile};
use super::BenchArgs;

/// Records per job (one segment each).
const PER_JOB: u64 = 1_000;
/// The budgets of the issue (docs/benchmarks.md), p99 in ms, SQLite.
const RARE_BUDGET_MS: f64 = 200.0;
const COMMON_BUDGET_MS: f64 = 100.0;
const ABSENT_BUDGET_MS: f64 = 200.0;
/// The index's bytes at most, as a share of the sealed bytes.
const INDEX_BUDGET: f64 = 0.20;

const RARE: &str = "zanzibar-quokka";
const COMMON: &str = "request";
const ABSENT: &str = "vexillology";

/// The searches timed: a label, the query string, and whether it is
/// one of the budgets' (rare, common, absent).
const QUERIES: [(&str, &str); 5] = [
    ("rare term", "q=zanzibar-quokka"),
    (
        "rare, regex",
        "q=zanzibar-quokka-%5B0-9a-f%5D%7B4%7D&regex=true",
    ),
    ("common term", "q=request"),
    ("term found nowhere", "q=vexillology"),
    ("rare, last 30 days", "q=zanzibar-quokka&since=30d"),
];

#[derive(serde::Serialize, Default)]
struct Timed {
    first_page_ms: Vec<f64>,
    answer_ms: Vec<f64>,
    pages: u64,
    hits: u64,
    /// What the whole answer read, summed over its pages.
    scanned: Value,
}

#[derive(serde::Serialize)]
struct Figures {
    records: u64,
    jobs: u64,
    seed_s: f64,
    encode_us_per_segment: f64,
    index_us_per_segment: f64,
    sealed_bytes: u64,
    index_bytes: u64,
    segments_with_index: u64,
    queries: Vec<Timed>,
}

pub(super) async fn run(args: BenchArgs) -> anyhow::Result<Report> {
    let date = super::now_rfc3339();
    let records = args.store_records.max(PER_JOB);
    let jobs = records / PER_JOB;
    let figures = on_own_server(&args, "search", &[], async |server| {
        let t = Instant::now();
        let seeded = seed(&server.database, jobs).await?;
        let seed_s = t.elapsed().as_secs_f64();
        let queries = measure(&args, &server.url, jobs).await?;
        Ok(Figures {
            records: jobs * PER_JOB,
            jobs,
            seed_s,
            encode_us_per_segment: seeded.encode.as_secs_f64() * 1e6 / jobs as f64,
            index_us_per_segment: seeded.index.as_secs_f64() * 1e6 / jobs as f64,
            sealed_bytes: seeded.sealed_bytes,
            index_bytes: seeded.index_bytes,
            segments_with_index: seeded.with_index,
            queries,
        })
    })
    .await?;
    Ok(report(&args, &date, &super::command_line(), &figures))
}

/// A small, fast, repeatable generator (xorshift64*): the same logs on
/// every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "alpha", "backup", "cache", "deploy", "edge", "fetch", "gateway", "health", "index", "json",
    "kafka", "ledger", "merge", "nightly", "orders", "payment", "queue", "replica", "shard",
    "tenant", "upload", "vault", "worker", "export", "yaml", "zone", "billing", "catalog",
    "invoice", "session", "metrics", "report", "archive", "restore", "snapshot", "compact",
];
const HOSTS: &[&str] = &[
    "db-1.internal",
    "db-2.internal",
    "cache-3",
    "api-eu-1",
    "api-us-2",
    "s3.amazonaws.com",
];
const ERRORS: &[&str] = &[
    "connection refused",
    "timeout after 30s",
    "no route to host",
    "permission denied",
    "broken pipe",
    "deadlock detected",
    "out of memory",
    "certificate expired",
];
const TABLES: &[&str] = &[
    "orders",
    "customers",
    "invoices",
    "events",
    "sessions",
    "audit_log",
];

/// Line `seq` of job `job`: its stream and text.
fn line(rng: &mut Rng, job: u64, seq: u64, at: i64) -> (Stream, String) {
    let ts = Timestamp(at).to_rfc3339();
    match rng.below(20) {
        0..=5 => (
            Stream::Output,
            format!(
                "{ts} INFO  request id={:016x} GET /api/v1/{}/{} -> 200 in {} ms",
                rng.next(),
                rng.pick(WORDS),
                rng.below(100_000),
                rng.below(900)
            ),
        ),
        6..=8 => (
            Stream::Debug,
            format!(
                "{ts} DEBUG cache {} key={}:{} size={}",
                if rng.below(2) == 0 { "hit" } else { "miss" },
                rng.pick(WORDS),
                rng.below(1_000_000),
                rng.below(1 << 20)
            ),
        ),
        9 => {
            let class = rng.pick(WORDS);
            (
                Stream::Error,
                format!(
                    "    at com.example.{}.{}Service.{}({}Service.java:{})",
                    rng.pick(WORDS),
                    class,
                    rng.pick(WORDS),
                    class,
                    rng.below(900)
                ),
            )
        }
        10 => (
            Stream::Error,
            format!(
                "  File \"/srv/app/{}/{}.py\", line {}, in {}",
                rng.pick(WORDS),
                rng.pick(WORDS),
                rng.below(2000),
                rng.pick(WORDS)
            ),
        ),
        11 => (
            Stream::Warning,
            format!(
                "{ts} WARN  retrying {} after {} (attempt {}/5)",
                rng.pick(HOSTS),
                rng.pick(ERRORS),
                rng.below(5) + 1
            ),
        ),
        12 => (
            Stream::Error,
            format!(
                "{ts} ERROR {}: /var/lib/{}/{}.dat",
                rng.pick(ERRORS),
                rng.pick(WORDS),
                rng.below(10_000)
            ),
        ),
        13 => (
            Stream::Verbose,
            format!(
                "SELECT * FROM {} WHERE id = {} AND tenant = '{}' -- {} ms",
                rng.pick(TABLES),
                rng.below(10_000_000),
                rng.pick(WORDS),
                rng.below(500)
            ),
        ),
        14 => (
            Stream::Output,
            format!(
                "{{\"level\":\"info\",\"user\":\"{}-{}\",\"bytes\":{},\"path\":\"/{}/{}\"}}",
                rng.pick(WORDS),
                rng.below(1000),
                rng.below(1 << 30),
                rng.pick(WORDS),
                rng.pick(WORDS)
            ),
        ),
        15 => (
            Stream::Output,
            format!(
                "/data/{}/{}-{}.tar.gz  {} 100% {}.{}MB/s",
                rng.pick(WORDS),
                rng.pick(WORDS),
                rng.below(100_000),
                rng.below(1 << 32),
                rng.below(900),
                rng.below(10)
            ),
        ),
        _ => (
            Stream::Output,
            format!(
                "{ts} INFO  step {seq} of job {job}: {} {} ok",
                rng.pick(WORDS),
                rng.pick(WORDS)
            ),
        ),
    }
}

/// Job `job`'s log (`at` its start), with the rare term in one job.
fn log_of(job: u64, jobs: u64, at: i64) -> Vec<Record> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ job.wrapping_mul(0x1000_0000_01b3));
    (1..=PER_JOB)
        .map(|seq| {
            let ts = at + seq as i64 * 1_000;
            let (stream, message) = if job == rare_job(jobs) && seq == PER_JOB / 2 {
                (
                    Stream::Error,
                    format!("kernel: {RARE}-{:04x} panic in module", rng.below(1 << 16)),
                )
            } else {
                line(&mut rng, job, seq, ts)
            };
            Record {
                seq,
                ts: Timestamp(ts),
                stream,
                message,
                fields: None,
            }
        })
        .collect()
}

/// The one job holding the rare term: recent, but not the newest.
fn rare_job(jobs: u64) -> u64 {
    (jobs * 99 / 100).max(1)
}

/// A job as seeded: its row's values and its segment.
struct Seeded {
    id: i64,
    name: String,
    at: i64,
    records: u64,
    bytes: u64,
    slice: SealSlice,
}

#[derive(Default)]
struct SeedTotals {
    encode: Duration,
    index: Duration,
    sealed_bytes: u64,
    index_bytes: u64,
    with_index: u64,
}

/// Jobs `first..first + n` (ids from `base + 1`): their logs sealed as
/// the sealer does, timed.
fn encode_jobs(
    base: i64,
    first: u64,
    n: u64,
    jobs: u64,
    now: i64,
    totals: &mut SeedTotals,
) -> anyhow::Result<Vec<Seeded>> {
    let year = 365 * 86_400 * 1_000_000i64;
    let mut out = Vec::with_capacity(n as usize);
    for job in first..first + n {
        // Jobs over the last year, the newest a minute ago.
        let at = now - 60_000_000 - (jobs - job) as i64 * (year / jobs as i64);
        let records = log_of(job, jobs, at);
        let t = Instant::now();
        let id = base + job as i64;
        let slice = SealSlice::encode(id, &records).map_err(|e| anyhow::anyhow!("{e}"))?;
        totals.encode += t.elapsed();
        let t = Instant::now();
        let again = build_index(records.iter().map(|r| r.message.as_str()), slice.data.len());
        totals.index += t.elapsed();
        if again != slice.grams {
            bail!("the index is not the same twice");
        }
        totals.sealed_bytes += slice.data.len() as u64;
        if let Some(g) = &slice.grams {
            totals.index_bytes += g.len() as u64;
            totals.with_index += 1;
        }
        out.push(Seeded {
            id,
            name: format!(
                "{}-{}",
                ["backup", "deploy", "report", "etl", "sync"][(job % 5) as usize],
                job % 40
            ),
            at,
            records: records.len() as u64,
            bytes: records.iter().map(|r| r.message.len() as u64).sum(),
            slice,
        });
    }
    Ok(out)
}

const SPEC: &str = "{\"command\":[\"sh\",\"-c\",\"./run.sh\"]}";

/// `jobs` sealed jobs written into the server's database, a chunk at a
/// time (encoded on a blocking thread, then inserted in one transaction).
async fn seed(database: &str, jobs: u64) -> anyhow::Result<SeedTotals> {
    let now = Timestamp::now().micros();
    let mut totals = SeedTotals::default();
    const CHUNK: u64 = 250;
    let mut pg = if super::is_postgres(database) {
        let pg = joblog_store::bench_support::Postgres::parse(database)?;
        Some(pg.connect().await?)
    } else {
        None
    };
    let sqlite_path = database.strip_prefix("sqlite://").map(str::to_owned);
    // After whatever jobs the database holds.
    let base: i64 = match (&pg, &sqlite_path) {
        (Some((client, _)), _) => client
            .query_one("SELECT COALESCE(max(id), 0) FROM jobs", &[])
            .await?
            .get(0),
        (None, Some(path)) => {
            let path = path.clone();
            tokio::task::spawn_blocking(move || -> anyhow::Result<i64> {
                let c = rusqlite::Connection::open(path)?;
                Ok(c.query_row("SELECT COALESCE(max(id), 0) FROM jobs", [], |r| r.get(0))?)
            })
            .await??
        }
        (None, None) => bail!("the bench's database is neither SQLite nor PostgreSQL"),
    };
    let mut first = 1;
    while first <= jobs {
        let n = CHUNK.min(jobs - first + 1);
        let (chunk, t) = tokio::task::spawn_blocking(move || {
            let mut t = SeedTotals::default();
            encode_jobs(base, first, n, jobs, now, &mut t).map(|c| (c, t))
        })
        .await??;
        totals.encode += t.encode;
        totals.index += t.index;
        totals.sealed_bytes += t.sealed_bytes;
        totals.index_bytes += t.index_bytes;
        totals.with_index += t.with_index;
        match (&mut pg, &sqlite_path) {
            (Some((client, _)), _) => insert_postgres(client, &chunk).await?,
            (None, Some(path)) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || insert_sqlite(&path, &chunk)).await??;
            }
            (None, None) => bail!("the bench's database is neither SQLite nor PostgreSQL"),
        }
        first += n;
    }
    if let Some((client, conn)) = pg {
        // The ids were given: the next job the server makes comes after.
        client
            .execute(
                "SELECT setval(pg_get_serial_sequence('jobs', 'id'), (SELECT max(id) FROM jobs))",
                &[],
            )
            .await?;
        client.execute("ANALYZE", &[]).await?;
        drop(client);
        conn.abort();
    } else if let Some(path) = sqlite_path {
        tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
            rusqlite::Connection::open(path)?.execute_batch("ANALYZE")?;
            Ok(())
        })
        .await??;
    }
    Ok(totals)
}

fn insert_sqlite(path: &str, chunk: &[Seeded]) -> anyhow::Result<()> {
    let mut c = rusqlite::Connection::open(path)?;
    c.busy_timeout(Duration::from_secs(30))?;
    let tx = c.transaction()?;
    {
        let mut job = tx.prepare(
            "INSERT INTO jobs (id, name, state, spec, node, created_at, started_at, finished_at, \
             exit_code, log_records, log_bytes, sealed_at) \
             VALUES (?1, ?2, 'succeeded', ?3, 'bench', ?4, ?4, ?5, 0, ?6, ?7, ?5)",
        )?;
        let mut segment = tx.prepare(
            "INSERT INTO segments (job_id, last_seq, first_seq, streams, data, grams) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        for s in chunk {
            let end = s.at + s.records as i64 * 1_000;
            job.execute(rusqlite::params![
                s.id,
                s.name,
                SPEC,
                s.at,
                end,
                s.records as i64,
                s.bytes as i64
            ])
            .context("seeding a job")?;
            let k = &s.slice.key;
            segment
                .execute(rusqlite::params![
                    s.id,
                    k.last_seq as i64,
                    k.first_seq as i64,
                    k.streams,
                    s.slice.data,
                    s.slice.grams
                ])
                .context("seeding a segment")?;
        }
    }
    tx.commit()?;
    Ok(())
}

async fn insert_postgres(
    client: &mut tokio_postgres::Client,
    chunk: &[Seeded],
) -> anyhow::Result<()> {
    let client = client.transaction().await?;
    let partitions: std::collections::BTreeSet<i64> = chunk
        .iter()
        .map(|s| s.id / joblog_store::bench_support::PARTITION_JOBS)
        .collect();
    for p in partitions {
        joblog_store::bench_support::create_partition(&client, p)
            .await
            .context("making a partition")?;
    }
    let job = client
        .prepare(
            "INSERT INTO jobs (id, name, state, spec, node, created_at, started_at, finished_at, \
             exit_code, log_records, log_bytes, sealed_at) \
             VALUES ($1, $2, 'succeeded', $3, 'bench', $4, $4, $5, 0, $6, $7, $5)",
        )
        .await?;
    let segment = client
        .prepare(
            "INSERT INTO segments (job_id, last_seq, first_seq, streams, data, grams) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .await?;
    for s in chunk {
        let end = s.at + s.records as i64 * 1_000;
        client
            .execute(
                &job,
                &[
                    &s.id,
                    &s.name,
                    &SPEC,
                    &s.at,
                    &end,
                    &(s.records as i64),
                    &(s.bytes as i64),
                ],
            )
            .await
            .context("seeding a job")?;
        let k = &s.slice.key;
        client
            .execute(
                &segment,
                &[
                    &s.id,
                    &(k.last_seq as i64),
                    &(k.first_seq as i64),
                    &k.streams,
                    &s.slice.data,
                    &s.slice.grams,
                ],
            )
            .await
            .context("seeding a segment")?;
    }
    client.commit().await?;
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Adds a page's `scanned` to `sum`.
fn add_scanned(sum: &mut Value, page: &Value) {
    for k in ["jobs", "segments", "skipped_by_index", "unreadable"] {
        let n = sum[k].as_u64().unwrap_or(0) + page["scanned"][k].as_u64().unwrap_or(0);
        sum[k] = json!(n);
    }
}

async fn measure(args: &BenchArgs, url: &str, jobs: u64) -> anyhow::Result<Vec<Timed>> {
    let http = reqwest::Client::new();
    // Every page of one search: the first page's time, the whole answer's,
    // and what it found and read.
    let search = async |query: &str| -> anyhow::Result<(f64, f64, u64, u64, Value)> {
        let t = Instant::now();
        let mut first = None;
        let (mut pages, mut hits) = (0, 0);
        let mut scanned = json!({});
        let mut cursor: Option<String> = None;
        loop {
            let mut u = format!("{url}/api/v1/search?{query}&limit=100");
            if let Some(c) = &cursor {
                u.push_str(&format!("&cursor={c}"));
            }
            let reply = http.get(u).send().await?;
            if !reply.status().is_success() {
                bail!("GET /api/v1/search?{query}: {}", reply.status());
            }
            let page: Value = reply.json().await?;
            first.get_or_insert_with(|| ms(t.elapsed()));
            pages += 1;
            hits += page["hits"].as_array().map_or(0, Vec::len) as u64;
            add_scanned(&mut scanned, &page);
            cursor = page["next_cursor"].as_str().map(str::to_owned);
            // A common term's answer is every line of the store: its first
            // page is what is timed.
            if cursor.is_none() || query.contains(COMMON) {
                break;
            }
        }
        Ok((
            first.unwrap_or(f64::NAN),
            ms(t.elapsed()),
            pages,
            hits,
            scanned,
        ))
    };
    let mut timed: Vec<Timed> = QUERIES.iter().map(|_| Timed::default()).collect();
    // Warm, and checked: each search finds what the store holds.
    for (i, (label, query)) in QUERIES.iter().enumerate() {
        let (_, _, pages, hits, scanned) = search(query).await?;
        let want = match i {
            0 | 1 => 1,
            3 => 0,
            4 => u64::from(rare_job(jobs) * 365 / jobs.max(1) >= 365 - 30),
            _ => 100,
        };
        if hits != want {
            bail!("the {label} search found {hits} lines (expected {want})");
        }
        timed[i].pages = pages;
        timed[i].hits = hits;
        timed[i].scanned = scanned;
    }
    let rounds = if args.quick {
        10
    } else {
        (args.runs as usize * 20).max(100)
    };
    // In turn, so that whatever else the machine does falls on all alike.
    for _ in 0..rounds {
        for (i, (_, query)) in QUERIES.iter().enumerate() {
            let (first, answer, ..) = search(query).await?;
            timed[i].first_page_ms.push(first);
            timed[i].answer_ms.push(answer);
        }
    }
    Ok(timed)
}

fn report(args: &BenchArgs, date: &str, command: &str, f: &Figures) -> Report {
    let store = args.store_name();
    let mut out = String::new();
    let _ = writeln!(out, "## joblog bench search\n");
    let _ = writeln!(out, "Date: {date}  ");
    let _ = writeln!(out, "Command: `{command}`  ");
    let _ = writeln!(
        out,
        "Store: {store}. {} sealed records in {} jobs of {PER_JOB} over a year (seeded in {:.0} s); \
         the rare term `{RARE}` is in one line of one job; `{COMMON}` in about 30 % of lines; \
         `{ABSENT}` nowhere. {} rounds of each search in turn, 100 hits a page.\n",
        f.records,
        f.jobs,
        f.seed_s,
        f.queries[0].first_page_ms.len()
    );
    let _ = writeln!(
        out,
        "| Search | first page p50 (ms) | p99 | whole answer p50 (ms) | p99 | pages | segments read | skipped by index |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for ((label, _), t) in QUERIES.iter().zip(&f.queries) {
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} | {} | {} | {} |",
            fmt_ms(median(&t.first_page_ms)),
            fmt_ms(percentile(&t.first_page_ms, 99.0)),
            fmt_ms(median(&t.answer_ms)),
            fmt_ms(percentile(&t.answer_ms, 99.0)),
            t.pages,
            t.scanned["segments"],
            t.scanned["skipped_by_index"],
        );
    }
    let absent = &f.queries[3];
    let skipped = absent.scanned["skipped_by_index"].as_f64().unwrap_or(0.0);
    let total = skipped + absent.scanned["segments"].as_f64().unwrap_or(0.0);
    let share = f.index_bytes as f64 / f.sealed_bytes.max(1) as f64;
    let _ = writeln!(
        out,
        "\nIndex: {:.2} bytes per record, {:.1} % of the sealed bytes ({} of {} segments carry one); \
         a search for a term found nowhere skipped {:.1} % of the segments unread. \
         Sealing a segment of {PER_JOB} records took {:.0} µs, of which the index {:.0} µs \
         (built on the sealer's thread after a job ends, never on the record path).",
        f.index_bytes as f64 / f.records as f64,
        share * 100.0,
        f.segments_with_index,
        f.jobs,
        if total > 0.0 { skipped / total * 100.0 } else { f64::NAN },
        f.encode_us_per_segment,
        f.index_us_per_segment,
    );
    // What a search of every segment costs per segment, measured here,
    // carried to a store of 10⁹ records (1,000,000 segments).
    let per_segment_ms = percentile(&absent.answer_ms, 50.0).unwrap_or(f64::NAN) / f.jobs as f64;
    let _ = writeln!(
        out,
        "\nProjection to 10⁹ records (1,000,000 segments of {PER_JOB}): a search that reads every \
         segment's index costs {:.3} ms per segment here, so about {:.0} s for a term found nowhere \
         across all of them, answered as pages of a quarter of a second; a filter that narrows the \
         jobs (`since`, `name`) divides it by the share of jobs it keeps.",
        per_segment_ms,
        per_segment_ms * 1_000_000.0 / 1e3,
    );
    let p99 = |i: usize, first: bool| {
        let t = &f.queries[i];
        percentile(
            if first {
                &t.first_page_ms
            } else {
                &t.answer_ms
            },
            99.0,
        )
        .unwrap_or(f64::NAN)
    };
    let checks = [
        ("a rare term's first page p99", p99(0, true), RARE_BUDGET_MS),
        (
            "a common term's first page p99",
            p99(2, true),
            COMMON_BUDGET_MS,
        ),
        (
            "a term found nowhere, answer p99",
            p99(3, false),
            ABSENT_BUDGET_MS,
        ),
    ];
    let mut lines = Vec::new();
    for (what, v, budget) in checks {
        let met = v <= budget;
        lines.push(format!(
            "{what} {v:.0} ms ≤ {budget:.0} ms{}",
            if met { " (met)" } else { " — **missed**" }
        ));
    }
    lines.push(format!(
        "the index ≤ {:.0} % of the sealed bytes: {:.1} %{}",
        INDEX_BUDGET * 100.0,
        share * 100.0,
        if share <= INDEX_BUDGET {
            " (met)"
        } else {
            " — **missed**"
        }
    ));
    let _ = writeln!(
        out,
        "\nBudgets ({store}; the issue's are SQLite's): {}.",
        lines.join("; ")
    );
    let figures = json!({
        "store": store,
        "figures": f,
        "index_share": share,
    });
    let bars = QUERIES
        .iter()
        .enumerate()
        .map(|(i, (label, _))| Bar {
            label: format!("{label}, answer p99"),
            value: p99(i, i != 2),
            reference: false,
        })
        .collect();
    let chart = Chart::Bars {
        title: format!("search: {} records ({store})", f.records),
        unit: "milliseconds (common term: first page)".into(),
        bars,
    };
    Report::new(out, figures).chart("", chart)
}
