//! Who may call what: one rule per routed method and path. The router's
//! routes and this table are held to each other by tests, and a route with
//! no rule is refused to everybody (fail closed), never open.

use axum::http::Method;
use joblog_core::Role;

/// What a route asks of a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, without a token (health checks, the API description).
    Public,
    /// A token of at least this role.
    Role(Role),
}

use Access::Public;
const VIEWER: Access = Access::Role(Role::Viewer);
const OPERATOR: Access = Access::Role(Role::Operator);
const ADMIN: Access = Access::Role(Role::Admin);

/// `(method, route path as routed, access)`. Paths are the router's
/// patterns (`{id}`), as axum's `MatchedPath` gives them.
pub const RULES: &[(&str, &str, Access)] = &[
    ("GET", "/healthz", Public),
    ("GET", "/openapi.json", Public),
    ("GET", "/api/v1/openapi.json", Public),
    ("GET", "/api/v1/whoami", VIEWER),
    ("GET", "/metrics", VIEWER),
    ("GET", "/api/v1/jobs", VIEWER),
    ("POST", "/api/v1/jobs", OPERATOR),
    ("GET", "/api/v1/jobs/{id}", VIEWER),
    ("POST", "/api/v1/jobs/{id}/cancel", OPERATOR),
    ("POST", "/api/v1/jobs/{id}/rerun", OPERATOR),
    ("GET", "/api/v1/jobs/{id}/log", VIEWER),
    ("GET", "/api/v1/jobs/{id}/log/text", VIEWER),
    ("GET", "/api/v1/jobs/{id}/log/search", VIEWER),
    ("GET", "/api/v1/jobs/{id}/log/outline", VIEWER),
    ("GET", "/api/v1/jobs/{id}/log/events", VIEWER),
    ("GET", "/api/v1/jobs/{id}/result", VIEWER),
    ("GET", "/api/v1/events", VIEWER),
    ("GET", "/api/v1/schedules", VIEWER),
    ("POST", "/api/v1/schedules", OPERATOR),
    ("GET", "/api/v1/schedules/{id}", VIEWER),
    ("PATCH", "/api/v1/schedules/{id}", OPERATOR),
    ("DELETE", "/api/v1/schedules/{id}", OPERATOR),
    ("POST", "/api/v1/schedules/{id}/run", OPERATOR),
    ("POST", "/api/v1/groom", ADMIN),
    ("GET", "/api/v1/sealing", VIEWER),
    ("POST", "/api/v1/sealing", ADMIN),
    ("GET", "/api/v1/nodes", VIEWER),
    ("GET", "/api/v1/backup", ADMIN),
    ("GET", "/api/v1/audit", ADMIN),
    ("GET", "/api/v1/tokens", ADMIN),
    ("POST", "/api/v1/tokens", ADMIN),
    ("DELETE", "/api/v1/tokens/{name}", ADMIN),
    ("GET", "/api/v1/logging", ADMIN),
    ("PUT", "/api/v1/logging", ADMIN),
];

/// The rule of a routed request; `None` for a route nobody wrote a rule
/// for. `HEAD` follows `GET`, as axum routes it.
pub fn access(method: &Method, path: &str) -> Option<Access> {
    let method = if method == Method::HEAD {
        "GET"
    } else {
        method.as_str()
    };
    RULES
        .iter()
        .find(|(m, p, _)| *m == method && *p == path)
        .map(|(_, _, a)| *a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_unique_and_head_reads_like_get() {
        for (i, (m, p, _)) in RULES.iter().enumerate() {
            assert!(
                !RULES[i + 1..].iter().any(|(m2, p2, _)| m2 == m && p2 == p),
                "{m} {p} has two rules"
            );
        }
        assert_eq!(access(&Method::HEAD, "/api/v1/jobs"), Some(VIEWER));
        assert_eq!(access(&Method::PUT, "/api/v1/jobs"), None);
    }
}
