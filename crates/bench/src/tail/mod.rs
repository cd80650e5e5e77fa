//! `joblog bench tail`: how long a line takes from the job that wrote it
//! to the live-tail viewers of that job (`GET /api/v1/jobs/{id}/log/events`),
//! with the psu load running on the same server. Each measurement gets a
//! fresh server (and on PostgreSQL a fresh database); the followed job is
//! `joblog bench tail-writer` (`writer`), its lines say when they were
//! written (`lines`), the viewers read them as Server-Sent Events (`sse`)
//! and `report` sums them up.

mod lines;
pub(super) mod report;
mod sse;
mod viewer;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::scratch::ScratchDatabase;
use anyhow::{anyhow, bail, Context};
use serde_json::json;
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::output::Report;
use super::psu::load::{run_until, LoadFigures};
use super::server::start_server;
use super::{is_postgres, scratch_dir, BenchArgs};
use joblog_client::{Api, Global, JobView};
use lines::line_count;
use report::{Figures, Measured, TailReport};

/// The server's default bounds the bench must stay within (`http.*` and
/// `max_concurrency` defaults): past them it raises them for its server.
const DEFAULT_VIEWERS_PER_JOB: u32 = 100;
const DEFAULT_CONCURRENCY: u32 = 16;

/// What every measurement of one bench shares.
pub(super) struct Ctx<'a> {
    pub(super) args: &'a BenchArgs,
    pub(super) global: &'a Global,
    pub(super) token: Option<String>,
    /// This executable: the followed job runs it as `bench tail-writer`.
    pub(super) exe: PathBuf,
    /// Where the start files are made (one per measurement).
    pub(super) dir: PathBuf,
}

/// `joblog bench tail-writer`: the followed job.
pub(super) async fn run_writer(args: BenchArgs) -> anyhow::Result<i32> {
    let Some(start_file) = args.start_file.clone() else {
        bail!("tail-writer needs --start-file (it is the job `joblog bench tail` runs)");
    };
    tokio::task::spawn_blocking(move || {
        writer::run(args.rate, args.duration, &start_file, args.job_timeout)
    })
    .await
    .context("writer thread")??;
    Ok(0)
}

