//! `POST /api/v1/groom`: deletes finished jobs by age or by how many of
//! a name to keep, or says what it would delete (`dry_run`).

use axum::extract::State;
use axum::Json;
use joblog_core::Timestamp;
use joblog_store::GroomPolicy;
use serde::{Deserialize, Serialize};

use crate::error::{ApiError, ErrorCode};
use crate::extract::JsonBody;
use crate::AppState;

use super::jobs::LISTED_COMMAND_BYTES;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroomRequest {
    pub(crate) older_than_s: Option<f64>,
    pub(crate) keep_per_name: Option<u32>,
    /// Only say what would be deleted.
    #[serde(default)]
    pub(crate) dry_run: bool,
}

/// Jobs a dry run lists one by one; past it, only counted.
const DRY_RUN_LISTED: usize = 1000;

impl GroomRequest {
    /// What to delete, `older_than_s` counted back from `now`; at least
    /// one criterion. A bad value → 400 naming the field.
    pub(crate) fn policy(&self, now: Timestamp) -> Result<GroomPolicy, ApiError> {
        if self.older_than_s.is_none() && self.keep_per_name.is_none() {
            return Err(ApiError::new(
                ErrorCode::InvalidRequest,
                "give older_than_s, keep_per_name or both",
            ));
        }
        let finished_before = match self.older_than_s {
            None => None,
            Some(s) if s.is_finite() && s >= 0.0 => {
                // `as` saturates; the subtraction must too (older_than_s=1e300).
                Some(now.micros().saturating_sub((s * 1_000_000.0) as i64))
            }
            Some(_) => {
                return Err(ApiError::new(
                    ErrorCode::InvalidRequest,
                    "older_than_s: must be a number of seconds ≥ 0",
                ))
            }
        };
        Ok(GroomPolicy {
            finished_before,
            keep_per_name: self.keep_per_name,
        })
    }
}

pub async fn groom(
    State(state): State<AppState>,
    JsonBody(req): JsonBody<GroomRequest>,
) -> Result<Json<impl Serialize>, ApiError> {
    let policy = req.policy(Timestamp::now())?;
    if req.dry_run {
        // What the same call without dry_run would delete now: the same
        // candidates, counted from their rows (the log is not scanned).
        let store = state.engine.store();
        let mut listed = Vec::new();
        let mut records = 0;
        let candidates = store.groom_candidates(policy).await?;
        for &id in &candidates {
            let Some(mut job) = store.get_job(id).await? else {
                continue;
            };
            records += job.log.records;
            if listed.len() < DRY_RUN_LISTED {
                job.abbreviate(LISTED_COMMAND_BYTES);
                listed.push(job);
            }
        }
        return Ok(Json(serde_json::json!({
            "dry_run": true,
            "jobs_deleted": candidates.len(),
            "records_deleted": records,
            "jobs": listed,
        })));
    }
    let report = state.engine.groom(policy).await?;
    tracing::info!(
        audit = "job.groomed",
        jobs = report.jobs_deleted,
        records = report.records_deleted,
        "groomed {} jobs",
        report.jobs_deleted
    );
    Ok(Json(serde_json::json!({
        "dry_run": false,
        "jobs_deleted": report.jobs_deleted,
        "records_deleted": report.records_deleted,
    })))
}
