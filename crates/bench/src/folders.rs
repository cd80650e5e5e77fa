//! `joblog bench folders`: what limiting a caller to folders costs a job
//! listing. A server of the bench's own gets 1,000,000 finished jobs
//! (--quick: 100,000) spread over 100 folders, one in seven failed, written straight into its
//! database; then `GET /api/v1/jobs` pages are read, in turn, with a token
//! of every folder, one limited to one folder and one limited to ten —
//! the first page and a filtered one (`state=failed`) — and their p99s
//! compared in the same run.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::json;

use super::chart::{Bar, Chart};
use super::output::Report;
use super::server::on_own_server;
use super::stats::{fmt_ms, median, percentile};
use super::BenchArgs;

/// Folders the jobs are spread over.
const FOLDERS: u32 = 100;
/// Budget of docs/benchmarks.md: a limited listing's p99 within 10 % of
/// an unlimited one's.
const BUDGET_RATIO: f64 = 1.10;

/// Who reads, and with what.
const CALLERS: [(&str, Option<u32>); 3] = [
    ("every folder", None),
    ("1 folder", Some(1)),
    ("10 folders", Some(10)),
];

/// The figures, ms, per caller (in [`CALLERS`]' order) and page.
#[derive(serde::Serialize)]
struct Figures {
    jobs: u64,
    seed_s: f64,
    first_page: Vec<Vec<f64>>,
    failed_page: Vec<Vec<f64>>,
}

pub(super) async fn run(args: BenchArgs) -> anyhow::Result<Report> {
    let date = super::now_rfc3339();
    let jobs: u64 = if args.quick { 100_000 } else { 1_000_000 };
    let figures = on_own_server(&args, "folders", &[], async |server| {
        let t = Instant::now();
        seed(&server.database, jobs).await?;
        let seed_s = t.elapsed().as_secs_f64();
        measure(&args, &server.url, jobs, seed_s).await
    })
    .await?;
    Ok(report(&args, &date, &super::command_line(), &figures))
}

/// `jobs` finished jobs, job `i` in folder `f{i % 100}`, one in seven
/// failed (whatever the folder), as the server would have stored them (the spec names the
/// folder its column holds).
async fn seed(database: &str, jobs: u64) -> anyhow::Result<()> {
    let now = joblog_core::Timestamp::now().micros();
    if super::is_postgres(database) {
        let pg = joblog_store::bench_support::Postgres::parse(database)?;
        let (client, conn) = pg.connect().await?;
        client
            .execute(
                "INSERT INTO jobs (name, state, spec, created_at, started_at, finished_at, exit_code, folder) \
                 SELECT 'bench-' || (i % 1000), CASE WHEN i % 7 = 0 THEN 'failed' ELSE 'succeeded' END, \
                        '{\"command\":[\"true\"],\"folder\":\"f' || (i % 100) || '\"}', \
                        $1::bigint + i, $1::bigint + i, $1::bigint + i, CASE WHEN i % 7 = 0 THEN 1 ELSE 0 END, \
                        'f' || (i % 100) \
                 FROM generate_series(1, $2::bigint) AS i",
                &[&now, &(jobs as i64)],
            )
            .await
            .context("seeding the jobs")?;
        client.execute("ANALYZE jobs", &[]).await?;
        drop(client);
        conn.abort();
        return Ok(());
    }
    let path = database
        .strip_prefix("sqlite://")
        .context("a SQLite URL")?
        .to_string();
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        let mut c = rusqlite::Connection::open(&path)?;
        c.busy_timeout(Duration::from_secs(30))?;
        let tx = c.transaction()?;
        tx.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2) \
             INSERT INTO jobs (name, state, spec, created_at, started_at, finished_at, exit_code, folder) \
             SELECT 'bench-' || (i % 1000), CASE WHEN i % 7 = 0 THEN 'failed' ELSE 'succeeded' END, \
                    '{\"command\":[\"true\"],\"folder\":\"f' || (i % 100) || '\"}', \
                    ?1 + i, ?1 + i, ?1 + i, CASE WHEN i % 7 = 0 THEN 1 ELSE 0 END, 'f' || (i % 100) \
             FROM n",
            rusqlite::params![now, jobs as i64],
        )
        .context("seeding the jobs")?;
        tx.commit()?;
        c.execute_batch("ANALYZE")?;
        Ok(())
    })
    .await?
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn measure(args: &BenchArgs, url: &str, jobs: u64, seed_s: f64) -> anyhow::Result<Figures> {
    let http = reqwest::Client::new();
    // The bench's server needs no token (loopback): tokens are made as
    // its anonymous admin.
    let mut tokens = Vec::new();
    for (i, (_, folders)) in CALLERS.iter().enumerate() {
        let mut body = json!({"name": format!("bench-{i}"), "role": "viewer"});
        if let Some(n) = folders {
            let map: serde_json::Map<String, serde_json::Value> = (0..*n)
                .map(|f| (format!("f{}", f * (FOLDERS / n)), json!("viewer")))
                .collect();
            body["folders"] = serde_json::Value::Object(map);
        }
        let created: serde_json::Value = http
            .post(format!("{url}/api/v1/tokens"))
            .json(&body)
            .send()
            .await?
            .error_for_status()
            .context("creating the bench's tokens")?
            .json()
            .await?;
        tokens.push(created["token"].as_str().context("a token")?.to_string());
    }
    let read = async |token: &str, query: &str| -> anyhow::Result<f64> {
        let t = Instant::now();
        let reply = http
            .get(format!("{url}/api/v1/jobs?limit=50{query}"))
            .bearer_auth(token)
            .send()
            .await?;
        if !reply.status().is_success() {
            bail!("GET /api/v1/jobs: {}", reply.status());
        }
        let body: serde_json::Value = reply.json().await?;
        let elapsed = ms(t.elapsed());
        if body["jobs"].as_array().map_or(0, Vec::len) != 50 {
            bail!("a page of fewer than 50 jobs: {body}");
        }
        Ok(elapsed)
    };
    // Warm: the pages each caller reads, once.
    for token in &tokens {
        read(token, "").await?;
        read(token, "&state=failed").await?;
    }
    let rounds = (args.runs as usize * 200).max(200);
    let mut first_page = vec![Vec::with_capacity(rounds); CALLERS.len()];
    let mut failed_page = vec![Vec::with_capacity(rounds); CALLERS.len()];
    // In turn, so that whatever else the machine does falls on all alike.
    for _ in 0..rounds {
        for (i, token) in tokens.iter().enumerate() {
            first_page[i].push(read(token, "").await?);
            failed_page[i].push(read(token, "&state=failed").await?);
        }
    }
    Ok(Figures {
        jobs,
        seed_s,
        first_page,
        failed_page,
    })
}

