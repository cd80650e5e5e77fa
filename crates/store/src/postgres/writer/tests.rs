//! The writer against a real server (skipped without one): retrying a
//! batch whose acknowledgement was lost, and telling it from one that
//! failed before its commit.

use joblog_core::{JobQuery, JobSpec, JobState, NameFilter};

use super::*;
use crate::postgres::PgStore;
use crate::testing::TestDatabase;
use crate::{Store, StoreOptions};

fn ops(node: &str) -> Vec<WriteOp> {
    vec![
        WriteOp::InsertJob {
            name: Some("retried".into()),
            spec: Box::new(JobSpec {
                command: vec!["true".into()],
                ..JobSpec::default()
            }),
        },
        WriteOp::ClaimNext {
            labels: Default::default(),
            node: node.into(),
            at: Timestamp::now(),
        },
    ]
}

/// The store on `db` and a writer of its own, for `node`.
fn store_and_writer(db: &TestDatabase, node: &str) -> (PgStore, PgWriter) {
    let options = StoreOptions {
        node: node.into(),
        ..StoreOptions::default()
    };
    let store = PgStore::open(db.url(), &options).unwrap();
    let writer = PgWriter::new(store.target.clone(), node.into()).unwrap();
    (store, writer)
}

/// The connection drops after COMMIT reached the server but before its
/// answer came back: the pipeline retries the same ops, and the writer
/// must find the batch committed and answer from what it wrote, not
/// insert and claim a second job. (Losing the answer is simulated by
/// marking the attempt uncertain; a real dropped connection does the
/// same through `apply`'s error path.)
#[test]
fn a_retried_batch_that_was_committed_is_not_applied_twice() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let (store, mut w) = store_and_writer(&db, "n");
    let batch = ops("n");
    let first = w.apply(&batch).unwrap();
    let (Outcome::Job(inserted), Outcome::Claimed(Some(claimed))) = (&first[0], &first[1]) else {
        panic!("{first:?}")
    };
    assert_eq!(inserted.id, claimed.id);

    w.uncertain = w.last.clone();
    let again = w.apply(&batch).unwrap();
    let (Outcome::Job(j), Outcome::Claimed(Some(c))) = (&again[0], &again[1]) else {
        panic!("{again:?}")
    };
    assert_eq!((j.id, c.id), (inserted.id, claimed.id));
    assert_eq!(c.state, JobState::Running);

    // An attempt that did not commit is simply applied.
    w.uncertain = Some(Attempt {
        marker: "never-committed".into(),
        now: 1,
        ops: batch.len(),
    });
    let fresh = w.apply(&batch).unwrap();
    let Outcome::Job(second) = &fresh[0] else {
        panic!("{fresh:?}")
    };
    assert_ne!(second.id, inserted.id);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let jobs = rt
        .block_on(store.list_jobs(JobQuery {
            name: Some(NameFilter::Exact("retried".into())),
            limit: 10,
            ..JobQuery::default()
        }))
        .unwrap();
    assert_eq!(jobs.len(), 2, "one job per applied batch: {jobs:?}");
}

/// The writer's connection is cut between two batches (as
/// `pg_terminate_backend` does): the next batch fails at its first
/// statement, before any `COMMIT`, so the writer says it applied nothing
/// and the pipeline may refuse the clients' requests in it.
#[test]
fn a_batch_cut_off_before_its_commit_is_known_to_have_applied_nothing() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let (_store, mut w) = store_and_writer(&db, "cut");
    w.apply(&ops("cut")).unwrap();
    assert!(!w.may_have_committed());

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let writer_pid: i32 = rt.block_on(async {
        let (killer, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let pid: i32 = w
            .with_conn(|c| async move {
                Ok(c.client
                    .query_one("SELECT pg_backend_pid()", &[])
                    .await?
                    .get(0))
            })
            .unwrap();
        killer
            .execute("SELECT pg_terminate_backend($1)", &[&pid])
            .await
            .unwrap();
        pid
    });
    let err = w.apply(&ops("cut")).unwrap_err();
    assert!(err.is_transient(), "{err}");
    assert!(
        !w.may_have_committed(),
        "backend {writer_pid} was gone before the batch began: {err}"
    );
    // The next attempt reconnects and applies it.
    w.apply(&ops("cut")).unwrap();
}
