//! The stores through their public surface: `WriteOp` batches applied by a
//! store's writer, and the async read methods. One suite for every backend:
//! each behaviour is an `async fn(TestDatabase)` that
//! `joblog_store::backend_tests!` runs once against a SQLite file
//! (`sqlite::…`) and once against a fresh PostgreSQL database (`postgres::…`,
//! skipped without `JOBLOG_TEST_POSTGRES_URL`). What only SQLite has is
//! tested after it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use joblog_core::{
    result_blob, Job, JobId, JobQuery, JobSpec, JobState, LogSummary, NameFilter, NewToken, Record,
    ResultBlob, Role, Stream, Timestamp,
};
use joblog_store::sqlite::SqliteStore;
use joblog_store::testing::TestDatabase;
use joblog_store::{GroomPolicy, Outcome, Store, StoreError, StoreOptions, StoreWriter, WriteOp};
use serde_json::{json, Value};

#[path = "store/accounts.rs"]
mod accounts;
#[path = "store/audit.rs"]
mod audit;
#[path = "store/controls.rs"]
mod controls;
#[path = "store/folders.rs"]
mod folders;
#[path = "store/listing.rs"]
mod listing;
#[path = "store/navigation.rs"]
mod navigation;
#[path = "store/notifications.rs"]
mod notifications;
#[path = "store/results.rs"]
mod results;
#[path = "store/schedules.rs"]
mod schedules;
#[path = "store/sealed.rs"]
mod sealed;
#[path = "store/search.rs"]
mod search;
#[path = "store/snapshot.rs"]
mod snapshot;
#[path = "store/tls.rs"]
mod tls;
#[path = "store/triggers.rs"]
mod triggers;

joblog_store::backend_tests! {
    reopening_keeps_the_data,
    claim_next_takes_the_oldest_queued_job,
    appended_records_are_read_back_in_order_with_paging_and_stream_filter,
    finish_stores_state_exit_code_times_and_result,
    cancel_queued_cancels_only_queued_jobs,
    interrupt_marks_running_jobs_and_leaves_the_others,
    list_jobs_is_newest_first_with_paging_and_filters,
    groom_candidates_match_every_criterion_given,
    groom_keeps_unnamed_jobs_per_command,
    delete_log_chunk_and_delete_job_remove_what_they_say,
    a_failing_batch_applies_nothing,
    a_job_is_finished_once,
    tokens_are_kept_by_hash_and_listed_without_it,
    nodes_are_remembered_with_their_heartbeats_stops_and_running_jobs,
}

/// A store on a test database, with its one writer. Fields drop in order:
/// the store's connections close before the database goes.
struct TestStore {
    store: Arc<dyn Store>,
    writer: Box<dyn StoreWriter>,
    db: TestDatabase,
}

/// The store `db` names, opened the way the server opens it (by URL).
fn open_store(db: TestDatabase) -> TestStore {
    let store = joblog_store::open(db.url(), &StoreOptions::default()).unwrap();
    let writer = store.open_writer().unwrap();
    TestStore { store, writer, db }
}

/// The store at `url`, keeping `db` (a database its test has changed
/// behind the store's back).
fn open_store_at(db: TestDatabase, url: &str) -> TestStore {
    let store = joblog_store::open(url, &StoreOptions::default()).unwrap();
    let writer = store.open_writer().unwrap();
    TestStore { store, writer, db }
}

/// Another node's view of the same database: its own store and writer.
fn open_node(url: &str, node: &str) -> (Arc<dyn Store>, Box<dyn StoreWriter>) {
    let options = StoreOptions {
        node: node.into(),
        ..StoreOptions::default()
    };
    let store = joblog_store::open(url, &options).unwrap();
    let writer = store.open_writer().unwrap();
    (store, writer)
}

impl TestStore {
    fn apply(&mut self, ops: Vec<WriteOp>) -> Vec<Outcome> {
        let n = ops.len();
        let outcomes = self.writer.apply(&ops).unwrap();
        assert_eq!(outcomes.len(), n, "one outcome per op");
        outcomes
    }

    fn apply_one(&mut self, op: WriteOp) -> Outcome {
        self.apply(vec![op]).pop().unwrap()
    }

    fn insert(&mut self, name: Option<&str>) -> Job {
        match self.apply_one(insert_op(name)) {
            Outcome::Job(job) => job,
            other => panic!("InsertJob gave {other:?}"),
        }
    }

    fn claim(&mut self, node: &str) -> Option<Job> {
        match self.apply_one(WriteOp::ClaimNext {
            labels: Default::default(),
            node: node.into(),
            at: Timestamp::now(),
        }) {
            Outcome::Claimed(job) => job,
            other => panic!("ClaimNext gave {other:?}"),
        }
    }

    fn finish(&mut self, job: JobId, state: JobState, exit_code: Option<i32>) -> Job {
        self.finish_with(job, state, exit_code, None, LogSummary::default())
    }

    fn finish_with(
        &mut self,
        job: JobId,
        state: JobState,
        exit_code: Option<i32>,
        result: Option<Vec<u8>>,
        summary: LogSummary,
    ) -> Job {
        match self.apply_one(WriteOp::Finish {
            job,
            state,
            exit_code,
            result: result.map(|raw| ResultBlob::encode(&raw)),
            summary,
            at: Timestamp::now(),
        }) {
            Outcome::MaybeJob(Some(job)) => job,
            other => panic!("Finish gave {other:?}"),
        }
    }

    /// The jobs an `Interrupt` or `Heartbeat` ended, with their nodes.
    fn interrupted(&mut self, op: WriteOp) -> Vec<(JobId, Option<String>)> {
        match self.apply_one(op) {
            Outcome::Interrupted(jobs) => jobs,
            other => panic!("expected interrupted jobs, got {other:?}"),
        }
    }

    fn count(&mut self, op: WriteOp) -> u64 {
        match self.apply_one(op) {
            Outcome::Count(n) => n,
            other => panic!("expected a count, got {other:?}"),
        }
    }

    /// Inserts, claims and finishes a job named `name` (the queue must be
    /// empty so that the claim takes this job).
    fn finished_job(&mut self, name: Option<&str>, state: JobState) -> Job {
        let job = self.insert(name);
        let claimed = self.claim("node-a").expect("a queued job");
        assert_eq!(claimed.id, job.id);
        self.finish(job.id, state, Some(0))
    }

    async fn job(&self, id: JobId) -> Job {
        self.store.get_job(id).await.unwrap().expect("job exists")
    }

    async fn list(&self, state: Option<JobState>, name: Option<&str>, limit: u32) -> Vec<JobId> {
        self.list_before(state, name, limit, None).await
    }

