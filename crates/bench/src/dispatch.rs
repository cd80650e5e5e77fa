//! `joblog bench dispatch`: trivial jobs (`true`) through the engine, with
//! their records and ends persisted, beside the rate at which this
//! machine forks and execs `true` itself at the same concurrency,
//! measured by the bench in the same run. Also the jobs' queue wait
//! (submission → start). With `--nodes N` on PostgreSQL, N labelled nodes
//! share the queue and each round runs a second burst in which half the
//! jobs ask for one node's label: the cost of placement, in the same run.

use std::fmt::Write as _;
use std::time::Instant;

use anyhow::{bail, Context};
use futures_util::stream::{self, StreamExt, TryStreamExt};
use joblog_core::{parse_time_bound, Timestamp};
use serde_json::{json, Value};

use super::chart::{Bar, Chart};
use super::output::Report;
use super::server::{on_own_server, start_server};
use super::stats::{bucket_p50_p99, fmt_ms, median, percentile};
use super::BenchArgs;
use joblog_client::progress::Progress;
use joblog_client::Api;

/// Budget and goal of docs/benchmarks.md: joblog's jobs/s as a share of
/// the machine's fork/exec rate.
const BUDGET: f64 = 0.5;
const GOAL: f64 = 0.9;
/// Submissions in flight while the burst is sent.
const IN_FLIGHT: usize = 32;

struct Run {
    /// `true` processes a second, forked by the bench.
    fork_exec: f64,
    /// Jobs a second: from the first submission's commit to the last
    /// job's end committed.
    jobs: f64,
    /// Submission → start, ms, of each job.
    queue_wait: Vec<f64>,
    /// With `--nodes` ≥ 2: jobs a second of the same burst with half its
    /// jobs carrying a `node_selector`.
    with_selectors: Option<f64>,
}

pub(super) async fn run(args: BenchArgs) -> anyhow::Result<Report> {
    let date = super::now_rfc3339();
    if args.nodes > 1
        && !args
            .database
            .as_deref()
            .is_some_and(|d| d.starts_with("postgres"))
    {
        bail!(joblog_client::UsageError(
            "bench dispatch --nodes 2 or more needs --database postgres://… (nodes share one queue)"
                .into()
        ));
    }
    let (runs, read_wait) =
        on_own_server(&args, "dispatch", &node_flags(&args, 0), async |server| {
            let mut sigint =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
                    .context("cannot listen for Ctrl-C")?;
            let mut others = Vec::new();
            for i in 1..args.nodes {
                let flags = node_flags(&args, i);
                let other = start_server(
                    &args,
                    Some(&server.database),
                    &flags,
                    &[],
                    None,
                    &mut sigint,
                )
                .await;
                match other {
                    Ok(other) => others.push(other),
                    Err(e) => {
                        for other in others {
                            other.stop().await;
                        }
                        return Err(e);
                    }
                }
            }
            let runs = measure(&args, &server.url).await;
            for other in others {
                other.stop().await;
            }
            let runs = runs?;
            let api = Api::new(&server.url, None)?;
            let metrics = api
                .get_raw(
                    api.url("/metrics", &[])?,
                    std::time::Duration::from_secs(30),
                )
                .await?;
            let read_wait = bucket_p50_p99(
                &String::from_utf8_lossy(&metrics),
                "joblog_store_read_wait_seconds_bucket",
            );
            Ok((runs, read_wait))
        })
        .await?;
    Ok(report(
        &args,
        &date,
        &super::command_line(),
        &runs,
        read_wait,
    ))
}

/// The command line of node `i`: its slots, a queue that holds the
/// burst whole, and with `--nodes` its name and label.
fn node_flags(args: &BenchArgs, i: u32) -> Vec<String> {
    let mut flags = vec![
        "--max-concurrency".to_string(),
        args.batch_jobs.to_string(),
        "--max-queued".to_string(),
        (args.jobs + 1000).to_string(),
    ];
    if args.nodes > 1 {
        flags.extend([
            "--node".to_string(),
            format!("bench-{i}"),
            "--node-labels".to_string(),
            format!("bench.node={i}"),
        ]);
    }
    flags
}

/// `--runs` rounds, each the reference then joblog (and, with `--nodes`,
/// the burst with selectors, the two in turns first), after a warm-up.
async fn measure(args: &BenchArgs, url: &str) -> anyhow::Result<Vec<Run>> {
    let api = Api::new(url, None)?;
    let n = args.jobs;
    let concurrency = args.batch_jobs as usize;
    let placed = (args.nodes > 1).then_some(args.nodes);
    burst(&api, n.min(100), None).await?;
    let mut runs = Vec::new();
    let progress = Progress::new(u64::from(args.runs), "rounds");
    for round in 1..=args.runs {
        progress.note(format!("bench dispatch: round {round} of {}", args.runs));
        let fork_exec = fork_exec_rate(n, concurrency).await?;
        let selectors_first = placed.is_some() && round % 2 == 0;
        let mut with_selectors = None;
        if selectors_first {
            with_selectors = Some(burst(&api, n, placed).await?.0);
        }
        let (jobs, queue_wait) = burst(&api, n, None).await?;
        if placed.is_some() && !selectors_first {
            with_selectors = Some(burst(&api, n, placed).await?.0);
        }
        runs.push(Run {
            fork_exec,
            jobs,
            queue_wait,
            with_selectors,
        });
        progress.inc();
    }
    Ok(runs)
}

