//! A job's log: a page of records (forwards, backwards, or waiting for
//! more) and the whole log as text or JSON lines; its search and outline
//! (`navigation`) and its live tail (`tail`) are its parts.

pub mod navigation;
mod shared;
pub mod tail;

use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use joblog_core::{JobId, Record, Stream};
use serde::{Deserialize, Serialize};

use super::json_response;
use crate::error::{ApiError, ErrorCode};
use crate::extract::{JobIdPath, QueryParams};
use crate::AppState;

use super::jobs::load_job;

pub const DEFAULT_LOG_LIMIT: u32 = 1000;
pub const MAX_LOG_LIMIT: u32 = 10_000;
pub const MAX_WAIT_MS: u64 = 30_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogParams {
    after_seq: Option<u64>,
    before_seq: Option<u64>,
    limit: Option<u32>,
    streams: Option<String>,
    wait_ms: Option<u64>,
}

/// A log page as asked for, checked.
#[derive(Debug, PartialEq)]
pub(crate) struct LogRequest {
    pub after: u64,
    /// A page read backwards: the records just before this seq (then
    /// `after` is 0 and `wait` zero).
    pub before: Option<u64>,
    pub limit: u32,
    /// `None`: every stream.
    pub streams: Option<Vec<Stream>>,
    /// How long a long poll may wait, at most [`MAX_WAIT_MS`].
    pub wait: Duration,
}

impl LogParams {
    /// The page asked for: `limit` 1 to [`MAX_LOG_LIMIT`] (default
    /// [`DEFAULT_LOG_LIMIT`]), `streams` known, `wait_ms` capped, and a
    /// page either after a seq or before one, only the first waiting. A
    /// bad value → 400 naming the parameter.
    pub(crate) fn request(self) -> Result<LogRequest, ApiError> {
        let limit = check_limit(self.limit)?;
        if self.before_seq.is_some() {
            if self.after_seq.is_some() {
                return Err(ApiError::new(
                    ErrorCode::InvalidQuery,
                    "before_seq: a page goes one way; give before_seq or after_seq, not both",
                ));
            }
            if self.wait_ms.is_some() {
                return Err(ApiError::new(
                    ErrorCode::InvalidQuery,
                    "wait_ms: only a page after a seq waits for records; not with before_seq",
                ));
            }
        }
        Ok(LogRequest {
            after: self.after_seq.unwrap_or(0),
            before: self.before_seq,
            limit,
            streams: parse_streams(self.streams.as_deref())?,
            wait: Duration::from_millis(self.wait_ms.unwrap_or(0).min(MAX_WAIT_MS)),
        })
    }
}

/// A page's `limit`: 1 to [`MAX_LOG_LIMIT`], default [`DEFAULT_LOG_LIMIT`].
pub(crate) fn check_limit(limit: Option<u32>) -> Result<u32, ApiError> {
    let limit = limit.unwrap_or(DEFAULT_LOG_LIMIT);
    if limit == 0 || limit > MAX_LOG_LIMIT {
        return Err(ApiError::new(
            ErrorCode::InvalidQuery,
            format!("limit: must be 1 to {MAX_LOG_LIMIT}"),
        ));
    }
    Ok(limit)
}

#[derive(Serialize)]
struct LogPage {
    records: Vec<Record>,
    /// Where the next page starts; `null` once the job has finished and
    /// nothing follows.
    next_after_seq: Option<u64>,
}

/// A `streams` filter; `None` (every stream) when none is named, so that
/// `streams=,` means what `streams=` does, not "no stream at all".
pub(crate) fn parse_streams(s: Option<&str>) -> Result<Option<Vec<Stream>>, ApiError> {
    let Some(s) = s else { return Ok(None) };
    match Stream::parse_list(s) {
        Ok(streams) => Ok(Some(streams).filter(|s| !s.is_empty())),
        Err(e) => Err(ApiError::new(
            ErrorCode::InvalidQuery,
            format!("streams: {e}"),
        )),
    }
}

/// A page of the log. With `wait_ms`, a request for records that do not
/// exist yet waits (long poll) until the writer commits some for this job
/// or the job ends. With `before_seq`, the page read backwards from there.
pub async fn log_page(
    State(state): State<AppState>,
    JobIdPath(id): JobIdPath,
    QueryParams(p): QueryParams<LogParams>,
) -> Result<Response, ApiError> {
    let LogRequest {
        after,
        before,
        limit,
        streams,
        wait,
    } = p.request()?;
    if let Some(before) = before {
        return navigation::earlier_page(&state, id, before, limit, streams).await;
    }
    let deadline = tokio::time::Instant::now() + wait;
    // Subscribe before reading so that a commit between the read and the
    // wait is not missed.
    let mut commits = (!wait.is_zero()).then(|| state.engine.pipeline().subscribe());
    loop {
        // The job's state is read before its records: if it had finished,
        // every record it wrote is already committed and in this read.
        let finished = load_job(&state, id).await?.state.is_finished();
        let records = state
            .engine
            .store()
            .read_log(id, after, limit, streams.clone())
            .await?;
        let waiting = records.is_empty() && !finished;
        if waiting {
            if let Some(rx) = commits.as_mut() {
                if wait_for_job(rx, id, after, deadline).await {
                    continue;
                }
            }
        }
        let next_after_seq = match records.last() {
            _ if joblog_store::page_is_full(&records, limit) => records.last().map(|r| r.seq),
            _ if finished => None,
            Some(r) => Some(r.seq),
            None => Some(after),
        };
        let bytes: usize = records.iter().map(|r| r.message.len() + 96).sum();
        return Ok(json_response(
            &LogPage {
                records,
                next_after_seq,
            },
            bytes,
        ));
    }
}

