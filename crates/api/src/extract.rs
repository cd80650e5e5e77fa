//! Request extractors whose rejections use the API's error format and name
//! the field at fault.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, ErrorCode};

/// A JSON body; malformed JSON, unknown or missing fields → 400 naming
/// them, too large → 413.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|rej| {
                if rej.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        ErrorCode::BodyTooLarge,
                        "request body is larger than the server accepts",
                    )
                } else {
                    ApiError::new(ErrorCode::InvalidBody, rej.body_text())
                }
            })?;
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("request body: {e}")))
    }
}

/// Query parameters; a bad value → 400 naming the parameter.
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let q = parts.uri.query().unwrap_or("");
        serde_urlencoded_from_str(q).map(QueryParams)
    }
}

fn serde_urlencoded_from_str<T: DeserializeOwned>(q: &str) -> Result<T, ApiError> {
    axum::extract::Query::<T>::try_from_uri(
        &format!("/?{q}")
            .parse()
            .map_err(|_| ApiError::new(ErrorCode::InvalidQuery, "query string is malformed"))?,
    )
    .map(|axum::extract::Query(t)| t)
    .map_err(|e| ApiError::new(ErrorCode::InvalidQuery, e.body_text()))
}

/// A job id from the path; anything but a positive integer → 400.
pub struct JobIdPath(pub i64);

impl<S: Send + Sync> FromRequestParts<S> for JobIdPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let axum::extract::Path(raw) =
            axum::extract::Path::<String>::from_request_parts(parts, state)
                .await
                .map_err(|e| ApiError::new(ErrorCode::InvalidPath, e.body_text()))?;
        match raw.parse::<i64>() {
            Ok(id) if id > 0 => Ok(JobIdPath(id)),
            _ => Err(ApiError::new(
                ErrorCode::InvalidJobId,
                format!("job id must be a positive integer, not {raw:?}"),
            )),
        }
    }
}
