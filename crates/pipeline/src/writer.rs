//! The one writer of a store: commits whatever is waiting, in one
//! transaction, as soon as the previous commit is done.
//!
//! Producers hand over records through a lock-free channel and never touch
//! the disk. Memory is bounded by a byte budget: a producer first takes
//! permits for the bytes it sends and the writer gives them back after the
//! commit, so when the writer falls behind producers wait (and stop reading
//! their job's pipes) instead of buffering without limit. There is no
//! timer: when idle a record costs one commit; under load batches grow by
//! themselves up to the size bound.
//!
//! Fair under a flood: a job holds at most half of the budget (its
//! [`JobShare`]), so a job writing as fast as it can waits at its own
//! share while others' records still get permits; and the writer takes a
//! job's records past a quarter of a batch only after everyone else's
//! (`batching`), so another job's line goes into the next commit instead
//! of queueing behind the flood. That next commit waits for the one in
//! flight, so while others' lines or requests come in beside a flood a
//! batch is no larger than what the store commits in about 20 ms (`pace`).

mod batching;
mod pace;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use joblog_core::{Backoff, JobId, LogSummary, Record};
use joblog_store::{Committed, Outcome, StoreError, StoreWriter, WriteOp};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use tokio::sync::{broadcast, oneshot, Semaphore};

use crate::PipelineError;

#[derive(Debug, Clone)]
pub struct PipelineConfig {
    /// Most records committed in one transaction.
    pub max_batch_records: usize,
    /// Most message bytes committed in one transaction.
    pub max_batch_bytes: usize,
    /// Bytes of records handed over but not yet committed, at most.
    pub memory_budget: usize,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            max_batch_records: 20_000,
            max_batch_bytes: 8 << 20,
            memory_budget: 16 << 20,
        }
    }
}

struct Msg {
    op: WriteOp,
    reply: Option<oneshot::Sender<Result<Outcome, PipelineError>>>,
    permits: u32,
    /// The job's share its permits were also taken from.
    share: Option<Arc<Semaphore>>,
}

impl batching::Weighed for Msg {
    fn log_of(&self) -> Option<JobId> {
        self.op.log_of()
    }
    fn records(&self) -> usize {
        self.op.record_count()
    }
    fn bytes(&self) -> usize {
        self.permits as usize
    }
}

/// A job's part of the pipeline's memory budget: half of it, so that one
/// job cannot hold all of it. One per running job, made by
/// [`Pipeline::job_share`].
#[derive(Debug, Clone)]
pub struct JobShare {
    permits: Arc<Semaphore>,
}

// `Close` is sent once per pipeline: boxing every op instead would put an
// allocation on the record path.
#[allow(clippy::large_enum_variant)]
enum Envelope {
    Op(Msg),
    Close,
}

#[derive(Clone)]
struct Metrics {
    records: Counter,
    bytes: Counter,
    commits: Counter,
    errors: Counter,
    batch_records: Histogram,
    commit_seconds: Histogram,
    pending_bytes: Gauge,
    budget_bytes: Gauge,
    healthy: Gauge,
    full: Gauge,
}

impl Metrics {
    fn new(registry: &mut Registry) -> Self {
        let m = Metrics {
            records: Counter::default(),
            bytes: Counter::default(),
            commits: Counter::default(),
            errors: Counter::default(),
            batch_records: Histogram::new(joblog_core::exponential_buckets(1.0, 4.0, 9)),
            commit_seconds: Histogram::new(joblog_core::exponential_buckets(0.0001, 3.0, 12)),
            pending_bytes: Gauge::default(),
            budget_bytes: Gauge::default(),
            healthy: Gauge::default(),
            full: Gauge::default(),
        };
        let r = registry;
        r.register(
            "joblog_log_records_written",
            "Log records committed",
            m.records.clone(),
        );
        r.register(
            "joblog_log_bytes_written",
            "Message bytes of log records committed",
            m.bytes.clone(),
        );
        r.register(
            "joblog_store_commits",
            "Transactions committed by the writer",
            m.commits.clone(),
        );
        r.register(
            "joblog_store_write_errors",
            "Failed write transactions (retried)",
            m.errors.clone(),
        );
        r.register(
            "joblog_store_batch_records",
            "Records per committed batch",
            m.batch_records.clone(),
        );
        r.register(
            "joblog_store_commit_seconds",
            "Time to apply and commit one batch",
            m.commit_seconds.clone(),
        );
        r.register(
            "joblog_pipeline_pending_bytes",
            "Bytes handed to the writer and not yet committed",
            m.pending_bytes.clone(),
        );
        r.register(
            "joblog_pipeline_budget_bytes",
            "The pipeline's memory budget: pending bytes above it hold the jobs' pipes",
            m.budget_bytes.clone(),
        );
        r.register(
            "joblog_store_healthy",
            "1 when the last write succeeded, 0 while the store is failing",
            m.healthy.clone(),
        );
        r.register(
            "joblog_store_full",
            "1 while the store's writes fail because its disk is full",
            m.full.clone(),
        );
        m.healthy.set(1);
        m
    }
}

