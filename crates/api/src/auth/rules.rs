//! Who may call what: each route's rule is declared with the route
//! ([`crate::routes::ROUTES`]); a request whose route has no rule is
//! refused to everybody (fail closed), never open.
//!
//! A rule is a role and a [`Reach`]: what the route touches, which
//! decides how a token or user limited to folders is judged (`reach`).

use axum::http::Method;
use joblog_core::Role;

/// What a route asks of a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, without a token (health checks, the API description).
    Public,
    /// A token or person of at least this role where the route reaches.
    Role(Role, Reach),
}

/// What a route touches, for a caller limited to folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Nothing in a folder (who one is, one's sessions, the nodes, the
    /// scheduler's state): the caller's own role.
    Any,
    /// The job of the path's `{id}`: the role in its folder; a job out of
    /// reach is answered as if it did not exist (404).
    Job,
    /// The schedule of the path's `{id}`, likewise.
    Schedule,
    /// Objects of many folders, which the handler filters by the caller's
    /// folders (listings, the feed) or checks against the folder its body
    /// names (a submission, a new schedule): the best role in any folder
    /// lets the request in.
    Filtered,
    /// Every folder at once (metrics, backups, the audit trail, tokens,
    /// users, notification rules…): refused to a caller limited to
    /// folders.
    All,
}

impl Reach {
    /// How docs/api.md's table of routes says it.
    pub fn described(self) -> &'static str {
        match self {
            Reach::Any => "own role",
            Reach::Job => "the job's folder",
            Reach::Schedule => "the schedule's folder",
            Reach::Filtered => "filtered to yours",
            Reach::All => "every folder",
        }
    }
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
            Some(Access::Role(Role::Viewer, Reach::Filtered))
        );
        assert_eq!(access(&Method::PUT, "/api/v1/jobs"), None);
        assert_eq!(
            access(&Method::GET, "/api/v1/jobs/7"),
            None,
            "patterns, not paths"
        );
    }
}
