//! `joblog bench`: the benchmark scenarios of docs/benchmarks.md, printing Markdown
//! tables. This module holds the arguments every scenario shares and picks
//! the scenario; `server` runs the server under test, `stats` the figures;
//! `psu`, `ingest`, `tail`, `oplog`, `result`, `schedule` and `dispatch`
//! are one scenario each.

mod dispatch;
mod ingest;
mod oplog;
mod psu;
mod result;
mod schedule;
pub mod server;
mod stats;
mod tail;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::client::{Connection, Global};
use stats::parse_count;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// PowerShell Universal's job-log test: batches of concurrent jobs
    /// writing 1000 lines each; execution and retrieval as the log grows.
    Psu,
    /// Records per second through the pipeline into the store, beside the
    /// raw write limit of the same database (plain INSERT / COPY).
    Ingest,
    /// A line written → delivered to live-tail (SSE) viewers of its job,
    /// with 1 and with 100 viewers, while the psu load runs.
    Tail,
    /// The server's own logs: HTTP requests/s with logging on and off,
    /// and the caller-side cost of one event beside tracing-appender.
    Oplog,
    /// A job writing a 4 MB JSON result: from its exit to the result
    /// stored, and the result read back over HTTP; the storage ratio.
    Result,
    /// Trivial jobs per second through the engine, beside the machine's
    /// own fork/exec rate at the same concurrency; queue wait.
    Dispatch,
    /// Many schedules (10,000) on one node: the server's CPU while none
    /// is due, then each firing once a minute: fire → job queued lateness.
    Schedule,
    /// The job `tail` follows (it runs it itself): numbered lines stamped
    /// with the time they are written, at --rate for --duration.
    #[value(hide = true)]
    TailWriter,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Scenario to run.
    #[arg(value_enum)]
    pub scenario: Scenario,
    /// Message counts at which to measure (suffixes K and M).
    #[arg(long, value_name = "LIST", default_value = "0.5M,1M,1.5M,2M,2.5M",
          value_parser = parse_checkpoints)]
    pub checkpoints: Checkpoints,
    /// Jobs per batch, run concurrently (dispatch: jobs run at once).
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub batch_jobs: u32,
    /// Lines each job writes.
    #[arg(long, value_name = "N", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub lines: u32,
    /// Batches whose jobs make up the execution figures at a checkpoint.
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub window_batches: u32,
    /// Whole-log retrievals timed at each checkpoint.
    #[arg(long, value_name = "N", default_value_t = 30,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub retrievals: u32,
    /// Use the server given by --server instead of starting one.
    #[arg(long)]
    pub external: bool,
    /// Database for the server the bench starts (e.g. postgres://…);
    /// default: SQLite in its temporary data directory.
    #[arg(long, value_name = "URL", conflicts_with = "external")]
    pub database: Option<String>,
    /// Keep the temporary data directory (and the server's output) at the end.
    #[arg(long, conflicts_with = "external")]
    pub keep: bool,
    /// Stop after this long even if checkpoints remain (table so far is printed).
    #[arg(long, value_name = "DUR", default_value = "2h", value_parser = joblog_core::parse_positive_duration)]
    pub time_limit: Duration,
    /// ingest: records written per run (suffixes K and M).
    #[arg(long, value_name = "N", default_value = "500K", value_parser = parse_count)]
    pub records: u64,
    /// ingest, tail: runs; oplog: rounds of each configuration; result:
    /// timed jobs; dispatch: rounds. The table shows medians.
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// tail: viewers of the followed job, one measurement per count and run.
    #[arg(long, value_name = "LIST", default_value = "1,100", value_parser = parse_viewers)]
    pub viewers: Viewers,
    /// tail: lines per second the followed job writes.
    #[arg(long, value_name = "N", default_value_t = 200,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub rate: u32,
    /// tail: how long the followed job writes; oplog: how long each round
    /// of HTTP load lasts; schedule: how long the idle server and then the
    /// fires are measured, each.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = joblog_core::parse_positive_duration)]
    pub duration: Duration,
    /// tail-writer: start writing once this file exists (`tail` makes it
    /// when every viewer is connected).
    #[arg(long, value_name = "FILE")]
    pub start_file: Option<PathBuf>,
    /// Give up when a job has not finished after this long.
    #[arg(long, value_name = "DUR", default_value = "120s", value_parser = joblog_core::parse_positive_duration)]
    pub job_timeout: Duration,
    /// oplog: keep-alive HTTP connections of the load generator.
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..=512))]
    pub connections: u32,
    /// oplog: threads of the load generator's runtime.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub client_threads: u32,
    /// oplog: events each producing thread logs per round (suffixes K and M).
    #[arg(long, value_name = "N", default_value = "100K", value_parser = parse_count)]
    pub events: u64,
    /// result: size of the JSON result the job writes (suffixes KB, MB,
    /// KiB, MiB).
    #[arg(long, value_name = "SIZE", default_value = "4MB", value_parser = joblog_core::parse_byte_size)]
    pub result_size: u64,
    /// dispatch: jobs per round (suffixes K and M).
    #[arg(long, value_name = "N", default_value = "2000", value_parser = parse_count)]
    pub jobs: u64,
    /// schedule: schedules made (suffixes K and M).
    #[arg(long, value_name = "N", default_value = "10K", value_parser = parse_count)]
    pub schedules: u64,
    /// With --external: the server, given after the command name.
    #[command(flatten)]
    pub connection: Connection,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoints(pub Vec<u64>);

