//! What the log viewer reads on both stores: pages read backwards from a
//! seq (streams, the byte bound, whether more remain), searches (ASCII
//! case folded, every other character literal, the total against the
//! page, paging) and outlines (groups that do not nest, unmatched ends, an
//! open group, counts, the last progress, the bound on groups).

use joblog_core::{EarlierPage, LogGroup, LogOutline, LogSearch, SearchHits, MAX_OUTLINE_GROUPS};
use joblog_store::testing::Backend;

use super::*;

joblog_store::backend_tests! {
    earlier_pages_end_at_their_seq_and_say_whether_more_remain,
    an_earlier_page_of_long_lines_keeps_the_records_nearest_its_seq,
    searches_fold_ascii_letters_only_and_take_every_character_literally,
    a_search_counts_the_whole_log_and_pages_through_its_matches,
    outlines_fold_groups_that_do_not_nest_with_their_counts,
    an_outline_lists_a_bounded_number_of_groups,
}

/// A running job whose log is `records` (seqs from 1), appended in two
/// batches.
fn job_with_log(t: &mut TestStore, records: &[Record]) -> JobId {
    let job = t.insert(Some("viewed")).id;
    assert_eq!(t.claim("node-a").expect("queued").id, job);
    let half = records.len() / 2;
    t.apply(vec![append(job, &records[..half], &records[..half])]);
    t.apply(vec![append(job, &records[half..], records)]);
    job
}

/// Records of `(stream, message)`, seqs from 1.
fn log_of(lines: &[(Stream, &str)]) -> Vec<Record> {
    lines
        .iter()
        .enumerate()
        .map(|(i, (s, m))| record(i as u64 + 1, *s, m))
        .collect()
}

async fn before(
    t: &TestStore,
    id: JobId,
    seq: u64,
    limit: u32,
    streams: Option<Vec<Stream>>,
) -> (Vec<u64>, bool) {
    let EarlierPage { records, more } = t
        .store
        .read_log_before(id, seq, limit, streams)
        .await
        .unwrap();
    (seqs(&records), more)
}

async fn earlier_pages_end_at_their_seq_and_say_whether_more_remain(db: TestDatabase) {
    use Stream::*;
    let mut t = open_store(db);
    let log = log_of(&[
        (Output, "one"),
        (Error, "first error"),
        (Output, "three"),
        (Warning, "careful"),
        (Output, "five"),
        (Error, "second error"),
        (Output, "seven"),
        (Output, "eight"),
    ]);
    let id = job_with_log(&mut t, &log);

    // The records just before the seq, in seq order, whole.
    let page = t.store.read_log_before(id, 6, 3, None).await.unwrap();
    assert_eq!(page.records, log[2..5]);
    assert!(page.more);
    assert_eq!(before(&t, id, 4, 3, None).await, (vec![1, 2, 3], false));
    assert_eq!(before(&t, id, 3, 5, None).await, (vec![1, 2], false));
    assert_eq!(before(&t, id, 1, 5, None).await, (vec![], false));
    assert_eq!(before(&t, id, 0, 5, None).await, (vec![], false));
    // Past the end: the end of the log.
    assert_eq!(before(&t, id, 9, 2, None).await, (vec![7, 8], true));
    assert_eq!(before(&t, id, u64::MAX, 8, None).await.0, seqs(&log));
    assert!(!before(&t, id, u64::MAX, 8, None).await.1);

    // "Previous error": one record of a stream before a seq.
    let errors = Some(vec![Error]);
    assert_eq!(before(&t, id, 8, 1, errors.clone()).await, (vec![6], true));
    assert_eq!(before(&t, id, 6, 1, errors.clone()).await, (vec![2], false));
    assert_eq!(before(&t, id, 2, 1, errors).await, (vec![], false));
    let some = Some(vec![Error, Warning]);
    assert_eq!(before(&t, id, 9, 10, some).await, (vec![2, 4, 6], false));

    // Walking back page by page gives the whole log.
    let mut walked = Vec::new();
    let mut at = u64::MAX;
    loop {
        let page = t.store.read_log_before(id, at, 3, None).await.unwrap();
        let first = page.records.first().map(|r| r.seq);
        walked.splice(0..0, page.records);
        match (page.more, first) {
            (true, Some(first)) => at = first,
            _ => break,
        }
    }
    assert_eq!(walked, log);

    assert_eq!(
        before(&t, id + 100, 5, 5, None).await,
        (vec![], false),
        "unknown job"
    );
}

