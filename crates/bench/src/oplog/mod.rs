//! `joblog bench oplog`: what the server's own logs cost. `http` loads a
//! logging server and a non-logging one in turn (`load` is the load
//! generator, `scrape` reads the logs' counters); `caller` times one
//! event on the thread that logs it, through joblog's layer and through
//! tracing-appender; `report` prints both.

mod caller;
mod http;
mod load;
mod report;
pub(super) mod scrape;

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use tokio::signal::unix::{signal, SignalKind};

use super::output::Report;
use super::{scratch_dir, BenchArgs};
use caller::{CallerRound, Pace, Writer};
use load::LoadGen;
use report::OplogReport;

/// Producing threads the caller-side cost is measured with.
const PRODUCERS: [usize; 2] = [1, 2];

/// The pause between paced events: a busy server's request rate, so the
/// writers' threads are woken for most events rather than kept busy.
const PAUSE: Duration = Duration::from_micros(100);

/// Paced rounds log this share of `--events` (they take longer per event).
const PACED_SHARE: u64 = 10;

/// Every pace of the caller-side rounds: back to back, then paced, each
/// with 1 and 2 threads.
fn paces(events: u64) -> Vec<Pace> {
    let mut paces = Vec::new();
    for (events, pause) in [(events, None), ((events / PACED_SHARE).max(1), Some(PAUSE))] {
        for threads in PRODUCERS {
            paces.push(Pace {
                threads,
                events,
                pause,
            });
        }
    }
    paces
}

/// Timer samples for the overhead figure.
const TIMER_SAMPLES: usize = 200_000;

pub(super) async fn run(args: BenchArgs) -> anyhow::Result<Report> {
    if args.external || args.database.is_some() {
        bail!(joblog_client::UsageError(
            "bench oplog starts its own servers, on SQLite: --external and --database do not apply"
                .into()
        ));
    }
    let wall = Instant::now();
    // Before any server starts, so Ctrl-C always goes through the path
    // that stops them (each runs in its own process group).
    let mut sigint = signal(SignalKind::interrupt()).context("cannot listen for Ctrl-C")?;
    let date = super::now_rfc3339();
    let load = LoadGen::new(args.connections, args.client_threads)?;
    let http = http::measure(&args, &load, &mut sigint).await;
    load.stop();
    let http = http?;
    let mut notes = Vec::new();
    let mut code = 0;
    let failed: u64 = http.rounds.iter().map(|r| r.sent.failed).sum();
    if failed > 0 {
        let first = http
            .rounds
            .iter()
            .find_map(|r| r.sent.first_error.as_deref())
            .unwrap_or("no message");
        notes.push(format!("{failed} request(s) failed; the first: {first}"));
        code = 1;
    }
    if http.access.is_some_and(|a| !a.complete()) {
        notes.push("the logging server did not log every request".into());
        code = 1;
    }
    let (timer, caller) = if http.stopped.is_some() {
        // Stopped by an error: the figures are incomplete. By Ctrl-C:
        // as asked.
        if !http.interrupted {
            code = 1;
        }
        (None, Vec::new())
    } else {
        let (events, runs) = (args.events, args.runs);
        let measured = tokio::select! {
            r = tokio::task::spawn_blocking(move || measure_callers(events, runs)) => r.context("the caller-side measurement")?,
            _ = sigint.recv() => {
                notes.push("caller-side cost not measured: interrupted (Ctrl-C)".into());
                Ok((None, Vec::new()))
            }
        };
        match measured {
            Ok(m) => m,
            Err(e) => {
                notes.push(format!("caller-side cost not measured: {e:#}"));
                code = 1;
                (None, Vec::new())
            }
        }
    };
    let joblog_lost: u64 = caller
        .iter()
        .filter(|c| c.writer == Writer::Joblog)
        .map(|c| c.logged.saturating_sub(c.written))
        .sum();
    if joblog_lost > 0 {
        notes.push(format!(
            "joblog lost {joblog_lost} event(s) under its `block` policy"
        ));
        code = 1;
    }
    let command = super::command_line();
    let figures = OplogReport {
        date: &date,
        command: &command,
        duration: args.duration,
        runs: args.runs,
        connections: args.connections,
        client_threads: args.client_threads,
        events: args.events,
        http: &http,
        timer,
        caller: &caller,
        total: wall.elapsed(),
        notes: &notes,
    };
    let (raw, chart) = report::figures(&figures);
    let mut out = Report::new(report::render(&figures), raw).chart("", chart);
    out.failed = code != 0;
    Ok(out)
}

type CallerFigures = (Option<(f64, f64)>, Vec<CallerRound>);

/// Every round of the caller-side cost, each in a fresh directory
/// removed afterwards; the writers alternate which goes first.
fn measure_callers(events: u64, runs: u32) -> anyhow::Result<CallerFigures> {
    let timer = caller::timer_overhead(TIMER_SAMPLES);
    let root = scratch_dir("oplog")?;
    let outcome = caller_rounds(events, runs, &root);
    let _ = std::fs::remove_dir_all(&root);
    Ok((Some(timer), outcome?))
}

fn caller_rounds(
    events: u64,
    runs: u32,
    root: &std::path::Path,
) -> anyhow::Result<Vec<CallerRound>> {
    let mut rounds = Vec::new();
    for (p, pace) in paces(events).into_iter().enumerate() {
        for round in 1..=runs {
            let writers = if round % 2 == 1 {
                [Writer::Joblog, Writer::Appender]
            } else {
                [Writer::Appender, Writer::Joblog]
            };
            for writer in writers {
                let dir = root.join(format!("{p}-{round}-{writer:?}"));
                std::fs::create_dir(&dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
                let r = caller::round(writer, pace, &dir)?;
                eprintln!(
                    "bench: {} thread(s), {}, round {round} of {runs}, {}: p50 {:.0} ns, p99 {:.0} ns, {} of {} lines written",
                    pace.threads,
                    report::pace_label(pace),
                    writer.name(),
                    r.p50,
                    r.p99,
                    r.written,
                    r.logged
                );
                rounds.push(r);
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }
    Ok(rounds)
}
