//! The HTTP API (docs/api.md): jobs, logs, results, health and metrics.
//!
//! Invariants: only this crate speaks JSON to clients; handlers hold no
//! lock across I/O and never write to the store themselves (writes go
//! through the engine and its pipeline); internal errors are logged, and
//! clients get a stable code and a clean message.

#[cfg(test)]
mod contract_tests;
mod error;
mod extract;
mod routes;
mod sse;

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use joblog_engine::Engine;
use prometheus_client::registry::Registry;
use subtle::ConstantTimeEq;

pub use error::{ApiError, ErrorCode};

/// Everything the handlers need, passed explicitly.
#[derive(Clone)]
pub struct AppState {
    pub engine: Engine,
    /// When set, every `/api/v1` and `/metrics` call needs this bearer token.
    pub token: Option<Arc<str>>,
    pub registry: Arc<Registry>,
}

/// Largest request body accepted; larger → 413.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// The whole HTTP surface, testable without a socket.
pub fn app(state: AppState) -> Router {
    let api = Router::new()
        .route("/jobs", post(routes::submit).get(routes::list))
        .route("/jobs/{id}", get(routes::show))
        .route("/jobs/{id}/cancel", post(routes::cancel))
        .route("/jobs/{id}/log", get(routes::log_page))
        .route("/jobs/{id}/log/text", get(routes::log_text))
        .route("/jobs/{id}/log/events", get(sse::log_events))
        .route("/jobs/{id}/result", get(routes::result))
        .route("/groom", post(routes::groom))
        .route("/openapi.json", get(routes::openapi));
    let protected = Router::new()
        .nest("/api/v1", api)
        .route("/metrics", get(metrics))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token));
    Router::new()
        .merge(protected)
        .route("/openapi.json", get(routes::openapi))
        .route("/healthz", get(healthz))
        .fallback(|| async { ApiError::new(ErrorCode::NotFound, "no such endpoint") })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

async fn require_token(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if let Some(token) = &state.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !bool::from(given.as_bytes().ct_eq(token.as_bytes())) {
            return ApiError::new(
                ErrorCode::Unauthorized,
                "missing or wrong API token (Authorization: Bearer …)",
            )
            .into_response();
        }
    }
    next.run(req).await
}

async fn metrics(State(state): State<AppState>) -> Response {
    let mut body = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut body, &state.registry) {
        tracing::error!(error = %e, "encoding metrics");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

/// 200 when the node takes jobs and its store answers and accepts writes;
/// 503 otherwise, saying why.
async fn healthz(State(state): State<AppState>) -> Response {
    let engine = &state.engine;
    // A database that is away can take a connect timeout to say so;
    // health must answer sooner.
    let read = match tokio::time::timeout(std::time::Duration::from_secs(2), engine.store().ping())
        .await
    {
        Ok(r) => r,
        Err(_) => Err(joblog_store::StoreError::Unavailable(
            "no answer within 2 s".into(),
        )),
    };
    let write = engine.pipeline().health();
    let store = match (&read, &write) {
        (Ok(()), joblog_pipeline::Health::Ok) => "ok".to_string(),
        (Err(e), _) => {
            tracing::error!(error = %e, "health check: store read failed");
            "unavailable: reads fail".to_string()
        }
        (_, joblog_pipeline::Health::Failing(_)) => "unavailable: writes fail".to_string(),
    };
    let ok = store == "ok" && engine.is_accepting();
    let body = serde_json::json!({
        "status": if ok { "ok" } else { "unavailable" },
        "store": store,
        "accepting_jobs": engine.is_accepting(),
        "node": engine.node(),
        "pool_in_use": engine.in_use(),
    });
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(body)).into_response()
}
