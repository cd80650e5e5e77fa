//! Request extractors whose rejections use the API's error format and name
//! the field at fault.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

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
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "body_too_large",
                        "request body is larger than the server accepts",
                    )
                } else {
                    ApiError::bad_request("invalid_body", rej.body_text())
                }
            })?;
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|e| ApiError::bad_request("invalid_json", format!("request body: {e}")))
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
            .map_err(|_| ApiError::bad_request("invalid_query", "query string is malformed"))?,
    )
    .map(|axum::extract::Query(t)| t)
    .map_err(|e| ApiError::bad_request("invalid_query", e.body_text()))
}

/// A job id from the path; anything but a positive integer → 400.
pub struct JobIdPath(pub i64);

impl<S: Send + Sync> FromRequestParts<S> for JobIdPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let axum::extract::Path(raw) =
            axum::extract::Path::<String>::from_request_parts(parts, state)
                .await
                .map_err(|e| ApiError::bad_request("invalid_path", e.body_text()))?;
        match raw.parse::<i64>() {
            Ok(id) if id > 0 => Ok(JobIdPath(id)),
            _ => Err(ApiError::bad_request(
                "invalid_job_id",
                format!("job id must be a positive integer, not {raw:?}"),
            )),
        }
    }
}
