//! One sink's bounded queue: many producer threads push, one writer thread
//! drains in batches. What happens when it is full is the sink's explicit
//! policy ([`Overflow`]), and every dropped item is counted.
//!
//! Built on std's bounded channel (lock-free for pushes and pops; a thread
//! parks only when `Block` finds the queue full), so producers share no
//! lock, and items of one producer leave in the order it pushed them.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a push does when the queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Overflow {
    /// Wait for room: nothing is lost, the producer slows to the sink.
    Block,
    /// Drop the item being pushed and count it: the producer never waits.
    DropNewest,
}

impl Overflow {
    /// `block` or `drop_newest`, as a configuration names them.
    pub fn parse(s: &str) -> Result<Overflow, String> {
        match s {
            "block" => Ok(Overflow::Block),
            "drop_newest" => Ok(Overflow::DropNewest),
            other => Err(format!(
                "unknown queue policy '{other}' (expected block or drop_newest)"
            )),
        }
    }
}

/// What became of a push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    Queued,
    /// The queue was full and the policy is [`Overflow::DropNewest`].
    Dropped,
    /// The writer is gone (the sink was stopped): the item is dropped and
    /// counted.
    Closed,
}

/// A queue's live figures, shared by both ends (and metrics).
#[derive(Debug, Default)]
pub struct Counters {
    depth: AtomicUsize,
    dropped: AtomicU64,
}

impl Counters {
    /// Items dropped so far (full queue or stopped writer).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Items waiting for the writer, counting those of producers that
    /// `Block` holds at a full queue.
    pub fn depth(&self) -> usize {
        self.depth.load(Ordering::Relaxed)
    }
}

/// The producers' end; clone it for each thread.
#[derive(Debug)]
pub struct Sender<T> {
    tx: SyncSender<T>,
    policy: Overflow,
    counters: Arc<Counters>,
}

/// How often a busy writer looks for items. Each look is a wake-up of
/// the writer's thread, taken from the request threads on a small
/// machine: 4 ms makes it 250 a second per busy writer (1 ms made 1,000,
/// for no line that anyone reads sooner), and bounds what a SIGKILL loses
/// to about two ticks (docs/logging.md).
pub const POLL: Duration = Duration::from_millis(4);
/// Empty looks (20 ms) after which a writer sleeps until an item wakes it.
pub const IDLE_POLLS: u32 = 5;

/// The writer's end.
#[derive(Debug)]
pub struct Writer<T> {
    rx: Receiver<T>,
    counters: Arc<Counters>,
    /// Empty looks in a row since the last item.
    empty_polls: Cell<u32>,
}

/// A queue of at most `capacity` items (at least 1).
pub fn bounded<T>(capacity: usize, policy: Overflow) -> (Sender<T>, Writer<T>) {
    let (tx, rx) = mpsc::sync_channel(capacity.max(1));
    let counters = Arc::new(Counters::default());
    (
        Sender {
            tx,
            policy,
            counters: counters.clone(),
        },
        Writer {
            rx,
            counters,
            empty_polls: Cell::new(0),
        },
    )
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            tx: self.tx.clone(),
            policy: self.policy,
            counters: self.counters.clone(),
        }
    }
}

impl<T> Sender<T> {
    pub fn push(&self, item: T) -> Pushed {
        self.push_as(item, self.policy)
    }

    /// Pushes under another policy than the queue's: `Block` for what
    /// must arrive (a flush), `DropNewest` for a thread that must never
    /// wait.
    pub fn push_as(&self, item: T, policy: Overflow) -> Pushed {
        // Counted before the send, so the writer never sees a depth
        // below zero.
        self.counters.depth.fetch_add(1, Ordering::Relaxed);
        let pushed = match policy {
            Overflow::Block => match self.tx.send(item) {
                Ok(()) => Pushed::Queued,
                Err(_) => Pushed::Closed,
            },
            Overflow::DropNewest => match self.tx.try_send(item) {
                Ok(()) => Pushed::Queued,
                Err(TrySendError::Full(_)) => Pushed::Dropped,
                Err(TrySendError::Disconnected(_)) => Pushed::Closed,
            },
        };
        if pushed != Pushed::Queued {
            self.counters.depth.fetch_sub(1, Ordering::Relaxed);
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
        }
        pushed
    }

