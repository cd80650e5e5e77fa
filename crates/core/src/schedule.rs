//! Schedules: stored definitions that run a job on a cron expression in a
//! time zone, with policies for overlapping runs, missed fires and
//! retries. `timing.rs` computes fires, `policy.rs` holds the policies,
//! `plan.rs` which fires a waking scheduler runs; this file is the
//! definition a client sends and its checks.

mod plan;
mod policy;
mod timing;

use std::collections::BTreeMap;

use serde::Deserialize;

pub use plan::{due, Due, MAX_COUNTED, MISSED_AFTER};
pub use policy::{Missed, Overlap, Retries, MAX_ATTEMPTS, MAX_MISSED_RUNS};
pub use timing::{CronExpr, Timing, Zone};

use crate::job::invalid;
use crate::{NewJobRequest, Timestamp, ValidJob, ValidationError};

/// Fires a schedule shows ahead (`joblog schedule show`, the API).
pub const SHOWN_FIRES: usize = 5;

/// A schedule as a client sends it (`POST /api/v1/schedules`): its name,
/// when it fires, the job it submits (the fields of a job submission,
/// checked as one) and its policies.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewSchedule {
    pub name: String,
    pub cron: String,
    /// IANA name; UTC when absent.
    #[serde(default)]
    pub timezone: Option<String>,
    #[serde(default)]
    pub command: Option<Vec<String>>,
    #[serde(default)]
    pub script: Option<String>,
    #[serde(default)]
    pub shell: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub timeout_s: Option<f64>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub overlap: Overlap,
    #[serde(default)]
    pub missed: Missed,
    #[serde(default)]
    pub retries: Option<Retries>,
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
}

fn enabled_by_default() -> bool {
    true
}

/// A schedule that passed its checks.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidSchedule {
    pub name: String,
    pub timing: Timing,
    /// The job each fire submits, named after the schedule.
    pub job: ValidJob,
    pub overlap: Overlap,
    pub missed: Missed,
    pub retries: Retries,
    pub enabled: bool,
}

impl NewSchedule {
    /// Checks every field, naming the first one at fault. A schedule
    /// needs a name (its jobs carry it) and must fire at least once more
    /// after `now`.
    pub fn validate(self, now: Timestamp) -> Result<ValidSchedule, ValidationError> {
        if self.name.trim().is_empty() {
            return Err(invalid("name", "missing: a schedule needs a name"));
        }
        let cron = CronExpr::parse(&self.cron)?;
        let zone = match &self.timezone {
            Some(name) => Zone::parse(name)?,
            None => Zone::UTC,
        };
        let timing = Timing { cron, zone };
        if timing.next_after(now).is_none() {
            return Err(invalid(
                "cron",
                format!(
                    "{:?} never fires again (in {})",
                    timing.cron.as_str(),
                    zone.name()
                ),
            ));
        }
        let job = NewJobRequest {
            command: self.command,
            script: self.script,
            shell: self.shell,
            name: Some(self.name.clone()),
            env: self.env,
            secrets: BTreeMap::new(),
            timeout_s: self.timeout_s,
            cwd: self.cwd,
            rerun_of: None,
        }
        .validate()?;
        let retries = self.retries.unwrap_or(Retries::NONE).validate()?;
        Ok(ValidSchedule {
            name: self.name,
            timing,
            job,
            overlap: self.overlap,
            missed: self.missed,
            retries,
            enabled: self.enabled,
        })
    }
}

#[cfg(test)]
mod tests;
