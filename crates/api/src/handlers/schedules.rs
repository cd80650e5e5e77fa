//! `/api/v1/schedules`: create, list, show, change, delete and run now
//! the schedules whose fires the engine's scheduler turns into jobs.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use joblog_core::schedule::{NewSchedule, Schedule, ScheduleId, MAX_SCHEDULE_LIMIT};
use joblog_core::Role;
use serde::{Deserialize, Serialize};

use crate::auth::Identity;
use crate::error::{ApiError, ErrorCode};
use crate::extract::{positive_id, JsonBody, OptionalJsonBody, QueryParams};
use crate::handlers::jobs::may_file;
use crate::AppState;

/// A schedule id from the path; anything but a positive integer → 400.
pub struct ScheduleIdPath(pub ScheduleId);

impl<S: Send + Sync> FromRequestParts<S> for ScheduleIdPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        positive_id(parts, state, "schedule")
            .await
            .map(ScheduleIdPath)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    limit: Option<u32>,
    after_id: Option<ScheduleId>,
}

#[derive(Serialize)]
struct ScheduleList {
    schedules: Vec<Schedule>,
    /// Where the next page starts; `null` on the last.
    next_after_id: Option<ScheduleId>,
}

/// Schedules by id, each with its next fires and latest job.
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
    QueryParams(p): QueryParams<ListParams>,
) -> Result<Json<impl Serialize>, ApiError> {
    let limit = p.limit.unwrap_or(100);
    if limit == 0 || limit > MAX_SCHEDULE_LIMIT {
        return Err(ApiError::new(
            ErrorCode::InvalidQuery,
            format!("limit: must be 1 to {MAX_SCHEDULE_LIMIT}"),
        ));
    }
    let page = state
        .engine
        .store()
        .list_schedules(p.after_id.unwrap_or(0), limit)
        .await?;
    // The page's end is the store's, so that a page short of schedules
    // out of reach still leads to the next.
    let next_after_id = if page.len() == limit as usize {
        page.last().map(|s| s.id)
    } else {
        None
    };
    let schedules: Vec<Schedule> = page
        .into_iter()
        .filter(|s| caller.scope.role_in(s.folder.as_deref()).is_some())
        .map(Schedule::with_next_fires)
        .collect();
    Ok(Json(ScheduleList {
        schedules,
        next_after_id,
    }))
}

pub async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
    JsonBody(new): JsonBody<NewSchedule>,
) -> Result<Response, ApiError> {
    may_file(&caller, new.folder.as_deref(), Role::Operator)?;
    let schedule = state.engine.create_schedule(new).await?;
    audit("schedule.created", &schedule);
    Ok((StatusCode::CREATED, Json(schedule)).into_response())
}

pub async fn show(
    State(state): State<AppState>,
    ScheduleIdPath(id): ScheduleIdPath,
) -> Result<Json<Schedule>, ApiError> {
    Ok(Json(state.engine.get_schedule(id).await?))
}

/// Changes the fields the body names (any of `POST`'s); the rest stay.
pub async fn update(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
    ScheduleIdPath(id): ScheduleIdPath,
    JsonBody(patch): JsonBody<serde_json::Map<String, serde_json::Value>>,
) -> Result<Json<Schedule>, ApiError> {
    // Moved to another folder: the role there too (the route's rule
    // judged the folder it is in).
    if let Some(folder) = patch.get("folder") {
        let folder = match folder {
            serde_json::Value::Null => None,
            serde_json::Value::String(f) => Some(f.as_str()),
            _ => {
                return Err(ApiError::new(
                    ErrorCode::InvalidRequest,
                    "folder: a folder's name, or null for none",
                ))
            }
        };
        may_file(&caller, folder, Role::Operator)?;
    }
    let fields: Vec<String> = patch.keys().cloned().collect();
    let schedule = state.engine.update_schedule(id, patch).await?;
    tracing::info!(
        audit = "schedule.updated",
        schedule_id = id,
        name = schedule.name.as_str(),
        fields = fields.join(","),
        "schedule {id} updated"
    );
    Ok(Json(schedule))
}

pub async fn delete(
    State(state): State<AppState>,
    ScheduleIdPath(id): ScheduleIdPath,
) -> Result<StatusCode, ApiError> {
    state.engine.delete_schedule(id).await?;
    tracing::info!(
        audit = "schedule.deleted",
        schedule_id = id,
        "schedule {id} deleted"
    );
    Ok(StatusCode::NO_CONTENT)
}

/// The body of `POST /api/v1/schedules/{id}/run`, which may be left out.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunRequest {
    /// Values of the schedule's parameters, checked against its schema.
    params: serde_json::Map<String, serde_json::Value>,
}

/// Queues a run of the schedule now (`fire_time` `null`) with the
/// parameters given, checked before the job exists.
pub async fn run_now(
    State(state): State<AppState>,
    ScheduleIdPath(id): ScheduleIdPath,
    OptionalJsonBody(req): OptionalJsonBody<RunRequest>,
) -> Result<Response, ApiError> {
    let job = state.engine.run_schedule_now(id, req.params).await?;
    tracing::Span::current().record("job_id", job.id);
    tracing::info!(
        audit = "schedule.run",
        schedule_id = id,
        job_id = job.id,
        "schedule {id} run now as job {}",
        job.id
    );
    Ok((StatusCode::CREATED, Json(job)).into_response())
}

fn audit(action: &'static str, s: &Schedule) {
    tracing::info!(
        audit = action,
        schedule_id = s.id,
        name = s.name.as_str(),
        cron = s.cron.as_deref(),
        after = s.after.as_ref().map(|a| a.schedule_id),
        folder = s.folder.as_deref(),
        "schedule {} ({}) {}",
        s.id,
        s.name,
        action.trim_start_matches("schedule.")
    );
}
