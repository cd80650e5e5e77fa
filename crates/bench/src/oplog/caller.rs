//! The caller's half of `bench oplog`: how long a thread spends in one
//! `tracing::info!` with a few fields, through joblog's `OplogLayer` and
//! through `tracing-appender`'s non-blocking writer under the JSON
//! formatter, each call timed on its own; and whether every event reached
//! the file.

use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use joblog_oplog::open::{opener, Resources};
use joblog_oplog::sinks::database::AuditDb;
use joblog_oplog::sinks::SystemClock;
use joblog_oplog::{Log, LoggingConfig, Oplog, OplogOptions, SinkConfig, SinkKind};
use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt;

use super::scrape::LogCounters;
use crate::stats::percentile;

/// Events each thread logs before it is timed (callsite registration,
/// first allocations, the writers' threads woken).
const WARM_UP: u64 = 1000;

/// The name of joblog's sink, in its counters.
const SINK: &str = "bench";

/// What the events go through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Writer {
    /// joblog's `OplogLayer`, an `Oplog` with one JSON-lines file sink.
    Joblog,
    /// `tracing_subscriber::fmt::layer().json()` writing through
    /// `tracing_appender::non_blocking` into a file.
    Appender,
}

impl Writer {
    pub(super) fn name(self) -> &'static str {
        match self {
            Writer::Joblog => "joblog `OplogLayer`",
            Writer::Appender => "tracing-appender `non_blocking`",
        }
    }
}

/// How the events of a round are logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pace {
    /// Threads logging at once.
    pub(super) threads: usize,
    /// Timed events each thread logs.
    pub(super) events: u64,
    /// A pause after each event (a server logs between other work, so
    /// the writer's threads are often asleep when an event comes), or
    /// none: one event after the other, as fast as the writer lets.
    pub(super) pause: Option<Duration>,
}

/// One round of a writer at a pace.
#[derive(Debug, Clone)]
pub(super) struct CallerRound {
    pub(super) writer: Writer,
    pub(super) pace: Pace,
    /// Of every timed call of every thread, in ns, timer included.
    pub(super) p50: f64,
    pub(super) p99: f64,
    pub(super) p999: f64,
    /// Timed events per second of one thread, pauses included (median
    /// of the threads).
    pub(super) per_thread_rate: f64,
    /// Events logged, warm-up included.
    pub(super) logged: u64,
    /// Lines in the file once the writer was done.
    pub(super) written: u64,
    /// What the writer itself counted as dropped or lost.
    pub(super) dropped: u64,
}

/// The cost of the timing itself: `Instant::now()` and `elapsed()` around
/// nothing, p50 and p99 in ns.
pub(super) fn timer_overhead(samples: usize) -> (f64, f64) {
    let mut v = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        v.push(std::hint::black_box(t).elapsed().as_nanos() as f64);
    }
    (
        percentile(&v, 50.0).unwrap_or(0.0),
        percentile(&v, 99.0).unwrap_or(0.0),
    )
}

/// Measures one round of `writer` in `dir` (made empty by the caller).
pub(super) fn round(writer: Writer, pace: Pace, dir: &Path) -> anyhow::Result<CallerRound> {
    let (timings, path, dropped) = match writer {
        Writer::Joblog => joblog(pace, dir)?,
        Writer::Appender => appender(pace, dir)?,
    };
    let all: Vec<f64> = timings
        .iter()
        .flat_map(|t| t.samples.iter().map(|&ns| ns as f64))
        .collect();
    let rates: Vec<f64> = timings
        .iter()
        .map(|t| t.samples.len() as f64 / t.wall.as_secs_f64().max(1e-9))
        .collect();
    let written = count_lines(&path)?;
    Ok(CallerRound {
        writer,
        pace,
        p50: percentile(&all, 50.0).unwrap_or(0.0),
        p99: percentile(&all, 99.0).unwrap_or(0.0),
        p999: percentile(&all, 99.9).unwrap_or(0.0),
        per_thread_rate: percentile(&rates, 50.0).unwrap_or(0.0),
        logged: pace.threads as u64 * (WARM_UP + pace.events),
        written,
        dropped,
    })
}

/// One producing thread's timed calls.
struct Timings {
    samples: Vec<u64>,
    wall: Duration,
}

/// The event every thread logs: a message and four fields, as a request
/// handler would.
#[inline(never)]
fn log_one(i: u64) {
    tracing::info!(
        job_id = i,
        actor = "ci",
        bytes = 4096u64,
        ok = true,
        "request handled"
    );
}

/// Runs `pace.threads` threads logging through `dispatch` (as their
/// default, so the bench process's own logging is untouched), all
/// starting the timed events together.
fn produce(dispatch: &Dispatch, pace: Pace) -> anyhow::Result<Vec<Timings>> {
    let barrier = Barrier::new(pace.threads);
    std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(pace.threads);
        for n in 0..pace.threads {
            let barrier = &barrier;
            let handle = std::thread::Builder::new()
                .name(format!("bench-producer-{n}"))
                .spawn_scoped(s, move || {
                    tracing::dispatcher::with_default(dispatch, || {
                        for i in 0..WARM_UP {
                            log_one(i);
                        }
                        let mut samples = Vec::with_capacity(pace.events as usize);
                        barrier.wait();
                        let started = Instant::now();
                        for i in 0..pace.events {
                            let t = Instant::now();
                            log_one(i);
                            samples.push(t.elapsed().as_nanos() as u64);
                            if let Some(pause) = pace.pause {
                                std::thread::sleep(pause);
                            }
                        }
                        Timings {
                            samples,
                            wall: started.elapsed(),
                        }
                    })
                })
                .context("cannot start a producing thread")?;
            handles.push(handle);
        }
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| anyhow!("a producing thread panicked")))
            .collect()
    })
}

