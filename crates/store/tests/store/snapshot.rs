//! Snapshots: a SQLite store's whole database as one file, made while the
//! store is open and its writer goes on; a PostgreSQL store refuses,
//! naming the tool to use instead.

use std::io::Read;

use joblog_store::testing::{Backend, TestDatabase};

use super::*;

joblog_store::backend_tests! {
    a_snapshot_is_the_whole_database_or_a_clear_refusal,
}

async fn a_snapshot_is_the_whole_database_or_a_clear_refusal(db: TestDatabase) {
    let backend = db.backend();
    let mut t = open_store(db);
    let done = t.insert(Some("nightly"));
    t.claim("node-a").expect("the queued job");
    let recs = [
        record(1, Stream::Output, "first"),
        record(2, Stream::Warning, "second"),
    ];
    t.apply(vec![append(done.id, &recs, &recs)]);
    t.finish_with(
        done.id,
        JobState::Succeeded,
        Some(0),
        Some(br#"{"ok":true}"#.to_vec()),
        summary_of(&recs),
    );
    let queued = t.insert(Some("later"));

    if backend == Backend::Postgres {
        let err = t.store.snapshot().await.unwrap_err();
        assert!(
            matches!(&err, StoreError::Unsupported(why) if why.contains("pg_dump")),
            "{err:?}"
        );
        assert!(!err.is_transient());
        return;
    }
    let snapshot = t.store.snapshot().await.unwrap();
    let len = snapshot.len();
    let mut bytes = Vec::new();
    snapshot.into_file().read_to_end(&mut bytes).unwrap();
    assert_eq!(bytes.len() as u64, len);
    assert!(bytes.starts_with(b"SQLite format 3\0"));

    // Written after the snapshot: not in it.
    let after = t.insert(Some("after"));

    let path = t.db.dir().join("restored.db");
    std::fs::write(&path, &bytes).unwrap();
    let restored = SqliteStore::open(&path, &StoreOptions::default()).unwrap();
    assert_eq!(
        restored.get_job(done.id).await.unwrap(),
        Some(t.job(done.id).await)
    );
    assert_eq!(restored.read_log(done.id, 0, 10, None).await.unwrap(), recs);
    let result = restored.read_result(done.id).await.unwrap().unwrap();
    assert_eq!(
        joblog_core::result_blob::decode(&result).unwrap(),
        br#"{"ok":true}"#
    );
    assert_eq!(
        restored.get_job(queued.id).await.unwrap().map(|j| j.state),
        Some(JobState::Queued)
    );
    assert_eq!(restored.get_job(after.id).await.unwrap(), None);
}
