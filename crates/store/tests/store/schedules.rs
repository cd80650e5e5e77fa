//! Schedules on both stores: saved, listed, changed and deleted; their
//! fires made into jobs once each by `FireDue` (overlap and missed
//! policies, a bad row disabled rather than failing the batch); failed
//! runs retried after their backoff; concurrency keys held at claim; and
//! on PostgreSQL, nodes racing for the same fires and keys.

use joblog_core::schedule::{NewSchedule, Schedule, ValidSchedule};
use joblog_core::Concurrency;
use joblog_store::{Fired, ScheduleDeleted, ScheduleSaved};

use super::*;

joblog_store::backend_tests! {
    schedules_are_saved_listed_changed_and_deleted,
    each_fire_makes_one_job_and_moves_the_next_fire,
    overlap_and_missed_policies_decide_which_fires_make_jobs,
    a_schedule_whose_row_cannot_be_read_is_disabled_not_fatal,
    a_failed_run_is_retried_after_its_backoff_and_no_more,
    jobs_over_their_concurrency_limit_stay_queued_without_blocking_others,
    each_schedules_last_success_and_failure_are_read_per_state,
    a_saved_job_is_kept_without_cron_or_trigger_and_never_fires,
}

const MIN: i64 = 60_000_000;
/// 2026-11-24T00:00:00Z.
const T0: i64 = 1_795_478_400_000_000;

pub(crate) fn at(minutes: i64) -> Timestamp {
    Timestamp(T0 + minutes * MIN)
}

pub(crate) fn valid(body: Value) -> ValidSchedule {
    let mut full = json!({"name": "s", "cron": "* * * * *", "command": ["true"]});
    for (k, v) in body.as_object().unwrap() {
        full[k] = v.clone();
    }
    if body.get("script").is_some() {
        full.as_object_mut().unwrap().remove("command");
    }
    serde_json::from_value::<NewSchedule>(full)
        .unwrap()
        .validate(at(0))
        .unwrap()
}

impl TestStore {
    pub(crate) fn save(
        &mut self,
        id: Option<i64>,
        s: ValidSchedule,
        next: Option<Timestamp>,
    ) -> ScheduleSaved {
        match self.apply_one(WriteOp::SaveSchedule {
            id,
            schedule: Box::new(s),
            next_fire: next,
        }) {
            Outcome::Schedule(saved) => saved,
            other => panic!("SaveSchedule gave {other:?}"),
        }
    }

    pub(crate) fn create(&mut self, body: Value, next: Timestamp) -> Schedule {
        match self.save(None, valid(body), Some(next)) {
            ScheduleSaved::Saved(s) => *s,
            other => panic!("not saved: {other:?}"),
        }
    }

    pub(crate) fn delete_schedule(&mut self, id: i64) -> ScheduleDeleted {
        match self.apply_one(WriteOp::DeleteSchedule { id }) {
            Outcome::ScheduleDeleted(d) => d,
            other => panic!("DeleteSchedule gave {other:?}"),
        }
    }

    pub(crate) fn fire(&mut self, now: Timestamp) -> Fired {
        match self.apply_one(WriteOp::FireDue {
            now,
            node: "n".into(),
        }) {
            Outcome::Fired(f) => f,
            other => panic!("FireDue gave {other:?}"),
        }
    }

    pub(crate) async fn runs(&self, schedule: i64) -> Vec<Job> {
        let mut jobs = self
            .store
            .list_jobs(JobQuery {
                schedule_id: Some(schedule),
                limit: 1000,
                ..JobQuery::default()
            })
            .await
            .unwrap();
        jobs.reverse();
        jobs
    }
}

fn fire_of(job: &Job) -> Option<Timestamp> {
    job.spec.schedule.and_then(|r| r.fire_time())
}

