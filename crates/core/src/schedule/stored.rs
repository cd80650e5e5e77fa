//! A schedule as stored and shown (`Schedule`), the jobs its fires make
//! (`fire_job`, each carrying a `ScheduledRun`), and the attempts that
//! follow a failed run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    After, CronExpr, Follower, Missed, NewSchedule, Overlap, Retries, Timing, TriggeredBy,
    ValidSchedule, Zone, SHOWN_FIRES,
};
use crate::job::{invalid, Concurrency, RESERVED_KEY_PREFIX};
use crate::{JobSpec, JobState, Labels, Timestamp, ValidationError};

pub type ScheduleId = i64;

/// Largest page of schedules a listing returns.
pub const MAX_SCHEDULE_LIMIT: u32 = 1000;

/// A stored schedule, as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Schedule {
    pub id: ScheduleId,
    pub name: String,
    /// `null` on a schedule that runs `after` another.
    pub cron: Option<String>,
    pub timezone: String,
    /// The schedule whose jobs' ends start this one's (in place of `cron`).
    pub after: Option<After>,
    pub command: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    pub env: BTreeMap<String, String>,
    pub timeout_s: Option<f64>,
    pub cwd: Option<String>,
    /// Names of the secrets each run is given.
    pub secrets: Vec<String>,
    pub concurrency_key: Option<String>,
    pub max_concurrent: Option<u32>,
    /// The labels the node that runs each of its jobs must have.
    pub node_selector: Labels,
    /// The folder it and each of its jobs belong to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// The parameters each run takes (`null`: none).
    pub params: Option<crate::params::ParamsSchema>,
    /// Parameters taken from the triggering job's result, by JSON
    /// Pointer (`{}` unless it runs `after` another).
    pub params_from_result: BTreeMap<String, String>,
    pub overlap: Overlap,
    pub missed: Missed,
    pub retries: Retries,
    pub enabled: bool,
    /// When it fires next (`null` while disabled).
    pub next_fire: Option<Timestamp>,
    /// The next fires from now, filled in by whoever shows it.
    pub next_fires: Vec<Timestamp>,
    /// Fires that made no job: skipped by the overlap or missed policy.
    pub skipped_fires: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Its latest job.
    pub last_run: Option<LastRun>,
    /// The schedules that run after this one, on one schedule's page
    /// (absent from listings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub followers: Option<Vec<Follower>>,
    /// The job each fire submits (what `command`, `env`… above show).
    #[serde(skip)]
    pub spec: JobSpec,
}

/// A schedule's latest job, for listings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LastRun {
    pub job_id: crate::JobId,
    pub state: JobState,
    pub fire_time: Option<Timestamp>,
    pub attempt: u32,
    pub created_at: Timestamp,
    pub finished_at: Option<Timestamp>,
}

impl Schedule {
    /// Fills `command`, `script`… from `spec` (stores build a schedule
    /// from its row, then call this).
    pub fn with_job_fields(mut self) -> Schedule {
        let spec = &self.spec;
        self.command = spec.command.clone();
        self.script = spec.script().map(str::to_owned);
        self.shell = spec.shell.clone();
        self.env = spec.env.clone();
        self.timeout_s = spec.timeout_s;
        self.cwd = spec.cwd.clone();
        self.secrets = spec.secret_names.clone();
        self.concurrency_key = spec.concurrency.as_ref().map(|c| c.key.clone());
        self.max_concurrent = spec.concurrency.as_ref().map(|c| c.max);
        self.node_selector = spec.node_selector.clone();
        self.folder = spec.folder.clone();
        self.params = spec.params_schema.clone();
        self.params_from_result = spec.params_from_result.clone();
        self
    }

    /// Its timing, as stored: `None` for a schedule that runs after
    /// another.
    pub fn timing(&self) -> Result<Option<Timing>, ValidationError> {
        let Some(cron) = &self.cron else {
            return Ok(None);
        };
        Ok(Some(Timing {
            cron: CronExpr::parse(cron)?,
            zone: Zone::parse(&self.timezone)?,
        }))
    }

    /// Fills `next_fires`: its next fire and the ones after it, up to
    /// [`SHOWN_FIRES`] (none while disabled).
    pub fn with_next_fires(mut self) -> Schedule {
        self.next_fires = match (self.next_fire, self.timing()) {
            (Some(first), Ok(Some(timing))) => std::iter::once(first)
                .chain(timing.fires_after(first))
                .take(SHOWN_FIRES)
                .collect(),
            _ => Vec::new(),
        };
        self
    }

