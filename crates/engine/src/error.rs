//! The engine's errors.

use joblog_core::{JobId, ValidationError};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error("no job with id {0}")]
    NotFound(JobId),
    #[error("job {0} has already finished")]
    AlreadyFinished(JobId),
    #[error("job {0} is running on another node")]
    NotHere(JobId),
    #[error("the server is shutting down and takes no new jobs")]
    ShuttingDown,
    #[error("no schedule with id {0}")]
    ScheduleNotFound(joblog_core::schedule::ScheduleId),
    #[error("a schedule named {0:?} exists already")]
    ScheduleNameTaken(String),
    #[error("schedule {id} is run after by {}", followers.join(", "))]
    ScheduleFollowed {
        id: joblog_core::schedule::ScheduleId,
        /// The names of the schedules that run after it.
        followers: Vec<String>,
    },
    #[error("no notification rule with id {0}")]
    RuleNotFound(joblog_core::notify::RuleId),
    #[error("a notification rule named {0:?} exists already")]
    RuleNameTaken(String),
    #[error("{0} jobs are queued, the limit (max_queued)")]
    QueueFull(u64),
    #[error("{0} schedules exist, the limit (max_schedules)")]
    TooManySchedules(u64),
    #[error("the store does not accept writes: {0}")]
    WritesFailing(String),
    /// The store's disk is full, or the data directory's has less free
    /// space than `min_free_bytes`: the text says which.
    #[error("storage full: {0}")]
    StorageFull(String),
    #[error(transparent)]
    Pipeline(#[from] joblog_pipeline::PipelineError),
    #[error(transparent)]
    Store(#[from] joblog_store::StoreError),
    #[error("{0}")]
    Io(String),
}
