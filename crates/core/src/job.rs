//! Jobs: what a client submits, what the store keeps, what the API shows.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Given, Labels, StreamCounts, Timestamp};

mod submission;

pub(crate) use submission::invalid;
pub use submission::{NewJobRequest, ValidJob, ValidationError};

pub type JobId = i64;

/// Largest `limit` a job listing accepts.
pub const MAX_LIST_LIMIT: u32 = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Queued,
    Running,
    Succeeded,
    Failed,
    Cancelled,
    TimedOut,
    Interrupted,
}

impl JobState {
    pub const ALL: [JobState; 7] = [
        JobState::Queued,
        JobState::Running,
        JobState::Succeeded,
        JobState::Failed,
        JobState::Cancelled,
        JobState::TimedOut,
        JobState::Interrupted,
    ];

    pub fn name(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
            JobState::TimedOut => "timed_out",
            JobState::Interrupted => "interrupted",
        }
    }

    pub fn parse(s: &str) -> Option<JobState> {
        JobState::ALL.into_iter().find(|st| st.name() == s)
    }

    pub fn is_finished(self) -> bool {
        !matches!(self, JobState::Queued | JobState::Running)
    }

    /// Parses a comma-separated list such as `failed,timed_out` (spaces and
    /// empty items are ignored), each state once, in [`JobState::ALL`]'s
    /// order.
    pub fn parse_list(s: &str) -> Result<Vec<JobState>, String> {
        let mut states = Vec::new();
        for item in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let state = JobState::parse(item).ok_or_else(|| {
                let names: Vec<&str> = JobState::ALL.iter().map(|st| st.name()).collect();
                format!(
                    "unknown state {item:?} (expected one of {})",
                    names.join(", ")
                )
            })?;
            if !states.contains(&state) {
                states.push(state);
            }
        }
        states.sort_by_key(|st| *st as u8);
        Ok(states)
    }
}

/// The log counters of a job, kept in the job row (never derived by
/// scanning the log, so `show` stays O(1)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LogSummary {
    pub records: u64,
    pub bytes: u64,
    pub truncated: bool,
    pub streams: StreamCounts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ResultInfo {
    pub bytes: u64,
}

/// A job as stored and as the API shows it (docs/api.md).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    pub id: JobId,
    pub name: Option<String>,
    pub state: JobState,
    pub exit_code: Option<i32>,
    pub command: Vec<String>,
    /// Set when `command` was shortened for a listing
    /// ([`Job::abbreviate_command`]); absent otherwise.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub command_truncated: bool,
    /// Set when `env` was shortened for a listing ([`Job::abbreviate`]);
    /// absent otherwise.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub env_truncated: bool,
    pub node: Option<String>,
    pub created_at: Timestamp,
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
    pub duration_ms: Option<f64>,
    pub log: LogSummary,
    pub result: Option<ResultInfo>,
    /// What it was given besides its command, as the job JSON shows it.
    #[serde(flatten)]
    pub given: Given,
    /// A queued retry's backoff: it starts no earlier than this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_after: Option<Timestamp>,
    /// Why a queued job waits when no node can take it now (`no up node
    /// has labels role=gpu`); set by the API from the nodes' states.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<String>,
    /// Not part of the job JSON: how the job is run.
    #[serde(skip)]
    pub spec: JobSpec,
}

impl Job {
    /// Sets `duration_ms` from the two timestamps; stores call this when
    /// they build a `Job`, so the figure can never disagree with them.
    pub fn with_duration(mut self) -> Self {
        self.duration_ms = match (self.started_at, self.finished_at) {
            (Some(s), Some(f)) => Some(s.millis_until(f)),
            _ => None,
        };
        self
    }

    /// Shortens what a listing shows of the job: its command and its
    /// environment, each to about `max_bytes` (see the two below). A page
    /// of jobs must not carry every job's whole environment.
    pub fn abbreviate(&mut self, max_bytes: usize) {
        self.abbreviate_command(max_bytes);
        self.abbreviate_env(max_bytes);
    }

    /// Shortens `env` to about `max_bytes` of names and values: whole
    /// variables (in name order) while they fit, then the value of the one
    /// that does not cut and marked with `…`, then none.
    pub fn abbreviate_env(&mut self, max_bytes: usize) {
        let mut used = 0;
        let mut cut_at = None;
        for (name, value) in self.given.env.iter_mut() {
            if used + name.len() + value.len() <= max_bytes {
                used += name.len() + value.len();
                continue;
            }
            cut_to(value, max_bytes.saturating_sub(used + name.len()));
            cut_at = Some(name.clone());
            break;
        }
        if let Some(last) = cut_at {
            self.given.env.retain(|name, _| *name <= last);
            self.env_truncated = true;
        }
    }

