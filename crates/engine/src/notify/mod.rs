//! Notifications: the rules an administrator keeps (saved through the
//! pipeline, checked here against where they point), what a notification
//! of a job says (from the job and its stored, masked log), and how it is
//! sent (`http`, `mail`). `sender` is the task, one per node, that takes
//! due deliveries from the outbox and records each try.
//!
//! The outbox is written by the store in the transaction that ends a job
//! (docs/notifications.md), so the sender only reads and sends: a job end
//! wakes it (any node's, by the commit broadcast), and it sleeps until
//! the next due delivery otherwise.

mod http;
mod mail;
mod sender;

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use joblog_core::notify::{NewRule, Notice, Rule, RuleId, Target, TryOutcome, ValidRule};
use joblog_core::{Given, Job, JobQuery, JobSpec, JobState, LogSummary, Record, Stream, Timestamp};
use joblog_store::RuleSaved;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::sync::Notify;

use crate::{Engine, EngineError};

pub(crate) use http::Sender;

/// Deliveries sent at once by one node.
const SENDING_AT_ONCE: usize = 16;
/// How long a claimed delivery is this node's: longer than a try can take
/// (the timeout), so that only a dead sender's deliveries are taken again.
const LEASE: Duration = Duration::from_secs(120);
/// The longest sleep without a look at the outbox (a delivery queued on a
/// node whose commit this one missed).
const LOOK_EVERY: Duration = Duration::from_secs(30);

/// How notifications are sent from this node.
#[derive(Clone)]
pub struct NotifyConfig {
    /// Where users open joblog (`http.public_url`): the link in each
    /// notification. None: notifications carry no link.
    pub public_url: Option<String>,
    /// How long a delivery is retried before it is given up.
    pub retry_for: Duration,
    /// Let notifications reach loopback, private and link-local addresses.
    pub allow_private_targets: bool,
    /// The time one try may take.
    pub timeout: Duration,
    /// The SMTP server e-mail goes through (`notify.smtp_url`, credentials
    /// in it): none, and e-mail rules are refused.
    pub smtp_url: Option<String>,
    /// The address e-mail is sent from.
    pub smtp_from: String,
}

/// Never shows the SMTP URL: it holds a password.
impl std::fmt::Debug for NotifyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotifyConfig")
            .field("public_url", &self.public_url)
            .field("retry_for", &self.retry_for)
            .field("allow_private_targets", &self.allow_private_targets)
            .field("timeout", &self.timeout)
            .field("smtp", &self.smtp_url.as_ref().map(|_| "(set)"))
            .field("smtp_from", &self.smtp_from)
            .finish()
    }
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            public_url: None,
            retry_for: Duration::from_secs(24 * 3600),
            allow_private_targets: false,
            timeout: Duration::from_secs(10),
            smtp_url: None,
            smtp_from: "joblog@localhost".into(),
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Sent {
    rule: String,
    /// `delivered`, `retry` or `failed`.
    outcome: &'static str,
}

/// The sender's state, shared with `/metrics`.
pub(crate) struct Notifier {
    sender: Sender,
    mailer: Option<mail::Mailer>,
    pub(crate) wake: Notify,
    sent: Family<Sent, Counter>,
    /// Seconds since the oldest undelivered notification was queued.
    oldest: Gauge<f64, AtomicU64>,
}

impl Notifier {
    pub(crate) fn new(
        config: &NotifyConfig,
        registry: &mut Registry,
    ) -> Result<Notifier, EngineError> {
        let sender =
            Sender::new(config.timeout, config.allow_private_targets).map_err(EngineError::Io)?;
        let mailer = match &config.smtp_url {
            Some(url) => Some(
                mail::Mailer::new(url, &config.smtp_from, config.timeout)
                    .map_err(EngineError::Io)?,
            ),
            None => None,
        };
        let notifier = Notifier {
            sender,
            mailer,
            wake: Notify::new(),
            sent: Family::default(),
            oldest: Gauge::default(),
        };
        registry.register(
            "joblog_notifications",
            "Tries of notifications by this node, by rule and outcome (delivered, retry, failed)",
            notifier.sent.clone(),
        );
        registry.register(
            "joblog_notification_outbox_oldest_seconds",
            "Age of the oldest notification not delivered yet (0: none waits)",
            notifier.oldest.clone(),
        );
        Ok(notifier)
    }
}

