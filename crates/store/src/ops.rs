//! The writer's side of a store: the ops a batch is made of
//! ([`WriteOp`], each saying what it answers), their [`Outcome`]s, and
//! the [`StoreWriter`] that applies a batch in one transaction. Adding an
//! op means a variant here and an arm in each store's writer and in
//! `Committed::add`: every match on it is exhaustive, so the compiler
//! names each place.

use joblog_core::notify::{Delivery, DeliveryId, RuleId, TryOutcome, ValidRule};
use joblog_core::schedule::{ScheduleId, ValidSchedule};
use joblog_core::{
    Job, JobId, JobSpec, JobState, Labels, LogSummary, NewAudit, NewToken, Record, ResultBlob,
    Timestamp,
};

use crate::{sealed, AccountOp, Fired, Result, RuleSaved, ScheduleDeleted, ScheduleSaved};

/// One change to the store. The writer applies a batch of them in one
/// transaction, in order.
#[derive(Debug)]
pub enum WriteOp {
    /// Adds a queued job. → [`Outcome::Job`]
    InsertJob {
        name: Option<String>,
        /// Boxed: a spec is large, most ops small.
        spec: Box<JobSpec>,
    },
    /// Takes the oldest queued job for `node` that may start: not
    /// waiting for a retry's backoff, and not held back by its
    /// concurrency key (as many of that key's jobs running, on every
    /// node, as its `max_concurrent`); marks it running. `at` is the
    /// engine's clock: a job waiting for a retry's backoff until after it
    /// is not taken (`started_at` is the commit's time). →
    /// [`Outcome::Claimed`]
    /// Only a job whose `node_selector` the node's `labels` satisfy.
    ClaimNext {
        node: String,
        labels: Labels,
        at: Timestamp,
    },
    /// Makes the jobs of the schedules due at `now` (at most
    /// [`FIRE_BATCH`] schedules), each fire exactly once, and moves each
    /// schedule's next fire past `now`. → [`Outcome::Fired`]
    /// Makes none while the scheduler is paused or `node` is asked to
    /// drain ([`Fired::held`]).
    FireDue { now: Timestamp, node: String },
    /// Creates a schedule (`id` `None`) or replaces one, with its next
    /// fire (`None` while disabled). → [`Outcome::Schedule`]
    SaveSchedule {
        id: Option<ScheduleId>,
        schedule: Box<ValidSchedule>,
        next_fire: Option<Timestamp>,
    },
    /// Deletes a schedule (its jobs stay, still naming it). →
    /// [`Outcome::Count`]
    DeleteSchedule { id: ScheduleId },
    /// Appends records (seq already assigned, contiguous) and stores the
    /// job's counters after them. → [`Outcome::Done`]
    Append {
        job: JobId,
        records: Vec<Record>,
        summary: LogSummary,
    },
    /// Ends a job; `finished_at` is the commit time of this op, so it comes
    /// after every record appended before it. → [`Outcome::MaybeJob`]
    /// (`None` when the job had already ended: a job is finished once)
    Finish {
        job: JobId,
        state: JobState,
        exit_code: Option<i32>,
        /// Its result, encoded off the writer (a 32 MB result is not
        /// compressed on the thread every job's records wait for).
        result: Option<ResultBlob>,
        summary: LogSummary,
        /// When it ended by the engine's clock: a retry's backoff counts
        /// from it (the same clock its claim compares with).
        at: Timestamp,
    },
    /// Cancels the job if it is still queued. → [`Outcome::MaybeJob`]
    CancelQueued { job: JobId },
    /// Marks `running` jobs of `node` (all nodes if `None`) `interrupted`,
    /// and queued ones too when `include_queued`, each with a last record
    /// saying that its node ended without stopping it (called by a node at
    /// its start, before [`WriteOp::RegisterNode`], so that node's last
    /// heartbeat is still the old process's). → [`Outcome::Interrupted`]
    Interrupt {
        node: Option<String>,
        include_queued: bool,
    },
    /// Deletes the job's records, lowest seq first: up to `max` rows, or
    /// whole sealed segments until they hold `max` records or more. →
    /// [`Outcome::Count`] (records deleted: below `max` once the log is
    /// gone)
    DeleteLogChunk { job: JobId, max: u32 },
    /// Seals one slice of a finished job's log: deletes the rows of the
    /// segment's seqs and inserts the segment, if every one of those rows
    /// is there (none sealed or deleted meanwhile); otherwise changes
    /// nothing. → [`Outcome::Count`]: 1 sealed, 0 not
    SealSlice(Box<sealed::SealSlice>),
    /// Marks a finished job's log sealed once no rows of it remain. →
    /// [`Outcome::Count`]: 1 marked, 0 not (rows remain, or already)
    MarkSealed { job: JobId },
    /// Deletes the job row and its result (its log must already be gone). →
    /// [`Outcome::Count`]
    DeleteJob { job: JobId },
    /// Where the log is partitioned: drops every partition all of whose
    /// jobs are among `candidates` (and that no new job can fall into),
    /// with those jobs and their results. → [`Outcome::Groomed`] (empty for
    /// a store without partitions)
    DropLogPartitions { candidates: Vec<JobId> },
    /// Records that `node` is alive and, with `lapse`, marks the running
    /// jobs of nodes silent for longer than that interrupted, each with a
    /// last record naming the silent node (`None`: the
    /// caller cannot tell yet whether the others had a fair chance to
    /// heartbeat, e.g. just after an outage). → [`Outcome::Interrupted`]
    Heartbeat {
        node: String,
        lapse: Option<std::time::Duration>,
    },
    /// Records that `node` (re)started with joblog `version`, holding the
    /// secrets named `secret_names` (names only), with `labels`: its start time, a fresh
    /// heartbeat, no longer stopped. → [`Outcome::Done`]
    RegisterNode {
        node: String,
        version: String,
        secret_names: Vec<String>,
        labels: Labels,
        /// Started paused (`serve --paused`): it is asked to drain, the
        /// scheduler is paused, and every other node is taken for lapsed
        /// until it heartbeats (a restored copy's nodes). On a store of
        /// one node the others are taken for lapsed at every start.
        paused: bool,
    },
    /// Asks `node` to drain (`drain`: since now, or since it was asked
    /// before) or to take jobs again. → [`Outcome::Count`]: 1, or 0 when
    /// no node has that name
    SetDrain { node: String, drain: bool },
    /// Pauses every node's scheduler, `by` whom (kept if it was paused
    /// already), or resumes it (`None`). → [`Outcome::Done`]
    SetPaused { by: Option<String> },
    /// Records that `node` stopped gracefully. → [`Outcome::Done`]
    NodeStopped { node: String },
    /// Asks the node running `job` to stop it (carried to other nodes by
    /// the store's notifications). → [`Outcome::Done`]
    RequestCancel { job: JobId },
    /// Stores an API token by its hash. → [`Outcome::Count`]: 1, or 0 when
    /// a token of that name exists
    CreateToken(NewToken),
    /// Deletes the API token of that name. → [`Outcome::Count`]
    RevokeToken { name: String },
    /// Notes when a token was last used. → [`Outcome::Done`]
    TouchToken { name: String, at: Timestamp },
    /// Creates, changes or deletes a user, or opens, uses or ends a
    /// session; each [`AccountOp`] says its outcome.
    Account(AccountOp),
    /// Appends entries to the audit trail, numbered in commit order (on
    /// PostgreSQL across nodes too), each text field cut to
    /// [`joblog_core::MAX_AUDIT_FIELD`] bytes. Job retention never
    /// deletes them, nor does deleting their job. → [`Outcome::Done`]
    Audit(Vec<NewAudit>),
    /// Audit retention: of the `max` oldest entries (by id), deletes those
    /// from before `before`. → [`Outcome::Count`]: how many went (fewer
    /// than `max`: nothing older is left at the head of the trail).
    DeleteAudit { before: Timestamp, max: u32 },
    /// Creates a notification rule (`id` `None`) or replaces one. →
    /// [`Outcome::Rule`]
    SaveRule {
        id: Option<RuleId>,
        rule: Box<ValidRule>,
    },
    /// Deletes a rule and its deliveries. → [`Outcome::Count`]
    DeleteRule { id: RuleId },
    /// Takes up to `max` deliveries due at `at` for `node` to send: each
    /// counts an attempt more and is due again after `lease`, should its
    /// sender die. → [`Outcome::Deliveries`]
    ClaimDeliveries {
        node: String,
        at: Timestamp,
        lease: std::time::Duration,
        max: u32,
    },
    /// Records a try of a delivery: sent, refused for good, or due again
    /// at `retry_at` (`None`: out of retries, so failed). →
    /// [`Outcome::Count`]
    DeliveryTried {
        id: DeliveryId,
        outcome: TryOutcome,
        retry_at: Option<Timestamp>,
        at: Timestamp,
    },
}