    /// Shortens `command` to about `max_bytes` of arguments for a listing:
    /// whole arguments while they fit, then the one that does not fit cut
    /// (at a character boundary) and marked with `…`, then nothing. A job
    /// with a 1 MB argument must not make every page of jobs 1 MB.
    pub fn abbreviate_command(&mut self, max_bytes: usize) {
        // The script is the command's last argument again: cut it alike.
        if let Some(script) = &mut self.given.script {
            if cut_to(script, max_bytes) {
                self.command_truncated = true;
            }
        }
        let mut used = 0;
        for (i, arg) in self.command.iter_mut().enumerate() {
            if used + arg.len() <= max_bytes {
                used += arg.len();
                continue;
            }
            cut_to(arg, max_bytes.saturating_sub(used));
            self.command.truncate(i + 1);
            self.command_truncated = true;
            return;
        }
    }

    pub fn set_result_bytes(&mut self, bytes: Option<u64>) {
        self.result = bytes.map(|bytes| ResultInfo { bytes });
    }
}

/// Everything needed to run a job, validated. Stored with the job (minus
/// secrets, which live only in the memory of the node that runs it).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct JobSpec {
    pub command: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub timeout_s: Option<f64>,
    #[serde(default)]
    pub cwd: Option<String>,
    /// Names (never values) of the secrets given at submission, so a node
    /// that lacks them can refuse to run the job without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_names: Vec<String>,
    /// Set when it was submitted as a script (the script is then the last
    /// argument of `command`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_of: Option<JobId>,
    /// Set on the runs of a schedule: which schedule, fire and attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<crate::schedule::ScheduledRun>,
    /// Its concurrency limit: jobs of one key run at most `max` at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<Concurrency>,
    /// The labels the node that runs it must have.
    #[serde(default, skip_serializing_if = "Labels::is_empty")]
    pub node_selector: Labels,
    /// The folder it belongs to: who may see and act on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// The parameters it declares: a saved job's, kept with each of its
    /// jobs so that a rerun asks the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params_schema: Option<crate::params::ParamsSchema>,
    /// The values it runs with, a secret one `null` (its value is kept
    /// in the memory of the node that runs it, never stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Map<String, serde_json::Value>>,
    /// Why its values could not be made (a trigger's result the schema
    /// refuses): it does not start, and its log says this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params_error: Option<String>,
    /// A schedule's only: its parameters taken from the triggering job's
    /// result, each by JSON Pointer (`{"db": "/database"}`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params_from_result: BTreeMap<String, String>,
}

/// A concurrency limit by name: of the jobs that carry `key`, at most
/// `max` run at once (across every node); the others stay queued, and the
/// dispatcher takes jobs behind them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Concurrency {
    pub key: String,
    pub max: u32,
}

/// Largest `max_concurrent` a submission may give.
pub const MAX_CONCURRENT: u32 = 10_000;

/// Longest concurrency key, in characters (as JSON Schema's `maxLength`
/// counts, so the OpenAPI document can say it exactly).
const MAX_KEY_LEN: usize = 200;

/// Keys a client may not give: a schedule whose runs must not overlap
/// queues them behind `schedule:<id>`.
pub const RESERVED_KEY_PREFIX: &str = "schedule:";

impl Concurrency {
    /// Checks a submission's `concurrency_key` and `max_concurrent`
    /// (which defaults to 1 with a key, and means nothing without one).
    pub fn from_request(
        key: Option<String>,
        max: Option<u32>,
    ) -> Result<Option<Concurrency>, ValidationError> {
        let Some(key) = key else {
            return match max {
                Some(_) => Err(invalid(
                    "max_concurrent",
                    "goes with concurrency_key: give the key it limits",
                )),
                None => Ok(None),
            };
        };
        if key.is_empty() || key.chars().count() > MAX_KEY_LEN || key.chars().any(char::is_control)
        {
            return Err(invalid(
                "concurrency_key",
                format!("must be 1 to {MAX_KEY_LEN} characters without control characters"),
            ));
        }
        if key.starts_with(RESERVED_KEY_PREFIX) {
            return Err(invalid(
                "concurrency_key",
                format!("keys starting with {RESERVED_KEY_PREFIX:?} are joblog's own (a schedule's overlap = \"queue\")"),
            ));
        }
        let max = max.unwrap_or(1);
        if !(1..=MAX_CONCURRENT).contains(&max) {
            return Err(invalid(
                "max_concurrent",
                format!("{max} is not between 1 and {MAX_CONCURRENT}"),
            ));
        }
        Ok(Some(Concurrency { key, max }))
    }
}

impl JobSpec {
    /// Whether it carries secrets kept only in the memory of the node it
    /// was submitted to (a submission's own, or secret parameters): such
    /// a job runs on that node alone. A schedule's named secrets come
    /// from the environment of whichever node runs it.
    pub fn holds_secrets_in_memory(&self) -> bool {
        (!self.secret_names.is_empty() && self.schedule.is_none())
            || self
                .params
                .as_ref()
                .is_some_and(|p| crate::params::secret_names(p).next().is_some())
    }

