//! Each API request as an operation unit of the server's own logs: a
//! `request` span around the whole of it (outside every other layer, so
//! refusals are in it too), carrying its id, method, path, peer, route,
//! actor, job, status, bytes sent and time to answer. The span closes,
//! and the unit goes to the access log, when the answer's body is done.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use tracing::field::Empty;
use tracing::{Instrument, Span};

/// `x-request-id`: a client's own id (for its logs) is kept when it is
/// plain; otherwise the server makes one. Sent back on every answer.
pub static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

pub async fn unit(req: Request, next: Next) -> Response {
    let id = request_id(req.headers().get(&REQUEST_ID));
    let span = tracing::info_span!(
        "request",
        unit = "request",
        request_id = %id,
        method = %req.method(),
        path = req.uri().path(),
        remote = Empty,
        route = Empty,
        actor = Empty,
        job_id = Empty,
        schedule_id = Empty,
        status = Empty,
        headers_us = Empty,
        bytes = Empty,
    );
    if let Some(ConnectInfo(peer)) = req.extensions().get::<ConnectInfo<std::net::SocketAddr>>() {
        span.record("remote", tracing::field::display(peer));
    }
    let started = Instant::now();
    let response = next.run(req).instrument(span.clone()).await;
    span.record("status", response.status().as_u16());
    span.record("headers_us", started.elapsed().as_micros() as u64);
    let (mut parts, body) = response.into_parts();
    if let Ok(value) = HeaderValue::from_str(&id) {
        parts.headers.insert(REQUEST_ID.clone(), value);
    }
    Response::from_parts(
        parts,
        Body::new(Counted {
            inner: body,
            bytes: 0,
            span: Some(span),
        }),
    )
}

/// The client's id when it is 1 to 64 of `[A-Za-z0-9._:-]`, else a new
/// one: unique in this process, not guessable across restarts.
fn request_id(given: Option<&HeaderValue>) -> String {
    if let Some(text) = given.and_then(|v| v.to_str().ok()) {
        let plain = (1..=64).contains(&text.len())
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b));
        if plain {
            return text.to_string();
        }
    }
    static NEXT: OnceLock<AtomicU64> = OnceLock::new();
    let next = NEXT.get_or_init(|| {
        let mut seed = [0u8; 8];
        let _ = getrandom::fill(&mut seed);
        AtomicU64::new(u64::from_le_bytes(seed) >> 16)
    });
    format!("{:016x}", next.fetch_add(1, Ordering::Relaxed))
}

/// The answer's body, counted as it is sent; the request's span ends
/// with it (at its end, or when the client goes away).
struct Counted {
    inner: Body,
    bytes: u64,
    span: Option<Span>,
}

impl Counted {
    fn finish(&mut self) {
        if let Some(span) = self.span.take() {
            span.record("bytes", self.bytes);
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.finish();
    }
}

impl HttpBody for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    self.bytes += data.len() as u64;
                }
            }
            Poll::Ready(None) => self.finish(),
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The job a route's path names (`/api/v1/jobs/{id}/…`), for the unit.
pub(crate) fn job_id_in(route: &str, path: &str) -> Option<u64> {
    id_in("/api/v1/jobs/{id}", route, path)
}

/// The schedule id in `path`, on a schedule's own routes.
pub(crate) fn schedule_id_in(route: &str, path: &str) -> Option<u64> {
    id_in("/api/v1/schedules/{id}", route, path)
}

/// The `{id}` of `path` when `route` is `prefix` or below it: a schedule's
/// id is never taken for a job's.
fn id_in(prefix: &str, route: &str, path: &str) -> Option<u64> {
    let rest = route.strip_prefix(prefix)?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    let at = prefix.split('/').position(|s| s == "{id}")?;
    path.split('/').nth(at)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_client_id_is_kept_and_anything_else_replaced() {
        let kept = HeaderValue::from_static("ci-run:42.7_a");
        assert_eq!(request_id(Some(&kept)), "ci-run:42.7_a");
        for bad in ["has space", "<script>", ""] {
            let id = request_id(Some(&HeaderValue::from_str(bad).unwrap()));
            assert_eq!(id.len(), 16, "{bad:?} → {id}");
        }
        let long = HeaderValue::from_str(&"a".repeat(65)).unwrap();
        assert_eq!(request_id(Some(&long)).len(), 16);
        assert_ne!(request_id(None), request_id(None));
    }

    #[test]
    fn the_job_id_is_read_where_the_route_has_it() {
        assert_eq!(
            job_id_in("/api/v1/jobs/{id}/log", "/api/v1/jobs/17/log"),
            Some(17)
        );
        assert_eq!(job_id_in("/api/v1/jobs/{id}", "/api/v1/jobs/x"), None);
        assert_eq!(job_id_in("/api/v1/jobs", "/api/v1/jobs"), None);
        // A schedule's id is its own, never a job's.
        let (route, path) = ("/api/v1/schedules/{id}/run", "/api/v1/schedules/5/run");
        assert_eq!(job_id_in(route, path), None);
        assert_eq!(schedule_id_in(route, path), Some(5));
        assert_eq!(
            schedule_id_in("/api/v1/schedules/{id}", "/api/v1/schedules/6"),
            Some(6)
        );
        assert_eq!(schedule_id_in("/api/v1/jobs/{id}", "/api/v1/jobs/6"), None);
    }
}
