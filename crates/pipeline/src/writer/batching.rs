//! Which waiting ops the next transaction takes: in order of arrival,
//! except that a job with more waiting than its part of a batch goes
//! after everyone else's. One job's flood then fills what room the others
//! leave instead of queueing their records behind it: another job's line
//! is in the next commit, however much the flood has waiting.
//!
//! The ops of one job's log (its appends, then its finish) keep their
//! order: a job put back is put back from that op on, and what a batch
//! takes of it is always the next ones.

use std::collections::VecDeque;

use joblog_core::JobId;

/// What the batcher needs to know of an op.
pub(crate) trait Weighed {
    /// The job whose log the op continues, if any.
    fn log_of(&self) -> Option<JobId>;
    fn records(&self) -> usize;
    fn bytes(&self) -> usize;
}

/// A transaction's bounds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub records: usize,
    pub bytes: usize,
}

/// The share of a batch a job takes before the others: a quarter.
const PART: usize = 4;

/// A job with at most this share of a batch's records in it writes a
/// trickle: its lines wait on commits, not on its own backlog.
const TRICKLE: usize = 256;

/// A batch that holds more than one job's log stops at this share of the
/// bounds: the commit that carries another job's line is the sooner done
/// (a full batch of a flood takes ~25 ms to commit on SQLite).
const SHARED: usize = 2;