pub(super) async fn run(args: BenchArgs, global: Global) -> anyhow::Result<Report> {
    let wall = Instant::now();
    // Before any server starts, so Ctrl-C always goes through the path
    // that stops it (it runs in its own process group).
    let mut sigint = signal(SignalKind::interrupt()).context("cannot listen for Ctrl-C")?;
    let date = super::now_rfc3339();
    let dir = scratch_dir("tail")?;
    let ctx = Ctx {
        args: &args,
        global: &global,
        token: global.token()?,
        exe: std::env::current_exe().context("cannot find the joblog executable")?,
        dir,
    };
    let mut rows = Vec::new();
    let mut stopped: Option<(String, i32)> = None;
    'runs: for run in 1..=args.runs {
        for &viewers in &args.viewers.0 {
            eprintln!(
                "bench: run {run} of {}: {viewers} viewer(s), psu load on",
                args.runs
            );
            match measure_on_fresh_server(&ctx, run, viewers, &mut sigint).await {
                Ok(Some(m)) => {
                    eprintln!("bench: {}", m.figures.summary());
                    rows.push(m);
                }
                Ok(None) => {
                    stopped = Some(("stopped early: interrupted (Ctrl-C)".into(), 0));
                    break 'runs;
                }
                Err(e) if rows.is_empty() => {
                    let _ = std::fs::remove_dir_all(&ctx.dir);
                    return Err(e);
                }
                Err(e) => {
                    stopped = Some((format!("stopped by an error: {e:#}"), 1));
                    break 'runs;
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&ctx.dir);
    if let Some((note, _)) = &stopped {
        eprintln!("bench: {note}");
    }
    let database = match (args.external, &args.database) {
        (true, _) => format!(
            "external server at {}",
            joblog_client::redact_url(&global.server)
        ),
        (false, Some(db)) if is_postgres(db) => format!(
            "{}, a fresh database on its server for each measurement",
            joblog_client::redact_url(db)
        ),
        (false, Some(db)) => joblog_client::redact_url(db),
        (false, None) => "SQLite in a fresh temporary data directory for each measurement".into(),
    };
    let command = super::command_line();
    let tail = TailReport {
        date: &date,
        command: &command,
        database: &database,
        args: &args,
        rows: &rows,
        total: wall.elapsed(),
        note: stopped.as_ref().map(|(n, _)| n.as_str()),
    };
    let (raw, chart) = report::figures(&tail);
    let mut out = Report::new(report::render(&tail), raw).chart("", chart);
    out.failed = stopped.as_ref().is_some_and(|(_, code)| *code != 0)
        || rows.iter().any(|m| m.figures.problem_count > 0);
    Ok(out)
}

/// Flags for the bench's server where the defaults would refuse the
/// viewers or queue the followed job behind the load.
fn server_flags(args: &BenchArgs) -> Vec<String> {
    let most = args.viewers.0.iter().copied().max().unwrap_or(1);
    let mut flags = Vec::new();
    if most > DEFAULT_VIEWERS_PER_JOB {
        flags.push(format!("--http-max-viewers-per-job={most}"));
    }
    if args.batch_jobs + 1 > DEFAULT_CONCURRENCY {
        flags.push(format!("--max-concurrency={}", args.batch_jobs + 1));
    }
    flags
}

/// One measurement on its own server and database, both gone afterwards.
/// `None`: Ctrl-C.
async fn measure_on_fresh_server(
    ctx: &Ctx<'_>,
    run: u32,
    viewers: u32,
    sigint: &mut Signal,
) -> anyhow::Result<Option<Measured>> {
    let args = ctx.args;
    let scratch = match &args.database {
        Some(url) if !args.external && is_postgres(url) => Some(
            ScratchDatabase::create(url, "joblog_bench_tail")
                .await
                .context("cannot make a database for the measurement")?,
        ),
        _ => None,
    };
    let database = match &scratch {
        Some(db) => Some(db.url()),
        None => args.database.as_deref(),
    };
    let server = if args.external {
        None
    } else {
        let flags = server_flags(args);
        match start_server(args, database, &flags, &[], ctx.token.as_deref(), sigint).await {
            Ok(server) => Some(server),
            Err(e) => {
                drop_scratch(scratch).await;
                return Err(e);
            }
        }
    };
    let url = server
        .as_ref()
        .map_or_else(|| ctx.global.server.clone(), |s| s.url.clone());
    let outcome = tokio::select! {
        r = measure(ctx, &url, run, viewers) => Some(r),
        _ = sigint.recv() => None,
    };
    if let Some(s) = server {
        s.stop().await;
    }
    drop_scratch(scratch).await;
    outcome.transpose()
}

async fn drop_scratch(scratch: Option<ScratchDatabase>) {
    if let Some(db) = scratch {
        let name = db.name().to_string();
        if let Err(e) = db.drop_database().await {
            eprintln!("bench: could not drop database {name}: {e}");
        }
    }
}

/// The psu load from before the first line to after the last, and the
/// followed job with its viewers in the middle of it.
async fn measure(ctx: &Ctx<'_>, url: &str, run: u32, viewers: u32) -> anyhow::Result<Measured> {
    let api = Api::with_ca(url, ctx.token.as_deref(), ctx.global.cacert.as_deref())?;
    let (stop, stop_rx) = watch::channel(false);
    let (batches, mut batches_rx) = watch::channel(0u64);
    let load = run_until(&api, ctx.args, stop_rx, batches);
    let tail = async {
        let followed = async {
            batches_rx
                .wait_for(|n| *n >= 1)
                .await
                .map_err(|_| anyhow!("the psu load stopped before its first batch ended"))?;
            follow(ctx, url, viewers, None).await
        }
        .await;
        stop.send_replace(true);
        followed
    };
    let (load, followed) = tokio::join!(load, tail);
    // The load's error first: when it fails, the tail waited for nothing.
    let load: LoadFigures = load.context("the psu load failed")?;
    let followed = followed?;
    Ok(Measured {
        run,
        viewers,
        figures: followed.figures(),
        load,
    })
}

/// What the viewers of one job saw.
pub(super) struct Followed {
    expected: u64,
    outcomes: Vec<lines::ViewerOutcome>,
    /// The job did not end as it should have (as its `end` event says).
    job_problem: Option<String>,
}

impl Followed {
    pub(super) fn figures(self) -> Figures {
        Figures::of(&self.outcomes, self.expected, self.job_problem)
    }
}

/// Submits the followed job, connects `viewers` to its live tail, lets it
/// write once all are connected (and tells `writing`), and reads every
/// viewer to its end.
pub(super) async fn follow(
    ctx: &Ctx<'_>,
    url: &str,
    viewers: u32,
    writing: Option<tokio::sync::oneshot::Sender<()>>,
) -> anyhow::Result<Followed> {
    static STARTS: AtomicU64 = AtomicU64::new(0);
    let args = ctx.args;
    let api = Arc::new(Api::with_ca(
        url,
        ctx.token.as_deref(),
        ctx.global.cacert.as_deref(),
    )?);
    let start_file = ctx
        .dir
        .join(format!("start-{}", STARTS.fetch_add(1, Ordering::Relaxed)));
    let expected = line_count(args.rate, args.duration);
    let job: JobView = api
        .post_json(
            api.url("/api/v1/jobs", &[])?,
            &json!({
                "name": "bench-tail",
                "command": writer_command(&ctx.exe, args, &start_file)?,
            }),
        )
        .await
        .context("cannot submit the followed job")?;
    let events = api.url(&format!("/api/v1/jobs/{}/log/events", job.id), &[])?;
    let deadline = tokio::time::Instant::now() + args.duration + args.job_timeout;
    let (ready, mut connected) = mpsc::channel(viewers as usize);
    let mut tasks = JoinSet::new();
    for i in 0..viewers as usize {
        let v = viewer::Viewer {
            index: i,
            api: api.clone(),
            url: events.clone(),
            expected,
            deadline,
        };
        tasks.spawn(v.run(ready.clone()));
    }
    drop(ready);
    for _ in 0..viewers {
        match connected.recv().await {
            Some(Ok(())) => {}
            Some(Err(e)) => bail!("a viewer of job {} could not connect: {e}", job.id),
            None => bail!("the viewers of job {} stopped before connecting", job.id),
        }
    }
    std::fs::write(&start_file, b"")
        .with_context(|| format!("cannot create {}", start_file.display()))?;
    if let Some(w) = writing {
        let _ = w.send(());
    }
    eprintln!(
        "bench: {viewers} viewer(s) of job {} connected; it writes {expected} lines at {}/s",
        job.id, args.rate
    );
    let mut seen = Vec::with_capacity(viewers as usize);
    while let Some(r) = tasks.join_next().await {
        seen.push(r.context("a viewer task failed")?);
    }
    let _ = std::fs::remove_file(&start_file);
    seen.sort_by_key(|s| s.index);
    let job_problem = seen.iter().find_map(|s| s.end.as_ref()).and_then(|job| {
        let ok = job.state == "succeeded" && job.log.records == expected;
        (!ok).then(|| {
            format!(
                "job {} ended {} with {} records, {expected} expected",
                job.id, job.state, job.log.records
            )
        })
    });
    Ok(Followed {
        expected,
        outcomes: seen.into_iter().map(|s| s.outcome).collect(),
        job_problem,
    })
}

/// `joblog bench tail-writer …` as the job's command: this very
/// executable, so the job and the bench stamp and read the same clock
/// with the same code.
fn writer_command(exe: &Path, args: &BenchArgs, start_file: &Path) -> anyhow::Result<Vec<String>> {
    let text = |p: &Path| {
        p.to_str()
            .map(str::to_string)
            .ok_or_else(|| anyhow!("{} is not UTF-8", p.display()))
    };
    let ms = |d: std::time::Duration| format!("{}ms", d.as_millis().max(1));
    Ok(vec![
        text(exe)?,
        "bench".into(),
        "tail-writer".into(),
        format!("--rate={}", args.rate),
        format!("--duration={}", ms(args.duration)),
        format!("--job-timeout={}", ms(args.job_timeout)),
        format!("--start-file={}", text(start_file)?),
    ])
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        bench: BenchArgs,
    }

    fn args(line: &[&str]) -> BenchArgs {
        let mut argv = vec!["bench", "tail"];
        argv.extend_from_slice(line);
        Cmd::try_parse_from(argv).unwrap().bench
    }

    #[test]
    fn the_server_keeps_its_defaults_unless_the_bench_needs_more() {
        assert!(server_flags(&args(&[])).is_empty());
        assert_eq!(
            server_flags(&args(&["--viewers", "1,300", "--batch-jobs", "20"])),
            ["--http-max-viewers-per-job=300", "--max-concurrency=21"]
        );
        assert_eq!(
            server_flags(&args(&["--viewers", "1000"]))[0],
            "--http-max-viewers-per-job=1000"
        );
    }

    #[test]
    fn the_writer_gets_the_rate_and_duration_it_will_be_measured_by() {
        let a = args(&["--rate", "50", "--duration", "1m30s"]);
        let cmd = writer_command(
            Path::new("/usr/bin/joblog"),
            &a,
            Path::new("/tmp/x/start-0"),
        )
        .unwrap();
        assert_eq!(cmd[..3], ["/usr/bin/joblog", "bench", "tail-writer"]);
        // As the job's `joblog bench` will parse it.
        let mut parsed = vec!["bench"];
        parsed.extend(cmd[2..].iter().map(String::as_str));
        let Cmd { bench } = Cmd::try_parse_from(parsed).unwrap();
        assert_eq!(bench.scenario, super::super::Scenario::TailWriter);
        assert_eq!(bench.rate, 50);
        assert_eq!(bench.duration, a.duration);
        assert_eq!(bench.job_timeout, a.job_timeout);
        assert_eq!(bench.start_file, Some("/tmp/x/start-0".into()));
    }
}
