//! `joblog bench notify`: notifications from a server of the bench's own
//! to a receiver in the bench (on loopback, so the server runs with
//! `--notify-allow-private-targets true`). Three measurements:
//!
//! - a burst of failing jobs (1,000; `--quick`: 50) with one rule: every
//!   one delivered, none twice, and each job's end (`finished_at`) to its
//!   notification's arrival, p50 and p99 (budget: p99 ≤ 1 s);
//! - the receiver down (503) for 30 s (`--quick`: 3 s) while jobs fail,
//!   then up: every notification arrives once after it returns;
//! - the cost of a rule to the jobs it matches: short jobs run one after
//!   another (submission to end, as `bench psu` times them) without a
//!   rule, then with one that tells of every success.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use joblog_client::Api;
use joblog_core::{parse_time_bound, Timestamp};
use serde_json::{json, Value};

use super::chart::{Bar, Chart};
use super::output::Report;
use super::psu::run_job;
use super::server::on_own_server;
use super::stats::{fmt_ms, median, percentile};
use super::BenchArgs;

/// Budget of docs/benchmarks.md: a job's end to its notification, p99, ms.
const BUDGET_P99_MS: f64 = 1000.0;

/// One accepted notification: its delivery id, its job, when it came.
#[derive(Clone)]
struct Arrival {
    delivery: String,
    job: i64,
    at: Timestamp,
}

#[derive(Default)]
struct Receiver {
    accepted: Mutex<Vec<Arrival>>,
    /// Answers 503 while set (the receiver "down").
    down: AtomicBool,
    refused: std::sync::atomic::AtomicU64,
}

async fn hook(State(r): State<Arc<Receiver>>, headers: HeaderMap, body: String) -> StatusCode {
    if r.down.load(Ordering::SeqCst) {
        r.refused.fetch_add(1, Ordering::Relaxed);
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let at = Timestamp::now();
    let delivery = headers
        .get("joblog-delivery")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let job = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|doc| doc["job"]["id"].as_i64())
        .unwrap_or(0);
    if let Ok(mut all) = r.accepted.lock() {
        all.push(Arrival { delivery, job, at });
    }
    StatusCode::OK
}

impl Receiver {
    fn accepted(&self) -> Vec<Arrival> {
        self.accepted.lock().map(|a| a.clone()).unwrap_or_default()
    }

