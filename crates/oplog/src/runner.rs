//! The thread that drives one sink: takes batches from its queue, writes
//! them, and keeps going when the sink fails — a failed sink is retried
//! (reopened) with backoff while what reaches it meanwhile is counted as
//! lost, so that a dead disk or syslog never holds up the other sinks or
//! the server, even under the `block` policy.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use joblog_core::Backoff;

use super::entry::{Entry, Level};
use super::event::{Event, Value};
use super::queue::Writer;
use super::router::Submitter;
use super::sink::Sink;
use super::unit::Unit;

/// Entries one write takes at most.
const MAX_BATCH: usize = 1024;
/// How often a sink that lost entries says so in the error log, at most.
const REPORT_EVERY: Duration = Duration::from_secs(10);

/// What the router sends a sink.
pub(crate) enum Msg {
    Entry(Arc<Entry>),
    /// Write what came before, flush, then answer.
    Flush(mpsc::Sender<()>),
    /// Reopen the destination (SIGHUP: logrotate moved the file).
    Reopen,
}

/// A sink's figures for `/metrics`; kept across reconfigurations of a
/// sink of the same name, so counters only grow.
#[derive(Debug, Default)]
pub struct SinkStats {
    /// Entries written.
    pub written: AtomicU64,
    /// Entries not queued: the queue was full under `drop_newest`.
    pub dropped: AtomicU64,
    /// Write attempts that failed.
    pub failed_writes: AtomicU64,
    /// Entries lost to failed writes or while the sink was down.
    pub lost: AtomicU64,
    /// Entries the router dropped because the sink stalled: its queue
    /// stayed full for [`super::router::STALL`] (a write or open that
    /// does not return), whatever its policy.
    pub stalled: AtomicU64,
}

impl SinkStats {
    fn add(counter: &AtomicU64, n: usize) {
        counter.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// Starts the thread of sink `name`.
pub(crate) fn spawn(
    name: String,
    sink: Box<dyn Sink>,
    queue: Writer<Msg>,
    stats: Arc<SinkStats>,
    report: Submitter,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("log-{name}"))
        .spawn(move || {
            super::layer::mark_internal();
            Runner::new(name, sink, stats, report).run(&queue);
        })
}

enum Health {
    Up,
    /// Failing since the last attempt; tried again at `retry_at`.
    Down {
        retry_at: Instant,
        lost: u64,
    },
}

struct Runner {
    name: String,
    sink: Box<dyn Sink>,
    stats: Arc<SinkStats>,
    /// Where the sink's own troubles are told: straight to the router
    /// (never waiting), so they reach the error log of every other sink.
    report: Submitter,
    health: Health,
    backoff: Backoff,
    reported_drops: u64,
    last_report: Option<Instant>,
}

impl Runner {
    fn new(name: String, sink: Box<dyn Sink>, stats: Arc<SinkStats>, report: Submitter) -> Runner {
        Runner {
            report,
            reported_drops: stats.dropped.load(Ordering::Relaxed),
            name,
            sink,
            stats,
            health: Health::Up,
            backoff: Backoff::new(Duration::from_millis(100), Duration::from_secs(30)),
            last_report: None,
        }
    }

    fn run(&mut self, queue: &Writer<Msg>) {
        let mut msgs = Vec::with_capacity(MAX_BATCH);
        let mut entries = Vec::with_capacity(MAX_BATCH);
        loop {
            let open = queue.next_batch(&mut msgs, MAX_BATCH, Duration::from_secs(1));
            for msg in msgs.drain(..) {
                match msg {
                    Msg::Entry(entry) => entries.push(entry),
                    Msg::Flush(done) => {
                        self.write(&mut entries);
                        self.flush();
                        let _ = done.send(());
                    }
                    Msg::Reopen => {
                        self.write(&mut entries);
                        if let Err(e) = self.sink.reopen() {
                            self.failed(0, &e);
                        }
                    }
                }
            }
            self.write(&mut entries);
            self.report_drops();
            if !open {
                self.flush();
                return;
            }
        }
    }

    fn write(&mut self, entries: &mut Vec<Arc<Entry>>) {
        if entries.is_empty() {
            return;
        }
        let n = entries.len();
        match &mut self.health {
            Health::Down { retry_at, lost } if Instant::now() < *retry_at => {
                *lost += n as u64;
                SinkStats::add(&self.stats.lost, n);
            }
            _ => {
                let result = self.attempt(entries);
                match (result, &self.health) {
                    (Ok(()), Health::Down { lost, .. }) => {
                        let lost = *lost;
                        self.tell(
                            Level::Info,
                            format!(
                                "log sink {} writes again ({lost} entries were lost while it failed)",
                                self.name
                            ),
                            ("lost", lost),
                        );
                        self.health = Health::Up;
                        self.backoff.reset();
                    }
                    (Ok(()), Health::Up) => {}
                    (Err(e), _) => self.failed(n, &e),
                }
            }
        }
        entries.clear();
    }

    /// Writes, and on a failure reopens and writes once more at once: a
    /// restarted syslog or a file removed under us costs nothing.
    fn attempt(&mut self, entries: &[Arc<Entry>]) -> std::io::Result<()> {
        let first = self.sink.write(entries).and_then(|()| self.sink.flush());
        let result = match first {
            Ok(()) => Ok(()),
            Err(_) => {
                SinkStats::add(&self.stats.failed_writes, 1);
                self.sink
                    .reopen()
                    .and_then(|()| self.sink.write(entries))
                    .and_then(|()| self.sink.flush())
            }
        };
        if result.is_ok() {
            SinkStats::add(&self.stats.written, entries.len());
        }
        result
    }

    fn failed(&mut self, n: usize, e: &std::io::Error) {
        SinkStats::add(&self.stats.failed_writes, 1);
        SinkStats::add(&self.stats.lost, n);
        let delay = self.backoff.next_delay();
        let lost = match self.health {
            Health::Down { lost, .. } => lost,
            Health::Up => 0,
        } + n as u64;
        self.health = Health::Down {
            retry_at: Instant::now() + delay,
            lost,
        };
        let message = format!(
            "log sink {} ({}) failed: {e}; {n} entries lost, retrying in {delay:?}",
            self.name,
            self.sink.describe()
        );
        self.tell(Level::Warn, message, ("lost", n as u64));
    }

    fn tell(&self, level: Level, message: String, count: (&'static str, u64)) {
        let event = Event::new(level, "joblog_oplog", message)
            .with("sink", Value::Str(self.name.clone()))
            .with(count.0, Value::U64(count.1));
        self.report.submit(Unit::server_event(event));
    }

    fn flush(&mut self) {
        if matches!(self.health, Health::Up) {
            if let Err(e) = self.sink.flush() {
                self.failed(0, &e);
            }
        }
    }

    /// Says in the error log that the queue overflowed, at most every
    /// [`REPORT_EVERY`].
    fn report_drops(&mut self) {
        let dropped = self.stats.dropped.load(Ordering::Relaxed);
        if dropped == self.reported_drops
            || self
                .last_report
                .is_some_and(|at| at.elapsed() < REPORT_EVERY)
        {
            return;
        }
        let n = dropped - self.reported_drops;
        let message = format!(
            "log sink {}'s queue was full: {n} entries dropped (its policy is drop_newest)",
            self.name
        );
        self.tell(Level::Warn, message, ("dropped", n));
        self.reported_drops = dropped;
        self.last_report = Some(Instant::now());
    }
}
