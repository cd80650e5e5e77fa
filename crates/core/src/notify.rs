//! Notification rules: which job ends a rule matches (`When`), where its
//! notifications go (a web hook or e-mail), and the checks of a rule as a
//! client sends it. `message.rs` builds what a notification says and
//! renders it in each format (docs/notifications.md).

mod checks;
mod message;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use checks::check_url;
pub use message::{
    Mail, Notice, NoticeJob, NoticeRecord, NoticeRule, Rendered, NOTICE_PROBLEMS, NOTICE_TAIL,
};

use crate::job::invalid;
use crate::schedule::ScheduleId;
use crate::{Job, JobState, NameFilter, Timestamp, ValidationError};

pub type RuleId = i64;

/// Most rules `GET /api/v1/notifications` gives at once.
pub const MAX_RULE_LIMIT: u32 = 1000;
/// Most recipients of one e-mail rule, and most headers of one web hook.
pub const MAX_RECIPIENTS: usize = 50;
pub const MAX_HEADERS: usize = 20;
/// Longest URL, header value, rule name or name pattern, in bytes.
const MAX_TEXT: usize = 2048;

/// The headers joblog sets on every delivery: a rule cannot set them.
const RESERVED_HEADERS: [&str; 5] = [
    "content-type",
    "content-length",
    "host",
    "joblog-delivery",
    "joblog-signature-256",
];

/// How a web hook's body is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// The notification document itself (docs/notifications.md).
    #[default]
    Json,
    /// Slack incoming-webhook blocks (Mattermost and Discord's Slack
    /// endpoint take them too).
    Slack,
    /// A Microsoft Teams workflow's Adaptive Card message.
    Teams,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Slack => "slack",
            Format::Teams => "teams",
        }
    }
}

/// Which job ends a rule matches: every condition given must hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct When {
    /// The job ended in one of these (never empty).
    pub states: Vec<JobState>,
    /// A job name or a pattern (`backup*`); any job when absent.
    #[serde(default)]
    pub name: Option<String>,
    /// Runs of this schedule only.
    #[serde(default)]
    pub schedule_id: Option<ScheduleId>,
    /// Jobs of this folder only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
}

impl When {
    /// Whether `job`'s end is one this rule tells of.
    pub fn matches(&self, job: &Job) -> bool {
        self.states.contains(&job.state)
            && self.name.as_deref().is_none_or(|pattern| {
                job.name
                    .as_deref()
                    .is_some_and(|name| NameFilter::parse(pattern).matches(name))
            })
            && self
                .schedule_id
                .is_none_or(|id| job.given.schedule_id == Some(id))
            && self
                .folder
                .as_deref()
                .is_none_or(|f| job.spec.folder.as_deref() == Some(f))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Webhook {
    pub url: String,
    #[serde(default)]
    pub format: Format,
    /// Sent with every delivery (`X-Team: ops`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A secret the delivering node holds (`JOBLOG_SECRET_<NAME>`): the
    /// key of the `Joblog-Signature-256` HMAC. Its value is never stored.
    #[serde(default)]
    pub secret_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Email {
    pub to: Vec<String>,
}

/// Where a rule's notifications go.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    Webhook(Webhook),
    Email(Email),
}

/// A rule as a client sends it (`POST /api/v1/notifications`), or a whole
/// rule after a `PATCH` was applied to its stored form.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewRule {
    pub name: String,
    pub when: When,
    #[serde(default)]
    pub webhook: Option<Webhook>,
    #[serde(default)]
    pub email: Option<Email>,
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
}

fn enabled_by_default() -> bool {
    true
}

/// A rule that passed its checks.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidRule {
    pub name: String,
    pub when: When,
    pub target: Target,
    pub enabled: bool,
}