    /// This schedule with `patch`'s fields (any of a [`NewSchedule`]'s)
    /// in place of its own, checked whole as a new one would be. Giving
    /// `command` drops the script, and the other way round.
    pub fn patched(
        &self,
        patch: serde_json::Map<String, serde_json::Value>,
        now: Timestamp,
    ) -> Result<ValidSchedule, ValidationError> {
        use serde_json::{json, Value};
        let mut body = serde_json::Map::new();
        let mut put = |k: &str, v: Value| {
            body.insert(k.to_owned(), v);
        };
        put("name", json!(self.name));
        match &self.after {
            Some(after) => put("after", json!(after)),
            None => put("cron", json!(self.cron)),
        }
        put("timezone", json!(self.timezone));
        match &self.script {
            Some(script) => {
                put("script", json!(script));
                put("shell", json!(self.shell));
            }
            None => put("command", json!(self.command)),
        }
        put("env", json!(self.env));
        put("timeout_s", json!(self.timeout_s));
        put("cwd", json!(self.cwd));
        put("secrets", json!(self.secrets));
        put("concurrency_key", json!(self.concurrency_key));
        put("max_concurrent", json!(self.max_concurrent));
        put("node_selector", json!(self.node_selector));
        put("folder", json!(self.folder));
        put("params", json!(self.params));
        put("params_from_result", json!(self.params_from_result));
        put("overlap", json!(self.overlap));
        put("missed", json!(self.missed));
        put("retries", json!(self.retries));
        put("enabled", json!(self.enabled));
        if patch.contains_key("command") {
            body.remove("script");
            body.remove("shell");
        }
        if patch.contains_key("script") {
            body.remove("command");
        }
        // One replaces the other; `null` for the one given drops it.
        if patch.contains_key("after") {
            body.remove("cron");
        }
        if patch.contains_key("cron") {
            body.remove("after");
        }
        if patch.contains_key("concurrency_key") && !patch.contains_key("max_concurrent") {
            body.remove("max_concurrent");
        }
        body.extend(patch);
        let new: NewSchedule = serde_json::from_value(Value::Object(body))
            .map_err(|e| invalid("body", e.to_string()))?;
        new.validate(now)
    }
}

/// Which schedule, fire and attempt a job runs for; kept in its spec.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScheduledRun {
    pub schedule_id: ScheduleId,
    /// The fire time in microseconds; `None` for a run asked with
    /// run-now.
    pub fire_us: Option<i64>,
    /// From 1.
    pub attempt: u32,
    /// The schedule's retries when it fired (an edit does not change the
    /// attempts of fires already made).
    pub retries: Retries,
    /// Set on a run queued by another job's end (`after`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<TriggeredBy>,
    /// On an attempt after the first: the job of the attempt before, whose
    /// secrets in memory (secret parameters) the node that ran it keeps
    /// for this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<crate::JobId>,
}

impl ScheduledRun {
    pub fn fire_time(&self) -> Option<Timestamp> {
        self.fire_us.map(Timestamp)
    }

    /// The attempt after this one ended as `state` at `ended_at`, and the
    /// earliest it may start: for a failed, timed-out or interrupted run
    /// (its node stopped, died or was lost: a crash must not take the
    /// night's run) with attempts left. Cancelled runs are not retried:
    /// someone chose to stop them.
    pub fn retry(&self, state: JobState, ended_at: Timestamp) -> Option<(ScheduledRun, Timestamp)> {
        if !matches!(
            state,
            JobState::Failed | JobState::TimedOut | JobState::Interrupted
        ) || self.attempt >= self.retries.attempts
        {
            return None;
        }
        let delay = self.retries.delay_after(self.attempt).as_micros() as i64;
        let next = ScheduledRun {
            attempt: self.attempt + 1,
            ..*self
        };
        Some((next, Timestamp(ended_at.0.saturating_add(delay))))
    }
}

/// The job that schedule `id` submits for a fire (`None`: run-now, or
/// a trigger's): its spec with the run's [`ScheduledRun`], and with
/// overlap `queue` a concurrency key of its own (`schedule:<id>`, one at
/// a time).
pub fn fire_job(
    id: ScheduleId,
    spec: &JobSpec,
    overlap: Overlap,
    retries: Retries,
    fire: Option<Timestamp>,
    trigger: Option<TriggeredBy>,
) -> JobSpec {
    let mut spec = spec.clone();
    // The schedule's own, not its jobs'.
    spec.params_from_result = BTreeMap::new();
    spec.params = spec
        .params_schema
        .as_ref()
        .map(|schema| schema.defaults().recorded());
    spec.schedule = Some(ScheduledRun {
        schedule_id: id,
        fire_us: fire.map(Timestamp::micros),
        attempt: 1,
        retries,
        trigger,
        previous: None,
    });
    if overlap == Overlap::Queue {
        spec.concurrency = Some(Concurrency {
            key: format!("{RESERVED_KEY_PREFIX}{id}"),
            max: 1,
        });
    }
    spec
}

