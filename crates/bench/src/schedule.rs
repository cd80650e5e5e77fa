//! `joblog bench schedule`: many schedules on one node of the bench's
//! own. First they are all far from their next fire (a yearly cron): the
//! server's CPU for `--duration` while its scheduler has nothing to do. Then each is
//! changed to fire once a minute, at second `i % 60` (so about 1/60 of
//! them each second), and for `--duration` each fire's lateness is
//! measured: from its fire time to the `FireDue` that queued its job
//! (the job's `created_at`), to that commit (the server's own histogram,
//! `joblog_schedule_fire_lateness_seconds`), and to the job's start.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures_util::stream::{self, StreamExt, TryStreamExt};
use joblog_core::{parse_time_bound, Timestamp};
use serde_json::{json, Value};

use super::chart::{Bar, Chart};
use super::output::Report;
use super::server::on_own_server;
use super::stats::{fmt_ms, median, percentile};
use super::BenchArgs;
use joblog_client::Api;

/// Budget of docs/benchmarks.md: p99 lateness, ms.
const BUDGET_P99_MS: f64 = 100.0;
/// Requests in flight while the schedules are made and changed.
const IN_FLIGHT: usize = 32;

struct Figures {
    schedules: u64,
    idle_cpu: f64,
    /// Fire → job queued, ms, of each fire measured.
    lateness: Vec<f64>,
    /// Fire → job started (its claim committed: later than its queueing
    /// was committed), ms.
    started: Vec<f64>,
    /// The server's own figure, fire → queue committed: the bounds (ms) of
    /// the histogram buckets its p50 and p99 fall in, and the fires it
    /// counted.
    committed_p99: Option<(f64, f64, u64)>,
    /// Fires measured, and the seconds they span.
    window_s: f64,
    /// Server CPU while firing, % of one core.
    busy_cpu: f64,
    doubled: usize,
}

pub(super) async fn run(args: BenchArgs) -> anyhow::Result<Report> {
    let date = super::now_rfc3339();
    // Jobs are `true`: enough slots that the pool never holds a fire's
    // job back from being queued (it never does: fires are queued by the
    // scheduler whatever the pool).
    // The server's limit on schedules (1,000 by default) raised to the
    // bench's count.
    let flags = [
        "--max-concurrency".to_string(),
        "32".to_string(),
        format!("--max-schedules={}", args.schedules.max(1)),
    ];
    let figures = on_own_server(&args, "schedule", &flags, async |server| {
        measure(&args, server).await
    })
    .await?;
    Ok(report(&args, &date, &super::command_line(), &figures))
}

