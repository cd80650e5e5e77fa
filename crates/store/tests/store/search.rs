//! Searches across jobs' logs on both stores: hits exactly equal to a
//! scan of every log, however the logs are kept (rows, segments with and
//! without a text index, partly sealed), with filters, streams, cursors
//! and small budgets; a search during sealing and retention; segments the
//! index rules out are not read.

use std::time::Duration;

use joblog_core::search::{SearchCursor, SearchHit, SearchPage, SearchPattern, SearchQuery};
use joblog_store::sealed::SealSlice;
use joblog_store::SearchBudget;

use super::sealed::seal;
use super::*;

joblog_store::backend_tests! {
    a_search_finds_what_a_scan_of_every_log_finds,
    a_search_during_sealing_and_retention_misses_nothing_and_repeats_nothing,
    the_index_rules_out_segments_without_reading_them,
}

/// A log of `n` records of `job`'s kind: ids, numbers, stack traces,
/// case and Unicode, masked values, and a rare term in one place.
fn log_of(job: u64, n: u64) -> Vec<Record> {
    (1..=n)
        .map(|seq| {
            let stream = Stream::ALL[((seq + job) % 7) as usize];
            let message = match (seq + job * 3) % 17 {
                0 => format!("ERROR: disk full on /dev/sd{}", seq % 4),
                1 => format!("Disk Full? no: {} GB free", seq * 13 % 97),
                2 => format!(
                    "request id={:016x} took {} ms",
                    (seq * 0x9e37_79b9) ^ job,
                    seq % 250
                ),
                3 => "  at joblog::engine::run (src/engine/run.rs:118:9)".to_string(),
                4 => "password=*** accepted".to_string(),
                5 => "é ü 漢字 \u{212A}elvin É".to_string(),
                6 => String::new(),
                7 => format!("line {seq}: DISK   FULL retry {}", seq % 3),
                _ => format!("step {seq} of job {job} ok"),
            };
            let message = if job == 4 && seq == n / 2 {
                "the zanzibar quokka appeared".to_string()
            } else {
                message
            };
            record(seq, stream, &message)
        })
        .collect()
}

/// A job named `name` with `records` appended, claimed; finished unless
/// `running`.
fn job_with_log(t: &mut TestStore, name: &str, records: &[Record], running: bool) -> JobId {
    let job = t.insert(Some(name)).id;
    assert_eq!(t.claim("node-a").expect("queued").id, job);
    for end in (0..records.len()).step_by(700) {
        let upto = (end + 700).min(records.len());
        t.apply(vec![append(job, &records[end..upto], &records[..upto])]);
    }
    if !running {
        t.finish_with(job, JobState::Succeeded, Some(0), None, summary_of(records));
    }
    job
}

/// Seals the first `n` records of a job without a text index, as a
/// segment sealed before indexes existed.
fn seal_without_index(t: &mut TestStore, job: JobId, records: &[Record]) {
    for slice in records.chunks(1000) {
        let mut slice = SealSlice::encode(job, slice).unwrap();
        assert!(slice.grams.is_some());
        slice.grams = None;
        assert_eq!(t.count(WriteOp::SealSlice(Box::new(slice))), 1);
    }
}

/// Every job's logs kept every way: sealed with an index, sealed without
/// one, partly sealed, running (rows), and a queued job with none.
async fn every_kind_of_log(t: &mut TestStore) -> Vec<JobId> {
    let mut jobs = Vec::new();
    let sealed = job_with_log(t, "backup-db", &log_of(1, 2500), false);
    seal(t, sealed).await;
    jobs.push(sealed);
    let old = log_of(2, 1800);
    let unindexed = job_with_log(t, "backup-web", &old, false);
    seal_without_index(t, unindexed, &old);
    jobs.push(unindexed);
    let partly = log_of(3, 1600);
    let part = job_with_log(t, "report", &partly, false);
    seal_without_index(t, part, &partly[..1000]);
    jobs.push(part);
    let rare = job_with_log(t, "backup-db", &log_of(4, 1200), false);
    seal(t, rare).await;
    jobs.push(rare);
    jobs.push(job_with_log(t, "deploy", &log_of(5, 900), true));
    jobs.push(t.insert(Some("queued")).id);
    jobs
}

