//! The HTTP API (docs/api.md) and the web UI (docs/ui.md): jobs, logs,
//! results, schedules, tokens, the audit trail, nodes, sealing, the
//! logging configuration, health, metrics and the two live feeds (a log's
//! tail and the job-list feed), each route behind the access rule of its
//! role; every answer compressed as asked and with the security headers.
//!
//! Where things are:
//! - `routes`: every route declared once (method, path, handler, access,
//!   body limit, timeout); [`app`], the access rules, the request limits
//!   and the contract tests all read it. `handlers`: a module per resource
//!   (`jobs`, `log` with its live `tail`, `feed`, `schedules`, `tokens`,
//!   …), and `/healthz`.
//! - The layers of [`app`], outermost first: `access` (each request as an
//!   operation unit of the server's own logs), `headers` (the security
//!   headers), `compress`, `guard` (foreign `Host`s, cross-site requests),
//!   `limits` (URL, bodies, time, live viewers; `limits::body` reads a
//!   body within its budgets), then `auth` per route (a bearer token, or
//!   a session cookie with its CSRF token on a change, becomes an
//!   [`Identity`], `auth::rules` finds its route's rule in `routes`,
//!   `auth::lease` ends a stream when its token or session does;
//!   `handlers::session` signs people in and out, `handlers::users`
//!   manages them).
//! - `extract` turns bad requests into errors naming the field; `error`
//!   holds [`ErrorCode`], the one list of stable codes, and maps crate
//!   errors to them; `openapi.json` is the OpenAPI document;
//!   `contract_tests` holds both to the router and to docs/api.md.
//! - `metrics`: `/metrics` in the format the scraper asks for, with
//!   figures per job name and per schedule read from the store.
//! - `ui`: the web UI's files, embedded from `crates/api/ui/` (plain ES
//!   modules and one stylesheet, no build step), the one page served for
//!   every UI path, and `whoami`. In `ui/`: `app.js` routes, `api.js`
//!   calls the API (Server-Sent Events through `fetch`, so they carry the
//!   token); `jobs.js`, `job.js`, `schedules.js`, `schedule*.js`,
//!   `submit.js` and `audit.js` are the pages, `params-form.js` the form
//!   a saved job's parameters make; `viewer.js` (fixed-height
//!   rows) and `sources.js` (pages by seq range) the virtualized log,
//!   `ansi.js` its colours; `result.js` and `result-worker.js` a result
//!   as a tree parsed off the page's thread.
//!
//! Invariants:
//! - Every route has exactly one rule; a request whose route has none is
//!   refused to everybody. The UI's files hold no data and need no token.
//! - Handlers hold no lock across I/O and never write to the store
//!   themselves: reads go through `Store`, writes through the engine and
//!   its pipeline.
//! - A live stream (tail, feed) holds one broadcast subscription, taken
//!   before it reads, and no task: a client that goes away drops it.
//! - Every answer carries the security headers; event streams and backups
//!   are never compressed. Log pages are bounded in bytes as well as
//!   records (`joblog_store::MAX_PAGE_BYTES`).
//! - Internal errors are logged; clients get a stable code and a clean
//!   message (the binary's hand-written 503 uses [`ErrorCode`] too).
//! - Job data reaches the UI's DOM only as text nodes and classes (a test
//!   of `ui` refuses `innerHTML` and its kin); the token never goes in a
//!   URL.

mod access;
mod auth;
mod compress;
#[cfg(test)]
mod contract_tests;
mod error;
mod extract;
#[doc(hidden)]
pub mod fuzzing;
mod guard;
mod handlers;
pub mod headers;
pub mod limits;
mod metrics;
pub mod routes;
mod ui;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::Router;
use joblog_engine::Engine;
use prometheus_client::registry::Registry;

pub use auth::oidc::{Oidc, OidcOptions};
pub use auth::session::SessionOptions;
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
    /// Store reads the live tails share.
    tail_reads: Arc<handlers::log::tail::TailReads>,
    /// Request bodies buffered at once, in all (`limits::body`).
    body_budget: Arc<tokio::sync::Semaphore>,
    /// Search pages read at once (`handlers::search`).
    searches: Arc<tokio::sync::Semaphore>,
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
    /// How people's sessions last, and their cookie.
    pub sessions: SessionOptions,
    /// Single sign-on through an OpenID provider, when configured.
    pub oidc: Option<Arc<auth::oidc::Oidc>>,
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
            sessions: SessionOptions::default(),
            oidc: None,
        }
    }
}

impl AppState {
    pub fn new(engine: Engine, mut registry: Registry, options: &ApiOptions) -> AppState {
        let store_metrics = metrics::StoreMetrics::register(&mut registry, options.max_job_names);
        let viewers = limits::Viewers::register(&mut registry);
        AppState {
            engine,
            store_metrics: Arc::new(store_metrics),
            registry: Arc::new(registry),
            auth: Arc::new(auth::Auth::new(
                options.token.as_deref(),
                options.sessions.clone(),
                options.oidc.clone(),
            )),
            hosts: Arc::new(guard::HostGuard::new(&options.allowed_hosts)),
            limits: Arc::new(options.limits.clone()),
            viewers: Arc::new(viewers),
            tail_reads: Arc::default(),
            body_budget: limits::body::server_budget(),
            searches: Arc::new(tokio::sync::Semaphore::new(
                handlers::search::SEARCHES_AT_ONCE,
            )),
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
/// route and what it takes is declared once in [`routes::ROUTES`].
pub fn app(state: AppState) -> Router {
    let mut router = Router::new();
    for route in routes::ROUTES {
        router = router.route(route.path, route.method_router());
    }
    router
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
        .layer(middleware::map_request(compress::prefer_cheaper))
        .layer(middleware::map_response(headers::add))
        // Outermost: the request's unit holds every layer's doing and
        // counts the bytes as sent.
        .layer(middleware::from_fn(access::unit))
        .with_state(state)
}
