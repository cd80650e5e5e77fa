//! `/api/v1/session` and `/api/v1/sessions`: signing in with a name and a
//! password (a session cookie and its CSRF token), signing out, listing
//! one's sessions and ending one (any, for an admin).
//!
//! A failed sign-in says the same whether the name exists or not, and
//! takes as long (`auth::password`); failures are limited per name and
//! per address (`auth::throttle`) and written to the audit trail.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use axum::extract::{ConnectInfo, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use joblog_core::{validate_user_name, NewSession, Role, SessionInfo, Timestamp};
use joblog_store::AccountOp;
use serde::{Deserialize, Serialize};

use crate::auth::{session, Identity};
use crate::error::{ApiError, ErrorCode};
use crate::extract::{JsonBody, QueryParams};
use crate::AppState;

/// Longest `User-Agent` kept with a session.
const MAX_USER_AGENT: usize = 256;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignIn {
    name: String,
    password: String,
}

/// The answer to a sign-in, and what `whoami` adds for a session.
#[derive(Serialize)]
struct SignedIn {
    name: String,
    role: Role,
    /// Sent back in `X-CSRF-Token` with every change.
    csrf_token: String,
    expires_at: Timestamp,
}

fn failed() -> ApiError {
    ApiError::new(ErrorCode::SignInFailed, "wrong name or password")
}

pub async fn sign_in(
    State(state): State<AppState>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    JsonBody(req): JsonBody<SignIn>,
) -> Result<Response, ApiError> {
    let auth = &state.auth;
    let address: Option<IpAddr> = peer.map(|Extension(ConnectInfo(p))| p.ip());
    let attempt = match auth.sign_ins.attempt(&req.name, address, Instant::now()) {
        Ok(attempt) => attempt,
        Err(wait) => return Ok(throttled(&state, &req.name, address, wait)),
    };
    // A name no user can have is not looked up, and fails as a wrong
    // password does (after the same work).
    let user = match validate_user_name(&req.name) {
        Ok(()) => state.engine.store().user(req.name.clone()).await?,
        Err(_) => None,
    };
    let hash = user.as_ref().and_then(|u| u.password_hash.clone());
    let right = req.password.len() <= joblog_core::MAX_PASSWORD_BYTES
        && auth.passwords.verify(hash, req.password).await;
    let user = match user {
        Some(user) if right => user.info,
        found => {
            let reason = if found.is_some() {
                "wrong password"
            } else {
                "no such user"
            };
            tracing::info!(
                audit = "session.failed",
                user = req.name.as_str(),
                reason,
                "sign-in of {:?} failed: {reason}",
                req.name
            );
            return Err(failed());
        }
    };
    if user.disabled {
        tracing::info!(
            audit = "session.failed",
            user = user.name.as_str(),
            reason = "disabled",
            "sign-in of {:?} refused: disabled",
            user.name
        );
        return Err(ApiError::new(
            ErrorCode::UserDisabled,
            "this user is disabled; ask an admin",
        ));
    }
    auth.sign_ins.succeeded(attempt);
    let opened = open(&state, &user.name, address, &headers, "password").await?;
    let body = SignedIn {
        name: user.name,
        role: user.role,
        csrf_token: session::csrf_token(&opened.secret),
        expires_at: opened.expires_at,
    };
    let mut response = Json(body).into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, opened.cookie(&state));
    Ok(response)
}

/// A session just opened.
pub(crate) struct Opened {
    secret: String,
    expires_at: Timestamp,
}

impl Opened {
    /// The `Set-Cookie` value that gives the browser the session.
    pub(crate) fn cookie(&self, state: &AppState) -> HeaderValue {
        let sessions = &state.auth.sessions;
        session::set_cookie(&self.secret, sessions.lifetime, sessions.secure)
    }
}

/// Opens a session for `user`, who has just proven who they are `via`
/// a password or single sign-on, and audits it.
pub(crate) async fn open(
    state: &AppState,
    user: &str,
    address: Option<IpAddr>,
    headers: &HeaderMap,
    via: &str,
) -> Result<Opened, ApiError> {
    let secret = session::generate()
        .map_err(|e| ApiError::internal("reading the system's randomness", &e))?;
    let id =
        session::new_id().map_err(|e| ApiError::internal("reading the system's randomness", &e))?;
    let now = Timestamp::now();
    let lifetime = state.auth.sessions.lifetime;
    let expires_at = Timestamp(
        now.micros()
            .saturating_add(i64::try_from(lifetime.as_micros()).unwrap_or(i64::MAX)),
    );
    let user_agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|ua| cut(ua, MAX_USER_AGENT));
    let new = NewSession {
        id: id.clone(),
        hash: crate::auth::secret::hash(&secret),
        user: user.to_string(),
        created_at: now,
        expires_at,
        address: address.map(|a| a.to_string()),
        user_agent,
    };
    state
        .engine
        .pipeline()
        .account(AccountOp::OpenSession(new))
        .await?;
    tracing::info!(
        audit = "session.opened",
        actor = user,
        session = id.as_str(),
        via,
        "{user:?} signed in"
    );
    Ok(Opened { secret, expires_at })
}

