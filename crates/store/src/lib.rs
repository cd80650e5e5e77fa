//! Where jobs and their logs are kept: one trait, one implementation per
//! database (SQLite embedded, PostgreSQL shared by several nodes).
//!
//! Invariants: the store knows nothing about HTTP or processes; a job's log
//! is append-only (rows are inserted, never UPDATEd, and only deleted by
//! retention); all writes go through the single [`StoreWriter`] of a store,
//! reads through [`Store`] on their own connections.

mod audit;
#[cfg(feature = "bench")]
pub mod baseline;
mod db;
mod error;
mod interrupt;
mod listing;
mod log_reads;
mod navigation;
mod outline;
pub mod postgres;
mod reads;
mod rows;
mod schedules;
#[cfg(feature = "bench")]
pub mod scratch;
pub mod sealed;
mod snapshot;
pub mod sqlite;
#[cfg(feature = "testing")]
pub mod testing;
mod writes;

use async_trait::async_trait;
use joblog_core::schedule::{Schedule, ScheduleId, ValidSchedule};
use joblog_core::{
    AuditEntry, AuditQuery, EarlierPage, Job, JobId, JobQuery, JobSpec, JobState, LogOutline,
    LogSearch, LogSummary, NewAudit, NewToken, NodeInfo, Record, ResultBlob, SearchHits, Stream,
    Timestamp, TokenInfo,
};

pub use error::StoreError;
pub use schedules::{Fired, ScheduleSaved, FIRE_BATCH};
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

    /// The API token whose SHA-256 is `hash`, expired or not. Tokens are
    /// found by their hash only: the store never sees a token's text.
    async fn token_by_hash(&self, hash: [u8; 32]) -> Result<Option<TokenInfo>>;

    /// Every API token, by name, without their hashes.
    async fn list_tokens(&self) -> Result<Vec<TokenInfo>>;

    /// Finished jobs kept in the store, by name and final state, with
    /// when the last of each finished (for per-name metrics). One pass over
    /// a covering index, not the log.
    async fn finished_by_name(&self) -> Result<Vec<FinishedByName>>;

    /// Per schedule, when its last job that succeeded, and its last that
    /// failed, timed out or was interrupted, finished (for per-schedule
    /// metrics). One pass over a covering index of scheduled jobs.
    async fn finished_by_schedule(&self) -> Result<Vec<FinishedBySchedule>>;

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

