//! The audit trail on both stores: entries appended in the writer's
//! batches, numbered in commit order, paged forward by `after` and backward
//! by `before`, filtered by actor, action and job; long fields cut; kept
//! across reopening, retention and their job's deletion; and a database of
//! the version before it gets its table when opened.

use joblog_core::{AuditEntry, AuditQuery, NewAudit, MAX_AUDIT_FIELD};
use joblog_store::testing::{Backend, PgSession};

use super::*;

joblog_store::backend_tests! {
    audit_entries_are_paged_by_after_and_by_before,
    audit_filters_narrow_the_listing_alone_and_together,
    long_audit_fields_are_cut_and_entries_survive_reopen_and_job_deletion,
    a_database_of_the_version_before_gets_the_audit_table_when_opened,
}

fn entry(actor: &str, action: &str, job_id: Option<JobId>) -> NewAudit {
    let mut detail = serde_json::Map::new();
    detail.insert("why".into(), json!(format!("{actor} {action}")));
    detail.insert("n".into(), json!([1, 2, {"deep": null}]));
    NewAudit {
        at: Timestamp(1_700_000_000_123_456),
        actor: actor.into(),
        action: action.into(),
        job_id,
        remote: Some("127.0.0.1:50000".into()),
        request_id: Some("req-1".into()),
        node: "node-a".into(),
        detail,
    }
}

fn audit(entries: Vec<NewAudit>) -> WriteOp {
    WriteOp::Audit(entries)
}

fn page(after: u64, before: Option<u64>, limit: u32) -> AuditQuery {
    AuditQuery {
        after,
        before,
        limit,
        ..AuditQuery::default()
    }
}

async fn list(t: &TestStore, q: AuditQuery) -> Vec<AuditEntry> {
    t.store.list_audit(q).await.unwrap()
}

fn ids(entries: &[AuditEntry]) -> Vec<u64> {
    entries.iter().map(|e| e.id).collect()
}

fn actions(entries: &[AuditEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.entry.action.as_str()).collect()
}

async fn audit_entries_are_paged_by_after_and_by_before(db: TestDatabase) {
    let mut t = open_store(db);
    assert!(list(&t, page(0, None, 10)).await.is_empty());
    // Seven entries over three batches, one batch with other ops too.
    let job = t.insert(Some("audited"));
    let outcomes = t.apply(vec![
        audit(vec![
            entry("alice", "a1", Some(job.id)),
            entry("bob", "a2", None),
        ]),
        insert_op(Some("beside")),
        audit(vec![entry("alice", "a3", None)]),
    ]);
    assert_eq!(outcomes[0], Outcome::Done);
    assert_eq!(outcomes[2], Outcome::Done);
    t.apply(vec![audit(vec![entry("carol", "a4", None)])]);
    t.apply(vec![audit(vec![
        entry("alice", "a5", None),
        entry("bob", "a6", None),
        entry("bob", "a7", None),
    ])]);

    let all = list(&t, page(0, None, 100)).await;
    assert_eq!(actions(&all), ["a1", "a2", "a3", "a4", "a5", "a6", "a7"]);
    let all_ids = ids(&all);
    assert!(all_ids.windows(2).all(|w| w[0] < w[1]), "{all_ids:?}");
    // Entries come back as they went in.
    assert_eq!(all[0].entry, entry("alice", "a1", Some(job.id)));
    assert_eq!(all[1].entry, entry("bob", "a2", None));

    // Forward: pages by `after`, each entry once.
    let mut paged = Vec::new();
    let mut after = 0;
    loop {
        let p = list(&t, page(after, None, 3)).await;
        assert!(p.len() <= 3);
        let Some(last) = p.last() else { break };
        after = last.id;
        paged.extend(ids(&p));
    }
    assert_eq!(paged, all_ids);
    assert_eq!(
        ids(&list(&t, page(all_ids[1], None, 2)).await),
        all_ids[2..4]
    );
    assert!(list(&t, page(all_ids[6], None, 10)).await.is_empty());
    assert!(list(&t, page(u64::MAX, None, 10)).await.is_empty());

    // Backward: the page nearest below `before`, still oldest first.
    let newest = list(&t, page(0, Some(u64::MAX), 3)).await;
    assert_eq!(ids(&newest), all_ids[4..]);
    let older = list(&t, page(0, Some(newest[0].id), 3)).await;
    assert_eq!(ids(&older), all_ids[1..4]);
    let oldest = list(&t, page(0, Some(older[0].id), 3)).await;
    assert_eq!(ids(&oldest), all_ids[..1]);
    assert!(list(&t, page(0, Some(all_ids[0]), 3)).await.is_empty());
    // Both bounds: what lies between, nearest `before` first.
    let between = list(&t, page(all_ids[1], Some(all_ids[6]), 2)).await;
    assert_eq!(ids(&between), all_ids[4..6]);
    let between = list(&t, page(all_ids[1], Some(all_ids[4]), 10)).await;
    assert_eq!(ids(&between), all_ids[2..4]);
}