    /// Waits until `jobs` each have a notification, for at most `patience`.
    async fn wait_for(&self, jobs: &[i64], patience: Duration) -> anyhow::Result<Vec<Arrival>> {
        let started = Instant::now();
        loop {
            let got = self.accepted();
            let missing = jobs
                .iter()
                .filter(|j| !got.iter().any(|a| a.job == **j))
                .count();
            if missing == 0 {
                return Ok(got);
            }
            if started.elapsed() > patience {
                bail!("{missing} of {} notifications never arrived", jobs.len());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// What the scenario measured.
#[derive(serde::Serialize)]
struct Figures {
    burst_jobs: usize,
    burst_duplicates: usize,
    /// Job end → arrival, ms, per job of the burst.
    burst_latency_ms: Vec<f64>,
    outage_jobs: usize,
    outage_s: f64,
    outage_duplicates: usize,
    /// The receiver back → the last notification of the outage, ms.
    outage_catch_up_ms: f64,
    /// Submission → end of short jobs, ms, without a rule and with one.
    jobs_without_rule_ms: Vec<f64>,
    jobs_with_rule_ms: Vec<f64>,
}

pub(super) async fn run(args: BenchArgs) -> anyhow::Result<Report> {
    let date = super::now_rfc3339();
    let receiver = Arc::new(Receiver::default());
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(hook))
        .with_state(receiver.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("cannot listen for the bench's receiver")?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    let serving = tokio::spawn(async move { axum::serve(listener, app).await });
    let flags = ["--notify-allow-private-targets".to_string(), "true".into()];
    let outcome = on_own_server(&args, "notify", &flags, async |server| {
        measure(&args, &server.url, &url, &receiver).await
    })
    .await;
    serving.abort();
    Ok(report(&args, &date, &outcome?))
}

async fn measure(
    args: &BenchArgs,
    server: &str,
    hook_url: &str,
    receiver: &Receiver,
) -> anyhow::Result<Figures> {
    let api = Api::new(server, None)?;
    let (burst, outage, short_jobs) = if args.quick {
        (50, Duration::from_secs(3), 10)
    } else {
        (1000, Duration::from_secs(30), 100)
    };
    // The cost of a rule to the jobs it tells of.
    let without = short_runs(&api, args, short_jobs).await?;
    let every_success = create_rule(&api, "bench-successes", &["succeeded"], hook_url).await?;
    let with = short_runs(&api, args, short_jobs).await?;
    delete_rule(&api, every_success).await?;

    create_rule(&api, "bench-failures", &["failed"], hook_url).await?;
    // A burst of failing jobs, submitted as fast as the API takes them.
    let mut jobs = Vec::with_capacity(burst);
    for _ in 0..burst {
        jobs.push(submit_failing(&api).await?);
    }
    let patience = Duration::from_secs(600);
    let arrivals = receiver.wait_for(&jobs, patience).await?;
    let mut latency = Vec::with_capacity(jobs.len());
    for id in &jobs {
        let job = api.job(*id).await?;
        let finished = timestamp(job.finished_at.as_deref().unwrap_or_default())?;
        let arrived = arrivals
            .iter()
            .filter(|a| a.job == *id)
            .map(|a| a.at)
            .min()
            .context("an arrival went missing")?;
        latency.push(finished.millis_until(arrived));
    }
    let burst_duplicates = duplicates(&arrivals, &jobs);

    // The receiver down while jobs fail, then back.
    receiver.down.store(true, Ordering::SeqCst);
    let down_since = Instant::now();
    let mut failed_meanwhile = Vec::new();
    for _ in 0..short_jobs {
        failed_meanwhile.push(submit_failing(&api).await?);
    }
    tokio::time::sleep(outage.saturating_sub(down_since.elapsed())).await;
    receiver.down.store(false, Ordering::SeqCst);
    let back = Instant::now();
    let arrivals = receiver.wait_for(&failed_meanwhile, patience).await?;
    let catch_up = back.elapsed();
    let outage_duplicates = duplicates(&arrivals, &failed_meanwhile);
    Ok(Figures {
        burst_jobs: jobs.len(),
        burst_duplicates,
        burst_latency_ms: latency,
        outage_jobs: failed_meanwhile.len(),
        outage_s: outage.as_secs_f64(),
        outage_duplicates,
        outage_catch_up_ms: catch_up.as_secs_f64() * 1e3,
        jobs_without_rule_ms: without,
        jobs_with_rule_ms: with,
    })
}

/// Notifications of `jobs` that arrived more than once (by delivery id).
fn duplicates(arrivals: &[Arrival], jobs: &[i64]) -> usize {
    let mut per: BTreeMap<&str, usize> = BTreeMap::new();
    for a in arrivals.iter().filter(|a| jobs.contains(&a.job)) {
        *per.entry(a.delivery.as_str()).or_default() += 1;
    }
    per.values().filter(|n| **n > 1).count()
}

/// `n` short jobs one after another: submission to end, ms.
async fn short_runs(api: &Api, args: &BenchArgs, n: usize) -> anyhow::Result<Vec<f64>> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let job = run_job(api, "true", args.job_timeout).await?;
        if job.state != "succeeded" {
            bail!("job {} ended {}, not succeeded", job.id, job.state);
        }
        out.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(out)
}

async fn create_rule(api: &Api, name: &str, states: &[&str], url: &str) -> anyhow::Result<i64> {
    let rule: Value = api
        .post_json(
            api.url("/api/v1/notifications", &[])?,
            &json!({"name": name, "when": {"states": states}, "webhook": {"url": url}}),
        )
        .await?;
    rule["id"].as_i64().context("the rule has no id")
}

async fn delete_rule(api: &Api, id: i64) -> anyhow::Result<()> {
    api.delete_raw(api.url(&format!("/api/v1/notifications/{id}"), &[])?)
        .await?;
    Ok(())
}

async fn submit_failing(api: &Api) -> anyhow::Result<i64> {
    let job: Value = api
        .post_json(
            api.url("/api/v1/jobs", &[])?,
            &json!({"name": "bench-notify", "command": ["sh", "-c", "exit 1"]}),
        )
        .await?;
    job["id"].as_i64().context("the job has no id")
}

fn timestamp(text: &str) -> anyhow::Result<Timestamp> {
    parse_time_bound(text, Timestamp(0)).map_err(|e| anyhow::anyhow!("a job's time: {e}"))
}

fn report(args: &BenchArgs, date: &str, f: &Figures) -> Report {
    let store = args.store_name();
    let p50 = percentile(&f.burst_latency_ms, 50.0);
    let p99 = percentile(&f.burst_latency_ms, 99.0);
    let met = p99.is_some_and(|p| p <= BUDGET_P99_MS);
    let (without, with) = (
        median(&f.jobs_without_rule_ms),
        median(&f.jobs_with_rule_ms),
    );
    let ratio = match (without, with) {
        (Some(a), Some(b)) if a > 0.0 => format!("{:.2}", b / a),
        _ => "—".into(),
    };
    let mut out = String::new();
    let _ = writeln!(out, "## joblog bench notify\n");
    let _ = writeln!(out, "Date: {date}  ");
    let _ = writeln!(out, "Command: `{}`  ", super::command_line());
    let _ = writeln!(
        out,
        "Store: {store}. One rule, a web hook to a receiver on loopback.\n"
    );
    let _ = writeln!(out, "| Figure | value | budget |");
    let _ = writeln!(out, "|---|---:|---|");
    let _ = writeln!(
        out,
        "| burst: jobs failed, notifications delivered twice | {}, {} | 0 twice |",
        f.burst_jobs, f.burst_duplicates
    );
    let _ = writeln!(
        out,
        "| burst: job end → delivered, p50 (ms) | {} | |",
        fmt_ms(p50)
    );
    let _ = writeln!(
        out,
        "| burst: job end → delivered, p99 (ms) | {} | ≤ {BUDGET_P99_MS}{} |",
        fmt_ms(p99),
        if met { "" } else { " **missed**" }
    );
    let _ = writeln!(
        out,
        "| receiver down {:.0} s: jobs failed meanwhile, delivered twice | {}, {} | 0 twice |",
        f.outage_s, f.outage_jobs, f.outage_duplicates
    );
    let _ = writeln!(
        out,
        "| receiver back → the last of them delivered (ms) | {:.0} | retries back off 10 s, 20 s, 40 s… |",
        f.outage_catch_up_ms
    );
    let _ = writeln!(
        out,
        "| short job, submission → end, median without a rule / with one telling of it (ms) | {} / {} ({ratio}×) | within noise |",
        fmt_ms(without),
        fmt_ms(with)
    );
    let figures = json!({
        "store": store,
        "figures": f,
        "p50_ms": p50,
        "p99_ms": p99,
        "budget_p99_ms": BUDGET_P99_MS,
    });
    let bar = |label: &str, value: Option<f64>, reference: bool| Bar {
        label: label.into(),
        value: value.unwrap_or(f64::NAN),
        reference,
    };
    let chart = Chart::Bars {
        title: format!("notify: a job's end → its notification delivered ({store})"),
        unit: "milliseconds (grey: budget)".into(),
        bars: vec![
            bar("p50", p50, false),
            bar("p99", p99, false),
            bar("budget: p99", Some(BUDGET_P99_MS), true),
        ],
    };
    let mut report = Report::new(out, figures).chart("", chart);
    report.failed = f.burst_duplicates > 0 || f.outage_duplicates > 0;
    report
}
