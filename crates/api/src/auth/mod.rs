//! Who is calling, and whether they may: the bearer token of a request,
//! or else its session cookie, becomes an [`Identity`] (a stored token,
//! the configuration's bootstrap token, a signed-in user, or nobody on a
//! server that needs no token), which the route's rule in [`rules`] then
//! admits or refuses. `password` hashes and checks passwords, `session`
//! reads and writes the cookie and its CSRF token, `throttle` limits
//! failed sign-ins.
//!
//! Invariants: tokens and sessions are looked up by their SHA-256 only, so
//! an unknown one and a wrong one take the same path; the bootstrap token
//! is compared in constant time; a state change authenticated by a cookie
//! carries its session's CSRF token; a route with no rule is refused to
//! everyone.

pub(crate) mod lease;
pub mod oidc;
pub(crate) mod password;
pub(crate) mod reach;
mod refusals;
pub mod rules;
pub mod secret;
pub(crate) mod session;
pub(crate) mod throttle;

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use joblog_core::{Role, Scope, Timestamp};

use crate::error::{ApiError, ErrorCode};
use crate::AppState;
use rules::Access;

/// A token's `last_used_at` is written at most this often, so that
/// authenticating is not a write per request.
const TOUCH_EVERY: Duration = Duration::from_secs(60);
/// Tokens and sessions whose last write is remembered before the old ones
/// are forgotten.
const MAX_TOUCHED: usize = 10_000;

/// Who made a request, for handlers and middleware (audit, the web UI):
/// available as an `axum::Extension<Identity>` on every route that needs a
/// role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub actor: Actor,
    /// Its role, everywhere or in each of its folders.
    pub scope: Scope,
    /// The stored token or session it was found by: a stream held open
    /// on it ends when it expires or is revoked (`lease`). `None` for the
    /// bootstrap token and anonymous callers.
    pub(crate) held: Option<Held>,
}

/// A stored credential as a request held it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Held {
    Token {
        hash: [u8; 32],
        expires_at: Option<Timestamp>,
    },
    Session {
        hash: [u8; 32],
        /// Its public id (sign-out ends it by this).
        id: String,
        /// What its state changes must carry (`session::CSRF_HEADER`).
        csrf: String,
        expires_at: Timestamp,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// A token created with `joblog token create`, by its name.
    Token(String),
    /// A person signed in (a session), by their user name.
    User(String),
    /// The `token` of the server's configuration.
    Bootstrap,
    /// Nobody: the server needs no token (loopback, none configured).
    Anonymous,
}

impl Identity {
    /// Its role where it is not limited to folders (see [`Scope::role`]).
    pub fn role(&self) -> Role {
        self.scope.role
    }

    /// The actor's name as logs and the audit record it: the token's name,
    /// `bootstrap` or `anonymous`.
    /// How the caller was known, as `whoami` says it: `token`,
    /// `session`, `bootstrap` or `anonymous`.
    pub fn via(&self) -> &'static str {
        match self.actor {
            Actor::Token(_) => "token",
            Actor::User(_) => "session",
            Actor::Bootstrap => "bootstrap",
            Actor::Anonymous => "anonymous",
        }
    }

    /// The session the caller signed in with, if they did: its id and
    /// CSRF token.
    pub(crate) fn session(&self) -> Option<(&str, &str)> {
        match &self.held {
            Some(Held::Session { id, csrf, .. }) => Some((id, csrf)),
            _ => None,
        }
    }

    pub fn name(&self) -> &str {
        match &self.actor {
            Actor::Token(name) | Actor::User(name) => name,
            Actor::Bootstrap => "bootstrap",
            Actor::Anonymous => "anonymous",
        }
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Actor::Token(name) => write!(f, "token {name:?}"),
            Actor::User(name) => write!(f, "user {name:?}"),
            Actor::Bootstrap => f.write_str("the configured token"),
            Actor::Anonymous => f.write_str("a caller without a token"),
        }
    }
}

