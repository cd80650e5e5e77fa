//! Every route of the HTTP API, declared once: its method, path, handler,
//! who may call it, how large a body it takes and whether
//! `http.request_timeout` bounds it. The router ([`crate::app`]), the
//! access rules ([`crate::rules`]), the request limits
//! ([`crate::limits`]) and the contract tests are all read from
//! [`ROUTES`], so a route is added in one place.
//!
//! The web UI's pages and files are not here: they hold no data and are
//! served to anyone (`ui.rs`).

use axum::http::Method;
use axum::routing::{on, MethodFilter, MethodRouter};
use joblog_core::Role;

use crate::auth::rules::{Access, Reach};
use crate::handlers::{
    audit, backup, feed, groom, jobs, log, logging, nodes, notifications, oidc, scheduler,
    schedules, sealing, search, session, tokens, users,
};
use crate::AppState;

/// One route of the API.
#[derive(Debug)]
pub struct Route {
    pub method: Method,
    /// The router's pattern (`{id}`), as axum's `MatchedPath` gives it.
    pub path: &'static str,
    pub access: Access,
    pub body: BodyLimit,
    pub timeout: Timeout,
    handler: fn() -> MethodRouter<AppState>,
}

/// The largest request body a route reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyLimit {
    /// [`crate::limits::SMALL_BODY_BYTES`] (or `http.max_body_bytes` if
    /// lower): a few small fields.
    Small,
    /// `http.max_body_bytes`: a job submission, with its script and
    /// environment.
    Submission,
}

/// Whether `http.request_timeout` bounds the time to a route's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timeout {
    Request,
    /// Not bounded: a backup's snapshot is made before the answer begins
    /// and takes as long as the database is large (an admin's route, not
    /// one a careless client can hold open).
    Unbounded,
}

impl Route {
    /// The handler, routed for this route's method only.
    pub(crate) fn method_router(&self) -> MethodRouter<AppState> {
        (self.handler)()
    }

    /// Whether this route's pattern matches a request's path: `{…}`
    /// stands for one non-empty segment.
    pub fn matches(&self, path: &str) -> bool {
        let mut pattern = self.path.split('/');
        let mut given = path.split('/');
        loop {
            match (pattern.next(), given.next()) {
                (None, None) => return true,
                (Some(p), Some(g)) if p.starts_with('{') && p.ends_with('}') => {
                    if g.is_empty() {
                        return false;
                    }
                }
                (Some(p), Some(g)) if p == g => {}
                _ => return false,
            }
        }
    }
}

/// The route a request reaches, by method and path; `HEAD` finds `GET`'s,
/// as axum routes it.
pub fn find(method: &Method, path: &str) -> Option<&'static Route> {
    let method = as_routed(method);
    ROUTES
        .iter()
        .find(|r| r.method == method && r.matches(path))
}

/// The method a request is routed by: `HEAD` is `GET`'s, as axum routes it.
pub(crate) fn as_routed(method: &Method) -> &Method {
    if method == Method::HEAD {
        &Method::GET
    } else {
        method
    }
}

/// Picks an optional clause of [`routes!`], else its default.
macro_rules! or_default {
    ($default:expr) => {
        $default
    };
    ($default:expr, $given:expr) => {
        $given
    };
}

/// `METHOD "path" => handler, access [, body B] [, timeout T];`
macro_rules! routes {
    ($(
        $method:ident $path:literal => $handler:path, $access:expr
            $(, body $body:ident)? $(, timeout $timeout:ident)?;
    )+) => {
        /// Every route of the API, in the order docs/api.md lists them.
        pub static ROUTES: &[Route] = &[$(
            Route {
                method: Method::$method,
                path: $path,
                access: $access,
                body: or_default!(BodyLimit::Small $(, BodyLimit::$body)?),
                timeout: or_default!(Timeout::Request $(, Timeout::$timeout)?),
                handler: || on(MethodFilter::$method, $handler),
            },
        )+];
    };
}

use Access::Public;
use Reach::{All, Any, Filtered, Job, Schedule};

const fn viewer(reach: Reach) -> Access {
    Access::Role(Role::Viewer, reach)
}

const fn operator(reach: Reach) -> Access {
    Access::Role(Role::Operator, reach)
}

/// An admin reaches every folder: a caller limited to folders never is one.
const ADMIN: Access = Access::Role(Role::Admin, All);