    async fn list_before(
        &self,
        state: Option<JobState>,
        name: Option<&str>,
        limit: u32,
        before_id: Option<JobId>,
    ) -> Vec<JobId> {
        self.query(JobQuery {
            states: state.into_iter().collect(),
            name: name.map(|n| NameFilter::Exact(n.to_owned())),
            limit,
            before_id,
            ..JobQuery::default()
        })
        .await
    }

    /// The ids of a listing's page, in the order the store gives them.
    async fn query(&self, q: JobQuery) -> Vec<JobId> {
        let jobs = self.store.list_jobs(q).await.unwrap();
        jobs.iter().map(|j| j.id).collect()
    }

    async fn log(
        &self,
        id: JobId,
        after: u64,
        limit: u32,
        streams: Option<Vec<Stream>>,
    ) -> Vec<Record> {
        self.store
            .read_log(id, after, limit, streams)
            .await
            .unwrap()
    }

    async fn groom(&self, finished_before: Option<i64>, keep_per_name: Option<u32>) -> Vec<JobId> {
        self.store
            .groom_candidates(GroomPolicy {
                finished_before,
                keep_per_name,
            })
            .await
            .unwrap()
    }
}

/// Undoes the last [`UNDONE_MIGRATIONS`] migrations (segments' text indexes; saved jobs, whose table goes below; folders; users and sessions; drain and pause; placement; triggers; notifications; the
/// nodes' secret names; the per-schedule metrics' index; sealed logs; schedules, and the
/// columns jobs got for them), the same on both stores: for tests that
/// take a database back to an older version.
const UNDO_LATEST: &str = "ALTER TABLE segments DROP COLUMN grams; \
     DROP INDEX jobs_folder; ALTER TABLE jobs DROP COLUMN folder; \
     ALTER TABLE tokens DROP COLUMN folders; \
     DROP TABLE sign_ins; DROP TABLE sessions; DROP TABLE users; DROP TABLE scheduler_state; ALTER TABLE nodes DROP COLUMN drain_at; \
     ALTER TABLE nodes DROP COLUMN presumed_lapsed; \
     DROP INDEX IF EXISTS jobs_queued_selector; \
     ALTER TABLE jobs DROP COLUMN node_selector; ALTER TABLE nodes DROP COLUMN labels; \
     DROP TABLE deliveries; DROP TABLE notification_rules; \
     ALTER TABLE nodes DROP COLUMN secret_names; \
     DROP INDEX jobs_schedule_state; DROP INDEX jobs_unsealed; ALTER TABLE jobs DROP COLUMN sealed_at; \
     DROP TABLE segments; DROP INDEX jobs_fire; DROP INDEX jobs_schedule; \
     DROP INDEX jobs_schedule_active; DROP INDEX jobs_running_key; DROP INDEX jobs_run_after; \
     ALTER TABLE jobs DROP COLUMN schedule_id; ALTER TABLE jobs DROP COLUMN fire_time; \
     ALTER TABLE jobs DROP COLUMN attempt; ALTER TABLE jobs DROP COLUMN concurrency_key; \
     ALTER TABLE jobs DROP COLUMN max_concurrent; ALTER TABLE jobs DROP COLUMN run_after; \
     DROP TABLE schedules;";
/// How many migrations [`UNDO_LATEST`] undoes.
const UNDONE_MIGRATIONS: i64 = 13;

fn spec(args: &[&str]) -> JobSpec {
    JobSpec {
        command: args.iter().map(|s| s.to_string()).collect(),
        ..JobSpec::default()
    }
}

fn insert_op(name: Option<&str>) -> WriteOp {
    WriteOp::InsertJob {
        name: name.map(str::to_owned),
        spec: Box::new(spec(&["sh", "-c", "echo hi"])),
    }
}

fn record(seq: u64, stream: Stream, message: &str) -> Record {
    Record {
        seq,
        ts: Timestamp(1_700_000_000_000_000 + seq as i64),
        stream,
        message: message.to_owned(),
        fields: None,
    }
}

fn with_fields(mut r: Record, fields: Value) -> Record {
    let Value::Object(map) = fields else {
        panic!("fields must be an object")
    };
    r.fields = Some(map);
    r
}

/// The counters of a log made of `records`.
fn summary_of(records: &[Record]) -> LogSummary {
    let mut s = LogSummary::default();
    for r in records {
        s.records += 1;
        s.bytes += r.message.len() as u64;
        s.streams.add(r.stream, 1);
    }
    s
}

fn append(job: JobId, records: &[Record], all_so_far: &[Record]) -> WriteOp {
    WriteOp::Append {
        job,
        records: records.to_vec(),
        summary: summary_of(all_so_far),
    }
}

fn seqs(records: &[Record]) -> Vec<u64> {
    records.iter().map(|r| r.seq).collect()
}

async fn reopening_keeps_the_data(db: TestDatabase) {
    let url = db.url().to_owned();
    write_then_reopen(open_store(db), &url).await;
}

/// Stores a job with a record, closes the store (writer first, as the server
/// does) and opens `url` again through `joblog_store::open`, as a restarted
/// server would: the schema already there must be taken as it is and every
/// row must still be readable. Returns the database, for further checks.
async fn write_then_reopen(mut t: TestStore, url: &str) -> TestDatabase {
    let job = t.insert(Some("kept"));
    let recs = [record(1, Stream::Output, "survives a reopen")];
    t.apply(vec![append(job.id, &recs, &recs)]);
    let TestStore { store, writer, db } = t;
    drop(writer);
    drop(store);

    let store = joblog_store::open(url, &StoreOptions::default()).unwrap();
    let again = store.get_job(job.id).await.unwrap().unwrap();
    assert_eq!(again.name.as_deref(), Some("kept"));
    assert_eq!(again.spec.command, ["sh", "-c", "echo hi"]);
    assert_eq!(again.log.records, 1);
    let log = store.read_log(job.id, 0, 10, None).await.unwrap();
    assert_eq!(log, recs);
    db
}

async fn claim_next_takes_the_oldest_queued_job(db: TestDatabase) {
    let mut t = open_store(db);
    assert_eq!(t.claim("node-a"), None, "empty queue");

    let a = t.insert(Some("a"));
    let b = t.insert(Some("b"));
    let c = t.insert(None);
    assert!(a.id < b.id && b.id < c.id, "ids increase");
    for j in [&a, &b, &c] {
        assert_eq!(j.state, JobState::Queued);
        assert_eq!(
            (j.started_at, j.finished_at, j.node.as_deref()),
            (None, None, None)
        );
        assert_eq!(j.exit_code, None);
        assert_eq!(j.log, LogSummary::default());
        assert_eq!(j.result, None);
    }
    // A cancelled job is no longer in the queue.
    assert!(matches!(
        t.apply_one(WriteOp::CancelQueued { job: a.id }),
        Outcome::MaybeJob(Some(_))
    ));

    let first = t.claim("node-a").expect("b is queued");
    assert_eq!(first.id, b.id);
    assert_eq!(first.state, JobState::Running);
    assert_eq!(first.node.as_deref(), Some("node-a"));
    let started = first.started_at.expect("started_at set by the claim");
    assert!(started >= b.created_at);
    assert_eq!(t.job(b.id).await, first, "the claim is stored");

    let second = t.claim("node-b").expect("c is queued");
    assert_eq!((second.id, second.node.as_deref()), (c.id, Some("node-b")));
    assert_eq!(t.claim("node-a"), None, "queue drained");
    assert_eq!(t.job(a.id).await.state, JobState::Cancelled);
}

