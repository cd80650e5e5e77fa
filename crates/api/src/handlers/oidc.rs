//! Single sign-on's three routes: `GET /api/v1/session/options` (what the
//! sign-in page offers), `GET /api/v1/session/oidc` (sends the browser to
//! the provider) and `GET /api/v1/session/oidc/callback` (where the
//! provider sends it back: a session, or a page saying why not).
//!
//! The sign-in begun is kept in the store by its `state`'s hash and taken
//! by the first callback that brings it, on whichever node: a replayed
//! state finds nothing. The browser that began it holds the `state` in a
//! cookie too, so a callback link sent to someone else signs nobody in.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use joblog_core::{escape_html, SsoUser, Timestamp};
use joblog_store::AccountOp;
use serde::{Deserialize, Serialize};

use crate::auth::oidc::{Oidc, OidcError, Person, SIGN_IN_TTL};
use crate::auth::{secret, session};
use crate::error::{ApiError, ErrorCode};
use crate::extract::QueryParams;
use crate::handlers::session::open;
use crate::AppState;

#[derive(Serialize)]
struct SignInOptions {
    /// Names and passwords of local users: always.
    password: bool,
    oidc: Option<OidcOffer>,
}

#[derive(Serialize)]
struct OidcOffer {
    /// "Sign in with …".
    label: String,
    /// Where the sign-in page's button goes (add `?return=<path>`).
    start: &'static str,
}

pub async fn options(State(state): State<AppState>) -> Json<impl Serialize> {
    Json(SignInOptions {
        password: true,
        oidc: state.auth.oidc.as_ref().map(|o| OidcOffer {
            label: o.options().label.clone(),
            start: "/api/v1/session/oidc",
        }),
    })
}

fn provider(state: &AppState) -> Result<&Oidc, ApiError> {
    state.auth.oidc.as_deref().ok_or_else(|| {
        ApiError::new(
            ErrorCode::NotFound,
            "single sign-on is not configured on this server (auth.oidc.issuer)",
        )
    })
}

#[derive(Deserialize)]
pub struct Start {
    #[serde(rename = "return")]
    return_to: Option<String>,
}

pub async fn start(
    State(state): State<AppState>,
    QueryParams(q): QueryParams<Start>,
) -> Result<Response, ApiError> {
    let oidc = provider(&state)?;
    let begun = match oidc.begin(q.return_to.as_deref()).await {
        Ok(begun) => begun,
        Err(e) => return Ok(refused(&e)),
    };
    let kept = state
        .engine
        .pipeline()
        .account(AccountOp::BeginSignIn(begun.pending))
        .await?;
    if kept == 0 {
        tracing::warn!(
            "single sign-on refused: {} sign-ins begun in the last 10 minutes have not come back",
            joblog_store::MAX_PENDING_SIGN_INS
        );
        return Ok(Page::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "Too many sign-ins are under way",
            "Try again in a few minutes, or sign in with a name and password.".into(),
            "too many sign-ins begun".into(),
        )
        .into_response());
    }
    let secure = state.auth.sessions.secure;
    let location = HeaderValue::from_str(&begun.url)
        .map_err(|e| ApiError::internal("the provider's authorization URL", &e))?;
    let cookie = session::set_sso_cookie(&begun.state, SIGN_IN_TTL, secure)
        .ok_or_else(|| ApiError::internal("a sign-in's state", &"not a cookie value"))?;
    let mut response = StatusCode::SEE_OTHER.into_response();
    response.headers_mut().insert(header::LOCATION, location);
    response.headers_mut().insert(header::SET_COOKIE, cookie);
    Ok(response)
}

/// What the provider sends back: a code and the state, or an error.
/// Other parameters (`iss`, `session_state`) are let by.
#[derive(Deserialize)]
pub struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

