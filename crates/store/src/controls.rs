//! Drain and pause: a node asked to drain takes no job and fires no
//! schedule (`nodes.drain_at`); a paused scheduler fires on no node
//! (`scheduler_state`, one row). Both are read inside the transactions of
//! a claim and of a `FireDue`, so no job starts on a drained node and no
//! schedule fires once either is committed, whichever node asked.

use joblog_core::Timestamp;

use crate::db::{query_opt, sql, Conn, Decode, Row, Statement};
use crate::{Outcome, Result};

const DRAIN: Statement = sql!("UPDATE nodes SET drain_at = COALESCE(drain_at, $2) WHERE name = $1");
const UNDRAIN: Statement = sql!("UPDATE nodes SET drain_at = NULL WHERE name = $1");
const PAUSE: Statement = sql!(
    "UPDATE scheduler_state SET paused_at = COALESCE(paused_at, $1), \
     paused_by = CASE WHEN paused_at IS NULL THEN $2 ELSE paused_by END"
);
const RESUME: Statement = sql!("UPDATE scheduler_state SET paused_at = NULL, paused_by = NULL");
/// Whether fires are held for node `$1`: the scheduler is paused, or the
/// node asked to drain.
const HOLDS_FIRES: Statement = sql!(
    "SELECT (SELECT count(*) FROM scheduler_state WHERE paused_at IS NOT NULL) \
          + (SELECT count(*) FROM nodes WHERE name = $1 AND drain_at IS NOT NULL)"
);
const PRESUME_OTHERS_LAPSED: Statement =
    sql!("UPDATE nodes SET presumed_lapsed = true WHERE name <> $1");
const STATE: Statement = sql!("SELECT paused_at, paused_by FROM scheduler_state");
const PAUSED: Statement = sql!("SELECT count(*) FROM scheduler_state WHERE paused_at IS NOT NULL");

/// Whether the scheduler fires: paused since when and by whom.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SchedulerState {
    pub paused: bool,
    pub paused_at: Option<Timestamp>,
    pub paused_by: Option<String>,
}

impl Decode for SchedulerState {
    fn decode(row: &impl Row) -> Result<SchedulerState> {
        let paused_at: Option<i64> = row.get(0)?;
        Ok(SchedulerState {
            paused: paused_at.is_some(),
            paused_at: paused_at.map(Timestamp),
            paused_by: row.get(1)?,
        })
    }
}

/// [`crate::WriteOp::SetDrain`].
pub(crate) async fn set_drain<C: Conn>(
    c: &mut C,
    node: &str,
    drain: bool,
    now: i64,
) -> Result<Outcome> {
    let n = if drain {
        c.execute(&DRAIN, &[node.into(), now.into()]).await?
    } else {
        c.execute(&UNDRAIN, &[node.into()]).await?
    };
    Ok(Outcome::Count(n))
}

/// [`crate::WriteOp::SetPaused`].
pub(crate) async fn set_paused<C: Conn>(c: &mut C, by: Option<&str>, now: i64) -> Result<Outcome> {
    match by {
        Some(by) => c.execute(&PAUSE, &[now.into(), by.into()]).await?,
        None => c.execute(&RESUME, &[]).await?,
    };
    Ok(Outcome::Done)
}

/// What a start does besides registering `node` (see
/// [`crate::WriteOp::RegisterNode`]): started `paused`, it drains itself
/// and pauses the scheduler; then, when `presume` (a paused start, or any
/// start on a store of one node), every other node is taken for lapsed
/// until it heartbeats.
pub(crate) async fn on_start<C: Conn>(
    c: &mut C,
    node: &str,
    paused: bool,
    presume: bool,
    now: i64,
) -> Result<()> {
    if paused {
        c.execute(&DRAIN, &[node.into(), now.into()]).await?;
        let by = format!("node {node}, started paused");
        c.execute(&PAUSE, &[now.into(), by.as_str().into()]).await?;
    }
    if presume {
        c.execute(&PRESUME_OTHERS_LAPSED, &[node.into()]).await?;
    }
    Ok(())
}

/// Whether a `FireDue` of `node` makes nothing.
pub(crate) async fn holds_fires<C: Conn>(c: &mut C, node: &str) -> Result<bool> {
    let (n,): (i64,) = query_opt(c, &HOLDS_FIRES, &[node.into()])
        .await?
        .unwrap_or((0,));
    Ok(n > 0)
}

/// Whether the scheduler is paused (a trigger then runs nothing).
pub(crate) async fn is_paused<C: Conn>(c: &mut C) -> Result<bool> {
    let (n,): (i64,) = query_opt(c, &PAUSED, &[]).await?.unwrap_or((0,));
    Ok(n > 0)
}

pub(crate) async fn scheduler_state<C: Conn>(c: &mut C) -> Result<SchedulerState> {
    Ok(query_opt(c, &STATE, &[]).await?.unwrap_or_default())
}
