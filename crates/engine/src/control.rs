//! What callers ask of a running engine: submit and cancel jobs, create
//! and revoke API tokens, and stop gracefully. Every change fails fast
//! while the store refuses writes.

use std::sync::atomic::Ordering;
use std::time::Duration;

use joblog_core::{Job, JobId, Labels, NewJobRequest};

use crate::{process, Engine, EngineError, StopReason};

impl Engine {
    /// Validates and queues a job.
    pub async fn submit(&self, request: NewJobRequest) -> Result<Job, EngineError> {
        if !self.is_accepting() {
            return Err(EngineError::ShuttingDown);
        }
        let joblog_core::ValidJob {
            name,
            spec,
            secrets,
        } = request.validate()?;
        self.check_placement(&spec.node_selector)?;
        self.check_writable()?;
        self.queue(name, spec, secrets).await
    }

    /// Queues a checked job, its `secrets` (a submission's, secret
    /// parameters) kept in this node's memory alone.
    pub(crate) async fn queue(
        &self,
        name: Option<String>,
        spec: joblog_core::JobSpec,
        secrets: std::collections::BTreeMap<String, String>,
    ) -> Result<Job, EngineError> {
        self.check_free_space()?;
        self.check_queue().await?;
        let submitting = if secrets.is_empty() {
            None
        } else {
            Some(self.inner.jobs.submitting.read().await)
        };
        let job = self.inner.pipeline.insert_job(name, spec).await?;
        if !secrets.is_empty() {
            self.lock_secrets().insert(job.id, secrets);
        }
        drop(submitting);
        self.inner.dispatcher.wake.notify_one();
        Ok(job)
    }

    /// Refuses a `node_selector` no node could ever satisfy: on a store of
    /// one node, one that asks for labels this node lacks (on a shared
    /// store another node may have them, or come; the job then says what
    /// it waits for).
    pub(crate) fn check_placement(&self, selector: &Labels) -> Result<(), EngineError> {
        let labels = &self.inner.config.labels;
        if self.inner.store.is_shared() || labels.satisfy(selector) {
            return Ok(());
        }
        let has = if labels.is_empty() {
            "no labels".to_string()
        } else {
            format!("the labels {labels}")
        };
        Err(EngineError::Invalid(joblog_core::ValidationError {
            field: "node_selector".into(),
            message: format!(
                "{selector} asks for labels this server lacks: it is the store's one node and has {has} (node.labels)"
            ),
        }))
    }

    /// Refuses a new job while `max_queued` wait already (counted only
    /// now and then: `crate::admission`).
    pub(crate) async fn check_queue(&self) -> Result<(), EngineError> {
        let admission = &self.inner.admission;
        if admission.take(std::time::Instant::now()) {
            return Ok(());
        }
        let max = self.inner.config.max_queued;
        let queued = self.inner.store.count_queued(max).await?;
        if !admission.counted(queued, max, std::time::Instant::now()) {
            return Err(EngineError::QueueFull(queued));
        }
        Ok(())
    }

    /// Stores an API token by its hash: false when one of that name
    /// exists. Fails fast while the store refuses writes, as every other
    /// change does: a token whose client gave up must not appear later.
    pub async fn create_token(&self, token: joblog_core::NewToken) -> Result<bool, EngineError> {
        self.check_writable()?;
        Ok(self.inner.pipeline.create_token(token).await?)
    }

    /// Revokes the token of that name: false when there is none. Fails
    /// fast while the store refuses writes.
    pub async fn revoke_token(&self, name: String) -> Result<bool, EngineError> {
        self.check_writable()?;
        Ok(self.inner.pipeline.revoke_token(name).await?)
    }

    /// Asks `node` (this one or another of the store) to drain, or to take
    /// jobs again: false when no node has that name. A draining node
    /// takes no job and fires no schedule; its running jobs go on.
    pub async fn set_drain(&self, node: String, drain: bool) -> Result<bool, EngineError> {
        self.check_writable()?;
        Ok(self.inner.pipeline.set_drain(node, drain).await?)
    }

    /// Pauses the scheduler of every node (`by` whom), or resumes it
    /// (`None`): while paused no schedule fires and no trigger runs;
    /// manual runs still do.
    pub async fn set_paused(&self, by: Option<String>) -> Result<(), EngineError> {
        self.check_writable()?;
        Ok(self.inner.pipeline.set_paused(by).await?)
    }

    /// Fails fast while the store refuses writes (a full disk, a lost
    /// database): a write asked of it would wait until it recovers, and a
    /// client that gave up and retried would then find its job twice.
    pub(crate) fn check_writable(&self) -> Result<(), EngineError> {
        match self.inner.pipeline.health() {
            joblog_pipeline::Health::Ok => Ok(()),
            joblog_pipeline::Health::Failing(why) => Err(EngineError::WritesFailing(why)),
            joblog_pipeline::Health::Full(why) => Err(EngineError::StorageFull(why)),
        }
    }