pub async fn callback(
    State(state): State<AppState>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    QueryParams(q): QueryParams<Callback>,
) -> Result<Response, ApiError> {
    let oidc = provider(&state)?;
    let address: Option<IpAddr> = peer.map(|Extension(ConnectInfo(p))| p.ip());
    let secure = state.auth.sessions.secure;
    let mut response = match finish(&state, oidc, &headers, address, q).await? {
        Ok(response) => response,
        Err(page) => {
            tracing::info!(
                audit = "session.failed",
                user = page.user.as_deref(),
                via = "oidc",
                reason = page.reason.as_str(),
                "single sign-on failed: {}",
                page.reason
            );
            page.into_response()
        }
    };
    // Begun or not, this sign-in is over.
    response
        .headers_mut()
        .append(header::SET_COOKIE, session::clear_sso_cookie(secure));
    Ok(response)
}

/// The callback's work; `Err` is the page that tells the person why not.
async fn finish(
    state: &AppState,
    oidc: &Oidc,
    headers: &HeaderMap,
    address: Option<IpAddr>,
    q: Callback,
) -> Result<Result<Response, Page>, ApiError> {
    if let Some(error) = q.error {
        let said = match q.error_description {
            Some(d) => format!("{error}: {d}"),
            None => error,
        };
        return Ok(Err(Page::new(
            StatusCode::UNAUTHORIZED,
            "The provider did not sign you in",
            format!("It answered: {said}"),
            format!("the provider answered {said}"),
        )));
    }
    let (Some(code), Some(given)) = (q.code, q.state) else {
        return Ok(Err(Page::new(
            StatusCode::BAD_REQUEST,
            "This is not a sign-in",
            "The link lacks the code or state the provider adds.".into(),
            "no code or state".into(),
        )));
    };
    let hash = secret::hash(&given);
    let ours = session::cookie_named(headers, session::SSO_COOKIE)
        .is_some_and(|c| secret::same_hash(&secret::hash(c), &hash));
    if !ours {
        return Ok(Err(Page::new(
            StatusCode::BAD_REQUEST,
            "This sign-in was not begun in this browser",
            "Sign in again from joblog's sign-in page.".into(),
            "the state is not the browser's".into(),
        )));
    }
    let store = state.engine.store();
    let pending = store.pending_sign_in(hash).await?;
    let op = AccountOp::TakeSignIn {
        state_hash: hash,
        at: Timestamp::now(),
    };
    let pending = match pending {
        Some(p) if state.engine.pipeline().account(op).await? == 1 => p,
        _ => {
            return Ok(Err(Page::new(
                StatusCode::BAD_REQUEST,
                "This sign-in link was used already or has expired",
                "Each sign-in can be finished once, within 10 minutes. Sign in again.".into(),
                "the state was used already, expired or never begun".into(),
            )))
        }
    };
    let person = match oidc.finish(code, &pending).await {
        Ok(person) => person,
        Err(e) => return Ok(Err(failed(&e))),
    };
    let Some(role) = person.role else {
        return Ok(Err(unmapped(oidc, &person)));
    };
    match store.user(person.name.clone()).await? {
        // New: the audit trail names actors by name alone, so not a
        // token's either.
        None => {
            let tokens = store.list_tokens().await?;
            if tokens.iter().any(|t| t.name == person.name) {
                return Ok(Err(taken(&person)));
            }
        }
        Some(user) if user.sso_subject.as_deref() != Some(person.subject.as_str()) => {
            return Ok(Err(taken(&person)));
        }
        Some(user) if user.info.disabled => {
            return Ok(Err(Page::for_user(
                &person,
                StatusCode::FORBIDDEN,
                "Your joblog user is disabled",
                "An admin of joblog disabled it; ask them to enable it.".into(),
                "disabled".into(),
            )));
        }
        Some(_) => {}
    }
    let op = AccountOp::SsoUser(SsoUser {
        name: person.name.clone(),
        subject: person.subject.clone(),
        role,
        at: Timestamp::now(),
    });
    if state.engine.pipeline().account(op).await? == 0 {
        return Ok(Err(taken(&person)));
    }
    let opened = open(state, &person.name, address, headers, "oidc").await?;
    let location = HeaderValue::from_str(&pending.return_to)
        .map_err(|e| ApiError::internal("a sign-in's return path", &e))?;
    let mut response = StatusCode::SEE_OTHER.into_response();
    response.headers_mut().insert(header::LOCATION, location);
    response
        .headers_mut()
        .insert(header::SET_COOKIE, opened.cookie(state));
    Ok(Ok(response))
}

