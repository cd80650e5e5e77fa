//! `GET /api/v1/audit` (admin): the audit trail, its query parameters
//! checked into an [`AuditQuery`], a page oldest first with where the next
//! one starts.

use axum::extract::State;
use axum::Json;
use joblog_core::{AuditEntry, AuditQuery, JobId, MAX_AUDIT_FIELD, MAX_AUDIT_LIMIT};
use serde::{Deserialize, Serialize};

use crate::error::{ApiError, ErrorCode};
use crate::extract::QueryParams;
use crate::AppState;

/// Entries a page holds unless `limit` says otherwise.
const DEFAULT_LIMIT: u32 = 100;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditParams {
    after: Option<u64>,
    before: Option<u64>,
    actor: Option<String>,
    action: Option<String>,
    job_id: Option<JobId>,
    limit: Option<u32>,
}

#[derive(Serialize)]
struct AuditPage {
    entries: Vec<AuditEntry>,
    /// Reading forward: the `after` of the next page, while this one is
    /// full.
    next_after: Option<u64>,
    /// Reading backward: the `before` of the page of older entries, while
    /// this one is full.
    next_before: Option<u64>,
}

fn invalid(message: String) -> ApiError {
    ApiError::new(ErrorCode::InvalidQuery, message)
}

/// An actor or action to match exactly: at most what the store keeps of
/// one, no control characters (none is stored, and PostgreSQL refuses a
/// NUL). Empty text is no filter.
fn text_filter(param: &str, value: Option<String>) -> Result<Option<String>, ApiError> {
    match value {
        Some(v) if v.chars().any(char::is_control) => Err(invalid(format!(
            "{param}: an audit entry's {param} has no control characters"
        ))),
        Some(v) if v.len() > MAX_AUDIT_FIELD => Err(invalid(format!(
            "{param}: at most {MAX_AUDIT_FIELD} bytes (longer ones are stored cut)"
        ))),
        v => Ok(v.filter(|v| !v.is_empty())),
    }
}

impl AuditParams {
    /// The page asked for: entries with `id > after` (default 0) and
    /// `id < before`; `before` must be above `after`; `actor` and `action`
    /// exact, `job_id` a positive id; `limit` 1 to [`MAX_AUDIT_LIMIT`]
    /// (default 100). A bad value → 400 naming the parameter.
    pub(crate) fn query(self) -> Result<AuditQuery, ApiError> {
        let after = self.after.unwrap_or(0);
        if let Some(before) = self.before {
            if before <= after {
                return Err(invalid(format!(
                    "before: {before} is not above after ({after})"
                )));
            }
        }
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 || limit > MAX_AUDIT_LIMIT {
            return Err(invalid(format!("limit: must be 1 to {MAX_AUDIT_LIMIT}")));
        }
        if let Some(id) = self.job_id.filter(|id| *id <= 0) {
            return Err(invalid(format!(
                "job_id: must be a positive integer, not {id}"
            )));
        }
        Ok(AuditQuery {
            after,
            before: self.before,
            actor: text_filter("actor", self.actor)?,
            action: text_filter("action", self.action)?,
            job_id: self.job_id,
            limit,
        })
    }
}

pub async fn list(
    State(state): State<AppState>,
    QueryParams(p): QueryParams<AuditParams>,
) -> Result<Json<impl Serialize>, ApiError> {
    let query = p.query()?;
    let (limit, backward) = (query.limit, query.before.is_some());
    let entries = state.engine.store().list_audit(query).await?;
    let full = entries.len() == limit as usize;
    let (next_after, next_before) = match (full, backward) {
        (false, _) => (None, None),
        (true, false) => (entries.last().map(|e| e.id), None),
        (true, true) => (None, entries.first().map(|e| e.id)),
    };
    Ok(Json(AuditPage {
        entries,
        next_after,
        next_before,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(after: Option<u64>, before: Option<u64>) -> AuditParams {
        AuditParams {
            after,
            before,
            actor: None,
            action: None,
            job_id: None,
            limit: None,
        }
    }

    #[test]
    fn bounds_limits_and_filters_are_checked_naming_the_parameter() {
        let q = params(None, None).query().unwrap();
        assert_eq!((q.after, q.before, q.limit), (0, None, DEFAULT_LIMIT));
        let e = params(Some(5), Some(5)).query().unwrap_err();
        assert!(e.message.starts_with("before:"), "{}", e.message);
        assert!(params(None, Some(0)).query().is_err());
        assert_eq!(params(Some(4), Some(6)).query().unwrap().before, Some(6));
        for limit in [0, MAX_AUDIT_LIMIT + 1] {
            let p = AuditParams {
                limit: Some(limit),
                ..params(None, None)
            };
            assert!(p.query().unwrap_err().message.starts_with("limit:"));
        }
        let p = AuditParams {
            job_id: Some(0),
            ..params(None, None)
        };
        assert!(p.query().unwrap_err().message.starts_with("job_id:"));
        let p = AuditParams {
            actor: Some("a\u{0}".into()),
            ..params(None, None)
        };
        assert!(p.query().unwrap_err().message.starts_with("actor:"));
        let p = AuditParams {
            action: Some("x".repeat(MAX_AUDIT_FIELD + 1)),
            ..params(None, None)
        };
        assert!(p.query().unwrap_err().message.starts_with("action:"));
        let p = AuditParams {
            actor: Some(String::new()),
            action: Some("job.submitted".into()),
            ..params(None, None)
        };
        let q = p.query().unwrap();
        assert_eq!(q.actor, None, "empty is no filter");
        assert_eq!(q.action.as_deref(), Some("job.submitted"));
    }
}