async fn an_earlier_page_of_long_lines_keeps_the_records_nearest_its_seq(db: TestDatabase) {
    let mut t = open_store(db);
    // 600 KB each: two cross the 1 MiB a page holds.
    let long = "y".repeat(600_000);
    let log: Vec<Record> = (1..=5)
        .map(|seq| record(seq, Stream::Output, &format!("{seq}{long}")))
        .collect();
    let id = job_with_log(&mut t, &log);
    let page = t.store.read_log_before(id, 6, 100, None).await.unwrap();
    assert_eq!((seqs(&page.records), page.more), (vec![4, 5], true));
    assert_eq!(page.records, log[3..]);
    assert_eq!(before(&t, id, 3, 100, None).await, (vec![1, 2], false));
    assert_eq!(before(&t, id, 2, 100, None).await, (vec![1], false));
}

/// Messages that tell a search that folds A–Z only, and takes `%`, `_`,
/// `*` and `\` as themselves, from one that does anything else.
const TRICKY: &[&str] = &[
    "Compiling joblog v0.1.0",
    "ERROR: disk full",
    "an error in 50% of the runs",
    "error_code=5",
    "errorXcode=5",
    "100% done",
    "100 done",
    "a_b and aXb",
    r"C:\build\*.rs",
    "ÉCOLE",
    "école",
    "Kelvin: \u{212A}",
    "İstanbul, IRMAK, ırmak",
    "nul\0byte ERROR",
    "",
    "%%",
    "'quoted' \"double\" ;--",
];

/// Texts to look for in [`TRICKY`], each in any case where it has letters.
const NEEDLES: &[&str] = &[
    "error",
    "ERROR",
    "eRrOr",
    "%",
    "50%",
    "% of",
    "_",
    "r_c",
    "*",
    r"\",
    r"\*",
    r"c:\BUILD",
    "é",
    "É",
    "école",
    "ÉCOLE",
    "k",
    "\u{212A}",
    "i",
    "İ",
    "ı",
    "irmak",
    "\0",
    "l\0b",
    "%%",
    "'",
    "\"",
    ";--",
    "0.1.0",
    "x",
    "no such text",
];

async fn search(
    t: &TestStore,
    id: JobId,
    q: &str,
    after: u64,
    limit: u32,
    streams: Option<Vec<Stream>>,
) -> SearchHits {
    t.store
        .search_log(id, &LogSearch::new(q).unwrap(), after, limit, streams)
        .await
        .unwrap()
}

async fn searches_fold_ascii_letters_only_and_take_every_character_literally(db: TestDatabase) {
    let mut t = open_store(db);
    let log: Vec<Record> = TRICKY
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let stream = if i % 3 == 1 {
                Stream::Error
            } else {
                Stream::Output
            };
            record(i as u64 + 1, stream, m)
        })
        .collect();
    let id = job_with_log(&mut t, &log);

    let hits = search(&t, id, "ERROR", 0, 100, None).await;
    assert_eq!(hits.seqs, [2, 3, 4, 5, 14]);
    assert_eq!((hits.total, hits.more), (5, false));
    assert_eq!(search(&t, id, "%", 0, 100, None).await.seqs, [3, 6, 16]);
    assert_eq!(
        search(&t, id, "r_c", 0, 100, None).await.seqs,
        [4],
        "_ is no wildcard"
    );
    assert_eq!(search(&t, id, r"\*", 0, 100, None).await.seqs, [9]);
    assert_eq!(
        search(&t, id, "école", 0, 100, None).await.seqs,
        [11],
        "É is not é"
    );
    assert_eq!(search(&t, id, "l\0B", 0, 100, None).await.seqs, [14]);
    // Of some streams only.
    let errors = Some(vec![Stream::Error]);
    let hits = search(&t, id, "error", 0, 100, errors).await;
    assert_eq!((hits.seqs, hits.total), (vec![2, 5, 14], 3));

    // Every needle, as the reference (Rust's ASCII folding) finds it.
    for q in NEEDLES {
        let search = LogSearch::new(q).unwrap();
        let expected: Vec<u64> = log
            .iter()
            .filter(|r| search.matches(&r.message))
            .map(|r| r.seq)
            .collect();
        let hits = t.store.search_log(id, &search, 0, 100, None).await.unwrap();
        assert_eq!(hits.seqs, expected, "{q:?}");
        assert_eq!(hits.total, expected.len() as u64, "{q:?}");
    }
}