async fn schedules_are_saved_listed_changed_and_deleted(db: TestDatabase) {
    let mut t = open_store(db);
    let a = t.create(
        json!({"name": "backup", "cron": "30 2 * * *", "timezone": "Europe/Berlin",
               "script": "pg_dump", "secrets": ["PGPASSWORD"], "retries": {"attempts": 3, "backoff_s": 5}}),
        at(10),
    );
    assert_eq!(a.name, "backup");
    assert_eq!(a.timezone, "Europe/Berlin");
    assert_eq!(a.script.as_deref(), Some("pg_dump"));
    assert_eq!(a.secrets, ["PGPASSWORD"]);
    assert_eq!((a.retries.attempts, a.next_fire), (3, Some(at(10))));
    assert!(a.last_run.is_none());
    let b = t.create(json!({"name": "report"}), at(1));
    assert!(b.id > a.id);
    assert_eq!(
        t.save(None, valid(json!({"name": "backup"})), None),
        ScheduleSaved::NameTaken
    );
    // Listed by id, paged.
    let all = t.store.list_schedules(0, 10).await.unwrap();
    assert_eq!(all.iter().map(|s| s.id).collect::<Vec<_>>(), [a.id, b.id]);
    let page = t.store.list_schedules(a.id, 1).await.unwrap();
    assert_eq!(page.iter().map(|s| s.id).collect::<Vec<_>>(), [b.id]);
    assert_eq!(t.store.next_fire().await.unwrap(), Some(at(1)));
    // Replaced whole: disabled, its next fire gone.
    let changed = match t.save(
        Some(b.id),
        valid(json!({"name": "report", "enabled": false})),
        None,
    ) {
        ScheduleSaved::Saved(s) => s,
        other => panic!("{other:?}"),
    };
    assert!(!changed.enabled && changed.next_fire.is_none());
    assert_eq!(changed.created_at, b.created_at);
    assert_eq!(t.store.next_fire().await.unwrap(), Some(at(10)));
    assert_eq!(
        t.save(Some(b.id), valid(json!({"name": "backup"})), None),
        ScheduleSaved::NameTaken,
        "renamed onto another"
    );
    assert_eq!(
        t.save(Some(9999), valid(json!({"name": "x"})), None),
        ScheduleSaved::NotFound
    );
    assert_eq!(t.delete_schedule(a.id), ScheduleDeleted::Deleted);
    assert_eq!(t.delete_schedule(a.id), ScheduleDeleted::NotFound);
    assert!(t.store.get_schedule(a.id).await.unwrap().is_none());
    assert_eq!(t.store.next_fire().await.unwrap(), None);
}

async fn each_fire_makes_one_job_and_moves_the_next_fire(db: TestDatabase) {
    let mut t = open_store(db);
    let s = t.create(json!({"name": "tick", "overlap": "allow"}), at(1));
    let early = t.fire(Timestamp(at(1).0 - 1));
    assert!(early.jobs.is_empty(), "not due yet");
    let fired = t.fire(Timestamp(at(1).0 + 2_000));
    assert_eq!(fired.jobs.len(), 1);
    let job = &fired.jobs[0];
    assert_eq!(job.name.as_deref(), Some("tick"));
    assert_eq!(job.state, JobState::Queued);
    assert_eq!(fire_of(job), Some(at(1)));
    assert_eq!(job.given.schedule_id, Some(s.id));
    assert_eq!(job.given.attempt, Some(1));
    // Asked again at the same time: nothing more.
    assert!(t.fire(Timestamp(at(1).0 + 3_000)).jobs.is_empty());
    let shown = t.store.get_schedule(s.id).await.unwrap().unwrap();
    assert_eq!(shown.next_fire, Some(at(2)));
    assert_eq!(shown.last_run.as_ref().map(|r| r.job_id), Some(job.id));
    assert_eq!(t.store.next_fire().await.unwrap(), Some(at(2)));
    // A fire found again (a stale next_fire written back) is still one job.
    let again = valid(json!({"name": "tick", "overlap": "allow"}));
    t.save(Some(s.id), again, Some(at(1)));
    assert!(t.fire(Timestamp(at(1).0 + 4_000)).jobs.is_empty());
    assert_eq!(t.runs(s.id).await.len(), 1);
    // Each later fire once (at(2) a minute late: still on time).
    let fired = t.fire(at(3));
    assert_eq!(
        fired.jobs.iter().map(fire_of).collect::<Vec<_>>(),
        [Some(at(2)), Some(at(3))]
    );
    let runs = t.runs(s.id).await;
    assert_eq!(runs.len(), 3);
    assert_eq!(
        runs.iter().map(fire_of).collect::<Vec<_>>(),
        [Some(at(1)), Some(at(2)), Some(at(3))]
    );
}

