//! Sealed logs on both stores: every read (pages forwards and backwards,
//! stream filters, the byte bound, searches, outlines) gives the same
//! answer before, during and after sealing; a slice replaces its rows only
//! when all of them are there; retention deletes segments; a damaged
//! segment is an error for its job alone.

use joblog_core::{LogSearch, MAX_OUTLINE_GROUPS};
use joblog_store::sealed::{SealSlice, SEGMENT_RECORDS, SEGMENT_TEXT_BYTES};
use joblog_store::testing::{Backend, PgSession};

use super::*;

joblog_store::backend_tests! {
    sealed_logs_read_the_same_as_rows_at_every_size,
    a_million_records_read_the_same_sealed,
    a_slice_replaces_its_rows_only_when_all_are_there,
    finished_unsealed_jobs_are_listed_until_sealed,
    retention_deletes_sealed_segments_with_their_job,
    a_damaged_segment_is_an_error_for_its_job_only,
}

/// A log of `n` records with every stream, fields, continued lines,
/// masked values, long lines, the cap's marker and the text searched for.
fn varied_log(n: u64) -> Vec<Record> {
    (1..=n)
        .map(|seq| {
            let stream = Stream::ALL[(seq * 7 % 11 % 7) as usize];
            let message = match seq % 13 {
                0 => format!("line {seq}: the Needle is here"),
                1 => format!("password=*** for line {seq}"),
                2 => "é ü 漢字 \u{1}\t tab".to_string(),
                3 => String::new(),
                4 => "x".repeat(3000 + seq as usize % 100),
                _ => format!("message {seq} of the varied log"),
            };
            let r = record(seq, stream, &message);
            match seq % 50 {
                1 => with_fields(
                    record(seq, Stream::Information, &format!("Step {seq}")),
                    json!({"group": "start"}),
                ),
                30 => with_fields(
                    record(seq, Stream::Information, ""),
                    json!({"group": "end"}),
                ),
                7 => with_fields(r, json!({"continued": true})),
                9 => with_fields(
                    record(seq, Stream::Progress, "copying"),
                    json!({"percent": seq % 100, "activity": "copying"}),
                ),
                44 => with_fields(
                    record(seq, Stream::Error, "[joblog: 10 records dropped]"),
                    json!({"truncated": true, "dropped_records": 10, "dropped_bytes": 640}),
                ),
                _ => r,
            }
        })
        .collect()
}

/// A finished job whose log is `records`, appended in batches as a
/// pipeline would.
fn finished_with_log(t: &mut TestStore, records: &[Record]) -> JobId {
    let job = t.insert(Some("sealed")).id;
    assert_eq!(t.claim("node-a").expect("queued").id, job);
    for end in (0..records.len()).step_by(5000) {
        let upto = (end + 5000).min(records.len());
        t.apply(vec![append(job, &records[end..upto], &records[..upto])]);
    }
    t.finish_with(job, JobState::Succeeded, Some(0), None, summary_of(records));
    job
}

/// What sealing one job did: slices sealed, records they held, and
/// whether the job was marked sealed.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Sealed {
    segments: u64,
    records: u64,
    bytes_before: u64,
    bytes_after: u64,
    marked: bool,
}

/// Seals the job through the store's writer, slice by slice of at most
/// [`SEGMENT_RECORDS`] records and [`SEGMENT_TEXT_BYTES`] of text, as the
/// engine's sealer does.
pub(super) async fn seal(t: &mut TestStore, job: JobId) -> Sealed {
    let mut sealed = Sealed::default();
    loop {
        let mut rows = t.store.unsealed_rows(job, SEGMENT_RECORDS).await.unwrap();
        if rows.is_empty() {
            break;
        }
        let mut text = 0;
        let keep = rows
            .iter()
            .position(|r| {
                text += r.message.len();
                text >= SEGMENT_TEXT_BYTES
            })
            .map_or(rows.len(), |i| i + 1);
        rows.truncate(keep);
        let slice = SealSlice::encode(job, &rows).unwrap();
        let (records, before, after) = (slice.records(), slice.raw_bytes, slice.data.len());
        match t.apply_one(WriteOp::SealSlice(Box::new(slice))) {
            Outcome::Count(1) => {
                sealed.segments += 1;
                sealed.records += records;
                sealed.bytes_before += before;
                sealed.bytes_after += after as u64;
            }
            other => panic!("a slice of a finished job's rows did not seal: {other:?}"),
        }
    }
    sealed.marked = t.apply_one(WriteOp::MarkSealed { job }) == Outcome::Count(1);
    sealed
}

