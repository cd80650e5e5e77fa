//! Schedules in both stores: their rows and the columns a job gets from
//! its spec, and what the scheduler's `FireDue` does with one due
//! schedule, decided here once (each store only runs the statements).
//!
//! Exactly once: a due schedule's fires become jobs in the transaction
//! that moves its `next_fire` past them, under its row lock on PostgreSQL
//! (`FOR UPDATE SKIP LOCKED`: another node skips it), and each job is
//! unique on `(schedule_id, fire_time, attempt)`, so even a fire found
//! twice makes one job.

use joblog_core::schedule::{
    due, fire_job, After, CronExpr, Firing, LastRun, Missed, Overlap, Retries, Schedule,
    ScheduleId, Timing, ValidSchedule, Zone,
};
use joblog_core::{Job, JobSpec, JobState, Timestamp};

use crate::{Result, StoreError};

pub(crate) mod chain;
pub(crate) mod reads;
pub(crate) mod triggers;
pub(crate) mod writes;

/// Most due schedules one `FireDue` handles; the scheduler asks again
/// at once while more are due.
pub const FIRE_BATCH: u32 = 256;

/// The columns of a schedule and of its latest job, in this order (see
/// [`ScheduleRow`]), with `schedule_from!`.
macro_rules! schedule_columns {
    () => {
        "s.id, s.name, s.cron, s.timezone, s.spec, s.overlap, s.missed, s.attempts, \
         s.backoff_s, s.enabled, s.next_fire, s.skipped_fires, s.created_at, s.updated_at, \
         s.after_id, s.after_states, j.id, j.state, j.fire_time, j.attempt, j.created_at, j.finished_at"
    };
}
pub(crate) use schedule_columns;

/// A schedule joined with its latest job (one seek of `jobs_schedule`).
macro_rules! schedule_from {
    () => {
        "FROM schedules s LEFT JOIN jobs j \
         ON j.id = (SELECT max(id) FROM jobs WHERE schedule_id = s.id)"
    };
}
pub(crate) use schedule_from;

/// A row of [`schedule_columns!`].
pub(crate) struct ScheduleRow {
    pub id: ScheduleId,
    pub name: String,
    pub cron: Option<String>,
    pub timezone: String,
    pub spec: String,
    pub overlap: String,
    pub missed: String,
    pub attempts: i64,
    pub backoff_s: f64,
    pub enabled: bool,
    pub next_fire: Option<i64>,
    pub skipped_fires: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub after_id: Option<ScheduleId>,
    pub after_states: Option<String>,
    pub last_id: Option<i64>,
    pub last_state: Option<String>,
    pub last_fire: Option<i64>,
    pub last_attempt: Option<i64>,
    pub last_created: Option<i64>,
    pub last_finished: Option<i64>,
}

fn corrupt(id: ScheduleId, what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("schedule {id}: {what}"))
}

fn policies(id: ScheduleId, overlap: &str, missed: &str) -> Result<(Overlap, Missed)> {
    Ok((
        Overlap::parse(overlap).ok_or_else(|| corrupt(id, format!("overlap {overlap:?}")))?,
        Missed::parse(missed).ok_or_else(|| corrupt(id, format!("missed {missed:?}")))?,
    ))
}

fn spec_of(id: ScheduleId, spec: &str) -> Result<JobSpec> {
    serde_json::from_str(spec).map_err(|e| corrupt(id, format!("spec: {e}")))
}

/// The trigger of a schedule's row: both columns or neither.
fn after_of(
    id: ScheduleId,
    after_id: Option<ScheduleId>,
    states: Option<&str>,
) -> Result<Option<After>> {
    match (after_id, states) {
        (None, None) => Ok(None),
        (Some(schedule_id), Some(states)) => Ok(Some(After {
            schedule_id,
            states: After::parse_states(states).map_err(|e| corrupt(id, e))?,
        })),
        _ => Err(corrupt(id, "a trigger without its schedule or its states")),
    }
}

