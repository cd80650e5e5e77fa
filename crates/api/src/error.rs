//! The API's errors: stable codes and statuses for clients; the real cause
//! goes to the error log, never to the client.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use joblog_engine::EngineError;
use joblog_pipeline::PipelineError;
use joblog_store::StoreError;

/// Declares the stable error codes: each with its HTTP status and what it
/// means, in one list that the routes, the OpenAPI document and the docs
/// are checked against.
macro_rules! error_codes {
    ($($variant:ident = $code:literal, $status:ident, $meaning:literal;)+) => {
        /// Every error code the API sends, in `{"error": {"code": …}}`.
        /// Codes are part of the API: never renamed or reused.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum ErrorCode {
            $(#[doc = $meaning] $variant,)+
        }

        impl ErrorCode {
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),+];

            /// The code as clients see it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $code,)+
                }
            }

            pub fn status(self) -> StatusCode {
                match self {
                    $(ErrorCode::$variant => StatusCode::$status,)+
                }
            }

            /// What the code means, for the docs.
            pub fn meaning(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $meaning,)+
                }
            }
        }
    };
}

error_codes! {
    InvalidRequest = "invalid_request", BAD_REQUEST, "The request body is JSON but a field is wrong; the message names it.";
    InvalidJson = "invalid_json", BAD_REQUEST, "The request body is not JSON of the expected shape.";
    InvalidBody = "invalid_body", BAD_REQUEST, "The request body could not be read.";
    InvalidQuery = "invalid_query", BAD_REQUEST, "A query parameter is wrong; the message names it.";
    InvalidPath = "invalid_path", BAD_REQUEST, "The path could not be read.";
    InvalidId = "invalid_id", BAD_REQUEST, "An id in the path (a job's, a schedule's or a rule's) is not a positive integer; the message names which.";
    InvalidHeader = "invalid_header", BAD_REQUEST, "A header is wrong (e.g. `Last-Event-ID` that is not a seq).";
    Unauthorized = "unauthorized", UNAUTHORIZED, "Neither an API token nor a session: the token is missing, unknown, revoked or expired, or the session ended (sign in again).";
    Forbidden = "forbidden", FORBIDDEN, "The caller's role is too low for this route; the message names the role needed.";
    SignInFailed = "sign_in_failed", UNAUTHORIZED, "The name or the password is wrong (which one is not said).";
    UserDisabled = "user_disabled", FORBIDDEN, "The password is right but an admin disabled this user.";
    TooManySignIns = "too_many_sign_ins", TOO_MANY_REQUESTS, "Too many failed sign-ins of this name or from this address; retry after `Retry-After` seconds.";
    CsrfTokenMissing = "csrf_token_missing", FORBIDDEN, "A change made with a session cookie lacks the session's `X-CSRF-Token` header.";
    CsrfTokenInvalid = "csrf_token_invalid", FORBIDDEN, "The `X-CSRF-Token` header is not the session's.";
    NoSession = "no_session", CONFLICT, "Signing out needs a session; the caller used an API token.";
    CrossSiteRequest = "cross_site_request", FORBIDDEN, "A state change, or a read of the API, sent by a browser from another site (`Origin`, `Sec-Fetch-Site`).";
    HostNotAllowed = "host_not_allowed", MISDIRECTED_REQUEST, "The `Host` header names a server this one is not (add it to `allowed_hosts`).";
    NotFound = "not_found", NOT_FOUND, "No such endpoint.";
    MethodNotAllowed = "method_not_allowed", METHOD_NOT_ALLOWED, "The endpoint exists but does not take this method.";
    UnsupportedMediaType = "unsupported_media_type", UNSUPPORTED_MEDIA_TYPE, "A request body must be sent as `Content-Type: application/json`.";
    JobNotFound = "job_not_found", NOT_FOUND, "No job with that id.";
    ResultNotFound = "result_not_found", NOT_FOUND, "The job exists but has no result.";
    ResultDamaged = "result_damaged", INTERNAL_SERVER_ERROR, "The job's stored result failed its checks (checksum, length or format) and cannot be read; the server's error log says which.";
    LogDamaged = "log_damaged", INTERNAL_SERVER_ERROR, "A sealed segment of the job's log failed its checks and that part of the log cannot be read (other jobs' logs can); the server's error log says which segment.";
    ScheduleNotFound = "schedule_not_found", NOT_FOUND, "No schedule with that id.";
    ScheduleExists = "schedule_exists", CONFLICT, "A schedule with that name exists.";
    ScheduleFollowed = "schedule_followed", CONFLICT, "Other schedules run after this one (`after`): delete them or change their `after` first.";
    TooManySchedules = "too_many_schedules", CONFLICT, "`max_schedules` schedules exist already; delete one or raise the limit.";
    RuleNotFound = "rule_not_found", NOT_FOUND, "No notification rule with that id.";
    RuleExists = "rule_exists", CONFLICT, "A notification rule with that name exists.";
    ServerBusy = "server_busy", SERVICE_UNAVAILABLE, "Too many request bodies are being received at once (on the connection, or by the server); retry shortly.";
    TokenNotFound = "token_not_found", NOT_FOUND, "No API token with that name.";
    NodeNotFound = "node_not_found", NOT_FOUND, "No node of this store has that name (`GET /api/v1/nodes` lists them).";
    TokenExists = "token_exists", CONFLICT, "An API token with that name exists.";
    UserNotFound = "user_not_found", NOT_FOUND, "No user with that name.";
    UserExists = "user_exists", CONFLICT, "A user with that name exists.";
    SessionNotFound = "session_not_found", NOT_FOUND, "No session with that id (or not one of the caller's).";
    JobFinished = "job_finished", CONFLICT, "The job has already finished (e.g. cancelling it).";
    JobElsewhere = "job_elsewhere", CONFLICT, "The job runs on another node that this store cannot reach.";
    BackupUnsupported = "backup_unsupported", CONFLICT, "The server's store is PostgreSQL, which joblog does not copy: back it up with `pg_dump`.";
    RequestTimeout = "request_timeout", REQUEST_TIMEOUT, "The request took longer than `http.request_timeout`; the connection is closed.";
    BodyTooLarge = "body_too_large", PAYLOAD_TOO_LARGE, "The request body is larger than the route accepts (`http.max_body_bytes` for a job, 64 KiB for others).";
    UriTooLong = "uri_too_long", URI_TOO_LONG, "The URL is longer than `http.max_uri_bytes`.";
    QueueFull = "queue_full", TOO_MANY_REQUESTS, "`max_queued` jobs are waiting already; retry after `Retry-After` seconds.";
    TooManyViewers = "too_many_viewers", TOO_MANY_REQUESTS, "The live viewer limits are reached: log tails and job-list feeds on the node (`http.max_viewers`), tails of one job (`http.max_viewers_per_job`).";
    Internal = "internal", INTERNAL_SERVER_ERROR, "Something failed inside the server; the cause is in its error log.";
    StoreUnavailable = "store_unavailable", SERVICE_UNAVAILABLE, "The database is unavailable (locked or unreachable); retry shortly.";
    StorageFull = "storage_full", SERVICE_UNAVAILABLE, "The disk under the database is full, or the data directory's has less free space than `store.min_free_bytes`: nothing was done; retry once space is freed.";
    ShuttingDown = "shutting_down", SERVICE_UNAVAILABLE, "The server is stopping and takes no new work.";
    TooManyConnections = "too_many_connections", SERVICE_UNAVAILABLE, "The server has `http.max_connections` connections open; this one is closed after this answer.";
}

