//! Where jobs and their logs are kept: one trait, one implementation per
//! database (SQLite embedded, PostgreSQL shared by several nodes).
//!
//! The boundary: [`Store`] for reads (async; each implementation reads on
//! a pool of connections of its own, kept open, never the writer's);
//! [`StoreWriter`] for writes (one per store, driven by the pipeline's
//! writer thread: a batch of [`WriteOp`]s applied in one transaction, all
//! or nothing, each op answered by its own kind of [`Outcome`]); [`Committed`]
//! (what a commit made durable, for live followers and other nodes); and
//! [`open`], with [`Database::of`] naming what a URL points to before
//! anything is opened. `ops` holds the ops, `committed`, `open` and
//! `error` the rest; `snapshot` a consistent copy of the store (SQLite
//! only; PostgreSQL answers `Unsupported`, naming `pg_dump`).
//!
//! The logic is written once for both databases over `db` (a statement's
//! texts, values, rows and a connection as the shared code sees it): the
//! log's reads in `log_reads` (with `sealed`, `navigation` and `outline`),
//! other reads in `reads`, job listings in `listing`, the audit trail's in
//! `audit`, schedules in `schedules`, users and their sessions in
//! `accounts`, the writer's common ops in `writes`,
//! an interrupted job's last record in `interrupt`; `store_impl` lists the
//! reads both stores answer alike. `sqlite` and `postgres` hold only what
//! really differs (schemas, connections, the append path, claims, nodes,
//! PostgreSQL's listener, partitions and TLS), each place saying why.
//!
//! Features: `testing` (`testing`: throwaway SQLite files and PostgreSQL
//! databases, `backend_tests!`, a private PostgreSQL cluster; for the
//! tests of this crate and those above it) and `bench` (`bench_support`:
//! the store's way into PostgreSQL and its COPY, for the baseline designs
//! of `joblog-bench`, which alone enables it). Neither is a default
//! feature.
//!
//! Invariants:
//! - The store knows nothing about HTTP, processes or metrics (a read
//!   pool reports its waits through `StoreOptions::read_wait`).
//! - A job's log is append-only: rows are inserted, never UPDATEd, and
//!   deleted only by retention and sealing. Every record is in exactly one
//!   form, a row or a sealed segment; the sealed ones are a prefix of the
//!   log, and every log read runs in one snapshot.
//! - All writes go through the single [`StoreWriter`] of a store.
//! - Every statement a request runs is an index search, never a scan of a
//!   table or a sort of what matched: the plan tests (`sqlite/tests.rs`,
//!   `postgres/sql/tests.rs`) hold every statement to it.
//! - Both stores answer alike: `tests/store.rs` runs every behaviour test
//!   against each.
//! - Errors say whether they are transient ([`StoreError::is_transient`]);
//!   a refused configuration (a TLS certificate, a URL) is not.
//! - API tokens and sessions are stored and found by their SHA-256; no
//!   method takes or returns a token's or a session cookie's text, and a
//!   password only as its Argon2id hash.
//! - [`Committed`] crosses nodes in NOTIFY payloads: a field is only ever
//!   added, and optional.

mod accounts;
mod audit;
#[cfg(feature = "bench")]
pub mod bench_support;
mod committed;
mod controls;
mod db;
mod error;
mod interrupt;
mod listing;
mod log_reads;
mod navigation;
mod notifications;
mod open;
mod ops;
mod outline;
pub mod postgres;
mod reads;
mod rows;
mod schedules;
pub mod sealed;
mod search;
mod snapshot;
pub mod sqlite;
mod store_impl;
#[cfg(feature = "testing")]
pub mod testing;
mod writes;

use async_trait::async_trait;
use joblog_core::notify::{Delivery, DeliveryId, Rule, RuleId};
use joblog_core::schedule::{Schedule, ScheduleId};
use joblog_core::{
    AuditEntry, AuditQuery, EarlierPage, Job, JobId, JobQuery, JobState, Labels, LogOutline,
    LogSearch, NodeInfo, Record, SearchHits, Stream, Timestamp, TokenInfo,
};