/// Whether the store accepts writes, for `/healthz`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    Ok,
    Failing(String),
    /// Failing for want of disk space under the store.
    Full(String),
}

struct Shared {
    tx: Mutex<Option<mpsc::Sender<Envelope>>>,
    budget: Arc<Semaphore>,
    share_total: usize,
    commits: broadcast::Sender<Arc<Committed>>,
    healthy: AtomicBool,
    /// Whether the last failure was the store's disk being full.
    full: AtomicBool,
    last_error: Mutex<Option<String>>,
    pending: AtomicU64,
}

/// Handle producers use to reach the writer. Cheap to clone.
#[derive(Clone)]
pub struct Pipeline {
    shared: Arc<Shared>,
    tx: mpsc::Sender<Envelope>,
}

/// The writer thread; join it after [`Pipeline::close`] to know that every
/// record handed over has been committed.
pub struct WriterThread(JoinHandle<()>);

impl WriterThread {
    pub fn join(self) {
        let _ = self.0.join();
    }
}

impl Pipeline {
    pub fn start(
        writer: Box<dyn StoreWriter>,
        config: PipelineConfig,
        registry: &mut Registry,
    ) -> (Pipeline, WriterThread) {
        let (tx, rx) = mpsc::channel();
        let budget_total = config.memory_budget.clamp(1 << 16, u32::MAX as usize >> 1);
        let shared = Arc::new(Shared {
            tx: Mutex::new(Some(tx.clone())),
            budget: Arc::new(Semaphore::new(budget_total)),
            share_total: budget_total / 2,
            commits: broadcast::channel(1024).0,
            healthy: AtomicBool::new(true),
            full: AtomicBool::new(false),
            last_error: Mutex::new(None),
            pending: AtomicU64::new(0),
        });
        let metrics = Metrics::new(registry);
        metrics.budget_bytes.set(budget_total as i64);
        let thread_shared = shared.clone();
        let handle = std::thread::Builder::new()
            .name("joblog-writer".into())
            .spawn(move || run_writer(writer, rx, config, thread_shared, metrics))
            .expect("spawning the writer thread");
        (Pipeline { shared, tx }, WriterThread(handle))
    }

    /// A running job's part of the memory budget, for its appends.
    pub fn job_share(&self) -> JobShare {
        JobShare {
            permits: Arc::new(Semaphore::new(self.shared.share_total)),
        }
    }

    /// Hands records of `job` to the writer. Waits (without blocking a
    /// thread) only while the job's share or the whole memory budget is
    /// used up.
    pub async fn append(
        &self,
        share: &JobShare,
        job: JobId,
        records: Vec<Record>,
        summary: LogSummary,
    ) -> Result<(), PipelineError> {
        if records.is_empty() {
            return Ok(());
        }
        let bytes: usize = records.iter().map(Record::size).sum();
        // Its share first: a job over it waits here, not in the budget's
        // queue ahead of other jobs.
        let permits = bytes.min(self.shared.share_total) as u32;
        share
            .permits
            .acquire_many(permits)
            .await
            .map_err(|_| PipelineError::Closed)?
            .forget();
        match self.shared.budget.acquire_many(permits).await {
            Ok(taken) => taken.forget(),
            Err(_) => {
                share.permits.add_permits(permits as usize);
                return Err(PipelineError::Closed);
            }
        }
        self.shared
            .pending
            .fetch_add(u64::from(permits), Ordering::Relaxed);
        let msg = Msg {
            op: WriteOp::Append {
                job,
                records,
                summary,
            },
            reply: None,
            permits,
            share: Some(share.permits.clone()),
        };
        self.tx.send(Envelope::Op(msg)).map_err(|_| {
            self.shared.budget.add_permits(permits as usize);
            share.permits.add_permits(permits as usize);
            PipelineError::Closed
        })
    }

