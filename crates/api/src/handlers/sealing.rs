//! Sealed logs on demand: `GET /api/v1/sealing` says how far sealing is,
//! `POST` asks the node's sealer for one pass over every finished job's
//! log (`joblog seal --all`). The sealing itself is the engine's.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use joblog_engine::SealStatus;

use crate::error::ApiError;
use crate::AppState;

pub async fn status(State(state): State<AppState>) -> Result<Json<SealStatus>, ApiError> {
    Ok(Json(state.engine.seal_status().await?))
}

pub async fn seal_all(
    State(state): State<AppState>,
) -> Result<(StatusCode, Json<SealStatus>), ApiError> {
    state.engine.seal_all();
    tracing::info!(
        audit = "log.seal_all",
        "asked to seal the log of every finished job"
    );
    Ok((
        StatusCode::ACCEPTED,
        Json(state.engine.seal_status().await?),
    ))
}
