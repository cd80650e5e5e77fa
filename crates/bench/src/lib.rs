//! `joblog bench` (docs/benchmarks.md): the benchmark scenarios, a library
//! the binary calls, so that shipped code hosts nothing only tests use.
//! This module holds the arguments every scenario shares and runs the
//! scenario (or all of them); `psu`, `ingest`, `dispatch`, `flood`,
//! `tail`, `oplog`, `result`, `schedule`, `notify`, `signin`, `folders`, `search` and `faults` are one scenario each, each
//! returning an `output::Report` (Markdown, raw figures as JSON, SVG
//! charts from `chart`); `server` runs a real `joblog serve` (the running
//! executable) for a measurement; `stats` the figures; `baseline` the
//! designs joblog is measured against (plain inserts, COPY, the row-log
//! and message-log designs) and a database's size on disk; `scratch` a
//! fresh PostgreSQL database per measurement. `build.rs` records the
//! commit a report was measured on.
//!
//! Application code, like the binary: a scenario fails with an `anyhow`
//! report for the person who ran it. The baselines reach the store only
//! through `joblog_store::bench_support` (the `bench` feature).

pub mod baseline;
mod chart;
mod dispatch;
mod faults;
mod flood;
mod folders;
mod ingest;
mod notify;
mod oplog;
mod output;
mod psu;
mod result;
mod schedule;
pub mod scratch;
mod search;
pub mod server;
mod signin;
mod stats;
mod tail;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use clap::{Args, ValueEnum};

use crate::scratch::ScratchDatabase;
use joblog_client::{Connection, Global};
use joblog_store::Database;
use output::{Meta, Report};
use stats::parse_count;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// Every scenario below, one after the other, each on its own server
    /// (with --quick: small, in a few minutes).
    All,
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
    /// One job writing --flood-size of output (1 GiB): records/s, the
    /// server's peak memory, and another job's log latency meanwhile.
    Flood,
    /// Many schedules (10,000) on one node: the server's CPU while none
    /// is due, then each firing once a minute: fire → job queued lateness.
    Schedule,
    /// Notifications: a burst of 1,000 failing jobs told to a receiver
    /// (job end → delivered; none twice), the receiver down 30 s then up,
    /// and a rule's cost to the jobs it tells of.
    Notify,
    /// People signing in: one sign-in's latency (its Argon2id hash), many
    /// at once, and a signed-in read beside a token's.
    Signin,
    /// A job listing by a caller limited to folders beside one of every
    /// folder, on 1,000,000 jobs over 100 folders (--quick: 100,000).
    Folders,
    /// Searches across every job's log on a store of --store-records
    /// sealed records (10M): a rare term, a common one, one found
    /// nowhere; the index's size and what it skips.
    Search,
    /// Power cuts under the SQLite store (--cuts of them per `sync`
    /// mode, the real pipeline and writer under load): what was
    /// acknowledged and lost, and whether the database was left corrupt.
    Faults,
    /// The job `tail` follows (it runs it itself): numbered lines stamped
    /// with the time they are written, at --rate for --duration.
    #[value(hide = true)]
    TailWriter,
}

