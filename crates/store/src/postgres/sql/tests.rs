//! The statements against a real server (skipped without one): how it
//! plans them.

use joblog_core::{JobSpec, LogSummary, Record, Stream, Timestamp};

use tokio_postgres::types::ToSql;

use crate::listing::{Dialect, Param};
use crate::postgres::writer::PgWriter;
use crate::postgres::PgStore;
use crate::testing::TestDatabase;
use crate::{Outcome, StoreOptions, StoreWriter, WriteOp};

/// A runtime and a connection of its own to `store`'s database, for
/// asking the server how it plans a statement.
fn client_of(store: &PgStore) -> (tokio::runtime::Runtime, tokio_postgres::Client) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = rt.block_on(async {
        let (client, conn) = store.target.connect().await.unwrap();
        tokio::spawn(conn);
        client
    });
    (rt, client)
}

/// Every query a request runs, every shape of job listing included, can be
/// served by index scans in the order it returns rows (several merged by a
/// Merge Append for a listing): reads stay O(log n) as the log grows. The
/// tables here are tiny, so the planner is told to avoid what it would
/// only choose for tiny tables; where no index serves a query, the
/// plan still shows a Seq Scan or a Sort.
#[test]
fn request_queries_use_indexes_and_never_sort() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let store = PgStore::open(db.url(), &StoreOptions::default()).unwrap();
    let mut w = PgWriter::new(store.target.clone(), "n".into()).unwrap();
    let out = w
        .apply(&[
            WriteOp::InsertJob {
                name: Some("retried".into()),
                spec: Box::new(JobSpec {
                    command: vec!["true".into()],
                    ..JobSpec::default()
                }),
            },
            WriteOp::ClaimNext {
                labels: Default::default(),
                node: "n".into(),
                at: Timestamp::now(),
            },
        ])
        .unwrap();
    let Outcome::Job(job) = &out[0] else { panic!() };
    let record = Record {
        seq: 1,
        ts: Timestamp(1),
        stream: Stream::Output,
        message: "x".into(),
        fields: None,
    };
    w.apply(&[WriteOp::Append {
        job: job.id,
        records: vec![record],
        summary: LogSummary::default(),
    }])
    .unwrap();
    let mut queries: Vec<(String, Vec<Param>)> = [
        crate::reads::SELECT_JOB.postgres.replace("$1", "1"),
        crate::reads::READ_RESULT.postgres.replace("$1", "1"),
        crate::reads::TOKEN_BY_HASH
            .postgres
            .replace("$1", "'\\x00'::bytea"),
    ]
    .into_iter()
    .map(|q| (q, Vec::new()))
    .collect();
    // Every statement under a log read (segments included): each one
    // job's log by its primary key.
    let reads = crate::log_reads::every_statement();
    assert_eq!(reads.len(), 14);
    queries.extend(
        reads
            .into_iter()
            .map(|(_, st, params)| (st.postgres.to_string(), params)),
    );
    queries.extend(crate::db::listing_statements(Dialect::Postgres));
    queries.extend(
        crate::notifications::every_statement()
            .into_iter()
            .chain(crate::accounts::every_statement())
            .map(|(_, st, params)| (st.postgres.to_string(), params)),
    );
    let (rt, client) = client_of(&store);
    rt.block_on(async {
        client
            .batch_execute(
                "SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off",
            )
            .await
            .unwrap();
        for (q, params) in &queries {
            let params: Vec<&(dyn ToSql + Sync)> =
                params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
            let plan: Vec<String> = client
                .query(&format!("EXPLAIN {q}"), &params)
                .await
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            // A node's line: `Sort  (cost…`, `->  Sort  (cost…`; a merge
            // of ordered walks says `Sort Key:` and is no sort.
            let sorts = plan.iter().any(|line| {
                let node = line.trim_start().trim_start_matches("->").trim_start();
                node.starts_with("Sort  (") || node.starts_with("Incremental Sort  (")
            });
            let plan = plan.join("\n");
            assert!(!plan.contains("Seq Scan"), "{q}\n{plan}");
            assert!(!sorts, "{q}\n{plan}");
            assert!(plan.contains("Index"), "{q}\n{plan}");
        }
    });
}

