//! `GET /api/v1/search`: every job's log searched for a text or a regular
//! expression, newest job first, a page at a time. A page answers within
//! its budget (`joblog_store::SearchBudget`): when the budget runs out
//! first it carries the hits so far and a `next_cursor` to go on from, so
//! a search of years of logs is a series of short requests that a client
//! may stop at any time. At most [`SEARCHES_AT_ONCE`] pages are read at
//! once; the others wait their turn, so searches never take every
//! connection a store reads with.

use axum::extract::State;
use axum::response::Response;
use axum::Extension;
use joblog_core::search::{
    SearchCursor, SearchPattern, SearchQuery, DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT,
};
use joblog_core::Timestamp;
use joblog_store::SearchBudget;
use serde::Deserialize;

use crate::auth::Identity;
use crate::error::{ApiError, ErrorCode};
use crate::extract::QueryParams;
use crate::handlers::jobs::listing::{within_reach, JobFilters};
use crate::handlers::json_response;
use crate::handlers::log::parse_streams;
use crate::AppState;

/// Search pages read at once, server-wide.
pub(crate) const SEARCHES_AT_ONCE: usize = 2;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    q: Option<String>,
    regex: Option<bool>,
    state: Option<String>,
    name: Option<String>,
    node: Option<String>,
    since: Option<String>,
    until: Option<String>,
    schedule_id: Option<i64>,
    folder: Option<String>,
    streams: Option<String>,
    limit: Option<u32>,
    cursor: Option<String>,
}

fn invalid(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::InvalidQuery, e.to_string())
}

/// A search as asked for, checked.
pub(crate) struct SearchRequest {
    pub query: SearchQuery,
    pub cursor: Option<SearchCursor>,
    pub limit: u32,
}

impl SearchParams {
    /// `q` of 1 to 256 bytes (a valid, not too large regular expression
    /// with `regex=true`), the jobs' filters as a listing's, `streams`
    /// known, `limit` 1 to [`MAX_SEARCH_LIMIT`] (default
    /// [`DEFAULT_SEARCH_LIMIT`]), `cursor` as a page gave it. A bad value
    /// → 400 naming the parameter.
    pub(crate) fn request(self, now: Timestamp) -> Result<SearchRequest, ApiError> {
        let q = self
            .q
            .ok_or_else(|| invalid("q: required: the text to find"))?;
        let pattern = SearchPattern::new(&q, self.regex.unwrap_or(false)).map_err(invalid)?;
        let limit = self.limit.unwrap_or(DEFAULT_SEARCH_LIMIT);
        if limit == 0 || limit > MAX_SEARCH_LIMIT {
            return Err(invalid(format!("limit: must be 1 to {MAX_SEARCH_LIMIT}")));
        }
        let cursor = match self.cursor.as_deref() {
            None | Some("") => None,
            Some(c) => Some(SearchCursor::parse(c).map_err(invalid)?),
        };
        let jobs = JobFilters {
            state: self.state,
            name: self.name,
            node: self.node,
            since: self.since,
            until: self.until,
            schedule_id: self.schedule_id,
            folder: self.folder,
        }
        .query(now)?;
        Ok(SearchRequest {
            query: SearchQuery {
                pattern,
                jobs,
                streams: parse_streams(self.streams.as_deref())?,
            },
            cursor,
            limit,
        })
    }
}

pub async fn search(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
    QueryParams(p): QueryParams<SearchParams>,
) -> Result<Response, ApiError> {
    let SearchRequest {
        mut query,
        cursor,
        limit,
    } = p.request(Timestamp::now())?;
    query.jobs.folders = within_reach(&caller.scope, query.jobs.folders.take());
    let _turn = state
        .searches
        .acquire()
        .await
        .map_err(|_| ApiError::new(ErrorCode::ShuttingDown, "the server is stopping"))?;
    let page = state
        .engine
        .store()
        .search(&query, cursor, limit, SearchBudget::default())
        .await?;
    let bytes: usize = page.hits.iter().map(|h| h.message.len() + 128).sum();
    Ok(json_response(&page, bytes))
}
