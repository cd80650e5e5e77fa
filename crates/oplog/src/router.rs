//! The router: one thread between the threads that log and the sinks. A
//! thread that logs makes one push onto the router's queue; the router
//! turns units into entries and hands each to every sink that takes it,
//! through the sink's own bounded queue and policy. Flushes, reopens and
//! reconfigurations travel the same queue, so they apply in order: from
//! the next event on.

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::config::LoggingConfig;
use super::entry::Entry;
use super::layer::{is_internal, OplogLayer};
use super::plan::{self, Plan};
use super::queue::{self, Overflow, Pushed};
use super::route::{self, RouteOptions, SinkFilter};
use super::runner::{self, Msg, SinkStats};
use super::sink::Sink;
use super::unit::Unit;
use super::OplogError;

/// Units the router's queue holds; past it, threads that log wait (or,
/// for the log's own threads, drop).
const ROUTER_QUEUE: usize = 16_384;

/// How long the router waits for room in a `block` sink's queue before it
/// takes the sink for stalled (a write or an open that does not return:
/// a FIFO, a hung mount, a stopped reader of stderr). A stalled sink's
/// entries are dropped and counted, without waiting, until its queue has
/// room again, so the router, and every thread that logs, never waits
/// on it for longer.
pub(crate) const STALL: Duration = Duration::from_secs(1);

/// Opens the sink a plan describes.
pub type Opener = Arc<dyn Fn(&Plan) -> std::io::Result<Box<dyn Sink>> + Send + Sync>;

/// What an [`Oplog`] is started with.
#[derive(Clone)]
pub struct OplogOptions {
    /// Where relative file sinks go when the configuration names no
    /// `dir` (`<data-dir>/logs`).
    pub default_dir: std::path::PathBuf,
    /// This server's node name, on every entry.
    pub node: String,
    pub opener: Opener,
}

/// Where a configuration comes from.
#[derive(Clone, Copy)]
enum Source {
    /// The server's own file: trusted.
    File,
    /// `PUT /api/v1/logging`: held to the file's.
    Api,
}

pub(crate) enum Item {
    Unit(Arc<Unit>),
    Flush(mpsc::Sender<()>),
    Reopen,
    Swap(Box<Routes>, mpsc::Sender<()>),
}

struct SinkHandle {
    name: String,
    filter: SinkFilter,
    tx: queue::Sender<Msg>,
    stats: Arc<SinkStats>,
    /// Its queue stayed full for [`STALL`]: pushes no longer wait.
    stalled: std::cell::Cell<bool>,
    _thread: JoinHandle<()>,
}

/// What became of a message handed to a sink.
#[derive(Debug, PartialEq, Eq)]
enum Handed {
    Queued,
    Dropped,
    /// The sink has just stalled (or has just recovered): worth telling.
    Stalled,
    Recovered,
}