/// A rule as stored and as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rule {
    pub id: RuleId,
    pub name: String,
    pub when: When,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook: Option<Webhook>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<Email>,
    pub enabled: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Rule {
    pub fn new(id: RuleId, rule: ValidRule, created_at: Timestamp, updated_at: Timestamp) -> Rule {
        let (webhook, email) = match rule.target {
            Target::Webhook(w) => (Some(w), None),
            Target::Email(e) => (None, Some(e)),
        };
        Rule {
            id,
            name: rule.name,
            when: rule.when,
            webhook,
            email,
            enabled: rule.enabled,
            created_at,
            updated_at,
        }
    }

    pub fn target(&self) -> Option<Target> {
        match (&self.webhook, &self.email) {
            (Some(w), None) => Some(Target::Webhook(w.clone())),
            (None, Some(e)) => Some(Target::Email(e.clone())),
            _ => None,
        }
    }

    /// The rule's sendable fields as JSON, as they are stored (the same
    /// document a client sends, so a stored rule reads back through
    /// [`NewRule`]'s checks).
    pub fn spec_json(rule: &ValidRule) -> String {
        let (webhook, email) = match &rule.target {
            Target::Webhook(w) => (Some(w), None),
            Target::Email(e) => (None, Some(e)),
        };
        let doc = Document {
            name: &rule.name,
            when: &rule.when,
            enabled: rule.enabled,
            webhook,
            email,
        };
        serde_json::to_string(&doc).unwrap_or_default()
    }

    /// The rule with the fields of a `PATCH` body replaced (any of
    /// `POST`'s; `webhook` and `email` replace each other), checked again
    /// as a whole.
    pub fn patched(
        &self,
        patch: serde_json::Map<String, serde_json::Value>,
    ) -> Result<ValidRule, ValidationError> {
        let mut doc = serde_json::to_value(Document {
            name: &self.name,
            when: &self.when,
            enabled: self.enabled,
            webhook: self.webhook.as_ref(),
            email: self.email.as_ref(),
        })
        .unwrap_or_default();
        let Some(fields) = doc.as_object_mut() else {
            return Err(invalid("body", "a rule is a JSON object"));
        };
        for (key, value) in patch {
            if key == "webhook" {
                fields.remove("email");
            } else if key == "email" {
                fields.remove("webhook");
            }
            if value.is_null() {
                fields.remove(&key);
            } else {
                fields.insert(key, value);
            }
        }
        let new: NewRule = serde_json::from_value(doc).map_err(|e| {
            let message = e.to_string();
            invalid(field_of(&message), message)
        })?;
        new.validate()
    }
}

/// A rule's sendable fields, as a client sends them and as they are
/// stored.
#[derive(Serialize)]
struct Document<'a> {
    name: &'a str,
    when: &'a When,
    enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    webhook: Option<&'a Webhook>,
    #[serde(skip_serializing_if = "Option::is_none")]
    email: Option<&'a Email>,
}

/// The field a serde message names (`unknown field `x``, `when: …`), for
/// a `PATCH` that reads its result through serde.
fn field_of(message: &str) -> &'static str {
    ["when", "webhook", "email", "enabled", "name"]
        .into_iter()
        .find(|f| message.contains(f))
        .unwrap_or("body")
}

impl NewRule {
    /// Checks every field, naming the first one at fault.
    pub fn validate(self) -> Result<ValidRule, ValidationError> {
        let name = self.name.trim();
        if name.is_empty() {
            return Err(invalid("name", "missing: a rule needs a name"));
        }
        if name.len() > 200 || name.chars().any(char::is_control) {
            return Err(invalid("name", "at most 200 bytes of printable text"));
        }
        let when = checks::validate_when(self.when)?;
        let target = match (self.webhook, self.email) {
            (Some(w), None) => Target::Webhook(checks::validate_webhook(w)?),
            (None, Some(e)) => Target::Email(checks::validate_email(e)?),
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "webhook",
                    "a rule has a webhook or an email, not both",
                ))
            }
            (None, None) => {
                return Err(invalid(
                    "webhook",
                    "missing: a rule needs a webhook or an email to send to",
                ))
            }
        };
        Ok(ValidRule {
            name: name.to_owned(),
            when,
            target,
            enabled: self.enabled,
        })
    }
}

/// How a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// Waiting for its first try or its next.
    Pending,
    Delivered,
    /// Refused for good (a 4xx, a target no longer allowed) or out of
    /// retries (`notify.retry_for`).
    Failed,
}

impl DeliveryState {
    pub fn name(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Delivered => "delivered",
            DeliveryState::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<DeliveryState> {
        [
            DeliveryState::Pending,
            DeliveryState::Delivered,
            DeliveryState::Failed,
        ]
        .into_iter()
        .find(|d| d.name() == s)
    }
}

pub type DeliveryId = i64;

/// One notification of one job's end by one rule, and how its sending went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delivery {
    pub id: DeliveryId,
    pub rule_id: RuleId,
    pub job_id: crate::JobId,
    pub state: DeliveryState,
    pub attempts: u32,
    pub created_at: Timestamp,
    /// When it is tried next (pending only).
    pub next_try_at: Option<Timestamp>,
    pub delivered_at: Option<Timestamp>,
    /// The last answer's HTTP status, if one came.
    pub last_status: Option<u16>,
    /// The last error, or the start of the last answer's body (1 KiB).
    pub last_error: Option<String>,
}

/// What one try of a delivery came to, as the sender reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum TryOutcome {
    Delivered {
        status: Option<u16>,
    },
    /// Worth another try (a timeout, a 5xx, a refused connection).
    Retry {
        status: Option<u16>,
        error: String,
    },
    /// Never worth another (a 4xx, a target no longer allowed).
    Refused {
        status: Option<u16>,
        error: String,
    },
}

#[cfg(test)]
mod tests;
