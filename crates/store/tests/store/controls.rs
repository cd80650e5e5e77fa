//! Placement, drain and pause on both stores: selectors and concurrency
//! keys together; a drained node claims and fires nothing while other
//! nodes go on; a paused scheduler fires and triggers
//! nothing, and fires what is due once resumed; a paused start drains its
//! node, pauses the scheduler and takes the nodes it found for lapsed
//! until they heartbeat.

use std::time::Duration;

use joblog_core::NodeState;
use joblog_store::testing::Backend;
use joblog_store::ScheduleSaved;

use super::schedules::at;
use super::*;

joblog_store::backend_tests! {
    selectors_and_concurrency_keys_hold_together,
    the_ops_of_one_batch_see_what_the_ops_before_them_wrote,
    a_drained_node_claims_and_fires_nothing_until_undrained,
    a_paused_scheduler_fires_and_triggers_nothing_until_resumed,
    a_paused_start_drains_its_node_pauses_the_scheduler_and_presumes_the_others_lapsed,
}

const TIMEOUT: Duration = Duration::from_secs(30);

impl TestStore {
    fn register(&mut self, node: &str, paused: bool) {
        self.apply(vec![WriteOp::RegisterNode {
            node: node.into(),
            version: "9.9.9".into(),
            secret_names: Vec::new(),
            labels: Default::default(),
            paused,
        }]);
    }

    fn set_drain(&mut self, node: &str, drain: bool) -> u64 {
        match self.apply_one(WriteOp::SetDrain {
            node: node.into(),
            drain,
        }) {
            Outcome::Count(n) => n,
            other => panic!("SetDrain gave {other:?}"),
        }
    }

    fn set_paused(&mut self, by: Option<&str>) {
        self.apply(vec![WriteOp::SetPaused {
            by: by.map(str::to_owned),
        }]);
    }

    async fn state_of(&self, node: &str) -> NodeState {
        let nodes = self.store.list_nodes().await.unwrap();
        let n = nodes.iter().find(|n| n.name == node).expect("the node");
        n.state(Timestamp::now(), TIMEOUT)
    }
}

/// A job with a key and a selector waits for both: a node without the
/// labels never takes it, one with them takes at most the key's limit,
/// and the jobs behind it (of any selector) are taken meanwhile.
async fn selectors_and_concurrency_keys_hold_together(db: TestDatabase) {
    let mut t = open_store(db);
    let job = |selector: &str, key: Option<&str>| {
        let mut spec = JobSpec {
            command: vec!["true".into()],
            node_selector: joblog_core::Labels::parse(selector).unwrap(),
            ..JobSpec::default()
        };
        spec.concurrency = key.map(|k| joblog_core::Concurrency {
            key: k.into(),
            max: 1,
        });
        WriteOp::InsertJob {
            name: None,
            spec: Box::new(spec),
        }
    };
    let ids: Vec<JobId> = t
        .apply(vec![
            job("role=db", Some("backup")),
            job("role=db", Some("backup")),
            job("role=web", None),
            job("", None),
        ])
        .into_iter()
        .map(|o| match o {
            Outcome::Job(j) => j.id,
            other => panic!("{other:?}"),
        })
        .collect();
    let claim =
        |t: &mut TestStore, node: &str, labels: &str| match t.apply_one(WriteOp::ClaimNext {
            node: node.into(),
            labels: joblog_core::Labels::parse(labels).unwrap(),
            at: Timestamp::now(),
        }) {
            Outcome::Claimed(job) => job.map(|j| j.id),
            other => panic!("{other:?}"),
        };
    // The web node takes its job and the free one, never the db jobs.
    assert_eq!(claim(&mut t, "web-1", "role=web"), Some(ids[2]));
    assert_eq!(claim(&mut t, "web-1", "role=web"), Some(ids[3]));
    assert_eq!(claim(&mut t, "web-1", "role=web"), None);
    // A db node takes one of the key; the second waits for it.
    assert_eq!(claim(&mut t, "db-1", "role=db,os=linux"), Some(ids[0]));
    assert_eq!(claim(&mut t, "db-1", "role=db,os=linux"), None);
    t.finish(ids[0], JobState::Succeeded, Some(0));
    assert_eq!(claim(&mut t, "web-1", "role=web"), None);
    assert_eq!(claim(&mut t, "db-1", "role=db,os=linux"), Some(ids[1]));
}

