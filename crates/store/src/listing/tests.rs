//! The listing's statements without a database: name patterns as SQL,
//! prefix ranges, name scans, and every statement a listing runs (which the
//! stores' plan tests hold to index searches).

use super::names::{like_pattern, prefix_upper_bound, sqlite_glob};
use super::*;
use joblog_core::NameGlob;

/// Every kind of statement a listing runs, for the tests that hold each
/// to an index search: the window, the four seeks of a name scan, and a
/// page of each shape (walked by id, by one or several states, by node, by
/// an exact name, by the names a pattern matched, by folders), with the other filters
/// checked on the way.
pub(crate) fn every_statement(d: Dialect) -> Vec<Sql> {
    use joblog_core::Timestamp;

    let span = Some(IdSpan { first: 3, last: 90 });
    let query =
        |states: &[JobState], name: Option<&str>, node: Option<&str>, window: bool| JobQuery {
            states: states.to_vec(),
            name: name.map(NameFilter::parse),
            node: node.map(str::to_string),
            created_since: window.then_some(Timestamp(1_000)),
            created_until: window.then_some(Timestamp(9_000)),
            limit: 50,
            before_id: Some(100),
            schedule_id: None,
            folders: None,
        };
    // A caller limited to folders: one walk per folder, or the folders
    // checked on another walk.
    let in_folders = |q: JobQuery, folders: &[&str]| JobQuery {
        folders: Some(folders.iter().map(|f| f.to_string()).collect()),
        ..q
    };
    let of_schedule = |q: JobQuery| JobQuery {
        schedule_id: Some(4),
        ..q
    };
    let failed = [JobState::Failed, JobState::TimedOut];
    let mut out = vec![window_sql(d, &query(&[], None, None, true)).unwrap()];
    let pattern = query(&[], Some("backup*"), None, false);
    let mut scan = NameScan::new(&pattern).unwrap();
    out.push(scan.next_sql(d).unwrap());
    scan.found(Some("backup-db".into()));
    out.push(scan.next_sql(d).unwrap());
    let unbounded = query(&[], Some("\u{10FFFF}*"), None, false);
    let mut scan = NameScan::new(&unbounded).unwrap();
    out.push(scan.next_sql(d).unwrap());
    scan.found(Some("\u{10FFFF}x".into()));
    out.push(scan.next_sql(d).unwrap());
    let names = ["backup-db".to_string(), "backup-files".to_string()];
    let pages = [
        (query(&[], None, None, false), None, None),
        (query(&JobState::ALL, None, None, false), None, None),
        (query(&[JobState::Running], None, None, false), None, None),
        (query(&failed, None, None, true), None, span),
        (query(&failed, Some("*-db"), Some("n"), true), None, span),
        (query(&[], None, Some("n"), true), None, span),
        (query(&[], Some("x"), None, false), None, None),
        (query(&failed, Some("x"), Some("n"), true), None, span),
        (
            query(&failed, Some("backup*"), None, true),
            Some(&names[..]),
            span,
        ),
        (
            query(&[], Some("backup*"), Some("n"), false),
            Some(&names[..1]),
            None,
        ),
        (query(&[], Some("*-db"), None, false), None, None),
        (query(&failed, Some("b*"), None, false), None, None),
        // A schedule's runs, alone and with every other filter.
        (of_schedule(query(&[], None, None, false)), None, None),
        (
            of_schedule(query(&failed, Some("backup*"), Some("n"), true)),
            Some(&names[..]),
            span,
        ),
        (of_schedule(query(&[], Some("x"), None, false)), None, None),
        (
            in_folders(query(&[], None, None, false), &["a"]),
            None,
            None,
        ),
        (
            in_folders(query(&[], None, None, true), &["a", "b", "c"]),
            None,
            span,
        ),
        (
            in_folders(query(&failed, None, None, false), &["a", "b"]),
            None,
            None,
        ),
        (
            in_folders(query(&[], Some("x"), Some("n"), false), &["a"]),
            None,
            None,
        ),
    ];
    for (q, names, span) in &pages {
        out.push(page_sql(d, q, *names, *span, crate::rows::JOB_COLUMNS).unwrap());
    }
    out
}

fn glob(text: &str) -> NameGlob {
    match NameFilter::parse(text) {
        NameFilter::Glob(g) => g,
        other => panic!("{other:?}"),
    }
}

#[test]
fn patterns_keep_their_literal_wildcards_literal() {
    let g = glob(r"50%_[x]\*\?*?");
    assert_eq!(sqlite_glob(&g), "50%_[[]x][*][?]*?");
    assert_eq!(like_pattern(&g), r"50\%\_[x]*?%_");
    assert_eq!(like_pattern(&glob(r"a\b*")), r"a\\b%");
}

#[test]
fn a_prefix_range_holds_exactly_the_names_that_start_with_it() {
    assert_eq!(prefix_upper_bound("backup").as_deref(), Some("backuq"));
    assert_eq!(prefix_upper_bound("a\u{10FFFF}").as_deref(), Some("b"));
    assert_eq!(prefix_upper_bound("\u{D7FF}").as_deref(), Some("\u{E000}"));
    assert_eq!(prefix_upper_bound("\u{10FFFF}"), None);
    let upper = prefix_upper_bound("é").unwrap();
    for name in ["é", "é\u{10FFFF}", "éz"] {
        assert!(name >= "é" && name < upper.as_str(), "{name}");
    }
    for name in ["e", "ê", "f"] {
        assert!(!(name >= "é" && name < upper.as_str()), "{name}");
    }
}

#[test]
fn a_scan_stops_after_too_many_names_and_keeps_the_matching_ones() {
    let q = JobQuery {
        name: Some(NameFilter::parse("b*-db")),
        ..JobQuery::default()
    };
    let mut scan = NameScan::new(&q).unwrap();
    let first = scan.next_sql(Dialect::Sqlite).unwrap();
    assert_eq!(
        first.params,
        [Param::Text("b".into()), Param::Text("c".into())]
    );
    scan.found(Some("b-db".into()));
    scan.found(Some("b-files".into()));
    let next = scan.next_sql(Dialect::Postgres).unwrap();
    assert!(
        next.text.contains(r#"name COLLATE "C" > $1"#),
        "{}",
        next.text
    );
    assert_eq!(next.params[0], Param::Text("b-files".into()));
    scan.found(None);
    assert!(scan.next_sql(Dialect::Sqlite).is_none());
    assert_eq!(scan.names(), Some(vec!["b-db".to_string()]));

    let mut scan = NameScan::new(&q).unwrap();
    for i in 0..=MAX_NAME_ARMS {
        assert!(scan.next_sql(Dialect::Sqlite).is_some());
        scan.found(Some(format!("b{i:03}-db")));
    }
    assert!(scan.next_sql(Dialect::Sqlite).is_none());
    assert_eq!(scan.names(), None);
}

#[test]
fn a_pattern_without_prefix_is_not_scanned() {
    let q = JobQuery {
        name: Some(NameFilter::parse("*-db")),
        ..JobQuery::default()
    };
    assert!(NameScan::new(&q).is_none());
    let q = JobQuery {
        name: Some(NameFilter::parse("backup")),
        ..JobQuery::default()
    };
    assert!(NameScan::new(&q).is_none());
}