impl SinkHandle {
    /// Hands `msg` to the sink's queue under its policy, but never waits
    /// longer than [`STALL`], and not at all for a stalled sink.
    ///
    /// Entries go by the sink's policy and are counted when dropped; a
    /// flush or a reopen must arrive, so it waits for room (up to
    /// [`STALL`]) whatever the policy, and is no entry to count.
    fn hand(&self, msg: Msg) -> Handed {
        let entry = matches!(msg, Msg::Entry(_));
        let policy = if entry {
            self.tx.policy()
        } else {
            Overflow::Block
        };
        let stalled = self.stalled.get();
        let pushed = if stalled || policy == Overflow::DropNewest {
            self.tx.push_as(msg, Overflow::DropNewest)
        } else {
            self.tx.push_within(msg, STALL)
        };
        let count = |counter: &std::sync::atomic::AtomicU64| {
            if entry {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        };
        match (pushed, stalled) {
            (Pushed::Queued, false) => Handed::Queued,
            (Pushed::Queued, true) => {
                self.stalled.set(false);
                Handed::Recovered
            }
            (Pushed::Dropped, _) if stalled || policy == Overflow::Block => {
                count(&self.stats.stalled);
                self.stalled.set(true);
                if stalled {
                    Handed::Dropped
                } else {
                    Handed::Stalled
                }
            }
            (Pushed::Dropped | Pushed::Closed, _) => {
                count(&self.stats.dropped);
                Handed::Dropped
            }
        }
    }
}

pub(crate) struct Routes {
    options: RouteOptions,
    sinks: Vec<SinkHandle>,
}

/// The sending end the layer and the direct API share.
#[derive(Clone)]
pub(crate) struct Submitter {
    tx: queue::Sender<Item>,
}

impl Submitter {
    /// Hands a finished unit to the router. On the log's own threads it
    /// never waits: a full queue drops (and counts) instead.
    pub(crate) fn submit(&self, unit: Unit) {
        let policy = if is_internal() {
            Overflow::DropNewest
        } else {
            Overflow::Block
        };
        // After shutdown nothing reads the queue: the unit is dropped
        // (and counted with the router's drops).
        let _ = self.tx.push_as(Item::Unit(Arc::new(unit)), policy);
    }
}

/// A sink's figures, for metrics.
#[derive(Clone)]
pub(crate) struct SinkFigures {
    pub name: String,
    pub stats: Arc<SinkStats>,
    pub queue: Arc<queue::Counters>,
}

/// The server's own logs: start one, install its [`Oplog::layer`] as a
/// `tracing` layer (or [`Oplog::submit`] units directly), and
/// [`Oplog::shutdown`] it last.
#[derive(Clone)]
pub struct Oplog {
    inner: Arc<Inner>,
}

struct Inner {
    submitter: Submitter,
    options: OplogOptions,
    /// The configuration in force, and the sinks' figures. Locked to
    /// reconfigure and to read metrics, never to log.
    state: Mutex<State>,
    router: Mutex<Option<JoinHandle<()>>>,
    router_drops: Arc<queue::Counters>,
}

struct State {
    config: LoggingConfig,
    /// The last configuration from the server's own file (at start and
    /// each SIGHUP): what one from the API is held to.
    trusted: Vec<Plan>,
    /// The logging directory of that configuration.
    trusted_dir: std::path::PathBuf,
    figures: Vec<SinkFigures>,
}

impl Oplog {
    /// Checks `config`, opens its sinks and starts the router. An invalid
    /// configuration or a sink that cannot open is an error.
    pub fn start(config: LoggingConfig, options: OplogOptions) -> Result<Oplog, OplogError> {
        let plans = plan::plan(&config, &options.default_dir).map_err(OplogError::Invalid)?;
        let (tx, rx) = queue::bounded(ROUTER_QUEUE, Overflow::Block);
        let submitter = Submitter { tx };
        let (routes, figures) = open_routes(&plans, &config, &options, &[], &submitter)?;
        let router_drops = submitter.tx.counters();
        let thread = std::thread::Builder::new()
            .name("log-router".into())
            .spawn(move || run_router(&rx, routes))
            .map_err(|e| OplogError::Open(format!("cannot start the log router: {e}")))?;
        let trusted_dir = logging_dir(&config, &options);
        Ok(Oplog {
            inner: Arc::new(Inner {
                submitter,
                options,
                state: Mutex::new(State {
                    trusted_dir,
                    config,
                    trusted: plans,
                    figures,
                }),
                router: Mutex::new(Some(thread)),
                router_drops,
            }),
        })
    }

    /// The `tracing` layer that feeds this log.
    pub fn layer(&self) -> OplogLayer {
        OplogLayer::new(self.inner.submitter.clone())
    }

    /// Hands a finished unit over directly, without `tracing`.
    pub fn submit(&self, unit: Unit) {
        self.inner.submitter.submit(unit);
    }

    /// The configuration in force.
    pub fn config(&self) -> LoggingConfig {
        self.state().config.clone()
    }

    /// Replaces the configuration with one from the server's own file
    /// (SIGHUP), from the next event on. An invalid one (or one whose
    /// sinks cannot open) is refused and the one in force stays. False
    /// when `config` is the one in force (nothing done).
    pub fn reconfigure(&self, config: LoggingConfig) -> Result<bool, OplogError> {
        self.replace(config, Source::File)
    }

    /// Replaces the configuration with one sent through the API: as
    /// [`Oplog::reconfigure`], but its files must stay inside the logging
    /// directory of the file's configuration, or be files that
    /// configuration names itself (`plan::confine`).
    pub fn reconfigure_from_api(&self, config: LoggingConfig) -> Result<bool, OplogError> {
        self.replace(config, Source::Api)
    }