/// Claims, ends and new jobs in one batch (PostgreSQL sends their first
/// statements at once): a claim takes neither a job an earlier claim of
/// the batch took nor a second of a key whose limit an earlier one
/// filled, sees an end before it free the key, and a job queued in the
/// same batch is taken by one of its claims.
async fn the_ops_of_one_batch_see_what_the_ops_before_them_wrote(db: TestDatabase) {
    let mut t = open_store(db);
    let insert = |key: Option<&str>| {
        let spec = JobSpec {
            command: vec!["true".into()],
            concurrency: key.map(|k| joblog_core::Concurrency {
                key: k.into(),
                max: 1,
            }),
            ..JobSpec::default()
        };
        WriteOp::InsertJob {
            name: None,
            spec: Box::new(spec),
        }
    };
    let claim = || WriteOp::ClaimNext {
        node: "n".into(),
        labels: Default::default(),
        at: Timestamp::now(),
    };
    let claimed = |outcomes: Vec<Outcome>| -> Vec<Option<JobId>> {
        outcomes
            .into_iter()
            .filter_map(|o| match o {
                Outcome::Claimed(job) => Some(job.map(|j| j.id)),
                _ => None,
            })
            .collect()
    };
    let ids: Vec<JobId> = t
        .apply(vec![insert(Some("k")), insert(Some("k")), insert(None)])
        .into_iter()
        .map(|o| match o {
            Outcome::Job(j) => j.id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        claimed(t.apply(vec![claim(), claim(), claim()])),
        [Some(ids[0]), Some(ids[2]), None],
        "the key's second job waits; no job is taken twice"
    );
    let finish = WriteOp::Finish {
        job: ids[0],
        state: JobState::Succeeded,
        exit_code: Some(0),
        result: None,
        summary: LogSummary::default(),
        at: Timestamp::now(),
    };
    let outcomes = t.apply(vec![finish, claim(), claim(), insert(None), claim()]);
    assert!(
        matches!(&outcomes[0], Outcome::MaybeJob(Some(j)) if j.state == JobState::Succeeded),
        "{:?}",
        outcomes[0]
    );
    let new = match &outcomes[3] {
        Outcome::Job(j) => j.id,
        other => panic!("{other:?}"),
    };
    // Which claim takes the new job may differ: on PostgreSQL a claim
    // that met the key's second job looks again after the batch's later
    // statements ran.
    let mut taken = claimed(outcomes);
    taken.sort();
    assert_eq!(
        taken,
        [None, Some(ids[1]), Some(new)],
        "the end frees the key; the job queued in the batch is taken"
    );
}

async fn a_drained_node_claims_and_fires_nothing_until_undrained(db: TestDatabase) {
    let mut t = open_store(db);
    t.register("n", false);
    t.register("m", false);
    // (On SQLite a start takes the other nodes for copies until they
    // heartbeat.)
    t.apply(vec![WriteOp::Heartbeat {
        node: "n".into(),
        lapse: None,
    }]);
    let s = t.create(json!({"name": "tick", "overlap": "allow"}), at(0));
    let job = t.insert(None);
    assert_eq!(t.set_drain("n", true), 1);
    assert_eq!(t.set_drain("nobody", true), 0);
    assert_eq!(t.state_of("n").await, NodeState::Drained);
    assert!(t.claim("n").is_none(), "a drained node claims nothing");
    let held = t.fire(at(0));
    assert!(held.held && held.jobs.is_empty(), "{held:?}");
    assert!(t.runs(s.id).await.is_empty());
    // Another node goes on; what the drained one runs, it finishes.
    assert_eq!(t.claim("m").unwrap().id, job.id);
    assert_eq!(t.state_of("m").await, NodeState::Up);
    // Asked twice, it keeps the first time.
    let first = t.store.list_nodes().await.unwrap()[1].drain_at;
    assert_eq!(t.set_drain("n", true), 1);
    assert_eq!(t.store.list_nodes().await.unwrap()[1].drain_at, first);
    assert_eq!(t.set_drain("n", false), 1);
    assert_eq!(t.state_of("n").await, NodeState::Up);
    let fired = t.fire(at(0));
    assert!(!fired.held);
    assert_eq!(fired.jobs.len(), 1);
    assert_eq!(t.claim("n").unwrap().id, fired.jobs[0].id);
}

async fn a_paused_scheduler_fires_and_triggers_nothing_until_resumed(db: TestDatabase) {
    let mut t = open_store(db);
    let a = t.create(json!({"name": "backup", "overlap": "allow"}), at(0));
    let body = json!({"name": "report", "cron": null, "overlap": "allow",
                      "after": {"schedule_id": a.id, "states": ["succeeded"]}});
    let report = match t.save(None, super::schedules::valid(body), None) {
        ScheduleSaved::Saved(s) => *s,
        other => panic!("{other:?}"),
    };
    t.set_paused(Some("alice"));
    // Paused again by another: the first pause is kept.
    t.set_paused(Some("bob"));
    let state = t.store.scheduler_state().await.unwrap();
    assert!(state.paused && state.paused_at.is_some(), "{state:?}");
    assert_eq!(state.paused_by.as_deref(), Some("alice"));
    let held = t.fire(at(0));
    assert!(held.held && held.jobs.is_empty(), "{held:?}");
    // Resumed, the fire still due is made; its end, while paused again,
    // triggers nothing (counted as a skipped fire of the follower).
    t.set_paused(None);
    assert!(!t.store.scheduler_state().await.unwrap().paused);
    let job = t.fire(at(0)).jobs.remove(0);
    assert_eq!(t.claim("n").unwrap().id, job.id);
    t.set_paused(Some("alice"));
    t.finish(job.id, JobState::Succeeded, Some(0));
    assert!(t.runs(report.id).await.is_empty());
    let shown = t.store.get_schedule(report.id).await.unwrap().unwrap();
    assert_eq!(shown.skipped_fires, 1);
    t.set_paused(None);
    let job = t.fire(at(1)).jobs.remove(0);
    assert_eq!(t.claim("n").unwrap().id, job.id);
    t.finish(job.id, JobState::Succeeded, Some(0));
    assert_eq!(t.runs(report.id).await.len(), 1, "resumed, it triggers");
}

async fn a_paused_start_drains_its_node_pauses_the_scheduler_and_presumes_the_others_lapsed(
    db: TestDatabase,
) {
    let one_node = db.backend() == Backend::Sqlite;
    let mut t = open_store(db);
    t.register("old", false);
    t.register("peer", false);
    // A plain start: only the store of one node takes the others for
    // copies (on PostgreSQL they share the database).
    t.register("plain", false);
    let expected = if one_node {
        NodeState::Lapsed
    } else {
        NodeState::Up
    };
    assert_eq!(t.state_of("old").await, expected);
    t.apply(vec![WriteOp::Heartbeat {
        node: "old".into(),
        lapse: None,
    }]);
    assert_eq!(
        t.state_of("old").await,
        NodeState::Up,
        "a heartbeat clears it"
    );
    t.register("restored", true);
    assert_eq!(t.state_of("old").await, NodeState::Lapsed);
    assert_eq!(t.state_of("peer").await, NodeState::Lapsed);
    assert_eq!(t.state_of("restored").await, NodeState::Drained);
    let state = t.store.scheduler_state().await.unwrap();
    assert_eq!(
        state.paused_by.as_deref(),
        Some("node restored, started paused")
    );
    t.insert(None);
    assert!(t.claim("restored").is_none());
    t.apply(vec![WriteOp::Heartbeat {
        node: "peer".into(),
        lapse: None,
    }]);
    assert_eq!(t.state_of("peer").await, NodeState::Up);
    assert_eq!(t.state_of("old").await, NodeState::Lapsed);
}
