//! What the server sends, as the client reads it: lenient views (unknown
//! fields are ignored, most are optional) so a newer server still works
//! with an older client.

use std::collections::BTreeMap;

use joblog_core::JobState;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Deserialize)]
pub struct JobView {
    pub id: i64,
    #[serde(default)]
    pub name: Option<String>,
    pub state: String,
    #[serde(default)]
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub command: Vec<String>,
    #[serde(default)]
    pub node: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub finished_at: Option<String>,
    /// A queued retry's backoff: it starts no earlier.
    #[serde(default)]
    pub run_after: Option<String>,
    #[serde(default)]
    pub duration_ms: Option<f64>,
    #[serde(default)]
    pub log: LogView,
    #[serde(default)]
    pub result: Option<ResultView>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub timeout_s: Option<f64>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub secret_names: Vec<String>,
    #[serde(default)]
    pub shell: Option<String>,
    #[serde(default)]
    pub rerun_of: Option<i64>,
    /// The job whose end queued it (its schedule runs after that one's).
    #[serde(default)]
    pub triggered_by: Option<i64>,
    /// The labels the node that runs it must have.
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
    /// The folder it belongs to.
    #[serde(default)]
    pub folder: Option<String>,
    /// The values of its parameters, a secret one `null`.
    #[serde(default)]
    pub params: Option<serde_json::Map<String, serde_json::Value>>,
    /// Why it waits while no node can take it.
    #[serde(default)]
    pub waiting_for: Option<String>,
}

impl JobView {
    pub fn is_finished(&self) -> bool {
        JobState::parse(&self.state).is_some_and(JobState::is_finished)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct LogView {
    #[serde(default)]
    pub records: u64,
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub truncated: bool,
    #[serde(default)]
    pub streams: BTreeMap<String, u64>,
}

/// `GET /healthz`, as 200 and 503 both send it.
#[derive(Debug, Clone, Deserialize)]
pub struct HealthView {
    pub status: String,
    #[serde(default)]
    pub store: String,
    #[serde(default)]
    pub accepting_jobs: bool,
    #[serde(default)]
    pub node: String,
    #[serde(default)]
    pub pool_in_use: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ResultView {
    #[serde(default)]
    pub bytes: u64,
}

/// One page of `GET /api/v1/jobs`; the jobs stay JSON values so `--json`
/// can pass on fields this client does not know.
#[derive(Debug, Deserialize)]
pub(super) struct JobsPage {
    pub jobs: Vec<Value>,
    #[serde(default)]
    pub next_before_id: Option<i64>,
}

#[derive(Debug, Deserialize)]
pub struct LogPage {
    pub records: Vec<LogRecord>,
    #[serde(default)]
    pub next_after_seq: Option<u64>,
}

/// A record as the API sends it; re-serialised in the API's field order for
/// `logs --json`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct LogRecord {
    pub seq: u64,
    pub ts: String,
    pub stream: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Map<String, Value>>,
}

#[derive(Debug, Deserialize)]
pub(super) struct GroomReport {
    #[serde(default)]
    pub dry_run: bool,
    #[serde(default)]
    pub jobs_deleted: u64,
    #[serde(default)]
    pub records_deleted: u64,
    /// With `dry_run`: the jobs that would go (the first 1000).
    #[serde(default)]
    pub jobs: Vec<JobView>,
}

/// An API token as `/api/v1/tokens` lists it; `token` only in the answer
/// that created it.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenView {
    pub name: String,
    pub role: String,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub expires_at: Option<String>,
    #[serde(default)]
    pub last_used_at: Option<String>,
    #[serde(default)]
    pub token: Option<String>,
    /// The folders it is limited to, with its role in each.
    #[serde(default)]
    pub folders: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize)]
pub(super) struct TokenList {
    pub tokens: Vec<TokenView>,
}

/// A user, as `/api/v1/users` shows one.
#[derive(Debug, Deserialize)]
pub struct UserView {
    pub name: String,
    pub role: String,
    #[serde(default)]
    pub disabled: bool,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub last_sign_in_at: Option<String>,
    /// Signs in through the OpenID provider (an older server: never).
    #[serde(default)]
    pub single_sign_on: bool,
    /// The folders they are limited to, with their role in each.
    #[serde(default)]
    pub folders: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize)]
pub(super) struct UserList {
    pub users: Vec<UserView>,
}

/// `GET /api/v1/nodes`.
#[derive(Debug, Deserialize)]
pub struct NodeList {
    pub nodes: Vec<NodeView>,
    pub this_node: String,
}

