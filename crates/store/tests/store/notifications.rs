//! Notification rules and the outbox on both stores: rules saved, listed,
//! renamed and deleted; a delivery queued by the very transaction that
//! ends a job (finish, cancel, interruption) for each enabled rule it
//! matches, once; claims that lease, tries that deliver, retry or fail;
//! and on PostgreSQL, two nodes claiming one outbox.

use std::time::Duration;

use joblog_core::notify::{Delivery, DeliveryState, NewRule, Rule, TryOutcome, ValidRule};
use joblog_store::RuleSaved;

use super::*;

joblog_store::backend_tests! {
    rules_are_saved_listed_renamed_and_deleted,
    a_jobs_end_queues_one_delivery_per_matching_enabled_rule,
    rules_saved_or_deleted_in_a_batch_apply_to_the_ends_after_them,
    a_claim_leases_and_a_try_delivers_retries_or_fails,
    two_nodes_never_claim_the_same_delivery,
}

fn rule(body: Value) -> ValidRule {
    let mut full = json!({
        "name": "r",
        "when": {"states": ["failed"]},
        "webhook": {"url": "https://hooks.example.com/x"}
    });
    for (k, v) in body.as_object().unwrap() {
        full[k] = v.clone();
    }
    serde_json::from_value::<NewRule>(full)
        .unwrap()
        .validate()
        .unwrap()
}

impl TestStore {
    fn save_rule(&mut self, id: Option<i64>, r: ValidRule) -> RuleSaved {
        match self.apply_one(WriteOp::SaveRule {
            id,
            rule: Box::new(r),
        }) {
            Outcome::Rule(saved) => saved,
            other => panic!("SaveRule gave {other:?}"),
        }
    }

    fn create_rule(&mut self, body: Value) -> Rule {
        match self.save_rule(None, rule(body)) {
            RuleSaved::Saved(r) => *r,
            other => panic!("not saved: {other:?}"),
        }
    }

    fn claim_deliveries(&mut self, node: &str, at: Timestamp) -> Vec<Delivery> {
        match self.apply_one(WriteOp::ClaimDeliveries {
            node: node.into(),
            at,
            lease: Duration::from_secs(60),
            max: 100,
        }) {
            Outcome::Deliveries(d) => d,
            other => panic!("ClaimDeliveries gave {other:?}"),
        }
    }

    fn tried(&mut self, id: i64, outcome: TryOutcome, retry_at: Option<Timestamp>) -> u64 {
        self.count(WriteOp::DeliveryTried {
            id,
            outcome,
            retry_at,
            at: Timestamp::now(),
        })
    }
}

async fn rules_are_saved_listed_renamed_and_deleted(db: TestDatabase) {
    let mut t = open_store(db);
    let a = t.create_rule(
        json!({"name": "a", "when": {"states": ["failed", "timed_out"], "name": "backup*"}}),
    );
    let b =
        t.create_rule(json!({"name": "b", "email": {"to": ["ops@example.com"]}, "webhook": null}));
    assert_eq!(
        t.save_rule(None, rule(json!({"name": "a"}))),
        RuleSaved::NameTaken
    );
    let shown = t.store.get_rule(a.id).await.unwrap().unwrap();
    assert_eq!(shown, a);
    assert_eq!(shown.when.name.as_deref(), Some("backup*"));
    assert!(b.email.is_some() && b.webhook.is_none());
    let listed: Vec<i64> = t
        .store
        .list_rules(0, 10)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(listed, [a.id, b.id]);
    assert_eq!(t.store.list_rules(a.id, 10).await.unwrap().len(), 1);
    // Renamed: to a free name, yes; to b's, no; an unknown id is not found.
    let RuleSaved::Saved(renamed) = t.save_rule(Some(a.id), rule(json!({"name": "a2"}))) else {
        panic!("not renamed")
    };
    assert_eq!((renamed.id, renamed.name.as_str()), (a.id, "a2"));
    assert_eq!(
        t.save_rule(Some(a.id), rule(json!({"name": "b"}))),
        RuleSaved::NameTaken
    );
    assert_eq!(
        t.save_rule(Some(999), rule(json!({"name": "z"}))),
        RuleSaved::NotFound
    );
    assert_eq!(t.count(WriteOp::DeleteRule { id: a.id }), 1);
    assert_eq!(t.count(WriteOp::DeleteRule { id: a.id }), 0);
    assert_eq!(t.store.get_rule(a.id).await.unwrap(), None);
}