async fn overlap_and_missed_policies_decide_which_fires_make_jobs(db: TestDatabase) {
    let mut t = open_store(db);
    // Skip: while its run is queued or running, a fire makes no job.
    let skip = t.create(json!({"name": "skip"}), at(1));
    assert_eq!(t.fire(at(1)).jobs.len(), 1);
    let fired = t.fire(at(2));
    assert!(fired.jobs.is_empty());
    assert_eq!(fired.skipped, 1);
    let run = t.claim("n").unwrap();
    t.finish(run.id, JobState::Succeeded, Some(0));
    assert_eq!(
        t.fire(at(3)).jobs.len(),
        1,
        "the run ended: the next fire runs"
    );
    let shown = t.store.get_schedule(skip.id).await.unwrap().unwrap();
    assert_eq!(shown.skipped_fires, 1);
    t.apply_one(WriteOp::DeleteSchedule { id: skip.id });
    let queued = t.claim("n").unwrap();
    t.finish(queued.id, JobState::Succeeded, Some(0));

    // Queue: every fire makes a job, one of them runs at a time.
    let q = t.create(json!({"name": "queue", "overlap": "queue"}), at(4));
    let jobs = t.fire(at(5)).jobs;
    assert_eq!(jobs.len(), 2);
    assert_eq!(
        jobs[0].given.concurrency_key.as_deref(),
        Some(format!("schedule:{}", q.id).as_str())
    );
    let first = t.claim("n").unwrap();
    assert_eq!(first.id, jobs[0].id);
    assert!(t.claim("n").is_none(), "the second waits for the first");
    t.finish(first.id, JobState::Failed, Some(1));
    assert_eq!(t.claim("n").unwrap().id, jobs[1].id);
    t.apply_one(WriteOp::DeleteSchedule { id: q.id });

    // Missed: after an hour down, none, the latest one, or all of them.
    for (missed, runs, skipped) in [("skip", 1, 59), ("one", 2, 58), ("all", 60, 0)] {
        let s = t.create(
            json!({"name": format!("missed-{missed}"), "overlap": "allow", "missed": missed}),
            at(100),
        );
        let fired = t.fire(Timestamp(at(159).0 + 5_000_000));
        assert_eq!(fired.jobs.len(), runs, "missed {missed}");
        assert_eq!(fired.skipped, skipped, "missed {missed}");
        assert_eq!(
            fire_of(fired.jobs.last().unwrap()),
            Some(at(159)),
            "the due one runs"
        );
        t.apply_one(WriteOp::DeleteSchedule { id: s.id });
    }
}