/// How this server authenticates.
pub(crate) struct Auth {
    /// SHA-256 of the configuration's token: an admin, and the sign that
    /// every request needs a token.
    bootstrap: Option<[u8; 32]>,
    /// When each token's use was last written.
    touched: Mutex<HashMap<String, Instant>>,
    /// Which refused tokens reach the audit trail (a few per address).
    refusals: refusals::Refusals<Option<std::net::IpAddr>>,
    /// Which refused roles reach the audit trail (a few per actor).
    forbidden: refusals::Refusals<String>,
    /// Which throttled sign-ins reach the audit trail (a few per address).
    pub(crate) throttled: refusals::Refusals<Option<std::net::IpAddr>>,
    pub(crate) sessions: session::SessionOptions,
    pub(crate) passwords: password::Passwords,
    pub(crate) sign_ins: throttle::SignInLimits,
    /// Single sign-on's provider, when configured.
    pub(crate) oidc: Option<std::sync::Arc<oidc::Oidc>>,
}

impl Auth {
    pub fn new(
        bootstrap: Option<&str>,
        sessions: session::SessionOptions,
        oidc: Option<std::sync::Arc<oidc::Oidc>>,
    ) -> Auth {
        Auth {
            bootstrap: bootstrap.filter(|t| !t.is_empty()).map(secret::hash),
            touched: Mutex::new(HashMap::new()),
            refusals: refusals::Refusals::default(),
            forbidden: refusals::Refusals::default(),
            throttled: refusals::Refusals::default(),
            sessions,
            passwords: password::Passwords::default(),
            sign_ins: throttle::SignInLimits::default(),
            oidc,
        }
    }

    /// Without a configured token, a request without one is let in as an
    /// admin (the loopback default); one that carries a token is still
    /// held to that token's role.
    fn required(&self) -> bool {
        self.bootstrap.is_some()
    }

    /// Whether the use of `name` should be written now.
    fn should_touch(&self, name: &str, now: Instant) -> bool {
        let mut touched = self.touched.lock().unwrap_or_else(|p| p.into_inner());
        // Sessions come and go: what was written over a minute ago is
        // written again anyway, so it may be forgotten.
        if touched.len() >= MAX_TOUCHED {
            touched.retain(|_, at| now.duration_since(*at) < TOUCH_EVERY);
        }
        match touched.get(name) {
            Some(at) if now.duration_since(*at) < TOUCH_EVERY => false,
            _ => {
                touched.insert(name.to_string(), now);
                true
            }
        }
    }

    pub fn forget(&self, name: &str) {
        self.touched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
    }
}

