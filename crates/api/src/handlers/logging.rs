//! `GET` and `PUT /api/v1/logging`: the server's logging configuration
//! (the `[logging]` section), read and replaced live. A replacement
//! applies from the next event; an invalid one is refused, naming what
//! was wrong, and the one in force stays.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use joblog_oplog::{LoggingConfig, Oplog, OplogError};

use crate::error::{ApiError, ErrorCode};
use crate::extract::JsonBody;
use crate::AppState;

fn oplog(state: &AppState) -> Result<&Oplog, ApiError> {
    state.oplog.as_ref().ok_or_else(|| {
        ApiError::new(
            ErrorCode::NotFound,
            "this server's logs are not configured through the API",
        )
    })
}

pub async fn show(State(state): State<AppState>) -> Result<Response, ApiError> {
    Ok(Json(oplog(&state)?.config()).into_response())
}

pub async fn replace(
    State(state): State<AppState>,
    JsonBody(config): JsonBody<LoggingConfig>,
) -> Result<Response, ApiError> {
    let oplog = oplog(&state)?.clone();
    let applying = oplog.clone();
    // Opening files and sockets, and the old sinks' last flush, block.
    let changed = tokio::task::spawn_blocking(move || applying.reconfigure_from_api(config))
        .await
        .map_err(|e| ApiError::internal("applying a logging configuration", &e))?;
    let changed = match changed {
        Ok(changed) => changed,
        Err(e @ (OplogError::Invalid(_) | OplogError::Open(_))) => {
            return Err(ApiError::new(
                ErrorCode::InvalidRequest,
                format!("{e}; the configuration in force stays"),
            ))
        }
        Err(OplogError::Closed) => {
            return Err(ApiError::new(
                ErrorCode::ShuttingDown,
                "the server is stopping",
            ))
        }
    };
    if changed {
        tracing::info!(
            audit = "config.changed",
            section = "logging",
            source = "api",
            "logging configuration changed through the API"
        );
    }
    Ok(Json(serde_json::json!({ "changed": changed, "config": oplog.config() })).into_response())
}