async fn a_schedule_whose_row_cannot_be_read_is_disabled_not_fatal(db: TestDatabase) {
    let mut t = open_store(db);
    let bad = t.create(json!({"name": "bad"}), at(1));
    let good = t.create(json!({"name": "good"}), at(1));
    let url = t.db.url().to_owned();
    corrupt_cron(&t.db, &url, bad.id).await;
    // With another job's op in the same batch: it commits.
    let outcomes = t.apply(vec![
        insert_op(Some("other")),
        WriteOp::FireDue {
            now: at(1),
            node: "n".into(),
        },
    ]);
    let Outcome::Fired(fired) = &outcomes[1] else {
        panic!("{outcomes:?}")
    };
    assert_eq!(fired.jobs.len(), 1);
    assert_eq!(fired.jobs[0].given.schedule_id, Some(good.id));
    assert_eq!(fired.broken.len(), 1);
    assert_eq!(fired.broken[0].0, bad.id);
    assert!(fired.broken[0].1.contains("cron"), "{:?}", fired.broken);
    let shown = t.store.get_schedule(bad.id).await.unwrap().unwrap();
    assert!(!shown.enabled && shown.next_fire.is_none());
}

/// Writes a cron expression no parser takes into a schedule's row.
async fn corrupt_cron(db: &TestDatabase, url: &str, id: i64) {
    match db.backend() {
        joblog_store::testing::Backend::Sqlite => {
            let path = url.trim_start_matches("sqlite://");
            let c = rusqlite::Connection::open(path).unwrap();
            c.execute("UPDATE schedules SET cron = 'not cron' WHERE id = ?1", [id])
                .unwrap();
        }
        joblog_store::testing::Backend::Postgres => {
            let pg = joblog_store::testing::PgSession::connect(url).await;
            pg.client
                .execute(
                    "UPDATE schedules SET cron = 'not cron' WHERE id = $1",
                    &[&id],
                )
                .await
                .unwrap();
            pg.close().await;
        }
    }
}

async fn a_failed_run_is_retried_after_its_backoff_and_no_more(db: TestDatabase) {
    let mut t = open_store(db);
    let s = t.create(
        json!({"name": "flaky", "retries": {"attempts": 2, "backoff_s": 3600}}),
        at(1),
    );
    let first = t.fire(at(1)).jobs.remove(0);
    assert_eq!(t.claim("n").unwrap().id, first.id);
    t.finish(first.id, JobState::Failed, Some(1));
    let runs = t.runs(s.id).await;
    assert_eq!(runs.len(), 2, "the second attempt is queued");
    let retry = &runs[1];
    assert_eq!(
        (retry.given.attempt, fire_of(retry)),
        (Some(2), Some(at(1)))
    );
    assert_eq!(retry.state, JobState::Queued);
    // It waits for its backoff: an hour from the failure.
    assert!(t.claim("n").is_none(), "not before its backoff");
    let after = t.store.next_run_after().await.unwrap().expect("a wait");
    let wait = after.0 - Timestamp::now().0;
    assert!((3_500_000_000..=3_600_000_000).contains(&wait), "{wait}");
    // Ended by hand, the last attempt makes no other.
    t.apply_one(WriteOp::CancelQueued { job: retry.id });
    assert_eq!(t.runs(s.id).await.len(), 2);
    // A success is not retried, nor the last attempt's failure.
    let s2 = t.create(json!({"name": "once", "retries": {"attempts": 2}}), at(1));
    let ok = t.fire(at(1)).jobs.remove(0);
    t.claim("n");
    t.finish(ok.id, JobState::Succeeded, Some(0));
    assert_eq!(t.runs(s2.id).await.len(), 1);
    let s3 = t.create(json!({"name": "now", "retries": {"attempts": 2}}), at(1));
    let first = t.fire(at(1)).jobs.remove(0);
    t.claim("n");
    t.finish(first.id, JobState::TimedOut, None);
    let second = t.claim("n").expect("no backoff: claimed at once");
    assert_eq!(second.given.attempt, Some(2));
    t.finish(second.id, JobState::Failed, Some(1));
    assert_eq!(t.runs(s3.id).await.len(), 2, "two attempts, no third");
}

fn keyed(key: &str, max: u32) -> WriteOp {
    let mut spec = spec(&["true"]);
    spec.concurrency = Some(Concurrency {
        key: key.into(),
        max,
    });
    WriteOp::InsertJob {
        name: Some(key.into()),
        spec: Box::new(spec),
    }
}

