//! Living with other nodes: reacting to their commits (new jobs, cancel
//! requests) and, on a shared store, heartbeating and ending the jobs of
//! nodes that went silent.

use std::time::Duration;

use joblog_core::JobId;
use joblog_pipeline::Pipeline;

use crate::{Engine, EngineConfig};

impl Engine {
    /// Reacts to commits, this node's and (on a shared store) other
    /// nodes': new and ended jobs wake the dispatcher, cancel requests stop the jobs
    /// they name if they run here.
    pub(crate) async fn watch_commits(
        self,
        mut commits: tokio::sync::broadcast::Receiver<std::sync::Arc<joblog_pipeline::Committed>>,
    ) {
        loop {
            match commits.recv().await {
                Ok(c) => {
                    // A job that ended may have held back others of its
                    // concurrency key.
                    if c.queued > 0 || c.reset || !c.finished.is_empty() {
                        self.inner.dispatcher.wake.notify_one();
                    }
                    // Not at every end: on PostgreSQL the writer tells
                    // whether a rule matched, and the sender's look is a
                    // read of the store.
                    if c.reset || c.deliveries {
                        self.notifications_due();
                    }
                    // Not at every end: a job that wrote nothing was
                    // sealed by it, and the sealer's look would find
                    // nothing (a read of the store a job, on PostgreSQL).
                    if c.reset || c.to_seal {
                        self.jobs_ended();
                    }
                    for id in &c.cancel {
                        self.stop_if_running(*id);
                    }
                    if c.tokens_revoked || c.sessions_ended || c.reset {
                        self.inner.revocations.send_modify(|n| *n += 1);
                    }
                    // A drain or pause lifted: look again at once.
                    if c.controls || c.reset {
                        self.inner.dispatcher.wake.notify_one();
                        self.inner.scheduler.changed.notify_one();
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    self.inner.dispatcher.wake.notify_one();
                    self.inner.scheduler.changed.notify_one();
                    self.jobs_ended();
                    self.notifications_due();
                    self.inner.revocations.send_modify(|n| *n += 1);
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    /// Keeps this node's heartbeat fresh (on the embedded store too, so a
    /// crash can be dated) and, on a shared store, ends the jobs of lapsed
    /// nodes.
    ///
    /// Judging others needs a fair view: after this node could not
    /// heartbeat for a while (the database was away, or the writer was
    /// held up), the other nodes were probably held up the same way, so it
    /// only judges once it has heartbeated without a gap for a whole
    /// `heartbeat_timeout` (every live node has written a fresh heartbeat
    /// by then). Otherwise the first node back after an outage longer than
    /// the timeout would interrupt every other node's jobs.
    pub(crate) async fn heartbeats(self) {
        let timeout = self.inner.config.heartbeat_timeout;
        let shared = self.inner.store.is_shared();
        let period = (timeout / 3).max(Duration::from_millis(100));
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Starting counts as a gap: we do not know what came before.
        let mut healthy_since = tokio::time::Instant::now();
        loop {
            tick.tick().await;
            let started = tokio::time::Instant::now();
            let judge = shared && started.duration_since(healthy_since) >= timeout;
            match heartbeat(&self.inner.pipeline, &self.inner.config, judge).await {
                Ok(ended) if ended.is_empty() => {}
                Ok(ended) => tracing::warn!(
                    "nodes silent for more than {timeout:?} taken for lost; their jobs marked interrupted: {}",
                    describe(&ended)
                ),
                Err(joblog_pipeline::PipelineError::Closed) => return,
                Err(e) => tracing::error!(error = %e, "heartbeat failed"),
            }
            if started.elapsed() > period {
                if judge {
                    tracing::warn!(
                        took = ?started.elapsed(),
                        "heartbeat was held up; not judging other nodes for {timeout:?}"
                    );
                }
                healthy_since = tokio::time::Instant::now();
            }
        }
    }
}

/// One heartbeat; returns the jobs of lapsed nodes it interrupted.
pub(crate) async fn heartbeat(
    pipeline: &Pipeline,
    config: &EngineConfig,
    judge: bool,
) -> Result<Vec<(JobId, Option<String>)>, joblog_pipeline::PipelineError> {
    let lapse = judge.then_some(config.heartbeat_timeout);
    pipeline.heartbeat(config.node.clone(), lapse).await
}

/// Interrupted jobs by node, for a log line: `node-a: jobs 3, 4; node-b: job 7`.
pub(crate) fn describe(ended: &[(JobId, Option<String>)]) -> String {
    let mut by_node: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for (job, node) in ended {
        by_node
            .entry(node.as_deref().unwrap_or("(no node)"))
            .or_default()
            .push(job.to_string());
    }
    let parts: Vec<String> = by_node
        .into_iter()
        .map(|(node, jobs)| {
            let noun = if jobs.len() == 1 { "job" } else { "jobs" };
            format!("{node}: {noun} {}", jobs.join(", "))
        })
        .collect();
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn interrupted_jobs_are_told_by_node() {
        let ended = [
            (3, Some("b".to_string())),
            (1, Some("a".into())),
            (4, Some("b".into())),
        ];
        assert_eq!(super::describe(&ended), "a: job 1; b: jobs 3, 4");
        assert_eq!(super::describe(&[(9, None)]), "(no node): job 9");
    }
}