/// What one commit made durable, for followers of live logs and idle
/// dispatchers. Produced by the local writer and, with a shared store, by
/// the store's listener for commits of other nodes.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Committed {
    /// Jobs whose log grew, with their last committed seq.
    #[serde(default, rename = "a", skip_serializing_if = "Vec::is_empty")]
    pub appended: Vec<(JobId, u64)>,
    /// Jobs that reached a final state in this commit.
    #[serde(default, rename = "f", skip_serializing_if = "Vec::is_empty")]
    pub finished: Vec<JobId>,
    /// Jobs claimed by a node in this commit (they started running).
    /// Added after the others: a peer that predates it ignores the key,
    /// and an empty list is not sent at all.
    #[serde(default, rename = "s", skip_serializing_if = "Vec::is_empty")]
    pub started: Vec<JobId>,
    /// Jobs queued by this commit.
    #[serde(default, rename = "q", skip_serializing_if = "is_zero")]
    pub queued: u32,
    /// Running jobs whose cancellation was asked on another node.
    #[serde(default, rename = "c", skip_serializing_if = "Vec::is_empty")]
    pub cancel: Vec<JobId>,
    /// Anything may have changed (commits were missed, e.g. while the
    /// listener reconnected): re-read whatever is followed.
    #[serde(default, rename = "r", skip_serializing_if = "std::ops::Not::not")]
    pub reset: bool,
    /// An API token was revoked: whoever holds a stream open on a token
    /// checks it again. Added after the others (a peer that predates it
    /// ignores the key).
    #[serde(default, rename = "t", skip_serializing_if = "std::ops::Not::not")]
    pub tokens_revoked: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Committed {
    /// Notes what a committed op changed.
    pub fn add(&mut self, op: &WriteOp, outcome: &Outcome) {
        match (op, outcome) {
            (WriteOp::Append { job, records, .. }, _) => {
                if let Some(last) = records.last() {
                    match self.appended.iter_mut().find(|(j, _)| j == job) {
                        Some(slot) => slot.1 = last.seq,
                        None => self.appended.push((*job, last.seq)),
                    }
                }
            }
            (WriteOp::InsertJob { .. }, _) => self.queued += 1,
            (WriteOp::FireDue { .. }, Outcome::Fired(fired)) => {
                self.queued += fired.jobs.len() as u32
            }
            (WriteOp::FireDue { .. }, _) => {}
            // Each node's scheduler reads the schedules when it wakes.
            (WriteOp::SaveSchedule { .. } | WriteOp::DeleteSchedule { .. }, _) => {}
            (WriteOp::Finish { job, .. }, _) => self.finished.push(*job),
            (WriteOp::CancelQueued { job }, Outcome::MaybeJob(Some(_))) => self.finished.push(*job),
            (WriteOp::CancelQueued { .. }, _) => {}
            (WriteOp::RequestCancel { job }, _) => self.cancel.push(*job),
            (WriteOp::RevokeToken { .. }, Outcome::Count(n)) => self.tokens_revoked |= *n > 0,
            // A job list shows a job start; the job's own followers learn
            // it from its records.
            (WriteOp::ClaimNext { .. }, Outcome::Claimed(Some(job))) => self.started.push(job.id),
            // Jobs of a lapsed or restarted node were ended in bulk.
            (WriteOp::Interrupt { .. } | WriteOp::Heartbeat { .. }, Outcome::Interrupted(jobs)) => {
                self.reset |= !jobs.is_empty()
            }
            (WriteOp::Interrupt { .. } | WriteOp::Heartbeat { .. }, _) => {}
            // Nobody follows nodes: `joblog nodes` reads them when asked.
            (WriteOp::RegisterNode { .. } | WriteOp::NodeStopped { .. }, _) => {}
            // Nobody follows a claim that found nothing, deletions (only
            // finished jobs are deleted) or new tokens (each request looks
            // its token up).
            // The audit trail is read when asked (`GET /api/v1/audit`).
            // Sealing changes how a log is kept, not what it says.
            (
                WriteOp::SealSlice(_)
                | WriteOp::MarkSealed { .. }
                | WriteOp::ClaimNext { .. }
                | WriteOp::Audit(_)
                | WriteOp::DeleteAudit { .. }
                | WriteOp::DeleteLogChunk { .. }
                | WriteOp::DeleteJob { .. }
                | WriteOp::DropLogPartitions { .. }
                | WriteOp::CreateToken(_)
                | WriteOp::RevokeToken { .. }
                | WriteOp::TouchToken { .. },
                _,
            ) => {}
        }
    }

    /// Whether a follower of `job` should look again.
    pub fn touches(&self, job: JobId) -> bool {
        self.touches_after(job, 0)
    }

    /// Whether a follower of `job` that has read up to seq `after` should
    /// look again: the job ended, or records past `after` came. (A client
    /// waiting only for the end passes a seq beyond any log and is not
    /// woken by every commit of the job.)
    pub fn touches_after(&self, job: JobId, after: u64) -> bool {
        self.reset
            || self.finished.contains(&job)
            || self.appended.iter().any(|(j, s)| *j == job && *s > after)
    }

    pub fn is_empty(&self) -> bool {
        self == &Committed::default()
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

/// One change to the store. The writer applies a batch of them in one
/// transaction, in order.
#[derive(Debug)]
pub enum WriteOp {
    /// Adds a queued job. → [`Outcome::Job`]
    InsertJob { name: Option<String>, spec: JobSpec },
    /// Takes the oldest queued job for `node` that may start: not
    /// waiting for a retry's backoff, and not held back by its
    /// concurrency key (as many of that key's jobs running, on every
    /// node, as its `max_concurrent`); marks it running. →
    /// [`Outcome::Claimed`]
    ClaimNext { node: String },
    /// Makes the jobs of the schedules due at `now` (at most
    /// [`FIRE_BATCH`] schedules), each fire exactly once, and moves each
    /// schedule's next fire past `now`. → [`Outcome::Fired`]
    FireDue { now: Timestamp },
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
    /// secrets named `secret_names` (names only): its start time, a fresh
    /// heartbeat, no longer stopped. → [`Outcome::Done`]
    RegisterNode {
        node: String,
        version: String,
        secret_names: Vec<String>,
    },
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
    /// Appends entries to the audit trail, numbered in commit order (on
    /// PostgreSQL across nodes too), each text field cut to
    /// [`joblog_core::MAX_AUDIT_FIELD`] bytes. Job retention never
    /// deletes them, nor does deleting their job. → [`Outcome::Done`]
    Audit(Vec<NewAudit>),
    /// Audit retention: of the `max` oldest entries (by id), deletes those
    /// from before `before`. → [`Outcome::Count`]: how many went (fewer
    /// than `max`: nothing older is left at the head of the trail).
    DeleteAudit { before: Timestamp, max: u32 },
}

impl WriteOp {
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
    Count(u64),
    /// Jobs ended as `interrupted`, with the node each depended on.
    Interrupted(Vec<(JobId, Option<String>)>),
    /// Jobs deleted with their log partitions, and how many records went.
    Groomed {
        jobs: Vec<JobId>,
        records: u64,
    },
}

/// The single writer of a store. Blocking: called from the pipeline's
/// writer thread only.
pub trait StoreWriter: Send {
    /// Applies `ops` in one transaction and returns one outcome per op, or
    /// an error after which nothing of the batch was applied. After a
    /// transient error the caller retries with the same ops; a store whose
    /// connection can drop mid-commit uses that to find out whether the
    /// failed attempt was in fact committed, so nothing is applied twice.
    fn apply(&mut self, ops: &[WriteOp]) -> Result<Vec<Outcome>>;
}

/// The kind of store a database URL names, before anything is opened:
/// what a server must lock (a SQLite file) or may share (PostgreSQL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Database<'a> {
    /// The SQLite file, as the URL writes it (relative or absolute).
    Sqlite(&'a std::path::Path),
    Postgres,
}

impl<'a> Database<'a> {
    /// `postgres://user@host/db` (or `postgresql://`),
    /// `sqlite:///path/joblog.db`, `sqlite://relative.db` or a bare path.
    pub fn of(url: &'a str) -> Result<Database<'a>> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Database::Postgres);
        }
        let path = match url.split_once("://") {
            Some(("sqlite", path)) => path,
            Some((scheme, _)) => {
                return Err(StoreError::Config(format!(
                "database URL scheme {scheme:?} is not supported (use sqlite://PATH or postgres://…)"
            )))
            }
            None => url,
        };
        if path.is_empty() {
            return Err(StoreError::Config(format!(
                "database URL {url:?} names no file"
            )));
        }
        Ok(Database::Sqlite(std::path::Path::new(path)))
    }
}

