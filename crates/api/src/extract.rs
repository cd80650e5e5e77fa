//! Request extractors whose rejections use the API's error format and name
//! the field at fault.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, ErrorCode};

/// A field that may be given as `null` (`Some(None)`), given
/// (`Some(Some(_))`) or left out (`None`, with `#[serde(default)]`).
pub(crate) fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(d).map(Some)
}

/// A JSON body; malformed JSON, unknown or missing fields → 400 naming
/// them, too large → 413.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        // A body of another type is how a web page posts across sites
        // without asking first (a "simple" request); JSON never is.
        check_json_type(&req)?;
        let bytes = read_body(req, state).await?;
        decode_json(&bytes).map(JsonBody)
    }
}

fn check_json_type(req: &Request) -> Result<(), ApiError> {
    let content_type = req
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if is_json(content_type) {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::UnsupportedMediaType,
        format!(
            "the request body must be JSON sent with Content-Type: application/json, not {:?}",
            content_type
        ),
    ))
}

/// The whole body, within the limits on its size and its rate.
async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<axum::body::Bytes, ApiError> {
    axum::body::Bytes::from_request(req, state)
        .await
        .map_err(|rej| {
            match crate::limits::body::BodyError::find(std::error::Error::source(&rej)) {
                Some(crate::limits::body::BodyError::TooSlow) => {
                    return ApiError::new(
                        ErrorCode::RequestTimeout,
                        format!(
                            "the request body came slower than {} bytes a second",
                            crate::limits::body::MIN_RATE
                        ),
                    )
                }
                Some(crate::limits::body::BodyError::Busy) => {
                    return ApiError::new(
                        ErrorCode::ServerBusy,
                        "the server is receiving too many request bodies at once (on this connection or in all); retry shortly",
                    )
                }
                None => {}
            }
            if rej.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    ErrorCode::BodyTooLarge,
                    "request body is larger than the server accepts",
                )
            } else {
                ApiError::new(ErrorCode::InvalidBody, rej.body_text())
            }
        })
}

fn decode_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    // serde reads a struct from an array too (its fields in order):
    // `[["true"]]` would submit a job. Every body is an object.
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{') {
        return Err(ApiError::new(
            ErrorCode::InvalidJson,
            "request body: must be a JSON object ({…})",
        ));
    }
    match serde_json::from_slice(bytes) {
        Ok(body) => Ok(body),
        Err(e) => integral_floats_as_integers(bytes)
            .and_then(|v| serde_json::from_value(v).ok())
            .ok_or_else(|| ApiError::new(ErrorCode::InvalidJson, format!("request body: {e}"))),
    }
}

/// A JSON body that may be left out: an empty body (of any type, or
/// none) is `T::default()`; any other is read as [`JsonBody`] reads one. For actions that took no body before they took one.
pub struct OptionalJsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let typed = check_json_type(&req);
        let bytes = read_body(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJsonBody(T::default()));
        }
        typed?;
        decode_json(&bytes).map(OptionalJsonBody)
    }
}

/// The body with every number that has a fraction of zero (`84.0`,
/// `1e3`) written as an integer, if it has any: JSON Schema counts those
/// as integers, so a client built from the OpenAPI document may send
/// them where the server reads an integer. `None` when there are none
/// (the first error stands, with its position).
fn integral_floats_as_integers(bytes: &[u8]) -> Option<serde_json::Value> {
    fn fix(v: &mut serde_json::Value) -> bool {
        match v {
            serde_json::Value::Number(n) if n.is_f64() => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                // Within ±2^53 a float is an exact integer.
                if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0 {
                    *v = serde_json::Value::from(f as i64);
                    return true;
                }
                false
            }
            serde_json::Value::Array(items) => items.iter_mut().fold(false, |c, i| fix(i) | c),
            serde_json::Value::Object(map) => map.values_mut().fold(false, |c, i| fix(i) | c),
            _ => false,
        }
    }
    let mut value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    fix(&mut value).then_some(value)
}

/// `application/json` or `application/<something>+json`, any parameters.
fn is_json(content_type: &str) -> bool {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
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
        positive_id(parts, state, "job").await.map(JobIdPath)
    }
}

/// The path's one parameter as a positive integer: the id of a `what`;
/// anything else → 400 `invalid_id`, the one code of a bad id.
pub(crate) async fn positive_id<S: Send + Sync>(
    parts: &mut Parts,
    state: &S,
    what: &str,
) -> Result<i64, ApiError> {
    let axum::extract::Path(raw) = axum::extract::Path::<String>::from_request_parts(parts, state)
        .await
        .map_err(|e| ApiError::new(ErrorCode::InvalidPath, e.body_text()))?;
    match raw.parse::<i64>() {
        Ok(id) if id > 0 => Ok(id),
        _ => Err(ApiError::new(
            ErrorCode::InvalidId,
            format!("{what} id must be a positive integer, not {raw:?}"),
        )),
    }
}

#[cfg(test)]
mod body_proptests;
#[cfg(test)]
mod query_proptests;

#[cfg(test)]
mod tests {
    #[test]
    fn only_json_bodies_are_json() {
        for ok in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/merge-patch+json",
        ] {
            assert!(super::is_json(ok), "{ok}");
        }
        for bad in [
            "",
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data",
        ] {
            assert!(!super::is_json(bad), "{bad}");
        }
    }

    /// `84.0` is an integer to JSON Schema: read where an integer is
    /// wanted, and only a whole number below 2^53.
    #[test]
    fn integral_floats_are_read_as_integers() {
        use serde_json::json;
        let fixed = super::integral_floats_as_integers(br#"{"a": 84.0, "b": [1e3, 2.5], "c": 7}"#);
        assert_eq!(fixed, Some(json!({"a": 84, "b": [1000, 2.5], "c": 7})));
        assert_eq!(
            super::integral_floats_as_integers(br#"{"a": 2.5, "b": 3}"#),
            None
        );
        assert_eq!(super::integral_floats_as_integers(br#"{"a": 1e300}"#), None);
        assert_eq!(super::integral_floats_as_integers(b"not json"), None);
    }
}