async fn a_search_counts_the_whole_log_and_pages_through_its_matches(db: TestDatabase) {
    let mut t = open_store(db);
    // A match every third record, 30 records.
    let log: Vec<Record> = (1..=30)
        .map(|seq| {
            let m = if seq % 3 == 0 {
                "step FAILED"
            } else {
                "step ok"
            };
            record(seq, Stream::Output, m)
        })
        .collect();
    let id = job_with_log(&mut t, &log);
    let all: Vec<u64> = (1..=10).map(|i| i * 3).collect();

    let first = search(&t, id, "failed", 0, 4, None).await;
    assert_eq!(
        (first.seqs.clone(), first.total, first.more),
        (vec![3, 6, 9, 12], 10, true)
    );
    let middle = search(&t, id, "failed", 12, 4, None).await;
    assert_eq!(
        (middle.seqs.clone(), middle.total, middle.more),
        (vec![15, 18, 21, 24], 10, true)
    );
    // A page that ends just at the last match knows none follows.
    let last = search(&t, id, "failed", 24, 2, None).await;
    assert_eq!(
        (last.seqs.clone(), last.total, last.more),
        (vec![27, 30], 10, false)
    );
    let past = search(&t, id, "failed", 30, 4, None).await;
    assert_eq!(
        (past.seqs.clone(), past.total, past.more),
        (vec![], 10, false)
    );
    let beyond = search(&t, id, "failed", u64::MAX, 4, None).await;
    assert_eq!((beyond.seqs, beyond.total), (vec![], 10));
    // From the middle of a gap between matches.
    assert_eq!(search(&t, id, "failed", 13, 1, None).await.seqs, [15]);

    // Paging by the last seq gives every match once.
    let mut paged: Vec<u64> = Vec::new();
    let mut after = 0;
    loop {
        let hits = search(&t, id, "failed", after, 3, None).await;
        assert_eq!(hits.total, 10);
        paged.extend(&hits.seqs);
        match (hits.more, hits.seqs.last()) {
            (true, Some(&last)) => after = last,
            _ => break,
        }
    }
    assert_eq!(paged, all);
    let none = search(&t, id, "passed", 0, 4, None).await;
    assert_eq!((none.seqs, none.total, none.more), (vec![], 0, false));
    let unknown = search(&t, id + 100, "step", 0, 4, None).await;
    assert_eq!((unknown.seqs, unknown.total), (vec![], 0), "unknown job");
}

fn group_start(seq: u64, title: &str) -> Record {
    with_fields(
        record(seq, Stream::Information, title),
        json!({"group": "start"}),
    )
}

fn group_end(seq: u64) -> Record {
    with_fields(
        record(seq, Stream::Information, ""),
        json!({"group": "end"}),
    )
}

fn group(seq: u64, end_seq: Option<u64>, title: &str, errors: u64, warnings: u64) -> LogGroup {
    LogGroup {
        seq,
        end_seq,
        title: title.into(),
        errors,
        warnings,
    }
}

async fn outline(t: &TestStore, id: JobId, max_groups: usize) -> LogOutline {
    t.store.log_outline(id, max_groups).await.unwrap()
}