/// The job of a triggered run of a schedule whose spec is `schedule`:
/// [`fire_job`]'s, with each parameter `params_from_result` maps taken
/// from `result` (the triggering job's stored result blob, decoded only
/// when something is mapped). A result that cannot be read, or that the
/// schema refuses, leaves the job `params_error`: it is queued (the
/// trigger happened) but does not start, and says why.
pub fn triggered_job(
    id: ScheduleId,
    schedule: &JobSpec,
    overlap: Overlap,
    retries: Retries,
    trigger: TriggeredBy,
    result: Option<&[u8]>,
) -> JobSpec {
    let mut spec = fire_job(id, schedule, overlap, retries, None, Some(trigger));
    let (Some(schema), false) = (
        &schedule.params_schema,
        schedule.params_from_result.is_empty(),
    ) else {
        return spec;
    };
    let by = trigger.job_id;
    let json = match result.map(crate::result_blob::decode).transpose() {
        Ok(bytes) => bytes,
        Err(e) => {
            spec.params_error = Some(format!(
                "params_from_result: job {by}'s result could not be read ({e})"
            ));
            return spec;
        }
    };
    let filled = match json
        .as_deref()
        .map(serde_json::from_slice::<serde_json::Value>)
    {
        Some(Err(e)) => Err(format!(
            "params_from_result: job {by}'s result is not JSON ({e})"
        )),
        Some(Ok(v)) => schema
            .fill_from_result(&schedule.params_from_result, Some(&v), by)
            .map_err(|e| e.to_string()),
        None => schema
            .fill_from_result(&schedule.params_from_result, None, by)
            .map_err(|e| e.to_string()),
    };
    match filled {
        Ok(params) => spec.params = Some(params.recorded()),
        Err(why) => spec.params_error = Some(why),
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(attempt: u32, attempts: u32) -> ScheduledRun {
        ScheduledRun {
            schedule_id: 3,
            fire_us: Some(1_000),
            attempt,
            retries: Retries {
                attempts,
                backoff_s: 10.0,
            },
            trigger: None,
            previous: None,
        }
    }

    #[test]
    fn a_failed_run_with_attempts_left_is_tried_again_later() {
        let ended = Timestamp(5_000_000);
        let (next, at) = run(1, 3).retry(JobState::Failed, ended).unwrap();
        assert_eq!((next.attempt, next.fire_us), (2, Some(1_000)));
        assert_eq!(at, Timestamp(15_000_000), "10 s later");
        let (third, at) = next.retry(JobState::TimedOut, ended).unwrap();
        assert_eq!(third.attempt, 3);
        assert_eq!(at, Timestamp(25_000_000), "doubled");
        assert_eq!(
            third.retry(JobState::Failed, ended),
            None,
            "no attempts left"
        );
        for state in [JobState::Succeeded, JobState::Cancelled] {
            assert_eq!(run(1, 3).retry(state, ended), None, "{state:?}");
        }
        let (lost, _) = run(1, 3).retry(JobState::Interrupted, ended).unwrap();
        assert_eq!(lost.attempt, 2, "a run its node took is tried again");
    }

    #[test]
    fn a_fire_job_carries_its_run_and_queue_gets_its_own_key() {
        let spec = JobSpec {
            command: vec!["true".into()],
            ..JobSpec::default()
        };
        let job = fire_job(
            7,
            &spec,
            Overlap::Queue,
            Retries::NONE,
            Some(Timestamp(9)),
            None,
        );
        assert_eq!(job.schedule.unwrap().fire_time(), Some(Timestamp(9)));
        assert_eq!(job.schedule.unwrap().attempt, 1);
        assert_eq!(
            job.concurrency,
            Some(Concurrency {
                key: "schedule:7".into(),
                max: 1
            })
        );
        let job = fire_job(7, &spec, Overlap::Skip, Retries::NONE, None, None);
        assert_eq!(job.concurrency, None);
        assert_eq!(job.schedule.unwrap().fire_time(), None, "run-now");
        // The spec travels as JSON in the store.
        let back: JobSpec = serde_json::from_str(&serde_json::to_string(&job).unwrap()).unwrap();
        assert_eq!(back, job);
    }
}
