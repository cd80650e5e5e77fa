//! The API's errors: stable codes and statuses for clients; the real cause
//! goes to the error log, never to the client.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use joblog_engine::EngineError;
use joblog_pipeline::PipelineError;
use joblog_store::StoreError;

#[derive(Debug, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn job_not_found(id: i64) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "job_not_found",
            format!("no job with id {id}"),
        )
    }

    fn internal(what: &str, cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "{what}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("{what}; see the server's error log"),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({"error": {"code": self.code, "message": self.message}});
        (self.status, axum::Json(body)).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        if e.is_transient() {
            tracing::error!(error = %e, "store unavailable");
            return ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store_unavailable",
                "the database is unavailable; try again shortly",
            );
        }
        ApiError::internal("database error", &e)
    }
}

impl From<PipelineError> for ApiError {
    fn from(e: PipelineError) -> Self {
        match e {
            PipelineError::Closed => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "shutting_down",
                "the server is shutting down",
            ),
            PipelineError::Store(e) => e.into(),
            e @ PipelineError::Mismatch { .. } => ApiError::internal("store error", &e),
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Invalid(v) => ApiError::bad_request("invalid_request", v.to_string()),
            EngineError::NotFound(id) => ApiError::job_not_found(id),
            EngineError::AlreadyFinished(id) => ApiError::new(
                StatusCode::CONFLICT,
                "job_finished",
                format!("job {id} has already finished"),
            ),
            EngineError::NotHere(id) => ApiError::new(
                StatusCode::CONFLICT,
                "job_elsewhere",
                format!("job {id} is running on another node"),
            ),
            EngineError::ShuttingDown => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "shutting_down",
                "the server is shutting down and takes no new jobs",
            ),
            EngineError::Pipeline(e) => e.into(),
            EngineError::Store(e) => e.into(),
            e @ EngineError::Io(_) => ApiError::internal("engine error", &e),
        }
    }
}
