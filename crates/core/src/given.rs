//! What a job was given besides its command — shown with it, and enough to
//! submit it again (`rerun`), secrets by name only.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::job::invalid;
use crate::schedule::ScheduleId;
use crate::{Job, JobId, JobSpec, Labels, NewJobRequest, Timestamp, ValidationError};

/// What a job was submitted with besides its command and name: enough to
/// see how it ran and to submit it again (never a secret's value).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Given {
    pub cwd: Option<String>,
    pub timeout_s: Option<f64>,
    pub env: BTreeMap<String, String>,
    /// Names of the secrets it was given; their values are never kept.
    pub secret_names: Vec<String>,
    /// The script, when it was submitted as one (it is also the last
    /// argument of `command`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    /// The job this one is a rerun of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerun_of: Option<JobId>,
    /// The schedule whose run this is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_id: Option<ScheduleId>,
    /// The fire it runs for (`null` on a schedule's run asked with
    /// run-now or queued by a trigger); absent for jobs not from a
    /// schedule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fire_time: Option<Option<Timestamp>>,
    /// Its attempt at that fire, from 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// The job whose end queued it (its schedule runs `after` that
    /// job's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub triggered_by: Option<JobId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrent: Option<u32>,
    /// The labels the node that runs it must have.
    #[serde(skip_serializing_if = "Labels::is_empty")]
    pub node_selector: Labels,
    /// The folder it belongs to; absent: none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// The parameters it declares (its saved job's, or its own), so that
    /// a rerun asks the same; absent: none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params_schema: Option<crate::params::ParamsSchema>,
    /// The values it ran with, a secret one `null`; absent: none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Map<String, serde_json::Value>>,
}

impl Given {
    pub fn of(spec: &JobSpec) -> Given {
        Given {
            cwd: spec.cwd.clone(),
            timeout_s: spec.timeout_s,
            env: spec.env.clone(),
            secret_names: spec.secret_names.clone(),
            script: spec.script().map(str::to_owned),
            shell: spec.shell.clone(),
            rerun_of: spec.rerun_of,
            schedule_id: spec.schedule.map(|s| s.schedule_id),
            fire_time: spec.schedule.map(|s| s.fire_time()),
            attempt: spec.schedule.map(|s| s.attempt),
            triggered_by: spec.schedule.and_then(|s| s.trigger).map(|t| t.job_id),
            concurrency_key: spec.concurrency.as_ref().map(|c| c.key.clone()),
            max_concurrent: spec.concurrency.as_ref().map(|c| c.max),
            node_selector: spec.node_selector.clone(),
            folder: spec.folder.clone(),
            params_schema: spec.params_schema.clone(),
            params: spec.params.clone(),
        }
    }
}

impl Job {
    /// The request that submits this job again: same name, command (or
    /// script and shell), environment, timeout and directory, marked as a
    /// rerun of it. Its secrets' values are not kept: `secrets` must give
    /// every one of them again, and `params` every secret parameter
    /// (any other it gives replaces the value the job ran with).
    pub fn rerun_request(
        &self,
        secrets: BTreeMap<String, String>,
        params: serde_json::Map<String, serde_json::Value>,
    ) -> Result<NewJobRequest, ValidationError> {
        let missing: Vec<&str> = self
            .spec
            .secret_names
            .iter()
            .filter(|n| !secrets.contains_key(*n))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(invalid(
                "secrets",
                format!(
                    "job {} was given secrets whose values joblog never keeps; give them again: {}",
                    self.id,
                    missing.join(", ")
                ),
            ));
        }
        let params = self.rerun_params(params)?;
        let (command, script, shell) = match (self.spec.script(), &self.spec.shell) {
            (Some(script), Some(shell)) => (None, Some(script.to_owned()), Some(shell.clone())),
            _ => (Some(self.spec.command.clone()), None, None),
        };
        Ok(NewJobRequest {
            command,
            script,
            shell,
            name: self.name.clone(),
            env: self.spec.env.clone(),
            secrets,
            timeout_s: self.spec.timeout_s,
            cwd: self.spec.cwd.clone(),
            // A schedule's own key (overlap "queue") is not the rerun's.
            concurrency_key: self
                .given
                .concurrency_key
                .clone()
                .filter(|k| !k.starts_with(crate::job::RESERVED_KEY_PREFIX)),
            max_concurrent: self
                .given
                .concurrency_key
                .as_ref()
                .filter(|k| !k.starts_with(crate::job::RESERVED_KEY_PREFIX))
                .and(self.given.max_concurrent),
            node_selector: (!self.spec.node_selector.is_empty())
                .then(|| self.spec.node_selector.clone().into()),
            folder: self.spec.folder.clone(),
            params_schema: self.spec.params_schema.as_ref().map(|s| s.to_json()),
            params,
            rerun_of: Some(self.id),
        })
    }

    /// The parameters of its rerun: the values it ran with, `given` in
    /// place of any, and each secret one (never kept) from `given`.
    fn rerun_params(
        &self,
        given: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Option<serde_json::Map<String, serde_json::Value>>, ValidationError> {
        let Some(ran_with) = &self.spec.params else {
            return Ok((!given.is_empty()).then_some(given));
        };
        if let Some(name) = crate::params::secret_names(ran_with)
            .find(|n| given.get(*n).is_none_or(|v| v.is_null()))
        {
            return Err(ValidationError {
                field: format!("params.{name}").into(),
                message: format!(
                    "job {} was given this secret parameter, whose value joblog never keeps: give it again",
                    self.id
                ),
            });
        }
        let mut params: serde_json::Map<String, serde_json::Value> = ran_with
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        params.extend(given);
        Ok(Some(params))
    }
}