impl ScheduleRow {
    pub fn into_schedule(self) -> Result<Schedule> {
        let id = self.id;
        let (overlap, missed) = policies(id, &self.overlap, &self.missed)?;
        let last_run = match (self.last_id, self.last_state) {
            (Some(job_id), Some(state)) => Some(LastRun {
                job_id,
                state: JobState::parse(&state)
                    .ok_or_else(|| corrupt(id, format!("job {job_id} has state {state:?}")))?,
                fire_time: self.last_fire.map(Timestamp),
                attempt: self.last_attempt.unwrap_or(1) as u32,
                created_at: Timestamp(self.last_created.unwrap_or(0)),
                finished_at: self.last_finished.map(Timestamp),
            }),
            _ => None,
        };
        let after = after_of(id, self.after_id, self.after_states.as_deref())?;
        Ok(Schedule {
            id,
            name: self.name,
            cron: self.cron,
            timezone: self.timezone,
            after,
            command: Vec::new(),
            script: None,
            shell: None,
            env: Default::default(),
            timeout_s: None,
            cwd: None,
            secrets: Vec::new(),
            concurrency_key: None,
            max_concurrent: None,
            node_selector: Default::default(),
            folder: None,
            params: None,
            params_from_result: Default::default(),
            overlap,
            missed,
            retries: Retries {
                attempts: self.attempts as u32,
                backoff_s: self.backoff_s,
            },
            enabled: self.enabled,
            next_fire: self.next_fire.map(Timestamp),
            next_fires: Vec::new(),
            skipped_fires: self.skipped_fires as u64,
            created_at: Timestamp(self.created_at),
            updated_at: Timestamp(self.updated_at),
            last_run,
            followers: None,
            spec: spec_of(id, &self.spec)?,
        }
        .with_job_fields())
    }
}

/// A schedule's columns as written: cron or trigger, time zone, spec
/// JSON, overlap, missed, attempts, backoff.
pub(crate) struct SavedColumns {
    pub cron: Option<String>,
    pub after_id: Option<ScheduleId>,
    pub after_states: Option<String>,
    pub timezone: &'static str,
    pub spec: String,
    pub overlap: &'static str,
    pub missed: &'static str,
    pub attempts: i64,
    pub backoff_s: f64,
}

impl SavedColumns {
    pub fn of(s: &ValidSchedule) -> Result<SavedColumns> {
        let (cron, zone) = match &s.firing {
            Firing::Cron(t) => (Some(t.cron.as_str().to_owned()), t.zone),
            // Only a cron expression reads a zone.
            Firing::After(_) | Firing::OnDemand => (None, Zone::UTC),
        };
        let after = s.firing.after();
        Ok(SavedColumns {
            cron,
            after_id: after.map(|a| a.schedule_id),
            after_states: after.map(After::states_text),
            timezone: zone.name(),
            spec: serde_json::to_string(&s.job.spec)
                .map_err(|e| StoreError::Database(format!("encoding a schedule's job: {e}")))?,
            overlap: s.overlap.name(),
            missed: s.missed.name(),
            attempts: i64::from(s.retries.attempts),
            backoff_s: s.retries.backoff_s,
        })
    }
}

/// The columns a job row has besides its spec, taken from it: what the
/// store searches by (its schedule's fire, its concurrency key, its node selector).
pub(crate) struct JobKeys {
    pub schedule_id: Option<ScheduleId>,
    pub fire_time: Option<i64>,
    pub attempt: Option<i64>,
    pub concurrency_key: Option<String>,
    pub max_concurrent: Option<i64>,
    /// Its `node_selector` in the stored form (`Labels::canonical`).
    pub node_selector: String,
    /// Its folder, which a listing limited to folders walks by.
    pub folder: Option<String>,
}

impl JobKeys {
    pub fn of(spec: &JobSpec) -> JobKeys {
        JobKeys {
            schedule_id: spec.schedule.map(|s| s.schedule_id),
            fire_time: spec.schedule.and_then(|s| s.fire_us),
            attempt: spec.schedule.map(|s| i64::from(s.attempt)),
            concurrency_key: spec.concurrency.as_ref().map(|c| c.key.clone()),
            max_concurrent: spec.concurrency.as_ref().map(|c| i64::from(c.max)),
            node_selector: spec.node_selector.canonical(),
            folder: spec.folder.clone(),
        }
    }
}