#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// Scenario to run.
    #[arg(value_enum)]
    pub scenario: Scenario,
    /// psu: message counts at which to measure, the last one where the
    /// run stops (suffixes K and M; --quick: 50K,100K).
    #[arg(long = "messages", visible_alias = "checkpoints", value_name = "LIST",
          default_value = "0.5M,1M,1.5M,2M,2.5M",
          default_value_if("quick", "true", "50K,100K"),
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
    /// Batches whose jobs make up the execution figures at a checkpoint
    /// (--quick: 3).
    #[arg(long, value_name = "N", default_value_t = 10,
          default_value_if("quick", "true", "3"),
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub window_batches: u32,
    /// psu: batches of jobs each design of the past (a row rewritten per
    /// message, an autocommit INSERT per message) runs at each checkpoint,
    /// beside joblog; 0 leaves them out (--quick: 1).
    #[arg(long, value_name = "N", default_value_t = 3,
          default_value_if("quick", "true", "1"),
          value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub baseline_batches: u32,
    /// Whole-log retrievals timed at each checkpoint (--quick: 10).
    #[arg(long, value_name = "N", default_value_t = 30,
          default_value_if("quick", "true", "10"),
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
    /// psu, ingest: seal finished logs (psu: the server's `log.seal`, and
    /// each checkpoint waits for the sealer before it measures; ingest:
    /// each run's jobs sealed after it, timed, and measured sealed).
    #[arg(long, value_name = "BOOL", default_value = "true",
          value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::Set)]
    pub seal: bool,
    /// Stop after this long even if checkpoints remain (table so far is printed).
    #[arg(long, value_name = "DUR", default_value = "2h", value_parser = joblog_core::parse_positive_duration)]
    pub time_limit: Duration,
    /// ingest: records written per run (suffixes K and M; --quick: 50K).
    #[arg(long, value_name = "N", default_value = "500K",
          default_value_if("quick", "true", "50K"), value_parser = parse_count)]
    pub records: u64,
    /// ingest, tail: runs; oplog: rounds of each configuration; result:
    /// timed jobs; dispatch: rounds. The table shows medians (--quick: 1).
    #[arg(long, value_name = "N", default_value_t = 5,
          default_value_if("quick", "true", "1"),
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// tail: viewers of the followed job, one measurement per count and
    /// run (--quick: 1,10).
    #[arg(long, value_name = "LIST", default_value = "1,100",
          default_value_if("quick", "true", "1,10"), value_parser = parse_viewers)]
    pub viewers: Viewers,
    /// tail: lines per second the followed job writes.
    #[arg(long, value_name = "N", default_value_t = 200,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub rate: u32,
    /// tail: how long the followed job writes; oplog: how long each round
    /// of HTTP load lasts; schedule: how long the idle server and then the
    /// fires are measured, each (--quick: 3s).
    #[arg(long, value_name = "DUR", default_value = "10s",
          default_value_if("quick", "true", "3s"),
          value_parser = joblog_core::parse_positive_duration)]
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
    /// oplog: events each producing thread logs per round (suffixes K and
    /// M; --quick: 10K).
    #[arg(long, value_name = "N", default_value = "100K",
          default_value_if("quick", "true", "10K"), value_parser = parse_count)]
    pub events: u64,
    /// result: size of the JSON result the job writes (suffixes KB, MB,
    /// KiB, MiB; --quick: 1MB).
    #[arg(long, value_name = "SIZE", default_value = "4MB",
          default_value_if("quick", "true", "1MB"),
          value_parser = joblog_core::parse_byte_size)]
    pub result_size: u64,
    /// dispatch: jobs per round (suffixes K and M; --quick: 200).
    #[arg(long, value_name = "N", default_value = "2000",
          default_value_if("quick", "true", "200"), value_parser = parse_count)]
    pub jobs: u64,
    /// dispatch: nodes on the `--database` (PostgreSQL), each labelled
    /// `bench.node=<i>`; with 2 or more, each round is also run with half
    /// its jobs asking for one node's label (`node_selector`), beside the
    /// same burst without.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=8))]
    pub nodes: u32,
    /// schedule: schedules made (suffixes K and M; --quick: 1K).
    #[arg(long, value_name = "N", default_value = "10K",
          default_value_if("quick", "true", "1K"), value_parser = parse_count)]
    pub schedules: u64,
    /// flood: output the flooding job writes (suffixes KB, MB, GB, KiB,
    /// MiB, GiB; --quick: 32MiB).
    #[arg(long, value_name = "SIZE", default_value = "1GiB",
          default_value_if("quick", "true", "32MiB"),
          value_parser = joblog_core::parse_byte_size)]
    pub flood_size: u64,
    /// search: sealed records in the store searched, 1,000 per job
    /// (suffixes K and M; --quick: 200K).
    #[arg(long, value_name = "N", default_value = "10M",
          default_value_if("quick", "true", "200K"), value_parser = parse_count)]
    pub store_records: u64,
    /// faults: power cuts per `sync` mode (suffixes K and M; --quick: 100).
    #[arg(long, value_name = "N", default_value = "1000",
          default_value_if("quick", "true", "100"), value_parser = parse_count)]
    pub cuts: u64,
    /// faults: only this `sync` mode (default: both, `full` then `normal`).
    #[arg(long, value_name = "MODE", value_parser = ["full", "normal"])]
    pub sync: Option<String>,
    /// faults: the seed of the cuts' random choices (default: the clock;
    /// the report names it, so a run can be repeated).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Small sizes everywhere (the defaults named "--quick" above): a
    /// smoke run in seconds per scenario, not figures to quote.
    #[arg(long)]
    pub quick: bool,
    /// Also write each scenario's table (`<scenario>.md`), raw figures
    /// (`.json`) and charts (`.svg`) into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
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
            out.push(joblog_client::redact_url(a));
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
            out.push(format!("{}{}", v.0, joblog_client::redact_url(v.1)));
        } else {
            out.push(a.clone());
        }
    }
    out
}