    fn replace(&self, config: LoggingConfig, source: Source) -> Result<bool, OplogError> {
        let mut state = self.state();
        let options = &self.inner.options;
        let plans = plan::plan(&config, &options.default_dir).map_err(OplogError::Invalid)?;
        match source {
            Source::Api => plan::confine(&plans, &state.trusted, &state.trusted_dir)
                .map_err(OplogError::Invalid)?,
            Source::File => {
                state.trusted.clone_from(&plans);
                state.trusted_dir = logging_dir(&config, options);
            }
        }
        if state.config == config {
            return Ok(false);
        }
        let (routes, figures) = open_routes(
            &plans,
            &config,
            options,
            &state.figures,
            &self.inner.submitter,
        )?;
        let (done, swapped) = mpsc::channel();
        let item = Item::Swap(Box::new(routes), done);
        if self.inner.submitter.tx.push_as(item, Overflow::Block) != Pushed::Queued {
            return Err(OplogError::Closed);
        }
        // The old sinks are flushed before the router goes on.
        let _ = swapped.recv_timeout(Duration::from_secs(10));
        state.config = config;
        state.figures = figures;
        Ok(true)
    }

    /// Asks every sink to reopen its destination (SIGHUP, after
    /// logrotate).
    pub fn reopen(&self) {
        let _ = self
            .inner
            .submitter
            .tx
            .push_as(Item::Reopen, Overflow::Block);
    }

    /// Waits until everything submitted before is written and flushed,
    /// up to `timeout`. False when it was not.
    pub fn flush(&self, timeout: Duration) -> bool {
        // The log's own threads (a sink panicking) cannot wait for
        // themselves.
        if is_internal() {
            return false;
        }
        let (done, flushed) = mpsc::channel();
        if self
            .inner
            .submitter
            .tx
            .push_as(Item::Flush(done), Overflow::Block)
            != Pushed::Queued
        {
            return false;
        }
        flushed.recv_timeout(timeout).is_ok()
    }

    /// Flushes (up to `timeout`) and stops the router and the sinks. What
    /// is logged after is not written.
    pub fn shutdown(&self, timeout: Duration) -> bool {
        let flushed = self.flush(timeout);
        let swapped = self.reconfigure_to_nothing();
        let router = self
            .inner
            .router
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        drop(router);
        flushed && swapped
    }