fn refused(e: &OidcError) -> Response {
    tracing::warn!("single sign-on could not begin: {e}");
    Page::new(
        StatusCode::BAD_GATEWAY,
        "The sign-in provider cannot be reached",
        "joblog could not read the provider's description; the server's error log says why. \
         Try again, or sign in with a name and password."
            .into(),
        e.to_string(),
    )
    .into_response()
}

fn failed(e: &OidcError) -> Page {
    let (status, heading) = match e {
        OidcError::Provider(_) => (
            StatusCode::BAD_GATEWAY,
            "The sign-in provider cannot be reached",
        ),
        OidcError::Token(_) => (
            StatusCode::UNAUTHORIZED,
            "The provider refused to finish the sign-in",
        ),
        OidcError::IdToken(_) => (
            StatusCode::UNAUTHORIZED,
            "The provider's answer could not be trusted",
        ),
        OidcError::Claims(_) => (
            StatusCode::FORBIDDEN,
            "The provider did not say who you are",
        ),
    };
    Page::new(
        status,
        heading,
        format!("{e}. Nobody was signed in; ask the admin of joblog if this persists."),
        e.to_string(),
    )
}

fn unmapped(oidc: &Oidc, person: &Person) -> Page {
    let claim = &oidc.options().role_claim;
    let had = if person.claim_values.is_empty() {
        format!("Your claim {claim:?} is empty or missing.")
    } else {
        format!(
            "Your claim {claim:?} holds {}; none of them is given a role.",
            person.claim_values.join(", ")
        )
    };
    Page::for_user(
        person,
        StatusCode::FORBIDDEN,
        "You have no role in joblog",
        format!(
            "The provider signed you in as {:?}, but joblog gives you no role. {had} \
             Ask an admin to add you to a group joblog maps to a role (auth.oidc.roles).",
            person.name
        ),
        format!("no role: {claim} = {:?}", person.claim_values),
    )
}

fn taken(person: &Person) -> Page {
    Page::for_user(
        person,
        StatusCode::FORBIDDEN,
        "That name belongs to another joblog user",
        format!(
            "The provider names you {:?}, and a joblog user (or API token) of that name signs in \
             another way. Ask an admin of joblog to rename or remove it.",
            person.name
        ),
        "the name is another user's".into(),
    )
}

/// A plain page for a person whose single sign-on failed: what happened,
/// in words, and the way back. Everything in it is escaped.
struct Page {
    status: StatusCode,
    heading: &'static str,
    text: String,
    /// For the audit trail.
    reason: String,
    user: Option<String>,
}

impl Page {
    fn new(status: StatusCode, heading: &'static str, text: String, reason: String) -> Page {
        Page {
            status,
            heading,
            text,
            reason,
            user: None,
        }
    }

    fn for_user(
        person: &Person,
        status: StatusCode,
        heading: &'static str,
        text: String,
        reason: String,
    ) -> Page {
        Page {
            user: Some(person.name.clone()),
            ..Page::new(status, heading, text, reason)
        }
    }
}

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        let body = format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>Sign-in failed · joblog</title><link rel=\"icon\" href=\"data:,\">\
             <link rel=\"stylesheet\" href=\"/ui/style.css\"></head>\
             <body><main class=\"sign-in-failed\"><h1>{}</h1><p>{}</p>\
             <p><a href=\"/\">Back to sign in</a></p></main></body></html>\n",
            escape_html(self.heading),
            escape_html(&self.text)
        );
        (
            self.status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            body,
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the provider said reaches the page as text, never markup.
    #[tokio::test]
    async fn a_page_escapes_what_the_provider_said() {
        let page = Page::new(
            StatusCode::UNAUTHORIZED,
            "The provider did not sign you in",
            "It answered: <script>alert('x')</script> & \"q\"".into(),
            "test".into(),
        );
        let response = page.into_response();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let body = String::from_utf8(body.to_vec()).unwrap();
        assert!(!body.contains("<script>"), "{body}");
        assert!(
            body.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"),
            "{body}"
        );
    }
}
