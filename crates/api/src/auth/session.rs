//! Sessions as the browser holds them: the `joblog_session` cookie
//! (`HttpOnly`, `SameSite=Strict`, path `/`, `Secure` over HTTPS), whose
//! value is a secret as long as a token's and is kept by the store only as
//! its SHA-256; and the session's CSRF token, derived from that secret, so
//! nothing more is stored and every node computes the same one.

use std::time::Duration;

use axum::http::{header, HeaderMap, HeaderValue};
use sha2::{Digest, Sha256};

use super::secret;

pub const COOKIE: &str = "joblog_session";
/// The header a state change authenticated by the cookie carries.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// Every session secret starts with this (as tokens start with `jl_`).
const PREFIX: &str = "js_";

/// How sessions last and how their cookie is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionOptions {
    /// Unused this long, a session ends.
    pub idle_timeout: Duration,
    /// However used, a session ends this long after sign-in.
    pub lifetime: Duration,
    /// The cookie is `Secure` (the server is reached over HTTPS).
    pub secure: bool,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            idle_timeout: Duration::from_secs(8 * 3600),
            lifetime: Duration::from_secs(7 * 24 * 3600),
            secure: false,
        }
    }
}

/// A new session's secret.
pub fn generate() -> Result<String, getrandom::Error> {
    secret::generate_with(PREFIX)
}

/// The session's public id: 16 hex characters drawn apart from its secret.
pub fn new_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The CSRF token of the session whose secret is `secret`: a page of this
/// server learns it (sign-in, `whoami`); another site cannot.
pub fn csrf_token(session_secret: &str) -> String {
    let digest = Sha256::new()
        .chain_update(b"joblog csrf\0")
        .chain_update(session_secret.as_bytes())
        .finalize();
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The session cookie's value, if the request carries one.
pub fn cookie(headers: &HeaderMap) -> Option<&str> {
    cookie_named(headers, COOKIE)
}

/// The cookie `wanted`'s value, if the request carries one.
pub fn cookie_named<'h>(headers: &'h HeaderMap, wanted: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == wanted)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty())
}

/// `Set-Cookie` for a session of `secret`, kept by the browser for
/// `max_age`.
pub fn set_cookie(secret: &str, max_age: Duration, secure: bool) -> HeaderValue {
    cookie_header(secret, max_age.as_secs(), secure)
}

/// `Set-Cookie` that makes the browser forget the session.
pub fn clear_cookie(secure: bool) -> HeaderValue {
    cookie_header("", 0, secure)
}

fn cookie_header(value: &str, max_age: u64, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    let text =
        format!("{COOKIE}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}");
    HeaderValue::from_str(&text).expect("a session secret is ASCII letters, digits and '_'")
}

/// The cookie that ties a single sign-on's callback to the browser that
/// began it (its value is the `state`): `SameSite=Lax`, as the provider's
/// redirect back is a navigation from another site, and sent only to the
/// callback's path.
pub const SSO_COOKIE: &str = "joblog_sso";
const SSO_PATH: &str = "/api/v1/session/oidc";

/// `Set-Cookie` of a single sign-on begun with `state`, for `max_age`.
pub fn set_sso_cookie(state: &str, max_age: Duration, secure: bool) -> Option<HeaderValue> {
    let secure = if secure { "; Secure" } else { "" };
    let max_age = max_age.as_secs();
    HeaderValue::from_str(&format!(
        "{SSO_COOKIE}={state}; Path={SSO_PATH}; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}"
    ))
    .ok()
}

/// `Set-Cookie` that forgets a single sign-on's cookie.
pub fn clear_sso_cookie(secure: bool) -> HeaderValue {
    set_sso_cookie("", Duration::ZERO, secure).expect("ASCII")
}

/// Whether the request's CSRF header is `expected`, in constant time.
pub fn csrf_matches(headers: &HeaderMap, expected: &str) -> Option<bool> {
    let given = headers.get(CSRF_HEADER)?.as_bytes();
    Some(secret::same_hash(
        &secret::hash_bytes(given),
        &secret::hash_bytes(expected.as_bytes()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_is_found_among_others_and_set_strictly() {
        let mut h = HeaderMap::new();
        assert_eq!(cookie(&h), None);
        h.insert(
            header::COOKIE,
            "a=1; joblog_session=js_abc ; b=2".parse().unwrap(),
        );
        assert_eq!(cookie(&h), Some("js_abc"));
        h.insert(header::COOKIE, "joblog_session=".parse().unwrap());
        assert_eq!(cookie(&h), None);
        let set = set_cookie("js_abc", Duration::from_secs(60), true);
        assert_eq!(
            set.to_str().unwrap(),
            "joblog_session=js_abc; Path=/; Max-Age=60; HttpOnly; SameSite=Strict; Secure"
        );
        assert!(!clear_cookie(false).to_str().unwrap().contains("Secure"));
        assert!(clear_cookie(false).to_str().unwrap().contains("Max-Age=0"));
    }

    #[test]
    fn a_csrf_token_belongs_to_its_session_and_is_checked() {
        let a = generate().unwrap();
        let b = generate().unwrap();
        assert!(a.starts_with("js_") && a != b);
        assert_ne!(csrf_token(&a), csrf_token(&b));
        assert_eq!(csrf_token(&a), csrf_token(&a));
        let mut h = HeaderMap::new();
        assert_eq!(csrf_matches(&h, &csrf_token(&a)), None);
        h.insert(CSRF_HEADER, csrf_token(&b).parse().unwrap());
        assert_eq!(csrf_matches(&h, &csrf_token(&a)), Some(false));
        h.insert(CSRF_HEADER, csrf_token(&a).parse().unwrap());
        assert_eq!(csrf_matches(&h, &csrf_token(&a)), Some(true));
        assert_eq!(new_id().unwrap().len(), 16);
    }
}