async fn appended_records_are_read_back_in_order_with_paging_and_stream_filter(db: TestDatabase) {
    let mut t = open_store(db);
    let j1 = t.insert(Some("one")).id;
    let j2 = t.insert(Some("two")).id;
    let log1 = vec![
        record(1, Stream::Output, "j1 line 1"),
        record(2, Stream::Error, "j1 oops"),
        with_fields(
            record(3, Stream::Warning, "disk 91% full"),
            json!({"mount": "/var", "pct": 91}),
        ),
        record(4, Stream::Output, "j1 line 4 é ✓"),
        record(5, Stream::Progress, "copying"),
        record(6, Stream::Output, "j1 line 6"),
        record(7, Stream::Error, "j1 second error"),
    ];
    let log2: Vec<Record> = (1..=5)
        .map(|i| record(i, Stream::Output, &format!("j2 line {i}")))
        .collect();

    // Two jobs interleaved over several batches, several Appends per job in a batch.
    t.apply(vec![
        append(j1, &log1[..2], &log1[..2]),
        append(j2, &log2[..1], &log2[..1]),
        append(j1, &log1[2..3], &log1[..3]),
    ]);
    t.apply(vec![append(j2, &log2[1..4], &log2[..4])]);
    t.apply(vec![
        append(j1, &log1[3..], &log1),
        append(j2, &log2[4..], &log2),
    ]);

    assert_eq!(t.log(j1, 0, 100, None).await, log1);
    assert_eq!(t.log(j2, 0, 100, None).await, log2);

    // Paging: after_seq is exclusive, limit bounds the page.
    assert_eq!(seqs(&t.log(j1, 2, 3, None).await), [3, 4, 5]);
    assert_eq!(seqs(&t.log(j1, 5, 3, None).await), [6, 7]);
    assert!(t.log(j1, 7, 3, None).await.is_empty());
    let mut paged = Vec::new();
    let mut after = 0;
    loop {
        let page = t.log(j1, after, 2, None).await;
        let Some(last) = page.last() else { break };
        after = last.seq;
        paged.extend(page);
    }
    assert_eq!(paged, log1);

    // Stream filter, alone and combined with paging.
    let errors = t.log(j1, 0, 100, Some(vec![Stream::Error])).await;
    assert_eq!(seqs(&errors), [2, 7]);
    assert!(errors.iter().all(|r| r.stream == Stream::Error));
    let some = t
        .log(j1, 0, 100, Some(vec![Stream::Warning, Stream::Progress]))
        .await;
    assert_eq!(seqs(&some), [3, 5]);
    assert_eq!(
        seqs(
            &t.log(j1, 2, 1, Some(vec![Stream::Output, Stream::Error]))
                .await
        ),
        [4]
    );
    assert!(t
        .log(j2, 0, 100, Some(vec![Stream::Error]))
        .await
        .is_empty());
    assert!(
        t.log(j1 + j2 + 100, 0, 100, None).await.is_empty(),
        "unknown job"
    );

    // The counters of the last Append are stored with the job.
    let job1 = t.job(j1).await;
    assert_eq!(job1.log, summary_of(&log1));
    assert_eq!(job1.log.streams.get(Stream::Error), 2);
    assert_eq!(job1.log.streams.get(Stream::Output), 3);
    assert_eq!(t.job(j2).await.log, summary_of(&log2));
}

async fn finish_stores_state_exit_code_times_and_result(db: TestDatabase) {
    let mut t = open_store(db);
    let job = t.insert(Some("res"));
    let running = t.claim("node-a").unwrap();
    let recs = vec![
        record(1, Stream::Output, "hello"),
        record(2, Stream::Error, "bye"),
    ];
    t.apply(vec![append(job.id, &recs, &recs)]);
    let mut summary = summary_of(&recs);
    summary.truncated = true;
    let body = br#"{"rows":[1,2,3],"ok":true}"#.to_vec();

    let done = t.finish_with(
        job.id,
        JobState::Failed,
        Some(3),
        Some(body.clone()),
        summary,
    );
    assert_eq!(done.state, JobState::Failed);
    assert_eq!(done.exit_code, Some(3));
    assert_eq!(done.started_at, running.started_at);
    let (started, finished) = (done.started_at.unwrap(), done.finished_at.unwrap());
    assert!(finished >= started, "{finished:?} < {started:?}");
    assert_eq!(done.duration_ms, Some(started.millis_until(finished)));
    assert_eq!(done.result.map(|r| r.bytes), Some(body.len() as u64));
    assert_eq!(done.log, summary);
    assert_eq!(t.job(job.id).await, done);
    let stored = t.store.read_result(job.id).await.unwrap().unwrap();
    assert_eq!(result_blob::decode(&stored).unwrap(), body);

    // A job finished without a result has none.
    t.insert(None);
    let other = t.claim("node-a").unwrap();
    let plain = t.finish(other.id, JobState::Succeeded, Some(0));
    assert_eq!(
        (plain.state, plain.exit_code, plain.result),
        (JobState::Succeeded, Some(0), None)
    );
    assert_eq!(t.store.read_result(other.id).await.unwrap(), None);
}

async fn cancel_queued_cancels_only_queued_jobs(db: TestDatabase) {
    let mut t = open_store(db);
    let running = t.insert(Some("r"));
    assert_eq!(t.claim("node-a").unwrap().id, running.id);
    let done = t.finished_job(Some("d"), JobState::Succeeded);
    let queued = t.insert(Some("q"));

    let cancelled = match t.apply_one(WriteOp::CancelQueued { job: queued.id }) {
        Outcome::MaybeJob(Some(j)) => j,
        other => panic!("{other:?}"),
    };
    assert_eq!(cancelled.id, queued.id);
    assert_eq!(cancelled.state, JobState::Cancelled);
    assert!(cancelled.finished_at.is_some());
    assert_eq!(t.job(queued.id).await.state, JobState::Cancelled);

    for id in [running.id, done.id, queued.id, queued.id + 1000] {
        assert_eq!(
            t.apply_one(WriteOp::CancelQueued { job: id }),
            Outcome::MaybeJob(None),
            "job {id} is not queued"
        );
    }
    assert_eq!(t.job(running.id).await.state, JobState::Running);
    assert_eq!(t.job(done.id).await.state, JobState::Succeeded);
}