/// What `bench all` runs, in this order: the log first, then the engine,
/// then the scenarios of the features built on them.
const ALL: [Scenario; 13] = [
    Scenario::Psu,
    Scenario::Ingest,
    Scenario::Dispatch,
    Scenario::Flood,
    Scenario::Tail,
    Scenario::Oplog,
    Scenario::Result,
    Scenario::Schedule,
    Scenario::Notify,
    Scenario::Signin,
    Scenario::Folders,
    Scenario::Search,
    Scenario::Faults,
];

impl Scenario {
    fn name(self) -> &'static str {
        match self {
            Scenario::All => "all",
            Scenario::Psu => "psu",
            Scenario::Ingest => "ingest",
            Scenario::Tail => "tail",
            Scenario::Oplog => "oplog",
            Scenario::Result => "result",
            Scenario::Dispatch => "dispatch",
            Scenario::Flood => "flood",
            Scenario::Schedule => "schedule",
            Scenario::Notify => "notify",
            Scenario::Signin => "signin",
            Scenario::Folders => "folders",
            Scenario::Search => "search",
            Scenario::Faults => "faults",
            Scenario::TailWriter => "tail-writer",
        }
    }
}

impl BenchArgs {
    /// The store a scenario measures, as its report names it.
    fn store_name(&self) -> &'static str {
        match &self.database {
            Some(url) if url.starts_with("postgres") => "PostgreSQL",
            _ => "SQLite",
        }
    }
}

fn is_postgres(url: &str) -> bool {
    matches!(Database::of(url), Ok(Database::Postgres))
}

/// The command line, secrets hidden, for the reports.
fn command_line() -> String {
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    redact_args(&argv).join(" ")
}

fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