    /// Pushes, waiting for room at most `limit`: a `Block` push that must
    /// never wait on a writer that makes no progress (the router, handing
    /// entries to a sink that may be stuck). `Dropped` when no room came.
    pub fn push_within(&self, item: T, limit: Duration) -> Pushed {
        self.counters.depth.fetch_add(1, Ordering::Relaxed);
        let deadline = Instant::now() + limit;
        let mut item = item;
        let mut nap = Duration::from_micros(50);
        let pushed = loop {
            match self.tx.try_send(item) {
                Ok(()) => break Pushed::Queued,
                Err(TrySendError::Disconnected(_)) => break Pushed::Closed,
                Err(TrySendError::Full(back)) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break Pushed::Dropped;
                    }
                    item = back;
                    // Only while the queue is full: a writer that keeps up
                    // never lets a push get here.
                    std::thread::sleep(nap.min(left));
                    nap = (nap * 2).min(POLL);
                }
            }
        };
        if pushed != Pushed::Queued {
            self.counters.depth.fetch_sub(1, Ordering::Relaxed);
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
        }
        pushed
    }

    pub fn dropped(&self) -> u64 {
        self.counters.dropped()
    }

    pub fn depth(&self) -> usize {
        self.counters.depth()
    }

    pub fn policy(&self) -> Overflow {
        self.policy
    }

    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }
}