pub use accounts::{AccountOp, MAX_PENDING_SIGN_INS};
pub use committed::Committed;
pub use controls::SchedulerState;
pub use error::StoreError;
pub use notifications::{RuleSaved, CLAIM_BATCH};
pub use open::{open, Database, ReadWait, StoreOptions, SyncMode};
pub use ops::{Outcome, StoreWriter, WriteOp};
pub use schedules::{Fired, ScheduleDeleted, ScheduleSaved, FIRE_BATCH};
pub use search::SearchBudget;
pub use snapshot::Snapshot;

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Read access, shared by every request. Implementations keep their own
/// connections so that reads never wait on the writer.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Opens the one writer of this store. The pipeline calls it once and
    /// drives it from a thread of its own (it may block on I/O).
    fn open_writer(&self) -> Result<Box<dyn StoreWriter>>;

    async fn get_job(&self, id: JobId) -> Result<Option<Job>>;

    /// Newest first.
    async fn list_jobs(&self, query: JobQuery) -> Result<Vec<Job>>;

    /// Up to `limit` records with `seq > after_seq`, in order, optionally of
    /// some streams only. A page stops early once it holds
    /// [`MAX_PAGE_BYTES`] of message text (it always holds at least one
    /// record), so that a page of long lines cannot take gigabytes; use
    /// [`page_is_full`] to tell whether more may follow.
    async fn read_log(
        &self,
        id: JobId,
        after_seq: u64,
        limit: u32,
        streams: Option<Vec<Stream>>,
    ) -> Result<Vec<Record>>;

    /// The last `limit` records with `seq < before_seq`, in order,
    /// optionally of some streams only: the ones nearest `before_seq`, as
    /// many as fit in [`MAX_PAGE_BYTES`] (at least one), and whether
    /// earlier ones remain.
    async fn read_log_before(
        &self,
        id: JobId,
        before_seq: u64,
        limit: u32,
        streams: Option<Vec<Stream>>,
    ) -> Result<EarlierPage>;

    /// The records whose message holds `search`'s text (of some streams
    /// only): how many in the whole log, and the seqs of the first `limit`
    /// after `after_seq`. One pass over the job's log in all, however many
    /// pages are asked for.
    async fn search_log(
        &self,
        id: JobId,
        search: &LogSearch,
        after_seq: u64,
        limit: u32,
        streams: Option<Vec<Stream>>,
    ) -> Result<SearchHits>;

    /// One page of a search across jobs' logs, from `cursor` (the newest
    /// job without one), of `limit` hits at most, read in one snapshot
    /// within `budget` (a page that runs out answers with a cursor).
    async fn search(
        &self,
        query: &joblog_core::search::SearchQuery,
        cursor: Option<joblog_core::search::SearchCursor>,
        limit: u32,
        budget: SearchBudget,
    ) -> Result<joblog_core::search::SearchPage>;

    /// The outline of the job's log as committed so far, listing at most
    /// `max_groups` groups (the API lists [`joblog_core::MAX_OUTLINE_GROUPS`]),
    /// from one read of its `error`, `warning`, `information` and
    /// `progress` records.
    async fn log_outline(&self, id: JobId, max_groups: usize) -> Result<LogOutline>;

    /// The job's result as stored: a blob (`joblog_core::result_blob`),
    /// whose checksum the reader checks.
    async fn read_result(&self, id: JobId) -> Result<Option<Vec<u8>>>;

    /// Up to `limit` of the job's records not sealed yet (rows), in
    /// order, fewer once they hold [`MAX_PAGE_BYTES`] of text: what the
    /// sealer encodes next.
    async fn unsealed_rows(&self, id: JobId, limit: u32) -> Result<Vec<Record>>;

    /// Finished jobs whose log is not sealed yet, after job `after`,
    /// oldest first, at most `limit`, each with when it finished; only
    /// those of `node` (and of no node) when given.
    async fn unsealed_jobs(
        &self,
        after: JobId,
        limit: u32,
        node: Option<String>,
    ) -> Result<Vec<(JobId, Timestamp)>>;

    /// Finished jobs whose log is not sealed yet (every node's), counted up
    /// to `up_to`.
    async fn count_unsealed(&self, up_to: u64) -> Result<u64>;

    /// Finished jobs that retention should delete, oldest first.
    async fn groom_candidates(&self, policy: GroomPolicy) -> Result<Vec<JobId>>;

    /// Queued jobs (of every node), counted up to `up_to`: a bound to
    /// check, not a figure to show, so a long queue costs no more than
    /// `up_to` index entries.
    async fn count_queued(&self, up_to: u64) -> Result<u64>;

    /// The newest job's id; `None` when there is no job.
    async fn latest_job_id(&self) -> Result<Option<JobId>>;

    /// The folder of each of the jobs `ids` that exists (`None`: in no
    /// folder), in no particular order; one primary-key search each.
    async fn job_folders(&self, ids: Vec<JobId>) -> Result<Vec<(JobId, Option<String>)>>;

    /// Ids of the jobs in `folders` above `after`, at most `up_to`, in
    /// no particular order: one range of the folder index per folder.
    async fn newer_in_folders(
        &self,
        folders: Vec<String>,
        after: JobId,
        up_to: u32,
    ) -> Result<Vec<JobId>>;

    /// The API token whose SHA-256 is `hash`, expired or not. Tokens are
    /// found by their hash only: the store never sees a token's text.
    async fn token_by_hash(&self, hash: [u8; 32]) -> Result<Option<TokenInfo>>;

    /// Every API token, by name, without their hashes.
    async fn list_tokens(&self) -> Result<Vec<TokenInfo>>;

    /// The user of that name, with their password's hash.
    async fn user(&self, name: String) -> Result<Option<joblog_core::UserAuth>>;

    /// Every user, by name, without their hashes.
    async fn list_users(&self) -> Result<Vec<joblog_core::UserInfo>>;

    /// The session whose cookie's SHA-256 is `hash`, with its user's role
    /// and state now; ended or not (the caller judges, by its timeouts).
    async fn session_by_hash(&self, hash: [u8; 32]) -> Result<Option<joblog_core::SessionAuth>>;

    /// The single sign-on begun with the `state` whose SHA-256 is `hash`.
    async fn pending_sign_in(&self, hash: [u8; 32]) -> Result<Option<joblog_core::PendingSignIn>>;

    /// The sessions of `user`, or everyone's, oldest first.
    async fn list_sessions(&self, user: Option<String>) -> Result<Vec<joblog_core::SessionInfo>>;

    /// Finished jobs kept in the store, by name and final state, with
    /// when the last of each finished (for per-name metrics). One pass over
    /// a covering index, not the log.
    async fn finished_by_name(&self) -> Result<Vec<FinishedByName>>;

    /// Per schedule, when its last job that succeeded, and its last that
    /// failed, timed out or was interrupted, finished (for per-schedule
    /// metrics). One pass over a covering index of scheduled jobs.
    async fn finished_by_schedule(&self) -> Result<Vec<FinishedBySchedule>>;

    /// The queued jobs counted by their `node_selector`, the empty one
    /// included (for the metrics of the queue's depth and of jobs no node
    /// can take).
    async fn queued_by_selector(&self) -> Result<Vec<(Labels, u64)>>;

    /// Whether the scheduler is paused, since when and by whom.
    async fn scheduler_state(&self) -> Result<SchedulerState>;

    /// The nodes that have run on this store (a node silent for a week is
    /// forgotten), by name, with the jobs each has running.
    async fn list_nodes(&self) -> Result<Vec<NodeInfo>>;

    /// The audit trail's entries `query` asks for, oldest first (see
    /// [`AuditQuery`] for which page). Each filter is an index search,
    /// paged by id.
    async fn list_audit(&self, query: AuditQuery) -> Result<Vec<AuditEntry>>;

    async fn get_schedule(&self, id: ScheduleId) -> Result<Option<Schedule>>;

    /// Up to `limit` schedules with an id above `after_id`, by id, each
    /// with its latest job.
    async fn list_schedules(&self, after_id: ScheduleId, limit: u32) -> Result<Vec<Schedule>>;

    /// The earliest next fire of any enabled schedule (one index entry).
    async fn next_fire(&self) -> Result<Option<Timestamp>>;

    /// The earliest time a queued job waits for (a retry's backoff), if
    /// any job waits.
    async fn next_run_after(&self) -> Result<Option<Timestamp>>;

    async fn get_rule(&self, id: RuleId) -> Result<Option<Rule>>;

    /// Notification rules by id, after `after_id`.
    async fn list_rules(&self, after_id: RuleId, limit: u32) -> Result<Vec<Rule>>;

    /// A rule's deliveries before `before_id`, newest first.
    async fn rule_deliveries(
        &self,
        rule: RuleId,
        before_id: DeliveryId,
        limit: u32,
    ) -> Result<Vec<Delivery>>;

    /// The notifications of a job's end, oldest first.
    async fn job_deliveries(&self, job: JobId) -> Result<Vec<Delivery>>;

    /// When the oldest notification not delivered yet was queued.
    async fn oldest_pending_delivery(&self) -> Result<Option<Timestamp>>;

    /// When the next delivery is due, if one waits.
    async fn next_delivery_due(&self) -> Result<Option<Timestamp>>;

    /// Cheap round trip proving the database answers.
    async fn ping(&self) -> Result<()>;

    /// A consistent copy of the whole store as one SQLite database file,
    /// made while the writer goes on committing (it is not held up for
    /// the copy's length). A store that other tools back up (PostgreSQL:
    /// `pg_dump`) answers [`StoreError::Unsupported`], saying so.
    async fn snapshot(&self) -> Result<Snapshot>;

    /// Short description for logs (`sqlite:/path/joblog.db`), without secrets.
    fn describe(&self) -> String;

    /// Whether several nodes may share this store (so recovery and
    /// heartbeats must be per node).
    fn is_shared(&self) -> bool {
        false
    }

    /// Starts reporting commits made by *other* nodes into `sink`, for live
    /// tails and idle dispatchers. A store no other node writes to has
    /// nothing to report. Must be called within a tokio runtime.
    fn start_listener(&self, sink: tokio::sync::broadcast::Sender<std::sync::Arc<Committed>>) {
        let _ = sink;
    }
}

