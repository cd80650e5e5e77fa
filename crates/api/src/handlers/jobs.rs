//! The jobs: submit one, show one, rerun and cancel it; the listing
//! (`listing`) and the result (`result`) are its parts.

pub mod listing;
pub mod result;

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use joblog_core::{Job, JobId, NewJobRequest, Role};
use serde::Deserialize;

use crate::auth::Identity;
use crate::error::{ApiError, ErrorCode};
use crate::extract::{JobIdPath, JsonBody};
use crate::AppState;

/// Bytes of a job's command shown in a listing; `GET /jobs/{id}` has all.
pub const LISTED_COMMAND_BYTES: usize = 4096;

pub async fn submit(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
    JsonBody(req): JsonBody<NewJobRequest>,
) -> Result<Response, ApiError> {
    may_file(&caller, req.folder.as_deref(), Role::Operator)?;
    let mut job = state.engine.submit(req).await?;
    super::nodes::explain_waits(&state, std::slice::from_mut(&mut job)).await;
    audit_submitted(&job, None);
    Ok((StatusCode::CREATED, Json(job)).into_response())
}

/// Whether the caller may put a job or a schedule into `folder` with
/// `needed`: a folder that is no folder's name is refused first (400
/// naming the field), then one out of the caller's reach (403).
pub(crate) fn may_file(
    caller: &Identity,
    folder: Option<&str>,
    needed: Role,
) -> Result<(), ApiError> {
    if let Some(f) = folder {
        joblog_core::validate_folder(f)
            .map_err(|e| ApiError::new(ErrorCode::InvalidRequest, format!("folder: {f:?} {e}")))?;
    }
    crate::auth::reach::may_file(caller, folder, needed)
}

/// The audit entry of a submission (the actor and peer come from the
/// request's unit).
fn audit_submitted(job: &Job, rerun_of: Option<i64>) {
    tracing::Span::current().record("job_id", job.id);
    tracing::info!(
        audit = "job.submitted",
        job_id = job.id,
        name = job.name.as_deref(),
        folder = job.spec.folder.as_deref(),
        rerun_of,
        "job {} submitted",
        job.id
    );
}

pub(crate) async fn load_job(state: &AppState, id: JobId) -> Result<Job, ApiError> {
    state
        .engine
        .store()
        .get_job(id)
        .await?
        .ok_or_else(|| ApiError::job_not_found(id))
}

pub async fn show(
    State(state): State<AppState>,
    JobIdPath(id): JobIdPath,
) -> Result<Json<Job>, ApiError> {
    let mut job = load_job(&state, id).await?;
    super::nodes::explain_waits(&state, std::slice::from_mut(&mut job)).await;
    Ok(Json(job))
}

/// The body of `POST /api/v1/jobs/{id}/rerun`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RerunRequest {
    /// Values of the original job's secrets (by name), which joblog never
    /// kept.
    pub(crate) secrets: BTreeMap<String, String>,
    /// Values of its secret parameters (never kept), and any other
    /// parameter to run with in place of the original's value.
    pub(crate) params: serde_json::Map<String, serde_json::Value>,
}

/// Submits a job again as it was submitted (name, command or script,
/// environment, timeout, directory), its secrets given anew.
pub async fn rerun(
    State(state): State<AppState>,
    JobIdPath(id): JobIdPath,
    JsonBody(req): JsonBody<RerunRequest>,
) -> Result<Response, ApiError> {
    let original = load_job(&state, id).await?;
    let request = original
        .rerun_request(req.secrets, req.params)
        .map_err(|e| ApiError::new(ErrorCode::InvalidRequest, e.to_string()))?;
    let job = state.engine.submit(request).await?;
    audit_submitted(&job, Some(id));
    Ok((StatusCode::CREATED, Json(job)).into_response())
}

pub async fn cancel(
    State(state): State<AppState>,
    JobIdPath(id): JobIdPath,
) -> Result<Json<Job>, ApiError> {
    let job = state.engine.cancel(id).await?;
    tracing::info!(
        audit = "job.cancelled",
        job_id = id,
        state = job.state.name(),
        "job {id} cancelled"
    );
    Ok(Json(job))
}