pub async fn run(args: BenchArgs, global: Global) -> anyhow::Result<i32> {
    let scenarios = match args.scenario {
        Scenario::TailWriter => return tail::run_writer(args).await,
        Scenario::All if args.external => {
            bail!("`bench all` starts a server of its own for each scenario; --external is for one scenario")
        }
        Scenario::All => ALL.to_vec(),
        one => vec![one],
    };
    let mut code = 0;
    let mut index = String::new();
    let wall = std::time::Instant::now();
    for scenario in scenarios.iter().copied() {
        let mut one = args.clone();
        one.scenario = scenario;
        // `oplog` measures the server's own logs, on SQLite only.
        if scenario == Scenario::Oplog && scenarios.len() > 1 {
            one.database = None;
        }
        let meta = Meta {
            date: now_rfc3339(),
            command: command_line(),
        };
        if scenarios.len() > 1 {
            eprintln!(
                "bench all: {} ({:.0} s so far)",
                scenario.name(),
                wall.elapsed().as_secs_f64()
            );
        }
        // Each scenario of `all` on a PostgreSQL database of its own, so
        // none measures on what an earlier one left (`tail` makes its own).
        let scratch = match (&args.database, scenarios.len() > 1, scenario) {
            (_, _, Scenario::Tail | Scenario::Oplog) | (None, _, _) | (_, false, _) => None,
            (Some(url), true, _) if is_postgres(url) => {
                let db = ScratchDatabase::create(url, &format!("joblog_bench_{}", scenario.name()))
                    .await
                    .map_err(|e| {
                        anyhow::anyhow!("cannot make a database for {}: {e}", scenario.name())
                    })?;
                one.database = Some(db.url().to_string());
                Some(db)
            }
            _ => None,
        };
        let outcome = run_one(one, global.clone()).await;
        if let Some(db) = scratch {
            let name = db.name().to_string();
            if let Err(e) = db.drop_database().await {
                eprintln!("bench all: could not drop database {name}: {e}");
            }
        }
        let report = match outcome {
            Ok(r) => r,
            // With `all`, one scenario's failure does not hide the others'
            // figures; the command still exits non-zero.
            Err(e) if scenarios.len() > 1 => {
                eprintln!("bench all: {} failed: {e:#}", scenario.name());
                let _ = writeln!(index, "- `{}`: **failed**: {e:#}", scenario.name());
                code = 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        println!("{}", report.markdown);
        if report.failed {
            code = 1;
        }
        if let Some(dir) = &args.out {
            let files = output::write(dir, scenario.name(), &meta, &report)?;
            let names: Vec<String> = files
                .iter()
                .filter_map(|f| Some(f.file_name()?.to_string_lossy().into_owned()))
                .collect();
            eprintln!("bench: wrote {} into {}", names.join(", "), dir.display());
            let _ = writeln!(
                index,
                "- [`{0}`]({0}.md){1}: {2}",
                scenario.name(),
                if report.failed {
                    " (stopped by an error)"
                } else {
                    ""
                },
                names.join(", ")
            );
        }
    }
    if let (Some(dir), true) = (&args.out, scenarios.len() > 1) {
        let body = format!(
            "# joblog bench all\n\nDate: {}  \nCommand: `{}`  \nBuild: {}  \nWall time: {:.0} s\n\n{index}",
            now_rfc3339(),
            command_line(),
            output::build(),
            wall.elapsed().as_secs_f64()
        );
        let path = dir.join("index.md");
        std::fs::write(&path, body)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        eprintln!(
            "bench all: done in {:.0} s; {}",
            wall.elapsed().as_secs_f64(),
            path.display()
        );
    }
    Ok(code)
}

async fn run_one(args: BenchArgs, global: Global) -> anyhow::Result<Report> {
    match args.scenario {
        Scenario::Psu => psu::run(args, global).await,
        Scenario::Ingest => ingest::run(args).await,
        Scenario::Tail => tail::run(args, global).await,
        Scenario::Oplog => oplog::run(args).await,
        Scenario::Result => result::run(args).await,
        Scenario::Schedule => schedule::run(args).await,
        Scenario::Notify => notify::run(args).await,
        Scenario::Signin => signin::run(args).await,
        Scenario::Folders => folders::run(args).await,
        Scenario::Search => search::run(args).await,
        Scenario::Dispatch => dispatch::run(args).await,
        Scenario::Faults => faults::run(args).await,
        Scenario::Flood => flood::run(args, global).await,
        Scenario::All | Scenario::TailWriter => {
            bail!("{} is not a scenario of its own", args.scenario.name())
        }
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
    fn scenario_names_are_the_command_line_names() {
        for s in Scenario::value_variants() {
            let name = s.to_possible_value().unwrap();
            assert_eq!(s.name(), name.get_name());
        }
    }

    #[test]
    fn quick_changes_only_the_sizes_not_given() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cmd {
            #[command(flatten)]
            bench: BenchArgs,
        }
        let parse = |line: &[&str]| {
            let mut argv = vec!["bench"];
            argv.extend_from_slice(line);
            Cmd::try_parse_from(argv).unwrap().bench
        };
        let full = parse(&["psu"]);
        assert_eq!(full.checkpoints.0.last(), Some(&2_500_000));
        assert_eq!((full.records, full.runs, full.jobs), (500_000, 5, 2000));
        assert_eq!(full.flood_size, 1 << 30);
        let quick = parse(&["all", "--quick"]);
        assert_eq!(quick.checkpoints.0, [50_000, 100_000]);
        assert_eq!((quick.records, quick.runs, quick.jobs), (50_000, 1, 200));
        assert_eq!(quick.flood_size, 32 << 20);
        assert_eq!(quick.duration, Duration::from_secs(3));
        let given = parse(&["psu", "--quick", "--messages", "5M,10M", "--runs", "3"]);
        assert_eq!(given.checkpoints.0, [5_000_000, 10_000_000]);
        assert_eq!((given.runs, given.records), (3, 50_000));
        // The old name still works.
        assert_eq!(
            parse(&["psu", "--checkpoints", "1M"]).checkpoints.0,
            [1_000_000]
        );
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