async fn jobs_over_their_concurrency_limit_stay_queued_without_blocking_others(db: TestDatabase) {
    let mut t = open_store(db);
    let ids: Vec<JobId> = t
        .apply(vec![
            keyed("db", 2),
            keyed("db", 2),
            keyed("db", 2),
            insert_op(Some("free")),
            keyed("db", 2),
        ])
        .into_iter()
        .map(|o| match o {
            Outcome::Job(j) => j.id,
            other => panic!("{other:?}"),
        })
        .collect();
    let claimed: Vec<JobId> = (0..5).filter_map(|_| t.claim("n")).map(|j| j.id).collect();
    assert_eq!(
        claimed,
        [ids[0], ids[1], ids[3]],
        "two of db, then the free one"
    );
    t.finish(ids[0], JobState::Succeeded, Some(0));
    assert_eq!(t.claim("n").map(|j| j.id), Some(ids[2]));
    assert!(t.claim("n").is_none());
    t.finish(ids[1], JobState::Failed, Some(1));
    t.finish(ids[2], JobState::Succeeded, Some(0));
    assert_eq!(t.claim("n").map(|j| j.id), Some(ids[4]));
}

// PostgreSQL only: nodes racing for the same fires and keys.

#[tokio::test]
async fn postgres_nodes_racing_for_fires_make_each_once() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let (store, mut w) = open_node(db.url(), "n0");
    for i in 0..20 {
        let s = valid(json!({"name": format!("s{i}"), "overlap": "allow", "missed": "all"}));
        w.apply(&[WriteOp::SaveSchedule {
            id: None,
            schedule: Box::new(s),
            next_fire: Some(at(0)),
        }])
        .unwrap();
    }
    // Three nodes fire minute by minute through the same hour at once.
    let threads: Vec<_> = (0..3)
        .map(|n| {
            let (_s, mut w) = open_node(db.url(), &format!("n{}", n + 1));
            std::thread::spawn(move || {
                let mut made = 0;
                for m in 0..60 {
                    match &w
                        .apply(&[WriteOp::FireDue {
                            now: at(m),
                            node: "n".into(),
                        }])
                        .unwrap()[0]
                    {
                        Outcome::Fired(f) => made += f.jobs.len(),
                        other => panic!("{other:?}"),
                    }
                }
                made
            })
        })
        .collect();
    let made: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(made, 20 * 60, "each fire of each schedule once");
    for s in store.list_schedules(0, 100).await.unwrap() {
        let runs = store
            .list_jobs(JobQuery {
                schedule_id: Some(s.id),
                limit: 1000,
                ..JobQuery::default()
            })
            .await
            .unwrap();
        let mut fires: Vec<_> = runs.iter().map(fire_of).collect();
        fires.sort();
        fires.dedup();
        assert_eq!((runs.len(), fires.len()), (60, 60), "{}", s.name);
    }
}

#[tokio::test]
async fn postgres_claims_of_several_nodes_hold_a_concurrency_limit() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let (store, mut w) = open_node(db.url(), "n0");
    let ops: Vec<WriteOp> = (0..60)
        .map(|i| {
            if i % 3 == 0 {
                insert_op(None)
            } else {
                keyed("db", 3)
            }
        })
        .collect();
    w.apply(&ops).unwrap();
    // Three nodes claim in batches of 4 until nothing more is claimable.
    let threads: Vec<_> = (0..3)
        .map(|n| {
            let (_s, mut w) = open_node(db.url(), &format!("n{}", n + 1));
            std::thread::spawn(move || {
                let mut got = Vec::new();
                for _ in 0..50 {
                    let ops: Vec<WriteOp> = (0..4)
                        .map(|_| WriteOp::ClaimNext {
                            labels: Default::default(),
                            node: format!("n{}", n + 1),
                            at: Timestamp::now(),
                        })
                        .collect();
                    for o in w.apply(&ops).unwrap() {
                        if let Outcome::Claimed(Some(j)) = o {
                            got.push(j);
                        }
                    }
                }
                got
            })
        })
        .collect();
    let claimed: Vec<Job> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let keyed_running = claimed
        .iter()
        .filter(|j| j.given.concurrency_key.is_some())
        .count();
    assert_eq!(keyed_running, 3, "three of the key, across all nodes");
    assert_eq!(claimed.len(), 20 + 3, "every free job, and three keyed");
    let queued = store.count_queued(1000).await.unwrap();
    assert_eq!(queued, 40 - 3);
}

