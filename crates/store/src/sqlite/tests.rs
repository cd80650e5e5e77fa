//! How SQLite plans and prepares the statements requests run.

use rusqlite::{params, Connection};

use super::schema::open_conn;
use super::*;
use crate::schedules::writes as schedule_writes;

/// A page of the log read again and again with other bounds runs the
/// statement prepared once, not re-planned at each bind.
#[test]
fn log_reads_are_not_prepared_again_at_every_bind() {
    use rusqlite::StatementStatus;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("joblog.db");
    SqliteStore::open(&path, &StoreOptions::default()).unwrap();
    let conn = open_conn(&path, SyncMode::Normal, true, None).unwrap();
    let mut stmt = conn
        .prepare("SELECT seq FROM log WHERE job_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3")
        .unwrap();
    for (after, limit) in [(0, 10), (5, 1000), (7, 3)] {
        let n = stmt
            .query_map(params![1, after, limit], |r| r.get::<_, i64>(0))
            .unwrap()
            .count();
        assert_eq!(n, 0);
    }
    assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0);
}

fn plan_of(conn: &Connection, q: &str, params: &[crate::db::Param]) -> Vec<String> {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {q}")).unwrap();
    let params: Vec<&dyn rusqlite::ToSql> =
        params.iter().map(|p| p as &dyn rusqlite::ToSql).collect();
    stmt.query_map(params.as_slice(), |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// Every query a request runs must be an index search, never a scan:
/// that is what keeps listing and log reads O(log n) as the database
/// grows to tens of millions of records. A listing may merge several
/// searches (`MERGE`, `LEFT`, `RIGHT`), each in id order, so it never
/// sorts either; a subquery (a segment's bound) is a search too.
/// A new database has no free pages (its migrations rebuilt a table):
/// the first rows grow the file, as the storage figures count them.
#[test]
fn a_new_database_starts_without_free_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("joblog.db");
    SqliteStore::open(&path, &StoreOptions::default()).unwrap();
    let conn = open_conn(&path, SyncMode::Normal, true, None).unwrap();
    let free: i64 = conn
        .query_row("PRAGMA freelist_count", [], |r| r.get(0))
        .unwrap();
    assert_eq!(free, 0);
}

#[test]
fn request_queries_search_indexes_and_never_scan() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.db");
    SqliteStore::open(&path, &StoreOptions::default()).unwrap();
    let conn = open_conn(&path, SyncMode::Normal, true, None).unwrap();
    let mut queries: Vec<(String, Vec<crate::listing::Param>)> = [
        crate::reads::SELECT_JOB.sqlite.replace("?1", "1"),
        crate::reads::READ_RESULT.sqlite.replace("?1", "1"),
        crate::reads::TOKEN_BY_HASH.sqlite.replace("?1", "x'00'"),
        // The scheduler's: due schedules, the next fire, a run active.
        schedule_writes::DUE
            .sqlite
            .replace("?1", "5")
            .replace("?2", "257"),
        crate::schedules::reads::NEXT_FIRE.sqlite.into(),
        schedule_writes::ACTIVE.sqlite.replace("?1", "3"),
    ]
    .into_iter()
    .map(|q| (q, Vec::new()))
    .collect();
    // Every statement under a log read (segments included): each one
    // job's log by its primary key. The sealer's own walk of unsealed
    // jobs and its count are index searches too.
    let reads = crate::log_reads::every_statement();
    assert_eq!(reads.len(), 14);
    let bound = |st: crate::db::Statement, mut params: Vec<crate::db::Param>| {
        // As the connection binds them: as many as its text has.
        let used = (1..=params.len())
            .filter(|i| st.sqlite.contains(&format!("?{i}")))
            .max();
        params.truncate(used.unwrap_or(0));
        (st.sqlite.to_string(), params)
    };
    for (name, st, params) in reads {
        if name == "COUNT_UNSEALED" {
            // A count bounded by its LIMIT: a walk of the partial
            // index of unsealed jobs, never of the table.
            let (text, params) = bound(st, params);
            let plan = plan_of(&conn, &text, &params);
            assert!(
                plan.iter().any(|p| p.contains("USING INDEX jobs_unsealed")),
                "{text}: {plan:?}"
            );
            continue;
        }
        queries.push(bound(st, params));
    }
    queries.extend(crate::db::listing_statements(
        crate::listing::Dialect::Sqlite,
    ));
    // The notifications' reads: the API's and the sender's; and each
    // request's session, with what signing in and out writes.
    for (_, st, params) in crate::notifications::every_statement()
        .into_iter()
        .chain(crate::accounts::every_statement())
    {
        queries.push(bound(st, params));
    }
    for (q, params) in &queries {
        let plan = plan_of(&conn, q, params);
        assert!(
            plan.iter().any(|p| p.starts_with("SEARCH"))
                && plan.iter().all(|p| p.starts_with("SEARCH")
                    || p.starts_with("SCALAR SUBQUERY")
                    || ["MERGE (UNION ALL)", "LEFT", "RIGHT"].contains(&p.as_str())),
            "{q}\n  plan: {plan:?}"
        );
        assert!(
            !plan.iter().any(|p| p.contains("TEMP B-TREE")),
            "{q} sorts in memory: {plan:?}"
        );
    }
}