/// Every page of a search, joined.
async fn search_all(
    t: &TestStore,
    query: &SearchQuery,
    limit: u32,
    budget: SearchBudget,
) -> (Vec<SearchHit>, Vec<SearchPage>) {
    let mut hits = Vec::new();
    let mut pages = Vec::new();
    let mut cursor: Option<SearchCursor> = None;
    for _ in 0..10_000 {
        let page = t.store.search(query, cursor, limit, budget).await.unwrap();
        assert!(page.hits.len() <= limit as usize);
        hits.extend(page.hits.iter().cloned());
        cursor = page.next_cursor;
        pages.push(page);
        if cursor.is_none() {
            return (hits, pages);
        }
    }
    panic!("a search did not end in 10,000 pages");
}

/// What a search must find: every matching record of every job listed,
/// newest job first, read whole through `read_log`.
async fn brute_force(t: &TestStore, query: &SearchQuery) -> Vec<SearchHit> {
    let mut listing = query.jobs.clone();
    listing.limit = 1000;
    let jobs = t.store.list_jobs(listing).await.unwrap();
    let mut hits = Vec::new();
    for job in jobs {
        let mut after = 0;
        loop {
            let page = t.log(job.id, after, 1000, None).await;
            let Some(last) = page.last() else { break };
            after = last.seq;
            for r in page {
                let stream_wanted = query.streams.as_ref().is_none_or(|s| s.contains(&r.stream));
                if stream_wanted && query.pattern.matches(&r.message) {
                    hits.push(SearchHit {
                        job_id: job.id,
                        job_name: job.name.clone(),
                        seq: r.seq,
                        ts: r.ts,
                        stream: r.stream,
                        message: r.message,
                    });
                }
            }
        }
    }
    hits
}

fn query(q: &str, regex: bool) -> SearchQuery {
    SearchQuery {
        pattern: SearchPattern::new(q, regex).unwrap(),
        jobs: JobQuery::default(),
        streams: None,
    }
}

fn tiny_budget() -> SearchBudget {
    SearchBudget {
        records: 333,
        time: Duration::from_secs(3600),
    }
}

async fn a_search_finds_what_a_scan_of_every_log_finds(db: TestDatabase) {
    let mut t = open_store(db);
    every_kind_of_log(&mut t).await;
    let mut queries = vec![
        query("disk full", false),
        query("DISK", false),
        query("zanzibar quokka", false),
        query("é", false),
        query("É", false),
        query("\u{212A}elvin", false),
        query("kelvin", true),
        query("***", false),
        query("password=hunter2", false),
        query("%_\\", false),
        query("x", false),
        query("disk\\s+full", true),
        query("(?-i)DISK", true),
        query("id=[0-9a-f]{16} took 1[0-9]{2} ms", true),
        query("^$", true),
        query("engine::run|quokka", true),
        query("nowhere at all", false),
    ];
    let mut filtered = query("disk full", false);
    filtered.jobs.name = Some(NameFilter::parse("backup*"));
    queries.push(filtered);
    let mut by_stream = query("full", false);
    by_stream.streams = Some(vec![Stream::Error, Stream::Warning]);
    queries.push(by_stream);
    let mut by_state = query("ok", false);
    by_state.jobs.states = vec![JobState::Running];
    queries.push(by_state);

    for q in &queries {
        let want = brute_force(&t, q).await;
        let jobs: std::collections::BTreeSet<JobId> = want.iter().map(|h| h.job_id).collect();
        for (limit, budget) in [(1000, SearchBudget::default()), (7, tiny_budget())] {
            let (got, pages) = search_all(&t, q, limit, budget).await;
            let label = format!("{:?} limit {limit}", q.pattern);
            assert_eq!(got.len(), want.len(), "{label}");
            assert_eq!(got, want, "{label}");
            let last = pages.last().unwrap();
            assert_eq!(last.jobs_matched, Some(jobs.len() as u64), "{label}");
            assert!(pages[..pages.len() - 1]
                .iter()
                .all(|p| p.jobs_matched.is_none()));
        }
    }
    // The searches above meant something: hits of every kind of log.
    let all = brute_force(&t, &query("disk full", false)).await;
    let jobs: std::collections::BTreeSet<JobId> = all.iter().map(|h| h.job_id).collect();
    assert_eq!(jobs.len(), 5, "every job with a log holds the text");
    assert!(brute_force(&t, &query("hunter2", false)).await.is_empty());
}

