//! `joblog bench`: the benchmark scenarios of SPEC §9, printing Markdown tables.

mod ingest;

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use serde::Deserialize;
use serde_json::json;
use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::client::{Api, ApiError, Global, JobView};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// PowerShell Universal's job-log test: batches of concurrent jobs
    /// writing 1000 lines each; execution and retrieval as the log grows.
    Psu,
    /// Records per second through the pipeline into the store, beside the
    /// raw write limit of the same database (plain INSERT / COPY).
    Ingest,
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
    /// Jobs per batch, run concurrently.
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
    /// ingest: runs; the table shows medians.
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Give up when a job has not finished after this long.
    #[arg(long, value_name = "DUR", default_value = "120s", value_parser = joblog_core::parse_positive_duration)]
    pub job_timeout: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoints(pub Vec<u64>);

/// `500K`, `0.5M`, `2.5m`, `20000`: a message count.
fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
        Some('m' | 'M') => (&t[..t.len() - 1], 1e6),
        _ => (t, 1.0),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a count (examples: 20K, 0.5M, 1000000)"))?;
    let v = (n * mult).round();
    if !(1.0..=1e12).contains(&v) {
        return Err(format!("{s:?}: must be between 1 and 1e12"));
    }
    Ok(v as u64)
}

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

/// `500000` → `0.5M`, `20000` → `20K`, `1234` → `1234`.
fn format_count(n: u64) -> String {
    if n >= 100_000 && n / 100_000 * 100_000 == n {
        let m = n as f64 / 1e6;
        let s = format!("{m:.1}");
        return format!("{}M", s.trim_end_matches(".0"));
    }
    if n >= 1000 && n / 1000 * 1000 == n {
        return format!("{}K", n / 1000);
    }
    n.to_string()
}

/// Linear interpolation between closest ranks (the median of an even
/// count is the mean of the middle two). `None` for no data.
fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = (p / 100.0).clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    Some(v[lo] + (v[hi] - v[lo]) * frac)
}

fn median(values: &[f64]) -> Option<f64> {
    percentile(values, 50.0)
}

/// The published PowerShell Universal figures on SQLite (exec / retrieval, ms).
fn psu_sqlite_reference(messages: u64) -> Option<(u32, u32)> {
    match messages {
        500_000 => Some((600, 10)),
        1_000_000 => Some((900, 17)),
        1_500_000 => Some((900, 19)),
        2_000_000 => Some((900, 19)),
        2_500_000 => Some((900, 16)),
        _ => None,
    }
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

fn fmt_ms(v: Option<f64>) -> String {
    match v {
        Some(x) if x >= 100.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.1}"),
        None => "–".to_string(),
    }
}

pub async fn run(args: BenchArgs, global: Global) -> anyhow::Result<i32> {
    match args.scenario {
        Scenario::Psu => run_psu(args, global).await,
        Scenario::Ingest => ingest::run(args).await,
    }
}

// ---------------------------------------------------------------------------
// The server under test

struct SpawnedServer {
    child: tokio::process::Child,
    url: String,
    root: PathBuf,
    log_path: PathBuf,
    keep: bool,
}

fn free_port() -> anyhow::Result<u16> {
    // The port is free when we drop the listener; the tiny race with another
    // process grabbing it is acceptable for a benchmark.
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    Ok(l.local_addr()?.port())
}