/// What a rule's test send came to.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TestSend {
    pub delivered: bool,
    pub status: Option<u16>,
    pub error: Option<String>,
    /// The job the test told of (the newest that ended in one of the
    /// rule's states), or none: an example job.
    pub job_id: Option<i64>,
}

impl Engine {
    pub async fn create_rule(&self, new: NewRule) -> Result<Rule, EngineError> {
        self.check_writable()?;
        let valid = self.checked(new.validate()?)?;
        let name = valid.name.clone();
        let saved = self.inner.pipeline.save_rule(None, valid).await?;
        rule_saved(saved, None, name)
    }

    /// Changes the fields `patch` names; the rule is checked again whole.
    pub async fn update_rule(
        &self,
        id: RuleId,
        patch: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Rule, EngineError> {
        self.check_writable()?;
        let old = self.get_rule(id).await?;
        let valid = self.checked(old.patched(patch)?)?;
        let name = valid.name.clone();
        let saved = self.inner.pipeline.save_rule(Some(id), valid).await?;
        rule_saved(saved, Some(id), name)
    }

    pub async fn get_rule(&self, id: RuleId) -> Result<Rule, EngineError> {
        self.inner
            .store
            .get_rule(id)
            .await?
            .ok_or(EngineError::RuleNotFound(id))
    }

    pub async fn delete_rule(&self, id: RuleId) -> Result<(), EngineError> {
        self.check_writable()?;
        if self.inner.pipeline.delete_rule(id).await? {
            Ok(())
        } else {
            Err(EngineError::RuleNotFound(id))
        }
    }

    /// Where a rule points, checked as its sends will be: an address
    /// written in the URL must be public unless private targets are
    /// allowed; a name is checked at each send (what it resolves to may
    /// change).
    fn checked(&self, rule: ValidRule) -> Result<ValidRule, EngineError> {
        match &rule.target {
            Target::Webhook(w) => {
                self.inner
                    .notifier
                    .sender
                    .check_target(&w.url)
                    .map_err(|message| joblog_core::ValidationError {
                        field: "webhook.url".into(),
                        message,
                    })?;
            }
            Target::Email(_) if self.inner.notifier.mailer.is_none() => {
                return Err(EngineError::Invalid(joblog_core::ValidationError {
                    field: "email".into(),
                    message:
                        "this server sends no e-mail: set notify.smtp_url (docs/notifications.md)"
                            .into(),
                }));
            }
            Target::Email(_) => {}
        }
        Ok(rule)
    }

    /// Sends the rule a test notification now, outside the outbox: of the
    /// newest job that ended in one of its states, or of an example.
    pub async fn test_rule(&self, id: RuleId) -> Result<TestSend, EngineError> {
        let rule = self.get_rule(id).await?;
        let newest = self
            .inner
            .store
            .list_jobs(JobQuery {
                states: rule.when.states.clone(),
                limit: 1,
                ..JobQuery::default()
            })
            .await?
            .pop();
        let job_id = newest.as_ref().map(|j| j.id);
        let job = newest.unwrap_or_else(|| example_job(&rule, &self.inner.config.node));
        let notice = self.notice(&rule, &job, None).await?;
        let outcome = self.send(&rule, &notice, None).await;
        let (delivered, status, error) = match outcome {
            TryOutcome::Delivered { status } => (true, status, None),
            TryOutcome::Retry { status, error } | TryOutcome::Refused { status, error } => {
                (false, status, Some(error))
            }
        };
        Ok(TestSend {
            delivered,
            status,
            error,
            job_id,
        })
    }

    /// What a notification of `job`'s end by `rule` says, from the job's
    /// stored log (masked as stored).
    async fn notice(
        &self,
        rule: &Rule,
        job: &Job,
        delivery: Option<i64>,
    ) -> Result<Notice, EngineError> {
        let store = &self.inner.store;
        let (first_error, problems, tail) = if job.id > 0 {
            // A finished job's counters are final: a stream it never
            // wrote is not searched for (a filtered read of a log without
            // one walks the whole log).
            let count = |s: Stream| job.log.streams.get(s);
            let first = if count(Stream::Error) > 0 {
                store
                    .read_log(job.id, 0, 1, Some(vec![Stream::Error]))
                    .await?
                    .pop()
            } else {
                None
            };
            let problems = if count(Stream::Error) + count(Stream::Warning) > 0 {
                store
                    .read_log_before(
                        job.id,
                        u64::MAX,
                        joblog_core::notify::NOTICE_PROBLEMS as u32,
                        Some(vec![Stream::Error, Stream::Warning]),
                    )
                    .await?
                    .records
            } else {
                Vec::new()
            };
            let tail = if count(Stream::Output) > 0 {
                store
                    .read_log_before(
                        job.id,
                        u64::MAX,
                        joblog_core::notify::NOTICE_TAIL as u32,
                        Some(vec![Stream::Output]),
                    )
                    .await?
                    .records
            } else {
                Vec::new()
            };
            (first, problems, tail)
        } else {
            (None, Vec::new(), example_tail())
        };
        Ok(Notice::new(
            rule,
            job,
            first_error.as_ref(),
            &problems,
            &tail,
            self.inner.config.notify.public_url.as_deref(),
            delivery,
        ))
    }

    async fn send(&self, rule: &Rule, notice: &Notice, delivery: Option<i64>) -> TryOutcome {
        match rule.target() {
            Some(Target::Webhook(hook)) => {
                let body = notice.render(hook.format);
                let secret = match &hook.secret_name {
                    Some(name) => match self.inner.config.node_secrets.get(name) {
                        Some(value) => Some(value.as_str()),
                        None => {
                            return TryOutcome::Retry {
                                status: None,
                                error: format!(
                                    "this node holds no secret {name} (JOBLOG_SECRET_{name}) to sign with"
                                ),
                            }
                        }
                    },
                    None => None,
                };
                self.inner
                    .notifier
                    .sender
                    .send(&hook, &body, delivery, secret)
                    .await
            }
            Some(Target::Email(email)) => match &self.inner.notifier.mailer {
                Some(mailer) => mailer.send(&email.to, &notice.mail(), delivery).await,
                // Another node, or this one restarted with notify.smtp_url,
                // may send it.
                None => TryOutcome::Retry {
                    status: None,
                    error: "this node sends no e-mail: notify.smtp_url is not set".into(),
                },
            },
            None => TryOutcome::Refused {
                status: None,
                error: "the rule has no target".into(),
            },
        }
    }
}

fn rule_saved(saved: RuleSaved, id: Option<RuleId>, name: String) -> Result<Rule, EngineError> {
    match saved {
        RuleSaved::Saved(r) => Ok(*r),
        RuleSaved::NameTaken => Err(EngineError::RuleNameTaken(name)),
        RuleSaved::NotFound => Err(EngineError::RuleNotFound(id.unwrap_or(0))),
    }
}

/// A job to show in a test send when none ended in the rule's states.
fn example_job(rule: &Rule, node: &str) -> Job {
    let now = Timestamp::now();
    let state = rule
        .when
        .states
        .first()
        .copied()
        .unwrap_or(JobState::Failed);
    Job {
        id: 0,
        name: Some("example".into()),
        state,
        exit_code: (state == JobState::Failed).then_some(1),
        command: vec!["sh".into(), "-c".into(), "exit 1".into()],
        command_truncated: false,
        env_truncated: false,
        node: Some(node.to_owned()),
        created_at: Timestamp(now.0 - 1_000_000),
        started_at: Some(Timestamp(now.0 - 1_000_000)),
        finished_at: Some(now),
        duration_ms: None,
        log: LogSummary::default(),
        result: None,
        given: Given::default(),
        run_after: None,
        waiting_for: None,
        spec: JobSpec::default(),
    }
    .with_duration()
}

fn example_tail() -> Vec<Record> {
    vec![Record {
        seq: 1,
        ts: Timestamp::now(),
        stream: Stream::Output,
        message: "This is a test notification from joblog.".into(),
        fields: None,
    }]
}

#[cfg(test)]
mod tests {
    use joblog_core::notify::Format;

    #[test]
    fn every_format_has_a_name_the_api_takes() {
        for f in [Format::Json, Format::Slack, Format::Teams] {
            let back: Format = serde_json::from_value(serde_json::json!(f.name())).unwrap();
            assert_eq!(back, f);
        }
    }
}