async fn outlines_fold_groups_that_do_not_nest_with_their_counts(db: TestDatabase) {
    use Stream::*;
    let mut t = open_store(db);
    let progress = with_fields(record(15, Progress, "Copying"), json!({"percent": 40}));
    let log = vec![
        record(1, Output, "::group::not a group (it is output)"),
        record(2, Warning, "early warning"),
        group_start(3, "Build"),
        record(4, Error, "cc failed"),
        record(5, Output, "out"),
        // A start inside a group ends it at the record before.
        group_start(6, "Test"),
        record(7, Warning, "flaky"),
        record(8, Error, "1 failed"),
        record(9, Verbose, "v"),
        group_end(10),
        // An end without an open group is ignored.
        group_end(11),
        record(12, Error, "between groups"),
        with_fields(record(13, Progress, "Starting"), json!({"percent": 0})),
        with_fields(record(14, Information, "notice"), json!({"title": "x"})),
        progress.clone(),
        // Still open when the log ends.
        group_start(16, &format!("Deploy {}", "é".repeat(300))),
        record(17, Warning, "slow"),
        record(18, Debug, "d"),
    ];
    let id = job_with_log(&mut t, &log);
    let o = outline(&t, id, MAX_OUTLINE_GROUPS).await;
    let deploy = joblog_core::group_title(format!("Deploy {}", "é".repeat(300)));
    assert!(deploy.len() <= joblog_core::MAX_GROUP_TITLE_BYTES);
    assert_eq!(
        o,
        LogOutline {
            first_error_seq: Some(4),
            first_warning_seq: Some(2),
            groups: vec![
                group(3, Some(5), "Build", 1, 0),
                group(6, Some(10), "Test", 1, 1),
                group(16, None, &deploy, 0, 1),
            ],
            groups_truncated: false,
            progress: Some(progress),
        }
    );

    // A log of output alone, and an unknown job, have an empty outline.
    let quiet = t.insert(None).id;
    let only_output = log_of(&[(Output, "a"), (Output, "b")]);
    t.apply(vec![append(quiet, &only_output, &only_output)]);
    assert_eq!(outline(&t, quiet, 10).await, LogOutline::default());
    assert_eq!(outline(&t, id + 100, 10).await, LogOutline::default());
}

async fn an_outline_lists_a_bounded_number_of_groups(db: TestDatabase) {
    let mut t = open_store(db);
    let mut log = Vec::new();
    for i in 0..5u64 {
        log.push(group_start(i * 3 + 1, &format!("step {i}")));
        log.push(record(i * 3 + 2, Stream::Error, "failed"));
        log.push(group_end(i * 3 + 3));
    }
    let id = job_with_log(&mut t, &log);
    let o = outline(&t, id, 3).await;
    assert_eq!(
        o.groups,
        [
            group(1, Some(3), "step 0", 1, 0),
            group(4, Some(6), "step 1", 1, 0),
            group(7, Some(9), "step 2", 1, 0),
        ]
    );
    assert!(o.groups_truncated);
    assert_eq!(o.first_error_seq, Some(2));
    let all = outline(&t, id, 5).await;
    assert_eq!((all.groups.len(), all.groups_truncated), (5, false));
}

/// The two stores find the same records for every needle: run on both
/// when PostgreSQL is there (the suites above hold each to the same
/// expectations; this holds them to each other on the same log).
#[tokio::test]
async fn both_stores_find_the_same_records() {
    let Some(pg) = TestDatabase::new(Backend::Postgres) else {
        return;
    };
    let mut stores = [open_store(TestDatabase::sqlite()), open_store(pg)];
    let log: Vec<Record> = TRICKY
        .iter()
        .enumerate()
        .map(|(i, m)| record(i as u64 + 1, Stream::Output, m))
        .collect();
    let ids: Vec<JobId> = stores.iter_mut().map(|t| job_with_log(t, &log)).collect();
    for q in NEEDLES {
        let [a, b] = [&stores[0], &stores[1]];
        let on_sqlite = search(a, ids[0], q, 0, 100, None).await;
        let on_postgres = search(b, ids[1], q, 0, 100, None).await;
        assert_eq!(on_sqlite, on_postgres, "{q:?}");
    }
}
