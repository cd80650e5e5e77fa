//! `joblog bench psu`: PowerShell Universal's job-log test. Batches of
//! concurrent `sh` jobs run back to back; at each checkpoint the recent
//! jobs' execution times and whole-log retrieval times are measured.

mod designs;
mod floor;
pub(super) mod load;
mod report;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::Deserialize;
use serde_json::json;
use tokio::signal::unix::{signal, SignalKind};

use super::output::Report;
use super::server::{start_server, SpawnedServer};
use super::stats::{
    database_bytes, fmt_ms, format_count, live_bytes, median, percentile, segment_bytes, TextSize,
};
use super::BenchArgs;
use designs::Baselines;
use joblog_client::progress::Progress;
use joblog_client::{Api, ApiError, Global, JobView};
// The line `line` of job `id` prints (the psu script's `echo`).
use crate::baseline::designs::message;
use report::{psu_report, Bytes, PsuReport, Row};

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
            match log_page_lite(api, id, FAR_SEQ, Duration::from_secs(10)).await {
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

async fn log_page_lite(api: &Api, id: i64, after: u64, wait: Duration) -> anyhow::Result<WaitPage> {
    let url = api.url(
        &format!("/api/v1/jobs/{id}/log"),
        &[
            ("after_seq", after.to_string()),
            ("limit", "1".to_string()),
            ("wait_ms", wait.as_millis().to_string()),
        ],
    )?;
    let body = api.get_raw(url, wait + Duration::from_secs(60)).await?;
    serde_json::from_slice(&body).context("unexpected log page")
}

/// Fetches a job's whole log as a viewer would; returns the record count.
async fn fetch_whole_log(api: &Api, id: i64) -> anyhow::Result<usize> {
    let mut after = 0u64;
    let mut n = 0usize;
    loop {
        let url = api.url(
            &format!("/api/v1/jobs/{id}/log"),
            &[
                ("after_seq", after.to_string()),
                ("limit", "10000".to_string()),
            ],
        )?;
        let body = api.get_raw(url, Duration::from_secs(60)).await?;
        let page: FullPage = serde_json::from_slice(&body).context("unexpected log page")?;
        n += page.records.len();
        match (page.next_after_seq, page.records.last()) {
            (Some(next), Some(_)) => after = next,
            _ => return Ok(n),
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

/// Submits `script` (`sh`) and waits for its job to finish.
pub(crate) async fn run_job(api: &Api, script: &str, timeout: Duration) -> anyhow::Result<JobView> {
    let id = submit(api, script).await?;
    wait_finished(api, id, timeout).await
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
    /// Drawn while `bench psu` runs (not when the load serves another
    /// scenario).
    progress: Option<Progress>,
    /// The storage figure, on a server of the bench's own.
    storage: Option<Storage>,
    /// The designs of the past, measured at each checkpoint.
    baselines: Option<Baselines>,
}

/// Where joblog's database is, its size before the first job, and the
/// jobs' logs as text.
struct Storage {
    url: String,
    base: u64,
    /// What the data took before the first job, free space not counted.
    live_base: u64,
    text: TextSize,
}

impl Storage {
    async fn new(url: &str) -> anyhow::Result<Storage> {
        Ok(Storage {
            url: url.to_string(),
            base: database_bytes(url).await?,
            live_base: live_bytes(url).await?,
            text: TextSize::default(),
        })
    }

    /// Counts a job's log as the text it printed.
    fn add_job(&mut self, id: i64, lines: u32) -> anyhow::Result<()> {
        let text: String = (1..=lines).map(|l| message(id, l) + "\n").collect();
        self.text.add_job(&text)
    }

    /// Bytes per record: the database's growth, its data's, the text's,
    /// its zstd's.
    async fn per_record(&self, records: u64) -> anyhow::Result<Bytes> {
        let now = database_bytes(&self.url).await?;
        let live = live_bytes(&self.url).await?;
        let segments = segment_bytes(&self.url).await?;
        let n = records.max(1) as f64;
        Ok(Bytes {
            file: now.saturating_sub(self.base) as f64 / n,
            data: live.saturating_sub(self.live_base) as f64 / n,
            segments: segments as f64 / n,
            raw: self.text.raw as f64 / n,
            zstd: self.text.zstd as f64 / n,
        })
    }
}

impl<'a> Psu<'a> {
    /// A load of batches against `api`, nothing run yet.
    fn new(api: &'a Api, args: &'a BenchArgs, server: Option<&'a SpawnedServer>) -> Psu<'a> {
        Psu {
            api,
            args,
            server,
            script: script(args.lines),
            started: Instant::now(),
            jobs: 0,
            failed: 0,
            durations: VecDeque::new(),
            batch_walls: VecDeque::new(),
            recent: VecDeque::new(),
            rows: Vec::new(),
            progress: None,
            storage: None,
            baselines: None,
        }
    }

    /// A line that stays, above the progress bar if there is one.
    fn keep(&self, line: String) {
        match &self.progress {
            Some(p) => p.keep(line),
            None => eprintln!("{line}"),
        }
    }

    /// A passing progress line: beside the bar if there is one.
    fn note(&self, line: String) {
        match &self.progress {
            Some(p) => p.note(line),
            None => eprintln!("{line}"),
        }
    }

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
            if let Some(s) = &mut self.storage {
                s.add_job(job.id, self.args.lines)?;
            }
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
            self.keep(format!("bench: {f}"));
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
                joblog_core::escape_display(&r.message, false)
            ),
            None => String::new(),
        }
    }

    async fn measure(&mut self, checkpoint: u64) -> anyhow::Result<()> {
        let durations: Vec<f64> = self.durations.iter().copied().collect();
        let walls: Vec<f64> = self.batch_walls.iter().copied().collect();
        // Newest first; one warm-up request so the timed ones reuse a
        // connection, as a browser viewing job after job would.
        // Sealed logs are what is measured: the sealer catches up first.
        let seal_wait = match (&self.storage, self.args.seal) {
            (Some(_), true) => {
                Some(joblog_client::seal::wait_sealed(self.api, Duration::from_secs(600)).await?)
            }
            _ => None,
        };
        let ids: Vec<i64> = self.recent.iter().rev().copied().collect();
        let mut times = Vec::new();
        if let Some((&warm, rest)) = ids.split_first() {
            fetch_whole_log(self.api, warm).await?;
            let sample: Vec<i64> = if rest.is_empty() {
                vec![warm]
            } else {
                rest.to_vec()
            };
            for id in sample {
                let t = Instant::now();
                let n = fetch_whole_log(self.api, id).await?;
                times.push(t.elapsed().as_secs_f64() * 1000.0);
                if n < self.args.lines as usize {
                    eprintln!(
                        "bench: job {id}: retrieved {n} records, expected {}",
                        self.args.lines
                    );
                }
            }
        }
        // The same scripts run bare by the bench, between the same
        // batches: what joblog adds to a job is the difference.
        let floor =
            floor::run(&self.script, self.args.batch_jobs, self.args.window_batches).await?;
        let messages = self.jobs * u64::from(self.args.lines);
        let storage = match &self.storage {
            Some(s) => Some(s.per_record(messages).await?),
            None => None,
        };
        if self.baselines.is_some() {
            self.note("bench: measuring the designs of the past at this size".to_string());
        }
        let designs = match &mut self.baselines {
            Some(b) => b.measure(self.args, messages).await?,
            None => Vec::new(),
        };
        let row = Row {
            checkpoint,
            messages,
            storage,
            seal_wait,
            designs,
            jobs: self.jobs,
            exec_median: median(&durations),
            exec_p90: percentile(&durations, 90.0),
            floor_median: median(&floor),
            floor_p90: percentile(&floor, 90.0),
            retr_median: median(&times),
            retr_p90: percentile(&times, 90.0),
            batch_median: median(&walls),
            failed: self.failed,
            memory: self.server.and_then(SpawnedServer::memory_mib),
            elapsed: self.started.elapsed(),
        };
        self.keep(format!(
            "bench: checkpoint {}: {} jobs, execution median {} ms (p90 {}; the scripts run bare {} ms), retrieval median {} ms (p90 {})",
            format_count(checkpoint),
            row.jobs,
            fmt_ms(row.exec_median),
            fmt_ms(row.exec_p90),
            fmt_ms(row.floor_median),
            fmt_ms(row.retr_median),
            fmt_ms(row.retr_p90),
        ));
        self.rows.push(row);
        Ok(())
    }

    /// Runs batches until every checkpoint is measured. Returns why it
    /// stopped early, if it did.
    async fn run(&mut self) -> anyhow::Result<Option<String>> {
        let checkpoints = self.args.checkpoints.0.clone();
        let target = checkpoints.last().copied().unwrap_or(0);
        self.progress = Some(Progress::new(target, "messages"));
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
            if let Some(p) = &self.progress {
                p.set(messages);
            }
            while next < checkpoints.len() && messages >= checkpoints[next] {
                self.measure(checkpoints[next]).await?;
                next += 1;
            }
            if last_progress.elapsed() > Duration::from_secs(5) {
                last_progress = Instant::now();
                self.note(format!(
                    "bench: {} / {} messages, {} jobs, last batch {} ms, {:.0} s",
                    messages,
                    target,
                    self.jobs,
                    fmt_ms(self.batch_walls.back().copied()),
                    self.started.elapsed().as_secs_f64(),
                ));
            }
        }
        Ok(None)
    }
}

impl Psu<'_> {
    /// The storage figure's starting size (on a server of the bench's
    /// own) and the designs of the past (unless `--baseline-batches 0`).
    async fn set_up(&mut self, server: Option<&SpawnedServer>) -> anyhow::Result<()> {
        if let Some(s) = server {
            self.storage = Some(Storage::new(&s.database).await?);
        }
        if self.args.baseline_batches > 0 {
            self.baselines = Some(Baselines::open(self.args).await?);
        }
        Ok(())
    }

    /// Runs to the last checkpoint or Ctrl-C; why it stopped early, if it
    /// did.
    async fn run_to_end(
        &mut self,
        sigint: &mut tokio::signal::unix::Signal,
    ) -> anyhow::Result<Option<String>> {
        let stop = tokio::select! {
            r = self.run() => r,
            _ = sigint.recv() => Ok(Some("interrupted (Ctrl-C)".to_string())),
        };
        // Stopped early: the jobs run since the last checkpoint still
        // make a row. A second Ctrl-C skips it.
        let measured = self.rows.last().map_or(0, |r| r.jobs);
        if matches!(stop, Ok(Some(_))) && self.jobs > measured {
            let messages = self.jobs * u64::from(self.args.lines);
            eprintln!("bench: measuring at {messages} messages before stopping");
            tokio::select! {
                r = self.measure(messages) => {
                    if let Err(e) = r {
                        eprintln!("bench: final measurement failed: {e:#}");
                    }
                }
                _ = sigint.recv() => {}
            }
        }
        stop
    }
}

