//! The writer under a flood (a job's share and the batches' order) and
//! under a store that fails (what waits, what is refused).

use std::sync::{mpsc as std_mpsc, Arc, Mutex};
use std::time::Duration;

use joblog_core::{LogSummary, Record, Stream, Timestamp};
use joblog_store::{Outcome, StoreWriter, WriteOp};
use prometheus_client::registry::Registry;

use super::{Pipeline, PipelineConfig};

/// Each transaction's appends, as (job, records).
type Batches = Arc<Mutex<Vec<Vec<(i64, usize)>>>>;

/// A store that says when its first transaction begins, holds it until
/// told, and records the appends of each transaction as (job, records).
struct Held {
    first: Option<(std_mpsc::Sender<()>, std_mpsc::Receiver<()>)>,
    batches: Batches,
}

impl StoreWriter for Held {
    fn apply(&mut self, ops: &[WriteOp]) -> joblog_store::Result<Vec<Outcome>> {
        if let Some((holding, go)) = self.first.take() {
            let _ = holding.send(());
            let _ = go.recv();
        }
        self.batches.lock().unwrap().push(appends_of(ops));
        Ok(ops.iter().map(|_| Outcome::Done).collect())
    }
}

/// A transaction's appends, as (job, records).
fn appends_of(ops: &[WriteOp]) -> Vec<(i64, usize)> {
    ops.iter()
        .filter_map(|op| match op {
            WriteOp::Append { job, records, .. } => Some((*job, records.len())),
            _ => None,
        })
        .collect()
}

