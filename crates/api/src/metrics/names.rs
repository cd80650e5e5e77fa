//! Per job name: the time of the last success and of the last failure and
//! the finished jobs kept by final state — what cron-style alerting of
//! jobs submitted by hand or by other tools asks. Bounded to `max_names`
//! names (the most recently finished; the rest are summed under
//! `(other)`), so that a name per job cannot blow up the series count.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;

use joblog_core::JobState;
use joblog_store::FinishedByName;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::Labels;

/// The name unnamed jobs are exported under.
const UNNAMED: &str = "(unnamed)";
/// The name the least recent names past the bound are summed under.
const OTHER: &str = "(other)";

pub(super) struct JobNameMetrics {
    last_success: Family<Labels, Gauge<f64, AtomicU64>>,
    last_failure: Family<Labels, Gauge<f64, AtomicU64>>,
    finished: Family<Labels, Gauge>,
    folded: Gauge,
    max_names: usize,
}

impl JobNameMetrics {
    pub(super) fn register(registry: &mut Registry, max_names: usize) -> JobNameMetrics {
        let m = JobNameMetrics {
            last_success: Family::default(),
            last_failure: Family::default(),
            finished: Family::default(),
            folded: Gauge::default(),
            max_names,
        };
        registry.register(
            "joblog_job_last_success_timestamp_seconds",
            "When the last job of this name that succeeded finished (Unix time)",
            m.last_success.clone(),
        );
        registry.register(
            "joblog_job_last_failure_timestamp_seconds",
            "When the last job of this name that failed, timed out or was interrupted finished (Unix time)",
            m.last_failure.clone(),
        );
        registry.register(
            "joblog_job_finished",
            "Finished jobs of this name kept in the store, by final state",
            m.finished.clone(),
        );
        registry.register(
            "joblog_job_names_folded",
            "Job names summed under name=\"(other)\" (past metrics.max_job_names)",
            m.folded.clone(),
        );
        m
    }

    /// Replaces the figures with those of `rows`.
    pub(super) fn update(&self, rows: &[FinishedByName]) {
        let (names, folded) = fold(rows, self.max_names);
        self.last_success.clear();
        self.last_failure.clear();
        self.finished.clear();
        for n in names {
            let name = vec![("name".to_string(), n.name.clone())];
            if let Some(t) = n.last_success {
                self.last_success.get_or_create(&name).set(t);
            }
            if let Some(t) = n.last_failure {
                self.last_failure.get_or_create(&name).set(t);
            }
            for (state, jobs) in n.finished {
                let labels = vec![
                    ("name".to_string(), n.name.clone()),
                    ("state".to_string(), state.name().to_string()),
                ];
                self.finished
                    .get_or_create(&labels)
                    .set(i64::try_from(jobs).unwrap_or(i64::MAX));
            }
        }
        self.folded.set(folded as i64);
    }
}

/// The figures of one exported name.
#[derive(Debug, PartialEq)]
struct NameFigures {
    name: String,
    last_success: Option<f64>,
    last_failure: Option<f64>,
    finished: Vec<(JobState, u64)>,
    /// When its last job finished, whatever the state (for ranking).
    last: i64,
}

/// Per name: the last success and failure and the counts by state; the
/// `max_names` most recently finished names, the rest summed under
/// [`OTHER`]. Returns the names and how many were folded.
fn fold(rows: &[FinishedByName], max_names: usize) -> (Vec<NameFigures>, usize) {
    let mut by_name: HashMap<String, NameFigures> = HashMap::new();
    for row in rows {
        let name = row.name.clone().unwrap_or_else(|| UNNAMED.to_string());
        let figures = by_name.entry(name.clone()).or_insert(NameFigures {
            name,
            last_success: None,
            last_failure: None,
            finished: Vec::new(),
            last: i64::MIN,
        });
        note(figures, row.state, row.jobs, row.last_finished.micros());
    }
    let mut names: Vec<NameFigures> = by_name.into_values().collect();
    // Most recent first; the name breaks ties so the choice is stable.
    names.sort_by(|a, b| b.last.cmp(&a.last).then_with(|| a.name.cmp(&b.name)));
    if names.len() <= max_names {
        return (names, 0);
    }
    let rest = names.split_off(max_names);
    let folded = rest.len();
    let mut other = NameFigures {
        name: OTHER.to_string(),
        last_success: None,
        last_failure: None,
        finished: Vec::new(),
        last: i64::MIN,
    };
    for n in rest {
        for (state, jobs) in n.finished {
            note(&mut other, state, jobs, 0);
        }
        other.last_success = max_of(other.last_success, n.last_success);
        other.last_failure = max_of(other.last_failure, n.last_failure);
    }
    names.push(other);
    (names, folded)
}

fn note(figures: &mut NameFigures, state: JobState, jobs: u64, last_micros: i64) {
    let at = last_micros as f64 / 1e6;
    match state {
        JobState::Succeeded => figures.last_success = max_of(figures.last_success, Some(at)),
        JobState::Failed | JobState::TimedOut | JobState::Interrupted => {
            figures.last_failure = max_of(figures.last_failure, Some(at))
        }
        // Neither: the operator chose to stop it. Queued and running jobs
        // are not read.
        JobState::Cancelled | JobState::Queued | JobState::Running => {}
    }
    match figures.finished.iter_mut().find(|(s, _)| *s == state) {
        Some(slot) => slot.1 += jobs,
        None => figures.finished.push((state, jobs)),
    }
    figures.last = figures.last.max(last_micros);
}

fn max_of(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use joblog_core::Timestamp;

    use super::*;

    fn row(name: Option<&str>, state: JobState, jobs: u64, secs: i64) -> FinishedByName {
        FinishedByName {
            name: name.map(String::from),
            state,
            jobs,
            last_finished: Timestamp(secs * 1_000_000),
        }
    }

    #[test]
    fn names_past_the_bound_are_summed_under_other() {
        let rows = [
            row(Some("backup"), JobState::Succeeded, 3, 100),
            row(Some("backup"), JobState::Failed, 1, 90),
            row(None, JobState::TimedOut, 2, 300),
            row(Some("old"), JobState::Succeeded, 5, 10),
            row(Some("older"), JobState::Interrupted, 1, 5),
            row(Some("older"), JobState::Cancelled, 4, 7),
        ];
        let (names, folded) = fold(&rows, 2);
        assert_eq!(folded, 2);
        let names: Vec<&NameFigures> = names.iter().collect();
        assert_eq!(names[0].name, UNNAMED);
        assert_eq!(names[0].last_failure, Some(300.0));
        assert_eq!(names[0].last_success, None);
        assert_eq!(names[1].name, "backup");
        assert_eq!(names[1].last_success, Some(100.0));
        assert_eq!(names[1].last_failure, Some(90.0));
        assert_eq!(
            names[1].finished,
            [(JobState::Succeeded, 3), (JobState::Failed, 1)]
        );
        let other = names[2];
        assert_eq!(other.name, OTHER);
        assert_eq!(other.last_success, Some(10.0));
        assert_eq!(other.last_failure, Some(5.0), "a cancel is no failure");
        assert_eq!(
            other.finished,
            [
                (JobState::Succeeded, 5),
                (JobState::Interrupted, 1),
                (JobState::Cancelled, 4)
            ]
        );
        let (all, folded) = fold(&rows, 10);
        assert_eq!((all.len(), folded), (4, 0));
    }
}
