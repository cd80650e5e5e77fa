//! Triggers on both stores: a schedule that runs after another gets one
//! job per final end of that one's jobs in its states (finished,
//! cancelled while queued, interrupted), carrying the job that triggered
//! it; retried jobs trigger at their last attempt only; overlap `skip`
//! and disabled schedules; cycles, long chains and unknown schedules
//! refused at save; a followed schedule kept from deletion; and on
//! SQLite, the migration that made `cron` optional keeping schedules and
//! their ids.

use joblog_core::schedule::{Schedule, TriggeredBy, MAX_CHAIN};
use joblog_store::{ScheduleDeleted, ScheduleSaved};

use super::schedules::{at, valid};
use super::*;

joblog_store::backend_tests! {
    a_jobs_last_end_queues_one_run_of_each_schedule_after_it_on_that_state,
    cycles_long_chains_and_unknown_schedules_are_refused_and_a_followed_schedule_kept,
}

impl TestStore {
    fn after(&mut self, name: &str, after: i64, states: &[&str], extra: Value) -> Schedule {
        let mut body = json!({"name": name, "cron": null,
                              "after": {"schedule_id": after, "states": states}});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        match self.save(None, valid(body), None) {
            ScheduleSaved::Saved(s) => *s,
            other => panic!("not saved: {other:?}"),
        }
    }

    /// Fires `schedule` (due at `at(0)`, a fire a minute), claims and ends
    /// its job as `state`.
    fn run_once(&mut self, minute: i64, state: JobState) -> Job {
        let job = self.fire(at(minute)).jobs.remove(0);
        assert_eq!(self.claim("n").unwrap().id, job.id);
        self.finish(job.id, state, None)
    }
}

fn trigger_of(job: &Job) -> Option<TriggeredBy> {
    job.spec.schedule.and_then(|r| r.trigger)
}

async fn a_jobs_last_end_queues_one_run_of_each_schedule_after_it_on_that_state(db: TestDatabase) {
    let mut t = open_store(db);
    let a = t.create(
        json!({"name": "backup", "overlap": "allow", "missed": "all",
               "retries": {"attempts": 2, "backoff_s": 0}}),
        at(0),
    );
    let ok = t.after("report", a.id, &["succeeded"], json!({"overlap": "allow"}));
    let bad = t.after("page", a.id, &["failed", "timed_out"], json!({}));
    let stopped = t.after(
        "tidy",
        a.id,
        &["cancelled", "interrupted"],
        json!({"overlap": "allow"}),
    );
    let off = t.after("off", a.id, &["succeeded"], json!({"enabled": false}));
    assert_eq!(ok.cron, None);
    assert_eq!(ok.next_fire, None, "never by the clock");
    let shown = t.store.get_schedule(a.id).await.unwrap().unwrap();
    let followers: Vec<(i64, &str)> = shown
        .followers
        .as_deref()
        .unwrap()
        .iter()
        .map(|f| (f.schedule_id, f.name.as_str()))
        .collect();
    assert_eq!(
        followers,
        [
            (ok.id, "report"),
            (bad.id, "page"),
            (stopped.id, "tidy"),
            (off.id, "off")
        ]
    );
    let listed = t.store.list_schedules(0, 10).await.unwrap();
    assert!(
        listed.iter().all(|s| s.followers.is_none()),
        "not in listings"
    );
    assert_eq!(listed[1].after.as_ref().unwrap().schedule_id, a.id);

    // A success: one run of `report`, none of the others.
    let first = t.run_once(0, JobState::Succeeded);
    let runs = t.runs(ok.id).await;
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run.state, JobState::Queued);
    assert_eq!(run.name.as_deref(), Some("report"));
    assert_eq!(run.given.triggered_by, Some(first.id));
    assert_eq!(run.given.fire_time, Some(None), "no fire of its own");
    let by = trigger_of(run).unwrap();
    assert_eq!(
        (by.job_id, by.state, by.depth),
        (first.id, JobState::Succeeded, 2)
    );
    for s in [&bad, &stopped, &off] {
        assert!(t.runs(s.id).await.is_empty(), "{}", s.name);
    }
    t.apply_one(WriteOp::CancelQueued { job: run.id });

    // A failure with an attempt left triggers nothing; the last one does.
    let failed = t.run_once(1, JobState::Failed);
    assert!(t.runs(bad.id).await.is_empty(), "an attempt follows");
    let retry = t.claim("n").expect("the second attempt");
    assert_eq!(retry.given.attempt, Some(2));
    let last = t.finish(retry.id, JobState::TimedOut, None);
    let paged = t.runs(bad.id).await;
    assert_eq!(paged.len(), 1);
    assert_eq!(paged[0].given.triggered_by, Some(last.id));
    assert_ne!(paged[0].given.triggered_by, Some(failed.id));

    // Overlap `skip`: a second trigger while its run is queued makes none.
    let a_again = t.fire(at(2)).jobs.remove(0);
    t.apply_one(WriteOp::CancelQueued { job: paged[0].id });
    t.claim("n");
    t.finish(a_again.id, JobState::Failed, None);
    let retry = t.claim("n").unwrap();
    t.finish(retry.id, JobState::Failed, None);
    assert_eq!(t.runs(bad.id).await.len(), 2, "no longer active: runs");
    let a_third = t.fire(at(3)).jobs.remove(0);
    t.claim_this(a_third.id);
    t.finish(a_third.id, JobState::Failed, None);
    let retry = t.claim("n").unwrap();
    t.finish(retry.id, JobState::Failed, None);
    assert_eq!(t.runs(bad.id).await.len(), 2, "its run is queued: skipped");
    let bad_now = t.store.get_schedule(bad.id).await.unwrap().unwrap();
    assert_eq!(bad_now.skipped_fires, 1);

    // Cancelled while queued, and interrupted: the other follower's
    // states. An interrupted run with an attempt left is tried again (its
    // node was lost), and its last attempt's end triggers.
    let queued = t.fire(at(4)).jobs.remove(0);
    t.apply_one(WriteOp::CancelQueued { job: queued.id });
    let lost = t.fire(at(5)).jobs.remove(0);
    t.claim_this(lost.id);
    t.interrupted(WriteOp::Interrupt {
        node: None,
        include_queued: false,
    });
    assert_eq!(
        t.runs(stopped.id).await.len(),
        1,
        "an attempt follows the lost one"
    );
    let backup_runs = t.runs(a.id).await;
    let again = backup_runs.last().unwrap();
    assert_eq!(
        (again.given.attempt, again.state),
        (Some(2), JobState::Queued)
    );
    t.claim_this(again.id);
    t.interrupted(WriteOp::Interrupt {
        node: None,
        include_queued: false,
    });
    let running = again.clone();
    let tidy = t.runs(stopped.id).await;
    let by: Vec<(JobId, JobState)> = tidy
        .iter()
        .map(|j| trigger_of(j).map(|b| (b.job_id, b.state)).unwrap())
        .collect();
    assert_eq!(
        by,
        [
            (queued.id, JobState::Cancelled),
            (running.id, JobState::Interrupted)
        ]
    );
    assert!(t.runs(off.id).await.is_empty(), "disabled: never");

    // A triggered run's end triggers the next in the chain, one deeper.
    let next = t.after("archive", ok.id, &["succeeded"], json!({}));
    let report = t.run_report(ok.id).await;
    let archive = t.runs(next.id).await;
    assert_eq!(archive.len(), 1);
    let by = trigger_of(&archive[0]).unwrap();
    assert_eq!((by.job_id, by.depth), (report.id, 3));
}

