//! Refuses requests a browser was tricked into sending: a `Host` that is
//! not this server's (DNS rebinding), state changes from another site
//! (cross-site request forgery), and reads of the API from another site
//! (`<img src=…/api/v1/backup>` would make the server build a backup). Clients that are not browsers (the CLI,
//! curl, scripts) send neither `Origin` nor `Sec-Fetch-Site` and pass.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, ErrorCode};
use crate::AppState;

/// The host names this server answers to besides IP addresses and
/// `localhost`.
#[derive(Debug, Clone, Default)]
pub(crate) struct HostGuard {
    /// Lower case; `*` allows any.
    names: Vec<String>,
}

impl HostGuard {
    pub fn new(names: &[String]) -> HostGuard {
        HostGuard {
            names: names
                .iter()
                .map(|n| n.trim().to_ascii_lowercase())
                .collect(),
        }
    }

    /// A request's host is allowed when it is an IP address (a rebinding
    /// page cannot make a browser send one: its Host is the attacker's
    /// name), `localhost`, or a configured name.
    fn allows(&self, host: &str) -> bool {
        let name = host_name(host).to_ascii_lowercase();
        name.parse::<std::net::IpAddr>().is_ok()
            || name == "localhost"
            || name.ends_with(".localhost")
            || self.names.iter().any(|n| n == "*" || *n == name)
    }
}

/// `example.com:7878` → `example.com`; `[::1]:7878` → `::1`.
fn host_name(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match authority.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => authority,
    }
}

/// The middleware in front of every route.
pub(crate) async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let host = req
        .uri()
        .authority()
        .map(|a| a.as_str().to_string())
        .or_else(|| header_text(req.headers(), header::HOST).map(str::to_string));
    if let Some(host) = &host {
        if !state.hosts.allows(host) {
            return ApiError::new(
                ErrorCode::HostNotAllowed,
                format!(
                    "this server does not answer to the host {:?}; add it to allowed_hosts",
                    host_name(host)
                ),
            )
            .into_response();
        }
    }
    if !req.method().is_safe() {
        if let Err(e) = same_origin(req.headers(), host.as_deref()) {
            return e.into_response();
        }
    } else if reveals_or_costs(req.uri().path()) {
        if let Err(e) = same_site_fetch(req.headers()) {
            return e.into_response();
        }
    }
    next.run(req).await
}

/// Reads that show the server's state or cost it work: every API route
/// but its public description, and `/metrics`. The pages of the UI and
/// `/healthz` hold nothing. Single sign-on's callback is reached from the
/// provider's site by design; it does nothing without the `state` of a
/// sign-in this browser began (its `joblog_sso` cookie, which another
/// site's request does not carry).
fn reveals_or_costs(path: &str) -> bool {
    (path.starts_with("/api/v1/") && path != "/api/v1/openapi.json" && path != OIDC_CALLBACK)
        || path == "/metrics"
}

const OIDC_CALLBACK: &str = crate::auth::oidc::CALLBACK_PATH;

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn refuse<T>(why: String) -> Result<T, ApiError> {
    Err(ApiError::new(
        ErrorCode::CrossSiteRequest,
        format!("refused a cross-site request: {why}"),
    ))
}

/// A browser's request from another site (or a sibling site) says so in
/// `Sec-Fetch-Site`; this server's own pages say `same-origin`, and a
/// user typing the address `none`. Other clients send nothing.
fn same_site_fetch(headers: &HeaderMap) -> Result<(), ApiError> {
    match header_text(headers, header::HeaderName::from_static("sec-fetch-site")) {
        Some(site) if !matches!(site, "same-origin" | "none") => {
            refuse(format!("Sec-Fetch-Site is {site:?}"))
        }
        _ => Ok(()),
    }
}

/// A state change must come from this server's own pages or from a client
/// that is not a browser.
fn same_origin(headers: &HeaderMap, host: Option<&str>) -> Result<(), ApiError> {
    same_site_fetch(headers)?;
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let origin_host = origin
            .split_once("://")
            .map(|(_, rest)| rest.trim_end_matches('/'));
        match (origin_host, host) {
            (Some(o), Some(h)) if o.eq_ignore_ascii_case(h) => {}
            _ => return refuse(format!("Origin {origin:?} is not this server")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_by_address_localhost_or_configured_name() {
        let g = HostGuard::new(&["Joblog.Example.org".to_string()]);
        for ok in [
            "127.0.0.1:7878",
            "[::1]:7878",
            "10.1.2.3",
            "localhost:7878",
            "app.localhost",
            "joblog.example.org:443",
        ] {
            assert!(g.allows(ok), "{ok}");
        }
        for bad in [
            "attacker.example",
            "attacker.example:7878",
            "localhost.evil.com",
        ] {
            assert!(!g.allows(bad), "{bad}");
        }
        assert!(HostGuard::new(&["*".into()]).allows("anything.example"));
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn reads_of_the_api_are_guarded_but_the_providers_way_back() {
        assert!(reveals_or_costs("/api/v1/jobs"));
        assert!(reveals_or_costs("/api/v1/session/oidc"));
        assert!(reveals_or_costs("/metrics"));
        assert!(!reveals_or_costs("/api/v1/session/oidc/callback"));
        assert!(!reveals_or_costs("/api/v1/openapi.json"));
        assert!(!reveals_or_costs("/jobs/7"));
    }

    #[test]
    fn cross_site_state_changes_are_refused() {
        let host = Some("127.0.0.1:7878");
        assert!(same_origin(&headers(&[]), host).is_ok());
        assert!(same_origin(&headers(&[("origin", "http://127.0.0.1:7878")]), host).is_ok());
        assert!(same_origin(&headers(&[("sec-fetch-site", "same-origin")]), host).is_ok());
        for bad in [
            headers(&[("origin", "http://attacker.example")]),
            headers(&[("origin", "null")]),
            headers(&[("origin", "http://127.0.0.1:9999")]),
            headers(&[("sec-fetch-site", "cross-site")]),
            headers(&[("sec-fetch-site", "same-site")]),
            headers(&[
                ("sec-fetch-site", "same-origin"),
                ("origin", "http://evil.example"),
            ]),
        ] {
            assert!(same_origin(&bad, host).is_err(), "{bad:?}");
        }
        // No Host to compare with: an Origin cannot be proven ours.
        assert!(same_origin(&headers(&[("origin", "http://x")]), None).is_err());
    }
}