async fn measure(
    args: &BenchArgs,
    server: &super::server::SpawnedServer,
) -> anyhow::Result<Figures> {
    let api = Api::new(&server.url, None)?;
    let n = args.schedules;
    eprintln!("bench schedule: making {n} schedules");
    let ids: Vec<i64> = stream::iter(0..n)
        .map(|i| {
            let api = &api;
            async move {
                let body = json!({
                    "name": format!("bench-{i}"),
                    // Once a year, on 1 January: never while we measure.
                    "cron": format!("{} {} 0 1 1 *", i % 60, (i / 60) % 60),
                    "command": ["true"],
                });
                let s: Value = api
                    .post_json(api.url("/api/v1/schedules", &[])?, &body)
                    .await?;
                s["id"].as_i64().context("a schedule without an id")
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect()
        .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = args.duration;
    eprintln!("bench schedule: idle for {idle:?}");
    let before = server
        .cpu_time()
        .context("cannot read the server's CPU time")?;
    tokio::time::sleep(idle).await;
    let after = server
        .cpu_time()
        .context("cannot read the server's CPU time")?;
    let idle_cpu = (after - before).as_secs_f64() / idle.as_secs_f64() * 100.0;

    eprintln!(
        "bench schedule: each fires every minute from now, for {:?}",
        args.duration
    );
    stream::iter(ids.iter().enumerate())
        .map(|(i, id)| {
            let api = &api;
            async move {
                let url = api.url(&format!("/api/v1/schedules/{id}"), &[])?;
                let body = json!({"cron": format!("{} * * * * *", i % 60)});
                api.patch_raw(url, &body).await.map(|_| ())
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await?;
    // Fires from the next whole second on: every schedule has its
    // minute cron by then.
    let from = Timestamp(Timestamp::now().0 / 1_000_000 * 1_000_000 + 2_000_000);
    let cpu_from = server
        .cpu_time()
        .context("cannot read the server's CPU time")?;
    let started = Instant::now();
    tokio::time::sleep(args.duration + Duration::from_secs(2)).await;
    let busy = started.elapsed();
    let cpu_to = server
        .cpu_time()
        .context("cannot read the server's CPU time")?;
    let until = Timestamp(from.0 + args.duration.as_micros() as i64);
    let (lateness, started, doubled) = lateness(&api, from, until).await?;
    let metrics = api
        .get_raw(api.url("/metrics", &[])?, Duration::from_secs(30))
        .await?;
    let committed_p99 = super::stats::bucket_p50_p99(
        &String::from_utf8_lossy(&metrics),
        "joblog_schedule_fire_lateness_seconds_bucket",
    );
    Ok(Figures {
        committed_p99,
        schedules: n,
        idle_cpu,
        lateness,
        started,
        window_s: args.duration.as_secs_f64(),
        busy_cpu: (cpu_to - cpu_from).as_secs_f64() / busy.as_secs_f64() * 100.0,
        doubled,
    })
}

fn timestamp(text: &str) -> anyhow::Result<Timestamp> {
    parse_time_bound(text, Timestamp(0)).map_err(|e| anyhow::anyhow!("a job's time: {e}"))
}

/// Lateness (ms) of each fire in [from, until) to its job queued and to
/// its job started, read from the jobs the fires made, newest first, page
/// by page; and how many fires had more than one job (there must be none).
async fn lateness(
    api: &Api,
    from: Timestamp,
    until: Timestamp,
) -> anyhow::Result<(Vec<f64>, Vec<f64>, usize)> {
    let mut out = Vec::new();
    let mut started = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut doubled = 0;
    let mut before: Option<i64> = None;
    loop {
        let mut q = vec![("limit", "1000".to_string())];
        if let Some(b) = before {
            q.push(("before_id", b.to_string()));
        }
        let page: Value = api.get_json(api.url("/api/v1/jobs", &q)?).await?;
        let jobs = page["jobs"].as_array().context("a job list")?;
        let mut older = false;
        for job in jobs {
            let (Some(fire), Some(created)) =
                (job["fire_time"].as_str(), job["created_at"].as_str())
            else {
                continue;
            };
            let fire = timestamp(fire)?;
            if fire < from {
                older = true;
                continue;
            }
            if fire >= until {
                continue;
            }
            if !seen.insert((job["schedule_id"].as_i64(), fire)) {
                doubled += 1;
            }
            out.push(fire.millis_until(timestamp(created)?));
            if let Some(start) = job["started_at"].as_str() {
                started.push(fire.millis_until(timestamp(start)?));
            }
        }
        match page["next_before_id"].as_i64() {
            Some(b) if !older => before = Some(b),
            _ => break,
        }
    }
    Ok((out, started, doubled))
}

fn report(args: &BenchArgs, date: &str, command: &str, f: &Figures) -> Report {
    let store = args.store_name();
    let expected = f.schedules as f64 * f.window_s / 60.0;
    let p99 = percentile(&f.lateness, 99.0);
    let met = p99.is_some_and(|p| p <= BUDGET_P99_MS);
    let mut out = String::new();
    let _ = writeln!(out, "## joblog bench schedule\n");
    let _ = writeln!(out, "Date: {date}  ");
    let _ = writeln!(out, "Command: `{command}`  ");
    let _ = writeln!(
        out,
        "Store: {store}. {} schedules, each firing once a minute (second `i % 60`), for {:.0} s: {} fires measured (expected about {expected:.0}), {} made twice.\n",
        f.schedules,
        f.window_s,
        f.lateness.len(),
        f.doubled
    );
    let _ = writeln!(out, "| Figure | value | budget |");
    let _ = writeln!(out, "|---|---:|---|");
    let _ = writeln!(
        out,
        "| fire → its `FireDue` (the job's `created_at`), p50 (ms) | {} | |",
        fmt_ms(median(&f.lateness))
    );
    let _ = writeln!(
        out,
        "| fire → its `FireDue`, p99 (ms) | {} | ≤ {BUDGET_P99_MS}{} |",
        fmt_ms(p99),
        if met { "" } else { " **missed**" }
    );
    let _ = writeln!(
        out,
        "| fire → its `FireDue`, max (ms) | {} | |",
        fmt_ms(percentile(&f.lateness, 100.0))
    );
    let _ = match f.committed_p99 {
        Some((p50, bound, n)) => writeln!(
            out,
            "| fire → job queued and committed, p50 / p99, the server's histogram ({n} fires) | ≤ {p50} / ≤ {bound} | p99 ≤ {BUDGET_P99_MS}{} |",
            if bound <= BUDGET_P99_MS { "" } else { " **missed**" }
        ),
        None => writeln!(out, "| fire → job queued and committed (server) | – | |"),
    };
    let _ = writeln!(
        out,
        "| fire → job started (claim committed), p50 / p99 (ms) | {} / {} | |",
        fmt_ms(median(&f.started)),
        fmt_ms(percentile(&f.started, 99.0))
    );
    let _ = writeln!(
        out,
        "| server CPU, scheduler idle ({} schedules, none due for {:.0} s) | {:.2} % of a core | negligible |",
        f.schedules,
        f.window_s,
        f.idle_cpu
    );
    let _ = writeln!(
        out,
        "| server CPU while firing (jobs run too) | {:.1} % of a core | |",
        f.busy_cpu
    );
    let figures = json!({
        "store": store,
        "schedules": f.schedules,
        "idle_cpu_percent": f.idle_cpu,
        "busy_cpu_percent": f.busy_cpu,
        "window_s": f.window_s,
        "fires_measured": f.lateness.len(),
        "made_twice": f.doubled,
        "fire_to_queued_ms": { "p50": median(&f.lateness), "p99": p99, "max": percentile(&f.lateness, 100.0) },
        "fire_to_started_ms": { "p50": median(&f.started), "p99": percentile(&f.started, 99.0) },
        "fire_to_committed_bucket_ms": f.committed_p99.map(|(p50, p99, n)| json!({ "p50_at_most": p50, "p99_at_most": p99, "fires": n })),
        "budget_p99_ms": BUDGET_P99_MS,
    });
    let bar = |label: &str, value: Option<f64>, reference: bool| Bar {
        label: label.into(),
        value: value.unwrap_or(f64::NAN),
        reference,
    };
    let chart = Chart::Bars {
        title: format!(
            "schedule: {} schedules, fire lateness ({store})",
            f.schedules
        ),
        unit: "milliseconds (grey: the budget)".into(),
        bars: vec![
            bar("fire → FireDue, p50", median(&f.lateness), false),
            bar("fire → FireDue, p99", p99, false),
            bar(
                "fire → committed, p99 (bucket)",
                f.committed_p99.map(|c| c.1),
                false,
            ),
            bar("budget: p99", Some(BUDGET_P99_MS), true),
        ],
    };
    Report::new(out, figures).chart("", chart)
}