async fn interrupt_marks_running_jobs_and_leaves_the_others(db: TestDatabase) {
    let mut t = open_store(db);
    let done = t.finished_job(Some("done"), JobState::Succeeded);
    let on_a = t.insert(None);
    assert_eq!(t.claim("node-a").unwrap().id, on_a.id);
    let written = [
        record(1, Stream::Output, "working"),
        record(2, Stream::Warning, "careful"),
    ];
    t.apply(vec![append(on_a.id, &written, &written)]);
    let on_b = t.insert(None);
    assert_eq!(t.claim("node-b").unwrap().id, on_b.id);
    let queued = t.insert(None);

    // Only the running jobs of the node named.
    let ended = t.interrupted(WriteOp::Interrupt {
        node: Some("node-a".into()),
        include_queued: false,
    });
    assert_eq!(ended, vec![(on_a.id, Some("node-a".to_string()))]);
    let a = t.job(on_a.id).await;
    assert_eq!(a.state, JobState::Interrupted);
    assert!(a.finished_at.unwrap() >= a.started_at.unwrap());
    assert_eq!(t.job(on_b.id).await.state, JobState::Running);
    // Its log ends with a record saying why, counted with the others.
    let log = t.log(on_a.id, 0, 10, None).await;
    assert_eq!(seqs(&log), [1, 2, 3]);
    let why = &log[2];
    assert_eq!(why.stream, Stream::Error);
    assert!(why.message.starts_with("interrupted: "), "{}", why.message);
    assert!(why.message.contains("node-a"), "{}", why.message);
    let fields = why.fields.as_ref().unwrap();
    assert_eq!(fields["reason"], "node_restarted");
    assert_eq!(fields["node"], "node-a");
    assert_eq!(a.log.records, 3);
    assert_eq!(a.log.streams.get(Stream::Error), 1);
    assert_eq!(a.log.streams.get(Stream::Warning), 1);
    assert_eq!(
        a.log.bytes,
        written.iter().map(|r| r.message.len() as u64).sum::<u64>() + why.message.len() as u64
    );

    // Every node's running jobs; queued and finished ones stay as they are.
    let ended = t.interrupted(WriteOp::Interrupt {
        node: None,
        include_queued: false,
    });
    assert_eq!(ended, vec![(on_b.id, Some("node-b".to_string()))]);
    assert_eq!(seqs(&t.log(on_b.id, 0, 10, None).await), [1]);
    assert_eq!(t.job(on_b.id).await.state, JobState::Interrupted);
    assert_eq!(t.job(queued.id).await.state, JobState::Queued);
    assert_eq!(t.job(done.id).await, done);
    assert_eq!(t.job(on_a.id).await, a, "already interrupted: untouched");

    let ended = t.interrupted(WriteOp::Interrupt {
        node: None,
        include_queued: true,
    });
    assert_eq!(ended, vec![(queued.id, None)]);
    assert_eq!(t.job(queued.id).await.state, JobState::Interrupted);
    assert_eq!(t.job(done.id).await.state, JobState::Succeeded);
}

async fn nodes_are_remembered_with_their_heartbeats_stops_and_running_jobs(db: TestDatabase) {
    let mut t = open_store(db);
    // (PostgreSQL also lists the test writer's own node, which marks its
    // batches there.)
    let nodes_named = |t: &TestStore| {
        let store = t.store.clone();
        async move {
            let mut nodes = store.list_nodes().await.unwrap();
            nodes.retain(|n| n.name.starts_with("node-"));
            nodes
        }
    };
    assert!(nodes_named(&t).await.is_empty());
    let register = |node: &str| WriteOp::RegisterNode {
        paused: false,
        labels: Default::default(),
        node: node.into(),
        version: "9.9.9".into(),
        secret_names: vec![format!("{node}_KEY").to_uppercase().replace('-', "_")],
    };
    t.apply(vec![register("node-a"), register("node-b")]);
    let job = t.insert(None);
    assert_eq!(t.claim("node-b").unwrap().id, job.id);
    let nodes = nodes_named(&t).await;
    let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["node-a", "node-b"]);
    assert_eq!(nodes[0].version.as_deref(), Some("9.9.9"));
    assert_eq!(nodes[1].secret_names, ["NODE_B_KEY"]);
    assert_eq!((nodes[0].running_jobs, nodes[1].running_jobs), (0, 1));
    assert_eq!(nodes[0].stopped_at, None);
    let first = nodes[0].heartbeat_at;
    std::thread::sleep(std::time::Duration::from_millis(5));
    t.apply(vec![WriteOp::Heartbeat {
        node: "node-a".into(),
        lapse: None,
    }]);
    t.apply(vec![WriteOp::NodeStopped {
        node: "node-b".into(),
    }]);
    let nodes = nodes_named(&t).await;
    assert!(nodes[0].heartbeat_at > first, "the heartbeat moved on");
    assert!(nodes[1].stopped_at.is_some());
    // Starting again clears the stop.
    t.apply(vec![register("node-b")]);
    assert_eq!(nodes_named(&t).await[1].stopped_at, None);
}

async fn list_jobs_is_newest_first_with_paging_and_filters(db: TestDatabase) {
    let mut t = open_store(db);
    // a1 a2 b1 (finished) a3 (running) b2 u1 (queued)
    let a1 = t.finished_job(Some("a"), JobState::Succeeded).id;
    let a2 = t.finished_job(Some("a"), JobState::Failed).id;
    let b1 = t.finished_job(Some("b"), JobState::Succeeded).id;
    let a3 = t.insert(Some("a")).id;
    assert_eq!(t.claim("node-a").unwrap().id, a3);
    let b2 = t.insert(Some("b")).id;
    let u1 = t.insert(None).id;

    assert_eq!(t.list(None, None, 100).await, [u1, b2, a3, b1, a2, a1]);
    assert_eq!(t.list(None, None, 2).await, [u1, b2]);
    assert_eq!(t.list_before(None, None, 2, Some(b2)).await, [a3, b1]);
    assert_eq!(t.list_before(None, None, 10, Some(a2)).await, [a1]);
    assert!(t.list_before(None, None, 10, Some(a1)).await.is_empty());

    assert_eq!(t.list(Some(JobState::Succeeded), None, 100).await, [b1, a1]);
    assert_eq!(t.list(Some(JobState::Queued), None, 100).await, [u1, b2]);
    assert_eq!(t.list(Some(JobState::Running), None, 100).await, [a3]);
    assert!(t.list(Some(JobState::TimedOut), None, 100).await.is_empty());

    assert_eq!(t.list(None, Some("a"), 100).await, [a3, a2, a1]);
    assert_eq!(t.list_before(None, Some("a"), 1, Some(a3)).await, [a2]);
    assert!(t.list(None, Some("zzz"), 100).await.is_empty());

    assert_eq!(
        t.list(Some(JobState::Succeeded), Some("a"), 100).await,
        [a1]
    );
    assert_eq!(
        t.list(Some(JobState::Succeeded), Some("b"), 100).await,
        [b1]
    );
    assert_eq!(t.list(Some(JobState::Queued), Some("b"), 100).await, [b2]);
    assert_eq!(
        t.list_before(Some(JobState::Succeeded), Some("b"), 100, Some(b1))
            .await,
        Vec::<JobId>::new()
    );
}