async fn a_jobs_end_queues_one_delivery_per_matching_enabled_rule(db: TestDatabase) {
    // Whether the writer tells that its batches queued a delivery:
    // PostgreSQL's does (its sender looks only then), SQLite's does not.
    let tells = db.backend() == joblog_store::testing::Backend::Postgres;
    let mut t = open_store(db);
    let told = |t: &mut TestStore, queued: bool| {
        let expected = tells.then_some(queued);
        assert_eq!(t.writer.take_queued_deliveries(), expected);
    };
    let failures = t.create_rule(
        json!({"name": "failures", "when": {"states": ["failed", "cancelled", "interrupted"]}}),
    );
    let backups = t
        .create_rule(json!({"name": "backups", "when": {"states": ["failed"], "name": "backup*"}}));
    let off = t.create_rule(json!({"name": "off", "enabled": false}));
    let ok = t.finished_job(Some("backup-db"), JobState::Succeeded);
    told(&mut t, false);
    assert!(t.store.job_deliveries(ok.id).await.unwrap().is_empty());
    let failed = t.finished_job(Some("backup-db"), JobState::Failed);
    told(&mut t, true);
    told(&mut t, false);
    let queued = t.store.job_deliveries(failed.id).await.unwrap();
    let rules: Vec<i64> = queued.iter().map(|d| d.rule_id).collect();
    assert_eq!(rules, [failures.id, backups.id], "not {}", off.id);
    for d in &queued {
        assert_eq!(
            (d.state, d.attempts, d.job_id),
            (DeliveryState::Pending, 0, failed.id)
        );
        assert_eq!(d.next_try_at, Some(d.created_at), "due at once");
    }
    assert!(t.store.oldest_pending_delivery().await.unwrap().is_some());
    // A second end of the same job changes nothing (a job ends once).
    assert!(matches!(
        t.apply_one(WriteOp::Finish {
            job: failed.id,
            state: JobState::Failed,
            exit_code: Some(1),
            result: None,
            summary: LogSummary::default(),
            at: Timestamp::now(),
        }),
        Outcome::MaybeJob(None)
    ));
    assert_eq!(t.store.job_deliveries(failed.id).await.unwrap().len(), 2);
    told(&mut t, false);
    // A cancelled queued job and an interrupted one end too.
    let q = t.insert(Some("report"));
    assert!(matches!(
        t.apply_one(WriteOp::CancelQueued { job: q.id }),
        Outcome::MaybeJob(Some(_))
    ));
    assert_eq!(
        t.store.job_deliveries(q.id).await.unwrap()[0].rule_id,
        failures.id
    );
    let r = t.insert(Some("report"));
    t.claim("node-a").unwrap();
    told(&mut t, true);
    let ended = t.interrupted(WriteOp::Interrupt {
        node: Some("node-a".into()),
        include_queued: false,
    });
    assert_eq!(ended.len(), 1);
    told(&mut t, true);
    assert_eq!(
        t.store.job_deliveries(r.id).await.unwrap()[0].rule_id,
        failures.id
    );
    // Deleting a rule takes its deliveries; deleting a job, its own.
    t.count(WriteOp::DeleteRule { id: backups.id });
    assert_eq!(t.store.job_deliveries(failed.id).await.unwrap().len(), 1);
    t.count(WriteOp::DeleteLogChunk {
        job: failed.id,
        max: 1000,
    });
    t.count(WriteOp::DeleteJob { job: failed.id });
    assert!(t.store.job_deliveries(failed.id).await.unwrap().is_empty());
}

/// A writer may read the rules once a batch: a rule saved or deleted by
/// the batch still counts for the ends that follow it there, and only for
/// them.
async fn rules_saved_or_deleted_in_a_batch_apply_to_the_ends_after_them(db: TestDatabase) {
    let mut t = open_store(db);
    let first = t.create_rule(json!({"name": "first"}));
    let jobs: Vec<JobId> = (0..3)
        .map(|_| {
            let id = t.insert(Some("nightly")).id;
            assert_eq!(t.claim("node-a").map(|j| j.id), Some(id));
            id
        })
        .collect();
    let end = |job: JobId| WriteOp::Finish {
        job,
        state: JobState::Failed,
        exit_code: Some(1),
        result: None,
        summary: LogSummary::default(),
        at: Timestamp::now(),
    };
    let outcomes = t.apply(vec![
        end(jobs[0]),
        WriteOp::SaveRule {
            id: None,
            rule: Box::new(rule(json!({"name": "second"}))),
        },
        end(jobs[1]),
        WriteOp::DeleteRule { id: first.id },
        end(jobs[2]),
    ]);
    let RuleSaved::Saved(second) = (match &outcomes[1] {
        Outcome::Rule(saved) => saved.clone(),
        other => panic!("SaveRule gave {other:?}"),
    }) else {
        panic!("the second rule was not saved")
    };
    let told = |t: &TestStore, job: JobId| {
        let store = t.store.clone();
        async move {
            let mut rules: Vec<i64> = store
                .job_deliveries(job)
                .await
                .unwrap()
                .iter()
                .map(|d| d.rule_id)
                .collect();
            rules.sort_unstable();
            rules
        }
    };
    // The first rule's deliveries went with it.
    assert_eq!(told(&t, jobs[0]).await, Vec::<i64>::new());
    assert_eq!(told(&t, jobs[1]).await, vec![second.id]);
    assert_eq!(told(&t, jobs[2]).await, vec![second.id]);
}