    /// Swaps in no sinks: the router flushes the old ones and lets them go.
    fn reconfigure_to_nothing(&self) -> bool {
        let routes = Routes {
            options: route_options(&self.state().config, &self.inner.options, &[]),
            sinks: Vec::new(),
        };
        let (done, swapped) = mpsc::channel();
        let item = Item::Swap(Box::new(routes), done);
        self.inner.submitter.tx.push_as(item, Overflow::Block) == Pushed::Queued
            && swapped.recv_timeout(Duration::from_secs(10)).is_ok()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The sinks' figures now, for metrics.
    pub(crate) fn figures(&self) -> Vec<SinkFigures> {
        self.state().figures.clone()
    }

    /// Units the log's own threads could not queue (the router's queue
    /// was full).
    pub(crate) fn router_dropped(&self) -> u64 {
        self.inner.router_drops.dropped()
    }

    pub(crate) fn router_depth(&self) -> usize {
        self.inner.router_drops.depth()
    }
}

/// Where `config`'s relative file sinks go.
fn logging_dir(config: &LoggingConfig, options: &OplogOptions) -> std::path::PathBuf {
    config
        .dir
        .clone()
        .unwrap_or_else(|| options.default_dir.clone())
}

fn route_options(config: &LoggingConfig, options: &OplogOptions, plans: &[Plan]) -> RouteOptions {
    RouteOptions {
        slow_threshold: config.slow_threshold,
        node: options.node.clone(),
        wanted: plans
            .iter()
            .flat_map(|plan| plan.filter.logs.iter().copied())
            .collect(),
    }
}

/// Opens every planned sink and starts its thread; keeps the counters of
/// a sink of the same name in `previous`.
fn open_routes(
    plans: &[Plan],
    config: &LoggingConfig,
    options: &OplogOptions,
    previous: &[SinkFigures],
    report: &Submitter,
) -> Result<(Routes, Vec<SinkFigures>), OplogError> {
    let mut sinks = Vec::with_capacity(plans.len());
    let mut figures = Vec::with_capacity(plans.len());
    for plan in plans {
        let sink = (options.opener)(plan)
            .map_err(|e| OplogError::Open(format!("logging sink {:?}: {e}", plan.name)))?;
        let stats = previous
            .iter()
            .find(|f| f.name == plan.name)
            .map(|f| f.stats.clone())
            .unwrap_or_default();
        let (tx, rx) = queue::bounded(plan.queue, plan.overflow);
        let thread = runner::spawn(plan.name.clone(), sink, rx, stats.clone(), report.clone())
            .map_err(|e| {
                OplogError::Open(format!("cannot start logging sink {:?}: {e}", plan.name))
            })?;
        figures.push(SinkFigures {
            name: plan.name.clone(),
            stats: stats.clone(),
            queue: tx.counters(),
        });
        sinks.push(SinkHandle {
            name: plan.name.clone(),
            filter: plan.filter.clone(),
            tx,
            stats,
            stalled: std::cell::Cell::new(false),
            _thread: thread,
        });
    }
    let routes = Routes {
        options: route_options(config, options, plans),
        sinks,
    };
    Ok((routes, figures))
}

fn run_router(rx: &queue::Writer<Item>, mut routes: Routes) {
    super::layer::mark_internal();
    let mut items = Vec::with_capacity(256);
    while rx.next_batch(&mut items, 256, Duration::from_secs(1)) {
        for item in items.drain(..) {
            match item {
                Item::Unit(unit) => {
                    for entry in route::entries(&unit, &routes.options) {
                        dispatch(&routes, Arc::new(entry));
                    }
                }
                Item::Flush(done) => {
                    flush_all(&routes.sinks, Duration::from_secs(30));
                    let _ = done.send(());
                }
                Item::Reopen => {
                    for sink in &routes.sinks {
                        let handed = sink.hand(Msg::Reopen);
                        tell_stall(&routes, sink, &handed);
                    }
                }
                Item::Swap(new, done) => {
                    let old = std::mem::replace(&mut routes, *new);
                    flush_all(&old.sinks, Duration::from_secs(5));
                    // Dropping the senders ends the old sinks' threads
                    // once their queues are empty.
                    drop(old);
                    let _ = done.send(());
                }
            }
        }
    }
    flush_all(&routes.sinks, Duration::from_secs(30));
}

fn dispatch(routes: &Routes, entry: Arc<Entry>) {
    for sink in &routes.sinks {
        if sink.filter.accepts(&entry) {
            let handed = sink.hand(Msg::Entry(entry.clone()));
            tell_stall(routes, sink, &handed);
        }
    }
}

/// Says in the other sinks' error logs that a sink stalled or writes
/// again. The entry reaches the stalled sink too, which drops it without
/// waiting.
fn tell_stall(routes: &Routes, sink: &SinkHandle, handed: &Handed) {
    use super::entry::Level;
    use super::event::{Event, Value};
    let (level, message) = match handed {
        Handed::Stalled => (
            Level::Error,
            format!(
                "log sink {} stalled: its queue stayed full for {STALL:?} (a write or open that does not return); its entries are dropped and counted until it takes them again",
                sink.name
            ),
        ),
        Handed::Recovered => (
            Level::Info,
            format!(
                "log sink {} takes entries again ({} dropped in all while it stalled)",
                sink.name,
                sink.stats.stalled.load(Ordering::Relaxed)
            ),
        ),
        Handed::Queued | Handed::Dropped => return,
    };
    let event =
        Event::new(level, "joblog_oplog", message).with("sink", Value::Str(sink.name.clone()));
    for entry in route::entries(&Arc::new(Unit::server_event(event)), &routes.options) {
        dispatch(routes, Arc::new(entry));
    }
}

/// Flushes every sink at once and waits for all, up to `timeout` in all.
/// A stalled sink is not waited for.
fn flush_all(sinks: &[SinkHandle], timeout: Duration) {
    let deadline = Instant::now() + timeout;
    let mut waiting = Vec::with_capacity(sinks.len());
    for sink in sinks {
        let (done, flushed) = mpsc::channel();
        if matches!(
            sink.hand(Msg::Flush(done)),
            Handed::Queued | Handed::Recovered
        ) {
            waiting.push(flushed);
        }
    }
    for flushed in waiting {
        let left = deadline.saturating_duration_since(Instant::now());
        let _ = flushed.recv_timeout(left);
    }
}
