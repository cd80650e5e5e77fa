//! joblog's domain types: jobs, records, streams, timestamps, job
//! listings, what a log viewer asks of a log (earlier pages, searches,
//! outlines), API token roles, the audit trail and the stored form of a
//! job's result, with no I/O.
//!
//! Every other crate speaks in these types; this crate knows nothing about
//! SQL, HTTP, processes or files.

mod audit;
mod buckets;
mod duration;
mod escape;
mod given;
mod job;
mod navigation;
mod node;
#[cfg(test)]
mod proptests;
mod query;
mod record;
pub mod result_blob;
pub mod schedule;
pub mod segment;
mod size;
mod time;
mod token;

pub use audit::{AuditEntry, AuditQuery, NewAudit, MAX_AUDIT_FIELD, MAX_AUDIT_LIMIT};
pub use buckets::exponential_buckets;
pub use duration::{parse_duration, parse_positive_duration, Backoff};
pub use escape::{escape_display, is_hidden_format};
pub use given::Given;
pub use job::{
    Concurrency, Job, JobId, JobSpec, JobState, LogSummary, NewJobRequest, ResultInfo, ValidJob,
    ValidationError, MAX_CONCURRENT, MAX_LIST_LIMIT,
};
pub use navigation::{
    group_title, EarlierPage, LogGroup, LogOutline, LogSearch, SearchHits, MAX_GROUP_TITLE_BYTES,
    MAX_OUTLINE_GROUPS, MAX_SEARCH_BYTES,
};
pub use node::{NodeInfo, NodeState};
pub use query::{GlobPiece, JobQuery, NameFilter, NameGlob};
pub use record::{Record, Stream, StreamCounts};
pub use result_blob::{BlobError, ResultBlob};
pub use size::{parse_byte_size, render_byte_size};
pub use time::{parse_time_bound, Timestamp};
pub use token::{validate_token_name, NewToken, Role, TokenInfo, MAX_TOKEN_NAME};