    /// Applies one op in the next batch and returns its outcome once
    /// committed. Callers use the typed calls of `requests.rs`.
    pub(crate) async fn execute(&self, op: WriteOp) -> Result<Outcome, PipelineError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Envelope::Op(Msg {
                op,
                reply: Some(reply),
                permits: 0,
                share: None,
            }))
            .map_err(|_| PipelineError::Closed)?;
        rx.await.map_err(|_| PipelineError::Closed)?
    }

    /// Every commit, as it happens. A receiver that lags gets `Lagged` and
    /// should re-read what it follows from the store.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Committed>> {
        self.shared.commits.subscribe()
    }

    /// The sender behind [`Pipeline::subscribe`], so that commits made by
    /// other nodes (which a shared store reports) reach the same followers.
    pub fn commit_sender(&self) -> broadcast::Sender<Arc<Committed>> {
        self.shared.commits.clone()
    }

    pub fn health(&self) -> Health {
        if self.shared.healthy.load(Ordering::Relaxed) {
            Health::Ok
        } else {
            let e = self
                .shared
                .last_error
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let why = e.clone().unwrap_or_else(|| "store failing".into());
            match self.shared.full.load(Ordering::Relaxed) {
                true => Health::Full(why),
                false => Health::Failing(why),
            }
        }
    }

    /// Stops taking ops. Everything sent before is still committed; the
    /// writer thread ends after it.
    pub fn close(&self) {
        if let Some(tx) = self
            .shared
            .tx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            let _ = tx.send(Envelope::Close);
        }
    }
}

fn run_writer(
    mut writer: Box<dyn StoreWriter>,
    rx: mpsc::Receiver<Envelope>,
    config: PipelineConfig,
    shared: Arc<Shared>,
    metrics: Metrics,
) {
    let mut pace = pace::Pace::new(batching::Limits {
        records: config.max_batch_records,
        bytes: config.max_batch_bytes,
    });
    let mut waiting: VecDeque<Msg> = VecDeque::new();
    let mut batch: Vec<Msg> = Vec::new();
    let mut closing = false;
    // When a batch last carried someone else's op beside a flood.
    let mut behind_flood: Option<Instant> = None;
    loop {
        if waiting.is_empty() {
            // Once Close was asked, whatever raced in after it is still
            // committed, so nothing handed over is lost.
            let next = if closing {
                rx.try_recv().ok()
            } else {
                rx.recv().ok()
            };
            match next {
                Some(Envelope::Op(m)) => waiting.push_back(m),
                Some(Envelope::Close) | None if !closing => {
                    closing = true;
                    continue;
                }
                Some(Envelope::Close) | None => break,
            }
        }
        // All that waits, so that the batch is chosen among every job's
        // (it is in memory either way: the budget bounds it).
        while let Ok(envelope) = rx.try_recv() {
            match envelope {
                Envelope::Op(m) => waiting.push_back(m),
                Envelope::Close => closing = true,
            }
        }
        // A flood alone, or floods side by side, keep full batches: nobody
        // else is waiting behind their commits.
        let others = behind_flood.is_some_and(|at| at.elapsed() < pace::RECENTLY);
        if batching::next_batch(&mut waiting, pace.limits(others), &mut batch) {
            behind_flood = Some(Instant::now());
        }
        let mut inbox = Inbox {
            rx: &rx,
            waiting: &mut waiting,
            closing: &mut closing,
        };
        commit_batch(
            writer.as_mut(),
            &mut batch,
            &mut inbox,
            &shared,
            &metrics,
            &mut pace,
        );
    }
}

