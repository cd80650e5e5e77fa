//! Retention: deleting the finished jobs a policy names, whole log
//! partitions first where the store has them, the rest in small
//! transactions.

use joblog_core::JobId;
use joblog_store::GroomPolicy;

use crate::{Engine, EngineError};

/// What `groom` deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroomReport {
    pub jobs_deleted: u64,
    pub records_deleted: u64,
}

impl Engine {
    /// Deletes finished jobs the policy names, log first, in small
    /// transactions so that the writer never holds the store for long.
    pub async fn groom(&self, policy: GroomPolicy) -> Result<GroomReport, EngineError> {
        const CHUNK: u32 = 5_000;
        self.check_writable()?;
        let mut report = GroomReport::default();
        let mut candidates = self.inner.store.groom_candidates(policy).await?;
        if candidates.is_empty() {
            return Ok(report);
        }
        // Whole partitions first (a cheap DROP each, where the store has
        // them); what remains is deleted row by row.
        let pipeline = &self.inner.pipeline;
        let dropped = pipeline.drop_log_partitions(candidates.clone()).await?;
        report.jobs_deleted += dropped.jobs.len() as u64;
        report.records_deleted += dropped.records;
        let dropped: std::collections::HashSet<JobId> = dropped.jobs.into_iter().collect();
        candidates.retain(|id| !dropped.contains(id));
        for id in candidates {
            loop {
                let n = pipeline.delete_log_chunk(id, CHUNK).await?;
                report.records_deleted += n;
                if n < u64::from(CHUNK) {
                    break;
                }
            }
            report.jobs_deleted += pipeline.delete_job(id).await?;
        }
        Ok(report)
    }
}
