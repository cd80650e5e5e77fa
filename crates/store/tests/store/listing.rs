//! Job listings on both stores: several states, a window of creation
//! times, a node, and names given as patterns (`backup*`), whose `%` and `_`
//! are never SQL wildcards; each with paging by `before_id`.

use super::*;

joblog_store::backend_tests! {
    listings_take_several_states_a_window_and_a_node,
    name_patterns_match_as_globs_and_sql_wildcards_stay_literal,
    a_pattern_covering_many_names_gives_the_same_pages,
}

/// Inserts, claims on `node` and finishes a job (the queue must be empty).
fn finished_on(t: &mut TestStore, name: Option<&str>, state: JobState, node: &str) -> JobId {
    let job = t.insert(name);
    assert_eq!(t.claim(node).expect("a queued job").id, job.id);
    t.finish(job.id, state, Some(1)).id
}

/// A time strictly between the jobs created before and after it.
fn cut() -> Timestamp {
    std::thread::sleep(std::time::Duration::from_millis(3));
    let at = Timestamp::now();
    std::thread::sleep(std::time::Duration::from_millis(3));
    at
}

fn query(states: &[JobState]) -> JobQuery {
    JobQuery {
        states: states.to_vec(),
        limit: 100,
        ..JobQuery::default()
    }
}

fn named(pattern: &str) -> JobQuery {
    JobQuery {
        name: Some(NameFilter::parse(pattern)),
        ..query(&[])
    }
}

async fn listings_take_several_states_a_window_and_a_node(db: TestDatabase) {
    use JobState::*;
    let mut t = open_store(db);
    let old_failed = finished_on(&mut t, Some("x"), Failed, "node-a");
    let c1 = cut();
    let a_ok = finished_on(&mut t, Some("x"), Succeeded, "node-a");
    let a_failed = finished_on(&mut t, None, Failed, "node-a");
    let b_timed = finished_on(&mut t, Some("y"), TimedOut, "node-b");
    let b_failed = finished_on(&mut t, Some("x"), Failed, "node-b");
    let c2 = cut();
    let late_failed = finished_on(&mut t, None, Failed, "node-b");
    let queued = t.insert(Some("x")).id;

    let bad = [Failed, TimedOut];
    assert_eq!(
        t.query(query(&bad)).await,
        [late_failed, b_failed, b_timed, a_failed, old_failed]
    );
    let since_c1 = JobQuery {
        created_since: Some(c1),
        ..query(&bad)
    };
    assert_eq!(
        t.query(since_c1.clone()).await,
        [late_failed, b_failed, b_timed, a_failed]
    );
    let window = JobQuery {
        created_until: Some(c2),
        ..since_c1.clone()
    };
    assert_eq!(t.query(window.clone()).await, [b_failed, b_timed, a_failed]);
    let until_c1 = JobQuery {
        created_until: Some(c1),
        ..query(&[])
    };
    assert_eq!(t.query(until_c1).await, [old_failed]);
    let since_c2 = JobQuery {
        created_since: Some(c2),
        ..query(&[])
    };
    assert_eq!(t.query(since_c2).await, [queued, late_failed]);
    let empty_window = JobQuery {
        created_since: Some(c2),
        created_until: Some(c2),
        ..query(&[])
    };
    assert!(t.query(empty_window).await.is_empty());
    let future = JobQuery {
        created_since: Some(Timestamp(Timestamp::now().micros() + 3_600_000_000)),
        ..query(&[])
    };
    assert!(t.query(future).await.is_empty());
    // Every state is no filter.
    assert_eq!(
        t.query(query(&JobState::ALL)).await,
        t.query(query(&[])).await
    );
    assert_eq!(t.query(query(&[])).await.len(), 7);

    let on = |node: &str, q: JobQuery| JobQuery {
        node: Some(node.into()),
        ..q
    };
    assert_eq!(
        t.query(on("node-b", query(&[]))).await,
        [late_failed, b_failed, b_timed]
    );
    assert_eq!(
        t.query(on("node-b", query(&[Failed]))).await,
        [late_failed, b_failed]
    );
    assert_eq!(t.query(on("node-a", since_c1.clone())).await, [a_failed]);
    assert_eq!(
        t.query(on(
            "node-a",
            JobQuery {
                created_since: Some(c1),
                ..query(&[])
            }
        ))
        .await,
        [a_failed, a_ok]
    );
    assert!(t.query(on("node-z", query(&[]))).await.is_empty());
    // Filters together: name, states, node and window.
    let all = JobQuery {
        name: Some(NameFilter::Exact("x".into())),
        ..on("node-b", window)
    };
    assert_eq!(t.query(all).await, [b_failed]);

    // Pages of two, each after the last id of the one before.
    let page = |before_id| JobQuery {
        limit: 2,
        before_id,
        ..since_c1.clone()
    };
    assert_eq!(t.query(page(None)).await, [late_failed, b_failed]);
    assert_eq!(t.query(page(Some(b_failed))).await, [b_timed, a_failed]);
    assert!(t.query(page(Some(a_failed))).await.is_empty());
}

