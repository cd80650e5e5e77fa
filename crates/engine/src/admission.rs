//! Admission of new jobs against `max_queued` without counting the queue
//! at every submission.
//!
//! Counting the queued jobs costs a walk of up to `max_queued` index
//! entries; done per submission, a burst of n jobs walked n²/2 of them.
//! After a count finds room for `r` more, the next `(r - 1) / 2`
//! submissions are admitted without counting, for at most [`FRESH`]; then
//! the queue is counted again. A refusal always follows a count.
//!
//! Submissions alone never pass the limit: fewer are admitted between
//! counts than there was room for. What else queues jobs between two
//! counts is not seen until the next: schedules' fires and triggered runs
//! (queued whatever the limit says, as ever) and, on a shared store, other
//! nodes' submissions. With those the limit may be passed by what they
//! queue within [`FRESH`]: it protects the store from a flood; it is not
//! a quota.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a count admits submissions without counting again.
pub(crate) const FRESH: Duration = Duration::from_millis(250);

#[derive(Default)]
pub(crate) struct Admission {
    state: Mutex<Room>,
}

#[derive(Default)]
struct Room {
    /// Submissions still admitted without counting.
    left: u64,
    /// When the queue was last counted.
    counted_at: Option<Instant>,
}

impl Admission {
    /// Admits one submission at `now` without counting, if the last count
    /// left room for it.
    pub(crate) fn take(&self, now: Instant) -> bool {
        let mut room = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = room
            .counted_at
            .is_some_and(|at| now.saturating_duration_since(at) < FRESH);
        if fresh && room.left > 0 {
            room.left -= 1;
            return true;
        }
        false
    }

    /// The queue was counted at `now`: `queued` of at most `max`. Whether
    /// this submission is admitted.
    pub(crate) fn counted(&self, queued: u64, max: u64, now: Instant) -> bool {
        let mut room = self.state.lock().unwrap_or_else(|e| e.into_inner());
        room.counted_at = Some(now);
        if queued >= max {
            room.left = 0;
            return false;
        }
        room.left = (max - queued - 1) / 2;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue only this node fills: submissions admitted from counts
    /// never pass the limit, whatever the limit.
    #[test]
    fn one_node_never_passes_the_limit() {
        for max in [1u64, 2, 3, 10, 1000] {
            let a = Admission::default();
            let now = Instant::now();
            let (mut queued, mut counts) = (0u64, 0u64);
            let submit = |queued: &mut u64, counts: &mut u64| {
                let admitted = a.take(now) || {
                    *counts += 1;
                    a.counted(*queued, max, now)
                };
                *queued += u64::from(admitted);
                admitted
            };
            for _ in 0..max {
                assert!(submit(&mut queued, &mut counts), "max {max}: refused early");
            }
            assert_eq!(queued, max);
            for _ in 0..3 {
                assert!(!submit(&mut queued, &mut counts), "max {max}: passed");
            }
            // Each count admits half the room it found: about two counts
            // per halving, not one per submission.
            let bits = u64::from(u64::BITS - max.leading_zeros());
            assert!(counts <= 2 * bits + 3, "max {max}: {counts} counts");
        }
    }

    #[test]
    fn a_count_admits_for_a_while_only() {
        let a = Admission::default();
        let now = Instant::now();
        assert!(!a.take(now), "nothing counted yet");
        assert!(a.counted(0, 100, now));
        assert!(a.take(now));
        assert!(!a.take(now + FRESH), "stale");
        assert!(!a.counted(100, 100, now + FRESH));
        assert!(!a.take(now + FRESH), "a full queue admits none uncounted");
    }
}