/// An error as the client sees it: a stable code (with its status) and a
/// clean message. The real cause was logged where it happened.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
        }
    }

    pub fn job_not_found(id: i64) -> Self {
        Self::new(ErrorCode::JobNotFound, format!("no job with id {id}"))
    }

    pub(crate) fn internal(what: &str, cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "{what}");
        Self::new(
            ErrorCode::Internal,
            format!("{what}; see the server's error log"),
        )
    }
}

impl ApiError {
    /// The one shape every error is sent in, as an HTTP body and as the
    /// data of a stream's `error` event: `{"error": {"code", "message"}}`.
    pub(crate) fn body(&self) -> serde_json::Value {
        serde_json::json!({"error": {"code": self.code.as_str(), "message": self.message}})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = self.body();
        let mut response = (self.code.status(), axum::Json(body)).into_response();
        if matches!(self.code, ErrorCode::QueueFull | ErrorCode::TooManyViewers) {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("10"),
            );
        }
        if self.code == ErrorCode::Unauthorized {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer realm=\"joblog\""),
            );
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        if let StoreError::DamagedLog { job, .. } = &e {
            tracing::error!(error = %e, "damaged sealed log");
            return ApiError::new(
                ErrorCode::LogDamaged,
                format!(
                    "the sealed log of job {job} is damaged and cannot be read here; \
                     the server's error log says which segment"
                ),
            );
        }
        if e.is_full() {
            tracing::error!(error = %e, "store full");
            return ApiError::new(
                ErrorCode::StorageFull,
                "the database's disk is full; nothing was done, retry once space is freed",
            );
        }
        if e.is_transient() {
            tracing::error!(error = %e, "store unavailable");
            return ApiError::new(
                ErrorCode::StoreUnavailable,
                "the database is unavailable; try again shortly",
            );
        }
        ApiError::internal("database error", &e)
    }
}

