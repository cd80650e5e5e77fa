//! What the web UI's log viewer reads besides forward pages, for logs it
//! will never load whole: a page before a seq (`GET /log?before_seq=`),
//! the seqs of records holding a text (`GET /log/search`) and the log's
//! outline (`GET /log/outline`).

use axum::extract::State;
use axum::response::Response;
use axum::Json;
use joblog_core::{JobId, LogOutline, LogSearch, Record, Stream, MAX_OUTLINE_GROUPS};
use serde::{Deserialize, Serialize};

use crate::error::{ApiError, ErrorCode};
use crate::extract::{JobIdPath, QueryParams};
use crate::handlers::jobs::load_job;
use crate::handlers::json_response;
use crate::handlers::log::{check_limit, parse_streams};
use crate::AppState;

#[derive(Serialize)]
struct EarlierPage {
    records: Vec<Record>,
    /// `before_seq` of the page before this one; `null` when no earlier
    /// record (of those streams) remains.
    next_before_seq: Option<u64>,
}

/// The page of `GET /log?before_seq=`: the `limit` records nearest
/// `before` (fewer past about 1 MiB of text), in seq order.
pub(crate) async fn earlier_page(
    state: &AppState,
    id: JobId,
    before: u64,
    limit: u32,
    streams: Option<Vec<Stream>>,
) -> Result<Response, ApiError> {
    load_job(state, id).await?;
    let page = state
        .engine
        .store()
        .read_log_before(id, before, limit, streams)
        .await?;
    let next_before_seq = match page.records.first() {
        Some(first) if page.more => Some(first.seq),
        _ => None,
    };
    let bytes: usize = page.records.iter().map(|r| r.message.len() + 96).sum();
    Ok(json_response(
        &EarlierPage {
            records: page.records,
            next_before_seq,
        },
        bytes,
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    q: Option<String>,
    after_seq: Option<u64>,
    limit: Option<u32>,
    streams: Option<String>,
}

/// A search as asked for, checked.
#[derive(Debug, PartialEq)]
pub(crate) struct SearchRequest {
    pub search: LogSearch,
    pub after: u64,
    pub limit: u32,
    pub streams: Option<Vec<Stream>>,
}

impl SearchParams {
    /// `q` of 1 to 256 bytes, `limit` as a page's (default 1000, at most
    /// 10000), `streams` known. A bad value → 400 naming the parameter.
    pub(crate) fn request(self) -> Result<SearchRequest, ApiError> {
        let q = self.q.ok_or_else(|| {
            ApiError::new(ErrorCode::InvalidQuery, "q: required: the text to find")
        })?;
        let search = LogSearch::new(&q)
            .map_err(|e| ApiError::new(ErrorCode::InvalidQuery, e.to_string()))?;
        Ok(SearchRequest {
            search,
            after: self.after_seq.unwrap_or(0),
            limit: check_limit(self.limit)?,
            streams: parse_streams(self.streams.as_deref())?,
        })
    }
}

#[derive(Serialize)]
struct SearchPage {
    /// Matches in the whole log (of those streams).
    total: u64,
    /// Seqs of the first matches after `after_seq`, ascending.
    seqs: Vec<u64>,
    /// `after_seq` of the next page; `null` when no match follows.
    next_after_seq: Option<u64>,
}

/// `GET /api/v1/jobs/{id}/log/search`: the records whose message holds
/// `q`, ASCII letters in either case and every other character as itself.
pub async fn search(
    State(state): State<AppState>,
    JobIdPath(id): JobIdPath,
    QueryParams(p): QueryParams<SearchParams>,
) -> Result<Response, ApiError> {
    let SearchRequest {
        search,
        after,
        limit,
        streams,
    } = p.request()?;
    load_job(&state, id).await?;
    let hits = state
        .engine
        .store()
        .search_log(id, &search, after, limit, streams)
        .await?;
    let next_after_seq = match hits.seqs.last() {
        Some(&last) if hits.more => Some(last),
        _ => None,
    };
    let bytes = hits.seqs.len() * 8;
    Ok(json_response(
        &SearchPage {
            total: hits.total,
            seqs: hits.seqs,
            next_after_seq,
        },
        bytes,
    ))
}

/// `GET /api/v1/jobs/{id}/log/outline`: first error and warning, groups
/// and the last progress, as committed so far.
pub async fn outline(
    State(state): State<AppState>,
    JobIdPath(id): JobIdPath,
) -> Result<Json<LogOutline>, ApiError> {
    load_job(&state, id).await?;
    Ok(Json(
        state
            .engine
            .store()
            .log_outline(id, MAX_OUTLINE_GROUPS)
            .await?,
    ))
}