/// A claim never walks the jobs that only other nodes may take: behind
/// 2,000 queued jobs asking for a label this node lacks, it finds the
/// jobs it may take by one probe per selector's queue, and its plan
/// filters out none of the others. The claims then take exactly the
/// jobs this node's labels satisfy, oldest first.
#[test]
fn a_claim_walks_only_the_queues_of_selectors_the_node_satisfies() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let store = PgStore::open(db.url(), &StoreOptions::default()).unwrap();
    let mut w = PgWriter::new(store.target.clone(), "n".into()).unwrap();
    let job = |selector: &str| WriteOp::InsertJob {
        name: None,
        spec: Box::new(JobSpec {
            command: vec!["true".into()],
            node_selector: joblog_core::Labels::parse(selector).unwrap(),
            ..JobSpec::default()
        }),
    };
    let others: Vec<WriteOp> = (0..2000).map(|_| job("gpu=yes")).collect();
    w.apply(&others).unwrap();
    let mine = w
        .apply(&[job(""), job("role=db"), job("os=linux,role=db")])
        .unwrap();
    let ids: Vec<i64> = mine
        .iter()
        .map(|o| match o {
            Outcome::Job(j) => j.id,
            other => panic!("{other:?}"),
        })
        .collect();
    let labels = joblog_core::Labels::parse("role=db,os=linux").unwrap();
    let (rt, mut client) = client_of(&store);
    rt.block_on(async {
        client.batch_execute("ANALYZE jobs").await.unwrap();
        let none: Vec<String> = Vec::new();
        let held: Vec<i64> = Vec::new();
        // ANALYZE runs the claim: undone with its transaction.
        let tx = client.transaction().await.unwrap();
        let plan: Vec<String> = tx
            .query(
                &format!(
                    "EXPLAIN (ANALYZE, COSTS OFF) {}",
                    crate::postgres::jobs::CLAIM_KEYLESS
                ),
                &[&i64::MAX, &"n", &none, &labels.items(), &held, &0i64],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        tx.rollback().await.unwrap();
        let plan = plan.join("\n");
        assert!(!plan.contains("Seq Scan on jobs"), "{plan}");
        for line in plan
            .lines()
            .filter(|l| l.contains("Rows Removed by Filter"))
        {
            let n: u64 = line.rsplit(' ').next().unwrap().trim().parse().unwrap();
            assert!(n < 10, "a claim walked jobs it may not take:\n{plan}");
        }
    });
    let mut claimed = Vec::new();
    for _ in 0..4 {
        let out = w
            .apply(&[WriteOp::ClaimNext {
                node: "n".into(),
                labels: labels.clone(),
                at: Timestamp::now(),
            }])
            .unwrap();
        match &out[0] {
            Outcome::Claimed(Some(job)) => claimed.push(job.id),
            Outcome::Claimed(None) => break,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(claimed, ids);
}

/// A claim's cached plan, made while statistics said no job was queued,
/// still takes its job without walking the queue: the candidate is locked
/// and updated by its `ctid`. (Planned on a join, or
/// on `state = 'queued'` beside an id, the lock walked every queued job:
/// 544–1,576 rows a claim in `bench dispatch` on PostgreSQL.) The same
/// for the claim of a candidate with a concurrency key.
#[test]
fn a_claims_plan_made_on_an_idle_table_never_walks_the_queue() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let store = PgStore::open(db.url(), &StoreOptions::default()).unwrap();
    let (rt, client) = client_of(&store);
    rt.block_on(async {
        // Statistics of a store whose jobs have all ended (enough of them
        // that a lookup by id is an index probe); the plans are made and
        // cached now, from them, as a writer's are at its first batches.
        client
            .batch_execute(&format!(
                "INSERT INTO jobs (state, spec, created_at) \
                     SELECT 'succeeded', '{{}}', 1 FROM generate_series(1, 3000); \
                 ANALYZE jobs; \
                 SET plan_cache_mode = force_generic_plan; \
                 PREPARE keyless(bigint, text, text[], text[], bigint[], bigint) AS {}; \
                 PREPARE by_id(bigint, text, bigint) AS {};",
                crate::postgres::jobs::CLAIM_KEYLESS,
                crate::postgres::jobs::CLAIM_ID
            ))
            .await
            .unwrap();
        let keyless = "keyless(1, 'n', '{}', '{}', '{}', 1)";
        let explain = |analyze: bool, call: &str| {
            let sql = match analyze {
                true => format!("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE {call}"),
                false => format!("EXPLAIN EXECUTE {call}"),
            };
            let client = &client;
            async move {
                client
                    .query(&sql, &[])
                    .await
                    .unwrap()
                    .iter()
                    .map(|r| r.get::<_, String>(0))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        };
        explain(false, keyless).await;
        explain(false, "by_id(1, 'n', 1)").await;
        // Then a burst: 2,000 jobs queued.
        let first: i64 = client
            .query_one(
                "WITH q AS (INSERT INTO jobs (state, spec, created_at) \
                     SELECT 'queued', '{}', 1 FROM generate_series(1, 2000) RETURNING id) \
                 SELECT min(id) FROM q",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        for call in [keyless.to_string(), format!("by_id(1, 'n', {first})")] {
            client.batch_execute("BEGIN").await.unwrap();
            let plan = explain(true, &call).await;
            client.batch_execute("ROLLBACK").await.unwrap();
            assert!(plan.contains("Tid Scan on jobs"), "{call}:\n{plan}");
            for line in plan.lines().filter(|l| l.contains("Rows Removed by")) {
                let n: u64 = line.rsplit(' ').next().unwrap().trim().parse().unwrap();
                assert!(n < 10, "{call} walked the queued jobs:\n{plan}");
            }
            // And it did claim a job.
            assert!(
                plan.lines()
                    .any(|l| l.contains("Update on jobs") && l.contains("actual rows=1 ")),
                "{call} claimed nothing:\n{plan}"
            );
        }
    });
}
