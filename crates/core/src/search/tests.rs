use proptest::prelude::*;

use super::*;

fn rec(seq: u64, stream: Stream, message: &str) -> Record {
    Record {
        seq,
        ts: Timestamp(seq as i64),
        stream,
        message: message.into(),
        fields: None,
    }
}

fn query(q: &str, regex: bool) -> SearchQuery {
    SearchQuery {
        pattern: SearchPattern::new(q, regex).unwrap(),
        jobs: JobQuery::default(),
        streams: None,
    }
}

/// Jobs (newest first) and their logs, read page by page as a store does.
fn search_all(
    jobs: &[(JobId, Vec<Record>)],
    q: &SearchQuery,
    limit: u32,
    work: u64,
) -> (Vec<SearchHit>, u64, usize) {
    let mut cursor = None;
    let mut hits = Vec::new();
    for pages in 1.. {
        let mut scan = Scan::new(q, cursor, limit, work);
        let before = scan.jobs_before();
        let mut exhausted = true;
        for (id, log) in jobs.iter().filter(|(id, _)| before.is_none_or(|b| *id < b)) {
            if scan.is_full() {
                exhausted = false;
                break;
            }
            let after = scan.start_job(*id, Some(format!("job{id}")));
            for r in log.iter().filter(|r| r.seq > after) {
                if !scan.record(r) {
                    break;
                }
            }
            scan.end_job();
        }
        let page = scan.finish(exhausted);
        assert!(page.hits.len() <= limit as usize);
        hits.extend(page.hits);
        match page.next_cursor {
            Some(c) => {
                assert_eq!(page.jobs_matched, None);
                // The cursor survives its text form.
                cursor = Some(SearchCursor::parse(&c.to_string()).unwrap());
            }
            None => return (hits, page.jobs_matched.unwrap(), pages),
        }
    }
    unreachable!()
}

fn brute_force(jobs: &[(JobId, Vec<Record>)], q: &SearchQuery) -> Vec<(JobId, u64)> {
    jobs.iter()
        .flat_map(|(id, log)| {
            log.iter()
                .filter(|r| q.wants(r.stream) && q.pattern.matches(&r.message))
                .map(|r| (*id, r.seq))
        })
        .collect()
}

fn example() -> Vec<(JobId, Vec<Record>)> {
    vec![
        (
            9,
            vec![
                rec(1, Stream::Output, "disk FULL"),
                rec(2, Stream::Error, "ok"),
                rec(3, Stream::Error, "disk full again"),
            ],
        ),
        (7, vec![rec(1, Stream::Output, "nothing here")]),
        (4, vec![rec(1, Stream::Output, "Disk Full, really")]),
    ]
}

#[test]
fn pages_join_into_every_hit_newest_job_first() {
    let jobs = example();
    let q = query("disk full", false);
    for limit in 1..4 {
        for work in 1..6 {
            let (hits, matched, _) = search_all(&jobs, &q, limit, work);
            let got: Vec<(JobId, u64)> = hits.iter().map(|h| (h.job_id, h.seq)).collect();
            assert_eq!(
                got,
                vec![(9, 1), (9, 3), (4, 1)],
                "limit {limit}, work {work}"
            );
            assert_eq!(matched, 2);
        }
    }
    let (hits, _, pages) = search_all(&jobs, &q, 100, 1000);
    assert_eq!(pages, 1);
    assert_eq!(hits[0].job_name.as_deref(), Some("job9"));
    assert_eq!(hits[0].message, "disk FULL");
}

#[test]
fn streams_filter_hits() {
    let jobs = example();
    let mut q = query("disk", false);
    q.streams = Some(vec![Stream::Error]);
    let (hits, matched, _) = search_all(&jobs, &q, 10, 100);
    assert_eq!(hits.len(), 1);
    assert_eq!((hits[0].job_id, hits[0].seq), (9, 3));
    assert_eq!(matched, 1);
    assert_eq!(q.stream_mask(), 1 << Stream::Error.code());
}