/// What arrives while a batch is applied: the writer's channel, and where
/// its ops wait their turn.
struct Inbox<'a> {
    rx: &'a mpsc::Receiver<Envelope>,
    waiting: &'a mut VecDeque<Msg>,
    closing: &'a mut bool,
}

impl Inbox<'_> {
    /// Waits `delay` before a failed batch is tried again, refusing at
    /// once the clients' requests that arrive meanwhile (they would wait
    /// behind the batch otherwise); the rest waits its turn.
    fn wait_refusing(&mut self, delay: Duration, e: &StoreError) {
        let until = Instant::now() + delay;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            match self.rx.recv_timeout(left) {
                Ok(Envelope::Op(m)) if m.op.refused_while_failing() => {
                    if let Some(reply) = m.reply {
                        let _ = reply.send(Err(PipelineError::Store(refusal(e))));
                    }
                }
                Ok(Envelope::Op(m)) => self.waiting.push_back(m),
                Ok(Envelope::Close) => *self.closing = true,
                Err(mpsc::RecvTimeoutError::Timeout) => return,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(left);
                    return;
                }
            }
        }
    }
}

fn commit_batch(
    writer: &mut dyn StoreWriter,
    batch: &mut Vec<Msg>,
    inbox: &mut Inbox<'_>,
    shared: &Shared,
    metrics: &Metrics,
    pace: &mut pace::Pace,
) {
    // The ops go to the store; the reply slots and permits stay here.
    let (mut ops, mut waiting): (Vec<WriteOp>, Vec<Waiting>) = batch
        .drain(..)
        .map(|m| (m.op, (m.reply, m.permits, m.share)))
        .unzip();
    let records = records_of(&ops);
    let mut backoff = store_backoff();
    let outcomes = loop {
        let started = Instant::now();
        match writer.apply(&ops) {
            Ok(outcomes) => {
                let took = started.elapsed();
                metrics.commit_seconds.observe(took.as_secs_f64());
                let bytes = waiting.iter().map(|(_, permits, _)| *permits as usize);
                pace.observe(records, bytes.sum(), took);
                mark_healthy(shared, metrics);
                break outcomes
                    .into_iter()
                    .map(Ok)
                    .collect::<Vec<Result<Outcome, PipelineError>>>();
            }
            Err(e) if e.is_transient() => {
                // The store is locked, full or away: hold the batch (and,
                // through the budget, the producers) and try again; but
                // answer the clients who wait now, and drop their ops.
                metrics.errors.inc();
                mark_failing(shared, metrics, &e);
                // Unless the attempt may have committed: then the same ops
                // go again, and the store answers them from what it wrote.
                if !writer.may_have_committed() {
                    refuse_requests(&mut ops, &mut waiting, &e);
                    if ops.is_empty() {
                        // All were refused; nothing holds a permit.
                        return;
                    }
                }
                let delay = backoff.next_delay();
                tracing::error!(error = %e, ops = ops.len(), "store write failed; retrying in {delay:?}");
                inbox.wait_refusing(delay, &e);
            }
            Err(e) => {
                // Not transient: find the op at fault by applying them one
                // by one, so one bad op cannot hold everybody else hostage.
                metrics.errors.inc();
                tracing::error!(error = %e, ops = ops.len(), "store write failed; applying ops one by one");
                break apply_one_by_one(writer, &ops, shared, metrics);
            }
        }
    };

    let mut committed = Committed::default();
    let mut permits = 0usize;
    for (op, outcome) in ops.iter().zip(&outcomes) {
        let Ok(outcome) = outcome else { continue };
        committed.add(op, outcome);
        if let WriteOp::Append { records, .. } = op {
            metrics.records.inc_by(records.len() as u64);
            metrics
                .bytes
                .inc_by(records.iter().map(|r| r.message.len() as u64).sum());
        }
    }
    // A writer that cannot tell leaves it to any end.
    committed.deliveries = writer
        .take_queued_deliveries()
        .unwrap_or(committed.reset || !committed.finished.is_empty());
    metrics.batch_records.observe(records as f64);
    metrics.commits.inc();
    for ((reply, op_permits, share), outcome) in waiting.into_iter().zip(outcomes) {
        permits += op_permits as usize;
        if let Some(share) = share {
            share.add_permits(op_permits as usize);
        }
        if let Some(reply) = reply {
            let _ = reply.send(outcome);
        }
    }
    if permits > 0 {
        shared.pending.fetch_sub(permits as u64, Ordering::Relaxed);
        shared.budget.add_permits(permits);
    }
    metrics
        .pending_bytes
        .set(shared.pending.load(Ordering::Relaxed) as i64);
    if !committed.is_empty() {
        let _ = shared.commits.send(Arc::new(committed));
    }
}