/// Everything a client may read of a log, as text to compare.
async fn views(t: &TestStore, id: JobId) -> Vec<String> {
    let s = &t.store;
    let mut out = Vec::new();
    // Forward, in pages of several sizes, with and without filters.
    for (limit, streams) in [
        (1000, None),
        (7, None),
        (333, Some(vec![Stream::Error, Stream::Warning])),
        (50, Some(vec![Stream::Progress])),
    ] {
        let mut after = 0;
        loop {
            let page = s.read_log(id, after, limit, streams.clone()).await.unwrap();
            out.push(format!("{after}+{limit}: {page:?}"));
            match page.last() {
                Some(last) => after = last.seq,
                None => break,
            }
        }
    }
    for after in [0, 1, 998, 999, 1000, 1001, 1500, 5000] {
        let page = s.read_log(id, after, 3, None).await.unwrap();
        out.push(format!("at {after}: {page:?}"));
    }
    // Backwards, walked from the end, and single records of a stream.
    let mut before = u64::MAX;
    loop {
        let page = s.read_log_before(id, before, 400, None).await.unwrap();
        out.push(format!("before {before}: {page:?}"));
        match (page.more, page.records.first()) {
            (true, Some(first)) => before = first.seq,
            _ => break,
        }
    }
    for before in [1, 2, 999, 1000, 1001, 1002, 2001, u64::MAX] {
        let errors = Some(vec![Stream::Error]);
        let page = s.read_log_before(id, before, 1, errors).await.unwrap();
        out.push(format!("error before {before}: {page:?}"));
    }
    // Searches: first page, a page further on, a filtered one.
    let needle = LogSearch::new("NEEDLE").unwrap();
    for (after, limit, streams) in [
        (0, 5, None),
        (500, 3, None),
        (0, 100_000, None),
        (1000, 2, Some(vec![Stream::Output])),
    ] {
        let hits = s
            .search_log(id, &needle, after, limit, streams)
            .await
            .unwrap();
        out.push(format!("search {after}+{limit}: {hits:?}"));
    }
    let outline = s.log_outline(id, MAX_OUTLINE_GROUPS).await.unwrap();
    out.push(format!("outline: {outline:?}"));
    out
}

async fn sealed_logs_read_the_same_as_rows_at_every_size(db: TestDatabase) {
    let mut t = open_store(db);
    for n in [0, 1, 999, 1000, 1001, 2500] {
        let log = varied_log(n);
        let id = finished_with_log(&mut t, &log);
        let rows = views(&t, id).await;
        assert_eq!(
            t.log(id, 0, u32::MAX, None).await.len(),
            rows_in_a_page(&log)
        );

        // Part sealed: the first slice only.
        if n > 0 {
            let first = &log[..log.len().min(SEGMENT_RECORDS as usize)];
            let slice = SealSlice::encode(id, first).unwrap();
            assert_eq!(t.count(WriteOp::SealSlice(Box::new(slice))), 1);
            assert_eq!(views(&t, id).await, rows, "{n} records, one slice sealed");
        }

        let report = seal(&mut t, id).await;
        // A job that wrote nothing is sealed as it ends.
        assert_eq!(report.marked, n > 0, "{n} records: {report:?}");
        assert_eq!(
            report.records + u64::from(n > 0) * (n.min(u64::from(SEGMENT_RECORDS))),
            n,
            "{report:?}"
        );
        let sealed = views(&t, id).await;
        for (i, (a, b)) in rows.iter().zip(&sealed).enumerate() {
            assert_eq!(a, b, "{n} records, view {i}");
        }
        assert_eq!(rows.len(), sealed.len(), "{n} records");
        // The job itself is as it was.
        assert_eq!(t.job(id).await.log, summary_of(&log));
    }
}

/// Records a page of `u32::MAX` holds before its byte bound.
fn rows_in_a_page(log: &[Record]) -> usize {
    let mut bytes = 0;
    for (i, r) in log.iter().enumerate() {
        bytes += r.message.len();
        if bytes >= joblog_store::MAX_PAGE_BYTES {
            return i + 1;
        }
    }
    log.len()
}