/// Finished jobs of one name (`None`: unnamed) in one final state.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedByName {
    pub name: Option<String>,
    pub state: JobState,
    pub jobs: u64,
    /// When the last of them finished.
    pub last_finished: Timestamp,
}

/// The query both stores answer [`Store::finished_by_name`] with.
pub(crate) const FINISHED_BY_NAME: db::Statement = db::sql!(
    "SELECT name, state, count(*), max(finished_at) FROM jobs \
     WHERE state NOT IN ('queued', 'running') GROUP BY name, state"
);

/// The query both stores answer [`Store::queued_by_selector`] with.
pub(crate) const QUEUED_BY_SELECTOR: db::Statement = db::sql!(
    "SELECT node_selector, count(*) FROM jobs \
     WHERE state = 'queued' GROUP BY node_selector"
);

/// When the last job of one schedule in one final state finished.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedBySchedule {
    pub schedule_id: ScheduleId,
    pub state: JobState,
    pub last_finished: Timestamp,
}

/// The query both stores answer [`Store::finished_by_schedule`] with.
pub(crate) const FINISHED_BY_SCHEDULE: db::Statement = db::sql!(
    "SELECT schedule_id, state, max(finished_at) FROM jobs \
     WHERE schedule_id IS NOT NULL \
     AND state IN ('succeeded', 'failed', 'timed_out', 'interrupted') \
     GROUP BY schedule_id, state"
);

/// Message bytes after which a log page ends, whatever its `limit`.
pub const MAX_PAGE_BYTES: usize = 1 << 20;

/// Whether a page returned by [`Store::read_log`] stopped at one of its
/// bounds (so more records may follow) rather than at the end of the log.
pub fn page_is_full(records: &[Record], limit: u32) -> bool {
    records.len() >= limit as usize
        || records.iter().map(|r| r.message.len()).sum::<usize>() >= MAX_PAGE_BYTES
}

/// What retention keeps. A job is deleted only when it matches every
/// criterion given; queued and running jobs are never deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GroomPolicy {
    /// Delete jobs that finished before this instant (micros since epoch).
    pub finished_before: Option<i64>,
    /// Keep the newest N finished jobs of each name; an unnamed job counts
    /// with the unnamed jobs of the same command (argument list), so ad-hoc
    /// jobs do not push a nightly unnamed one out.
    pub keep_per_name: Option<u32>,
}