    /// The script, for a job submitted as one.
    pub fn script(&self) -> Option<&str> {
        self.shell.as_ref()?;
        self.command.last().map(String::as_str)
    }
}

/// Cuts `s` to at most `max_bytes` (at a character boundary) and marks the
/// cut with `…`; says whether it cut.
fn cut_to(s: &mut String, max_bytes: usize) -> bool {
    if s.len() <= max_bytes {
        return false;
    }
    let mut cut = max_bytes;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s.push('…');
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queued job of `command`, nothing else given.
    fn queued(command: Vec<String>) -> Job {
        Job {
            id: 1,
            name: None,
            state: JobState::Queued,
            exit_code: None,
            command,
            command_truncated: false,
            env_truncated: false,
            run_after: None,
            waiting_for: None,
            node: None,
            created_at: Timestamp(0),
            started_at: None,
            finished_at: None,
            duration_ms: None,
            log: LogSummary::default(),
            result: None,
            given: Given::default(),
            spec: JobSpec::default(),
        }
    }

    #[test]
    fn a_long_command_is_abbreviated_for_listings() {
        let mut job = queued(vec![
            "sh".into(),
            "-c".into(),
            "é".repeat(3000),
            "tail".into(),
        ]);
        let mut short = job.clone();
        short.abbreviate_command(10_000);
        assert!(!short.command_truncated);
        assert_eq!(short.command, job.command);
        job.abbreviate_command(1000);
        assert!(job.command_truncated);
        assert_eq!(job.command.len(), 3);
        assert!(job.command[2].ends_with('…'));
        let total: usize = job.command.iter().map(String::len).sum();
        assert!(total <= 1000 + '…'.len_utf8(), "{total}");
        let json = serde_json::to_value(&job).unwrap();
        assert_eq!(json["command_truncated"], true);
        assert!(json.get("env_truncated").is_none());
    }

    #[test]
    fn listings_cut_a_large_environment() {
        let mut job = queued(vec!["true".into()]);
        for (i, size) in [10, 2000, 3000, 50].into_iter().enumerate() {
            job.given.env.insert(format!("V{i}"), "é".repeat(size / 2));
        }
        let whole = job.clone();
        let mut short = job.clone();
        short.abbreviate(100_000);
        assert_eq!(short, whole, "what fits is kept whole");
        job.abbreviate(4096);
        assert!(job.env_truncated);
        let names: Vec<&str> = job.given.env.keys().map(String::as_str).collect();
        assert_eq!(names, ["V0", "V1", "V2"]);
        assert_eq!(job.given.env["V1"], whole.given.env["V1"]);
        assert!(job.given.env["V2"].ends_with('…'));
        let total: usize = job.given.env.iter().map(|(k, v)| k.len() + v.len()).sum();
        assert!(total <= 4096 + '…'.len_utf8(), "{total}");
        let json = serde_json::to_value(&job).unwrap();
        assert_eq!(json["env_truncated"], true);
    }

    #[test]
    fn state_lists() {
        assert_eq!(
            JobState::parse_list("timed_out, failed,,failed").unwrap(),
            [JobState::Failed, JobState::TimedOut]
        );
        assert_eq!(JobState::parse_list("").unwrap(), []);
        let e = JobState::parse_list("failed,bogus").unwrap_err();
        assert!(e.contains("\"bogus\"") && e.contains("timed_out"), "{e}");
    }

    fn req(json: &str) -> Result<NewJobRequest, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn script_becomes_shell_command() {
        let spec = req(r#"{"script":"echo hi","shell":"bash"}"#)
            .unwrap()
            .validate()
            .unwrap()
            .spec;
        assert_eq!(spec.command, ["bash", "-c", "echo hi"]);
        let spec = req(r#"{"script":"echo hi"}"#)
            .unwrap()
            .validate()
            .unwrap()
            .spec;
        assert_eq!(spec.command, ["sh", "-c", "echo hi"]);
    }

    #[test]
    fn a_name_is_counted_in_characters() {
        let named = |n: &str| req(&format!(r#"{{"command":["x"],"name":"{n}"}}"#)).unwrap();
        assert!(named(&"é".repeat(200)).validate().is_ok());
        let e = named(&"é".repeat(201)).validate().unwrap_err();
        assert_eq!(e.field, "name");
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(req("{}").unwrap().validate().unwrap_err().field, "command");
        assert_eq!(
            req(r#"{"command":[]}"#)
                .unwrap()
                .validate()
                .unwrap_err()
                .field,
            "command"
        );
        assert_eq!(
            req(r#"{"command":["x"],"timeout_s":-1}"#)
                .unwrap()
                .validate()
                .unwrap_err()
                .field,
            "timeout_s"
        );
        assert_eq!(
            req(r#"{"command":["x"],"env":{"A=B":"1"}}"#)
                .unwrap()
                .validate()
                .unwrap_err()
                .field,
            "env"
        );
        let e = req(r#"{"command":["x"],"bogus":1}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus"), "{e}");
    }
}