/// What per-schedule metrics read: per schedule and final state (cancels
/// aside), when its last such job finished; jobs of no schedule are not
/// read.
async fn each_schedules_last_success_and_failure_are_read_per_state(db: TestDatabase) {
    let mut t = open_store(db);
    let a = t.create(json!({"name": "a"}), at(1));
    let b = t.create(json!({"name": "b"}), at(1));
    let of = |jobs: &[Job], s: i64| {
        jobs.iter()
            .find(|j| j.spec.schedule.map(|r| r.schedule_id) == Some(s))
            .unwrap()
            .id
    };
    let first = t.fire(at(1)).jobs;
    t.claim("n");
    t.claim("n");
    let a_failed = t.finish(of(&first, a.id), JobState::Failed, Some(1));
    let b_timed_out = t.finish(of(&first, b.id), JobState::TimedOut, None);
    let second = t.fire(at(2)).jobs;
    t.claim("n");
    t.claim("n");
    let a_ok = t.finish(of(&second, a.id), JobState::Succeeded, Some(0));
    t.finish(of(&second, b.id), JobState::Cancelled, None);
    let free = t.insert(Some("a"));
    t.claim("n");
    t.finish(free.id, JobState::Succeeded, Some(0));
    let mut rows = t.store.finished_by_schedule().await.unwrap();
    rows.sort_by_key(|r| (r.schedule_id, r.state.name()));
    let row = |schedule_id, state, job: &Job| joblog_store::FinishedBySchedule {
        schedule_id,
        state,
        last_finished: job.finished_at.unwrap(),
    };
    assert_eq!(
        rows,
        [
            row(a.id, JobState::Failed, &a_failed),
            row(a.id, JobState::Succeeded, &a_ok),
            row(b.id, JobState::TimedOut, &b_timed_out),
        ]
    );
}

/// A schedule with neither cron nor trigger (a saved job) is kept as
/// such, never fires, and comes back as one; a cron schedule can be
/// made one.
async fn a_saved_job_is_kept_without_cron_or_trigger_and_never_fires(db: TestDatabase) {
    let mut t = open_store(db);
    let s = match t.save(
        None,
        valid(json!({"name": "restore-db", "cron": null})),
        None,
    ) {
        ScheduleSaved::Saved(s) => *s,
        other => panic!("not saved: {other:?}"),
    };
    assert_eq!(
        (s.cron.as_deref(), s.after.as_ref(), s.next_fire),
        (None, None, None)
    );
    let kept = t.store.get_schedule(s.id).await.unwrap().unwrap();
    assert_eq!((kept.cron, kept.after, kept.next_fire), (None, None, None));
    assert!(
        t.fire(at(60 * 24 * 365)).jobs.is_empty(),
        "a year on: no fire"
    );
    assert!(t.runs(s.id).await.is_empty());
    // A cron schedule made a saved job.
    let nightly = t.create(json!({"name": "nightly", "cron": "0 2 * * *"}), at(120));
    match t.save(
        Some(nightly.id),
        valid(json!({"name": "nightly", "cron": null})),
        None,
    ) {
        ScheduleSaved::Saved(s) => assert_eq!((s.cron, s.next_fire), (None, None)),
        other => panic!("not saved: {other:?}"),
    }
}
