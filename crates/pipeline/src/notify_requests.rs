//! The typed calls of notifications: saving and deleting a rule, and the
//! sender's claims and tries (`crate::requests` has the others).

use std::time::Duration;

use joblog_core::notify::{Delivery, DeliveryId, RuleId, TryOutcome, ValidRule};
use joblog_core::Timestamp;
use joblog_store::{Outcome, RuleSaved, WriteOp};

use crate::requests::mismatch;
use crate::{Pipeline, PipelineError};

impl Pipeline {
    /// Creates (`id` `None`) or replaces a notification rule.
    pub async fn save_rule(
        &self,
        id: Option<RuleId>,
        rule: ValidRule,
    ) -> Result<RuleSaved, PipelineError> {
        let op = WriteOp::SaveRule {
            id,
            rule: Box::new(rule),
        };
        match self.execute(op).await? {
            Outcome::Rule(saved) => Ok(saved),
            other => Err(mismatch("save_rule", other)),
        }
    }

    /// Deletes a rule and its deliveries; false when there was none.
    pub async fn delete_rule(&self, id: RuleId) -> Result<bool, PipelineError> {
        match self.execute(WriteOp::DeleteRule { id }).await? {
            Outcome::Count(n) => Ok(n > 0),
            other => Err(mismatch("delete_rule", other)),
        }
    }

    /// Takes up to `max` deliveries due at `at` for `node` to send, each
    /// due again after `lease` should this node die sending it.
    pub async fn claim_deliveries(
        &self,
        node: String,
        at: Timestamp,
        lease: Duration,
        max: u32,
    ) -> Result<Vec<Delivery>, PipelineError> {
        let op = WriteOp::ClaimDeliveries {
            node,
            at,
            lease,
            max,
        };
        match self.execute(op).await? {
            Outcome::Deliveries(d) => Ok(d),
            other => Err(mismatch("claim_deliveries", other)),
        }
    }

    /// Records a try of a delivery (`retry_at`: when a retryable failure
    /// is tried again; `None` once out of retries).
    pub async fn delivery_tried(
        &self,
        id: DeliveryId,
        outcome: TryOutcome,
        retry_at: Option<Timestamp>,
        at: Timestamp,
    ) -> Result<bool, PipelineError> {
        let op = WriteOp::DeliveryTried {
            id,
            outcome,
            retry_at,
            at,
        };
        match self.execute(op).await? {
            Outcome::Count(n) => Ok(n > 0),
            other => Err(mismatch("delivery_tried", other)),
        }
    }
}
