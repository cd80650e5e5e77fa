//! A trigger's checks at save, in the writer's transaction: the schedule
//! it runs after exists, the chain makes no cycle and is at most
//! [`MAX_CHAIN`] schedules long; and the refusal to delete a schedule
//! that others run after. Each store serialises these (SQLite has one
//! writer; PostgreSQL's nodes take one advisory lock first,
//! [`ScheduleWrites::lock_chains`]), so two saves cannot each make half
//! of a cycle.

use joblog_core::schedule::{ScheduleId, MAX_CHAIN};

use super::writes::ScheduleWrites;
use crate::db::{query_opt, sql, Statement};
use crate::Result;

/// The schedule that schedule `$1` runs after (`NULL`: it runs on cron).
const AFTER_OF: Statement = sql!("SELECT after_id FROM schedules WHERE id = $1");
/// The schedules that run after schedule `$1`: one range of `schedules_after`.
pub(crate) const FOLLOWED_BY: Statement =
    sql!("SELECT id, name FROM schedules WHERE after_id = $1 ORDER BY id");

/// Why schedule `id` (`None`: a new one) may not run after schedule
/// `after`, for a client; `None` when it may.
pub(crate) async fn refusal<T: ScheduleWrites>(
    tx: &mut T,
    id: Option<ScheduleId>,
    after: ScheduleId,
) -> Result<Option<String>> {
    // Up the chain from the schedule it would run after, counting them.
    let mut above = 0;
    let mut at = after;
    loop {
        if Some(at) == id {
            return Ok(Some(if at == after {
                "a schedule cannot run after itself".to_owned()
            } else {
                format!(
                    "schedule {after} already runs after this one, directly or through others: that would be a cycle"
                )
            }));
        }
        let Some((up,)) =
            query_opt::<T, (Option<ScheduleId>,)>(tx, &AFTER_OF, &[at.into()]).await?
        else {
            if at == after {
                return Ok(Some(format!("there is no schedule {after}")));
            }
            // Its schedule was deleted before deletes were refused: the
            // chain ends there.
            break;
        };
        above += 1;
        match up {
            Some(next) if above < MAX_CHAIN => at = next,
            Some(_) => return Ok(Some(too_long())),
            None => break,
        }
    }
    let below = match id {
        Some(id) => depth_below(tx, id).await?,
        None => 0,
    };
    Ok((above + 1 + below > MAX_CHAIN).then(too_long))
}

fn too_long() -> String {
    format!("a chain of schedules that run after one another is at most {MAX_CHAIN} long, the first included")
}

/// How many schedules deep the schedules that run after `id` (and after
/// them…) go; counted no further than [`MAX_CHAIN`].
async fn depth_below<T: ScheduleWrites>(tx: &mut T, id: ScheduleId) -> Result<u32> {
    let mut level = vec![id];
    let mut depth = 0;
    while depth < MAX_CHAIN {
        let mut next = Vec::new();
        for s in level {
            let rows: Vec<(ScheduleId, String)> = tx.query(&FOLLOWED_BY, &[s.into()]).await?;
            next.extend(rows.into_iter().map(|(id, _)| id));
        }
        if next.is_empty() {
            break;
        }
        depth += 1;
        level = next;
    }
    Ok(depth)
}
