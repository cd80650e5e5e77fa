//! `GET /api/v1/backup`: a consistent copy of the SQLite store while the
//! server runs, sent as a SQLite database file (admin only). The snapshot
//! is made before the answer begins, so a failure is a JSON error and a
//! 200 always carries a whole database of the length it announces.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use joblog_store::StoreError;
use tokio::io::AsyncReadExt;

use crate::error::{ApiError, ErrorCode};
use crate::AppState;

/// The media type of a backup, which `compress.rs` leaves uncompressed.
pub(crate) const CONTENT_TYPE: &str = "application/vnd.sqlite3";

/// Bytes read from the snapshot per chunk of the body.
const CHUNK: usize = 256 << 10;

pub async fn backup(State(state): State<AppState>) -> Result<Response, ApiError> {
    let snapshot = match state.engine.store().snapshot().await {
        Ok(s) => s,
        Err(StoreError::Unsupported(why)) => {
            return Err(ApiError::new(ErrorCode::BackupUnsupported, why))
        }
        Err(e) if e.is_full() => {
            tracing::error!(error = %e, "backup: cannot make the snapshot");
            return Err(ApiError::new(
                ErrorCode::StorageFull,
                "cannot make the snapshot: the data directory's disk is full; see the server's log",
            ));
        }
        Err(e) if e.is_transient() => {
            tracing::error!(error = %e, "backup: cannot make the snapshot");
            return Err(ApiError::new(
                ErrorCode::StoreUnavailable,
                "cannot make the snapshot now (the data directory is full, or the database is locked); see the server's log",
            ));
        }
        Err(e) => return Err(ApiError::internal("cannot make the snapshot", &e)),
    };
    let len = snapshot.len();
    tracing::info!(bytes = len, "backup: snapshot made, sending it");
    let file = tokio::fs::File::from_std(snapshot.into_file());
    let chunks = futures_util::stream::try_unfold(file, |mut file| async move {
        let mut buf = vec![0u8; CHUNK];
        let n = file.read(&mut buf).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.truncate(n);
        Ok::<_, std::io::Error>(Some((Bytes::from(buf), file)))
    });
    Ok((
        [
            (header::CONTENT_TYPE, CONTENT_TYPE.to_string()),
            (header::CONTENT_LENGTH, len.to_string()),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"joblog.db\"".to_string(),
            ),
        ],
        Body::from_stream(futures_util::StreamExt::fuse(chunks)),
    )
        .into_response())
}