async fn groom_candidates_match_every_criterion_given(db: TestDatabase) {
    let mut t = open_store(db);
    let a1 = t.finished_job(Some("a"), JobState::Succeeded).id;
    let b1 = t.finished_job(Some("b"), JobState::Failed).id;
    let u1 = t.finished_job(None, JobState::Cancelled).id;
    // A cut-off strictly between the first and the second round of finishes.
    std::thread::sleep(std::time::Duration::from_millis(5));
    let cutoff = Timestamp::now().micros();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let a2 = t.finished_job(Some("a"), JobState::Succeeded).id;
    let b2 = t.finished_job(Some("b"), JobState::Succeeded).id;
    let a3 = t.finished_job(Some("a"), JobState::TimedOut).id;
    let u2 = t.finished_job(None, JobState::Succeeded).id;
    // Never candidates, whatever the policy.
    let running = t.insert(Some("a")).id;
    assert_eq!(t.claim("node-a").unwrap().id, running);
    let queued = t.insert(Some("a")).id;
    for id in [a1, b1, u1] {
        assert!(t.job(id).await.finished_at.unwrap().micros() < cutoff);
    }
    for id in [a2, b2, a3, u2] {
        assert!(t.job(id).await.finished_at.unwrap().micros() > cutoff);
    }

    // Older than only.
    assert_eq!(t.groom(Some(cutoff), None).await, [a1, b1, u1]);
    // Keep per name only (the unnamed ones, of one command, form one
    // group): oldest first.
    assert_eq!(t.groom(None, Some(1)).await, [a1, b1, u1, a2]);
    assert_eq!(t.groom(None, Some(2)).await, [a1]);
    assert!(t.groom(None, Some(3)).await.is_empty());
    // Both: only what both would delete (keep 2 spares b1 and u1 though they are old).
    assert_eq!(t.groom(Some(cutoff), Some(2)).await, [a1]);
    assert_eq!(t.groom(Some(cutoff), Some(1)).await, [a1, b1, u1]);
    // The widest policy still spares queued and running jobs.
    let all = t.groom(Some(i64::MAX), Some(0)).await;
    assert_eq!(all, [a1, b1, u1, a2, b2, a3, u2]);
    assert!(!all.contains(&running) && !all.contains(&queued));
    assert!(
        t.groom(Some(0), None).await.is_empty(),
        "nothing finished before 1970"
    );
}

/// `keep_per_name` counts an unnamed job with the unnamed jobs of the same
/// command, not with every unnamed job.
async fn groom_keeps_unnamed_jobs_per_command(db: TestDatabase) {
    let mut t = open_store(db);
    let finished = |t: &mut TestStore, command: &[&str]| {
        let Outcome::Job(job) = t.apply_one(WriteOp::InsertJob {
            name: None,
            spec: Box::new(spec(command)),
        }) else {
            panic!("insert")
        };
        assert_eq!(t.claim("node-a").unwrap().id, job.id);
        t.finish(job.id, JobState::Succeeded, Some(0)).id
    };
    let backup1 = finished(&mut t, &["backup.sh", "/srv"]);
    let adhoc1 = finished(&mut t, &["ls"]);
    let adhoc2 = finished(&mut t, &["ls"]);
    let adhoc3 = finished(&mut t, &["ls", "-l"]);
    let named = t.finished_job(Some("ls"), JobState::Succeeded).id;
    // The newest of each command and of the name stay.
    assert_eq!(t.groom(None, Some(1)).await, [adhoc1]);
    assert!(t.groom(None, Some(2)).await.is_empty());
    let all = t.groom(None, Some(0)).await;
    assert_eq!(all, [backup1, adhoc1, adhoc2, adhoc3, named]);
}

async fn delete_log_chunk_and_delete_job_remove_what_they_say(db: TestDatabase) {
    let mut t = open_store(db);
    let job = t.insert(Some("old")).id;
    assert_eq!(t.claim("node-a").unwrap().id, job);
    let recs: Vec<Record> = (1..=10)
        .map(|i| record(i, Stream::Output, &format!("line {i}")))
        .collect();
    t.apply(vec![append(job, &recs, &recs)]);
    t.finish_with(
        job,
        JobState::Succeeded,
        Some(0),
        Some(b"[1,2]".to_vec()),
        summary_of(&recs),
    );
    // Another job's log is never touched.
    let other = t.insert(Some("other")).id;
    let other_recs = [record(1, Stream::Output, "other line")];
    t.apply(vec![append(other, &other_recs, &other_recs)]);

    assert_eq!(t.count(WriteOp::DeleteLogChunk { job, max: 0 }), 0);
    assert_eq!(
        seqs(&t.log(job, 0, 100, None).await),
        (1..=10).collect::<Vec<_>>()
    );
    assert_eq!(t.count(WriteOp::DeleteLogChunk { job, max: 3 }), 3);
    assert_eq!(
        seqs(&t.log(job, 0, 100, None).await),
        (4..=10).collect::<Vec<_>>()
    );
    assert_eq!(t.count(WriteOp::DeleteLogChunk { job, max: 1 }), 1);
    assert_eq!(
        seqs(&t.log(job, 0, 100, None).await),
        (5..=10).collect::<Vec<_>>()
    );
    assert_eq!(t.count(WriteOp::DeleteLogChunk { job, max: 100 }), 6);
    assert!(t.log(job, 0, 100, None).await.is_empty());
    assert_eq!(t.count(WriteOp::DeleteLogChunk { job, max: 100 }), 0);
    assert_eq!(t.log(other, 0, 100, None).await, other_recs);

    // A queued (or running) job is never deleted.
    assert_eq!(t.count(WriteOp::DeleteJob { job: other }), 0);
    assert!(t.store.get_job(other).await.unwrap().is_some());

    assert_eq!(t.count(WriteOp::DeleteJob { job }), 1);
    assert_eq!(t.store.get_job(job).await.unwrap(), None);
    assert_eq!(t.store.read_result(job).await.unwrap(), None);
    assert_eq!(t.count(WriteOp::DeleteJob { job }), 0, "already gone");
    assert_eq!(t.list(None, None, 10).await, [other]);
}

