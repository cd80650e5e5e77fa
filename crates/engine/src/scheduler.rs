//! The scheduler: a task of its own (never in a request's path) that
//! sleeps until the earliest next fire of any schedule (one index entry,
//! never a scan of the schedules), has the store turn the due fires into
//! jobs (`FireDue`: each fire once, whichever node gets there), and sleeps
//! again. Schedules are created, changed and run now through the engine.
//!
//! Time comes from a [`Clock`], so tests can move it.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use joblog_core::schedule::{fire_job, NewSchedule, Schedule, ScheduleId, ValidSchedule};
use joblog_core::{Job, Timestamp, ValidationError};
use joblog_store::{ScheduleDeleted, ScheduleSaved};

use crate::{Engine, EngineError};

/// The time the scheduler goes by.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
    /// Resolves once [`Clock::now`] has reached `at`.
    fn sleep_until(&self, at: Timestamp) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// The scheduler's state: told when a schedule was saved on this node,
/// so it looks again before its next fire.
#[derive(Default)]
pub(crate) struct Scheduler {
    pub(crate) changed: tokio::sync::Notify,
}

/// The system's clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }

    fn sleep_until(&self, at: Timestamp) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let wait = at.0.saturating_sub(Timestamp::now().0).max(0) as u64;
        Box::pin(tokio::time::sleep(Duration::from_micros(wait)))
    }
}

/// The longest the scheduler sleeps without looking: schedules saved on
/// another node are seen within it (each node's own wake it at once).
const MAX_SLEEP: Duration = Duration::from_secs(10);

impl Engine {
    /// Whether `max_queued` jobs wait; says so once when it becomes true
    /// and once when it is over (`was` keeps which it was).
    async fn queue_is_full(&self, was: &mut bool) -> bool {
        let full = matches!(self.check_queue().await, Err(EngineError::QueueFull(_)));
        if full != *was {
            if full {
                tracing::warn!(
                    max_queued = self.inner.config.max_queued,
                    "max_queued jobs are queued: schedules do not fire until the queue has room (fires later than a minute are then missed)"
                );
            } else {
                tracing::info!("the queue has room again: schedules fire again");
            }
            *was = full;
        }
        full
    }