/// The job of the psu test: `lines` short lines from one `sh` loop.
fn script(lines: u32) -> String {
    format!(
        "i=0; while [ $i -lt {lines} ]; do i=$((i+1)); echo \"message $i of job $JOBLOG_JOB_ID\"; done"
    )
}

fn push_bounded<T>(q: &mut VecDeque<T>, v: T, cap: usize) {
    q.push_back(v);
    while q.len() > cap.max(1) {
        q.pop_front();
    }
}

pub(super) async fn run(args: BenchArgs, global: Global) -> anyhow::Result<Report> {
    let wall = Instant::now();
    // Registered before the server starts, so Ctrl-C at any point stops the
    // bench through the path that also stops its server (which runs in its
    // own process group and would otherwise be left behind).
    let mut sigint = signal(SignalKind::interrupt()).context("cannot listen for Ctrl-C")?;
    let date = super::now_rfc3339();
    let token = global.token()?;
    let server = if args.external {
        None
    } else {
        eprintln!("bench: starting a joblog server");
        Some(
            start_server(
                &args,
                args.database.as_deref(),
                &["--log-seal".to_string(), args.seal.to_string()],
                &[],
                token.as_deref(),
                &mut sigint,
            )
            .await?,
        )
    };
    let url = server
        .as_ref()
        .map(|s| s.url.clone())
        .unwrap_or_else(|| global.server.clone());
    let outcome = match Api::with_ca(&url, token.as_deref(), global.cacert.as_deref()) {
        Ok(api) => {
            let mut psu = Psu::new(&api, &args, server.as_ref());
            let outcome = match psu.set_up(server.as_ref()).await {
                Ok(()) => Ok(psu.run_to_end(&mut sigint).await),
                Err(e) => Err(e),
            };
            if let Some(b) = psu.baselines.take() {
                b.close().await;
            }
            outcome.map(|stop| (stop, std::mem::take(&mut psu.rows)))
        }
        Err(e) => Err(e),
    };
    let database = match (&server, &args.database) {
        (Some(_), Some(db)) => joblog_client::redact_url(db),
        (Some(_), None) => "SQLite in a temporary data directory".to_string(),
        (None, _) => format!("external server at {}", joblog_client::redact_url(&url)),
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
    let (note, failed) = match stop {
        Ok(None) => (None, false),
        Ok(Some(why)) => (Some(format!("stopped early: {why}")), false),
        Err(e) => (Some(format!("stopped by an error: {e:#}")), true),
    };
    if let Some(n) = &note {
        eprintln!("bench: {n}");
    }
    let command = super::command_line();
    let psu = PsuReport {
        date: &date,
        command: &command,
        database: &database,
        args: &args,
        rows: &rows,
        total: wall.elapsed(),
        note: note.as_deref(),
    };
    let mut out = Report::new(psu_report(&psu), report::figures(&psu));
    for (suffix, chart) in report::charts(&psu) {
        out = out.chart(suffix, chart);
    }
    out.failed = failed;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_queue() {
        let mut q = VecDeque::new();
        for i in 0..5 {
            push_bounded(&mut q, i, 3);
        }
        assert_eq!(q, [2, 3, 4]);
    }
}