impl WriteOp {
    /// The op's name, for logs and errors (`claim_next`).
    pub fn name(&self) -> &'static str {
        match self {
            WriteOp::InsertJob { .. } => "insert_job",
            WriteOp::ClaimNext { .. } => "claim_next",
            WriteOp::Append { .. } => "append",
            WriteOp::Finish { .. } => "finish",
            WriteOp::CancelQueued { .. } => "cancel_queued",
            WriteOp::Interrupt { .. } => "interrupt",
            WriteOp::DeleteLogChunk { .. } => "delete_log_chunk",
            WriteOp::DeleteJob { .. } => "delete_job",
            WriteOp::DropLogPartitions { .. } => "drop_log_partitions",
            WriteOp::Heartbeat { .. } => "heartbeat",
            WriteOp::RegisterNode { .. } => "register_node",
            WriteOp::NodeStopped { .. } => "node_stopped",
            WriteOp::SetDrain { .. } => "set_drain",
            WriteOp::SetPaused { .. } => "set_paused",
            WriteOp::RequestCancel { .. } => "request_cancel",
            WriteOp::CreateToken(_) => "create_token",
            WriteOp::RevokeToken { .. } => "revoke_token",
            WriteOp::TouchToken { .. } => "touch_token",
            WriteOp::Account(op) => op.name(),
            WriteOp::Audit(_) => "audit",
            WriteOp::DeleteAudit { .. } => "delete_audit",
            WriteOp::FireDue { .. } => "fire_due",
            WriteOp::SaveSchedule { .. } => "save_schedule",
            WriteOp::DeleteSchedule { .. } => "delete_schedule",
            WriteOp::SealSlice(_) => "seal_slice",
            WriteOp::MarkSealed { .. } => "mark_sealed",
            WriteOp::SaveRule { .. } => "save_rule",
            WriteOp::DeleteRule { .. } => "delete_rule",
            WriteOp::ClaimDeliveries { .. } => "claim_deliveries",
            WriteOp::DeliveryTried { .. } => "delivery_tried",
        }
    }

    /// The job whose log this op continues (its records, its end): the
    /// writer keeps such ops of one job in order when it puts a job's
    /// flood after others' records.
    /// Whether a client waits for this op and would rather be refused
    /// than kept waiting while the store fails (a full disk, a lost
    /// database): a submission, a cancel of a queued job, a change of a
    /// schedule, a rule, a token, an account or a control. Refused, it is
    /// never applied later — a client that gave up and retried must not
    /// find it done twice. The rest (records, ends, claims, the engine's
    /// and the sealer's own work) wait for the store.
    pub fn refused_while_failing(&self) -> bool {
        match self {
            WriteOp::InsertJob { .. }
            | WriteOp::SaveSchedule { .. }
            | WriteOp::DeleteSchedule { .. }
            | WriteOp::CancelQueued { .. }
            | WriteOp::SetDrain { .. }
            | WriteOp::SetPaused { .. }
            | WriteOp::CreateToken(_)
            | WriteOp::RevokeToken { .. }
            | WriteOp::Account(_)
            | WriteOp::SaveRule { .. }
            | WriteOp::DeleteRule { .. } => true,
            WriteOp::ClaimNext { .. }
            | WriteOp::FireDue { .. }
            | WriteOp::Append { .. }
            | WriteOp::Finish { .. }
            | WriteOp::Interrupt { .. }
            | WriteOp::DeleteLogChunk { .. }
            | WriteOp::SealSlice(_)
            | WriteOp::MarkSealed { .. }
            | WriteOp::DeleteJob { .. }
            | WriteOp::DropLogPartitions { .. }
            | WriteOp::Heartbeat { .. }
            | WriteOp::RegisterNode { .. }
            | WriteOp::NodeStopped { .. }
            | WriteOp::RequestCancel { .. }
            | WriteOp::TouchToken { .. }
            | WriteOp::Audit(_)
            | WriteOp::DeleteAudit { .. }
            | WriteOp::ClaimDeliveries { .. }
            | WriteOp::DeliveryTried { .. } => false,
        }
    }

    pub fn log_of(&self) -> Option<JobId> {
        match self {
            WriteOp::Append { job, .. } | WriteOp::Finish { job, .. } => Some(*job),
            _ => None,
        }
    }

    /// Records this op carries, for batch sizing.
    pub fn record_count(&self) -> usize {
        match self {
            WriteOp::Append { records, .. } => records.len(),
            WriteOp::Audit(entries) => entries.len().max(1),
            _ => 1,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Done,
    Job(Job),
    MaybeJob(Option<Job>),
    Claimed(Option<Job>),
    Fired(Fired),
    Schedule(ScheduleSaved),
    ScheduleDeleted(ScheduleDeleted),
    Count(u64),
    /// Jobs ended as `interrupted`, with the node each depended on.
    Interrupted(Vec<(JobId, Option<String>)>),
    /// Jobs deleted with their log partitions, and how many records went.
    Groomed {
        jobs: Vec<JobId>,
        records: u64,
    },
    Rule(RuleSaved),
    /// Deliveries claimed to send.
    Deliveries(Vec<Delivery>),
}

/// The single writer of a store. Blocking: called from the pipeline's
/// writer thread only.
pub trait StoreWriter: Send {
    /// Applies `ops` in one transaction and returns one outcome per op, or
    /// an error after which nothing of the batch was applied. After a
    /// transient error the caller retries; while [`may_have_committed`]
    /// says so, with the same ops: a store whose connection can drop
    /// mid-commit uses that to find out whether the failed attempt was in
    /// fact committed, so nothing is applied twice.
    ///
    /// [`may_have_committed`]: StoreWriter::may_have_committed
    fn apply(&mut self, ops: &[WriteOp]) -> Result<Vec<Outcome>>;

    /// Whether the last attempt failed after its commit was sent (the
    /// acknowledgement lost with the connection), so that it may have
    /// been committed: the caller must retry the same ops before it may
    /// leave any out. `false` when the failure certainly applied nothing.
    fn may_have_committed(&self) -> bool {
        false
    }

    /// Whether the batches committed since it was last asked queued a
    /// notification delivery (a job's end matched an enabled rule), and
    /// forgets; `None`: this writer does not tell, and any job's end may
    /// have. So a node's notification sender looks at the outbox only
    /// when there is something to send, not after every job.
    fn take_queued_deliveries(&mut self) -> Option<bool> {
        None
    }
}