fn records_of(ops: &[WriteOp]) -> usize {
    ops.iter()
        .map(|o| match o {
            WriteOp::Append { records, .. } => records.len(),
            _ => 0,
        })
        .sum()
}

fn apply_one_by_one(
    writer: &mut dyn StoreWriter,
    ops: &[WriteOp],
    shared: &Shared,
    metrics: &Metrics,
) -> Vec<Result<Outcome, PipelineError>> {
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        let mut backoff = store_backoff();
        let r = loop {
            match writer.apply(std::slice::from_ref(op)) {
                Ok(mut o) => {
                    mark_healthy(shared, metrics);
                    break o.pop().ok_or_else(|| {
                        PipelineError::Store(StoreError::Database("no outcome".into()))
                    });
                }
                Err(e)
                    if e.is_transient()
                        && op.refused_while_failing()
                        && !writer.may_have_committed() =>
                {
                    mark_failing(shared, metrics, &e);
                    break Err(PipelineError::Store(refusal(&e)));
                }
                Err(e) if e.is_transient() => {
                    mark_failing(shared, metrics, &e);
                    std::thread::sleep(backoff.next_delay());
                }
                Err(e) => {
                    tracing::error!(error = %e, op = op.name(), "write op rejected by the store");
                    break Err(PipelineError::Store(e));
                }
            }
        };
        out.push(r);
    }
    out
}

/// How the writer waits between attempts at a transient store failure.
fn store_backoff() -> Backoff {
    Backoff::new(Duration::from_millis(50), Duration::from_secs(5))
}

/// What a reply slot, the op's permits and its job's share hold while
/// the batch is applied.
type Waiting = (
    Option<oneshot::Sender<Result<Outcome, PipelineError>>>,
    u32,
    Option<Arc<Semaphore>>,
);

/// Takes out of a batch that failed (and so applied nothing) the ops a
/// client waits for ([`WriteOp::refused_while_failing`]), answering each
/// with the store's error: the client hears within the retry's delay, and
/// the op is never applied after it gave up.
fn refuse_requests(ops: &mut Vec<WriteOp>, waiting: &mut Vec<Waiting>, e: &StoreError) {
    let mut i = 0;
    while i < ops.len() {
        if !ops[i].refused_while_failing() {
            i += 1;
            continue;
        }
        ops.remove(i);
        let (reply, _, _) = waiting.remove(i);
        if let Some(reply) = reply {
            let _ = reply.send(Err(PipelineError::Store(refusal(e))));
        }
    }
}

/// The error a refused op is answered with: the store's, of the same kind.
fn refusal(e: &StoreError) -> StoreError {
    match e {
        StoreError::Full(why) => StoreError::Full(why.clone()),
        StoreError::Unavailable(why) => StoreError::Unavailable(why.clone()),
        other => StoreError::Unavailable(other.to_string()),
    }
}

fn mark_healthy(shared: &Shared, metrics: &Metrics) {
    if !shared.healthy.swap(true, Ordering::Relaxed) {
        tracing::info!("store writes succeed again");
        metrics.healthy.set(1);
        metrics.full.set(0);
        shared.full.store(false, Ordering::Relaxed);
    }
}

fn mark_failing(shared: &Shared, metrics: &Metrics, e: &StoreError) {
    shared.full.store(e.is_full(), Ordering::Relaxed);
    shared.healthy.store(false, Ordering::Relaxed);
    metrics.healthy.set(0);
    metrics.full.set(i64::from(e.is_full()));
    *shared.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
}

#[cfg(test)]
mod tests;
