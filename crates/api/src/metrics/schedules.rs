//! Per schedule, keyed by its name (`schedule="nightly-backup"`): when its
//! last run succeeded and failed, when it fires next, the longest time
//! between its fires, when it was made and whether it is enabled. Every
//! series exists from the schedule's creation (0 where there is no such
//! time yet) and none is folded (the server holds at most
//! `max_schedules`), so an alert on a schedule that has not succeeded
//! also fires when it never did, and a rule needs no schedule's name
//! (packaging/prometheus/alerts.yml).

use std::sync::atomic::AtomicU64;

use joblog_core::schedule::{Schedule, MAX_SCHEDULE_LIMIT};
use joblog_core::{JobState, Timestamp};
use joblog_store::{FinishedBySchedule, Store, StoreError};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::Labels;

/// Fires looked at for a schedule's period: enough to cover a weekend of a
/// weekday schedule and the short month of a monthly one.
const PERIOD_FIRES: usize = 9;

type Seconds = Family<Labels, Gauge<f64, AtomicU64>>;

pub(super) struct ScheduleMetrics {
    last_success: Seconds,
    last_failure: Seconds,
    next_fire: Seconds,
    period: Seconds,
    created: Seconds,
    enabled: Family<Labels, Gauge>,
}

/// Every schedule, and the last finish of each one's runs per state.
pub(super) async fn read(
    store: &dyn Store,
) -> Result<(Vec<Schedule>, Vec<FinishedBySchedule>), StoreError> {
    let mut all = Vec::new();
    let mut after = 0;
    loop {
        let page = store.list_schedules(after, MAX_SCHEDULE_LIMIT).await?;
        let full = page.len() >= MAX_SCHEDULE_LIMIT as usize;
        after = page.last().map_or(after, |s| s.id);
        all.extend(page);
        if !full {
            break;
        }
    }
    Ok((all, store.finished_by_schedule().await?))
}

impl ScheduleMetrics {
    pub(super) fn register(registry: &mut Registry) -> ScheduleMetrics {
        let m = ScheduleMetrics {
            last_success: Family::default(),
            last_failure: Family::default(),
            next_fire: Family::default(),
            period: Family::default(),
            created: Family::default(),
            enabled: Family::default(),
        };
        for (name, help, family) in [
            (
                "joblog_schedule_last_success_timestamp_seconds",
                "When the schedule's last run that succeeded finished (Unix time; 0: none kept)",
                &m.last_success,
            ),
            (
                "joblog_schedule_last_failure_timestamp_seconds",
                "When the schedule's last run that failed, timed out or was interrupted finished (Unix time; 0: none kept)",
                &m.last_failure,
            ),
            (
                "joblog_schedule_next_fire_timestamp_seconds",
                "When the schedule fires next (Unix time; 0: disabled, or it never fires again)",
                &m.next_fire,
            ),
            (
                "joblog_schedule_period_seconds",
                "The longest time between two of the schedule's coming fires (0: it never fires again)",
                &m.period,
            ),
            (
                "joblog_schedule_created_timestamp_seconds",
                "When the schedule was made (Unix time)",
                &m.created,
            ),
        ] {
            registry.register(name, help, family.clone());
        }
        registry.register(
            "joblog_schedule_enabled",
            "Whether the schedule fires (1) or is disabled (0)",
            m.enabled.clone(),
        );
        m
    }

    /// Replaces the figures with those of `schedules`.
    pub(super) fn update(&self, schedules: &[Schedule], finished: &[FinishedBySchedule]) {
        for family in [
            &self.last_success,
            &self.last_failure,
            &self.next_fire,
            &self.period,
            &self.created,
        ] {
            family.clear();
        }
        self.enabled.clear();
        let now = Timestamp::now();
        for s in schedules {
            let labels = vec![("schedule".to_string(), s.name.clone())];
            let (success, failure) = last_ends(s.id, finished);
            self.last_success.get_or_create(&labels).set(success);
            self.last_failure.get_or_create(&labels).set(failure);
            self.next_fire
                .get_or_create(&labels)
                .set(s.next_fire.map_or(0.0, seconds));
            self.period.get_or_create(&labels).set(period(s, now));
            self.created
                .get_or_create(&labels)
                .set(seconds(s.created_at));
            self.enabled
                .get_or_create(&labels)
                .set(i64::from(s.enabled));
        }
    }
}

fn seconds(t: Timestamp) -> f64 {
    t.0 as f64 / 1e6
}

/// When schedule `id`'s last run that succeeded, and its last that failed,
/// finished (0: none).
fn last_ends(id: i64, finished: &[FinishedBySchedule]) -> (f64, f64) {
    let (mut success, mut failure) = (0.0_f64, 0.0_f64);
    for f in finished.iter().filter(|f| f.schedule_id == id) {
        let at = seconds(f.last_finished);
        match f.state {
            JobState::Succeeded => success = success.max(at),
            JobState::Failed | JobState::TimedOut | JobState::Interrupted => {
                failure = failure.max(at)
            }
            // Not read by the store's query: an operator's stop is
            // neither, and unfinished jobs have not ended.
            JobState::Cancelled | JobState::Queued | JobState::Running => {}
        }
    }
    (success, failure)
}

/// The longest time between two consecutive coming fires of `s`, in
/// seconds (0 when it fires at most once more, or after another schedule).
fn period(s: &Schedule, now: Timestamp) -> f64 {
    let Ok(Some(timing)) = s.timing() else {
        return 0.0;
    };
    let fires: Vec<Timestamp> = timing.fires_after(now).take(PERIOD_FIRES).collect();
    let longest = fires.windows(2).map(|w| w[1].0 - w[0].0).max();
    longest.map_or(0.0, |micros| micros as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(schedule_id: i64, state: JobState, secs: i64) -> FinishedBySchedule {
        FinishedBySchedule {
            schedule_id,
            state,
            last_finished: Timestamp(secs * 1_000_000),
        }
    }

    #[test]
    fn a_schedules_last_success_and_failure_are_its_own_latest() {
        let ends = [
            end(1, JobState::Succeeded, 100),
            end(1, JobState::Failed, 50),
            end(1, JobState::TimedOut, 70),
            end(2, JobState::Interrupted, 300),
        ];
        assert_eq!(last_ends(1, &ends), (100.0, 70.0));
        assert_eq!(last_ends(2, &ends), (0.0, 300.0));
        assert_eq!(last_ends(3, &ends), (0.0, 0.0), "never ran");
    }
}