impl<T> Writer<T> {
    /// Waits up to `wait` for an item, then takes whatever else is waiting,
    /// up to `max` in all, into `batch`. False once every sender is gone and
    /// the queue is empty: the writer's work is done.
    ///
    /// While items keep coming the writer looks for them every [`POLL`]
    /// instead of sleeping in the channel, so a producer never has to
    /// wake it: that wake-up (a futex call per item, on the producer's
    /// thread and the writer's) was most of what logging cost a request
    /// (`joblog bench oplog`, docs/benchmarks.md). A batch then holds
    /// what came in one tick. After [`IDLE_POLLS`] empty looks the writer
    /// sleeps in the channel until an item wakes it, so an idle server
    /// does not tick.
    pub fn next_batch(&self, batch: &mut Vec<T>, max: usize, wait: Duration) -> bool {
        let before = batch.len();
        let deadline = Instant::now() + wait;
        loop {
            match self.rx.try_recv() {
                Ok(item) => {
                    batch.push(item);
                    break;
                }
                Err(TryRecvError::Disconnected) => return false,
                Err(TryRecvError::Empty) => {}
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            let polls = self.empty_polls.get();
            if polls < IDLE_POLLS {
                self.empty_polls.set(polls + 1);
                std::thread::sleep(POLL.min(left));
                continue;
            }
            match self.rx.recv_timeout(left) {
                Ok(item) => {
                    batch.push(item);
                    break;
                }
                Err(RecvTimeoutError::Timeout) => return true,
                Err(RecvTimeoutError::Disconnected) => return false,
            }
        }
        self.empty_polls.set(0);
        while batch.len() - before < max.max(1) {
            match self.rx.try_recv() {
                Ok(item) => batch.push(item),
                Err(_) => break,
            }
        }
        self.counters
            .depth
            .fetch_sub(batch.len() - before, Ordering::Relaxed);
        true
    }

    pub fn dropped(&self) -> u64 {
        self.counters.dropped()
    }

    pub fn depth(&self) -> usize {
        self.counters.depth()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAIT: Duration = Duration::from_millis(50);

    fn drain<T>(w: &Writer<T>) -> Vec<T> {
        let mut all = Vec::new();
        let mut batch = Vec::new();
        while w.depth() > 0 {
            w.next_batch(&mut batch, 1000, WAIT);
            all.append(&mut batch);
        }
        all
    }

    #[test]
    fn drop_newest_keeps_the_first_and_counts_the_rest() {
        let (tx, w) = bounded(3, Overflow::DropNewest);
        let pushed: Vec<Pushed> = (0..5).map(|i| tx.push(i)).collect();
        assert_eq!(pushed[..3], [Pushed::Queued; 3]);
        assert_eq!(pushed[3..], [Pushed::Dropped; 2]);
        assert_eq!((tx.dropped(), tx.depth()), (2, 3));
        assert_eq!(drain(&w), vec![0, 1, 2]);
        assert_eq!((w.dropped(), w.depth()), (2, 0));
        // Room again: pushes are queued again.
        assert_eq!(tx.push(9), Pushed::Queued);
    }

    /// A writer that takes nothing holds a timed push only up to its
    /// limit; one that drains lets it through.
    #[test]
    fn push_within_gives_up_on_a_writer_that_takes_nothing() {
        let (tx, w) = bounded(1, Overflow::Block);
        assert_eq!(tx.push_within(1, WAIT), Pushed::Queued);
        let started = Instant::now();
        assert_eq!(tx.push_within(2, WAIT), Pushed::Dropped);
        assert!(started.elapsed() >= WAIT);
        assert_eq!((tx.dropped(), tx.depth()), (1, 1));
        let drainer = std::thread::spawn(move || {
            std::thread::sleep(WAIT / 5);
            drain(&w)
        });
        assert_eq!(tx.push_within(3, Duration::from_secs(60)), Pushed::Queued);
        assert_eq!(drainer.join().unwrap()[0], 1);
    }

    #[test]
    fn block_waits_for_room_and_drops_nothing() {
        let (tx, w) = bounded(2, Overflow::Block);
        let producer = std::thread::spawn(move || {
            for i in 0..100 {
                assert_eq!(tx.push(i), Pushed::Queued);
            }
            tx.dropped()
        });
        let mut got = Vec::new();
        let mut batch = Vec::new();
        while w.next_batch(&mut batch, 10, WAIT) {
            got.append(&mut batch);
        }
        assert_eq!(producer.join().unwrap(), 0);
        assert_eq!(got, (0..100).collect::<Vec<_>>());
        assert_eq!((w.dropped(), w.depth()), (0, 0));
    }

    #[test]
    fn a_push_after_the_writer_stopped_is_counted_not_lost_silently() {
        for policy in [Overflow::Block, Overflow::DropNewest] {
            let (tx, w) = bounded(4, policy);
            drop(w);
            assert_eq!(tx.push(1), Pushed::Closed);
            assert_eq!((tx.dropped(), tx.depth()), (1, 0));
        }
    }

    /// 8 threads × 100,000 items through a small queue with `Block`:
    /// every item arrives once, and each thread's in the order it pushed.
    #[test]
    fn eight_blocking_producers_lose_nothing_and_keep_their_order() {
        const THREADS: u32 = 8;
        const EACH: u32 = 100_000;
        let (tx, w) = bounded::<(u32, u32)>(1024, Overflow::Block);
        let producers: Vec<_> = (0..THREADS)
            .map(|t| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    for i in 0..EACH {
                        tx.push((t, i));
                    }
                })
            })
            .collect();
        drop(tx);
        let mut next = vec![0u32; THREADS as usize];
        let mut batch = Vec::new();
        let mut total = 0u64;
        while w.next_batch(&mut batch, 4096, WAIT) {
            for (t, i) in batch.drain(..) {
                assert_eq!(i, next[t as usize], "thread {t} out of order");
                next[t as usize] += 1;
                total += 1;
            }
        }
        for p in producers {
            p.join().unwrap();
        }
        assert_eq!(total, u64::from(THREADS * EACH));
        assert!(next.iter().all(|n| *n == EACH), "{next:?}");
        assert_eq!((w.dropped(), w.depth()), (0, 0));
    }

    #[test]
    fn policies_are_named_as_the_configuration_names_them() {
        assert_eq!(Overflow::parse("block"), Ok(Overflow::Block));
        assert_eq!(Overflow::parse("drop_newest"), Ok(Overflow::DropNewest));
        let e = Overflow::parse("drop_oldest").unwrap_err();
        assert!(
            e.contains("'drop_oldest'") && e.contains("block or drop_newest"),
            "{e}"
        );
    }
}