async fn audit_filters_narrow_the_listing_alone_and_together(db: TestDatabase) {
    let mut t = open_store(db);
    let (j1, j2) = (t.insert(None).id, t.insert(None).id);
    t.apply(vec![audit(vec![
        entry("alice", "job.submitted", Some(j1)),
        entry("bob", "job.submitted", Some(j2)),
        entry("alice", "job.cancelled", Some(j1)),
        entry("system", "job.groomed", Some(j2)),
        entry("alice", "token.created", None),
        entry("bob", "job.cancelled", Some(j1)),
    ])]);
    let q = |actor: Option<&str>, action: Option<&str>, job_id: Option<JobId>| AuditQuery {
        actor: actor.map(str::to_string),
        action: action.map(str::to_string),
        job_id,
        limit: 100,
        ..AuditQuery::default()
    };
    let who = |entries: &[AuditEntry]| -> Vec<String> {
        entries
            .iter()
            .map(|e| format!("{} {}", e.entry.actor, e.entry.action))
            .collect()
    };
    assert_eq!(
        who(&list(&t, q(Some("alice"), None, None)).await),
        [
            "alice job.submitted",
            "alice job.cancelled",
            "alice token.created"
        ]
    );
    assert_eq!(
        who(&list(&t, q(None, Some("job.cancelled"), None)).await),
        ["alice job.cancelled", "bob job.cancelled"]
    );
    assert_eq!(
        who(&list(&t, q(None, None, Some(j1))).await),
        [
            "alice job.submitted",
            "alice job.cancelled",
            "bob job.cancelled"
        ]
    );
    assert_eq!(
        who(&list(&t, q(Some("bob"), Some("job.cancelled"), None)).await),
        ["bob job.cancelled"]
    );
    assert_eq!(
        who(&list(&t, q(Some("alice"), None, Some(j1))).await),
        ["alice job.submitted", "alice job.cancelled"]
    );
    assert_eq!(
        who(&list(&t, q(Some("system"), Some("job.groomed"), Some(j2))).await),
        ["system job.groomed"]
    );
    assert!(list(&t, q(Some("carol"), None, None)).await.is_empty());
    assert!(list(&t, q(Some("alice"), Some("job.groomed"), None))
        .await
        .is_empty());
    assert!(list(&t, q(None, None, Some(j2 + 100))).await.is_empty());
    // Filters page like the whole trail, both ways.
    let alice = list(&t, q(Some("alice"), None, None)).await;
    let after_first = AuditQuery {
        after: alice[0].id,
        limit: 1,
        ..q(Some("alice"), None, None)
    };
    assert_eq!(ids(&list(&t, after_first).await), [alice[1].id]);
    let below_last = AuditQuery {
        before: Some(alice[2].id),
        limit: 1,
        ..q(Some("alice"), None, None)
    };
    assert_eq!(ids(&list(&t, below_last).await), [alice[1].id]);
}

