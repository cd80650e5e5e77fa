//! Schedules: stored definitions that run a job on a cron expression in a
//! time zone, or after another schedule's jobs end, with policies for
//! overlapping runs, missed fires and retries. `timing.rs` computes
//! fires, `after.rs` defines triggers, `policy.rs` holds the policies,
//! `plan.rs` which fires a waking scheduler runs; this file is the
//! definition a client sends and its checks.

mod after;
mod plan;
mod policy;
mod stored;
mod timing;

use std::collections::BTreeMap;

use serde::Deserialize;

pub use after::{After, AfterSpec, Firing, Follower, TriggeredBy, MAX_CHAIN};
pub use plan::{due, Due, MAX_COUNTED, MISSED_AFTER};
pub use policy::{Missed, Overlap, Retries, MAX_ATTEMPTS, MAX_MISSED_RUNS};
pub use stored::{
    fire_job, triggered_job, LastRun, Schedule, ScheduleId, ScheduledRun, MAX_SCHEDULE_LIMIT,
};
pub use timing::{CronExpr, Timing, Zone};

use crate::job::invalid;
use crate::params::ParamsSchema;
use crate::{NewJobRequest, Timestamp, ValidJob, ValidationError};

/// Fires a schedule shows ahead (`joblog schedule show`, the API).
pub const SHOWN_FIRES: usize = 5;

/// A schedule as a client sends it (`POST /api/v1/schedules`): its name,
/// when it fires (`cron`, or `after` another schedule), the job it
/// submits (the fields of a job submission, checked as one) and its
/// policies.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewSchedule {
    pub name: String,
    #[serde(default)]
    pub cron: Option<String>,
    #[serde(default)]
    pub after: Option<AfterSpec>,
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
    /// Names of secrets each run is given, never their values: the node
    /// that runs it takes each from its environment (`JOBLOG_SECRET_<NAME>`).
    #[serde(default, deserialize_with = "secret_names")]
    pub secrets: Vec<String>,
    #[serde(default)]
    pub concurrency_key: Option<String>,
    #[serde(default)]
    pub max_concurrent: Option<u32>,
    /// Labels the node that runs each of its jobs must have.
    #[serde(default)]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// The folder it and each of its jobs belong to.
    #[serde(default)]
    pub folder: Option<String>,
    #[serde(default, deserialize_with = "overlap")]
    pub overlap: Overlap,
    #[serde(default, deserialize_with = "missed")]
    pub missed: Missed,
    #[serde(default)]
    pub retries: Option<Retries>,
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
    /// The parameters each run takes: a JSON Schema subset
    /// ([`crate::params`]). `null`: none.
    #[serde(default)]
    pub params: Option<serde_json::Value>,
    /// On a schedule that runs `after` another: parameters taken from
    /// the triggering job's result, each by JSON Pointer.
    #[serde(default)]
    pub params_from_result: Option<BTreeMap<String, String>>,
}

fn enabled_by_default() -> bool {
    true
}

// A wrong value names its field: serde's own message for an enum or a
// list does not.
fn overlap<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Overlap, D::Error> {
    let text = String::deserialize(d)?;
    Overlap::parse(&text).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "overlap: {text:?} is not one of skip, queue, allow"
        ))
    })
}

fn missed<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Missed, D::Error> {
    let text = String::deserialize(d)?;
    Missed::parse(&text).ok_or_else(|| {
        serde::de::Error::custom(format!("missed: {text:?} is not one of skip, one, all"))
    })
}

fn secret_names<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Vec::<String>::deserialize(d).map_err(|_| {
        serde::de::Error::custom(
            "secrets: a schedule takes a list of secret names (never their values), such as [\"DB_PASSWORD\"]",
        )
    })
}

/// A schedule that passed its checks.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidSchedule {
    pub name: String,
    pub firing: Firing,
    /// The job each fire submits, named after the schedule.
    pub job: ValidJob,
    pub overlap: Overlap,
    pub missed: Missed,
    pub retries: Retries,
    pub enabled: bool,
}