#[test]
fn a_cursor_is_read_back_and_bad_ones_name_cursor() {
    for c in [
        SearchCursor {
            job: 12,
            after_seq: Some(400),
            jobs_matched: 3,
            job_matched: true,
        },
        SearchCursor {
            job: 5,
            after_seq: None,
            jobs_matched: 0,
            job_matched: false,
        },
    ] {
        assert_eq!(SearchCursor::parse(&c.to_string()).unwrap(), c);
    }
    for bad in [
        "",
        "1-2-3",
        "x-1-0-0",
        "1-2-3-2",
        "0-1-0-0",
        "1--1-0-0",
        "1-2-3-0-0",
    ] {
        let e = SearchCursor::parse(bad).unwrap_err();
        assert_eq!(e.field, "cursor", "{bad}");
    }
}

#[test]
fn a_page_stopped_before_any_job_resumes_where_asked() {
    let jobs = example();
    let q = query("disk", false);
    let cursor = SearchCursor {
        job: 7,
        after_seq: None,
        jobs_matched: 1,
        job_matched: false,
    };
    let mut scan = Scan::new(&q, Some(cursor), 10, 10);
    assert_eq!(scan.jobs_before(), Some(7));
    scan.stop();
    let page = scan.finish(false);
    assert_eq!(page.next_cursor, Some(cursor));
    let _ = jobs;
}

/// Words the generated messages and patterns are made of, so that they
/// meet often.
const WORDS: &[&str] = &[
    "disk", "full", "Disk", "FULL", "err", "ok", "é", "É", "\u{212A}", "k", "x1", " ", "-", "42",
];

fn message() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS), 0..6).prop_map(|w| w.concat())
}

fn regex_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(WORDS).prop_map(regex_syntax::escape),
        Just(".".to_string()),
        Just("[a-f]".to_string()),
        Just("\\d+".to_string()),
        Just("(?-i)".to_string()),
        Just("\\b".to_string()),
    ]
}

fn sequence() -> impl Strategy<Value = String> {
    prop::collection::vec(regex_piece(), 1..4).prop_map(|p| p.concat())
}

fn pattern() -> impl Strategy<Value = String> {
    prop_oneof![
        sequence(),
        (sequence(), sequence()).prop_map(|(a, b)| format!("({a}|{b})")),
        sequence().prop_map(|a| format!("({a})+x?")),
        sequence().prop_map(|a| format!("({a})*ok")),
    ]
}

proptest! {
    /// The index never rules out a segment that holds a match.
    #[test]
    fn the_index_never_skips_a_match(
        messages in prop::collection::vec(message(), 1..8),
        p in pattern(),
        regex in any::<bool>(),
    ) {
        let Ok(pattern) = SearchPattern::new(&p, regex) else { return Ok(()) };
        let index = build_index(messages.iter().map(String::as_str), 1 << 20).unwrap();
        if messages.iter().any(|m| pattern.matches(m)) {
            prop_assert!(pattern.grams().may_match(&index), "{p:?} in {messages:?}");
        }
    }

    /// Paged reads find exactly what a scan of everything does.
    #[test]
    fn pages_find_what_brute_force_does(
        logs in prop::collection::vec(prop::collection::vec((message(), 0u8..3), 0..6), 1..5),
        p in pattern(),
        regex in any::<bool>(),
        limit in 1u32..4,
        work in 1u64..8,
    ) {
        let Ok(pattern) = SearchPattern::new(&p, regex) else { return Ok(()) };
        let q = SearchQuery { pattern, jobs: JobQuery::default(), streams: None };
        let n = logs.len() as i64;
        let jobs: Vec<(JobId, Vec<Record>)> = logs
            .iter()
            .enumerate()
            .map(|(i, log)| {
                let records = log
                    .iter()
                    .enumerate()
                    .map(|(s, (m, stream))| rec(s as u64 + 1, Stream::from_code(i64::from(*stream)).unwrap(), m))
                    .collect();
                (n - i as i64, records)
            })
            .collect();
        let (hits, matched, _) = search_all(&jobs, &q, limit, work);
        let got: Vec<(JobId, u64)> = hits.iter().map(|h| (h.job_id, h.seq)).collect();
        let want = brute_force(&jobs, &q);
        let mut want_jobs: Vec<JobId> = want.iter().map(|(j, _)| *j).collect();
        want_jobs.dedup();
        prop_assert_eq!(got, want);
        prop_assert_eq!(matched, want_jobs.len() as u64);
    }
}
