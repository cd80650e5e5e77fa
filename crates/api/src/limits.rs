//! Hard limits against careless and hostile clients, at the request level:
//! how long a request may take, how long its URL may be, how large a body
//! may be declared, and how many live viewers (log tails, job-list feeds)
//! may be open. (The connection-level limits — connections, header size,
//! header-read time — are the HTTP server's, in the binary.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use joblog_core::JobId;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::error::{ApiError, ErrorCode};
use crate::routes::{BodyLimit, Timeout};
use crate::AppState;

pub mod body;

/// The request-level limits, each a setting of the server.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Time from the request's head to the response's head. Streaming
    /// bodies (the live tail, the text log) go on after it.
    pub request_timeout: Duration,
    /// Longest path and query.
    pub max_uri_bytes: usize,
    /// Largest body of a job submission.
    pub max_body_bytes: usize,
    /// Live viewers (log tails and job-list feeds) open at once on this
    /// node.
    pub max_viewers: usize,
    /// Live-tail viewers of one job at once on this node.
    pub max_viewers_per_job: usize,
    /// Live viewers (tails and feeds) of one token on this node, or of one
    /// address for callers without a token.
    pub max_viewers_per_identity: usize,
}

/// Largest body of every other route (tokens, groom): they take a few
/// small fields.
pub const SMALL_BODY_BYTES: usize = 64 << 10;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            request_timeout: Duration::from_secs(60),
            max_uri_bytes: 8 << 10,
            max_body_bytes: 1 << 20,
            max_viewers: 1000,
            max_viewers_per_job: 100,
            max_viewers_per_identity: 200,
        }
    }
}

/// In front of every route: the URL length, a declared body size over the
/// route's limit (refused before a byte of it is read), and the request
/// timeout.
pub(crate) async fn enforce(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let limits = &state.limits;
    let uri_len = req.uri().path().len() + req.uri().query().map_or(0, |q| q.len() + 1);
    if uri_len > limits.max_uri_bytes {
        return ApiError::new(
            ErrorCode::UriTooLong,
            format!(
                "the URL is {uri_len} bytes; the limit is {} (http.max_uri_bytes)",
                limits.max_uri_bytes
            ),
        )
        .into_response();
    }
    // The route's own limits, from its declaration; an unrouted path (a
    // 404 to be) gets the small ones.
    let route = crate::routes::find(req.method(), req.uri().path());
    let body_limit = body_limit(limits, route.map_or(BodyLimit::Small, |r| r.body));
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > body_limit as u64) {
        return close(
            ApiError::new(
                ErrorCode::BodyTooLarge,
                format!("the request body may be at most {body_limit} bytes"),
            )
            .into_response(),
        );
    }
    // Also bounds a body sent without a length, or longer than declared;
    // and reads it at a minimum rate, within the connection's and the
    // server's budgets of buffered bytes, held until the answer (`body`).
    let held = body::Held::default();
    let budgets = body::Budgets {
        server: state.body_budget.clone(),
        connection: req
            .extensions()
            .get::<body::ConnectionBudget>()
            .map(|c| c.0.clone()),
    };
    let req = req.map(|b| {
        let limited = axum::body::Body::new(http_body_util::Limited::new(b, body_limit));
        axum::body::Body::new(body::Metered::new(limited, budgets, held.clone()))
    });
    let _held = held;
    if route.is_some_and(|r| r.timeout == Timeout::Unbounded) {
        return next.run(req).await;
    }
    let timeout = limits.request_timeout;
    match tokio::time::timeout(timeout, next.run(req)).await {
        Ok(response) => response,
        Err(_) => close(
            ApiError::new(
                ErrorCode::RequestTimeout,
                format!(
                    "the request took longer than {} (http.request_timeout)",
                    humantime_secs(timeout)
                ),
            )
            .into_response(),
        ),
    }
}

/// The byte limit of a route's body: a submission's is
/// `http.max_body_bytes`, every other route's smaller.
pub(crate) fn body_limit(limits: &Limits, body: BodyLimit) -> usize {
    match body {
        BodyLimit::Submission => limits.max_body_bytes,
        BodyLimit::Small => SMALL_BODY_BYTES.min(limits.max_body_bytes),
    }
}