/// The answer to a sign-in over its limits: `429` with `Retry-After`, and
/// an audit entry (a few per address, the rest counted into the next).
fn throttled(
    state: &AppState,
    name: &str,
    address: Option<IpAddr>,
    wait: std::time::Duration,
) -> Response {
    if let Some(before) = state.auth.throttled.admit(address, Instant::now()) {
        tracing::info!(
            audit = "session.failed",
            user = name,
            reason = "too many failed sign-ins",
            refused_before = before,
            "sign-in of {name:?} refused: too many failures"
        );
    }
    let secs = wait.as_secs().max(1);
    let mut response = ApiError::new(
        ErrorCode::TooManySignIns,
        format!(
            "too many failed sign-ins of this name or from this address; try again in {secs} s"
        ),
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    response
}

/// `s` cut to at most `max` bytes, at a character's boundary.
fn cut(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

pub async fn sign_out(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
) -> Result<Response, ApiError> {
    let Some((id, _)) = caller.session() else {
        return Err(ApiError::new(
            ErrorCode::NoSession,
            format!(
                "{} has no session to end; sign-out is for people signed in",
                caller.actor
            ),
        ));
    };
    let op = AccountOp::EndSession {
        id: id.to_string(),
        user: None,
    };
    state.engine.pipeline().account(op).await?;
    tracing::info!(
        audit = "session.closed",
        session = id,
        "{:?} signed out",
        caller.name()
    );
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        session::clear_cookie(state.auth.sessions.secure),
    );
    Ok(response)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionsQuery {
    /// Another user's sessions (admins only).
    user: Option<String>,
    /// Everyone's sessions (admins only).
    #[serde(default)]
    all: bool,
}

#[derive(Serialize)]
struct SessionView {
    #[serde(flatten)]
    info: SessionInfo,
    /// The session this request was made with.
    current: bool,
}

#[derive(Serialize)]
struct SessionList {
    sessions: Vec<SessionView>,
}

/// The caller's sessions; an admin may ask for a user's or everyone's.
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
    QueryParams(q): QueryParams<SessionsQuery>,
) -> Result<Response, ApiError> {
    let whose = if q.all || q.user.is_some() {
        if caller.role() < Role::Admin {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                format!(
                    "another user's sessions (user, all) need the admin role; {} has the {} role",
                    caller.actor,
                    caller.role()
                ),
            ));
        }
        if q.all {
            None
        } else {
            q.user
        }
    } else {
        match &caller.actor {
            crate::Actor::User(name) => Some(name.clone()),
            // A token has no sessions of its own.
            _ => {
                return Ok(Json(SessionList {
                    sessions: Vec::new(),
                })
                .into_response())
            }
        }
    };
    let current = caller.session().map(|(id, _)| id.to_string());
    let sessions = state
        .engine
        .store()
        .list_sessions(whose)
        .await?
        .into_iter()
        .map(|info| SessionView {
            current: current.as_deref() == Some(info.id.as_str()),
            info,
        })
        .collect();
    Ok(Json(SessionList { sessions }).into_response())
}

/// Ends a session: one's own, or any for an admin. Another's, to anyone
/// else, is not found (its existence is not told).
pub async fn revoke(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let only_of = if caller.role() >= Role::Admin {
        None
    } else {
        match &caller.actor {
            crate::Actor::User(name) => Some(name.clone()),
            _ => return Err(not_found(&id)),
        }
    };
    let plain = id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit());
    let op = AccountOp::EndSession {
        id: id.clone(),
        user: only_of,
    };
    if !plain || state.engine.pipeline().account(op).await? == 0 {
        return Err(not_found(&id));
    }
    tracing::info!(
        audit = "session.revoked",
        session = id.as_str(),
        "session {id} ended by {}",
        caller.name()
    );
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn not_found(id: &str) -> ApiError {
    ApiError::new(
        ErrorCode::SessionNotFound,
        format!("no session {id:?} of yours"),
    )
}