impl NewSchedule {
    /// Checks every field, naming the first one at fault. A schedule
    /// needs a name (its jobs carry it) and at most one of a cron
    /// expression that fires at least once more after `now` and a trigger
    /// (`after`); with neither it is a saved job, run only when asked. Whether the trigger's schedule exists and makes no cycle is
    /// the store's to check, when it saves.
    pub fn validate(self, now: Timestamp) -> Result<ValidSchedule, ValidationError> {
        if self.name.trim().is_empty() {
            return Err(invalid("name", "missing: a schedule needs a name"));
        }
        let zone = match &self.timezone {
            Some(name) => Zone::parse(name)?,
            None => Zone::UTC,
        };
        let firing = match (self.cron, self.after) {
            (Some(cron), None) => {
                let timing = Timing {
                    cron: CronExpr::parse(&cron)?,
                    zone,
                };
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
                Firing::Cron(Box::new(timing))
            }
            (None, Some(after)) => Firing::After(after.validate()?),
            (Some(_), Some(_)) => return Err(invalid(
                "after",
                "a schedule fires on cron or after another schedule, not both: give one of the two",
            )),
            // A saved job: run when someone runs it.
            (None, None) => Firing::OnDemand,
        };
        if self.overlap == Overlap::Queue && self.concurrency_key.is_some() {
            return Err(invalid(
                "concurrency_key",
                "a schedule with overlap \"queue\" queues its runs behind a key of its own: leave concurrency_key out, or choose overlap \"allow\"",
            ));
        }
        let params_schema = match &self.params {
            None | Some(serde_json::Value::Null) => None,
            Some(schema) => Some(ParamsSchema::parse(schema)?),
        };
        let params_from_result = self.params_from_result.unwrap_or_default();
        check_params(&firing, params_schema.as_ref(), &params_from_result)?;
        let mut secret_names = Vec::with_capacity(self.secrets.len());
        for name in self.secrets {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(invalid(
                    "secrets",
                    format!("{name:?} is not a secret name (letters, digits and _): a schedule takes the names of secrets, never their values"),
                ));
            }
            if !secret_names.contains(&name) {
                secret_names.push(name);
            }
        }
        secret_names.sort();
        let mut job = NewJobRequest {
            command: self.command,
            script: self.script,
            shell: self.shell,
            name: Some(self.name.clone()),
            env: self.env,
            secrets: BTreeMap::new(),
            timeout_s: self.timeout_s,
            cwd: self.cwd,
            concurrency_key: self.concurrency_key,
            max_concurrent: self.max_concurrent,
            node_selector: self.node_selector,
            folder: self.folder,
            params_schema: None,
            params: None,
            rerun_of: None,
        }
        .validate()?;
        job.spec.secret_names = secret_names;
        job.spec.params_schema = params_schema;
        job.spec.params_from_result = params_from_result;
        let retries = self.retries.unwrap_or(Retries::NONE).validate()?;
        Ok(ValidSchedule {
            name: self.name,
            firing,
            job,
            overlap: self.overlap,
            missed: self.missed,
            retries,
            enabled: self.enabled,
        })
    }
}

/// A schedule that fires by itself must be able to fill each run's
/// parameters: a required one without a default is refused unless a
/// trigger maps it from the result. Mapping goes with `after` alone.
fn check_params(
    firing: &Firing,
    schema: Option<&ParamsSchema>,
    mapping: &BTreeMap<String, String>,
) -> Result<(), ValidationError> {
    if !mapping.is_empty() {
        if firing.after().is_none() {
            return Err(invalid(
                "params_from_result",
                "takes a triggering job's result: it goes with after",
            ));
        }
        let Some(schema) = schema else {
            return Err(invalid(
                "params_from_result",
                "maps a result to parameters: declare them in params",
            ));
        };
        schema.check_mapping(mapping)?;
    }
    let (Some(schema), Some(how)) = (
        schema,
        match firing {
            Firing::OnDemand => None,
            Firing::Cron(_) => Some("on cron"),
            Firing::After(_) => Some("after another"),
        },
    ) else {
        return Ok(());
    };
    let lacking: Vec<&str> = schema
        .unfillable()
        .into_iter()
        .filter(|name| !mapping.contains_key(*name))
        .collect();
    if lacking.is_empty() {
        return Ok(());
    }
    Err(invalid(
        "params",
        format!(
            "a schedule that fires {how} runs with the defaults, and {} {} required without a default: give each a default{}, or make it a saved job (neither cron nor after)",
            lacking.join(", "),
            if lacking.len() == 1 { "is" } else { "are" },
            if how == "after another" { " or map it in params_from_result" } else { "" },
        ),
    ))
}

#[cfg(test)]
mod tests;