fn tail_of(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

async fn start_server(
    args: &BenchArgs,
    token: Option<&str>,
    sigint: &mut Signal,
) -> anyhow::Result<SpawnedServer> {
    let exe = std::env::current_exe().context("cannot find the joblog executable")?;
    let stamp = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0);
    let root = std::env::temp_dir().join(format!("joblog-bench-{}-{stamp}", std::process::id()));
    std::fs::create_dir(&root).with_context(|| format!("cannot create {}", root.display()))?;
    let data = root.join("data");
    std::fs::create_dir(&data).with_context(|| format!("cannot create {}", data.display()))?;
    let log_path = root.join("server.log");
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("cannot create {}", log_path.display()))?;
    let log2 = log.try_clone()?;
    let port = free_port()?;
    let listen = format!("127.0.0.1:{port}");
    let mut cmd = tokio::process::Command::new(&exe);
    cmd.arg("serve")
        .arg("--listen")
        .arg(&listen)
        .arg("--data-dir")
        .arg(&data);
    if let Some(db) = &args.database {
        cmd.arg("--database").arg(db);
    }
    // A joblog.toml in the caller's directory must not change the server
    // under test.
    // Its own process group: Ctrl-C in the terminal reaches only the bench,
    // which still needs the server to take its final measurement.
    cmd.process_group(0);
    cmd.current_dir(&root)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .kill_on_drop(true);
    let child = cmd
        .spawn()
        .with_context(|| format!("cannot start {} serve", exe.display()))?;
    let mut server = SpawnedServer {
        child,
        url: format!("http://{listen}"),
        root,
        log_path,
        keep: args.keep,
    };
    let ready = tokio::select! {
        r = wait_healthy(&mut server, token) => r,
        _ = sigint.recv() => Err(anyhow::anyhow!("interrupted (Ctrl-C)")),
    };
    if let Err(e) = ready {
        let tail = tail_of(&server.log_path, 20);
        server.stop().await;
        if tail.trim().is_empty() {
            return Err(e);
        }
        bail!("{e:#}\nserver output (last lines):\n{tail}");
    }
    Ok(server)
}