/// Opens the store a database URL names (see [`Database::of`]).
/// PostgreSQL must be reachable: a node does not start on a database it
/// cannot migrate.
pub fn open(url: &str, options: &StoreOptions) -> Result<std::sync::Arc<dyn Store>> {
    Ok(match Database::of(url)? {
        Database::Postgres => std::sync::Arc::new(postgres::PgStore::open(url, options)?),
        Database::Sqlite(path) => std::sync::Arc::new(sqlite::SqliteStore::open(path, options)?),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncMode {
    /// Survives a crash of the process (WAL, synchronous=NORMAL).
    #[default]
    Normal,
    /// Survives power loss (synchronous=FULL).
    Full,
}

impl SyncMode {
    pub fn parse(s: &str) -> Option<SyncMode> {
        match s {
            "normal" => Some(SyncMode::Normal),
            "full" => Some(SyncMode::Full),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    pub sync: SyncMode,
    /// Read connections: the most reads at once, each connection kept
    /// open between reads (0 = the store's default).
    pub readers: usize,
    /// The node this store is opened by (PostgreSQL records it with the
    /// jobs it submits and the batches it commits).
    pub node: String,
    /// Told how long each read waited for a connection of the read pool
    /// (the server's `joblog_store_read_wait_seconds`).
    pub read_wait: Option<ReadWait>,
}

/// Observes the wait of each read for a pooled connection. The store
/// only measures; what is done with the figure (a metric) is the
/// caller's.
#[derive(Clone)]
pub struct ReadWait(pub std::sync::Arc<dyn Fn(std::time::Duration) + Send + Sync>);

impl ReadWait {
    pub(crate) fn observe(this: &Option<ReadWait>, since: std::time::Instant) {
        if let Some(w) = this {
            (w.0)(since.elapsed());
        }
    }
}

impl std::fmt::Debug for ReadWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadWait(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_touches_followers_behind_it_or_of_an_ended_job() {
        let c = Committed {
            appended: vec![(7, 120)],
            finished: vec![9],
            ..Committed::default()
        };
        assert!(c.touches(7));
        assert!(c.touches_after(7, 119));
        assert!(!c.touches_after(7, 120), "nothing past what was read");
        assert!(!c.touches_after(8, 0), "another job");
        assert!(c.touches_after(9, u64::MAX), "the job ended");
        let reset = Committed {
            reset: true,
            ..Committed::default()
        };
        assert!(reset.touches_after(1, u64::MAX));
    }

    fn running(id: JobId) -> Job {
        Job {
            id,
            name: None,
            state: JobState::Running,
            exit_code: None,
            command: vec!["true".into()],
            command_truncated: false,
            env_truncated: false,
            run_after: None,
            node: Some("a".into()),
            created_at: Timestamp(0),
            started_at: Some(Timestamp(1)),
            finished_at: None,
            duration_ms: None,
            log: LogSummary::default(),
            result: None,
            given: joblog_core::Given::default(),
            spec: JobSpec::default(),
        }
    }

    #[test]
    fn a_claim_that_found_a_job_is_a_start() {
        let claim = WriteOp::ClaimNext { node: "a".into() };
        let mut c = Committed::default();
        c.add(&claim, &Outcome::Claimed(None));
        assert!(c.is_empty(), "nothing was claimed: {c:?}");
        c.add(&claim, &Outcome::Claimed(Some(running(4))));
        c.add(&claim, &Outcome::Claimed(Some(running(5))));
        assert_eq!(c.started, [4, 5]);
        assert!(!c.touches(4), "a tail of job 4 learns it from its records");
    }

    /// `Committed` crosses nodes in NOTIFY payloads, so nodes of two
    /// versions read each other: `s` is left out when empty, and a peer
    /// that has no `started` (below: the struct as it was) reads a notice
    /// that has it.
    #[test]
    fn started_crosses_nodes_and_older_peers_still_read_it() {
        #[derive(Debug, PartialEq, serde::Deserialize)]
        struct Before {
            #[serde(default, rename = "a")]
            appended: Vec<(JobId, u64)>,
            #[serde(default, rename = "f")]
            finished: Vec<JobId>,
            #[serde(default, rename = "q")]
            queued: u32,
        }
        let c = Committed {
            started: vec![3, 8],
            finished: vec![2],
            queued: 1,
            ..Committed::default()
        };
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, r#"{"f":[2],"s":[3,8],"q":1}"#);
        assert_eq!(serde_json::from_str::<Committed>(&json).unwrap(), c);
        let old: Before = serde_json::from_str(&json).unwrap();
        assert_eq!(
            old,
            Before {
                appended: vec![],
                finished: vec![2],
                queued: 1
            }
        );
        // And what an older peer sends reads as no start.
        let from_old: Committed = serde_json::from_str(r#"{"q":2}"#).unwrap();
        assert!(from_old.started.is_empty());
        let none = Committed {
            queued: 1,
            ..Committed::default()
        };
        assert_eq!(serde_json::to_string(&none).unwrap(), r#"{"q":1}"#);
    }

    #[test]
    fn a_database_url_names_its_kind_and_a_sqlite_file() {
        use std::path::Path;
        assert_eq!(
            Database::of("postgresql://u@h/db").unwrap(),
            Database::Postgres
        );
        assert_eq!(
            Database::of("sqlite:///var/lib/joblog.db").unwrap(),
            Database::Sqlite(Path::new("/var/lib/joblog.db"))
        );
        assert_eq!(
            Database::of("sqlite://rel.db").unwrap(),
            Database::Sqlite(Path::new("rel.db"))
        );
        assert_eq!(
            Database::of("x/j.db").unwrap(),
            Database::Sqlite(Path::new("x/j.db"))
        );
        let e = Database::of("mysql://h/db").unwrap_err().to_string();
        assert!(e.contains("\"mysql\""), "{e}");
        assert!(Database::of("sqlite://").is_err());
    }
}
