//! A schedule's policies: what a fire does while the previous run still
//! runs (`Overlap`), what the fires missed while no node ran do
//! (`Missed`), and how a failed run is tried again (`Retries`).

use serde::{Deserialize, Serialize};

use crate::job::invalid;
use crate::ValidationError;

/// What a fire does while the schedule's previous run is still running.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Overlap {
    /// The fire makes no job (it is recorded as skipped).
    #[default]
    Skip,
    /// The fire's job waits until the previous run has ended.
    Queue,
    /// The fire's job runs beside the previous one.
    Allow,
}

impl Overlap {
    pub const ALL: [Overlap; 3] = [Overlap::Skip, Overlap::Queue, Overlap::Allow];

    pub fn name(self) -> &'static str {
        match self {
            Overlap::Skip => "skip",
            Overlap::Queue => "queue",
            Overlap::Allow => "allow",
        }
    }

    pub fn parse(s: &str) -> Option<Overlap> {
        Overlap::ALL.into_iter().find(|o| o.name() == s)
    }
}

/// What the fires missed while no node was running do, once one is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Missed {
    /// None of them runs; the schedule goes on from the next fire.
    #[default]
    Skip,
    /// One job runs for all of them (the latest).
    One,
    /// Each runs, up to [`MAX_MISSED_RUNS`] (the latest ones).
    All,
}

impl Missed {
    pub const ALL: [Missed; 3] = [Missed::Skip, Missed::One, Missed::All];

    pub fn name(self) -> &'static str {
        match self {
            Missed::Skip => "skip",
            Missed::One => "one",
            Missed::All => "all",
        }
    }

    pub fn parse(s: &str) -> Option<Missed> {
        Missed::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// Most missed fires `missed = "all"` makes jobs for at once: a schedule
/// that fires every minute must not flood the queue after a week down.
pub const MAX_MISSED_RUNS: usize = 100;

/// Attempts of a failed run: each attempt is a job of its own.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Retries {
    /// Runs in all, the first included (1: no retry).
    pub attempts: u32,
    /// Seconds before the second attempt, doubled for each one after.
    #[serde(default)]
    pub backoff_s: f64,
}

/// Most attempts a schedule may ask for.
pub const MAX_ATTEMPTS: u32 = 100;

impl Retries {
    pub const NONE: Retries = Retries {
        attempts: 1,
        backoff_s: 0.0,
    };

    pub fn validate(self) -> Result<Retries, ValidationError> {
        if !(1..=MAX_ATTEMPTS).contains(&self.attempts) {
            return Err(invalid(
                "retries.attempts",
                format!(
                    "{} is not between 1 and {MAX_ATTEMPTS} (1: no retry)",
                    self.attempts
                ),
            ));
        }
        if !self.backoff_s.is_finite() || !(0.0..=86_400.0).contains(&self.backoff_s) {
            return Err(invalid(
                "retries.backoff_s",
                format!(
                    "{} is not a number of seconds from 0 to 86400",
                    self.backoff_s
                ),
            ));
        }
        Ok(self)
    }

    /// How long after attempt `attempt` (1-based) failed the next one
    /// starts: `backoff_s`, doubled per attempt after the first, capped
    /// at a day.
    pub fn delay_after(self, attempt: u32) -> std::time::Duration {
        let factor = 2f64.powi(attempt.saturating_sub(1).min(30) as i32);
        std::time::Duration::from_secs_f64((self.backoff_s * factor).min(86_400.0))
    }
}