async fn a_million_records_read_the_same_sealed(db: TestDatabase) {
    let mut t = open_store(db);
    let log: Vec<Record> = (1..=1_000_000u64)
        .map(|seq| {
            let stream = if seq % 1000 == 0 {
                Stream::Error
            } else {
                Stream::Output
            };
            let text = if seq % 4099 == 0 { "a needle" } else { "line" };
            record(seq, stream, &format!("{text} {seq} of a million"))
        })
        .collect();
    let id = finished_with_log(&mut t, &log);
    let read_all = |t: &TestStore| {
        let store = t.store.clone();
        async move {
            let mut all = Vec::with_capacity(1_000_000);
            loop {
                let after = all.last().map_or(0, |r: &Record| r.seq);
                let page = store.read_log(id, after, 10_000, None).await.unwrap();
                if page.is_empty() {
                    return all;
                }
                all.extend(page);
            }
        }
    };
    let probes = |t: &TestStore| {
        let store = t.store.clone();
        async move {
            let needle = LogSearch::new("needle").unwrap();
            let errors = Some(vec![Stream::Error]);
            (
                store
                    .search_log(id, &needle, 500_000, 10, None)
                    .await
                    .unwrap(),
                store
                    .read_log_before(id, 777_777, 1, errors.clone())
                    .await
                    .unwrap(),
                store.read_log(id, 999_990, 1000, errors).await.unwrap(),
                store.log_outline(id, MAX_OUTLINE_GROUPS).await.unwrap(),
            )
        }
    };
    assert!(read_all(&t).await == log, "rows");
    let before = probes(&t).await;
    let report = seal(&mut t, id).await;
    assert_eq!((report.records, report.segments), (1_000_000, 1000));
    assert!(report.bytes_after * 5 < report.bytes_before, "{report:?}");
    assert!(read_all(&t).await == log, "sealed");
    assert_eq!(probes(&t).await, before);
}

async fn a_slice_replaces_its_rows_only_when_all_are_there(db: TestDatabase) {
    let mut t = open_store(db);
    let log = varied_log(30);
    let id = finished_with_log(&mut t, &log);
    let slice =
        |records: &[Record]| WriteOp::SealSlice(Box::new(SealSlice::encode(id, records).unwrap()));
    // Not every row is sealed yet: no mark.
    assert_eq!(t.count(WriteOp::MarkSealed { job: id }), 0);
    assert_eq!(t.count(slice(&log[..10])), 1);
    // Sealed already, or straddling sealed rows: nothing changes.
    assert_eq!(t.count(slice(&log[..10])), 0);
    assert_eq!(t.count(slice(&log[5..15])), 0);
    assert_eq!(t.log(id, 0, 100, None).await, log);
    assert_eq!(t.count(slice(&log[10..30])), 1);
    assert_eq!(t.count(WriteOp::MarkSealed { job: id }), 1);
    assert_eq!(t.count(WriteOp::MarkSealed { job: id }), 0, "once");
    assert_eq!(t.log(id, 0, 100, None).await, log);
    // A running job's log is never marked sealed.
    let running = t.insert(None).id;
    t.claim("node-a").unwrap();
    assert_eq!(t.count(WriteOp::MarkSealed { job: running }), 0);
}

async fn finished_unsealed_jobs_are_listed_until_sealed(db: TestDatabase) {
    let mut t = open_store(db);
    let a = finished_with_log(&mut t, &varied_log(3));
    let b = finished_with_log(&mut t, &varied_log(0));
    let running = t.insert(None).id;
    t.claim("node-b").unwrap();
    let listed = |t: &TestStore, after: JobId, node: Option<&str>| {
        let (store, node) = (t.store.clone(), node.map(str::to_owned));
        async move {
            let jobs = store.unsealed_jobs(after, 10, node).await.unwrap();
            jobs.iter().map(|(id, _)| *id).collect::<Vec<_>>()
        }
    };
    let c = finished_with_log(&mut t, &varied_log(2));
    // `b` wrote nothing: sealed as it ended, never listed.
    assert_eq!(listed(&t, 0, None).await, vec![a, c]);
    assert_eq!(listed(&t, a, None).await, vec![c]);
    assert_eq!(listed(&t, 0, Some("node-a")).await, vec![a, c]);
    assert_eq!(listed(&t, 0, Some("node-b")).await, Vec::<JobId>::new());
    assert!(!seal(&mut t, b).await.marked, "sealed already");
    let finished_at = t.store.unsealed_jobs(0, 1, None).await.unwrap()[0].1;
    assert_eq!(Some(finished_at), t.job(a).await.finished_at);
    seal(&mut t, c).await;
    assert_eq!(listed(&t, 0, None).await, vec![a]);
    seal(&mut t, a).await;
    assert_eq!(listed(&t, 0, None).await, Vec::<JobId>::new());
    assert!(!listed(&t, 0, None).await.contains(&running));
}