#[derive(Debug, Deserialize)]
pub struct NodeView {
    pub name: String,
    pub state: String,
    #[serde(default)]
    pub version: Option<String>,
    pub started_at: String,
    pub heartbeat_at: String,
    pub running_jobs: u64,
    /// Names only: a node never tells its secrets' values.
    #[serde(default)]
    pub secret_names: Vec<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// Whether schedules fire (`GET /api/v1/scheduler`).
#[derive(Debug, Deserialize)]
pub struct SchedulerView {
    pub paused: bool,
    #[serde(default)]
    pub paused_at: Option<String>,
    #[serde(default)]
    pub paused_by: Option<String>,
}

/// A schedule as `GET /api/v1/schedules/{id}` gives it (the fields the
/// text shows; `--json` passes on the rest).
#[derive(Debug, Clone, Deserialize)]
pub struct ScheduleView {
    pub id: i64,
    pub name: String,
    /// `None` on a schedule that runs after another.
    pub cron: Option<String>,
    pub timezone: String,
    #[serde(default)]
    pub after: Option<AfterView>,
    /// The name of the schedule `after` names, filled in by the command
    /// that shows it (not in the API's JSON).
    #[serde(skip)]
    pub after_name: Option<String>,
    /// The schedules that run after it (on one schedule, not in listings).
    #[serde(default)]
    pub followers: Option<Vec<FollowerView>>,
    #[serde(default)]
    pub command: Vec<String>,
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
    pub secrets: Vec<String>,
    #[serde(default)]
    pub concurrency_key: Option<String>,
    #[serde(default)]
    pub max_concurrent: Option<u32>,
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default)]
    pub folder: Option<String>,
    /// The parameters each run takes (a JSON Schema subset).
    #[serde(default)]
    pub params: Option<serde_json::Value>,
    #[serde(default)]
    pub params_from_result: BTreeMap<String, String>,
    pub overlap: String,
    pub missed: String,
    pub retries: RetriesView,
    pub enabled: bool,
    #[serde(default)]
    pub next_fires: Vec<String>,
    #[serde(default)]
    pub skipped_fires: u64,
    #[serde(default)]
    pub last_run: Option<LastRunView>,
}

/// Labels as `role=db,os=linux`, `-` for none.
pub fn labels_text(labels: &BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        return "-".into();
    }
    let items: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    items.join(",")
}

/// A schedule's trigger: the schedule it runs after, and on which states.
#[derive(Debug, Clone, Deserialize)]
pub struct AfterView {
    pub schedule_id: i64,
    pub states: Vec<String>,
}

/// A schedule that runs after the one shown.
#[derive(Debug, Clone, Deserialize)]
pub struct FollowerView {
    pub schedule_id: i64,
    pub name: String,
    pub states: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RetriesView {
    pub attempts: u32,
    #[serde(default)]
    pub backoff_s: f64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LastRunView {
    pub job_id: i64,
    pub state: String,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub attempt: u32,
}

/// A notification rule as `GET /api/v1/notifications/{id}` gives it. The
/// web hook's URL and headers are the admin's to see (`show`); what the
/// `list` table shows of them is render's choice.
#[derive(Debug, Clone, Deserialize)]
pub struct RuleView {
    pub id: i64,
    pub name: String,
    pub when: WhenView,
    #[serde(default)]
    pub webhook: Option<WebhookView>,
    #[serde(default)]
    pub email: Option<EmailView>,
    pub enabled: bool,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub updated_at: Option<String>,
}

/// Which job ends a rule tells of. Also sent back whole by `notify edit`
/// (a `PATCH` replaces `when` as a whole), so it keeps what it does not
/// know and writes back only what it read.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct WhenView {
    #[serde(default)]
    pub states: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_id: Option<i64>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A rule's web hook; like [`WhenView`], written back whole by `edit`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct WebhookView {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EmailView {
    #[serde(default)]
    pub to: Vec<String>,
}

/// One notification of one job's end by one rule, and how its sending
/// went.
#[derive(Debug, Clone, Deserialize)]
pub struct DeliveryView {
    pub id: i64,
    pub job_id: i64,
    pub state: String,
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub next_try_at: Option<String>,
    #[serde(default)]
    pub last_status: Option<u16>,
    #[serde(default)]
    pub last_error: Option<String>,
}

/// A page of `GET /api/v1/notifications/{id}/deliveries`.
#[derive(Debug, Deserialize)]
pub(super) struct DeliveryPage {
    pub deliveries: Vec<DeliveryView>,
}

/// `POST /api/v1/notifications/{id}/test`: what the test send came to.
#[derive(Debug, Clone, Deserialize)]
pub struct TestSendView {
    pub delivered: bool,
    #[serde(default)]
    pub status: Option<u16>,
    #[serde(default)]
    pub error: Option<String>,
    /// The job told of; `None`: an example job.
    #[serde(default)]
    pub job_id: Option<i64>,
}