fn humantime_secs(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// Ends the connection after this response: what the client was still
/// sending (a body too large, a request too slow) is not worth reading.
fn close(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Whose a live viewer is, for `http.max_viewers_per_identity`: a stored
/// token by its name, a signed-in user by theirs, the bootstrap token, or a caller without a token by
/// its address (loopback callers without a token are one).
pub(crate) fn viewer_key(
    identity: Option<&crate::auth::Identity>,
    peer: Option<std::net::SocketAddr>,
) -> String {
    use crate::auth::Actor;
    match identity.map(|i| &i.actor) {
        Some(Actor::Token(name)) => format!("token {name:?}"),
        // A person's tabs and browsers share their allowance.
        Some(Actor::User(name)) => format!("user {name:?}"),
        Some(Actor::Bootstrap) => "the configured token".into(),
        Some(Actor::Anonymous) | None => match peer {
            Some(peer) => format!("address {}", peer.ip()),
            None => "callers without a token".into(),
        },
    }
}

/// The live viewers open on this node: log tails, counted in total and
/// per job, and job-list feeds, counted in the total only (a feed follows
/// no one job, and one viewer's browser may keep one open per tab).
#[derive(Debug, Default)]
pub(crate) struct Viewers {
    open: Mutex<ViewerCounts>,
    /// `joblog_live_viewers`: open tails and feeds, for `/metrics`.
    tails: Gauge,
    feeds: Gauge,
}

#[derive(Debug, Default)]
struct ViewerCounts {
    total: usize,
    per_job: HashMap<JobId, usize>,
    per_identity: HashMap<String, usize>,
}

/// One viewer's place; given back when the stream is dropped.
#[derive(Debug)]
pub(crate) struct ViewerSlot {
    viewers: Arc<Viewers>,
    /// The job of a log tail; `None` for a job-list feed.
    job: Option<JobId>,
    /// Whose it is (`viewer_key`).
    who: String,
}

impl Viewers {
    /// Viewers counted in `registry` as `joblog_live_viewers{kind}`.
    pub fn register(registry: &mut Registry) -> Viewers {
        let family = Family::<Vec<(String, String)>, Gauge>::default();
        // The family hands out the gauges its labels name; kept here so
        // admitting a viewer does not look them up.
        let kind = |k: &str| {
            family
                .get_or_create(&vec![("kind".to_string(), k.to_string())])
                .clone()
        };
        let viewers = Viewers {
            open: Mutex::default(),
            tails: kind("tail"),
            feeds: kind("feed"),
        };
        registry.register(
            "joblog_live_viewers",
            "Live viewers open on this node: log tails (kind=tail) and job-list feeds (kind=feed)",
            family,
        );
        viewers
    }

    fn gauge(&self, job: Option<JobId>) -> &Gauge {
        if job.is_some() {
            &self.tails
        } else {
            &self.feeds
        }
    }

    /// A place for a live tail of `job`, or an error saying which bound
    /// is reached.
    pub fn admit(
        self: &Arc<Self>,
        job: JobId,
        limits: &Limits,
        who: &str,
    ) -> Result<ViewerSlot, ApiError> {
        self.admit_viewer(Some(job), limits, who)
    }

    /// A place for a job-list feed, taken from the same total as tails.
    pub fn admit_feed(
        self: &Arc<Self>,
        limits: &Limits,
        who: &str,
    ) -> Result<ViewerSlot, ApiError> {
        self.admit_viewer(None, limits, who)
    }

    fn admit_viewer(
        self: &Arc<Self>,
        job: Option<JobId>,
        limits: &Limits,
        who: &str,
    ) -> Result<ViewerSlot, ApiError> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let of_identity = open.per_identity.get(who).copied().unwrap_or(0);
        if of_identity >= limits.max_viewers_per_identity {
            return Err(ApiError::new(
                ErrorCode::TooManyViewers,
                format!(
                    "{of_identity} live viewers are open for {who} already, its limit (http.max_viewers_per_identity); close some"
                ),
            ));
        }
        if open.total >= limits.max_viewers {
            return Err(ApiError::new(
                ErrorCode::TooManyViewers,
                format!(
                    "{} live viewers (log tails and job-list feeds) are open on this server, its limit (http.max_viewers); try again later",
                    open.total
                ),
            ));
        }
        if let Some(job) = job {
            let of_job = open.per_job.get(&job).copied().unwrap_or(0);
            if of_job >= limits.max_viewers_per_job {
                return Err(ApiError::new(
                    ErrorCode::TooManyViewers,
                    format!(
                        "{of_job} viewers follow job {job} already, its limit (http.max_viewers_per_job); try again later"
                    ),
                ));
            }
            *open.per_job.entry(job).or_insert(0) += 1;
        }
        open.total += 1;
        *open.per_identity.entry(who.to_string()).or_insert(0) += 1;
        self.gauge(job).inc();
        Ok(ViewerSlot {
            viewers: self.clone(),
            job,
            who: who.to_string(),
        })
    }

    #[cfg(test)]
    fn total(&self) -> usize {
        self.open.lock().unwrap().total
    }
}

impl Drop for ViewerSlot {
    fn drop(&mut self) {
        let mut open = self.viewers.open.lock().unwrap_or_else(|p| p.into_inner());
        self.viewers.gauge(self.job).dec();
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.per_identity.get_mut(&self.who) {
            *n -= 1;
            if *n == 0 {
                open.per_identity.remove(&self.who);
            }
        }
        let Some(job) = self.job else { return };
        if let Some(n) = open.per_job.get_mut(&job) {
            *n -= 1;
            if *n == 0 {
                open.per_job.remove(&job);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewers_are_bounded_in_total_and_per_job_and_given_back() {
        let limits = Limits {
            max_viewers: 3,
            max_viewers_per_job: 2,
            ..Limits::default()
        };
        let v = Arc::new(Viewers::default());
        let a1 = v.admit(1, &limits, "t").unwrap();
        let _a2 = v.admit(1, &limits, "t").unwrap();
        let e = v.admit(1, &limits, "t").unwrap_err();
        assert!(e.message.contains("job 1"), "{}", e.message);
        let _b1 = v.admit(2, &limits, "t").unwrap();
        let e = v.admit(3, &limits, "t").unwrap_err();
        assert!(e.message.contains("http.max_viewers"), "{}", e.message);
        drop(a1);
        assert_eq!(v.total(), 2);
        let _a3 = v.admit(1, &limits, "t").unwrap();
    }

    /// `/metrics` counts open tails and feeds apart, and a refused
    /// viewer or a closed one is not counted.
    #[test]
    fn open_viewers_are_counted_for_metrics_by_kind() {
        let mut registry = Registry::default();
        let v = Arc::new(Viewers::register(&mut registry));
        let limits = Limits {
            max_viewers_per_job: 1,
            ..Limits::default()
        };
        let scrape = || {
            let mut text = String::new();
            prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
            let value = |kind: &str| {
                let series = format!("joblog_live_viewers{{kind=\"{kind}\"}} ");
                text.lines()
                    .find_map(|l| l.strip_prefix(series.as_str()))
                    .unwrap_or_else(|| panic!("no {series} in {text}"))
                    .to_string()
            };
            (value("tail"), value("feed"))
        };
        let t1 = v.admit(1, &limits, "a").unwrap();
        let _t2 = v.admit(2, &limits, "b").unwrap();
        let f = v.admit_feed(&limits, "a").unwrap();
        v.admit(1, &limits, "c").unwrap_err();
        assert_eq!(scrape(), ("2".into(), "1".into()));
        drop(t1);
        drop(f);
        assert_eq!(scrape(), ("1".into(), "0".into()));
    }

    #[test]
    fn one_identity_holds_at_most_its_share() {
        let limits = Limits {
            max_viewers: 10,
            max_viewers_per_identity: 2,
            ..Limits::default()
        };
        let v = Arc::new(Viewers::default());
        let a = v.admit(1, &limits, "token ci").unwrap();
        let _b = v.admit_feed(&limits, "token ci").unwrap();
        let e = v.admit(2, &limits, "token ci").unwrap_err();
        assert!(
            e.message.contains("http.max_viewers_per_identity"),
            "{}",
            e.message
        );
        let _c = v.admit(2, &limits, "token other").unwrap();
        drop(a);
        let _d = v.admit(2, &limits, "token ci").unwrap();
    }

    #[test]
    fn feeds_take_places_from_the_total_only() {
        let limits = Limits {
            max_viewers: 3,
            max_viewers_per_job: 1,
            ..Limits::default()
        };
        let v = Arc::new(Viewers::default());
        let f1 = v.admit_feed(&limits, "t").unwrap();
        let _f2 = v.admit_feed(&limits, "t").unwrap();
        assert!(v.open.lock().unwrap().per_job.is_empty());
        let _a = v.admit(1, &limits, "t").unwrap();
        let e = v.admit_feed(&limits, "t").unwrap_err();
        assert!(e.message.contains("http.max_viewers"), "{}", e.message);
        let e = v.admit(2, &limits, "t").unwrap_err();
        assert!(e.message.contains("http.max_viewers"), "{}", e.message);
        drop(f1);
        assert_eq!(v.total(), 2);
        // A tail's per-job count is its own: feeds did not touch it.
        let e = v.admit(1, &limits, "t").unwrap_err();
        assert!(e.message.contains("job 1"), "{}", e.message);
        let _b = v.admit(2, &limits, "t").unwrap();
    }

    #[test]
    fn only_job_submissions_take_large_bodies() {
        use axum::http::Method;
        let limits = Limits::default();
        let limit = |method: Method, path: &str| {
            let route = crate::routes::find(&method, path).expect(path);
            body_limit(&limits, route.body)
        };
        assert_eq!(limit(Method::POST, "/api/v1/jobs"), 1 << 20);
        assert_eq!(limit(Method::POST, "/api/v1/tokens"), SMALL_BODY_BYTES);
        assert_eq!(
            limit(Method::POST, "/api/v1/jobs/7/rerun"),
            SMALL_BODY_BYTES
        );
        let small = Limits {
            max_body_bytes: 1024,
            ..Limits::default()
        };
        assert_eq!(
            body_limit(&small, BodyLimit::Small),
            1024,
            "never above the setting"
        );
    }

    #[test]
    fn only_a_backup_is_not_bound_by_the_request_timeout() {
        use axum::http::Method;
        let timeout = |path: &str| crate::routes::find(&Method::GET, path).expect(path).timeout;
        assert_eq!(timeout("/api/v1/backup"), Timeout::Unbounded);
        assert_eq!(timeout("/api/v1/jobs"), Timeout::Request);
        assert_eq!(timeout("/api/v1/jobs/7/log/events"), Timeout::Request);
    }
}