async fn a_failing_batch_applies_nothing(db: TestDatabase) {
    let mut t = open_store(db);
    let job = t.insert(Some("existing")).id;
    let first = [record(1, Stream::Output, "one")];
    t.apply(vec![append(job, &first, &first)]);

    // An InsertJob, then an Append repeating a (job, seq) pair: the whole batch fails.
    let dup = vec![
        record(2, Stream::Output, "two"),
        record(2, Stream::Output, "two again"),
    ];
    let ops = vec![
        insert_op(Some("phantom")),
        WriteOp::CancelQueued { job },
        append(job, &dup, &dup),
    ];
    let err = t.writer.apply(&ops).expect_err("duplicate seq must fail");
    assert!(
        !err.is_transient(),
        "a constraint violation is not transient: {err:?}"
    );

    assert_eq!(
        t.list(None, None, 10).await,
        [job],
        "the InsertJob was rolled back"
    );
    assert!(t.list(None, Some("phantom"), 10).await.is_empty());
    let j = t.job(job).await;
    assert_eq!(
        j.state,
        JobState::Queued,
        "the CancelQueued was rolled back"
    );
    assert_eq!(j.log, summary_of(&first), "the counters were rolled back");
    assert_eq!(t.log(job, 0, 10, None).await, first);

    // A seq already stored fails the same way.
    let again = [record(1, Stream::Output, "one again")];
    assert!(t.writer.apply(&[append(job, &again, &again)]).is_err());
    assert_eq!(t.log(job, 0, 10, None).await, first);

    // The writer is still usable afterwards.
    let next = t.insert(Some("after")).id;
    assert!(next > job);
    assert_eq!(t.list(None, None, 10).await, [next, job]);
}

// ---------------------------------------------------------------------------
// SQLite only: these look at the file itself (schema, pragmas, the
// migration version in `user_version`) or at how a sqlite:// URL is read,
// which have no PostgreSQL counterpart to run the same assertions on.

/// A SQLite store in a directory that does not exist yet (`data/` inside a
/// test dir), so that opening must create it, with the path of its file.
fn open_sqlite_in_new_subdir() -> (TestStore, PathBuf) {
    let db = TestDatabase::sqlite();
    std::fs::create_dir(db.dir().join("data")).unwrap();
    let path = db.dir().join("data").join("joblog.db");
    let store = SqliteStore::open(&path, &StoreOptions::default()).unwrap();
    let writer = store.open_writer().unwrap();
    let store: Arc<dyn Store> = Arc::new(store);
    (TestStore { store, writer, db }, path)
}

fn user_version(path: &Path) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap()
}

#[tokio::test]
async fn migrations_create_the_schema_and_reopening_keeps_the_data() {
    let (t, path) = open_sqlite_in_new_subdir();
    let version = user_version(&path);
    assert!(version >= 1, "migrations ran (user_version {version})");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        let tables: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for table in ["jobs", "log", "results"] {
            assert!(tables.iter().any(|t| t == table), "{table} in {tables:?}");
        }
        let journal: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(journal.to_lowercase(), "wal");
    }

    // Reopening an existing, up-to-date file migrates nothing and keeps all.
    let url = format!("sqlite://{}", path.display());
    let db = write_then_reopen(t, &url).await;
    assert_eq!(user_version(&path), version);
    drop(db);
}

#[tokio::test]
async fn a_database_from_a_newer_joblog_is_refused() {
    let (t, path) = open_sqlite_in_new_subdir();
    let known = user_version(&path);
    drop(t.writer);
    drop(t.store);
    let newer = known + 7;
    rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", newer)
        .unwrap();
    let err = match SqliteStore::open(&path, &StoreOptions::default()) {
        Ok(_) => panic!("a schema newer than this build must be refused"),
        Err(e) => e,
    };
    assert!(matches!(err, StoreError::Config(_)), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&newer.to_string()), "{msg}");
    assert!(msg.contains("upgrade joblog"), "{msg}");
    // Refusing must not have touched the file.
    assert_eq!(user_version(&path), newer);
}

// Not a backend test: how `open` reads URLs, with no database behind them.
#[tokio::test]
async fn open_rejects_urls_it_cannot_serve() {
    let err = joblog_store::open("mysql://db/joblog", &StoreOptions::default())
        .err()
        .expect("an unknown scheme is refused");
    assert!(matches!(err, StoreError::Config(_)), "{err:?}");
    assert!(err.to_string().contains("postgres://"), "{err}");
    let err = joblog_store::open("sqlite://", &StoreOptions::default())
        .err()
        .expect("an empty path is refused");
    assert!(matches!(err, StoreError::Config(_)), "{err:?}");
    // A malformed URL is a configuration error that names it, password
    // removed.
    let err = joblog_store::open(
        "postgres://joblog:s3cret@db:notaport/joblog",
        &StoreOptions::default(),
    )
    .err()
    .expect("a bad port is refused");
    assert!(matches!(err, StoreError::Config(_)), "{err:?}");
    assert!(err.to_string().contains("joblog@db"), "{err}");
    assert!(!err.to_string().contains("s3cret"), "{err}");
    // Nothing listens on port 1: the server is unavailable, not misconfigured.
    let err = joblog_store::open(
        "postgres://joblog:s3cret@127.0.0.1:1/joblog",
        &StoreOptions::default(),
    )
    .err()
    .expect("an unreachable server is reported");
    assert!(err.is_transient(), "{err:?}");
    assert!(!err.to_string().contains("s3cret"), "{err}");
}

/// A job reaches one final state: a Finish after it ended elsewhere (its
/// node was taken for lapsed) changes nothing but reports so.
async fn a_job_is_finished_once(db: TestDatabase) {
    let mut t = open_store(db);
    let job = t.insert(Some("once"));
    t.claim("node-a").unwrap();
    assert_eq!(
        t.interrupted(WriteOp::Interrupt {
            node: Some("node-a".into()),
            include_queued: false
        })
        .len(),
        1
    );
    let outcome = t.apply_one(WriteOp::Finish {
        job: job.id,
        state: JobState::Succeeded,
        exit_code: Some(0),
        result: Some(ResultBlob::encode(b"{}")),
        summary: LogSummary::default(),
        at: Timestamp::now(),
    });
    assert_eq!(outcome, Outcome::MaybeJob(None));
    let stored = t.job(job.id).await;
    assert_eq!(stored.state, JobState::Interrupted);
    assert_eq!(stored.exit_code, None);
    assert_eq!(t.store.read_result(job.id).await.unwrap(), None);
}

// PostgreSQL only: several nodes on one database, partitions, notices.