/// Waits until a commit brings records of `id` past `after` or ends it
/// (true), or the deadline passes (false).
async fn wait_for_job(
    rx: &mut tokio::sync::broadcast::Receiver<std::sync::Arc<joblog_pipeline::Committed>>,
    id: JobId,
    after: u64,
    deadline: tokio::time::Instant,
) -> bool {
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Err(_) => return false,
            Ok(Ok(c)) => {
                if c.touches_after(id, after) {
                    return true;
                }
            }
            // Missed some commits: re-read rather than guess.
            Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => return true,
            Ok(Err(tokio::sync::broadcast::error::RecvError::Closed)) => return false,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextParams {
    pub(crate) streams: Option<String>,
    pub(crate) timestamps: Option<bool>,
    pub(crate) escape: Option<bool>,
    pub(crate) format: Option<TextFormat>,
}

/// What `/log/text` writes: lines of text, or one record's JSON per line
/// (as `GET /log` gives it: seq, time, stream, message, fields), which
/// keeps what text loses — streams, times, levels and error marks.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum TextFormat {
    #[default]
    Text,
    Jsonl,
}

/// The whole log as plain text, streamed page by page so that memory does
/// not grow with the log. Raw, it is the job's bytes as stored (control
/// characters and escape sequences included), so it is sent as a file to
/// save, not to show: a `curl` of it into a terminal would run them. With
/// `escape=true` every control character but TAB is written visibly
/// (`\x1b`, `\0`), for reading.
pub async fn log_text(
    State(state): State<AppState>,
    JobIdPath(id): JobIdPath,
    QueryParams(p): QueryParams<TextParams>,
) -> Result<Response, ApiError> {
    load_job(&state, id).await?;
    let streams = parse_streams(p.streams.as_deref())?;
    let format = p.format.unwrap_or_default();
    if format == TextFormat::Jsonl && (p.timestamps.is_some() || p.escape.is_some()) {
        return Err(ApiError::new(
            ErrorCode::InvalidQuery,
            "timestamps and escape apply to format=text; format=jsonl has every record's time, \
             and JSON escapes control characters",
        ));
    }
    let timestamps = p.timestamps.unwrap_or(false);
    let escape = p.escape.unwrap_or(false);
    let store = state.engine.store().clone();
    let pages = futures_util::stream::unfold(Some(0u64), move |after| {
        let store = store.clone();
        let streams = streams.clone();
        async move {
            let after = after?;
            match store.read_log(id, after, MAX_LOG_LIMIT, streams).await {
                Ok(records) if records.is_empty() => None,
                Ok(records) => {
                    let next = records.last().map(|r| r.seq);
                    let mut text = String::new();
                    for r in &records {
                        if format == TextFormat::Jsonl {
                            // A record always serializes (strings and
                            // numbers); a failure would be a bug, not input.
                            text.push_str(&serde_json::to_string(r).unwrap_or_default());
                            text.push('\n');
                            continue;
                        }
                        if timestamps {
                            text.push_str(&r.ts.to_rfc3339());
                            text.push(' ');
                        }
                        if escape {
                            text.push_str(&joblog_core::escape_display(&r.message, false));
                        } else {
                            text.push_str(&r.message);
                        }
                        text.push('\n');
                    }
                    Some((Ok::<_, std::io::Error>(text), next))
                }
                Err(e) => {
                    tracing::error!(job = id, error = %e, "reading log for text download");
                    Some((Err(std::io::Error::other("log read failed")), None))
                }
            }
        }
    });
    let (disposition, content_type) = match (format, escape) {
        (TextFormat::Jsonl, _) => (
            format!("attachment; filename=\"job-{id}.jsonl\""),
            "application/x-ndjson",
        ),
        (TextFormat::Text, true) => ("inline".to_string(), "text/plain; charset=utf-8"),
        (TextFormat::Text, false) => (
            format!("attachment; filename=\"job-{id}.log\""),
            "text/plain; charset=utf-8",
        ),
    };
    Ok((
        [
            (header::CONTENT_TYPE, content_type.to_string()),
            (header::CONTENT_DISPOSITION, disposition),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
        ],
        // Fused: an encoder of the compression layer polls again after the
        // end, which a bare `unfold` answers with a panic.
        Body::from_stream(futures_util::StreamExt::fuse(pages)),
    )
        .into_response())
}