/// `true` run `n` times, `concurrency` at once, by the bench: processes a
/// second.
async fn fork_exec_rate(n: u64, concurrency: usize) -> anyhow::Result<f64> {
    let started = Instant::now();
    stream::iter(0..n)
        .map(|_| async {
            let status = tokio::process::Command::new("true")
                .status()
                .await
                .context("cannot run true")?;
            anyhow::ensure!(status.success(), "true failed: {status}");
            Ok(())
        })
        .buffer_unordered(concurrency)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(n as f64 / started.elapsed().as_secs_f64())
}

fn timestamp(job: &Value, field: &str) -> anyhow::Result<Timestamp> {
    let text = job[field]
        .as_str()
        .with_context(|| format!("job {} has no {field}", job["id"]))?;
    parse_time_bound(text, Timestamp(0)).map_err(|e| anyhow::anyhow!("a job's {field}: {e}"))
}

/// `n` jobs of `true` submitted at once (`IN_FLIGHT` requests in flight)
/// and waited for: jobs a second by the server's clock (first created →
/// last finished), and each job's queue wait in ms. With `placed` nodes,
/// every other job asks for one of them by its label, in turn.
async fn burst(api: &Api, n: u64, placed: Option<u32>) -> anyhow::Result<(f64, Vec<f64>)> {
    let ids: Vec<i64> = stream::iter(0..n)
        .map(|i| async move {
            let body = match placed {
                Some(nodes) if i % 2 == 0 => json!({"command": ["true"],
                    "node_selector": {"bench.node": ((i / 2) % u64::from(nodes)).to_string()}}),
                _ => json!({"command": ["true"]}),
            };
            let job: Value = api.post_json(api.url("/api/v1/jobs", &[])?, &body).await?;
            job["id"].as_i64().context("a job without an id")
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect()
        .await?;
    let (first, last) = (
        *ids.iter().min().context("no job")?,
        *ids.iter().max().context("no job")?,
    );
    // Until none is queued or running (one index entry a look, so the
    // looking does not slow the server it measures), then every job once.
    let open = api.url(
        "/api/v1/jobs",
        &[
            ("state", "queued,running".to_string()),
            ("limit", "1".to_string()),
        ],
    )?;
    loop {
        let page: Value = api.get_json(open.clone()).await?;
        if page["jobs"].as_array().is_some_and(Vec::is_empty) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let jobs = jobs_between(api, first, last).await?;
    if jobs.len() as u64 != n {
        bail!("{} of the burst's {n} jobs were found", jobs.len());
    }
    let mut start = i64::MAX;
    let mut end = i64::MIN;
    let mut waits = Vec::with_capacity(jobs.len());
    for job in &jobs {
        if job["state"] != "succeeded" {
            bail!("job {} ended {}, not succeeded", job["id"], job["state"]);
        }
        let created = timestamp(job, "created_at")?;
        start = start.min(created.0);
        end = end.max(timestamp(job, "finished_at")?.0);
        waits.push(created.millis_until(timestamp(job, "started_at")?));
    }
    let seconds = (end - start) as f64 / 1e6;
    Ok((n as f64 / seconds.max(1e-6), waits))
}

/// The jobs with ids from `first` to `last`.
async fn jobs_between(api: &Api, first: i64, last: i64) -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::new();
    let mut before = last + 1;
    loop {
        let q = [
            ("limit", "1000".to_string()),
            ("before_id", before.to_string()),
        ];
        let page: Value = api.get_json(api.url("/api/v1/jobs", &q)?).await?;
        let jobs = page["jobs"].as_array().context("a job list")?;
        for job in jobs {
            let id = job["id"].as_i64().context("a job without an id")?;
            if id < first {
                return Ok(out);
            }
            out.push(job.clone());
            before = id;
        }
        if jobs.is_empty() || page["next_before_id"].is_null() {
            return Ok(out);
        }
    }
}

/// `read_wait`: the server's histogram of reads waiting for a pooled
/// connection over the whole bench: the bucket bounds (ms) of its p50 and
/// p99, and the reads counted.
fn report(
    args: &BenchArgs,
    date: &str,
    command: &str,
    runs: &[Run],
    read_wait: Option<(f64, f64, u64)>,
) -> Report {
    let store = args.store_name();
    let col = |f: fn(&Run) -> f64| runs.iter().map(f).collect::<Vec<f64>>();
    let fork_exec = median(&col(|r| r.fork_exec)).unwrap_or(0.0);
    let jobs = median(&col(|r| r.jobs)).unwrap_or(0.0);
    let ratios = col(|r| r.jobs / r.fork_exec);
    let ratio = median(&ratios).unwrap_or(0.0);
    let waits: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.queue_wait.iter().copied())
        .collect();
    let mut out = String::new();
    let _ = writeln!(out, "## joblog bench dispatch\n");
    let _ = writeln!(out, "Date: {date}  ");
    let _ = writeln!(out, "Command: `{command}`  ");
    let _ = writeln!(
        out,
        "Store: {store}{}. {} jobs of `true` submitted at once, {} at a time (`--max-concurrency`), each with its log and end committed; {} rounds, medians. The reference runs `true` {} times, {} at once, from the bench.\n",
        if args.nodes > 1 {
            format!(", {} nodes labelled `bench.node=<i>` (the jobs/s of one burst are of all of them)", args.nodes)
        } else {
            String::new()
        },
        args.jobs,
        args.batch_jobs,
        runs.len(),
        args.jobs,
        args.batch_jobs
    );
    let _ = writeln!(out, "| Figure | value | budget (goal) |");
    let _ = writeln!(out, "|---|---:|---|");
    let _ = writeln!(
        out,
        "| fork/exec of `true`, by the bench (per s) | {fork_exec:.0} | |"
    );
    let _ = writeln!(out, "| joblog jobs (per s) | {jobs:.0} | |");
    let _ = writeln!(
        out,
        "| joblog / fork/exec | {:.0} % | ≥ {:.0} % ({:.0} %){} |",
        ratio * 100.0,
        BUDGET * 100.0,
        GOAL * 100.0,
        if ratio >= BUDGET { "" } else { " **missed**" }
    );
    // Placement: the same burst with half its jobs asking for a node's
    // label, each round's pair run back to back.
    let placed: Vec<f64> = runs.iter().filter_map(|r| r.with_selectors).collect();
    let placed_median = median(&placed);
    let placement_ratio = median(
        &runs
            .iter()
            .filter_map(|r| r.with_selectors.map(|s| s / r.jobs))
            .collect::<Vec<_>>(),
    );
    if let (Some(placed), Some(ratio)) = (placed_median, placement_ratio) {
        let _ = writeln!(
            out,
            "| joblog jobs, half with a `node_selector`, {} nodes (per s) | {placed:.0} | |",
            args.nodes
        );
        let _ = writeln!(
            out,
            "| with selectors / without, per round | {:.2} | ≥ 0.90{} |",
            ratio,
            if ratio >= 0.9 { "" } else { " **missed**" }
        );
    }
    let _ = writeln!(
        out,
        "| queue wait (submission → start), p50 / p99 (ms) | {} / {} | |",
        fmt_ms(median(&waits)),
        fmt_ms(percentile(&waits, 99.0))
    );
    // The histogram starts at 10 µs.
    let bound = |ms: f64| {
        if ms < 1.0 {
            format!("{ms:.2}")
        } else {
            fmt_ms(Some(ms))
        }
    };
    let _ = match read_wait {
        Some((p50, p99, n)) => writeln!(
            out,
            "| store read-pool checkout, p50 / p99, the server's histogram ({n} reads) (ms) | ≤ {} / ≤ {} | |",
            bound(p50),
            bound(p99)
        ),
        None => writeln!(out, "| store read-pool checkout (server) | – | |"),
    };
    let figures = json!({
        "store": store,
        "jobs_per_round": args.jobs,
        "concurrency": args.batch_jobs,
        "rounds": runs.iter().map(|r| json!({
            "fork_exec_per_s": r.fork_exec,
            "jobs_per_s": r.jobs,
            "ratio": r.jobs / r.fork_exec,
            "queue_wait_p50_ms": median(&r.queue_wait),
            "queue_wait_p99_ms": percentile(&r.queue_wait, 99.0),
        })).collect::<Vec<_>>(),
        "median": {
            "fork_exec_per_s": fork_exec,
            "jobs_per_s": jobs,
            "ratio": ratio,
            "queue_wait_p50_ms": median(&waits),
            "queue_wait_p99_ms": percentile(&waits, 99.0),
        },
        "read_pool_checkout_ms": read_wait.map(|(p50, p99, n)| json!({
            "p50_at_most": p50, "p99_at_most": p99, "reads": n,
        })),
        "budget_ratio": BUDGET,
        "goal_ratio": GOAL,
        "nodes": args.nodes,
        "with_selectors": placed_median.map(|jobs| json!({
            "jobs_per_s": jobs,
            "per_round": runs.iter().map(|r| r.with_selectors).collect::<Vec<_>>(),
            "ratio_to_without": placement_ratio,
            "budget_ratio": 0.9,
        })),
    });
    let chart = Chart::Bars {
        title: format!(
            "dispatch: trivial jobs per second, {} at a time ({store})",
            args.batch_jobs
        ),
        unit: "processes or jobs per second, median of the rounds".into(),
        bars: vec![
            Bar {
                label: "fork/exec of true (reference)".into(),
                value: fork_exec,
                reference: true,
            },
            Bar {
                label: "joblog jobs".into(),
                value: jobs,
                reference: false,
            },
            Bar {
                label: "budget: 50 % of fork/exec".into(),
                value: fork_exec * BUDGET,
                reference: true,
            },
        ],
    };
    Report::new(out, figures).chart("", chart)
}
