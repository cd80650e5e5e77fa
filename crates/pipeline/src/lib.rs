//! The log pipeline: turns what jobs write into ordered, structured, masked
//! records and carries them to the store's single writer.
//!
//! Invariants: producers never block on disk I/O and share no hot lock;
//! memory between producers and the store is bounded; records of a job
//! reach the store in seq order, so a crash leaves a gap-free prefix.
//! Only this crate hands a `WriteOp` to the writer: every other write is a
//! typed call (`requests`), and an outcome of the wrong kind is an error
//! (`PipelineError::Mismatch`), never read as a default.
//!
//! Where things are: `output` (a job's bytes to records: `lines` splits
//! at newlines and at the line limit without cutting a character or a
//! masked value, `command` reads workflow commands, `mask` hides secrets
//! and their encoded forms, `cap` keeps a job's head and tail past its
//! limit with gapless seqs); `writer` (the byte budget, batches, the
//! writer thread: a transient store error holds the batch and retries
//! with backoff, any other fails only the op at fault); `requests` (the
//! typed calls).

mod notify_requests;
mod output;
mod requests;
mod writer;

pub use joblog_store::Committed;
#[doc(hidden)]
pub use output::fuzzing;
pub use output::{LogLimits, OutputParser, ResultText, Source};
pub use requests::{Dropped, Finish};
pub use writer::{Health, JobShare, Pipeline, PipelineConfig, WriterThread};

/// Why the pipeline could not take or apply an op.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("the log pipeline is closed (server stopping)")]
    Closed,
    #[error(transparent)]
    Store(#[from] joblog_store::StoreError),
    /// The store answered an op with an outcome of another kind: a bug in
    /// a store, reported rather than read as a default.
    #[error("the store answered {op} with {outcome}")]
    Mismatch { op: &'static str, outcome: String },
}
