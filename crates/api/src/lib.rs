//! The HTTP API (docs/api.md): jobs, logs, results, tokens, the audit
//! trail, health, metrics and the job-list feed, each route behind the access rule of its
//! role; every answer compressed as asked and with the security headers.
//!
//! Invariants: only this crate speaks JSON to clients; handlers hold no
//! lock across I/O and never write to the store themselves (writes go
//! through the engine and its pipeline); internal errors are logged, and
//! clients get a stable code and a clean message.

mod access;
mod audit;
mod auth;
mod backup;
mod compress;
#[cfg(test)]
mod contract_tests;
mod error;
mod extract;
mod feed;
#[doc(hidden)]
pub mod fuzzing;
mod guard;
pub mod headers;
pub mod limits;
mod listing;
mod logging;
mod metrics;
mod navigation;
mod nodes;
mod result;
mod routes;
mod schedules;
mod sealing;
mod sse;
mod tokens;
mod ui;

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::Router;
use joblog_engine::Engine;
use prometheus_client::registry::Registry;

pub use auth::{rules, Actor, Identity};
pub use error::{ApiError, ErrorCode};

/// Marks a request that came on one of the server's last connections
/// (the HTTP server puts it in the request's extensions): it is answered
/// for `/healthz` and admins only, so a client holding every other
/// connection cannot lock the operator out.
#[derive(Debug, Clone, Copy)]
pub struct Reserved;

/// Everything the handlers need, passed explicitly.
#[derive(Clone)]
pub struct AppState {
    pub engine: Engine,
    pub registry: Arc<Registry>,
    auth: Arc<auth::Auth>,
    hosts: Arc<guard::HostGuard>,
    limits: Arc<limits::Limits>,
    viewers: Arc<limits::Viewers>,
    /// Request bodies buffered at once, in all (`limits::body`).
    body_budget: Arc<tokio::sync::Semaphore>,
    store_metrics: Arc<metrics::StoreMetrics>,
    /// The server's own logs, when the API may reconfigure them.
    oplog: Option<joblog_oplog::Oplog>,
}

/// How the API admits requests.
#[derive(Debug, Clone)]
pub struct ApiOptions {
    /// The configuration's token: an admin token, and with it every route
    /// but `/healthz` and `/openapi.json` needs a token. Without it a
    /// request without a token is let in (a loopback server).
    pub token: Option<String>,
    /// Host names the server answers to besides IP addresses and
    /// `localhost` (`*`: any).
    pub allowed_hosts: Vec<String>,
    pub limits: limits::Limits,
    /// Job names `/metrics` gives figures of; the rest are summed under
    /// `(other)`.
    pub max_job_names: usize,
}

/// Job names `/metrics` exports by default.
pub const DEFAULT_MAX_JOB_NAMES: usize = 200;

impl Default for ApiOptions {
    fn default() -> Self {
        ApiOptions {
            token: None,
            allowed_hosts: Vec::new(),
            limits: limits::Limits::default(),
            max_job_names: DEFAULT_MAX_JOB_NAMES,
        }
    }
}

impl AppState {
    pub fn new(engine: Engine, mut registry: Registry, options: &ApiOptions) -> AppState {
        let store_metrics = metrics::StoreMetrics::register(&mut registry, options.max_job_names);
        AppState {
            engine,
            store_metrics: Arc::new(store_metrics),
            registry: Arc::new(registry),
            auth: Arc::new(auth::Auth::new(options.token.as_deref())),
            hosts: Arc::new(guard::HostGuard::new(&options.allowed_hosts)),
            limits: Arc::new(options.limits.clone()),
            viewers: Arc::default(),
            body_budget: limits::body::server_budget(),
            oplog: None,
        }
    }

    /// Lets `GET`/`PUT /api/v1/logging` read and replace the logs'
    /// configuration.
    pub fn with_oplog(mut self, oplog: joblog_oplog::Oplog) -> AppState {
        self.oplog = Some(oplog);
        self
    }
}

/// The whole HTTP surface, testable without a socket. Who may call each
/// route is in [`rules::RULES`].
pub fn app(state: AppState) -> Router {
    let api = Router::new()
        .route("/jobs", post(routes::submit).get(listing::list))
        .route("/jobs/{id}", get(routes::show))
        .route("/jobs/{id}/cancel", post(routes::cancel))
        .route("/jobs/{id}/rerun", post(routes::rerun))
        .route("/jobs/{id}/log", get(routes::log_page))
        .route("/jobs/{id}/log/text", get(routes::log_text))
        .route("/jobs/{id}/log/search", get(navigation::search))
        .route("/jobs/{id}/log/outline", get(navigation::outline))
        .route("/jobs/{id}/log/events", get(sse::log_events))
        .route("/jobs/{id}/result", get(result::result))
        .route("/schedules", get(schedules::list).post(schedules::create))
        .route(
            "/schedules/{id}",
            get(schedules::show)
                .patch(schedules::update)
                .delete(schedules::delete),
        )
        .route("/schedules/{id}/run", post(schedules::run_now))
        .route("/events", get(feed::job_events))
        .route("/groom", post(routes::groom))
        .route("/sealing", get(sealing::status).post(sealing::seal_all))
        .route("/nodes", get(nodes::list))
        .route("/audit", get(audit::list))
        .route("/backup", get(backup::backup))
        .route("/tokens", get(tokens::list).post(tokens::create))
        .route("/tokens/{name}", delete(tokens::revoke))
        .route("/logging", get(logging::show).put(logging::replace))
        .route("/whoami", get(ui::whoami))
        .route("/openapi.json", get(routes::openapi));
    Router::new()
        .nest("/api/v1", api)
        .route("/metrics", get(metrics::metrics))
        .route("/openapi.json", get(routes::openapi))
        .route("/healthz", get(healthz))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::authorize,
        ))
        // After the access rules: the UI's files hold no data (its page
        // asks the API, which checks the token), so they need none.
        .merge(ui::router())
        .fallback(|| async { ApiError::new(ErrorCode::NotFound, "no such endpoint") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                ErrorCode::MethodNotAllowed,
                "this endpoint does not take that method",
            )
        })
        .layer(middleware::from_fn_with_state(
            state.clone(),
            limits::enforce,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), guard::guard))
        // Bodies are limited per route by `limits::enforce`.
        .layer(DefaultBodyLimit::disable())
        // Outside the guards, so that their refusals are compressed and
        // carry the security headers too.
        .layer(compress::layer())
        .layer(middleware::map_response(headers::add))
        // Outermost: the request's unit holds every layer's doing and
        // counts the bytes as sent.
        .layer(middleware::from_fn(access::unit))
        .with_state(state)
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
