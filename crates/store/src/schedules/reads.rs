//! What requests and the scheduler read of schedules, the same on both
//! stores: one schedule or a page of them (each joined with its latest
//! job), and the earliest time the scheduler must wake for.

use joblog_core::schedule::{After, Follower, Schedule, ScheduleId};
use joblog_core::Timestamp;

use super::{schedule_columns, schedule_from, ScheduleRow};
use crate::db::{query_one, sql, Conn, Decode, Row, Statement};
use crate::Result;

pub(crate) const GET: Statement = sql!(concat!(
    "SELECT ",
    schedule_columns!(),
    " ",
    schedule_from!(),
    " WHERE s.id = $1"
));
const LIST: Statement = sql!(concat!(
    "SELECT ",
    schedule_columns!(),
    " ",
    schedule_from!(),
    " WHERE s.id > $1 ORDER BY s.id LIMIT $2"
));
/// The schedules that run after schedule `$1`: one range of
/// `schedules_after`.
pub(crate) const FOLLOWERS: Statement =
    sql!("SELECT id, name, after_states FROM schedules WHERE after_id = $1 ORDER BY id");
/// The earliest next fire: one entry of `schedules_next_fire`.
pub(crate) const NEXT_FIRE: Statement =
    sql!("SELECT min(next_fire) FROM schedules WHERE next_fire IS NOT NULL");
/// The earliest time a queued job waits for: one entry of
/// `jobs_run_after`.
const NEXT_RUN_AFTER: Statement =
    sql!("SELECT min(run_after) FROM jobs WHERE state = 'queued' AND run_after IS NOT NULL");

/// A row of [`schedule_columns!`].
impl Decode for Schedule {
    fn decode(row: &impl Row) -> Result<Schedule> {
        ScheduleRow {
            id: row.get(0)?,
            name: row.get(1)?,
            cron: row.get(2)?,
            timezone: row.get(3)?,
            spec: row.get(4)?,
            overlap: row.get(5)?,
            missed: row.get(6)?,
            attempts: row.get(7)?,
            backoff_s: row.get(8)?,
            enabled: row.get(9)?,
            next_fire: row.get(10)?,
            skipped_fires: row.get(11)?,
            created_at: row.get(12)?,
            updated_at: row.get(13)?,
            after_id: row.get(14)?,
            after_states: row.get(15)?,
            last_id: row.get(16)?,
            last_state: row.get(17)?,
            last_fire: row.get(18)?,
            last_attempt: row.get(19)?,
            last_created: row.get(20)?,
            last_finished: row.get(21)?,
        }
        .into_schedule()
    }
}

/// One schedule, with the schedules that run after it.
pub(crate) async fn get<C: Conn>(c: &mut C, id: ScheduleId) -> Result<Option<Schedule>> {
    let Some(mut s) = crate::db::query_opt::<C, Schedule>(c, &GET, &[id.into()]).await? else {
        return Ok(None);
    };
    let rows: Vec<(ScheduleId, String, Option<String>)> = c.query(&FOLLOWERS, &[id.into()]).await?;
    let mut followers = Vec::with_capacity(rows.len());
    for (follower, name, states) in rows {
        let states = states.unwrap_or_default();
        let states = After::parse_states(&states).map_err(|e| {
            crate::StoreError::Corrupt(format!("schedule {follower}: its trigger's states: {e}"))
        })?;
        followers.push(Follower {
            schedule_id: follower,
            name,
            states,
        });
    }
    s.followers = Some(followers);
    Ok(Some(s))
}

pub(crate) async fn list<C: Conn>(
    c: &mut C,
    after_id: ScheduleId,
    limit: u32,
) -> Result<Vec<Schedule>> {
    c.query(&LIST, &[after_id.into(), limit.into()]).await
}

pub(crate) async fn next_fire<C: Conn>(c: &mut C) -> Result<Option<Timestamp>> {
    Ok(query_one::<C, Option<i64>>(c, &NEXT_FIRE, &[])
        .await?
        .map(Timestamp))
}

pub(crate) async fn next_run_after<C: Conn>(c: &mut C) -> Result<Option<Timestamp>> {
    Ok(query_one::<C, Option<i64>>(c, &NEXT_RUN_AFTER, &[])
        .await?
        .map(Timestamp))
}
