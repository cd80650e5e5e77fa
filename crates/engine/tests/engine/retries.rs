//! Retries of scheduled runs, by the engine's one clock.

use joblog_core::{Job, JobQuery, JobState, Timestamp};

use crate::harness::{eventually, Node, PATIENCE};

/// 2026-11-24T23:59:00Z: a minute before a daily schedule fires.
const EVE: Timestamp = Timestamp(1_795_564_740_000_000);
const SECOND: i64 = 1_000_000;

async fn runs(node: &Node, schedule: i64) -> Vec<Job> {
    let query = JobQuery {
        schedule_id: Some(schedule),
        limit: 10,
        ..JobQuery::default()
    };
    let mut jobs = node.store.list_jobs(query).await.unwrap();
    jobs.reverse();
    jobs
}

/// A failed run's retry waits out its backoff by the engine's clock, as
/// its fire did: it starts once that clock passes the backoff (an hour
/// here, which the wall clock would take an hour to).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_starts_when_the_engines_clock_passes_its_backoff() {
    let node = Node::start(EVE).await;
    let new = serde_json::from_value(serde_json::json!({
        "name": "flaky", "cron": "@daily", "script": "exit 3",
        "retries": {"attempts": 2, "backoff_s": 3600}
    }))
    .unwrap();
    let schedule = node.engine.create_schedule(new).await.unwrap().id;
    let midnight = Timestamp(EVE.0 + 60 * SECOND);
    node.clock.set(midnight);

    let (first, retry) = eventually("the first run to fail and its retry", PATIENCE, || async {
        match runs(&node, schedule).await.as_slice() {
            [first, retry] if first.state == JobState::Failed => {
                Some((first.clone(), retry.clone()))
            }
            _ => None,
        }
    })
    .await;
    assert_eq!(first.exit_code, Some(3));
    assert_eq!(retry.state, JobState::Queued, "{retry:?}");
    let due = retry.run_after.expect("a retry says when it may start");
    assert!(
        due.0 >= midnight.0 + 3600 * SECOND && due.0 < midnight.0 + 3700 * SECOND,
        "the backoff counts from the clock's end of the run: {due:?}"
    );

    // Once the clock passes it, it runs (and fails again).
    node.clock.set(Timestamp(due.0 + SECOND));
    let retried = eventually("the retry to run", PATIENCE, || async {
        let jobs = runs(&node, schedule).await;
        (jobs[1].state == JobState::Failed).then(|| jobs[1].clone())
    })
    .await;
    assert_eq!(retried.exit_code, Some(3));
    assert_eq!(runs(&node, schedule).await.len(), 2, "two attempts in all");
    node.shutdown().await;
}
