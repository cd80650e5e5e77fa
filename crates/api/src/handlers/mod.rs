//! The handlers of the HTTP API, a module per resource. Which route
//! reaches which handler, and under what rules, is declared once in
//! [`crate::routes`].

pub mod audit;
pub mod backup;
pub mod feed;
pub mod groom;
pub mod jobs;
pub mod log;
pub mod logging;
pub mod nodes;
pub mod notifications;
pub mod oidc;
pub mod scheduler;
pub mod schedules;
pub mod sealing;
pub mod search;
pub mod session;
pub mod tokens;
pub mod users;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::AppState;

/// JSON encoded in one pre-sized buffer: for large pages this is cheaper
/// than axum's `Json`, which writes through many small buffer appends.
pub(crate) fn json_response<T: Serialize>(value: &T, size_hint: usize) -> Response {
    let mut body = Vec::with_capacity(size_hint + 64);
    match serde_json::to_writer(&mut body, value) {
        Ok(()) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "encoding a response");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// The folders of a token or user as the audit trail notes them
/// (`team-a=operator,team-b=viewer`); `None`: every folder.
pub(crate) fn folders_note(folders: Option<&joblog_core::Folders>) -> Option<String> {
    folders.map(|f| {
        f.iter()
            .map(|(folder, role)| format!("{folder}={role}"))
            .collect::<Vec<_>>()
            .join(",")
    })
}

pub async fn openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        include_str!("../openapi.json"),
    )
        .into_response()
}

/// 200 when the node takes jobs, its store answers and accepts writes and
/// its data directory's disk has room; 503 otherwise, saying why.
pub async fn healthz(State(state): State<AppState>) -> Response {
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
        (_, joblog_pipeline::Health::Full(_)) => "unavailable: storage full".to_string(),
    };
    // The floor below which new jobs are refused (`store.min_free_bytes`).
    let storage = match engine.storage_low() {
        None => "ok".to_string(),
        Some(why) => format!("low: {why}; new jobs refused"),
    };
    let ok = store == "ok" && storage == "ok" && engine.is_accepting();
    let body = serde_json::json!({
        "status": if ok { "ok" } else { "unavailable" },
        "store": store,
        "storage": storage,
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