/// Moves the next batch out of `waiting` into `batch` (empty), leaving
/// the rest in `waiting` in order. Takes at least one op when any waits;
/// like a batch in order of arrival, it stops at the first op that
/// reaches a bound (that op included).
///
/// Returns whether the batch carried, beside a job over its part (a
/// flood), a request or a trickle of another job's lines: something that
/// waited for the commit in flight and would wait less were the flood's
/// batches smaller.
pub(crate) fn next_batch<T: Weighed>(
    waiting: &mut VecDeque<T>,
    limits: Limits,
    batch: &mut Vec<T>,
) -> bool {
    let part = Limits {
        records: (limits.records / PART).max(1),
        bytes: (limits.bytes / PART).max(1),
    };
    let mut taken = Limits {
        records: 0,
        bytes: 0,
    };
    let full = |t: &Limits| t.records >= limits.records || t.bytes >= limits.bytes;
    // Jobs over their part, with what this batch took of each; few jobs
    // write at once, so a list beats a map.
    let mut per_job: Vec<(JobId, Limits)> = Vec::new();
    let mut put_back: Vec<JobId> = Vec::new();
    let mut rest = VecDeque::with_capacity(waiting.len());
    for op in waiting.drain(..) {
        if full(&taken) {
            rest.push_back(op);
            continue;
        }
        if let Some(job) = op.log_of() {
            if put_back.contains(&job) {
                rest.push_back(op);
                continue;
            }
            let mine = match per_job.iter_mut().find(|(j, _)| *j == job) {
                Some((_, mine)) => mine,
                None => {
                    per_job.push((
                        job,
                        Limits {
                            records: 0,
                            bytes: 0,
                        },
                    ));
                    &mut per_job.last_mut().expect("just pushed").1
                }
            };
            if mine.records >= part.records || mine.bytes >= part.bytes {
                put_back.push(job);
                rest.push_back(op);
                continue;
            }
            mine.records += op.records();
            mine.bytes += op.bytes();
        }
        taken.records += op.records();
        taken.bytes += op.bytes();
        batch.push(op);
    }
    // Room left: what was put back fills it, in order, up to less when
    // others' lines ride in it. (Nothing else is in `rest` then: only a
    // full batch leaves other ops behind.)
    let fill = if per_job.len() > 1 {
        Limits {
            records: limits.records / SHARED,
            bytes: limits.bytes / SHARED,
        }
    } else {
        limits
    };
    let full = |t: &Limits| t.records >= fill.records || t.bytes >= fill.bytes;
    for op in rest.drain(..) {
        if full(&taken) {
            waiting.push_back(op);
        } else {
            taken.records += op.records();
            taken.bytes += op.bytes();
            batch.push(op);
        }
    }
    if put_back.is_empty() {
        return false;
    }
    // Someone else: a request, or a job writing a trickle (its few lines
    // all taken), not a job that just caught up with its backlog.
    let trickle = (limits.records / TRICKLE).max(1);
    batch.iter().any(|op| match op.log_of() {
        None => true,
        Some(job) => {
            !put_back.contains(&job)
                && per_job
                    .iter()
                    .find(|(j, _)| *j == job)
                    .is_some_and(|(_, mine)| mine.records <= trickle)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, PartialEq)]
    struct Op {
        job: Option<JobId>,
        records: usize,
        /// Its place in arrival order.
        n: usize,
    }

    impl Weighed for Op {
        fn log_of(&self) -> Option<JobId> {
            self.job
        }
        fn records(&self) -> usize {
            self.records
        }
        fn bytes(&self) -> usize {
            self.records * 100
        }
    }

    const LIMITS: Limits = Limits {
        records: 100,
        bytes: 1 << 20,
    };

    fn ops(spec: &[(Option<JobId>, usize)]) -> VecDeque<Op> {
        spec.iter()
            .enumerate()
            .map(|(n, (job, records))| Op {
                job: *job,
                records: *records,
                n,
            })
            .collect()
    }

    #[test]
    fn another_jobs_record_is_in_the_next_batch_behind_a_flood() {
        // Job 1 has ten batches waiting; job 2's line came last.
        let mut spec = vec![(Some(1), 50); 20];
        spec.push((Some(2), 1));
        spec.push((None, 1));
        let mut waiting = ops(&spec);
        let mut batch = Vec::new();
        assert!(next_batch(&mut waiting, LIMITS, &mut batch));
        let order: Vec<usize> = batch.iter().map(|o| o.n).collect();
        // Job 1's part first (25 records: its first op reaches it), then
        // the others; shared, the batch stops at half the bound (50).
        assert_eq!(order, vec![0, 20, 21]);
        assert_eq!(waiting.front().map(|o| o.n), Some(1));
        assert_eq!(waiting.len(), 19);
        // With room below half the bound, job 1 fills it.
        let mut waiting = ops(&[(Some(1), 20), (Some(1), 20), (Some(2), 1), (Some(1), 20)]);
        let mut batch = Vec::new();
        next_batch(&mut waiting, LIMITS, &mut batch);
        assert_eq!(
            batch.iter().map(|o| o.n).collect::<Vec<_>>(),
            vec![0, 1, 2, 3]
        );
    }

    #[test]
    fn alone_a_job_fills_batches_as_in_order_of_arrival() {
        let mut waiting = ops(&[(Some(1), 30); 10]);
        let mut batch = Vec::new();
        // Nobody else waits behind this flood.
        assert!(!next_batch(&mut waiting, LIMITS, &mut batch));
        assert_eq!(
            batch.iter().map(|o| o.n).collect::<Vec<_>>(),
            vec![0, 1, 2, 3]
        );
    }

    #[test]
    fn floods_side_by_side_are_nobody_waiting() {
        let spec: Vec<_> = (0..20).map(|n| (Some(n % 2), 30)).collect();
        let mut waiting = ops(&spec);
        let mut batch = Vec::new();
        assert!(!next_batch(&mut waiting, LIMITS, &mut batch));
        // Nor is a job catching up with its backlog beside a flood (20
        // records, under its part but more than a trickle).
        let mut waiting = ops(&[(Some(1), 30), (Some(1), 30), (Some(2), 20)]);
        let mut batch = Vec::new();
        assert!(!next_batch(&mut waiting, LIMITS, &mut batch));
        assert_eq!(batch.len(), 2);
        // A request beside them is.
        let mut spec = spec;
        spec.push((None, 1));
        let mut waiting = ops(&spec);
        let mut batch = Vec::new();
        assert!(next_batch(&mut waiting, LIMITS, &mut batch));
    }

    proptest! {
        /// Nothing lost or doubled, every job's ops in order, a batch never
        /// empty, and a job's first waiting op within its part is taken.
        #[test]
        fn batches_keep_each_jobs_order_and_lose_nothing(
            spec in proptest::collection::vec((proptest::option::of(1i64..5), 1usize..80), 1..60)
        ) {
            let mut waiting = ops(&spec);
            let mut seen: Vec<Op> = Vec::new();
            let mut rounds = 0;
            while !waiting.is_empty() {
                let mut batch = Vec::new();
                next_batch(&mut waiting, LIMITS, &mut batch);
                prop_assert!(!batch.is_empty());
                // Only a full batch (half full, shared) leaves anything
                // waiting.
                let records: usize = batch.iter().map(|o| o.records).sum();
                if records < LIMITS.records / SHARED {
                    prop_assert!(waiting.is_empty());
                }
                seen.extend(batch);
                rounds += 1;
                prop_assert!(rounds <= spec.len());
            }
            let mut ns: Vec<usize> = seen.iter().map(|o| o.n).collect();
            ns.sort_unstable();
            prop_assert_eq!(ns, (0..spec.len()).collect::<Vec<_>>());
            for job in 1..5 {
                let of_job: Vec<usize> = seen.iter().filter(|o| o.job == Some(job)).map(|o| o.n).collect();
                prop_assert!(of_job.windows(2).all(|w| w[0] < w[1]), "job {job}: {of_job:?}");
            }
        }
    }
}