#[tokio::test]
async fn postgres_claims_by_concurrent_nodes_never_overlap() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let (_s1, mut w1) = open_node(db.url(), "n1");
    let (_s2, w2) = open_node(db.url(), "n2");
    let inserts: Vec<WriteOp> = (0..300).map(|_| insert_op(Some("claimed"))).collect();
    w1.apply(&inserts).unwrap();
    // Each node claims in batches of 5 as fast as it can, at the same time.
    let claim = |mut w: Box<dyn StoreWriter>, node: &'static str| {
        std::thread::spawn(move || {
            let mut got = Vec::new();
            loop {
                let ops: Vec<WriteOp> = (0..5)
                    .map(|_| WriteOp::ClaimNext {
                        labels: Default::default(),
                        node: node.into(),
                        at: Timestamp::now(),
                    })
                    .collect();
                let claimed: Vec<JobId> = w
                    .apply(&ops)
                    .unwrap()
                    .into_iter()
                    .filter_map(|o| match o {
                        Outcome::Claimed(Some(j)) => Some(j.id),
                        _ => None,
                    })
                    .collect();
                if claimed.is_empty() {
                    return got;
                }
                got.extend(claimed);
            }
        })
    };
    let a = claim(w1, "n1");
    let b = claim(w2, "n2");
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    let mut all: Vec<JobId> = a.iter().chain(&b).copied().collect();
    all.sort_unstable();
    let before = all.len();
    all.dedup();
    assert_eq!(before, all.len(), "a job was claimed twice");
    assert_eq!(all.len(), 300, "every job claimed once");
    assert!(
        !a.is_empty() && !b.is_empty(),
        "n1 {} n2 {}",
        a.len(),
        b.len()
    );
}

#[tokio::test]
async fn postgres_a_lapsed_nodes_running_and_pinned_jobs_are_interrupted() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let (store, mut dead) = open_node(db.url(), "dead");
    let (_s, mut alive) = open_node(db.url(), "alive");
    let lapse = std::time::Duration::from_millis(500);
    let heartbeat = |w: &mut Box<dyn StoreWriter>, node: &str| match w
        .apply(&[WriteOp::Heartbeat {
            node: node.into(),
            lapse: Some(lapse),
        }])
        .unwrap()
        .pop()
    {
        Some(Outcome::Interrupted(jobs)) => jobs.len(),
        other => panic!("heartbeat gave {other:?}"),
    };
    heartbeat(&mut dead, "dead");
    heartbeat(&mut alive, "alive");
    // `dead` runs one job and holds the secrets of a queued one; `alive`
    // runs one job.
    let running = dead.apply(&[insert_op(None)]).unwrap();
    let Outcome::Job(running) = &running[0] else {
        panic!()
    };
    dead.apply(&[WriteOp::ClaimNext {
        labels: Default::default(),
        node: "dead".into(),
        at: Timestamp::now(),
    }])
    .unwrap();
    let pinned = dead
        .apply(&[WriteOp::InsertJob {
            name: None,
            spec: Box::new(JobSpec {
                secret_names: vec!["K".into()],
                ..spec(&["true"])
            }),
        }])
        .unwrap();
    let Outcome::Job(pinned) = &pinned[0] else {
        panic!()
    };
    // Not claimable by `alive`: its secrets are in `dead`'s memory.
    let ours = alive
        .apply(&[
            insert_op(None),
            WriteOp::ClaimNext {
                labels: Default::default(),
                node: "alive".into(),
                at: Timestamp::now(),
            },
        ])
        .unwrap();
    let Outcome::Claimed(Some(ours)) = &ours[1] else {
        panic!("{ours:?}")
    };
    assert_ne!(ours.id, pinned.id);
    // Within the lapse nothing happens.
    assert_eq!(heartbeat(&mut alive, "alive"), 0);
    std::thread::sleep(lapse * 2);
    // A heartbeat that does not judge (just after an outage, say) only
    // records that its node lives.
    let only_alive = alive
        .apply(&[WriteOp::Heartbeat {
            node: "alive".into(),
            lapse: None,
        }])
        .unwrap();
    assert_eq!(only_alive, vec![Outcome::Interrupted(Vec::new())]);
    assert_eq!(
        store.get_job(running.id).await.unwrap().unwrap().state,
        JobState::Running
    );
    assert_eq!(
        heartbeat(&mut alive, "alive"),
        2,
        "dead's running and pinned jobs"
    );
    let state = |id| {
        let store = store.clone();
        async move { store.get_job(id).await.unwrap().unwrap().state }
    };
    assert_eq!(state(running.id).await, JobState::Interrupted);
    assert_eq!(state(pinned.id).await, JobState::Interrupted);
    assert_eq!(state(ours.id).await, JobState::Running);
    // The running job's log says which node was lost, when it was last
    // heard from, and who judged it.
    let why = store.read_log(running.id, 0, 10, None).await.unwrap();
    assert_eq!(why.len(), 1);
    let fields = why[0].fields.as_ref().unwrap();
    assert_eq!(fields["reason"], "node_lapsed");
    assert_eq!(fields["node"], "dead");
    assert_eq!(fields["declared_by"], "alive");
    assert!(fields["last_heartbeat"].is_string(), "{fields:?}");
    assert!(why[0].message.contains("dead"), "{}", why[0].message);
    let pinned_log = store.read_log(pinned.id, 0, 10, None).await.unwrap();
    assert!(
        pinned_log[0].message.contains("was waiting for node dead"),
        "{}",
        pinned_log[0].message
    );
    // A second heartbeat finds nothing more to do.
    assert_eq!(heartbeat(&mut alive, "alive"), 0);
}