async fn name_patterns_match_as_globs_and_sql_wildcards_stay_literal(db: TestDatabase) {
    let mut t = open_store(db);
    let mut id = std::collections::BTreeMap::new();
    for name in [
        "backup-db",
        "backup-files",
        "backup_x",
        "backupXx",
        "nightly-backup",
        "50%",
        "5000",
        "a*b",
        "aXb",
        "x[1]",
        "\\d",
    ] {
        let state = if name == "backup-db" {
            JobState::Failed
        } else {
            JobState::Succeeded
        };
        id.insert(name, finished_on(&mut t, Some(name), state, "n"));
    }
    let unnamed = finished_on(&mut t, None, JobState::Failed, "n");
    let ids = |names: &[&str]| -> Vec<JobId> {
        let mut v: Vec<JobId> = names.iter().map(|n| id[n]).collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        v
    };

    let cases: &[(&str, &[&str])] = &[
        (
            "backup*",
            &["backup-db", "backup-files", "backup_x", "backupXx"],
        ),
        ("backup-*", &["backup-db", "backup-files"]),
        // `_` and `%` are the job's own characters, not wildcards.
        ("backup_*", &["backup_x"]),
        ("50%*", &["50%"]),
        ("50%", &["50%"]),
        ("5?%", &["50%"]),
        // `?` is one character; `\*` a literal star.
        ("a?b", &["a*b", "aXb"]),
        ("a\\*b", &["a*b"]),
        ("a\\**", &["a*b"]),
        // `[` opens nothing.
        ("x[*", &["x[1]"]),
        ("x[1]", &["x[1]"]),
        ("\\d", &["\\d"]),
        ("\\\\?", &["\\d"]),
        ("\\?", &[]),
        // No literal prefix: checked on every job walked, where `_`, `%`,
        // `[` and `*` of the pattern's text must stay literal too.
        ("*backup", &["nightly-backup"]),
        ("*_x", &["backup_x"]),
        ("*%", &["50%"]),
        ("*[1]", &["x[1]"]),
        ("?\\*b", &["a*b"]),
        ("*\\d", &["\\d"]),
        ("*-*", &["backup-db", "backup-files", "nightly-backup"]),
        (
            "?ackup*",
            &["backup-db", "backup-files", "backup_x", "backupXx"],
        ),
        ("nothing*", &[]),
        ("backup", &[]),
    ];
    for (pattern, expected) in cases {
        assert_eq!(t.query(named(pattern)).await, ids(expected), "{pattern:?}");
    }
    // `*` is every job with a name.
    let everything = t.query(named("*")).await;
    assert_eq!(everything.len(), id.len());
    assert!(!everything.contains(&unnamed));
    // With a state, and paged.
    let failed_backups = JobQuery {
        states: vec![JobState::Failed],
        ..named("backup*")
    };
    assert_eq!(t.query(failed_backups).await, ids(&["backup-db"]));
    let first = JobQuery {
        limit: 3,
        ..named("backup*")
    };
    let page = t.query(first.clone()).await;
    assert_eq!(
        page,
        ids(&["backup-db", "backup-files", "backup_x", "backupXx"])[..3]
    );
    let rest = JobQuery {
        before_id: page.last().copied(),
        ..first
    };
    assert_eq!(t.query(rest).await, ids(&["backup-db"]));
}

/// A prefix covering more names than the store walks one by one is
/// checked on the rows walked instead: the answers are the same.
async fn a_pattern_covering_many_names_gives_the_same_pages(db: TestDatabase) {
    let mut t = open_store(db);
    let other = t.insert(Some("many")).id;
    let ids: Vec<JobId> = (0..40)
        .map(|i| t.insert(Some(&format!("many-{i:02}"))).id)
        .collect();
    let newest_first = |keep: &dyn Fn(usize) -> bool| -> Vec<JobId> {
        let mut v: Vec<JobId> = (0..40).filter(|&i| keep(i)).map(|i| ids[i]).collect();
        v.reverse();
        v
    };
    // 40 names under `many-`: more than are walked one by one.
    assert_eq!(t.query(named("many-*")).await, newest_first(&|_| true));
    assert_eq!(
        t.query(named("many-?5")).await,
        newest_first(&|i| i % 10 == 5)
    );
    // 10 names under `many-1`.
    assert_eq!(
        t.query(named("many-1*")).await,
        newest_first(&|i| (10..20).contains(&i))
    );
    assert_eq!(t.query(named("many*")).await.len(), 41);
    assert!(t.query(named("many*")).await.contains(&other));

    // Pages of 15 through all 40.
    let mut seen = Vec::new();
    let mut before_id = None;
    loop {
        let page = t
            .query(JobQuery {
                limit: 15,
                before_id,
                ..named("many-*")
            })
            .await;
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 15);
        before_id = page.last().copied();
        seen.extend(page);
    }
    assert_eq!(seen, newest_first(&|_| true));
}
