//! `joblog bench flood`: one job writing `--flood-size` (1 GiB) of short
//! lines as fast as `yes` makes them, on a server of the bench's own whose
//! per-job cap is raised so that every line is stored: records a second
//! from the job's start to its last record committed, the server's memory
//! before and at its peak, and meanwhile the latency of another job's log,
//! a line written → delivered to a live-tail viewer, as `bench tail`
//! measures it.

use std::fmt::Write as _;
use std::time::Instant;

use anyhow::Context;
use serde_json::json;

use super::chart::{Bar, Chart};
use super::output::Report;
use super::psu::run_job;
use super::server::on_own_server;
use super::stats::fmt_ms;
use super::tail::{follow, report::Figures, Ctx};
use super::{scratch_dir, BenchArgs};
use joblog_client::{Api, Global, JobView};

/// The flooding job's line, 80 bytes with its newline: a short log line.
const LINE: &str =
    "flood: the quick brown fox jumps over the lazy dog, again and again, 0123456789";

/// Budgets of docs/benchmarks.md: a 1 GiB job raises the server's RSS by
/// at most this (MiB); the other job's line p99 (ms, issue 34's budget).
const RSS_BUDGET_MIB: f64 = 64.0;
const LATENCY_BUDGET_MS: f64 = 50.0;

struct Flood {
    job: JobView,
    /// Server RSS just before the flood, and its peak after it (MiB).
    rss_before: Option<f64>,
    peak_after: Option<f64>,
    /// Seconds of the followed job's writing during which the flood ran.
    overlap_s: f64,
    followed: Figures,
}

pub(super) async fn run(args: BenchArgs, global: Global) -> anyhow::Result<Report> {
    let date = super::now_rfc3339();
    let dir = scratch_dir("flood")?;
    let cap = (args.flood_size / 40 + 1_000_000).to_string();
    let flags = [
        // Every line stored: the pipeline and the store take the whole flood.
        format!("--log-max-records={cap}"),
        // (The cap's kept tail, 16 MiB, comes out of this.)
        format!(
            "--log-max-bytes={}",
            args.flood_size.saturating_mul(2).saturating_add(1 << 30)
        ),
    ];
    let ctx = Ctx {
        args: &args,
        global: &global,
        token: None,
        exe: std::env::current_exe().context("cannot find the joblog executable")?,
        dir: dir.clone(),
    };
    let outcome = on_own_server(&args, "flood", &flags, async |server| {
        let api = Api::new(&server.url, None)?;
        let script = format!("yes '{LINE}' | head -c {}", args.flood_size);
        let (writing, started) = tokio::sync::oneshot::channel();
        let flood = async {
            started
                .await
                .context("the followed job never started writing")?;
            let rss_before = server.memory_mib().map(|m| m.0);
            eprintln!(
                "bench flood: a job writing {} bytes, another job followed meanwhile",
                args.flood_size
            );
            let t = Instant::now();
            let job = run_job(&api, &script, args.job_timeout).await?;
            let peak_after = server.memory_mib().map(|m| m.1);
            Ok::<_, anyhow::Error>((job, rss_before, peak_after, t.elapsed()))
        };
        let follower_start = Instant::now();
        let (followed, flood) = tokio::join!(follow(&ctx, &server.url, 1, Some(writing)), flood);
        let (job, rss_before, peak_after, lasted) = flood?;
        let followed = followed?;
        // The flood starts once the followed job writes: it overlaps the
        // writing for as long as both ran.
        let writing_s = args.duration.as_secs_f64();
        let overlap_s = lasted
            .as_secs_f64()
            .min(writing_s)
            .min(follower_start.elapsed().as_secs_f64());
        Ok(Flood {
            job,
            rss_before,
            peak_after,
            overlap_s,
            followed: followed.figures(),
        })
    })
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    let flood = outcome?;
    Ok(report(&args, &date, &flood))
}