/// The columns `FireDue` reads of a due schedule, in this order.
macro_rules! due_columns {
    () => {
        "id, name, cron, timezone, spec, overlap, missed, attempts, backoff_s, next_fire"
    };
}
pub(crate) use due_columns;

/// A due schedule, as `FireDue` reads it.
pub(crate) struct DueRow {
    pub id: ScheduleId,
    pub name: String,
    pub cron: Option<String>,
    pub timezone: String,
    pub spec: String,
    pub overlap: String,
    pub missed: String,
    pub attempts: i64,
    pub backoff_s: f64,
    pub next_fire: i64,
}

/// What to do with one due schedule.
pub(crate) struct FirePlan {
    pub name: String,
    /// Each fire's job, oldest first.
    pub jobs: Vec<JobSpec>,
    /// Fires after the first make no job while one of the schedule's
    /// jobs is queued or running (overlap `skip`).
    pub skip_if_active: bool,
    /// Missed fires the policy skipped.
    pub skipped: u64,
    /// Its next fire.
    pub next: Option<Timestamp>,
}

impl FirePlan {
    /// The jobs to make, given whether a run of the schedule is queued or
    /// running (`active`), and the fires skipped in all: with overlap
    /// `skip`, none while one is active, else the first fire only (its
    /// job is then the active one); the missed ones the policy skipped.
    pub fn to_make(&self, active: bool) -> (&[JobSpec], u64) {
        let n = self.jobs.len();
        let making = match (self.skip_if_active, active) {
            (false, _) => n,
            (true, true) => 0,
            (true, false) => n.min(1),
        };
        (&self.jobs[..making], self.skipped + (n - making) as u64)
    }
}

impl DueRow {
    /// Its fires due at `now`; an error when the row cannot be read (the
    /// caller disables the schedule rather than fail the batch, which
    /// carries other jobs' records).
    pub fn plan(self, now: Timestamp) -> std::result::Result<FirePlan, String> {
        // A trigger's row has no next fire: never due, unless mended by hand.
        let cron = self
            .cron
            .as_deref()
            .ok_or("a due schedule without a cron expression")?;
        let cron = CronExpr::parse(cron).map_err(|e| e.to_string())?;
        let zone = Zone::parse(&self.timezone).map_err(|e| e.to_string())?;
        let (overlap, missed) =
            policies(self.id, &self.overlap, &self.missed).map_err(|e| e.to_string())?;
        let spec = spec_of(self.id, &self.spec).map_err(|e| e.to_string())?;
        let retries = Retries {
            attempts: u32::try_from(self.attempts).unwrap_or(1),
            backoff_s: self.backoff_s,
        };
        let timing = Timing { cron, zone };
        let d = due(&timing, missed, Timestamp(self.next_fire), now);
        Ok(FirePlan {
            name: self.name,
            jobs: d
                .fires
                .iter()
                .map(|f| fire_job(self.id, &spec, overlap, retries, Some(*f), None))
                .collect(),
            skip_if_active: overlap == Overlap::Skip,
            skipped: d.skipped,
            next: d.next,
        })
    }
}

/// What a `FireDue` did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fired {
    /// The jobs its fires made.
    pub jobs: Vec<Job>,
    /// Fires that made no job (overlap or missed policy).
    pub skipped: u64,
    /// Schedules whose row could not be read, now disabled, and why.
    pub broken: Vec<(ScheduleId, String)>,
    /// More schedules were due than one `FireDue` handles: ask again.
    pub more: bool,
    /// Nothing was fired: the scheduler is paused, or the node asked to
    /// drain. Due fires stay due (their `missed` policy applies once it
    /// resumes).
    pub held: bool,
}

/// What saving a schedule did.
#[derive(Debug, Clone, PartialEq)]
pub enum ScheduleSaved {
    Saved(Box<Schedule>),
    /// Another schedule has that name.
    NameTaken,
    /// No schedule has that id (an update).
    NotFound,
    /// Its trigger (`after`) names no schedule, makes a cycle or too long
    /// a chain: why, for a client.
    BadTrigger(String),
}

/// What deleting a schedule did.
#[derive(Debug, Clone, PartialEq)]
pub enum ScheduleDeleted {
    Deleted,
    NotFound,
    /// Other schedules run after it (their ids and names): refused.
    Followed(Vec<(ScheduleId, String)>),
}
