//! Who may call what: each route's rule is declared with the route
//! ([`crate::routes::ROUTES`]); a request whose route has no rule is
//! refused to everybody (fail closed), never open.

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

/// The rule of a routed request; `None` for a route nobody wrote a rule
/// for. `HEAD` follows `GET`, as axum routes it.
pub fn access(method: &Method, path: &str) -> Option<Access> {
    let method = crate::routes::as_routed(method);
    crate::routes::ROUTES
        .iter()
        .find(|r| r.method == method && r.path == path)
        .map(|r| r.access)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_reads_like_get_and_an_unrouted_method_has_no_rule() {
        assert_eq!(
            access(&Method::HEAD, "/api/v1/jobs"),
            Some(Access::Role(Role::Viewer))
        );
        assert_eq!(access(&Method::PUT, "/api/v1/jobs"), None);
        assert_eq!(
            access(&Method::GET, "/api/v1/jobs/7"),
            None,
            "patterns, not paths"
        );
    }
}