#[tokio::test]
async fn postgres_retention_drops_whole_partitions_only_when_all_their_jobs_go() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let mut t = open_store(db);
    let mut done = Vec::new();
    for _ in 0..3 {
        let job = t.insert(Some("old"));
        t.claim("n").unwrap();
        let recs: Vec<Record> = (1..=50).map(|i| record(i, Stream::Output, "x")).collect();
        t.apply_one(append(job.id, &recs, &recs));
        t.finish_with(
            job.id,
            JobState::Succeeded,
            Some(0),
            None,
            summary_of(&recs),
        );
        done.push(job.id);
    }
    let partitions = |url: String| async move {
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let rows = client
            .query(
                "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
                 WHERE i.inhparent = 'log'::regclass ORDER BY 1",
                &[],
            )
            .await
            .unwrap();
        let names: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        (client, names)
    };
    // One of them sealed: its segments live in the partition's twin.
    let sealed: Vec<Record> = (1..=50).map(|i| record(i, Stream::Output, "x")).collect();
    let slice = joblog_store::sealed::SealSlice::encode(done[1], &sealed).unwrap();
    assert_eq!(t.count(WriteOp::SealSlice(Box::new(slice))), 1);
    let (client, names) = partitions(t.db.url().to_string()).await;
    assert_eq!(names, vec!["log_p0".to_string()]);
    let segments_p0 = "SELECT count(*) FROM pg_class WHERE relname = 'segments_p0'";
    let twin: i64 = client.query_one(segments_p0, &[]).await.unwrap().get(0);
    assert_eq!(twin, 1);
    let drop = |t: &mut TestStore, candidates: Vec<JobId>| match t
        .apply_one(WriteOp::DropLogPartitions { candidates })
    {
        Outcome::Groomed { jobs, records } => (jobs, records),
        other => panic!("DropLogPartitions gave {other:?}"),
    };
    // Job ids have not moved past the partition: new jobs may still land
    // in it, so it stays.
    assert_eq!(drop(&mut t, done.clone()), (vec![], 0));
    client
        .execute(
            "SELECT setval(pg_get_serial_sequence('jobs', 'id'), 25000)",
            &[],
        )
        .await
        .unwrap();
    // Not every job of the range is to go: it stays.
    assert_eq!(drop(&mut t, done[..2].to_vec()), (vec![], 0));
    assert_eq!(t.log(done[0], 0, 100, None).await.len(), 50);
    // All of them: dropped in one go, with the jobs.
    assert_eq!(drop(&mut t, done.clone()), (done.clone(), 150));
    let (client, names) = partitions(t.db.url().to_string()).await;
    assert!(names.is_empty(), "{names:?}");
    let twin: i64 = client.query_one(segments_p0, &[]).await.unwrap().get(0);
    assert_eq!(twin, 0, "the segments went with the partition");
    for id in &done {
        assert!(t.store.get_job(*id).await.unwrap().is_none());
    }
    // A job in a new range gets its partition made by the writer.
    let job = t.insert(Some("new"));
    assert!(job.id > 25000);
    let recs = vec![record(1, Stream::Output, "later")];
    t.apply_one(append(job.id, &recs, &recs));
    assert_eq!(t.log(job.id, 0, 10, None).await, recs);
}

#[tokio::test]
async fn postgres_other_nodes_hear_of_commits_and_a_node_not_of_its_own() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let (listening, mut own) = open_node(db.url(), "b");
    let (_a, mut other) = open_node(db.url(), "a");
    let (tx, mut rx) = tokio::sync::broadcast::channel(64);
    listening.start_listener(tx);
    // After connecting, the listener says anything may have changed.
    assert!(next_notice(&mut rx).await.reset);
    // This node's own commits are not echoed back.
    own.apply(&[insert_op(None)]).unwrap();
    let out = other
        .apply(&[
            insert_op(None),
            WriteOp::ClaimNext {
                labels: Default::default(),
                node: "a".into(),
                at: Timestamp::now(),
            },
        ])
        .unwrap();
    let Outcome::Claimed(Some(job)) = &out[1] else {
        panic!("{out:?}")
    };
    let notice = next_notice(&mut rx).await;
    assert_eq!(notice.queued, 1, "{notice:?}");
    // A job list on this node learns that the job started elsewhere.
    assert_eq!(notice.started, vec![job.id], "{notice:?}");
    let recs: Vec<Record> = (1..=3).map(|i| record(i, Stream::Output, "x")).collect();
    other.apply(&[append(job.id, &recs, &recs)]).unwrap();
    assert_eq!(next_notice(&mut rx).await.appended, vec![(job.id, 3)]);
    other
        .apply(&[WriteOp::RequestCancel { job: job.id }])
        .unwrap();
    assert_eq!(next_notice(&mut rx).await.cancel, vec![job.id]);
}

async fn next_notice(
    rx: &mut tokio::sync::broadcast::Receiver<Arc<joblog_store::Committed>>,
) -> Arc<joblog_store::Committed> {
    tokio::time::timeout(std::time::Duration::from_secs(30), rx.recv())
        .await
        .expect("a notice within 30 s")
        .unwrap()
}

fn new_token(name: &str, role: Role, byte: u8, expires_at: Option<i64>) -> NewToken {
    NewToken {
        name: name.into(),
        role,
        hash: [byte; 32],
        created_at: Timestamp(1_000),
        expires_at: expires_at.map(Timestamp),
        folders: None,
    }
}

async fn tokens_are_kept_by_hash_and_listed_without_it(db: TestDatabase) {
    let mut t = open_store(db);
    let out = t.apply(vec![
        WriteOp::CreateToken(new_token("ci", Role::Operator, 1, Some(9_000))),
        WriteOp::CreateToken(new_token("admin", Role::Admin, 2, None)),
        // A name is unique: the second is refused, not an error.
        WriteOp::CreateToken(new_token("ci", Role::Viewer, 3, None)),
    ]);
    assert_eq!(
        out,
        vec![Outcome::Count(1), Outcome::Count(1), Outcome::Count(0)]
    );
    let ci = t.store.token_by_hash([1; 32]).await.unwrap().unwrap();
    assert_eq!((ci.name.as_str(), ci.role), ("ci", Role::Operator));
    assert_eq!(ci.expires_at, Some(Timestamp(9_000)));
    assert_eq!(ci.last_used_at, None);
    assert!(t.store.token_by_hash([3; 32]).await.unwrap().is_none());
    assert!(t.store.token_by_hash([0; 32]).await.unwrap().is_none());

    let out = t.apply(vec![WriteOp::TouchToken {
        name: "ci".into(),
        at: Timestamp(5_000),
    }]);
    assert_eq!(out, vec![Outcome::Done]);
    let listed = t.store.list_tokens().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["admin", "ci"], "by name");
    assert_eq!(listed[1].last_used_at, Some(Timestamp(5_000)));

    let out = t.apply(vec![
        WriteOp::RevokeToken { name: "ci".into() },
        WriteOp::RevokeToken { name: "ci".into() },
    ]);
    assert_eq!(out, vec![Outcome::Count(1), Outcome::Count(0)]);
    assert!(t.store.token_by_hash([1; 32]).await.unwrap().is_none());
    // The name is free again.
    let out = t.apply(vec![WriteOp::CreateToken(new_token(
        "ci",
        Role::Viewer,
        4,
        None,
    ))]);
    assert_eq!(out, vec![Outcome::Count(1)]);
}

#[tokio::test]
async fn a_sqlite_file_in_a_missing_directory_is_refused_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/no/such/dir/joblog.db", dir.path().display());
    let err = joblog_store::open(&url, &StoreOptions::default())
        .err()
        .expect("a missing directory is refused");
    assert!(matches!(err, StoreError::Config(_)), "{err:?}");
    assert!(err.to_string().contains("no/such/dir"), "{err}");
    assert!(!dir.path().join("no").exists(), "nothing was created");
}