async fn long_audit_fields_are_cut_and_entries_survive_reopen_and_job_deletion(db: TestDatabase) {
    let url = db.url().to_owned();
    let mut t = open_store(db);
    let job = t.finished_job(Some("gone-soon"), JobState::Succeeded);
    let mut long = entry(&"α".repeat(MAX_AUDIT_FIELD), "x", Some(job.id));
    long.action = "β".repeat(MAX_AUDIT_FIELD + 1);
    long.remote = Some("r".repeat(MAX_AUDIT_FIELD * 2));
    long.request_id = Some(format!("{}é", "q".repeat(MAX_AUDIT_FIELD - 1)));
    long.node = "n\0de".into();
    long.detail.insert("text".into(), json!("nul \u{0} and ✓"));
    t.apply(vec![audit(vec![long.clone()])]);

    let stored = list(&t, page(0, None, 10)).await.pop().unwrap().entry;
    // 'α' and 'β' are two bytes each: cut to whole characters.
    assert_eq!(stored.actor, "α".repeat(MAX_AUDIT_FIELD / 2));
    assert_eq!(stored.action, "β".repeat(MAX_AUDIT_FIELD / 2));
    assert_eq!(stored.remote.unwrap(), "r".repeat(MAX_AUDIT_FIELD));
    assert_eq!(stored.request_id.unwrap(), "q".repeat(MAX_AUDIT_FIELD - 1));
    assert_eq!(stored.node, "n\u{FFFD}de");
    assert_eq!(stored.detail, long.detail, "detail is kept whole");
    assert_eq!(stored.at, long.at);

    // Retention deletes the job; its entries stay.
    assert!(t.groom(None, Some(0)).await.contains(&job.id));
    assert_eq!(t.count(WriteOp::DeleteJob { job: job.id }), 1);
    t.apply(vec![WriteOp::DropLogPartitions {
        candidates: vec![job.id],
    }]);
    let of_job = AuditQuery {
        job_id: Some(job.id),
        limit: 10,
        ..AuditQuery::default()
    };
    assert_eq!(list(&t, of_job.clone()).await.len(), 1);

    let before = list(&t, page(0, None, 10)).await;
    let TestStore { store, writer, db } = t;
    drop(writer);
    drop(store);
    let mut again = open_store_at(db, &url);
    assert_eq!(list(&again, page(0, None, 10)).await, before);
    assert_eq!(list(&again, of_job).await, before);
    // Numbering goes on after the entries kept.
    again.apply(vec![audit(vec![entry("alice", "after.reopen", None)])]);
    let all = list(&again, page(0, None, 10)).await;
    assert_eq!(all.len(), 2);
    assert!(all[1].id > before[0].id);
}

/// The store at `url` opened again, keeping `db` (and its files) alive.
/// A database as the version before the audit trail left it: the table
/// and its indexes gone and the schema version set back to before it (the
/// migrations after it undone too: [`UNDO_LATEST`]'s, and the results'
/// conversion to blobs, which has nothing to undo), with a job in it.
/// Opening it migrates: the job is kept and entries can be written.
async fn a_database_of_the_version_before_gets_the_audit_table_when_opened(db: TestDatabase) {
    let url = db.url().to_owned();
    let mut t = open_store(db);
    let job = t.insert(Some("from-before"));
    let TestStore { store, writer, db } = t;
    drop(writer);
    drop(store);
    match db.backend() {
        Backend::Sqlite => {
            let path = db.dir().join("joblog.db");
            let conn = rusqlite::Connection::open(path).unwrap();
            let version: i64 = conn
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .unwrap();
            conn.execute_batch(UNDO_LATEST).unwrap();
            conn.execute_batch("DROP TABLE audit").unwrap();
            // And the results' conversion to blobs, and the audit table.
            conn.pragma_update(None, "user_version", version - UNDONE_MIGRATIONS - 2)
                .unwrap();
        }
        Backend::Postgres => {
            let pg = PgSession::connect(&url).await;
            pg.client.batch_execute(UNDO_LATEST).await.unwrap();
            let back = UNDONE_MIGRATIONS + 2;
            pg.client
                .batch_execute(&format!(
                    "DROP TABLE audit; UPDATE joblog_schema SET version = version - {back}"
                ))
                .await
                .unwrap();
            pg.close().await;
        }
    }
    let mut t = open_store_at(db, &url);
    assert_eq!(t.job(job.id).await.name.as_deref(), Some("from-before"));
    assert!(list(&t, page(0, None, 10)).await.is_empty());
    t.apply(vec![audit(vec![entry(
        "alice",
        "job.submitted",
        Some(job.id),
    )])]);
    assert_eq!(
        actions(&list(&t, page(0, None, 10)).await),
        ["job.submitted"]
    );
}