fn joblog(pace: Pace, dir: &Path) -> anyhow::Result<(Vec<Timings>, std::path::PathBuf, u64)> {
    let path = dir.join("joblog.log");
    // Never rotated: a rotation's compression would run beside the
    // producers, and the lines could not be counted in one file.
    let sink = SinkConfig {
        name: Some(SINK.into()),
        path: Some(path.clone()),
        rotate_size: Some("off".into()),
        rotate_daily: Some(false),
        ..SinkConfig::new(SinkKind::File, &[Log::Server])
    };
    let config = LoggingConfig {
        sinks: Some(vec![sink]),
        ..LoggingConfig::default()
    };
    let options = OplogOptions {
        default_dir: dir.to_path_buf(),
        node: "bench".into(),
        opener: opener(Resources {
            clock: Arc::new(SystemClock),
            audit_db: AuditDb::default(),
        }),
    };
    let oplog = Oplog::start(config, options).context("cannot start joblog's logs")?;
    let dispatch = Dispatch::new(tracing_subscriber::registry().with(oplog.layer()));
    let timings = produce(&dispatch, pace);
    drop(dispatch);
    let flushed = oplog.flush(Duration::from_secs(120));
    let mut registry = prometheus_client::registry::Registry::default();
    oplog.register_metrics(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry)
        .map_err(|_| anyhow!("cannot read joblog's log counters"))?;
    oplog.shutdown(Duration::from_secs(30));
    let timings = timings?;
    if !flushed {
        return Err(anyhow!("joblog's logs did not flush within 120 s"));
    }
    let counters = LogCounters::read(&text, SINK)
        .ok_or_else(|| anyhow!("joblog's log counters have no sink {SINK:?}"))?;
    Ok((timings, path, counters.dropped + counters.lost))
}

fn appender(pace: Pace, dir: &Path) -> anyhow::Result<(Vec<Timings>, std::path::PathBuf, u64)> {
    let name = "appender.log";
    let path = dir.join(name);
    let (writer, guard) =
        tracing_appender::non_blocking(tracing_appender::rolling::never(dir, name));
    let counter = writer.error_counter();
    let layer = tracing_subscriber::fmt::layer()
        .json()
        .with_ansi(false)
        .with_writer(writer);
    let dispatch = Dispatch::new(tracing_subscriber::registry().with(layer));
    let timings = produce(&dispatch, pace);
    drop(dispatch);
    // The guard's drop waits at most a second for the worker, whose
    // queue may hold more than a second's writing: wait until the file
    // stops growing first.
    wait_until_quiet(&path, Duration::from_millis(500), Duration::from_secs(120));
    drop(guard);
    Ok((timings?, path, counter.dropped_lines() as u64))
}

/// Returns once `path` has not grown for `quiet`, or after `limit`.
fn wait_until_quiet(path: &Path, quiet: Duration, limit: Duration) {
    let started = Instant::now();
    let len = || std::fs::metadata(path).map_or(0, |m| m.len());
    let mut last = len();
    let mut still_since = Instant::now();
    while started.elapsed() < limit && still_since.elapsed() < quiet {
        std::thread::sleep(Duration::from_millis(50));
        let now = len();
        if now != last {
            last = now;
            still_since = Instant::now();
        }
    }
}

/// Lines (newlines) in the file at `path`; none when it is not there.
fn count_lines(path: &Path) -> anyhow::Result<u64> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut lines = 0u64;
    loop {
        let n = file
            .read(&mut buf)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            return Ok(lines);
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_reaches_the_file_through_both_writers() {
        for writer in [Writer::Joblog, Writer::Appender] {
            let dir = tempfile::tempdir().unwrap();
            let pace = Pace {
                threads: 2,
                events: 500,
                pause: None,
            };
            let r = round(writer, pace, dir.path()).unwrap();
            assert_eq!(r.logged, 2 * (WARM_UP + 500), "{writer:?}");
            assert_eq!((r.written, r.dropped), (r.logged, 0), "{writer:?}");
            assert!(r.p50 > 0.0 && r.p50 <= r.p99 && r.p99 <= r.p999, "{r:?}");
            let name = if writer == Writer::Joblog {
                "joblog.log"
            } else {
                "appender.log"
            };
            let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
            let first: serde_json::Value =
                serde_json::from_str(text.lines().next().unwrap()).unwrap();
            assert!(text.contains("request handled"), "{first}");
            assert!(text.contains("\"actor\":\"ci\""), "{first}");
        }
    }

    #[test]
    fn lines_are_counted_across_reads_and_a_missing_file_has_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.log");
        assert_eq!(count_lines(&path).unwrap(), 0);
        let line = "x".repeat(999) + "\n";
        std::fs::write(&path, line.repeat(3000)).unwrap();
        assert_eq!(count_lines(&path).unwrap(), 3000);
    }
}
