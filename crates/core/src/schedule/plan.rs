//! What a scheduler does when it wakes: which fires of a schedule become
//! jobs (the ones due now, and those missed while no node ran, as the
//! `missed` policy says) and when the schedule fires next. Pure: the
//! scheduler brings the time and the stored next fire, and claims the
//! fires this returns in the store, one job per (schedule, fire time).

use std::time::Duration;

use super::{Missed, Timing, MAX_MISSED_RUNS};
use crate::Timestamp;

/// A fire more than this late when the scheduler gets to it was missed
/// (no node was running, or all were stopped), not merely late: the
/// `missed` policy decides whether it runs.
pub const MISSED_AFTER: Duration = Duration::from_secs(60);

/// Missed fires counted one by one; past this many (a per-second
/// schedule after a day down has 86,400) the count says "at least".
pub const MAX_COUNTED: u64 = 10_000;

/// The fires to run now and what follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    /// Fire times to make jobs for, oldest first.
    pub fires: Vec<Timestamp>,
    /// Missed fires that make no job (the policy said so): exact up to
    /// [`MAX_COUNTED`], a lower bound past it.
    pub skipped: u64,
    /// The first fire after `now`, where the scheduler sleeps until.
    pub next: Option<Timestamp>,
}

/// The fires from `next` (the stored next fire, inclusive) up to `now`:
/// those at most [`MISSED_AFTER`] late run; older ones were missed and
/// run as `missed` says — none, the latest one, or the latest
/// [`MAX_MISSED_RUNS`]. Never walks more than [`MAX_COUNTED`] fires.
pub fn due(timing: &Timing, missed: Missed, next: Timestamp, now: Timestamp) -> Due {
    let late_limit = Timestamp(now.0.saturating_sub(MISSED_AFTER.as_micros() as i64));
    let keep = match missed {
        Missed::Skip => 0,
        Missed::One => 1,
        Missed::All => MAX_MISSED_RUNS,
    };
    // The latest missed fires, walking back from the limit.
    let mut fires = Vec::new();
    let mut cursor = late_limit;
    while fires.len() < keep {
        match timing.previous_before(cursor).filter(|f| *f >= next) {
            Some(f) => {
                fires.push(f);
                cursor = f;
            }
            None => break,
        }
    }
    fires.reverse();
    // The rest of the missed ones are only counted.
    let mut skipped = 0u64;
    let mut fire = Some(next);
    let first_kept = fires.first().copied().unwrap_or(late_limit);
    while let Some(f) = fire.filter(|f| *f < first_kept) {
        skipped += 1;
        if skipped >= MAX_COUNTED {
            break;
        }
        fire = timing.next_after(f);
    }
    // Then the ones due now: late by at most MISSED_AFTER.
    let mut fire = timing.next_after(Timestamp(next.max(late_limit).0 - 1));
    while let Some(f) = fire.filter(|f| *f <= now) {
        fires.push(f);
        fire = timing.next_after(f);
    }
    Due {
        fires,
        skipped,
        next: timing.next_after(now),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{CronExpr, Zone};
    use super::*;

    fn timing(cron: &str) -> Timing {
        Timing {
            cron: CronExpr::parse(cron).unwrap(),
            zone: Zone::UTC,
        }
    }

    const MIN: i64 = 60_000_000;

    /// Minutes since 2026-11-24T00:00:00Z as an instant.
    fn m(minutes: i64) -> Timestamp {
        Timestamp(1_795_478_400_000_000 + minutes * MIN)
    }

    #[test]
    fn a_fire_on_time_runs_and_the_next_one_follows() {
        let t = timing("*/5 * * * *");
        let d = due(&t, Missed::Skip, m(10), Timestamp(m(10).0 + 3_000));
        assert_eq!(d.fires, [m(10)]);
        assert_eq!((d.skipped, d.next), (0, Some(m(15))));
        // Not due yet: nothing.
        let d = due(&t, Missed::All, m(15), m(12));
        assert!(d.fires.is_empty());
        assert_eq!((d.skipped, d.next), (0, Some(m(15))));
    }

    #[test]
    fn fires_missed_while_down_run_as_the_policy_says() {
        // Every 5 minutes, down from 00:10 to 01:00:30: the fires 00:10 to
        // 00:55 (10) were missed; 01:00 is 30 s late, on time.
        let t = timing("*/5 * * * *");
        let now = Timestamp(m(60).0 + 30_000_000);
        let skip = due(&t, Missed::Skip, m(10), now);
        assert_eq!(skip.fires, [m(60)]);
        assert_eq!(skip.skipped, 10);
        let one = due(&t, Missed::One, m(10), now);
        assert_eq!(
            one.fires,
            [m(55), m(60)],
            "the latest missed, then the due one"
        );
        assert_eq!(one.skipped, 9);
        let all = due(&t, Missed::All, m(10), now);
        assert_eq!(all.fires, (2..=12).map(|i| m(i * 5)).collect::<Vec<_>>());
        assert_eq!(all.skipped, 0);
        for d in [skip, one, all] {
            assert_eq!(d.next, Some(m(65)));
        }
    }

    #[test]
    fn all_is_bounded_and_a_long_outage_is_not_walked_fire_by_fire() {
        // Every second, down for three days: 259,200 missed fires.
        let t = timing("*/1 * * * * *");
        let now = m(3 * 24 * 60);
        let d = due(&t, Missed::All, m(0), now);
        let missed: Vec<_> = d
            .fires
            .iter()
            .filter(|f| f.0 < now.0 - 60_000_000)
            .collect();
        assert_eq!(missed.len(), MAX_MISSED_RUNS, "the latest, no more");
        assert!(d.fires.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(*d.fires.last().unwrap(), now, "the fire at now is due");
        assert_eq!(d.skipped, MAX_COUNTED, "counted up to the bound");
        assert_eq!(d.next, Some(Timestamp(now.0 + 1_000_000)));
    }
}
