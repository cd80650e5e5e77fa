//! `/api/v1/scheduler`: whether schedules fire, on every node at once —
//! read it, pause it (a restore, a drill, maintenance), resume it.

use axum::extract::State;
use axum::{Extension, Json};
use joblog_store::SchedulerState;

use crate::auth::Identity;
use crate::error::ApiError;
use crate::AppState;

pub async fn state(State(state): State<AppState>) -> Result<Json<SchedulerState>, ApiError> {
    Ok(Json(state.engine.store().scheduler_state().await?))
}

/// No schedule fires and no trigger runs until it is resumed; fires that
/// come meanwhile follow each schedule's `missed` policy then.
pub async fn pause(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
) -> Result<Json<SchedulerState>, ApiError> {
    state
        .engine
        .set_paused(Some(caller.name().to_string()))
        .await?;
    tracing::info!(
        audit = "scheduler.paused",
        "scheduler paused by {}",
        caller.name()
    );
    Ok(Json(state.engine.store().scheduler_state().await?))
}

pub async fn resume(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
) -> Result<Json<SchedulerState>, ApiError> {
    state.engine.set_paused(None).await?;
    tracing::info!(
        audit = "scheduler.resumed",
        "scheduler resumed by {}",
        caller.name()
    );
    Ok(Json(state.engine.store().scheduler_state().await?))
}
