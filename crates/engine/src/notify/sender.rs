//! The sender: one task per node that sleeps until a delivery is due (or
//! a job's end wakes it), claims a batch, sends each (at most
//! [`SENDING_AT_ONCE`] at once), and records each try: delivered, due again
//! after a backoff, or failed once refused or out of `retry_for`.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use joblog_core::notify::{Delivery, Rule, RuleId, TryOutcome};
use joblog_core::Timestamp;

use super::{Sent, LEASE, LOOK_EVERY, SENDING_AT_ONCE};
use crate::Engine;

/// Backoff between tries of a delivery: 10 s doubling to an hour.
const FIRST_RETRY: Duration = Duration::from_secs(10);
const LONGEST_RETRY: Duration = Duration::from_secs(3600);

impl Engine {
    /// The sender task (see the module's documentation).
    pub(crate) async fn notify_loop(self) {
        let mut shutdown = self.inner.shutdown.subscribe();
        loop {
            if *shutdown.borrow() {
                return;
            }
            let woken = self.inner.notifier.wake.notified();
            let now = self.inner.clock.now();
            // Every job's end wakes the sender: when nothing is pending
            // (no rule matched), one read and back to sleep, never a
            // claim through the writer.
            let due = self.inner.store.next_delivery_due().await;
            let sleep = match due {
                Ok(Some(t)) if t <= now => {
                    if self.send_due(now).await {
                        continue;
                    }
                    LOOK_EVERY
                }
                Ok(Some(t)) => {
                    self.update_oldest(now).await;
                    Duration::from_micros(t.0.saturating_sub(now.0).max(0) as u64)
                }
                Ok(None) => {
                    self.inner.notifier.oldest.set(0.0);
                    LOOK_EVERY
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reading when notifications are due failed");
                    LOOK_EVERY
                }
            }
            .min(LOOK_EVERY);
            tokio::select! {
                _ = woken => {}
                _ = self.inner.clock.sleep_until(Timestamp(now.0 + sleep.as_micros() as i64)) => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
        }
    }

    /// Claims and sends one batch of due deliveries; whether there was
    /// one (more may be due).
    async fn send_due(&self, now: Timestamp) -> bool {
        self.update_oldest(now).await;
        let claimed = match self
            .inner
            .pipeline
            .claim_deliveries(
                self.inner.config.node.clone(),
                now,
                LEASE,
                joblog_store::CLAIM_BATCH,
            )
            .await
        {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::error!(error = %e, "claiming notifications to send failed");
                return false;
            }
        };
        if claimed.is_empty() {
            return false;
        }
        let mut rules: HashMap<RuleId, Option<Rule>> = HashMap::new();
        for d in &claimed {
            if let std::collections::hash_map::Entry::Vacant(slot) = rules.entry(d.rule_id) {
                slot.insert(self.inner.store.get_rule(d.rule_id).await.ok().flatten());
            }
        }
        futures_util::stream::iter(claimed)
            .for_each_concurrent(SENDING_AT_ONCE, |d| {
                let rule = rules.get(&d.rule_id).cloned().flatten();
                async move { self.deliver(d, rule).await }
            })
            .await;
        true
    }

    async fn deliver(&self, d: Delivery, rule: Option<Rule>) {
        // A rule deleted meanwhile took its deliveries with it.
        let Some(rule) = rule else { return };
        let outcome = match self.inner.store.get_job(d.job_id).await {
            Ok(Some(job)) => match self.notice(&rule, &job, Some(d.id)).await {
                Ok(notice) => self.send(&rule, &notice, Some(d.id)).await,
                Err(e) => TryOutcome::Retry {
                    status: None,
                    error: format!("reading the job's log: {e}"),
                },
            },
            Ok(None) => TryOutcome::Refused {
                status: None,
                error: format!("job {} was deleted before its notification went", d.job_id),
            },
            Err(e) => TryOutcome::Retry {
                status: None,
                error: format!("reading the job: {e}"),
            },
        };
        let now = self.inner.clock.now();
        let retry_at = match &outcome {
            TryOutcome::Retry { .. } => {
                let delay = retry_delay(d.attempts);
                let at = Timestamp(now.0 + delay.as_micros() as i64);
                let give_up =
                    d.created_at.0 + self.inner.config.notify.retry_for.as_micros() as i64;
                (at.0 <= give_up).then_some(at)
            }
            _ => None,
        };
        let label = match (&outcome, retry_at) {
            (TryOutcome::Delivered { .. }, _) => "delivered",
            (TryOutcome::Retry { .. }, Some(_)) => "retry",
            _ => "failed",
        };
        match &outcome {
            TryOutcome::Delivered { .. } => tracing::info!(
                rule = rule.name.as_str(),
                delivery = d.id,
                job_id = d.job_id,
                "notification {} of job {} delivered ({})",
                d.id,
                d.job_id,
                rule.name
            ),
            TryOutcome::Retry { error, .. } | TryOutcome::Refused { error, .. } => {
                tracing::warn!(
                    rule = rule.name.as_str(),
                    delivery = d.id,
                    job_id = d.job_id,
                    attempt = d.attempts,
                    outcome = label,
                    "notification {} of job {} not delivered ({}): {error}",
                    d.id,
                    d.job_id,
                    rule.name
                )
            }
        }
        self.inner
            .notifier
            .sent
            .get_or_create(&Sent {
                rule: rule.name.clone(),
                outcome: label,
            })
            .inc();
        if let Err(e) = self
            .inner
            .pipeline
            .delivery_tried(d.id, outcome, retry_at, now)
            .await
        {
            // Its lease runs out and it is tried again.
            tracing::error!(error = %e, delivery = d.id, "recording a notification's try failed");
        }
    }

    async fn update_oldest(&self, now: Timestamp) {
        if let Ok(oldest) = self.inner.store.oldest_pending_delivery().await {
            let age = oldest.map_or(0.0, |t| (now.0 - t.0).max(0) as f64 / 1e6);
            self.inner.notifier.oldest.set(age);
        }
    }

    /// A job ended somewhere: its notifications may be due.
    pub(crate) fn notifications_due(&self) {
        self.inner.notifier.wake.notify_one();
    }
}

/// The delay after try number `attempts` (1 for the first).
fn retry_delay(attempts: u32) -> Duration {
    let mut backoff = joblog_core::Backoff::new(FIRST_RETRY, LONGEST_RETRY);
    let mut delay = backoff.next_delay();
    for _ in 1..attempts.min(32) {
        delay = backoff.next_delay();
    }
    delay
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_from_ten_seconds_to_an_hour() {
        assert_eq!(retry_delay(1), Duration::from_secs(10));
        assert_eq!(retry_delay(2), Duration::from_secs(20));
        assert_eq!(retry_delay(5), Duration::from_secs(160));
        assert_eq!(retry_delay(100), LONGEST_RETRY);
    }
}
