//! Thin entry points for the fuzz targets in `fuzz/` to reach the
//! extractors and the routes' parameter types, which are private to this
//! crate. Not an API: hidden, and they change with the routes.

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts};
use axum::http::{header, Request};
use futures_util::FutureExt;
use joblog_core::{NewJobRequest, Timestamp, ValidJob};
use serde::de::DeserializeOwned;

use crate::error::{ApiError, ErrorCode};
use crate::extract::{JsonBody, QueryParams};
use crate::handlers::audit::AuditParams;
use crate::handlers::jobs::listing::ListParams;
use crate::handlers::log::navigation::SearchParams;
use crate::handlers::log::tail::EventsParams;
use crate::handlers::log::{parse_streams, LogParams, TextParams};

/// What each route with query parameters (the job listing, a log page,
/// the text log, the live tail, a log search, the audit trail) makes of the query string `q`: read by the
/// real extractor and checked as its handler checks it. `None` when `q`
/// cannot be part of a URL.
pub fn query(q: &str) -> Option<[Result<(), ApiError>; 6]> {
    let request = Request::get(format!("/x?{q}")).body(()).ok()?;
    let (parts, ()) = request.into_parts();
    Some([
        extract::<ListParams>(&parts).and_then(|p| p.query(Timestamp::now()).map(drop)),
        extract::<LogParams>(&parts).and_then(|p| p.request().map(drop)),
        extract::<TextParams>(&parts).and_then(|p| parse_streams(p.streams.as_deref()).map(drop)),
        extract::<EventsParams>(&parts).and_then(|p| parse_streams(p.streams.as_deref()).map(drop)),
        extract::<SearchParams>(&parts).and_then(|p| p.request().map(drop)),
        extract::<AuditParams>(&parts).and_then(|p| p.query().map(drop)),
    ])
}

fn extract<T: DeserializeOwned>(parts: &axum::http::request::Parts) -> Result<T, ApiError> {
    let mut parts = parts.clone();
    QueryParams::<T>::from_request_parts(&mut parts, &())
        .now_or_never()
        .expect("the query extractor never waits")
        .map(|QueryParams(p)| p)
}

/// A job submission as `POST /api/v1/jobs` reads and validates it: `body`
/// sent with `content_type` (none: no header), read within `limit` bytes
/// as the request limits read it.
pub fn submission(
    content_type: Option<&str>,
    body: &[u8],
    limit: usize,
) -> Result<ValidJob, ApiError> {
    let body = http_body_util::Limited::new(Body::from(body.to_vec()), limit);
    let mut request = Request::post("/api/v1/jobs");
    if let Some(ct) = content_type {
        request = request.header(header::CONTENT_TYPE, ct);
    }
    let request = request
        .body(Body::new(body))
        .map_err(|e| ApiError::new(ErrorCode::InvalidBody, e.to_string()))?;
    let JsonBody(req) = JsonBody::<NewJobRequest>::from_request(request, &())
        .now_or_never()
        .expect("a body in memory is read at once")?;
    req.validate()
        .map_err(|e| joblog_engine::EngineError::Invalid(e).into())
}
