//! `GET /api/v1/jobs`: the listing's query parameters, checked into a
//! [`JobQuery`], and its handler.

use axum::extract::State;
use axum::{Extension, Json};
use joblog_core::{
    parse_time_bound, Job, JobId, JobQuery, JobState, NameFilter, Scope, Timestamp, MAX_LIST_LIMIT,
};
use serde::{Deserialize, Serialize};

use crate::auth::Identity;
use crate::error::{ApiError, ErrorCode};
use crate::extract::QueryParams;
use crate::handlers::jobs::LISTED_COMMAND_BYTES;
use crate::AppState;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    state: Option<String>,
    name: Option<String>,
    node: Option<String>,
    since: Option<String>,
    until: Option<String>,
    limit: Option<u32>,
    before_id: Option<JobId>,
    schedule_id: Option<i64>,
    folder: Option<String>,
}

#[derive(Serialize)]
struct JobList {
    jobs: Vec<Job>,
    next_before_id: Option<JobId>,
}

fn invalid(message: String) -> ApiError {
    ApiError::new(ErrorCode::InvalidQuery, message)
}

/// Text a job's name or node cannot contain: a control character (no job
/// has one, and PostgreSQL refuses a NUL). Empty text is no filter.
fn text_filter(param: &str, value: Option<String>) -> Result<Option<String>, ApiError> {
    match value {
        Some(v) if v.chars().any(char::is_control) => Err(invalid(format!(
            "{param}: a job's {param} has no control characters"
        ))),
        v => Ok(v.filter(|v| !v.is_empty())),
    }
}

fn time_bound(
    param: &str,
    value: Option<&str>,
    now: Timestamp,
) -> Result<Option<Timestamp>, ApiError> {
    match value {
        None | Some("") => Ok(None),
        Some(v) => parse_time_bound(v, now)
            .map(Some)
            .map_err(|e| invalid(format!("{param}: {e}"))),
    }
}

/// The filters a listing and a search share, as sent.
#[derive(Default)]
pub(crate) struct JobFilters {
    pub state: Option<String>,
    pub name: Option<String>,
    pub node: Option<String>,
    pub since: Option<String>,
    pub until: Option<String>,
    pub schedule_id: Option<i64>,
    pub folder: Option<String>,
}

impl JobFilters {
    /// The jobs asked for, `since` and `until` read against `now`:
    /// `state` a comma-separated list of states, `name` an exact name or a
    /// pattern with `*` and `?`, `node` a node's name, `since`/`until` a
    /// duration back from now or a time, with `since` before `until`. An
    /// empty value is no filter. A bad value → 400 naming the parameter.
    /// The page (`limit`, `before_id`) is the caller's.
    pub(crate) fn query(self, now: Timestamp) -> Result<JobQuery, ApiError> {
        let states = match self.state.as_deref() {
            None => Vec::new(),
            Some(s) => JobState::parse_list(s).map_err(|e| invalid(format!("state: {e}")))?,
        };
        let name = text_filter("name", self.name)?;
        let node = text_filter("node", self.node)?;
        let since = time_bound("since", self.since.as_deref(), now)?;
        let until = time_bound("until", self.until.as_deref(), now)?;
        if let (Some(s), Some(u)) = (since, until) {
            if s >= u {
                return Err(invalid(format!(
                    "since: {} is not before until ({})",
                    s.to_rfc3339(),
                    u.to_rfc3339()
                )));
            }
        }
        let folder = match self.folder.filter(|f| !f.is_empty()) {
            Some(f) => {
                joblog_core::validate_folder(&f)
                    .map_err(|e| invalid(format!("folder: {f:?} {e}")))?;
                Some(vec![f])
            }
            None => None,
        };
        Ok(JobQuery {
            folders: folder,
            states,
            name: name.as_deref().map(NameFilter::parse),
            node,
            created_since: since,
            created_until: until,
            limit: 0,
            before_id: None,
            schedule_id: self.schedule_id,
        })
    }
}

impl ListParams {
    /// The listing asked for ([`JobFilters::query`]), `limit` 1 to
    /// [`MAX_LIST_LIMIT`] (default 50).
    pub(crate) fn query(self, now: Timestamp) -> Result<JobQuery, ApiError> {
        let limit = self.limit.unwrap_or(50);
        if limit == 0 || limit > MAX_LIST_LIMIT {
            return Err(invalid(format!("limit: must be 1 to {MAX_LIST_LIMIT}")));
        }
        let filters = JobFilters {
            state: self.state,
            name: self.name,
            node: self.node,
            since: self.since,
            until: self.until,
            schedule_id: self.schedule_id,
            folder: self.folder,
        };
        Ok(JobQuery {
            limit,
            before_id: self.before_id,
            ..filters.query(now)?
        })
    }
}

pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
    QueryParams(p): QueryParams<ListParams>,
) -> Result<Json<impl Serialize>, ApiError> {
    let mut query = p.query(Timestamp::now())?;
    query.folders = within_reach(&caller.scope, query.folders);
    let limit = query.limit;
    let mut jobs = state.engine.store().list_jobs(query).await?;
    for job in &mut jobs {
        job.abbreviate(LISTED_COMMAND_BYTES);
    }
    crate::handlers::nodes::explain_waits(&state, &mut jobs).await;
    let next_before_id = if jobs.len() == limit as usize {
        jobs.last().map(|j| j.id)
    } else {
        None
    };
    Ok(Json(JobList {
        jobs,
        next_before_id,
    }))
}

/// The folders a listing of `scope`'s caller walks: those asked for
/// (`None`: all) that are within its reach. A caller limited to folders
/// never sees a job in none.
pub(crate) fn within_reach(scope: &Scope, asked: Option<Vec<String>>) -> Option<Vec<String>> {
    let Some(visible) = scope.visible() else {
        return asked;
    };
    Some(match asked {
        None => visible.into_iter().map(str::to_owned).collect(),
        Some(asked) => asked
            .into_iter()
            .filter(|f| visible.contains(&f.as_str()))
            .collect(),
    })
}