    /// Refuses a new job while the data directory's disk has less free
    /// space than `min_free_bytes`, before it is full: what runs keeps the
    /// room to finish. A disk that cannot be measured is not refused for.
    pub(crate) fn check_free_space(&self) -> Result<(), EngineError> {
        match self.storage_low() {
            Some(why) => Err(EngineError::StorageFull(why)),
            None => Ok(()),
        }
    }

    /// Why new jobs are refused for want of space on the data directory's
    /// disk (`min_free_bytes`), measured now; `None` while there is room.
    pub fn storage_low(&self) -> Option<String> {
        let min = self.inner.config.min_free_bytes;
        if min == 0 {
            return None;
        }
        let free = match crate::storage::free_bytes(&self.inner.config.data_dir) {
            Ok(free) => free,
            Err(e) => {
                tracing::warn!(error = %e, "cannot measure the data directory's free space");
                return None;
            }
        };
        let low = free < min;
        self.inner.metrics.storage_low.set(i64::from(low));
        low.then(|| {
            format!(
                "{free} bytes free on the data directory's disk, below store.min_free_bytes ({min})"
            )
        })
    }

    /// Cancels a queued job at once, or stops a running one (its state
    /// becomes `cancelled` once its process group is gone).
    pub async fn cancel(&self, id: JobId) -> Result<Job, EngineError> {
        if self.stop_if_running(id) {
            return self.get(id).await;
        }
        if let Some(job) = self.inner.pipeline.cancel_queued(id).await? {
            self.lock_secrets().remove(&id);
            return Ok(job);
        }
        let job = self.get(id).await?;
        if job.state.is_finished() {
            return Err(EngineError::AlreadyFinished(id));
        }
        if job.node.as_deref() != Some(self.node()) {
            if !self.inner.store.is_shared() {
                return Err(EngineError::NotHere(id));
            }
            // Running on another node: its engine hears the request
            // through the store's notifications and stops it.
            self.inner.pipeline.request_cancel(id).await?;
            return Ok(job);
        }
        // Claimed by our dispatcher and not registered yet: it will be
        // stopped the moment it is.
        if !self.stop_if_running(id) {
            self.lock_running().cancel_on_start.insert(id);
        }
        Ok(job)
    }

    pub(crate) fn stop_if_running(&self, id: JobId) -> bool {
        self.stop_job(id, StopReason::Cancel)
    }

    /// Asks the job's task to stop it and, if its process has started,
    /// sends its group SIGTERM now and SIGKILL after `kill_grace`; false
    /// when the job does not run here.
    pub(crate) fn stop_job(&self, id: JobId, reason: StopReason) -> bool {
        let pgid = match self.lock_running().jobs.get(&id) {
            Some(job) => {
                let _ = job.stop.send(Some(reason));
                job.pgid
            }
            None => return false,
        };
        if let Some(pgid) = pgid {
            process::signal_group(Some(pgid), nix::sys::signal::Signal::SIGTERM);
            let engine = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(engine.inner.config.kill_grace).await;
                let same = engine
                    .lock_running()
                    .jobs
                    .get(&id)
                    .is_some_and(|j| j.pgid == Some(pgid));
                if same {
                    process::signal_group(Some(pgid), nix::sys::signal::Signal::SIGKILL);
                }
            });
        }
        true
    }

    pub(crate) async fn get(&self, id: JobId) -> Result<Job, EngineError> {
        self.inner
            .store
            .get_job(id)
            .await?
            .ok_or(EngineError::NotFound(id))
    }

    /// Graceful stop: no new jobs; running ones get `grace` to finish, then
    /// are stopped (state `interrupted`). Returns when every job task has
    /// handed its last record to the pipeline.
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.accepting.store(false, Ordering::Relaxed);
        let _ = self.inner.shutdown.send(true);
        self.inner.dispatcher.wake.notify_waiters();
        let n = self.lock_running().jobs.len();
        if n > 0 {
            tracing::info!(jobs = n, ?grace, "waiting for running jobs to finish");
        }
        if tokio::time::timeout(grace, self.wait_idle()).await.is_err() {
            let ids: Vec<JobId> = self.lock_running().jobs.keys().copied().collect();
            tracing::warn!(jobs = ids.len(), "grace period over; stopping running jobs");
            for id in ids {
                self.stop_job(id, StopReason::Shutdown);
            }
            self.wait_idle().await;
        }
        let node = self.inner.config.node.clone();
        if let Err(e) = self.inner.pipeline.node_stopped(node).await {
            tracing::warn!(error = %e, "could not record this node's stop");
        }
    }

    pub(crate) async fn wait_idle(&self) {
        loop {
            let notified = self.inner.jobs.idle.notified();
            if self.lock_running().jobs.is_empty() {
                return;
            }
            notified.await;
        }
    }
}