/// The middleware on every route: finds the route's rule, authenticates
/// when the rule asks for a role, and refuses a role too low.
pub(crate) async fn authorize(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(path) = req.extensions().get::<MatchedPath>().cloned() else {
        // Not routed: the fallback answers 404.
        return next.run(req).await;
    };
    let span = tracing::Span::current();
    span.record("route", path.as_str());
    if let Some(job) = crate::access::job_id_in(path.as_str(), req.uri().path()) {
        span.record("job_id", job);
    }
    if let Some(schedule) = crate::access::schedule_id_in(path.as_str(), req.uri().path()) {
        span.record("schedule_id", schedule);
    }
    let (needed, reach) = match rules::access(req.method(), path.as_str()) {
        Some(Access::Public) => return next.run(req).await,
        Some(Access::Role(role, reach)) => (role, reach),
        None => {
            tracing::error!(method = %req.method(), path = path.as_str(), "route has no access rule; refused");
            return ApiError::new(
                ErrorCode::Forbidden,
                "this route has no access rule, so nobody may call it",
            )
            .into_response();
        }
    };
    let identity = match authenticate(&state, req.headers()).await {
        Ok(identity) => identity,
        Err(e) => {
            // A token that was sent and refused (wrong, revoked, expired)
            // is the audit's business; a request without one (a page
            // before its user signs in) is only an access line.
            // At most one entry per address per `refusals::WINDOW`, the
            // rest counted into the next: made-up tokens must not grow
            // the trail without bound.
            if e.code == ErrorCode::Unauthorized
                && req.headers().contains_key(header::AUTHORIZATION)
            {
                let peer = req
                    .extensions()
                    .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                    .map(|c| c.0.ip());
                if let Some(before) = state.auth.refusals.admit(peer, Instant::now()) {
                    tracing::info!(
                        audit = "token.refused",
                        reason = %e.message,
                        refused_before = before,
                        "API token refused"
                    );
                }
            }
            return e.into_response();
        }
    };
    span.record("actor", identity.name());
    if let Err(e) = csrf_checked(&identity, &req) {
        return e.into_response();
    }
    // A connection among the server's last few serves admins only (and
    // /healthz, public, above): whoever filled the others cannot lock the
    // operator out.
    if req.extensions().get::<crate::Reserved>().is_some() && identity.role() < Role::Admin {
        return ApiError::new(
            ErrorCode::TooManyConnections,
            "the server is at its connection limit (http.max_connections); its last connections serve /healthz and admins only; retry shortly",
        )
        .into_response();
    }
    let verdict = reach::judge(
        &state,
        &identity,
        needed,
        reach,
        path.as_str(),
        req.uri().path(),
    )
    .await;
    match verdict {
        Ok(reach::Verdict::Allowed) => {}
        Ok(reach::Verdict::Hidden(e)) => return e.into_response(),
        Ok(reach::Verdict::Refused(e)) => {
            // An attempt above one's role is the audit's business (once a
            // minute per actor, the rest counted into the next entry).
            if let Some(before) = state
                .auth
                .forbidden
                .admit(identity.name().to_string(), Instant::now())
            {
                tracing::info!(
                    audit = "access.refused",
                    actor = identity.name(),
                    attempted = format!("{} {}", req.method(), path.as_str()),
                    needed = %needed,
                    refused_before = before,
                    "{} refused: {}",
                    identity.name(),
                    e.message
                );
            }
            return e.into_response();
        }
        Err(e) => return e.into_response(),
    }
    req.extensions_mut().insert(identity);
    next.run(req).await
}

/// A state change by a session must carry its CSRF token: the cookie
/// goes with any request the browser sends, the token only with this
/// server's pages' (on top of `guard`'s `Origin` checks).
fn csrf_checked(identity: &Identity, req: &Request) -> Result<(), ApiError> {
    let Some((_, csrf)) = identity.session() else {
        return Ok(());
    };
    if req.method().is_safe() {
        return Ok(());
    }
    match session::csrf_matches(req.headers(), csrf) {
        Some(true) => Ok(()),
        Some(false) => Err(ApiError::new(
            ErrorCode::CsrfTokenInvalid,
            "the X-CSRF-Token header is not this session's; reload the page",
        )),
        None => Err(ApiError::new(
            ErrorCode::CsrfTokenMissing,
            "a change made with a session cookie needs the session's X-CSRF-Token header (from the sign-in answer or GET /api/v1/whoami)",
        )),
    }
}

/// The token of `Authorization: Bearer …`; `Ok(None)` without the header.
fn bearer(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let malformed = || {
        ApiError::new(
            ErrorCode::Unauthorized,
            "the Authorization header must be `Bearer <token>`",
        )
    };
    let value = value.to_str().map_err(|_| malformed())?;
    let (scheme, token) = value.split_once(' ').ok_or_else(malformed)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(malformed());
    }
    Ok(Some(token))
}