    pub(crate) async fn schedule_loop(self) {
        let mut shutdown = self.inner.shutdown.subscribe();
        let clock = self.inner.clock.clone();
        let mut queue_full = false;
        loop {
            if *shutdown.borrow() {
                return;
            }
            let woken = self.inner.scheduler.changed.notified();
            let now = clock.now();
            // Fires wait while `max_queued` jobs do, as submissions are
            // refused: a fire later than a minute is then missed, as after
            // an outage (its `missed` policy says what becomes of it).
            if self.queue_is_full(&mut queue_full).await {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = shutdown.wait_for(|s| *s) => return,
                }
                continue;
            }
            match self
                .inner
                .pipeline
                .fire_due(now, self.inner.config.node.clone())
                .await
            {
                // Paused, or this node drained: due fires stay due until
                // either is lifted (a commit says so) or a while passes.
                Ok(fired) if fired.held => {
                    tokio::select! {
                        _ = tokio::time::sleep(MAX_SLEEP) => {}
                        _ = woken => {}
                        _ = shutdown.wait_for(|s| *s) => return,
                    }
                    continue;
                }
                Ok(fired) => {
                    for (id, why) in &fired.broken {
                        tracing::error!(schedule = id, error = %why, "a stored schedule cannot be read; it is disabled until it is saved again");
                    }
                    // From the fire to its job committed (queued and
                    // visible to every dispatcher): now.
                    let committed = clock.now();
                    for job in &fired.jobs {
                        if let Some(fire) = job.spec.schedule.and_then(|r| r.fire_time()) {
                            let late = committed.0.saturating_sub(fire.0).max(0);
                            self.inner.metrics.fire_lateness.observe(late as f64 / 1e6);
                        }
                    }
                    self.inner.metrics.fires.inc_by(fired.jobs.len() as u64);
                    self.inner.metrics.fires_skipped.inc_by(fired.skipped);
                    if !fired.jobs.is_empty() {
                        self.inner.dispatcher.wake.notify_one();
                    }
                    if fired.more {
                        continue;
                    }
                }
                Err(joblog_pipeline::PipelineError::Closed) => return,
                Err(e) => {
                    tracing::error!(error = %e, "firing due schedules failed");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                        _ = shutdown.wait_for(|s| *s) => return,
                    }
                    continue;
                }
            }
            let next = match self.inner.store.next_fire().await {
                Ok(next) => next,
                Err(e) => {
                    tracing::error!(error = %e, "reading the next fire failed");
                    None
                }
            };
            let latest = Timestamp(now.0 + MAX_SLEEP.as_micros() as i64);
            let until = next.map_or(latest, |n| n.min(latest));
            tokio::select! {
                _ = clock.sleep_until(until) => {}
                _ = woken => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
        }
    }

    /// Creates a schedule; its first fire is the first after now.
    pub async fn create_schedule(&self, new: NewSchedule) -> Result<Schedule, EngineError> {
        self.check_writable()?;
        // Rare, so a page of them is read rather than a count kept; nodes
        // creating at the same instant may pass it by one each.
        let max = self.inner.config.max_schedules;
        let limit = u32::try_from(max).unwrap_or(u32::MAX);
        let existing = self.inner.store.list_schedules(0, limit).await?.len() as u64;
        if existing >= max {
            return Err(EngineError::TooManySchedules(existing));
        }
        let now = self.inner.clock.now();
        let name = new.name.clone();
        let valid = new.validate(now)?;
        self.check_secret_scopes(&valid)?;
        self.check_placement(&valid.job.spec.node_selector)?;
        let next = valid
            .enabled
            .then(|| valid.firing.next_after(now))
            .flatten();
        let saved = self.inner.pipeline.save_schedule(None, valid, next).await?;
        self.saved(saved, None, name)
    }

    /// Changes the fields of a schedule that `patch` names (any of a new
    /// schedule's). Its next fire stays unless its timing changed or it
    /// was enabled again: then it is the first after now.
    pub async fn update_schedule(
        &self,
        id: ScheduleId,
        patch: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Schedule, EngineError> {
        self.check_writable()?;
        let old = self.get_schedule(id).await?;
        let now = self.inner.clock.now();
        let valid = old.patched(patch, now)?;
        self.check_secret_scopes(&valid)?;
        self.check_placement(&valid.job.spec.node_selector)?;
        let same_timing = valid.firing.cron().is_some_and(|t| {
            Some(t.cron.as_str()) == old.cron.as_deref() && t.zone.name() == old.timezone
        }) && old.enabled;
        let next = match (valid.enabled, same_timing, old.next_fire) {
            (false, _, _) => None,
            (true, true, Some(kept)) => Some(kept),
            (true, _, _) => valid.firing.next_after(now),
        };
        let name = valid.name.clone();
        let saved = self
            .inner
            .pipeline
            .save_schedule(Some(id), valid, next)
            .await?;
        self.saved(saved, Some(id), name)
    }

    /// Refuses a schedule naming a node secret this node does not allow
    /// it (`JOBLOG_ALLOW_SECRET_<NAME>`): said at once, not at its first
    /// run. Each node checks again when it runs it, by its own rules.
    fn check_secret_scopes(&self, valid: &ValidSchedule) -> Result<(), EngineError> {
        let scopes = &self.inner.config.node_secret_scopes;
        let refused: Vec<&str> = valid
            .job
            .spec
            .secret_names
            .iter()
            .filter(|n| !crate::run::secret_allowed(scopes, n, &valid.name))
            .map(String::as_str)
            .collect();
        if refused.is_empty() {
            return Ok(());
        }
        let vars: Vec<String> = refused
            .iter()
            .map(|n| format!("JOBLOG_ALLOW_SECRET_{n}"))
            .collect();
        Err(EngineError::Invalid(joblog_core::ValidationError {
            field: "secrets".into(),
            message: format!(
                "this server does not give {} to a schedule named {:?}; its administrator lists the schedules allowed each secret in {}",
                refused.join(", "),
                valid.name,
                vars.join(", ")
            ),
        }))
    }

    fn saved(
        &self,
        saved: ScheduleSaved,
        id: Option<ScheduleId>,
        name: String,
    ) -> Result<Schedule, EngineError> {
        match saved {
            ScheduleSaved::Saved(s) => {
                self.inner.scheduler.changed.notify_one();
                Ok(s.with_next_fires())
            }
            ScheduleSaved::NameTaken => Err(EngineError::ScheduleNameTaken(name)),
            ScheduleSaved::NotFound => Err(EngineError::ScheduleNotFound(id.unwrap_or(0))),
            ScheduleSaved::BadTrigger(why) => Err(EngineError::Invalid(ValidationError {
                field: "after".into(),
                message: why,
            })),
        }
    }

    /// A schedule with its next fires.
    pub async fn get_schedule(&self, id: ScheduleId) -> Result<Schedule, EngineError> {
        match self.inner.store.get_schedule(id).await? {
            Some(s) => Ok(s.with_next_fires()),
            None => Err(EngineError::ScheduleNotFound(id)),
        }
    }

    /// Deletes a schedule; its jobs stay (and still name it). Refused
    /// while other schedules run after it: they would never run again.
    pub async fn delete_schedule(&self, id: ScheduleId) -> Result<(), EngineError> {
        self.check_writable()?;
        match self.inner.pipeline.delete_schedule(id).await? {
            ScheduleDeleted::Deleted => Ok(()),
            ScheduleDeleted::NotFound => Err(EngineError::ScheduleNotFound(id)),
            ScheduleDeleted::Followed(followers) => Err(EngineError::ScheduleFollowed {
                id,
                followers: followers.into_iter().map(|(_, name)| name).collect(),
            }),
        }
    }

    /// Queues a run of the schedule now, outside its fires (its
    /// `fire_time` is `null`): whatever the overlap policy, except that
    /// with `queue` it waits for the running one like any run. `params`
    /// are checked against its schema before the job exists, defaults
    /// filling the rest; secret ones stay in this node's memory.
    pub async fn run_schedule_now(
        &self,
        id: ScheduleId,
        params: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Job, EngineError> {
        if !self.is_accepting() {
            return Err(EngineError::ShuttingDown);
        }
        self.check_writable()?;
        let s = self.get_schedule(id).await?;
        let mut spec = fire_job(id, &s.spec, s.overlap, s.retries, None, None);
        let none = joblog_core::params::ParamsSchema::default();
        let schema = s.spec.params_schema.as_ref().unwrap_or(&none);
        let filled = schema.fill(&params).map_err(ValidationError::from)?;
        let secrets = filled.secrets();
        if s.spec.params_schema.is_some() {
            spec.params = Some(filled.recorded());
        }
        self.queue(Some(s.name), spec, secrets).await
    }
}
