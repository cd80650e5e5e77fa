//! joblog's domain types and pure computation: jobs, records, streams,
//! timestamps, job listings, what a log viewer asks of a log (earlier
//! pages, searches, outlines), nodes, API token roles, the audit trail,
//! schedules, and the stored forms of a job's result and of a sealed log.
//!
//! Every other crate speaks in these types; this crate knows nothing about
//! SQL, HTTP, processes or files.
//!
//! Where things are:
//! - `job`: what a client submits, its checks (`NewJobRequest::validate`,
//!   errors naming the field), what the store keeps, `Concurrency`;
//!   `given`: what a job was given besides its command (for `rerun`).
//! - `record`: records and streams; `time`: `Timestamp` (microseconds,
//!   RFC 3339 UTC) and `parse_time_bound` (`24h` back, or a time);
//!   `duration`: the one `parse_duration` and `Backoff`, the delays every
//!   retry loop waits by (callers sleep); `size`: byte sizes.
//! - `query`: a job listing (`JobQuery`: states, a name or a `NameGlob`,
//!   node, creation window, page); `navigation`: pages backwards,
//!   searches (A–Z folded, nothing else) and outlines; `node`: nodes and
//!   the state each is judged to be in; `labels`: a node's
//!   labels and a job's `node_selector` (every label must match).
//! - `token`: `Role` (viewer < operator < admin) and what is kept of a
//!   token (its hash, never its text); `audit`: the trail's entries and
//!   pages of them (`MAX_AUDIT_FIELD`); `user`: people who sign in and
//!   their sessions (kept by hash, as tokens), and the single sign-ons
//!   begun; `folder`: folder names and the `Scope` of a token or user
//!   limited to some folders.
//! - `notify`: notification rules (which job ends, where to), their
//!   checks, and what a notification says in each format (`message`).
//! - `schedule`: a schedule as sent and checked; `timing` (cron, 5 fields
//!   or 6 or a shortcut, in a compiled-in IANA zone; daylight saving as
//!   Debian's cron), `policy` (`Overlap`, `Missed`, `Retries`), `plan`
//!   (which fires a waking scheduler runs; missed ones counted up to
//!   `MAX_COUNTED`), `stored` (a schedule as stored, its `PATCH`, and the
//!   job a fire submits); a schedule with neither cron nor trigger is a
//!   saved job (`Firing::OnDemand`). `params`: the JSON Schema subset of
//!   a saved job's parameters and each run's values checked against it
//!   (not used by a route yet).
//! - `search`: a search across every job's log (`SearchQuery`, pages
//!   read by `Scan`, `SearchCursor`), its patterns (text or a regular
//!   expression) and the trigram index of a sealed segment.
//! - `result_blob` (docs/results.md) and `segment` (docs/segments.md):
//!   versioned binary formats; `escape`: untrusted text made safe for a
//!   terminal; `buckets`: histogram bounds as people write them.
//! - `proptests`: every parser of typed text fed arbitrary Unicode.
//!
//! Invariants:
//! - No I/O, no async, no threads; what depends on the time takes it as an
//!   argument (`Timestamp::now` is for callers).
//! - Stored formats are only added to: `Stream::code` is never renumbered,
//!   and every released version of a result blob or a segment keeps
//!   decoding, as the checked-in fixtures (`fixtures/`, `tests/fixtures/`)
//!   prove. Damaged bytes are an error, never a panic.

mod audit;
mod buckets;
mod duration;
mod escape;
mod folder;
mod given;
mod job;
mod labels;
mod navigation;
mod node;
pub mod notify;
pub mod params;
#[cfg(test)]
mod proptests;
mod query;
mod record;
pub mod result_blob;
pub mod schedule;
pub mod search;
pub mod segment;
mod size;
mod time;
mod token;
mod user;

pub use audit::{AuditEntry, AuditQuery, NewAudit, MAX_AUDIT_FIELD, MAX_AUDIT_LIMIT};
pub use buckets::exponential_buckets;
pub use duration::{parse_duration, parse_positive_duration, Backoff};
pub use escape::{escape_display, escape_html, is_hidden_format};
pub use folder::{validate_folder, Scope, MAX_FOLDER, MAX_SCOPE_FOLDERS};
pub use given::Given;
pub use job::{
    Concurrency, Job, JobId, JobSpec, JobState, LogSummary, NewJobRequest, ResultInfo, ValidJob,
    ValidationError, MAX_CONCURRENT, MAX_LIST_LIMIT,
};
pub use labels::{Labels, MAX_LABELS, MAX_LABEL_LEN};
pub use navigation::{
    group_title, EarlierPage, LogGroup, LogOutline, LogSearch, SearchHits, MAX_GROUP_TITLE_BYTES,
    MAX_OUTLINE_GROUPS, MAX_SEARCH_BYTES,
};
pub use node::{waiting_for, NodeInfo, NodeState};
pub use query::{GlobPiece, JobQuery, NameFilter, NameGlob};
pub use record::{Record, Stream, StreamCounts};
pub use result_blob::{BlobError, ResultBlob};
pub use size::{parse_byte_size, render_byte_size};
pub use time::{parse_time_bound, Timestamp};
pub use token::{validate_token_name, Folders, NewToken, Role, TokenInfo, MAX_TOKEN_NAME};
pub use user::{
    validate_password, validate_user_name, NewSession, NewUser, PendingSignIn, SessionAuth,
    SessionInfo, SsoUser, UserAuth, UserChange, UserInfo, MAX_PASSWORD_BYTES, MAX_USER_NAME,
    MIN_PASSWORD_CHARS,
};
