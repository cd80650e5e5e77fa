//! The statements against a real server (skipped without one): how it
//! plans them.

use joblog_core::{JobSpec, LogSummary, Record, Stream, Timestamp};

use super::*;
use crate::postgres::writer::PgWriter;
use crate::postgres::PgStore;
use crate::testing::TestDatabase;
use crate::{Outcome, StoreOptions, StoreWriter, WriteOp};

/// Every query a request runs can be served by an index scan in the
/// order it returns rows: reads stay O(log n) as the log grows. The
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
                spec: JobSpec {
                    command: vec!["true".into()],
                    ..JobSpec::default()
                },
            },
            WriteOp::ClaimNext { node: "n".into() },
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
    let queries = [
        SELECT_JOB.replace("$1", "1"),
        LIST_ALL.replace("$1", "9").replace("$2", "50"),
        LIST_STATE
            .replace("$1", "9")
            .replace("$2", "50")
            .replace("$3", "'running'"),
        LIST_NAME
            .replace("$1", "9")
            .replace("$2", "50")
            .replace("$3", "'x'"),
        LIST_NAME_STATE
            .replace("$1", "9")
            .replace("$2", "50")
            .replace("$3", "'x'")
            .replace("$4", "'failed'"),
        READ_LOG
            .replace("$1", "1")
            .replace("$2", "5")
            .replace("$3", "1000")
            .replace("$4", "127")
            .replace("$5", "1048576"),
        READ_RESULT.replace("$1", "1"),
    ];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = store.target.connect().await.unwrap();
        tokio::spawn(conn);
        client
            .batch_execute(
                "SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off",
            )
            .await
            .unwrap();
        for q in &queries {
            let plan: Vec<String> = client
                .query(&format!("EXPLAIN {q}"), &[])
                .await
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            let plan = plan.join("\n");
            assert!(!plan.contains("Seq Scan"), "{q}\n{plan}");
            assert!(!plan.contains("Sort"), "{q}\n{plan}");
        }
    });
}