fn report(args: &BenchArgs, date: &str, command: &str, f: &Figures) -> Report {
    let store = args.store_name();
    let mut out = String::new();
    let _ = writeln!(out, "## joblog bench folders\n");
    let _ = writeln!(out, "Date: {date}  ");
    let _ = writeln!(out, "Command: `{command}`  ");
    let _ = writeln!(
        out,
        "Store: {store}. {} finished jobs over {FOLDERS} folders (seeded in {:.1} s), one in seven failed; \
         {} rounds of `GET /api/v1/jobs?limit=50` (and `&state=failed`) by each caller in turn.\n",
        f.jobs,
        f.seed_s,
        f.first_page[0].len()
    );
    let _ = writeln!(
        out,
        "| Caller | page | median (ms) | p99 (ms) | p99 ÷ every folder's |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|");
    let mut worst = f64::NAN;
    for (page, runs) in [
        ("newest 50", &f.first_page),
        ("failed, newest 50", &f.failed_page),
    ] {
        let base = percentile(&runs[0], 99.0);
        for (i, (caller, _)) in CALLERS.iter().enumerate() {
            let p99 = percentile(&runs[i], 99.0);
            let ratio = match (p99, base) {
                (Some(p), Some(b)) if b > 0.0 => p / b,
                _ => f64::NAN,
            };
            // The budget is the plain listing's: a filter by state walks
            // the state's index and checks each row's folder (see
            // docs/benchmarks.md).
            if i == 1 && page == "newest 50" {
                worst = ratio;
            }
            let _ = writeln!(
                out,
                "| {caller} | {page} | {} | {} | {ratio:.2} |",
                fmt_ms(median(&runs[i])),
                fmt_ms(p99),
            );
        }
    }
    let met = worst <= BUDGET_RATIO; // NaN: missed
    let _ = writeln!(
        out,
        "\nBudget: a caller limited to one folder lists the newest 50 within {:.0} % of a caller of every folder (p99){}.",
        (BUDGET_RATIO - 1.0) * 100.0,
        if met { " (met)" } else { " — **missed**" }
    );
    let figures = serde_json::json!({
        "store": store,
        "folders": FOLDERS,
        "runs_ms": f,
        "one_folder_ratio": worst,
        "budget_ratio": BUDGET_RATIO,
    });
    let bars = CALLERS
        .iter()
        .enumerate()
        .map(|(i, (caller, _))| Bar {
            label: format!("p99, {caller}"),
            value: percentile(&f.first_page[i], 99.0).unwrap_or(f64::NAN),
            reference: i == 0,
        })
        .collect();
    let chart = Chart::Bars {
        title: format!("folders: a page of 50 of {} jobs ({store})", f.jobs),
        unit: "milliseconds (grey: every folder)".into(),
        bars,
    };
    Report::new(out, figures).chart("", chart)
}