impl From<PipelineError> for ApiError {
    fn from(e: PipelineError) -> Self {
        match e {
            PipelineError::Closed => {
                ApiError::new(ErrorCode::ShuttingDown, "the server is shutting down")
            }
            PipelineError::Store(e) => e.into(),
            e @ PipelineError::Mismatch { .. } => ApiError::internal("store error", &e),
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Invalid(v) => ApiError::new(ErrorCode::InvalidRequest, v.to_string()),
            EngineError::NotFound(id) => ApiError::job_not_found(id),
            EngineError::ScheduleNotFound(id) => ApiError::new(
                ErrorCode::ScheduleNotFound,
                format!("no schedule with id {id}"),
            ),
            EngineError::ScheduleNameTaken(name) => ApiError::new(
                ErrorCode::ScheduleExists,
                format!("a schedule named {name:?} exists; choose another name or edit that one"),
            ),
            EngineError::ScheduleFollowed { id, followers } => ApiError::new(
                ErrorCode::ScheduleFollowed,
                format!(
                    "schedule {id} is not deleted: other schedules run after it ({}); delete them or change their \"after\" first",
                    followers.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ")
                ),
            ),
            EngineError::RuleNotFound(id) => ApiError::new(
                ErrorCode::RuleNotFound,
                format!("no notification rule with id {id}"),
            ),
            EngineError::RuleNameTaken(name) => ApiError::new(
                ErrorCode::RuleExists,
                format!("a notification rule named {name:?} exists; choose another name or edit that one"),
            ),
            EngineError::AlreadyFinished(id) => ApiError::new(
                ErrorCode::JobFinished,
                format!("job {id} has already finished"),
            ),
            EngineError::NotHere(id) => ApiError::new(
                ErrorCode::JobElsewhere,
                format!("job {id} is running on another node"),
            ),
            EngineError::ShuttingDown => ApiError::new(
                ErrorCode::ShuttingDown,
                "the server is shutting down and takes no new jobs",
            ),
            EngineError::TooManySchedules(n) => ApiError::new(
                ErrorCode::TooManySchedules,
                format!("{n} schedules exist, the server's limit (max_schedules); delete one or raise the limit"),
            ),
            EngineError::QueueFull(n) => ApiError::new(
                ErrorCode::QueueFull,
                format!("{n} jobs are queued, the server's limit (max_queued); retry later"),
            ),
            EngineError::WritesFailing(why) => {
                tracing::error!(error = %why, "refused a write: the store does not accept writes");
                ApiError::new(
                    ErrorCode::StoreUnavailable,
                    "the database does not accept writes now (locked or unreachable); nothing was done, retry shortly",
                )
            }
            EngineError::StorageFull(why) => {
                tracing::error!(error = %why, "refused a write: storage full");
                ApiError::new(
                    ErrorCode::StorageFull,
                    "storage is full (the database's disk, or the data directory's below store.min_free_bytes); nothing was done, retry once space is freed",
                )
            }
            EngineError::Pipeline(e) => e.into(),
            EngineError::Store(e) => e.into(),
            e @ EngineError::Io(_) => ApiError::internal("engine error", &e),
        }
    }
}
