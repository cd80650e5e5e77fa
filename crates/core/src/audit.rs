//! The audit trail: who changed what, when and from where (jobs submitted
//! and cancelled, retention, tokens, configuration), as the store keeps it
//! and `GET /api/v1/audit` lists it.

use serde::Serialize;

use crate::{JobId, Timestamp};

/// The longest action name and actor the store keeps; longer ones are cut
/// (they come from the server's own code and token names, which are
/// shorter).
pub const MAX_AUDIT_FIELD: usize = 200;

/// Entries one page of `GET /api/v1/audit` holds at most.
pub const MAX_AUDIT_LIMIT: u32 = 1000;

/// One state change, before the store numbers it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewAudit {
    pub at: Timestamp,
    /// The token that acted (its name), `anonymous` on a server without
    /// tokens, or `system` for the server's own doing (retention, start).
    pub actor: String,
    /// What was done, dotted: `job.submitted`, `job.cancelled`,
    /// `job.groomed`, `log.seal_all`, `token.created`, `token.revoked`, `token.used`,
    /// `token.refused`, `config.changed`.
    pub action: String,
    pub job_id: Option<JobId>,
    /// Where the request came from (the peer's address), when it was one.
    pub remote: Option<String>,
    /// The API request's id (`x-request-id`), when it was one.
    pub request_id: Option<String>,
    /// The node that recorded it.
    pub node: String,
    /// Anything else worth keeping, as a JSON object (a job's name, a
    /// token's role, the count of jobs groomed).
    pub detail: serde_json::Map<String, serde_json::Value>,
}

/// One state change as stored: numbered in commit order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditEntry {
    /// Increasing in commit order; pages are read `after` one.
    pub id: u64,
    #[serde(flatten)]
    pub entry: NewAudit,
}

/// Which entries to list: those with `id > after` (and `id < before`),
/// matching every filter given, always oldest first. Without `before` the
/// page is the `limit` entries just after `after`; with it, the `limit`
/// entries nearest below `before`, so that the newest page is the one below
/// an id larger than any (what the web UI shows first).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AuditQuery {
    pub after: u64,
    pub before: Option<u64>,
    pub actor: Option<String>,
    pub action: Option<String>,
    pub job_id: Option<JobId>,
    /// 1 to [`MAX_AUDIT_LIMIT`].
    pub limit: u32,
}
