//! How large the next batch may be: what the store commits in about
//! [`TARGET`], learnt from the commits it has made, never more than the
//! configured bounds.
//!
//! A line of another job, or a job's start, waits for the commit in flight
//! and then rides in the next one, so the time a commit takes is its
//! latency. A bound in records and bytes alone is a different time on each
//! store: 20,000 records of a flood commit in ~25 ms on SQLite but ~55 ms
//! on PostgreSQL, which put another job's line at p99 126 ms behind a flood
//! (`bench flood`). Smaller batches cost throughput (a commit's fixed
//! cost, its fsync and round trips, is a few milliseconds: a flood on
//! PostgreSQL loses ~12 % of its rate at the target), so the bound holds
//! only while someone else's lines or requests came in beside a flood in
//! the last [`RECENTLY`]; a flood alone, or floods side by side, keep
//! full batches.

use std::time::Duration;

use super::batching::Limits;

/// The time a full batch should take to commit.
pub(crate) const TARGET: Duration = Duration::from_millis(20);

/// How long after someone else's op beside a flood batches keep to
/// [`TARGET`].
pub(crate) const RECENTLY: Duration = Duration::from_secs(1);

/// Never less than this share of the configured bounds: below it a
/// commit's fixed cost would eat the store's throughput.
const FLOOR: f64 = 1.0 / 16.0;

/// A batch filling less than this share of the bounds it had says little
/// of a full one's time (its fixed cost dominates), so it is not learnt
/// from. Learning from the batches the pace bounded converges on the size
/// that commits in [`TARGET`], fixed cost included.
const LEARN_ABOVE: f64 = 0.5;

/// How much each commit moves the estimate: recent ones count most, and
/// after one stalled commit (a checkpoint) the batches shrink for the
/// next few tens of commits only.
const WEIGHT: f64 = 0.25;

#[derive(Debug)]
pub(crate) struct Pace {
    max: Limits,
    /// A full batch's expected commit time (seconds), once one was seen.
    full_secs: Option<f64>,
}

impl Pace {
    pub(crate) fn new(max: Limits) -> Self {
        Pace {
            max,
            full_secs: None,
        }
    }

    /// The bounds of the next batch: the configured ones unless `others`
    /// (some other job or caller may be waiting behind its commit).
    pub(crate) fn limits(&self, others: bool) -> Limits {
        if !others {
            return self.max;
        }
        let share = match self.full_secs {
            Some(full) if full > 0.0 => (TARGET.as_secs_f64() / full).clamp(FLOOR, 1.0),
            _ => 1.0,
        };
        let scale = |n: usize| ((n as f64 * share).round() as usize).max(1);
        Limits {
            records: scale(self.max.records),
            bytes: scale(self.max.bytes),
        }
    }

    /// Learns from a committed batch of `records` and `bytes` that took
    /// `took`.
    pub(crate) fn observe(&mut self, records: usize, bytes: usize, took: Duration) {
        let filled = |of: Limits| {
            (records as f64 / of.records.max(1) as f64).max(bytes as f64 / of.bytes.max(1) as f64)
        };
        if filled(self.limits(true)) < LEARN_ABOVE {
            return;
        }
        let full = took.as_secs_f64() / filled(self.max);
        self.full_secs = Some(match self.full_secs {
            Some(old) => old + WEIGHT * (full - old),
            None => full,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: Limits = Limits {
        records: 20_000,
        bytes: 8 << 20,
    };

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn full_bounds_until_a_commit_says_otherwise() {
        let pace = Pace::new(MAX);
        assert_eq!(pace.limits(true).records, 20_000);
        assert_eq!(pace.limits(true).bytes, 8 << 20);
    }

    #[test]
    fn a_slow_store_gets_batches_that_commit_in_the_target() {
        let mut pace = Pace::new(MAX);
        // A full batch in 50 ms: batches of 20/50 of the bounds.
        pace.observe(20_000, 1 << 20, ms(50));
        assert_eq!(pace.limits(true).records, 8_000);
        // Half a batch in 25 ms says the same.
        let mut pace = Pace::new(MAX);
        pace.observe(10_000, 1 << 20, ms(25));
        assert_eq!(pace.limits(true).records, 8_000);
        // Bytes count as much as records: a batch of large lines.
        let mut pace = Pace::new(MAX);
        pace.observe(100, 8 << 20, ms(40));
        assert_eq!(pace.limits(true).bytes, 4 << 20);
    }

    #[test]
    fn a_flood_alone_keeps_the_full_bounds_on_a_slow_store() {
        let mut pace = Pace::new(MAX);
        pace.observe(20_000, 1 << 20, ms(50));
        assert_eq!(pace.limits(false).records, 20_000);
        assert_eq!(pace.limits(true).records, 8_000);
    }

    #[test]
    fn a_fast_store_keeps_the_full_bounds() {
        let mut pace = Pace::new(MAX);
        pace.observe(20_000, 1 << 20, ms(10));
        assert_eq!(pace.limits(true).records, 20_000);
    }

    #[test]
    fn small_batches_are_not_learnt_from_and_a_stall_passes() {
        let mut pace = Pace::new(MAX);
        // Fixed costs of tiny commits are not taken for a slow store.
        pace.observe(10, 1_000, ms(5));
        assert_eq!(pace.limits(true).records, 20_000);
        for _ in 0..20 {
            pace.observe(20_000, 1 << 20, ms(40));
        }
        assert_eq!(pace.limits(true).records, 10_000);
        // One commit stalled for a second: the floor, however slow...
        pace.observe(10_000, 1 << 20, Duration::from_secs(1));
        assert_eq!(pace.limits(true).records, 1_250);
        // ... and back near the store's pace within twenty commits (small ones).
        for _ in 0..20 {
            let l = pace.limits(true);
            let took = ms(40 * l.records as u64 / 20_000);
            pace.observe(l.records, 1 << 20, took);
        }
        let back = pace.limits(true).records;
        assert!((9_000..=10_000).contains(&back), "{back}");
    }
}
