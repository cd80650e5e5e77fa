//! Triggered runs: when a schedule's job ends for the last time (no
//! attempt follows), each enabled schedule that runs after it on that
//! state gets one job, queued in the transaction that ends the job. So a
//! crash at any instant neither loses nor repeats one, and of several
//! PostgreSQL nodes only the one whose transaction ended the job (its
//! row's update is taken once) queues it. The triggered schedule's
//! overlap, retries, concurrency and secrets apply as to a cron fire.

use joblog_core::schedule::{triggered_job, After, Overlap, Retries, ScheduleId, TriggeredBy};
use joblog_core::Job;

use super::writes::{insert_job, ScheduleWrites};
use super::{policies, spec_of};
use crate::db::{sql, Decode, Row, Statement};
use crate::Result;

/// The enabled schedules that run after schedule `$1`: one range of
/// `schedules_after`.
const FOLLOWERS: Statement = sql!(
    "SELECT id, name, spec, overlap, missed, attempts, backoff_s, after_states \
     FROM schedules WHERE after_id = $1 AND enabled = true ORDER BY id"
);
const SKIPPED: Statement =
    sql!("UPDATE schedules SET skipped_fires = skipped_fires + 1 WHERE id = $1");

struct FollowerRow {
    id: ScheduleId,
    name: String,
    spec: String,
    overlap: String,
    missed: String,
    attempts: i64,
    backoff_s: f64,
    states: Option<String>,
}

impl Decode for FollowerRow {
    fn decode(row: &impl Row) -> Result<FollowerRow> {
        Ok(FollowerRow {
            id: row.get(0)?,
            name: row.get(1)?,
            spec: row.get(2)?,
            overlap: row.get(3)?,
            missed: row.get(4)?,
            attempts: row.get(5)?,
            backoff_s: row.get(6)?,
            states: row.get(7)?,
        })
    }
}

/// Queues the runs `ended`'s end triggers (call it only when no attempt
/// of `ended` follows). A schedule whose row cannot be read triggers
/// nothing rather than fail the batch, which carries other jobs'
/// records; a run that overlap `skip`, the chain's depth or a paused
/// scheduler keeps from running counts as a skipped fire. `result` is
/// the ended job's result blob, if it left one: a follower may take
/// parameters from it.
pub(crate) async fn on_end<T: ScheduleWrites>(
    tx: &mut T,
    ended: &Job,
    result: Option<&[u8]>,
    now: i64,
) -> Result<()> {
    let Some(run) = ended.spec.schedule else {
        return Ok(());
    };
    let followers: Vec<FollowerRow> = tx.query(&FOLLOWERS, &[run.schedule_id.into()]).await?;
    let trigger = TriggeredBy::of(ended);
    // Read once, and only when a follower is there to hold.
    let mut paused = None;
    for f in followers {
        let states = f.states.as_deref().unwrap_or_default();
        if !After::parse_states(states).is_ok_and(|s| s.contains(&ended.state)) {
            continue;
        }
        let (Ok((overlap, _)), Ok(spec)) = (
            policies(f.id, &f.overlap, &f.missed),
            spec_of(f.id, &f.spec),
        ) else {
            continue;
        };
        let held = match paused {
            Some(p) => p,
            None => *paused.insert(crate::controls::is_paused(tx).await?),
        };
        let busy = overlap == Overlap::Skip && !tx.active(&[f.id]).await?.is_empty();
        let Some(trigger) = trigger.filter(|_| !busy && !held) else {
            tx.execute(&SKIPPED, &[f.id.into()]).await?;
            continue;
        };
        let retries = Retries {
            attempts: u32::try_from(f.attempts).unwrap_or(1),
            backoff_s: f.backoff_s,
        };
        let spec = triggered_job(f.id, &spec, overlap, retries, trigger, result);
        insert_job(tx, Some(&f.name), &spec, None, now).await?;
    }
    Ok(())
}