fn parse_checkpoints(s: &str) -> Result<Checkpoints, String> {
    let mut v = s
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(parse_count)
        .collect::<Result<Vec<_>, _>>()?;
    if v.is_empty() {
        return Err("give at least one checkpoint".to_string());
    }
    v.sort_unstable();
    v.dedup();
    Ok(Checkpoints(v))
}

/// Viewer counts of `bench tail`, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Viewers(pub Vec<u32>);

/// Most viewers of one job a measurement may have: with the load's
/// connections, within the server's default `http.max_connections` (1024).
const MAX_VIEWERS: u32 = 1000;

fn parse_viewers(s: &str) -> Result<Viewers, String> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let n: u32 = part
            .parse()
            .map_err(|_| format!("{part:?} is not a number of viewers"))?;
        if !(1..=MAX_VIEWERS).contains(&n) {
            return Err(format!("{n}: give 1 to {MAX_VIEWERS} viewers"));
        }
        if !v.contains(&n) {
            v.push(n);
        }
    }
    if v.is_empty() {
        return Err("give at least one number of viewers".to_string());
    }
    Ok(Viewers(v))
}

/// A new directory of the bench's own under the temporary directory,
/// `joblog-bench-<what>-<pid>-<µs>`: unique to this run and this moment.
fn scratch_dir(what: &str) -> anyhow::Result<PathBuf> {
    use anyhow::Context;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let dir = std::env::temp_dir().join(format!(
        "joblog-bench-{what}-{}-{stamp}",
        std::process::id()
    ));
    std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

/// The command line for the report, without secrets.
fn redact_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut hide_next = false;
    let mut url_next = false;
    for a in args {
        if hide_next {
            out.push("***".to_string());
            hide_next = false;
            continue;
        }
        if url_next {
            out.push(crate::client::redact_url(a));
            url_next = false;
            continue;
        }
        if a == "--token" {
            hide_next = true;
            out.push(a.clone());
        } else if a.starts_with("--token=") {
            out.push("--token=***".to_string());
        } else if a == "--database" || a == "--server" {
            url_next = true;
            out.push(a.clone());
        } else if let Some(v) = a
            .strip_prefix("--database=")
            .map(|v| ("--database=", v))
            .or_else(|| a.strip_prefix("--server=").map(|v| ("--server=", v)))
        {
            out.push(format!("{}{}", v.0, crate::client::redact_url(v.1)));
        } else {
            out.push(a.clone());
        }
    }
    out
}

pub async fn run(args: BenchArgs, global: Global) -> anyhow::Result<i32> {
    match args.scenario {
        Scenario::Psu => psu::run(args, global).await,
        Scenario::Ingest => ingest::run(args).await,
        Scenario::Tail => tail::run(args, global).await,
        Scenario::Oplog => oplog::run(args).await,
        Scenario::Result => result::run(args).await,
        Scenario::Schedule => schedule::run(args).await,
        Scenario::Dispatch => dispatch::run(args).await,
        Scenario::TailWriter => tail::run_writer(args).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints() {
        assert_eq!(
            parse_checkpoints("1M, 0.5M,1M,,40K").unwrap(),
            Checkpoints(vec![40_000, 500_000, 1_000_000])
        );
        assert!(parse_checkpoints(" , ").is_err());
    }

    #[test]
    fn viewer_counts() {
        assert_eq!(
            parse_viewers("1, 100,1,,7").unwrap(),
            Viewers(vec![1, 100, 7])
        );
        assert!(parse_viewers("0").unwrap_err().contains("1 to"));
        assert!(parse_viewers("1001").is_err());
        assert!(parse_viewers("many").unwrap_err().contains("many"));
        assert!(parse_viewers(",").is_err());
    }

    #[test]
    fn redaction() {
        let args: Vec<String> = [
            "joblog",
            "--token",
            "s3cret",
            "bench",
            "psu",
            "--database",
            "postgres://u:pw@db/j",
            "--token=s3cret",
        ]
        .map(String::from)
        .to_vec();
        let r = redact_args(&args).join(" ");
        assert!(!r.contains("s3cret") && !r.contains("pw@"), "{r}");
        assert!(r.contains("postgres://u:***@db/j"), "{r}");
    }
}