async fn a_search_during_sealing_and_retention_misses_nothing_and_repeats_nothing(
    db: TestDatabase,
) {
    let mut t = open_store(db);
    // The oldest job is deleted midway, before the search reaches it.
    let doomed = job_with_log(&mut t, "doomed", &log_of(6, 800), false);
    let jobs = every_kind_of_log(&mut t).await;
    let (partly, running) = (jobs[2], jobs[4]);
    let q = query("disk full", false);
    let want: Vec<SearchHit> = brute_force(&t, &q)
        .await
        .into_iter()
        .filter(|h| h.job_id != doomed)
        .collect();
    assert!(want.iter().any(|h| h.job_id == partly));

    let budget = SearchBudget {
        records: 150,
        time: Duration::from_secs(3600),
    };
    let mut got = Vec::new();
    let mut cursor = None;
    let mut page_no = 0;
    loop {
        let page = t.store.search(&q, cursor, 5, budget).await.unwrap();
        got.extend(page.hits);
        cursor = page.next_cursor;
        page_no += 1;
        match page_no {
            // Sealing moves rows into segments under the search.
            2 => {
                seal(&mut t, partly).await;
            }
            3 => {
                let log = log_of(5, 900);
                t.finish_with(
                    running,
                    JobState::Succeeded,
                    Some(0),
                    None,
                    summary_of(&log),
                );
                seal(&mut t, running).await;
            }
            4 => assert_eq!(t.count(WriteOp::DeleteJob { job: doomed }), 1),
            _ => {}
        }
        if cursor.is_none() {
            break;
        }
    }
    assert!(page_no > 4, "the search took {page_no} pages");
    assert_eq!(got, want);
}

async fn the_index_rules_out_segments_without_reading_them(db: TestDatabase) {
    let mut t = open_store(db);
    // Every third job is `sparse`: a listing of those is not a range of
    // ids, and their segments' index rows are read by their ids.
    for job in 1..=7 {
        let name = if job % 3 == 1 { "sparse" } else { "many" };
        let id = job_with_log(&mut t, name, &log_of(job, 3000), false);
        seal(&mut t, id).await;
    }
    let (hits, pages) = search_all(
        &t,
        &query("zanzibar quokka", false),
        100,
        SearchBudget::default(),
    )
    .await;
    assert_eq!(hits.len(), 1);
    assert_eq!(pages.len(), 1);
    let scanned = pages[0].scanned;
    assert_eq!(scanned.jobs, 7);
    // 21 segments: the one holding the term is read; the index may let
    // another through by chance, rarely more.
    assert_eq!(scanned.segments + scanned.skipped_by_index, 21);
    assert!(scanned.segments <= 3, "{scanned:?}");
    // A regular expression is ruled out by the text it requires too.
    let (hits, pages) = search_all(
        &t,
        &query("zanzibar\\s+quokka", true),
        100,
        SearchBudget::default(),
    )
    .await;
    assert_eq!(hits.len(), 1);
    assert!(pages[0].scanned.segments <= 3, "{:?}", pages[0].scanned);
    // A term everywhere reads what the page needs and no more.
    let (_, pages) = search_all(&t, &query("step", false), 10, SearchBudget::default()).await;
    assert_eq!(pages[0].hits.len(), 10);
    assert_eq!(pages[0].scanned.segments, 1);
    // The sparse jobs only, found as a scan of their logs finds them.
    for q in ["disk full", "zanzibar quokka"] {
        let mut sparse = query(q, false);
        sparse.jobs.name = Some(NameFilter::parse("sparse"));
        let want = brute_force(&t, &sparse).await;
        let (got, pages) = search_all(&t, &sparse, 1000, SearchBudget::default()).await;
        assert_eq!(got, want, "{q}");
        assert!(!got.is_empty());
        assert!(got.iter().all(|h| h.job_name.as_deref() == Some("sparse")));
        assert!(
            pages.iter().all(|p| p.scanned.jobs <= 3),
            "only the sparse jobs are read"
        );
    }
}
