//! What a job is given besides its spec: its secrets (a schedule's named
//! ones from this node's environment, a submission's and secret
//! parameters from this node's memory), its parameters as variables and
//! as a file that is never on disk, and the reasons it cannot start
//! with what it has.

use std::collections::BTreeMap;
use std::io::{Seek, Write};
use std::os::fd::OwnedFd;

use joblog_core::params::{env_name, env_text, secret_names, whole};
use joblog_core::Job;

use crate::Engine;

/// The secrets a job runs with, and those it was refused.
pub(crate) struct Secrets {
    /// By variable name.
    pub values: BTreeMap<String, String>,
    /// Named secrets this node does not give the job's schedule
    /// (`node_secret_scopes`).
    pub refused: Vec<String>,
    /// Those its submission left in this node's memory (a retry of it
    /// needs them again).
    pub in_memory: BTreeMap<String, String>,
}

impl Engine {
    /// Gathers `job`'s secrets: a schedule's named ones from this node's
    /// environment, as far as its scopes allow, and whatever its
    /// submission left in this node's memory.
    pub(crate) async fn secrets_of(&self, job: &Job) -> Secrets {
        let cfg = &self.inner.config;
        let id = job.id;
        let mut values = BTreeMap::new();
        let mut refused = Vec::new();
        if job.spec.schedule.is_some() {
            // Only to the schedules each is allowed to
            // (`node_secret_scopes`): whoever may create a schedule must
            // not get every node secret.
            let schedule_name = job.name.as_deref().unwrap_or("");
            for name in &job.spec.secret_names {
                if !crate::run::secret_allowed(&cfg.node_secret_scopes, name, schedule_name) {
                    refused.push(name.clone());
                } else if let Some(v) = cfg.node_secrets.get(name) {
                    values.insert(name.clone(), v.clone());
                }
            }
        }
        let mut kept = self.lock_secrets().remove(&id);
        if kept.is_none() && job.spec.holds_secrets_in_memory() {
            // Claimed before its submission here stored the secrets:
            // wait for submissions in flight, then look again.
            drop(self.inner.jobs.submitting.write().await);
            kept = self.lock_secrets().remove(&id);
        }
        if kept.is_none() {
            // An attempt after the first: the secrets its first was given.
            if let Some(previous) = job.spec.schedule.and_then(|r| r.previous) {
                kept = self.lock_held_for_retry().remove(&previous);
            }
        }
        let in_memory = kept.unwrap_or_default();
        values.extend(in_memory.clone());
        Secrets {
            values,
            refused,
            in_memory,
        }
    }

    /// Keeps the secrets in memory of `job`, which ended as `state`, for
    /// its next attempt, if one follows: it runs on this node (pinned),
    /// and takes them by `previous`.
    pub(crate) fn hold_for_retry(&self, job: &Job, state: joblog_core::JobState, secrets: Secrets) {
        let retried = job
            .spec
            .schedule
            .is_some_and(|r| r.retry(state, joblog_core::Timestamp::now()).is_some());
        if retried && !secrets.in_memory.is_empty() {
            self.lock_held_for_retry().insert(job.id, secrets.in_memory);
        }
    }

    fn lock_held_for_retry(
        &self,
    ) -> std::sync::MutexGuard<
        '_,
        std::collections::HashMap<joblog_core::JobId, BTreeMap<String, String>>,
    > {
        self.inner
            .jobs
            .held_for_retry
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}

impl Secrets {
    /// Why `job` cannot start with these secrets and its parameters, in
    /// words for its log; `None` when it can.
    pub(crate) fn why_not_started(&self, job: &Job, node: &str) -> Option<String> {
        if !self.refused.is_empty() {
            let vars: Vec<String> = self
                .refused
                .iter()
                .map(|n| format!("JOBLOG_ALLOW_SECRET_{n}"))
                .collect();
            return Some(format!(
                "joblog: not started: node {node} does not allow the schedule {:?} its secrets {}; list the schedule's name in {} in that server's environment",
                job.name.as_deref().unwrap_or(""),
                self.refused.join(", "),
                vars.join(", ")
            ));
        }
        let missing: Vec<&str> = job
            .spec
            .secret_names
            .iter()
            .filter(|n| !self.values.contains_key(*n))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Some(if job.spec.schedule.is_some() {
                let vars: Vec<String> = missing
                    .iter()
                    .map(|n| format!("JOBLOG_SECRET_{n}"))
                    .collect();
                format!(
                    "joblog: not started: its schedule gives it secrets that node {node} does not have ({}); set {} in that server's environment",
                    missing.join(", "),
                    vars.join(", ")
                )
            } else {
                format!(
                    "joblog: not started: its secrets ({}) are kept only in the memory of the node it was submitted to, and that is gone (server restarted?); submit the job again",
                    missing.join(", ")
                )
            });
        }
        if let Some(why) = &job.spec.params_error {
            return Some(format!("joblog: not started: {why}"));
        }
        let lost: Vec<&str> = job
            .spec
            .params
            .iter()
            .flat_map(secret_names)
            .filter(|n| !self.values.contains_key(&env_name(n)))
            .collect();
        if !lost.is_empty() {
            return Some(format!(
                "joblog: not started: its secret parameters ({}) are kept only in the memory of the node it was given to, and that is gone (server restarted?); run it again",
                lost.join(", ")
            ));
        }
        None
    }
}

/// A job's parameters as it is given them: `JOBLOG_PARAM_<NAME>` for each
/// one not secret (secret ones are among its secrets), and the whole as
/// JSON in a sealed memory file the job inherits (`JOBLOG_PARAMS`, named
/// `/dev/fd/<n>`), so a secret value never reaches a disk.
#[derive(Debug)]
pub(crate) struct ParamsInput {
    pub env: Vec<(String, String)>,
    pub file: OwnedFd,
}

impl ParamsInput {
    /// `None` for a job without parameters.
    pub(crate) fn of(
        job: &Job,
        secrets: &BTreeMap<String, String>,
    ) -> std::io::Result<Option<ParamsInput>> {
        let Some(recorded) = &job.spec.params else {
            return Ok(None);
        };
        let env = recorded
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (env_name(k), env_text(v)))
            .collect();
        let json = serde_json::to_vec(&whole(recorded, secrets)).map_err(std::io::Error::other)?;
        Ok(Some(ParamsInput {
            env,
            file: sealed_memory_file(&json)?,
        }))
    }
}

/// A memory file holding `bytes`, sealed against any change (the job
/// reads what joblog checked) and closed on exec unless the child's
/// setup keeps it.
fn sealed_memory_file(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    use nix::fcntl::{fcntl, FcntlArg, SealFlag};
    use nix::sys::memfd::{memfd_create, MFdFlags};
    let fd = memfd_create(
        c"joblog-params",
        MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING,
    )?;
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes)?;
    // Read from the start by a job given the descriptor itself, not the
    // path (which opens it anew).
    file.seek(std::io::SeekFrom::Start(0))?;
    fcntl(
        &file,
        FcntlArg::F_ADD_SEALS(
            SealFlag::F_SEAL_WRITE
                | SealFlag::F_SEAL_GROW
                | SealFlag::F_SEAL_SHRINK
                | SealFlag::F_SEAL_SEAL,
        ),
    )?;
    Ok(OwnedFd::from(file))
}