async fn authenticate(state: &AppState, headers: &HeaderMap) -> Result<Identity, ApiError> {
    let auth = &state.auth;
    let Some(token) = bearer(headers)? else {
        let ended = match session::cookie(headers) {
            Some(secret) => match signed_in(state, secret).await? {
                Some(identity) => return Ok(identity),
                None => true,
            },
            None => false,
        };
        if auth.required() {
            return Err(ApiError::new(
                ErrorCode::Unauthorized,
                if ended {
                    "your session ended (signed out, timed out or revoked); sign in again"
                } else {
                    "this server needs an API token (Authorization: Bearer <token>), or a person signed in"
                },
            ));
        }
        return Ok(Identity {
            actor: Actor::Anonymous,
            scope: Scope::unlimited(Role::Admin),
            held: None,
        });
    };
    let hash = secret::hash(token);
    if let Some(bootstrap) = &auth.bootstrap {
        if secret::same_hash(bootstrap, &hash) {
            return Ok(Identity {
                actor: Actor::Bootstrap,
                scope: Scope::unlimited(Role::Admin),
                held: None,
            });
        }
    }
    let now = Timestamp::now();
    match state.engine.store().token_by_hash(hash).await? {
        Some(t) if t.is_expired(now) => Err(ApiError::new(
            ErrorCode::Unauthorized,
            format!(
                "the API token {:?} expired at {}",
                t.name,
                t.expires_at.unwrap_or(now).to_rfc3339()
            ),
        )),
        Some(t) => {
            if auth.should_touch(&t.name, Instant::now()) {
                // As often as its last use is noted: once a minute at most.
                tracing::info!(audit = "token.used", actor = t.name.as_str(), role = %t.role, "API token used");
                let pipeline = state.engine.pipeline().clone();
                let name = t.name.clone();
                tokio::spawn(async move {
                    if let Err(e) = pipeline.touch_token(name, now).await {
                        tracing::warn!(error = %e, "noting a token's last use");
                    }
                });
            }
            Ok(Identity {
                scope: t.scope(),
                actor: Actor::Token(t.name),
                held: Some(Held::Token {
                    hash,
                    expires_at: t.expires_at,
                }),
            })
        }
        None => Err(ApiError::new(
            ErrorCode::Unauthorized,
            "unknown API token (wrong, or revoked)",
        )),
    }
}

/// The user signed in with the session whose cookie holds `secret`;
/// `None` when it ended (or never was). Its use is noted once a minute.
async fn signed_in(state: &AppState, secret: &str) -> Result<Option<Identity>, ApiError> {
    let hash = secret::hash(secret);
    let now = Timestamp::now();
    let Some(s) = state.engine.store().session_by_hash(hash).await? else {
        return Ok(None);
    };
    if !s.is_live(now, state.auth.sessions.idle_timeout) {
        return Ok(None);
    }
    if state
        .auth
        .should_touch(&format!("session {}", s.info.id), Instant::now())
    {
        let pipeline = state.engine.pipeline().clone();
        let id = s.info.id.clone();
        tokio::spawn(async move {
            let op = joblog_store::AccountOp::TouchSession { id, at: now };
            if let Err(e) = pipeline.account(op).await {
                tracing::warn!(error = %e, "noting a session's use");
            }
        });
    }
    Ok(Some(Identity {
        scope: Scope {
            role: s.role,
            folders: s.folders,
        },
        actor: Actor::User(s.info.user),
        held: Some(Held::Session {
            hash,
            id: s.info.id,
            csrf: session::csrf_token(secret),
            expires_at: s.info.expires_at,
        }),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_use_is_written_once_a_minute() {
        let auth = Auth::new(None, Default::default(), None);
        let t0 = Instant::now();
        assert!(auth.should_touch("ci", t0));
        assert!(!auth.should_touch("ci", t0 + Duration::from_secs(59)));
        assert!(auth.should_touch("other", t0));
        assert!(auth.should_touch("ci", t0 + TOUCH_EVERY));
        auth.forget("other");
        assert!(auth.should_touch("other", t0 + Duration::from_secs(1)));
    }

    #[test]
    fn bearer_tokens_are_read_strictly() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h).unwrap(), None);
        h.insert(header::AUTHORIZATION, "Bearer  jl_x ".parse().unwrap());
        assert_eq!(bearer(&h).unwrap(), Some("jl_x"));
        h.insert(header::AUTHORIZATION, "bearer jl_x".parse().unwrap());
        assert_eq!(bearer(&h).unwrap(), Some("jl_x"));
        for bad in ["Basic dXNlcjpwYXNz", "Bearer", "Bearer ", "jl_x"] {
            h.insert(header::AUTHORIZATION, bad.parse().unwrap());
            assert!(bearer(&h).is_err(), "{bad}");
        }
    }

    #[test]
    fn without_a_configured_token_none_is_required() {
        assert!(!Auth::new(None, Default::default(), None).required());
        assert!(!Auth::new(Some(""), Default::default(), None).required());
        assert!(Auth::new(Some("s3cret"), Default::default(), None).required());
    }
}