async fn retention_deletes_sealed_segments_with_their_job(db: TestDatabase) {
    let mut t = open_store(db);
    let log = varied_log(2500);
    let id = finished_with_log(&mut t, &log);
    let kept = finished_with_log(&mut t, &varied_log(20));
    seal(&mut t, kept).await;
    // Part sealed, as a sealer stopped half way leaves it.
    let first = SealSlice::encode(id, &log[..1000]).unwrap();
    assert_eq!(t.count(WriteOp::SealSlice(Box::new(first))), 1);
    let mut deleted = Vec::new();
    loop {
        let n = t.count(WriteOp::DeleteLogChunk { job: id, max: 600 });
        deleted.push(n);
        if n < 600 {
            break;
        }
    }
    // The sealed slice goes whole, then rows 600 at a time.
    assert_eq!(deleted, vec![1000, 600, 600, 300]);
    assert!(t.log(id, 0, 100, None).await.is_empty());
    assert_eq!(t.count(WriteOp::DeleteJob { job: id }), 1);
    assert_eq!(t.log(kept, 0, 100, None).await, varied_log(20));
}

async fn a_damaged_segment_is_an_error_for_its_job_only(db: TestDatabase) {
    let mut t = open_store(db);
    let damaged = finished_with_log(&mut t, &varied_log(1500));
    let fine = finished_with_log(&mut t, &varied_log(1500));
    seal(&mut t, damaged).await;
    seal(&mut t, fine).await;
    // The second segment of one job loses its last bytes.
    match t.db.backend() {
        Backend::Sqlite => {
            let path = t.db.dir().join("joblog.db");
            let c = rusqlite::Connection::open(path).unwrap();
            c.execute(
                "UPDATE segments SET data = substr(data, 1, length(data) - 7) \
                 WHERE job_id = ?1 AND first_seq = 1001",
                [damaged],
            )
            .unwrap();
        }
        Backend::Postgres => {
            let pg = PgSession::connect(t.db.url()).await;
            pg.client
                .execute(
                    "UPDATE segments SET data = substring(data from 1 for length(data) - 7) \
                     WHERE job_id = $1 AND first_seq = 1001",
                    &[&damaged],
                )
                .await
                .unwrap();
            pg.close().await;
        }
    }
    let is_damaged = |r: Result<Vec<Record>, StoreError>| match r {
        Err(StoreError::DamagedLog { job, detail }) => {
            assert_eq!(job, damaged);
            assert!(detail.contains("seq 1001"), "{detail}");
            true
        }
        other => panic!("expected a damaged log, got {:?}", other.map(|r| r.len())),
    };
    // What lies before the damage still reads; what needs it is an error.
    assert_eq!(t.log(damaged, 0, 1000, None).await, varied_log(1000));
    assert!(is_damaged(t.store.read_log(damaged, 990, 100, None).await));
    let needle = LogSearch::new("needle").unwrap();
    assert!(matches!(
        t.store.search_log(damaged, &needle, 0, 5, None).await,
        Err(StoreError::DamagedLog { .. })
    ));
    assert!(matches!(
        t.store.log_outline(damaged, 10).await,
        Err(StoreError::DamagedLog { .. })
    ));
    assert!(matches!(
        t.store.read_log_before(damaged, u64::MAX, 10, None).await,
        Err(StoreError::DamagedLog { .. })
    ));
    // The other job, and the store, are fine.
    assert_eq!(t.log(fine, 0, 2000, None).await, varied_log(1500));
    assert_eq!(t.job(damaged).await.id, damaged);
    // A search across jobs passes over the damaged segment alone, and
    // says so.
    let q = joblog_core::search::SearchQuery {
        pattern: joblog_core::search::SearchPattern::new("needle", false).unwrap(),
        jobs: JobQuery::default(),
        streams: None,
    };
    let page = t
        .store
        .search(&q, None, 1000, joblog_store::SearchBudget::default())
        .await
        .unwrap();
    assert_eq!(page.next_cursor, None);
    assert_eq!(page.scanned.unreadable, 1);
    let from = |job: JobId| page.hits.iter().filter(|h| h.job_id == job).count();
    let needles_in = |records: &[Record]| {
        records
            .iter()
            .filter(|r| needle.matches(&r.message))
            .count()
    };
    assert_eq!(from(fine), needles_in(&varied_log(1500)));
    assert_eq!(from(damaged), needles_in(&varied_log(1000)));
}
