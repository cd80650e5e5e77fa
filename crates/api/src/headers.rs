//! The security headers every response carries — API, UI, errors, 404s
//! and the guards' refusals alike — set by a layer of `app()` outside the
//! routes and the guards, so that no route can be built without them.
//!
//! The pages of the web UI load their scripts, styles and images from this
//! server only and talk to nothing else; the policy forbids the rest
//! (inline scripts, other origins, being framed), so a job's output shown
//! in a page can never become code running there.

use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;

/// `(name, value)` of each header, as sent.
pub const SECURITY_HEADERS: &[(&str, &str)] = &[
    (
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
];

/// Sets the headers, replacing any a handler set: one policy for all.
pub(crate) async fn add(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headers_are_valid_and_the_policy_one_line() {
        for (name, value) in SECURITY_HEADERS {
            assert_eq!(
                *name,
                name.to_ascii_lowercase(),
                "from_static needs lowercase"
            );
            HeaderValue::from_str(value).unwrap();
        }
        let csp = SECURITY_HEADERS[0].1;
        assert!(!csp.contains("  ") && !csp.contains('\n'), "{csp}");
        assert!(csp.starts_with("default-src 'none'; script-src 'self';"));
    }
}
