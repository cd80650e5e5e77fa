//! Triggers: a schedule that runs after another one's jobs end (`after`
//! in place of `cron`), and what its jobs carry of the job that triggered
//! them. The store queues a triggered job in the transaction that ends
//! the triggering one; this file holds the definitions and their checks.

use serde::{Deserialize, Serialize};

use super::{ScheduleId, Timing};
use crate::job::invalid;
use crate::{Job, JobId, JobState, Timestamp, ValidationError};

/// Most schedules in one chain of triggers, the first (a cron schedule)
/// included: a chain is refused at save beyond it, and a triggered job
/// that would run deeper is not queued.
pub const MAX_CHAIN: u32 = 32;

/// When a schedule fires: on its cron expression, after another
/// schedule's jobs end, or never by itself (a saved job, run when asked).
#[derive(Debug, Clone, PartialEq)]
pub enum Firing {
    /// Boxed: a parsed expression is large, a trigger small.
    Cron(Box<Timing>),
    After(After),
    /// A saved job: neither `cron` nor `after`; it runs only when someone
    /// runs it (`POST /api/v1/schedules/{id}/run`).
    OnDemand,
}

impl Firing {
    /// Its first fire after `now`: none for a trigger (it fires when a
    /// job ends, never by the clock).
    pub fn next_after(&self, now: Timestamp) -> Option<Timestamp> {
        match self {
            Firing::Cron(timing) => timing.next_after(now),
            Firing::After(_) | Firing::OnDemand => None,
        }
    }

    pub fn cron(&self) -> Option<&Timing> {
        match self {
            Firing::Cron(timing) => Some(&**timing),
            Firing::After(_) | Firing::OnDemand => None,
        }
    }

    pub fn after(&self) -> Option<&After> {
        match self {
            Firing::Cron(_) | Firing::OnDemand => None,
            Firing::After(after) => Some(after),
        }
    }
}

/// A trigger as a client sends it: `states` are names, checked by
/// [`AfterSpec::validate`] so that a wrong one names the field.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AfterSpec {
    pub schedule_id: ScheduleId,
    pub states: Vec<String>,
}

/// Runs a schedule when a job of schedule `schedule_id` ends in one of
/// `states` (its final attempt: a retried job triggers once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct After {
    pub schedule_id: ScheduleId,
    /// Final states only, each once, in [`JobState::ALL`]'s order.
    pub states: Vec<JobState>,
}

impl AfterSpec {
    pub fn validate(self) -> Result<After, ValidationError> {
        if self.schedule_id <= 0 {
            return Err(invalid(
                "after",
                format!("schedule_id {} is not a schedule's id", self.schedule_id),
            ));
        }
        // Each item one state: `"succeeded,failed"` in one is refused.
        let mut states = Vec::with_capacity(self.states.len());
        for item in &self.states {
            match JobState::parse(item) {
                Some(state) if !states.contains(&state) => states.push(state),
                Some(_) => {}
                None => {
                    return Err(invalid(
                        "after",
                        format!("unknown state {item:?} in states"),
                    ))
                }
            }
        }
        states.sort_by_key(|st| *st as u8);
        let states = After::checked(states)?;
        Ok(After {
            schedule_id: self.schedule_id,
            states,
        })
    }
}

impl After {
    /// `succeeded,failed` → those states: each a final one, at least one.
    pub fn parse_states(text: &str) -> Result<Vec<JobState>, ValidationError> {
        Self::checked(JobState::parse_list(text).map_err(|e| invalid("after", e))?)
    }

    /// `states` if each is final and there is one at least.
    fn checked(states: Vec<JobState>) -> Result<Vec<JobState>, ValidationError> {
        if let Some(s) = states.iter().find(|s| !s.is_finished()) {
            return Err(invalid(
                "after",
                format!(
                    "{:?} is not a state a job ends in (succeeded, failed, cancelled, timed_out, interrupted)",
                    s.name()
                ),
            ));
        }
        if states.is_empty() {
            return Err(invalid(
                "after",
                "states is empty: name the states of the other schedule's jobs that start this one, such as [\"succeeded\"]",
            ));
        }
        Ok(states)
    }

    /// The states as stored: `succeeded,failed`.
    pub fn states_text(&self) -> String {
        let names: Vec<&str> = self.states.iter().map(|s| s.name()).collect();
        names.join(",")
    }
}

/// The job whose end queued a triggered job; kept in that job's spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggeredBy {
    pub job_id: JobId,
    pub state: JobState,
    /// Its place in its chain: 2 for a job triggered by a cron
    /// schedule's job, and so on up to [`MAX_CHAIN`].
    pub depth: u32,
}

impl TriggeredBy {
    /// What a job queued by `ended`'s end carries; `None` when that job
    /// would run deeper than [`MAX_CHAIN`].
    pub fn of(ended: &Job) -> Option<TriggeredBy> {
        let depth = ended
            .spec
            .schedule
            .and_then(|run| run.trigger)
            .map_or(1, |t| t.depth)
            + 1;
        (depth <= MAX_CHAIN).then_some(TriggeredBy {
            job_id: ended.id,
            state: ended.state,
            depth,
        })
    }
}

/// A schedule that runs after the one shown, as its page lists them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Follower {
    pub schedule_id: ScheduleId,
    pub name: String,
    pub states: Vec<JobState>,
}