fn report(args: &BenchArgs, date: &str, f: &Flood) -> Report {
    let store = args.store_name();
    let seconds = f.job.duration_ms.unwrap_or(f64::NAN) / 1000.0;
    let records = f.job.log.records;
    let rate = records as f64 / seconds;
    let mib_per_s = f.job.log.bytes as f64 / seconds / (1024.0 * 1024.0);
    let raised = match (f.rss_before, f.peak_after) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let ok = f.job.state == "succeeded" && !f.job.log.truncated;
    let mut out = String::new();
    let _ = writeln!(out, "## joblog bench flood\n");
    let _ = writeln!(out, "Date: {date}  ");
    let _ = writeln!(out, "Command: `{}`  ", super::command_line());
    let _ = writeln!(
        out,
        "Store: {store}. One job, `yes '<{} bytes>' | head -c {}`, every line stored (the server's per-job cap raised); meanwhile another job writes {} lines/s for {} s to a live-tail viewer.\n",
        LINE.len() + 1,
        args.flood_size,
        args.rate,
        args.duration.as_secs_f64()
    );
    let _ = writeln!(out, "| Figure | value | budget |");
    let _ = writeln!(out, "|---|---:|---|");
    let _ = writeln!(
        out,
        "| flooding job: {} records, {} bytes, {} | {:.2} s | |",
        records,
        f.job.log.bytes,
        if ok {
            "succeeded".to_string()
        } else {
            format!(
                "**{}{}**",
                f.job.state,
                if f.job.log.truncated {
                    ", truncated"
                } else {
                    ""
                }
            )
        },
        seconds
    );
    let _ = writeln!(
        out,
        "| records/s (start → last record committed) | {rate:.0} | |"
    );
    let _ = writeln!(out, "| MiB/s of text | {mib_per_s:.1} | |");
    let mib = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.0}"));
    let _ = writeln!(
        out,
        "| server RSS before → peak (MiB) | {} → {} | |",
        mib(f.rss_before),
        mib(f.peak_after)
    );
    let _ = writeln!(
        out,
        "| raised by (MiB) | {} | ≤ {RSS_BUDGET_MIB:.0}{} |",
        mib(raised),
        if raised.is_some_and(|r| r > RSS_BUDGET_MIB) {
            " **missed**"
        } else {
            ""
        }
    );
    let fl = &f.followed;
    let _ = writeln!(
        out,
        "| the other job's lines: written → delivered, p50 / p99 / max (ms) | {} / {} / {} | p99 ≤ {LATENCY_BUDGET_MS:.0}{} |",
        fmt_ms(fl.p50),
        fmt_ms(fl.p99),
        fmt_ms(fl.max),
        if fl.p99.is_some_and(|p| p > LATENCY_BUDGET_MS) { " **missed**" } else { "" }
    );
    let _ = writeln!(
        out,
        "| the other job's lines delivered | {} / {} | all |",
        fl.lines, fl.expected
    );
    let _ = writeln!(
        out,
        "| the flood ran during the other job's writing | {:.1} of {:.1} s | |",
        f.overlap_s,
        args.duration.as_secs_f64()
    );
    let figures = json!({
        "store": store,
        "flood_bytes": args.flood_size,
        "job": {
            "state": f.job.state,
            "records": records,
            "bytes": f.job.log.bytes,
            "truncated": f.job.log.truncated,
            "duration_s": seconds,
        },
        "records_per_s": rate,
        "mib_per_s": mib_per_s,
        "rss_before_mib": f.rss_before,
        "peak_rss_mib": f.peak_after,
        "rss_raised_mib": raised,
        "other_job": {
            "p50_ms": fl.p50, "p99_ms": fl.p99, "max_ms": fl.max,
            "lines_delivered": fl.lines, "lines_expected": fl.expected,
            "problems": fl.problem_count,
        },
        "overlap_s": f.overlap_s,
        "budget": { "rss_raised_mib": RSS_BUDGET_MIB, "other_job_p99_ms": LATENCY_BUDGET_MS },
    });
    let chart = Chart::Bars {
        title: format!(
            "flood: the other job's lines while one job writes {} MiB ({store})",
            args.flood_size / (1024 * 1024)
        ),
        unit: "milliseconds (grey: the budget)".into(),
        bars: vec![
            Bar {
                label: "written → delivered, p50".into(),
                value: fl.p50.unwrap_or(f64::NAN),
                reference: false,
            },
            Bar {
                label: "written → delivered, p99".into(),
                value: fl.p99.unwrap_or(f64::NAN),
                reference: false,
            },
            Bar {
                label: "budget: p99".into(),
                value: LATENCY_BUDGET_MS,
                reference: true,
            },
        ],
    };
    let mut report = Report::new(out, figures).chart("", chart);
    report.failed = !ok || fl.problem_count > 0;
    report
}