routes! {
    GET "/healthz" => crate::handlers::healthz, Public;
    GET "/openapi.json" => crate::handlers::openapi, Public;
    GET "/api/v1/openapi.json" => crate::handlers::openapi, Public;
    GET "/api/v1/whoami" => crate::ui::whoami, viewer(Any);
    POST "/api/v1/session" => session::sign_in, Public;
    GET "/api/v1/session/options" => oidc::options, Public;
    GET "/api/v1/session/oidc" => oidc::start, Public;
    GET "/api/v1/session/oidc/callback" => oidc::callback, Public;
    DELETE "/api/v1/session" => session::sign_out, viewer(Any);
    GET "/api/v1/sessions" => session::list, viewer(Any);
    DELETE "/api/v1/sessions/{id}" => session::revoke, viewer(Any);
    GET "/api/v1/users" => users::list, ADMIN;
    POST "/api/v1/users" => users::create, ADMIN;
    GET "/api/v1/users/{name}" => users::show, ADMIN;
    PATCH "/api/v1/users/{name}" => users::update, ADMIN;
    DELETE "/api/v1/users/{name}" => users::delete, ADMIN;
    GET "/metrics" => crate::metrics::metrics, viewer(All);
    GET "/api/v1/jobs" => jobs::listing::list, viewer(Filtered);
    POST "/api/v1/jobs" => jobs::submit, operator(Filtered), body Submission;
    GET "/api/v1/jobs/{id}" => jobs::show, viewer(Job);
    POST "/api/v1/jobs/{id}/cancel" => jobs::cancel, operator(Job);
    POST "/api/v1/jobs/{id}/rerun" => jobs::rerun, operator(Job);
    GET "/api/v1/jobs/{id}/log" => log::log_page, viewer(Job);
    GET "/api/v1/jobs/{id}/log/text" => log::log_text, viewer(Job);
    GET "/api/v1/jobs/{id}/log/search" => log::navigation::search, viewer(Job);
    GET "/api/v1/jobs/{id}/log/outline" => log::navigation::outline, viewer(Job);
    GET "/api/v1/jobs/{id}/log/events" => log::tail::log_events, viewer(Job);
    GET "/api/v1/jobs/{id}/result" => jobs::result::result, viewer(Job);
    GET "/api/v1/events" => feed::job_events, viewer(Filtered);
    GET "/api/v1/schedules" => schedules::list, viewer(Filtered);
    POST "/api/v1/schedules" => schedules::create, operator(Filtered);
    GET "/api/v1/schedules/{id}" => schedules::show, viewer(Schedule);
    PATCH "/api/v1/schedules/{id}" => schedules::update, operator(Schedule);
    DELETE "/api/v1/schedules/{id}" => schedules::delete, operator(Schedule);
    POST "/api/v1/schedules/{id}/run" => schedules::run_now, operator(Schedule);
    GET "/api/v1/notifications" => notifications::list, ADMIN;
    POST "/api/v1/notifications" => notifications::create, ADMIN;
    GET "/api/v1/notifications/{id}" => notifications::show, ADMIN;
    PATCH "/api/v1/notifications/{id}" => notifications::update, ADMIN;
    DELETE "/api/v1/notifications/{id}" => notifications::delete, ADMIN;
    POST "/api/v1/notifications/{id}/test" => notifications::test, ADMIN;
    GET "/api/v1/notifications/{id}/deliveries" => notifications::deliveries, ADMIN;
    GET "/api/v1/jobs/{id}/notifications" => notifications::of_job, viewer(Job);
    GET "/api/v1/search" => search::search, viewer(Filtered);
    POST "/api/v1/groom" => groom::groom, ADMIN;
    GET "/api/v1/sealing" => sealing::status, viewer(All);
    POST "/api/v1/sealing" => sealing::seal_all, ADMIN;
    GET "/api/v1/nodes" => nodes::list, viewer(Any);
    POST "/api/v1/nodes/{name}/drain" => nodes::drain, ADMIN;
    POST "/api/v1/nodes/{name}/undrain" => nodes::undrain, ADMIN;
    GET "/api/v1/scheduler" => scheduler::state, viewer(Any);
    POST "/api/v1/scheduler/pause" => scheduler::pause, ADMIN;
    POST "/api/v1/scheduler/resume" => scheduler::resume, ADMIN;
    GET "/api/v1/backup" => backup::backup, ADMIN, timeout Unbounded;
    GET "/api/v1/audit" => audit::list, ADMIN;
    GET "/api/v1/tokens" => tokens::list, ADMIN;
    POST "/api/v1/tokens" => tokens::create, ADMIN;
    DELETE "/api/v1/tokens/{name}" => tokens::revoke, ADMIN;
    GET "/api/v1/logging" => logging::show, ADMIN;
    PUT "/api/v1/logging" => logging::replace, ADMIN;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_unique_and_head_finds_get() {
        for (i, r) in ROUTES.iter().enumerate() {
            assert!(
                !ROUTES[i + 1..]
                    .iter()
                    .any(|o| o.method == r.method && o.path == r.path),
                "{} {} is declared twice",
                r.method,
                r.path
            );
        }
        let head = find(&Method::HEAD, "/api/v1/jobs").expect("HEAD /api/v1/jobs");
        assert_eq!((&head.method, head.path), (&Method::GET, "/api/v1/jobs"));
        assert!(find(&Method::PUT, "/api/v1/jobs").is_none());
    }

    #[test]
    fn a_pattern_matches_one_non_empty_segment_per_parameter() {
        let show = find(&Method::GET, "/api/v1/jobs/7").expect("a job");
        assert_eq!(show.path, "/api/v1/jobs/{id}");
        assert!(show.matches("/api/v1/jobs/abc"));
        assert!(!show.matches("/api/v1/jobs/"));
        assert!(!show.matches("/api/v1/jobs/7/log"));
        assert!(!show.matches("/api/v1/jobs"));
        assert_eq!(
            find(&Method::GET, "/api/v1/jobs/7/log/text").map(|r| r.path),
            Some("/api/v1/jobs/{id}/log/text")
        );
    }

    #[test]
    fn only_a_submission_takes_a_large_body_and_only_a_backup_is_untimed() {
        for r in ROUTES {
            let submission = r.method == Method::POST && r.path == "/api/v1/jobs";
            assert_eq!(
                r.body == BodyLimit::Submission,
                submission,
                "{} {}",
                r.method,
                r.path
            );
            let backup = r.path == "/api/v1/backup";
            assert_eq!(
                r.timeout == Timeout::Unbounded,
                backup,
                "{} {}",
                r.method,
                r.path
            );
        }
    }
}