async fn wait_healthy(server: &mut SpawnedServer, token: Option<&str>) -> anyhow::Result<()> {
    let api = Api::new(&server.url, token)?;
    let url = api.url("/healthz", &[])?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = server.child.try_wait()? {
            bail!("the server exited at start ({status})");
        }
        if api
            .get_raw(url.clone(), Duration::from_secs(2))
            .await
            .is_ok()
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the server did not become healthy within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

impl SpawnedServer {
    /// Graceful stop (SIGTERM, as an operator would), then SIGKILL if it
    /// hangs; removes the temporary directory unless asked to keep it.
    async fn stop(mut self) {
        if let Some(pid) = self.child.id() {
            let _ = tokio::process::Command::new("kill")
                .arg("-TERM")
                .arg(pid.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .await;
        }
        match tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await {
            Ok(_) => {}
            Err(_) => {
                eprintln!("bench: server did not stop within 30 s of SIGTERM; killing it");
                let _ = self.child.kill().await;
            }
        }
        if self.keep {
            eprintln!("bench: kept {}", self.root.display());
        } else if let Err(e) = std::fs::remove_dir_all(&self.root) {
            eprintln!("bench: cannot remove {}: {e}", self.root.display());
        }
    }

    /// Resident and peak memory of the server process (Linux), in MiB.
    fn memory_mib(&self) -> Option<(f64, f64)> {
        let pid = self.child.id()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let field = |name: &str| -> Option<f64> {
            let line = status.lines().find(|l| l.starts_with(name))?;
            let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb / 1024.0)
        };
        Some((field("VmRSS:")?, field("VmHWM:")?))
    }
}

// ---------------------------------------------------------------------------
// psu

#[derive(Debug, Deserialize)]
struct WaitPage {
    #[serde(default)]
    next_after_seq: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct FullPage {
    records: Vec<FullRecord>,
    #[serde(default)]
    next_after_seq: Option<u64>,
}

/// Every field is decoded, so retrieval is timed as a real viewer pays it.
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct FullRecord {
    seq: u64,
    ts: String,
    stream: String,
    message: String,
    #[serde(default)]
    fields: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A seq no job reaches: asking for records after it makes the server hold
/// the request until the job ends, so waiting costs one idle request per
/// job instead of polling (which would load the server being measured).
const FAR_SEQ: u64 = (1 << 53) - 1;

async fn wait_finished(api: &Api, id: i64, timeout: Duration) -> anyhow::Result<JobView> {
    let deadline = Instant::now() + timeout;
    let mut long_poll = true;
    loop {
        if Instant::now() > deadline {
            bail!(
                "job {id} did not finish within {}",
                humantime::format_duration(timeout)
            );
        }
        if long_poll {
            let asked = Instant::now();
            match api
                .log_page_lite(id, FAR_SEQ, Duration::from_secs(10))
                .await
            {
                Ok(p) if p.next_after_seq.is_none() => break,
                Ok(_) => {
                    // Without a real long poll, do not spin on the server.
                    if asked.elapsed() < Duration::from_millis(5) {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
                Err(e)
                    if e.downcast_ref::<ApiError>()
                        .is_some_and(|a| a.status == 400) =>
                {
                    long_poll = false;
                }
                Err(e) => return Err(e),
            }
        } else {
            let j = api.job(id).await?;
            if j.is_finished() {
                return Ok(j);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    api.job(id).await
}

impl Api {
    async fn log_page_lite(&self, id: i64, after: u64, wait: Duration) -> anyhow::Result<WaitPage> {
        let url = self.url(
            &format!("/api/v1/jobs/{id}/log"),
            &[
                ("after_seq", after.to_string()),
                ("limit", "1".to_string()),
                ("wait_ms", wait.as_millis().to_string()),
            ],
        )?;
        let body = self.get_raw(url, wait + Duration::from_secs(60)).await?;
        serde_json::from_slice(&body).context("unexpected log page")
    }

    /// Fetches a job's whole log as a viewer would; returns the record count.
    async fn fetch_whole_log(&self, id: i64) -> anyhow::Result<usize> {
        let mut after = 0u64;
        let mut n = 0usize;
        loop {
            let url = self.url(
                &format!("/api/v1/jobs/{id}/log"),
                &[
                    ("after_seq", after.to_string()),
                    ("limit", "10000".to_string()),
                ],
            )?;
            let body = self.get_raw(url, Duration::from_secs(60)).await?;
            let page: FullPage = serde_json::from_slice(&body).context("unexpected log page")?;
            n += page.records.len();
            match (page.next_after_seq, page.records.last()) {
                (Some(next), Some(_)) => after = next,
                _ => return Ok(n),
            }
        }
    }
}

async fn submit(api: &Api, script: &str) -> anyhow::Result<i64> {
    let job: JobView = api
        .post_json(
            api.url("/api/v1/jobs", &[])?,
            &json!({"name": "bench-psu", "script": script, "shell": "sh"}),
        )
        .await?;
    Ok(job.id)
}

async fn run_job(api: &Api, script: &str, timeout: Duration) -> anyhow::Result<JobView> {
    let id = submit(api, script).await?;
    wait_finished(api, id, timeout).await
}

struct Row {
    checkpoint: u64,
    messages: u64,
    jobs: u64,
    exec_median: Option<f64>,
    exec_p90: Option<f64>,
    retr_median: Option<f64>,
    retr_p90: Option<f64>,
    batch_median: Option<f64>,
    failed: u64,
    memory: Option<(f64, f64)>,
    elapsed: Duration,
}

struct Psu<'a> {
    api: &'a Api,
    args: &'a BenchArgs,
    server: Option<&'a SpawnedServer>,
    script: String,
    started: Instant,
    jobs: u64,
    failed: u64,
    /// duration_ms of the jobs of the last `window_batches` batches.
    durations: VecDeque<f64>,
    /// Wall time of the last `window_batches` batches, ms.
    batch_walls: VecDeque<f64>,
    /// Recent finished, succeeded jobs: the retrieval sample.
    recent: VecDeque<i64>,
    rows: Vec<Row>,
}

impl Psu<'_> {
    async fn batch(&mut self) -> anyhow::Result<()> {
        let t = Instant::now();
        let futs = (0..self.args.batch_jobs)
            .map(|_| run_job(self.api, &self.script, self.args.job_timeout));
        let results = futures_util::future::join_all(futs).await;
        let wall = t.elapsed().as_secs_f64() * 1000.0;
        let window = self.args.window_batches as usize;
        push_bounded(&mut self.batch_walls, wall, window);
        let first_batch = self.jobs == 0;
        let mut first_failure: Option<String> = None;
        for r in results {
            let job = r?;
            self.jobs += 1;
            let ok = job.state == "succeeded" && job.log.records >= u64::from(self.args.lines);
            if !ok {
                self.failed += 1;
                if first_failure.is_none() {
                    first_failure = Some(format!(
                        "job {} ended {} (exit code {}) with {} records{}",
                        job.id,
                        job.state,
                        job.exit_code.map_or("-".to_string(), |c| c.to_string()),
                        job.log.records,
                        self.first_error_line(job.id).await
                    ));
                }
                continue;
            }
            if let Some(d) = job.duration_ms {
                push_bounded(
                    &mut self.durations,
                    d,
                    window * self.args.batch_jobs as usize,
                );
            }
            push_bounded(&mut self.recent, job.id, self.args.retrievals as usize + 1);
        }
        if let Some(f) = first_failure {
            if first_batch {
                bail!("the first batch failed: {f}");
            }
            eprintln!("bench: {f}");
        }
        Ok(())
    }

    async fn first_error_line(&self, id: i64) -> String {
        let Ok(page) = self.api.log_page(id, 0, 1, Some("error"), None).await else {
            return String::new();
        };
        match page.records.first() {
            Some(r) => format!(
                "; first error: {}",
                crate::client::escape_display(&r.message, false)
            ),
            None => String::new(),
        }
    }

    async fn measure(&mut self, checkpoint: u64) -> anyhow::Result<()> {
        let durations: Vec<f64> = self.durations.iter().copied().collect();
        let walls: Vec<f64> = self.batch_walls.iter().copied().collect();
        // Newest first; one warm-up request so the timed ones reuse a
        // connection, as a browser viewing job after job would.
        let ids: Vec<i64> = self.recent.iter().rev().copied().collect();
        let mut times = Vec::new();
        if let Some((&warm, rest)) = ids.split_first() {
            self.api.fetch_whole_log(warm).await?;
            let sample: Vec<i64> = if rest.is_empty() {
                vec![warm]
            } else {
                rest.to_vec()
            };
            for id in sample {
                let t = Instant::now();
                let n = self.api.fetch_whole_log(id).await?;
                times.push(t.elapsed().as_secs_f64() * 1000.0);
                if n < self.args.lines as usize {
                    eprintln!(
                        "bench: job {id}: retrieved {n} records, expected {}",
                        self.args.lines
                    );
                }
            }
        }
        let row = Row {
            checkpoint,
            messages: self.jobs * u64::from(self.args.lines),
            jobs: self.jobs,
            exec_median: median(&durations),
            exec_p90: percentile(&durations, 90.0),
            retr_median: median(&times),
            retr_p90: percentile(&times, 90.0),
            batch_median: median(&walls),
            failed: self.failed,
            memory: self.server.and_then(SpawnedServer::memory_mib),
            elapsed: self.started.elapsed(),
        };
        eprintln!(
            "bench: checkpoint {}: {} jobs, execution median {} ms (p90 {}), retrieval median {} ms (p90 {})",
            format_count(checkpoint),
            row.jobs,
            fmt_ms(row.exec_median),
            fmt_ms(row.exec_p90),
            fmt_ms(row.retr_median),
            fmt_ms(row.retr_p90),
        );
        self.rows.push(row);
        Ok(())
    }

    /// Runs batches until every checkpoint is measured. Returns why it
    /// stopped early, if it did.
    async fn run(&mut self) -> anyhow::Result<Option<String>> {
        let checkpoints = self.args.checkpoints.0.clone();
        let mut next = 0usize;
        let mut last_progress = Instant::now();
        while next < checkpoints.len() {
            if self.started.elapsed() > self.args.time_limit {
                return Ok(Some(format!(
                    "time limit of {} reached",
                    humantime::format_duration(self.args.time_limit)
                )));
            }
            self.batch().await?;
            let messages = self.jobs * u64::from(self.args.lines);
            while next < checkpoints.len() && messages >= checkpoints[next] {
                self.measure(checkpoints[next]).await?;
                next += 1;
            }
            if last_progress.elapsed() > Duration::from_secs(5) {
                last_progress = Instant::now();
                let target = checkpoints.last().copied().unwrap_or(0);
                eprintln!(
                    "bench: {} / {} messages, {} jobs, last batch {} ms, {:.0} s",
                    messages,
                    target,
                    self.jobs,
                    fmt_ms(self.batch_walls.back().copied()),
                    self.started.elapsed().as_secs_f64(),
                );
            }
        }
        Ok(None)
    }
}

fn push_bounded<T>(q: &mut VecDeque<T>, v: T, cap: usize) {
    q.push_back(v);
    while q.len() > cap.max(1) {
        q.pop_front();
    }
}

async fn run_psu(args: BenchArgs, global: Global) -> anyhow::Result<i32> {
    let wall = Instant::now();
    // Registered before the server starts, so Ctrl-C at any point stops the
    // bench through the path that also stops its server (which runs in its
    // own process group and would otherwise be left behind).
    let mut sigint = signal(SignalKind::interrupt()).context("cannot listen for Ctrl-C")?;
    let date = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let server = if args.external {
        None
    } else {
        eprintln!("bench: starting a joblog server");
        Some(start_server(&args, global.token.as_deref(), &mut sigint).await?)
    };
    let url = server
        .as_ref()
        .map(|s| s.url.clone())
        .unwrap_or_else(|| global.server.clone());
    let outcome = match Api::new(&url, global.token.as_deref()) {
        Ok(api) => {
            let script = format!(
                "i=0; while [ $i -lt {n} ]; do i=$((i+1)); echo \"message $i of job $JOBLOG_JOB_ID\"; done",
                n = args.lines
            );
            let mut psu = Psu {
                api: &api,
                args: &args,
                server: server.as_ref(),
                script,
                started: Instant::now(),
                jobs: 0,
                failed: 0,
                durations: VecDeque::new(),
                batch_walls: VecDeque::new(),
                recent: VecDeque::new(),
                rows: Vec::new(),
            };
            let stop = tokio::select! {
                r = psu.run() => r,
                _ = sigint.recv() => Ok(Some("interrupted (Ctrl-C)".to_string())),
            };
            // Stopped early: the jobs run since the last checkpoint still
            // make a row. A second Ctrl-C skips it.
            let measured = psu.rows.last().map_or(0, |r| r.jobs);
            if matches!(stop, Ok(Some(_))) && psu.jobs > measured {
                let messages = psu.jobs * u64::from(args.lines);
                eprintln!("bench: measuring at {messages} messages before stopping");
                tokio::select! {
                    r = psu.measure(messages) => {
                        if let Err(e) = r {
                            eprintln!("bench: final measurement failed: {e:#}");
                        }
                    }
                    _ = sigint.recv() => {}
                }
            }
            Ok((stop, std::mem::take(&mut psu.rows)))
        }
        Err(e) => Err(e),
    };
    let database = match (&server, &args.database) {
        (Some(_), Some(db)) => crate::client::redact_url(db),
        (Some(_), None) => "SQLite in a temporary data directory".to_string(),
        (None, _) => format!("external server at {}", crate::client::redact_url(&url)),
    };
    if let Some(s) = server {
        s.stop().await;
    }
    let (stop, rows) = outcome?;
    let stop = match stop {
        // Nothing measured: the error alone says it better than an empty table.
        Err(e) if rows.is_empty() => return Err(e),
        other => other,
    };
    let (note, code) = match stop {
        Ok(None) => (None, 0),
        Ok(Some(why)) => (Some(format!("stopped early: {why}")), 0),
        Err(e) => (Some(format!("stopped by an error: {e:#}")), 1),
    };
    if let Some(n) = &note {
        eprintln!("bench: {n}");
    }
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let report = psu_report(&PsuReport {
        date: &date,
        command: &redact_args(&argv).join(" "),
        database: &database,
        args: &args,
        rows: &rows,
        total: wall.elapsed(),
        note: note.as_deref(),
    });
    print!("{report}");
    Ok(code)
}

struct PsuReport<'a> {
    date: &'a str,
    command: &'a str,
    database: &'a str,
    args: &'a BenchArgs,
    rows: &'a [Row],
    total: Duration,
    note: Option<&'a str>,
}

fn psu_report(r: &PsuReport<'_>) -> String {
    let a = r.args;
    let mut s = String::new();
    let _ = writeln!(s, "## joblog bench psu\n");
    let _ = writeln!(s, "- Date: {}", r.date);
    let _ = writeln!(s, "- Command: `{}`", r.command);
    let _ = writeln!(s, "- Store: {}", r.database);
    let _ = writeln!(
        s,
        "- Load: batches of {} concurrent `sh` jobs writing {} lines each, next batch as soon as the last one finished",
        a.batch_jobs, a.lines
    );
    let _ = writeln!(
        s,
        "- Execution: server's `duration_ms` of the jobs of the last {} batches; retrieval: wall time of \
         `GET /api/v1/jobs/{{id}}/log?limit=10000` (body read and parsed) for {} recent finished jobs, \
         one at a time on a warm connection, between batches",
        a.window_batches, a.retrievals
    );
    let _ = writeln!(s, "- Budget: execution ≤ 50 ms, retrieval ≤ 5 ms");
    let _ = writeln!(s, "- Total wall time: {:.1} s", r.total.as_secs_f64());
    if let Some(n) = r.note {
        let _ = writeln!(s, "- Note: {n}");
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "| Messages | Jobs | Execution median (ms) | Retrieval median (ms) | PSU SQLite reference exec / retrieval |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|");
    for row in r.rows {
        let reference = psu_sqlite_reference(row.checkpoint)
            .map(|(e, t)| format!("{e} ms / {t} ms"))
            .unwrap_or_else(|| "–".to_string());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            format_count(row.checkpoint),
            row.jobs,
            fmt_ms(row.exec_median),
            fmt_ms(row.retr_median),
            reference
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "| Messages | Messages written | Execution p90 (ms) | Retrieval p90 (ms) | Batch wall median (ms) | Failed jobs | Server RSS / peak (MiB) | Elapsed (s) |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in r.rows {
        let mem = row
            .memory
            .map(|(rss, peak)| format!("{rss:.0} / {peak:.0}"))
            .unwrap_or_else(|| "–".to_string());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {:.0} |",
            format_count(row.checkpoint),
            row.messages,
            fmt_ms(row.exec_p90),
            fmt_ms(row.retr_p90),
            fmt_ms(row.batch_median),
            row.failed,
            mem,
            row.elapsed.as_secs_f64()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_checkpoints() {
        assert_eq!(parse_count("0.5M").unwrap(), 500_000);
        assert_eq!(parse_count("20K").unwrap(), 20_000);
        assert_eq!(parse_count("2.5m").unwrap(), 2_500_000);
        assert_eq!(parse_count("1500").unwrap(), 1500);
        assert!(parse_count("0").is_err());
        assert!(parse_count("-1K").is_err());
        assert!(parse_count("M").is_err());
        assert!(parse_count("lots").unwrap_err().contains("lots"));
        assert!(parse_count("1e30").is_err());
        assert_eq!(
            parse_checkpoints("1M, 0.5M,1M,,40K").unwrap(),
            Checkpoints(vec![40_000, 500_000, 1_000_000])
        );
        assert!(parse_checkpoints(" , ").is_err());
    }

    #[test]
    fn count_labels() {
        assert_eq!(format_count(500_000), "0.5M");
        assert_eq!(format_count(1_000_000), "1M");
        assert_eq!(format_count(2_500_000), "2.5M");
        assert_eq!(format_count(20_000), "20K");
        assert_eq!(format_count(1234), "1234");
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN, 2.0]), Some(2.0));
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert!((percentile(&v, 90.0).unwrap() - 9.1).abs() < 1e-9);
        assert_eq!(percentile(&v, 100.0), Some(10.0));
    }

    #[test]
    fn references_and_redaction() {
        assert_eq!(psu_sqlite_reference(500_000), Some((600, 10)));
        assert_eq!(psu_sqlite_reference(20_000), None);
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

    #[test]
    fn bounded_queue() {
        let mut q = VecDeque::new();
        for i in 0..5 {
            push_bounded(&mut q, i, 3);
        }
        assert_eq!(q, [2, 3, 4]);
    }
}