async fn a_claim_leases_and_a_try_delivers_retries_or_fails(db: TestDatabase) {
    let mut t = open_store(db);
    let r = t.create_rule(json!({}));
    let ids: Vec<i64> = (0..3)
        .map(|_| t.finished_job(None, JobState::Failed).id)
        .collect();
    let now = Timestamp::now();
    let claimed = t.claim_deliveries("a", now);
    assert_eq!(claimed.len(), 3);
    let lease_end = Timestamp(now.micros() + 60_000_000);
    for d in &claimed {
        assert_eq!((d.attempts, d.next_try_at), (1, Some(lease_end)));
    }
    // Leased: nobody takes them again until the lease runs out.
    assert!(t.claim_deliveries("b", now).is_empty());
    assert_eq!(t.store.next_delivery_due().await.unwrap(), Some(lease_end));
    let [d1, d2, d3] = [claimed[0].id, claimed[1].id, claimed[2].id];
    assert_eq!(
        t.tried(d1, TryOutcome::Delivered { status: Some(204) }, None),
        1
    );
    let retry_at = Timestamp(now.micros() + 5_000_000);
    let busy = TryOutcome::Retry {
        status: Some(503),
        error: "busy".into(),
    };
    assert_eq!(t.tried(d2, busy.clone(), Some(retry_at)), 1);
    let gone = TryOutcome::Refused {
        status: Some(404),
        error: "no such hook".into(),
    };
    assert_eq!(t.tried(d3, gone, None), 1);
    // A try of a delivery no longer pending is not recorded again.
    assert_eq!(t.tried(d1, busy, Some(retry_at)), 0);
    let states: Vec<(DeliveryState, Option<u16>)> = t
        .store
        .rule_deliveries(r.id, i64::MAX, 10)
        .await
        .unwrap()
        .iter()
        .map(|d| (d.state, d.last_status))
        .collect();
    assert_eq!(
        states,
        [
            (DeliveryState::Failed, Some(404)),
            (DeliveryState::Pending, Some(503)),
            (DeliveryState::Delivered, Some(204)),
        ],
        "newest first"
    );
    let delivered = &t.store.job_deliveries(ids[0]).await.unwrap()[0];
    assert!(delivered.delivered_at.is_some() && delivered.next_try_at.is_none());
    // The retry is due at its time, with its attempts counted on.
    assert!(t.claim_deliveries("a", now).is_empty());
    let again = t.claim_deliveries("a", retry_at);
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].id, again[0].attempts), (d2, 2));
    assert_eq!(again[0].last_error.as_deref(), Some("busy"));
    // Out of retries: failed.
    let late = TryOutcome::Retry {
        status: None,
        error: "timed out".into(),
    };
    t.tried(d2, late, None);
    assert_eq!(t.store.oldest_pending_delivery().await.unwrap(), None);
}

/// Two nodes claiming the same due outbox at once take each delivery
/// once between them (PostgreSQL only: SQLite has one node).
async fn two_nodes_never_claim_the_same_delivery(db: TestDatabase) {
    if db.backend() != joblog_store::testing::Backend::Postgres {
        return;
    }
    let url = db.url().to_owned();
    let mut t = open_store(db);
    t.create_rule(json!({}));
    for _ in 0..60 {
        t.finished_job(None, JobState::Failed);
    }
    let (_, mut b) = open_node(&url, "b");
    let now = Timestamp::now();
    let claim = |w: &mut Box<dyn StoreWriter>, node: &str| -> Vec<i64> {
        let mut ids = Vec::new();
        loop {
            let out = w
                .apply(&[WriteOp::ClaimDeliveries {
                    node: node.into(),
                    at: now,
                    lease: Duration::from_secs(60),
                    max: 7,
                }])
                .unwrap();
            let Some(Outcome::Deliveries(d)) = out.into_iter().next() else {
                panic!("not deliveries")
            };
            if d.is_empty() {
                return ids;
            }
            ids.extend(d.iter().map(|d| d.id));
        }
    };
    let (mine, theirs) = std::thread::scope(|s| {
        let other = s.spawn(|| claim(&mut b, "b"));
        let mine = claim(&mut t.writer, "a");
        (mine, other.join().unwrap())
    });
    let mut all: Vec<i64> = mine.iter().chain(&theirs).copied().collect();
    all.sort_unstable();
    let before = all.len();
    all.dedup();
    assert_eq!(before, all.len(), "a delivery claimed twice");
    assert_eq!(all.len(), 60, "every delivery claimed");
}
