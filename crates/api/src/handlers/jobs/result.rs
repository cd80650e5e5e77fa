//! `GET /api/v1/jobs/{id}/result`: a job's result, out of its stored blob.
//! A client that accepts zstd gets the stored body as it is (no
//! decompression, no recompression); any other gets the JSON decoded a
//! piece at a time, with its `Content-Length` (and the compression layer
//! may gzip it, as it does any answer).

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use joblog_core::result_blob::{self, BlobHeader, Codec, DecodeError, HEADER_LEN};
use joblog_core::JobId;
use tokio::sync::mpsc;

use crate::error::{ApiError, ErrorCode};
use crate::extract::JobIdPath;
use crate::handlers::jobs::load_job;
use crate::AppState;

/// Pieces of decoded JSON in flight between the decoder and the socket:
/// with its 64 KiB pieces, at most a quarter MiB a request.
const PIECES_IN_FLIGHT: usize = 4;

pub async fn result(
    State(state): State<AppState>,
    JobIdPath(id): JobIdPath,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Some(blob) = state.engine.store().read_result(id).await? else {
        load_job(&state, id).await?;
        return Err(ApiError::new(
            ErrorCode::ResultNotFound,
            format!("job {id} has no result"),
        ));
    };
    let blob = Bytes::from(blob);
    // The checksum is a pass over the whole body: off the async threads.
    let checked = blob.clone();
    let head = tokio::task::spawn_blocking(move || result_blob::verify(&checked).map(|(h, _)| h))
        .await
        .map_err(|e| ApiError::internal("the result's check failed", &e))?
        .map_err(|e| damaged(id, &e))?;
    let zstd_ok = accepts(&headers, "zstd");
    let response = match head.codec {
        Codec::Zstd if zstd_ok => stored_as_is(&blob, head),
        Codec::None => plain(blob.slice(HEADER_LEN..), head.raw_len),
        Codec::Zstd => decoded(id, blob, head),
    };
    Ok(response)
}

fn damaged(id: JobId, e: &dyn std::fmt::Display) -> ApiError {
    tracing::error!(job = id, error = %e, "a stored result failed its checks");
    ApiError::new(
        ErrorCode::ResultDamaged,
        format!("the stored result of job {id} is damaged and cannot be read"),
    )
}

fn json_headers(raw_len: u64) -> [(header::HeaderName, HeaderValue); 3] {
    [
        (
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ),
        (header::CONTENT_LENGTH, HeaderValue::from(raw_len)),
        // What is sent depends on Accept-Encoding: caches must key on it.
        (header::VARY, HeaderValue::from_static("accept-encoding")),
    ]
}

/// The stored zstd frame, sent as `Content-Encoding: zstd`. The
/// compression layer leaves an answer that already has an encoding alone.
fn stored_as_is(blob: &Bytes, head: BlobHeader) -> Response {
    let body = blob.slice(HEADER_LEN..);
    let headers = json_headers(body.len() as u64);
    let encoding = head.codec.content_encoding().unwrap_or("identity");
    (
        headers,
        [(header::CONTENT_ENCODING, HeaderValue::from_static(encoding))],
        body,
    )
        .into_response()
}

fn plain(json: Bytes, raw_len: u64) -> Response {
    (json_headers(raw_len), json).into_response()
}

/// Decodes on a blocking thread, a piece at a time, into the answer's
/// body. A body that does not decode to its promised length (the
/// checksum passed, so a bug or a lie in the header) ends the answer
/// short: the client sees fewer bytes than `Content-Length` promised, and
/// the server's error log says why.
fn decoded(id: JobId, blob: Bytes, head: BlobHeader) -> Response {
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(PIECES_IN_FLIGHT);
    tokio::task::spawn_blocking(move || {
        let mut out = ChannelWriter { tx: tx.clone() };
        match result_blob::decode_to(&blob, &mut out) {
            Ok(_) | Err(DecodeError::Write(_)) => {} // done, or the client left
            Err(DecodeError::Blob(e)) => {
                tracing::error!(job = id, error = %e, "a stored result failed to decode");
                let _ = tx.blocking_send(Err(std::io::Error::other(e.to_string())));
            }
        }
    });
    let pieces = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|piece| (piece, rx))
    });
    // Fused: the compression layer's encoder polls again after the end.
    let pieces = futures_util::StreamExt::fuse(pieces);
    (json_headers(head.raw_len), Body::from_stream(pieces)).into_response()
}

struct ChannelWriter {
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
}

impl std::io::Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tx
            .blocking_send(Ok(Bytes::copy_from_slice(buf)))
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether `Accept-Encoding` lists `coding` with a weight above zero
/// (`zstd`, `zstd;q=0.5`; not `zstd;q=0`). `*` does not count: a client
/// that has not named zstd may not decode it.
pub(crate) fn accepts(headers: &HeaderMap, coding: &str) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';');
            let name = parts.next().unwrap_or("").trim();
            if !name.eq_ignore_ascii_case(coding) {
                return false;
            }
            parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .all(|q| q.trim().parse::<f32>().is_ok_and(|q| q > 0.0))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(value).unwrap(),
        );
        h
    }

    #[test]
    fn accept_encoding_names_zstd_with_a_weight_above_zero() {
        assert!(accepts(&with("gzip, deflate, br, zstd"), "zstd"));
        assert!(accepts(&with("ZSTD;q=0.5"), "zstd"));
        assert!(!accepts(&with("zstd;q=0"), "zstd"));
        assert!(!accepts(&with("zstd;q=0.0, gzip"), "zstd"));
        assert!(!accepts(&with("gzip, *"), "zstd"));
        assert!(!accepts(&with("zstdx"), "zstd"));
        assert!(!accepts(&HeaderMap::new(), "zstd"));
    }
}