fn record(seq: u64, bytes: usize) -> Record {
    Record {
        seq,
        ts: Timestamp(1),
        stream: Stream::Output,
        message: "x".repeat(bytes),
        fields: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_waits_at_its_share_and_another_jobs_line_goes_into_the_next_commit() {
    let (go, held) = std_mpsc::channel();
    let (holding, writer_holds) = std_mpsc::channel();
    let batches = Arc::new(Mutex::new(Vec::new()));
    let (p, writer) = Pipeline::start(
        Box::new(Held {
            first: Some((holding, held)),
            batches: batches.clone(),
        }),
        PipelineConfig {
            max_batch_records: 20,
            max_batch_bytes: 8 << 20,
            memory_budget: 1 << 20,
        },
        &mut Registry::default(),
    );
    // Job 1's first line is in the first commit, which the store holds;
    // then it writes 10 KiB lines as fast as it can, one per append.
    let flood_share = p.job_share();
    p.append(
        &flood_share,
        1,
        vec![record(1, 10 << 10)],
        LogSummary::default(),
    )
    .await
    .unwrap();
    tokio::task::spawn_blocking(move || writer_holds.recv())
        .await
        .unwrap()
        .unwrap();
    let flood = {
        let (p, share) = (p.clone(), flood_share.clone());
        tokio::spawn(async move {
            for seq in 2..=200 {
                let r = record(seq, 10 << 10);
                p.append(&share, 1, vec![r], LogSummary::default())
                    .await
                    .unwrap();
            }
        })
    };
    // It stops at its share, half the budget, not at the whole budget.
    while flood_share.permits.available_permits() >= record(0, 10 << 10).size() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert!(!flood.is_finished());
    assert!(p.shared.budget.available_permits() >= (1 << 19) - (10 << 10));
    // Job 2's line is taken at once although the store is still held.
    let other = p.job_share();
    tokio::time::timeout(
        Duration::from_secs(30),
        p.append(&other, 2, vec![record(1, 10)], LogSummary::default()),
    )
    .await
    .expect("another job's append waited behind the flood")
    .unwrap();
    go.send(()).unwrap();
    flood.await.unwrap();
    p.close();
    tokio::task::spawn_blocking(move || writer.join())
        .await
        .unwrap();
    let batches = batches.lock().unwrap();
    // The first (held) commit had only the flood; job 2's line is in the
    // next, after the flood's part of a batch (a quarter: 5 records).
    assert!(batches[0].iter().all(|(job, _)| *job == 1), "{batches:?}");
    let second = &batches[1];
    let at = second.iter().position(|(job, _)| *job == 2);
    assert_eq!(at, Some(5), "{batches:?}");
    // Nothing lost, and the flood's lines all committed.
    let flooded: usize = batches
        .iter()
        .flatten()
        .filter(|(j, _)| *j == 1)
        .map(|(_, n)| n)
        .sum();
    assert_eq!(flooded, 200);
}

/// A store whose commits take 2.5 ms per 128 records: a full batch
/// (2,560) takes 50 ms, over twice the pace's target.
struct Slow {
    batches: Batches,
}

impl StoreWriter for Slow {
    fn apply(&mut self, ops: &[WriteOp]) -> joblog_store::Result<Vec<Outcome>> {
        let records = super::records_of(ops) as u64;
        std::thread::sleep(Duration::from_micros(2_500 * records / 128));
        self.batches.lock().unwrap().push(appends_of(ops));
        Ok(ops.iter().map(|_| Outcome::Done).collect())
    }
}

/// Batches of at most this many records: a trickle is 10 or fewer.
const SLOW_BATCH: usize = 2_560;

/// The batches (job, records) of 200 appends of 64 records of job 1 to a
/// slow store, handed over at once; with `beside`, job 2 meanwhile writes
/// a line every 10 ms (at most 5 in a full batch's 50 ms: a trickle).
async fn batches_on_a_slow_store(beside: bool) -> Vec<Vec<(i64, usize)>> {
    let batches = Arc::new(Mutex::new(Vec::new()));
    let (p, writer) = Pipeline::start(
        Box::new(Slow {
            batches: batches.clone(),
        }),
        PipelineConfig {
            max_batch_records: SLOW_BATCH,
            max_batch_bytes: 8 << 20,
            memory_budget: 16 << 20,
        },
        &mut Registry::default(),
    );
    let other = beside.then(|| {
        let p = p.clone();
        tokio::spawn(async move {
            let share = p.job_share();
            for seq in 1..=40 {
                p.append(&share, 2, vec![record(seq, 10)], LogSummary::default())
                    .await
                    .unwrap();
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    });
    let share = p.job_share();
    for n in 0..200 {
        let chunk = (1..=64).map(|i| record(n * 64 + i, 10)).collect();
        p.append(&share, 1, chunk, LogSummary::default())
            .await
            .unwrap();
    }
    if let Some(other) = other {
        other.await.unwrap();
    }
    p.close();
    tokio::task::spawn_blocking(move || writer.join())
        .await
        .unwrap();
    let batches = batches.lock().unwrap().clone();
    let flooded: usize = batches
        .iter()
        .flatten()
        .filter(|(j, _)| *j == 1)
        .map(|(_, n)| n)
        .sum();
    assert_eq!(flooded, 200 * 64, "{batches:?}");
    batches
}

fn size(batch: &[(i64, usize)]) -> usize {
    batch.iter().map(|(_, n)| n).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beside_a_flood_batches_keep_to_what_commits_in_the_target() {
    // Alone, the flood's batches are full: nobody waits behind them.
    let alone = batches_on_a_slow_store(false).await;
    let sizes: Vec<usize> = alone.iter().map(|b| size(b)).collect();
    let full = sizes.iter().filter(|n| **n == SLOW_BATCH).count();
    assert!(full >= 3, "{sizes:?}");
    // Another job's lines beside it: once a batch showed the store's pace
    // (50 ms for a full one), batches hold what commits in 20 ms, 40 % of
    // the bounds or less (less when the machine sleeps longer than asked).
    let beside = batches_on_a_slow_store(true).await;
    let sizes: Vec<usize> = beside.iter().map(|b| size(b)).collect();
    // The first batch where job 2's line rode beside the flood: a line
    // committed before the flood began (seen in CI, when the machine was
    // slow to start the flood) tells the writer of nobody waiting behind
    // one, and the flood's next batches are rightly full.
    let first = beside
        .iter()
        .position(|b| b.iter().any(|(j, _)| *j == 2) && b.iter().any(|(j, _)| *j == 1))
        .expect("job 2's lines committed beside the flood");
    // The pace learns from a batch filling half its bounds or more.
    let learnt = sizes
        .iter()
        .position(|n| *n >= SLOW_BATCH / 2)
        .expect("a batch to learn from");
    let flood_after: Vec<usize> = beside[first.max(learnt) + 1..]
        .iter()
        .filter(|b| b.iter().any(|(j, _)| *j == 1))
        .map(|b| size(b))
        .collect();
    assert!(flood_after.len() >= 5, "{sizes:?}");
    assert!(
        flood_after.iter().all(|n| *n <= SLOW_BATCH * 2 / 5),
        "{sizes:?}"
    );
}

/// A store whose disk is full while `full` is set: every transaction
/// fails whole; otherwise it records the ops it commits, by name.
struct Full {
    full: Arc<std::sync::atomic::AtomicBool>,
    committed: Arc<Mutex<Vec<&'static str>>>,
}

impl StoreWriter for Full {
    fn apply(&mut self, ops: &[WriteOp]) -> joblog_store::Result<Vec<Outcome>> {
        if self.full.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(joblog_store::StoreError::Full(
                "database or disk is full".into(),
            ));
        }
        self.committed
            .lock()
            .unwrap()
            .extend(ops.iter().map(WriteOp::name));
        Ok(ops.iter().map(|_| Outcome::Done).collect())
    }
}

/// With the disk full, a submission is answered at once with the store's
/// error and never applied, whether it came before the failure was known
/// (in the failing batch) or during the retries; a job's records wait and
/// are committed once space returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_disk_full_submissions_are_refused_at_once_and_records_wait() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let full = Arc::new(AtomicBool::new(true));
    let committed = Arc::new(Mutex::new(Vec::new()));
    let (p, writer) = Pipeline::start(
        Box::new(Full {
            full: full.clone(),
            committed: committed.clone(),
        }),
        PipelineConfig {
            max_batch_records: 20,
            max_batch_bytes: 8 << 20,
            memory_budget: 1 << 20,
        },
        &mut Registry::default(),
    );
    let share = p.job_share();
    p.append(&share, 1, vec![record(1, 10)], LogSummary::default())
        .await
        .unwrap();
    // Several rounds of the writer's backoff (50 ms, doubling): some of
    // these meet the failing batch, the later ones its retries.
    for round in 0..6 {
        let started = std::time::Instant::now();
        let refused = tokio::time::timeout(
            Duration::from_secs(2),
            p.insert_job(None, joblog_core::JobSpec::default()),
        )
        .await
        .unwrap_or_else(|_| panic!("round {round}: the submission waited"));
        match refused {
            Err(crate::PipelineError::Store(e)) => assert!(e.is_full(), "round {round}: {e}"),
            other => panic!("round {round}: {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_millis(1500));
        assert!(matches!(p.health(), super::Health::Full(_)));
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    assert!(committed.lock().unwrap().is_empty());

    full.store(false, Ordering::SeqCst);
    let done = tokio::time::timeout(Duration::from_secs(20), async {
        while !committed.lock().unwrap().contains(&"append") {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(
        done.is_ok(),
        "the record was not committed once space returned"
    );
    assert_eq!(p.health(), super::Health::Ok);
    assert!(
        !committed.lock().unwrap().contains(&"insert_job"),
        "a refused submission was applied later: {:?}",
        committed.lock().unwrap()
    );
    p.close();
    writer.join();
}

/// A store whose first attempt fails after its commit was sent (the
/// acknowledgement lost): it may have committed. It records each
/// attempt's ops by name.
struct Ambiguous {
    attempts: Arc<Mutex<Vec<Vec<&'static str>>>>,
}

impl StoreWriter for Ambiguous {
    fn apply(&mut self, ops: &[WriteOp]) -> joblog_store::Result<Vec<Outcome>> {
        let mut attempts = self.attempts.lock().unwrap();
        attempts.push(ops.iter().map(WriteOp::name).collect());
        if attempts.len() == 1 {
            return Err(joblog_store::StoreError::Unavailable(
                "connection closed".into(),
            ));
        }
        Ok(ops.iter().map(|_| Outcome::Done).collect())
    }

    fn may_have_committed(&self) -> bool {
        self.attempts.lock().unwrap().len() == 1
    }
}

/// A batch that may have committed is tried again whole: a submission in
/// it is not refused (it may exist already), and the store answers it
/// from what it wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_that_may_have_committed_is_retried_whole() {
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let (p, writer) = Pipeline::start(
        Box::new(Ambiguous {
            attempts: attempts.clone(),
        }),
        PipelineConfig {
            max_batch_records: 20,
            max_batch_bytes: 8 << 20,
            memory_budget: 1 << 20,
        },
        &mut Registry::default(),
    );
    let answer = tokio::time::timeout(
        Duration::from_secs(20),
        p.insert_job(None, joblog_core::JobSpec::default()),
    )
    .await
    .expect("answered once retried");
    // The fake store answers `Done`, not a job: the typed call says so.
    assert!(
        matches!(answer, Err(crate::PipelineError::Mismatch { .. })),
        "{answer:?}"
    );
    let attempts = attempts.lock().unwrap().clone();
    assert_eq!(attempts, vec![vec!["insert_job"], vec!["insert_job"]]);
    p.close();
    writer.join();
}