impl TestStore {
    /// Claims queued jobs, oldest first, until `job` (the others run on).
    fn claim_this(&mut self, job: JobId) {
        while let Some(j) = self.claim("n") {
            if j.id == job {
                return;
            }
        }
        panic!("job {job} was not queued");
    }

    /// Makes a run of `report` (after `backup`) by a success of `backup`,
    /// and ends it as a success; the queue must hold nothing else.
    async fn run_report(&mut self, report: i64) -> Job {
        while let Some(j) = self.claim("n") {
            self.finish(j.id, JobState::Cancelled, None);
        }
        let backup = self.fire(at(6)).jobs.remove(0);
        assert_eq!(self.claim("n").unwrap().id, backup.id);
        self.finish(backup.id, JobState::Succeeded, Some(0));
        let run = self.runs(report).await.pop().unwrap();
        assert_eq!(self.claim("n").unwrap().id, run.id);
        self.finish(run.id, JobState::Succeeded, Some(0))
    }
}

async fn cycles_long_chains_and_unknown_schedules_are_refused_and_a_followed_schedule_kept(
    db: TestDatabase,
) {
    let mut t = open_store(db);
    let refused = |saved: ScheduleSaved| match saved {
        ScheduleSaved::BadTrigger(why) => why,
        other => panic!("saved: {other:?}"),
    };
    let body = |name: &str, after: i64| {
        valid(
            json!({"name": name, "cron": null, "after": {"schedule_id": after, "states": ["succeeded"]}}),
        )
    };
    let why = refused(t.save(None, body("x", 9999), None));
    assert_eq!(why, "there is no schedule 9999");

    // A chain of MAX_CHAIN schedules, the first on cron.
    let first = t.create(json!({"name": "s1"}), at(0));
    let mut chain = vec![first.id];
    for i in 2..=MAX_CHAIN {
        let s = t.after(
            &format!("s{i}"),
            *chain.last().unwrap(),
            &["succeeded"],
            json!({}),
        );
        chain.push(s.id);
    }
    let why = refused(t.save(None, body("one-more", *chain.last().unwrap()), None));
    assert!(why.contains("at most 32 long"), "{why}");
    // Nor longer by moving a schedule with followers lower down.
    let side = t.after("side", chain[0], &["succeeded"], json!({}));
    let why = refused(t.save(Some(chain[1]), body("s2", side.id), None));
    assert!(why.contains("at most 32 long"), "{why}");

    // Cycles: onto itself, and through others.
    let why = refused(t.save(Some(chain[3]), body("s4", chain[3]), None));
    assert_eq!(why, "a schedule cannot run after itself");
    let why = refused(t.save(Some(chain[2]), body("s3", chain[5]), None));
    assert!(why.contains("that would be a cycle"), "{why}");
    // A cron schedule made to run after the last of its own chain.
    let why = refused(t.save(Some(chain[0]), body("s1", chain[9]), None));
    assert!(why.contains("that would be a cycle"), "{why}");
    let unchanged = t.store.get_schedule(chain[0]).await.unwrap().unwrap();
    assert!(unchanged.cron.is_some() && unchanged.after.is_none());

    // A followed schedule stays; its last follower gone, it goes.
    match t.delete_schedule(chain[0]) {
        ScheduleDeleted::Followed(f) => {
            assert_eq!(
                f,
                [(chain[1], "s2".to_string()), (side.id, "side".to_string())]
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(t.delete_schedule(side.id), ScheduleDeleted::Deleted);
    // Moved onto cron, s2 no longer follows s1.
    let s2 = valid(json!({"name": "s2", "cron": "* * * * *"}));
    assert!(matches!(
        t.save(Some(chain[1]), s2, Some(at(1))),
        ScheduleSaved::Saved(_)
    ));
    assert_eq!(t.delete_schedule(chain[0]), ScheduleDeleted::Deleted);
}

/// A database of the version before triggers: its `schedules` table as
/// it was (`cron` required), a schedule in it and a deleted one's id
/// spent. Opening it migrates: the schedule is kept as it was, and the
/// next one gets a new id, not the deleted one's, which jobs still name.
#[tokio::test]
async fn sqlite_schedules_and_their_ids_survive_the_migration_to_triggers() {
    let db = TestDatabase::sqlite();
    let url = db.url().to_owned();
    let mut t = open_store(db);
    let kept = t.create(json!({"name": "kept", "cron": "30 2 * * *"}), at(0));
    let gone = t.create(json!({"name": "gone"}), at(0));
    assert_eq!(t.delete_schedule(gone.id), ScheduleDeleted::Deleted);
    let TestStore { store, writer, db } = t;
    drop(writer);
    drop(store);
    let conn = rusqlite::Connection::open(db.dir().join("joblog.db")).unwrap();
    // The migrations after it (placement, drain and pause, users, single
    // sign-on, folders, saved jobs, segments' text indexes) undone first.
    conn.execute_batch(
        "ALTER TABLE segments DROP COLUMN grams;
         DROP INDEX jobs_folder; ALTER TABLE jobs DROP COLUMN folder; ALTER TABLE tokens DROP COLUMN folders;
         DROP TABLE sign_ins; DROP TABLE sessions; DROP TABLE users; DROP TABLE scheduler_state; ALTER TABLE nodes DROP COLUMN drain_at;
         ALTER TABLE nodes DROP COLUMN presumed_lapsed;
         ALTER TABLE jobs DROP COLUMN node_selector; ALTER TABLE nodes DROP COLUMN labels;
         CREATE TABLE old (
            id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE,
            cron TEXT NOT NULL, timezone TEXT NOT NULL, spec TEXT NOT NULL,
            overlap TEXT NOT NULL, missed TEXT NOT NULL, attempts INTEGER NOT NULL,
            backoff_s REAL NOT NULL, enabled INTEGER NOT NULL, next_fire INTEGER,
            skipped_fires INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL);
         INSERT INTO old SELECT id, name, cron, timezone, spec, overlap, missed, attempts,
            backoff_s, enabled, next_fire, skipped_fires, created_at, updated_at FROM schedules;
         DELETE FROM sqlite_sequence WHERE name = 'old';
         INSERT INTO sqlite_sequence (name, seq)
            SELECT 'old', seq FROM sqlite_sequence WHERE name = 'schedules';
         DROP TABLE schedules;
         ALTER TABLE old RENAME TO schedules;
         CREATE INDEX schedules_next_fire ON schedules(next_fire) WHERE next_fire IS NOT NULL;",
    )
    .unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    conn.pragma_update(None, "user_version", version - 8)
        .unwrap();
    drop(conn);
    let mut t = open_store_at(db, &url);
    let migrated = t.store.get_schedule(kept.id).await.unwrap().unwrap();
    assert_eq!(
        (migrated.cron.as_deref(), migrated.next_fire, migrated.after),
        (Some("30 2 * * *"), Some(at(0)), None)
    );
    let new = t.create(json!({"name": "new"}), at(0));
    assert!(new.id > gone.id, "{} reused", new.id);
}
