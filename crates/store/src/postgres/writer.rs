//! The writer of one node: one connection, driven by a one-thread runtime
//! of its own on the thread that calls `apply` (the pipeline's writer), so
//! that a statement's round trip wakes that thread alone; it reconnects
//! when the connection is gone. Every batch is stamped with a marker in the
//! node's row, so that a batch whose commit was not acknowledged is looked
//! up on retry and, if it did commit, answered from what it wrote instead
//! of being applied twice.

use std::collections::{HashMap, HashSet};

use joblog_core::{JobState, Timestamp};
use tokio_postgres::{Client, Statement};

use super::sql::jobs_from_rows;
use super::Target;
use crate::db::Decode;
use crate::error::pg_message;
use crate::reads::{SELECT_JOB, TOKEN_BY_HASH};
use crate::rows::JOB_COLUMNS;
use crate::{Outcome, Result, StoreError, StoreWriter, WriteOp};
use joblog_core::notify::Rule;
use joblog_core::schedule::Schedule;

pub(crate) mod batch;
mod pipeline;
#[cfg(test)]
mod tests;

/// The writer of one node. Its connection is driven by a current-thread
/// runtime of its own, inside `apply`: between batches nothing reads it
/// (a connection lost meanwhile fails the next batch, which is retried
/// on a new one). Driven by a runtime thread of its own instead, every
/// round trip woke two threads in turn, and the commits of
/// `bench dispatch` spent most of their CPU switching between them.
pub(super) struct PgWriter {
    /// Always `Some` until dropped.
    rt: Option<tokio::runtime::Runtime>,
    target: Target,
    node: String,
    /// Names this writer's batches: `<pid>-<start micros>:<n>`.
    instance: String,
    batch_no: u64,
    conn: Option<WriterConn>,
    /// The last attempt failed in a way that may have committed it anyway.
    uncertain: Option<Attempt>,
    /// A batch committed since [`StoreWriter::take_queued_deliveries`]
    /// was last asked queued a notification delivery.
    queued_deliveries: bool,
    /// The last attempt made (for tests that lose its acknowledgement).
    #[cfg(test)]
    last: Option<Attempt>,
}

struct WriterConn {
    client: Client,
    /// The batch under way has sent its `COMMIT`: a failure now may
    /// have committed it.
    committing: bool,
    statements: HashMap<&'static str, Statement>,
    /// Log partitions known to exist (partition numbers).
    partitions: Option<HashSet<i64>>,
}

#[derive(Clone)]
struct Attempt {
    marker: String,
    now: i64,
    ops: usize,
}

impl PgWriter {
    pub(super) fn new(target: Target, node: String) -> Result<Self> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::Database(format!("starting the writer runtime: {e}")))?;
        let instance = format!("{}-{}", std::process::id(), Timestamp::now().micros());
        let mut w = PgWriter {
            rt: Some(rt),
            target,
            node,
            instance,
            batch_no: 0,
            conn: None,
            uncertain: None,
            queued_deliveries: false,
            #[cfg(test)]
            last: None,
        };
        w.connect()?;
        Ok(w)
    }

    fn connect(&mut self) -> Result<&mut WriterConn> {
        if self.conn.as_ref().is_some_and(|c| c.client.is_closed()) {
            self.conn = None;
        }
        if self.conn.is_none() {
            let target = self.target.clone();
            let rt = self
                .rt
                .as_ref()
                .ok_or_else(|| StoreError::Database("writer runtime gone".into()))?;
            let task = async move {
                let (client, conn) = target.connect().await?;
                tokio::spawn(async move {
                    if let Err(e) = super::notices::drive(conn).await {
                        tracing::warn!(error = %pg_message(&e), "writer connection closed");
                    }
                });
                // The durability promise (docs/durability.md) does not depend on the
                // server's default.
                client.batch_execute("SET synchronous_commit TO on").await?;
                Ok::<_, tokio_postgres::Error>(client)
            };
            let client = run(rt, task)?.map_err(|e| {
                StoreError::Unavailable(format!(
                    "cannot connect to {}: {}",
                    self.target.describe(),
                    pg_message(&e)
                ))
            })?;
            self.conn = Some(WriterConn {
                client,
                committing: false,
                statements: HashMap::new(),
                partitions: None,
            });
        }
        self.conn
            .as_mut()
            .ok_or_else(|| StoreError::Unavailable("no connection".into()))
    }

    /// Runs `f` on the connection (made if needed), on the writer's runtime.
    fn with_conn<'a, F, Fut, T>(&'a mut self, f: F) -> Result<T>
    where
        F: FnOnce(&'a mut WriterConn) -> Fut,
        Fut: std::future::Future<Output = Result<T>> + Send + 'a,
        T: Send,
    {
        self.connect()?;
        let (Some(rt), Some(conn)) = (self.rt.as_ref(), self.conn.as_mut()) else {
            return Err(StoreError::Unavailable("no connection".into()));
        };
        run(rt, f(conn))?
    }
}

impl Drop for PgWriter {
    fn drop(&mut self) {
        self.conn = None;
        // Dropping a runtime blocks, which is refused inside async code
        // (tests drop writers there).
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Runs `task` on the writer's runtime, on this thread; from inside
/// another runtime (tests drive writers from async code), where blocking
/// on one is refused, on a thread of its own.
fn run<F>(rt: &tokio::runtime::Runtime, task: F) -> Result<F::Output>
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    if tokio::runtime::Handle::try_current().is_err() {
        return Ok(rt.block_on(task));
    }
    std::thread::scope(|s| {
        s.spawn(|| rt.block_on(task))
            .join()
            .map_err(|_| StoreError::Database("the writer's thread panicked".into()))
    })
}

impl StoreWriter for PgWriter {
    fn apply(&mut self, ops: &[WriteOp]) -> Result<Vec<Outcome>> {
        let node = self.node.clone();
        if let Some(attempt) = self.uncertain.clone() {
            if attempt.ops == ops.len() {
                let committed = self.with_conn(|c| was_committed(c, &node, &attempt))?;
                self.uncertain = None;
                if committed {
                    tracing::warn!(
                        batch = %attempt.marker,
                        "the batch whose commit was not acknowledged was committed; not applying it again"
                    );
                    // What it queued is not known any more: it may have.
                    self.queued_deliveries = true;
                    return self.with_conn(|c| rederive(c, &node, ops, &attempt));
                }
            } else {
                self.uncertain = None;
            }
        }
        self.batch_no += 1;
        let attempt = Attempt {
            marker: format!("{}:{}", self.instance, self.batch_no),
            now: Timestamp::now().micros(),
            ops: ops.len(),
        };
        #[cfg(test)]
        {
            self.last = Some(attempt.clone());
        }
        if let Some(c) = self.conn.as_mut() {
            c.committing = false;
        }
        let result = self.with_conn(|c| batch::apply_batch(c, &node, ops, &attempt));
        // Failing before its COMMIT was sent (or before a connection was
        // made), the attempt certainly applied nothing.
        let sent_commit = self.conn.as_ref().is_some_and(|c| c.committing);
        match result {
            Err(e) => {
                if e.is_transient() && sent_commit {
                    self.uncertain = Some(attempt);
                }
                Err(e)
            }
            Ok((outcomes, queued)) => {
                self.queued_deliveries |= queued;
                Ok(outcomes)
            }
        }
    }

    fn may_have_committed(&self) -> bool {
        self.uncertain.is_some()
    }

    fn take_queued_deliveries(&mut self) -> Option<bool> {
        Some(std::mem::take(&mut self.queued_deliveries))
    }
}

async fn was_committed(conn: &mut WriterConn, node: &str, attempt: &Attempt) -> Result<bool> {
    let row = conn
        .client
        .query_opt("SELECT last_batch FROM nodes WHERE name = $1", &[&node])
        .await?;
    let last: Option<String> = match row {
        Some(r) => r.try_get(0)?,
        None => None,
    };
    Ok(last.as_deref() == Some(attempt.marker.as_str()))
}

/// The outcomes of a batch that was committed by an attempt whose reply
/// was lost, read back from what it wrote.
async fn rederive(
    conn: &mut WriterConn,
    node: &str,
    ops: &[WriteOp],
    attempt: &Attempt,
) -> Result<Vec<Outcome>> {
    let cols = JOB_COLUMNS;
    // What InsertJob made (a schedule's run-now included: no fire time),
    // apart from what FireDue made (fire times) and from retries (a
    // time to wait for, set by Finish).
    let inserted = jobs_from_rows(
        &conn
            .client
            .query(
                &format!(
                    "SELECT {cols} FROM jobs WHERE created_by = $1 AND created_at = $2 \
                     AND run_after IS NULL AND fire_time IS NULL ORDER BY id"
                ),
                &[&node, &attempt.now],
            )
            .await?,
    )?;
    let mut fired = Some(jobs_from_rows(
        &conn
            .client
            .query(
                &format!(
                    "SELECT {cols} FROM jobs WHERE created_by = $1 AND created_at = $2 \
                     AND run_after IS NULL AND fire_time IS NOT NULL ORDER BY id"
                ),
                &[&node, &attempt.now],
            )
            .await?,
    )?);
    let claimed = jobs_from_rows(
        &conn
            .client
            .query(
                &format!("SELECT {cols} FROM jobs WHERE node = $1 AND started_at = $2 ORDER BY id"),
                &[&node, &attempt.now],
            )
            .await?,
    )?;
    let (mut inserted, mut claimed) = (inserted.into_iter(), claimed.into_iter());
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        out.push(match op {
            WriteOp::InsertJob { .. } => match inserted.next() {
                Some(job) => Outcome::Job(job),
                None => {
                    return Err(StoreError::Database(
                        "a committed batch's new job was not found".into(),
                    ))
                }
            },
            WriteOp::ClaimNext { .. } => Outcome::Claimed(claimed.next()),
            // Every fire of the batch, told to its first FireDue (a node
            // has one scheduler: batches hold one at most).
            WriteOp::FireDue { .. } => Outcome::Fired(crate::Fired {
                jobs: fired.take().unwrap_or_default(),
                ..crate::Fired::default()
            }),
            WriteOp::SaveSchedule { schedule, .. } => {
                let rows = conn
                    .client
                    .query(
                        "SELECT id FROM schedules WHERE name = $1",
                        &[&schedule.name],
                    )
                    .await?;
                match rows.first() {
                    Some(row) => {
                        let id: i64 = row.try_get(0)?;
                        let rows = conn
                            .client
                            .query(crate::schedules::reads::GET.postgres, &[&id])
                            .await?;
                        let saved = rows.iter().map(Schedule::decode).next().transpose()?;
                        match saved {
                            Some(s) => Outcome::Schedule(crate::ScheduleSaved::Saved(Box::new(s))),
                            None => Outcome::Schedule(crate::ScheduleSaved::NotFound),
                        }
                    }
                    None => Outcome::Schedule(crate::ScheduleSaved::NotFound),
                }
            }
            // The batch was committed: the schedule is gone, unless the
            // delete was refused for the schedules that run after it.
            WriteOp::DeleteSchedule { id } => {
                let rows = conn
                    .client
                    .query(crate::schedules::chain::FOLLOWED_BY.postgres, &[id])
                    .await?;
                let followers = rows
                    .iter()
                    .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
                    .collect::<Result<Vec<(i64, String)>>>()?;
                Outcome::ScheduleDeleted(if followers.is_empty() {
                    crate::ScheduleDeleted::Deleted
                } else {
                    crate::ScheduleDeleted::Followed(followers)
                })
            }
            WriteOp::Finish { job, .. } | WriteOp::CancelQueued { job } => {
                let rows = conn.client.query(SELECT_JOB.postgres, &[job]).await?;
                let job = jobs_from_rows(&rows)?.pop();
                match op {
                    WriteOp::Finish { .. } => Outcome::MaybeJob(job),
                    _ => Outcome::MaybeJob(job.filter(|j| j.state == JobState::Cancelled)),
                }
            }
            // Counts of a committed attempt are not known any more; a
            // full chunk makes retention look again rather than stop.
            WriteOp::DeleteLogChunk { max, .. } => Outcome::Count(u64::from(*max)),
            WriteOp::SealSlice(slice) => {
                let last = slice.key.last_seq as i64;
                let row = conn
                    .client
                    .query_one(super::sealed::SEGMENT_EXISTS, &[&slice.job, &last])
                    .await?;
                Outcome::Count(row.try_get::<_, i64>(0)? as u64)
            }
            WriteOp::MarkSealed { job } => {
                let row = conn
                    .client
                    .query_one(super::sealed::IS_SEALED, &[job])
                    .await?;
                Outcome::Count(row.try_get::<_, i64>(0)? as u64)
            }
            WriteOp::DropLogPartitions { .. } => Outcome::Groomed {
                jobs: Vec::new(),
                records: 0,
            },
            // The token is ours if a row holds its hash (hashes are unique).
            WriteOp::CreateToken(t) => {
                let rows = conn
                    .client
                    .query(TOKEN_BY_HASH.postgres, &[&&t.hash[..]])
                    .await?;
                Outcome::Count(u64::from(!rows.is_empty()))
            }
            // The batch was committed, so the name is gone either way.
            WriteOp::RevokeToken { .. } => Outcome::Count(1),
            WriteOp::Account(op) => match op {
                // Ours if the row holds our creation time.
                crate::AccountOp::CreateUser(u) => {
                    let row = conn
                        .client
                        .query_one(
                            "SELECT count(*) FROM users WHERE name = $1 AND created_at = $2",
                            &[&u.name, &u.created_at.micros()],
                        )
                        .await?;
                    Outcome::Count(row.try_get::<_, i64>(0)? as u64)
                }
                // Committed: the change was made, or its rows are gone
                // either way.
                crate::AccountOp::UpdateUser { .. }
                | crate::AccountOp::DeleteUser { .. }
                | crate::AccountOp::OpenSession(_)
                | crate::AccountOp::EndSession { .. }
                | crate::AccountOp::TouchSession { .. } => Outcome::Count(1),
                // Ours if the name is the subject's now.
                crate::AccountOp::SsoUser(u) => {
                    let row = conn
                        .client
                        .query_one(
                            "SELECT count(*) FROM users WHERE name = $1 AND sso_subject = $2",
                            &[&u.name, &u.subject],
                        )
                        .await?;
                    Outcome::Count(row.try_get::<_, i64>(0)? as u64)
                }
                crate::AccountOp::BeginSignIn(p) => {
                    let row = conn
                        .client
                        .query_one(
                            "SELECT count(*) FROM sign_ins WHERE state_hash = $1",
                            &[&p.state_hash.as_slice()],
                        )
                        .await?;
                    Outcome::Count(row.try_get::<_, i64>(0)? as u64)
                }
                // Gone either way, but whether this op took it or another
                // did cannot be told: not ours, so a sign-in is never
                // finished twice (the person signs in again).
                crate::AccountOp::TakeSignIn { .. } => Outcome::Count(0),
            },
            // Committed: it was asked if the node is known.
            WriteOp::SetDrain { node, .. } => {
                let row = conn
                    .client
                    .query_one("SELECT count(*) FROM nodes WHERE name = $1", &[node])
                    .await?;
                Outcome::Count(row.try_get::<_, i64>(0)? as u64)
            }
            WriteOp::Append { .. }
            | WriteOp::Audit(_)
            | WriteOp::RequestCancel { .. }
            | WriteOp::TouchToken { .. }
            | WriteOp::RegisterNode { .. }
            | WriteOp::SetPaused { .. }
            | WriteOp::NodeStopped { .. } => Outcome::Done,
            // Which jobs a committed attempt ended is not known any more;
            // they are ended all the same, with their records.
            WriteOp::Interrupt { .. } | WriteOp::Heartbeat { .. } => {
                Outcome::Interrupted(Vec::new())
            }
            WriteOp::DeleteJob { .. } => Outcome::Count(0),
            // Committed: retention looks again at its next round.
            WriteOp::DeleteAudit { .. } => Outcome::Count(0),
            WriteOp::SaveRule { rule, .. } => {
                let rows = conn
                    .client
                    .query(
                        "SELECT id FROM notification_rules WHERE name = $1",
                        &[&rule.name],
                    )
                    .await?;
                let mut saved = None;
                if let Some(row) = rows.first() {
                    let id: i64 = row.try_get(0)?;
                    let rows = conn
                        .client
                        .query(crate::notifications::GET_RULE.postgres, &[&id])
                        .await?;
                    saved = rows.iter().map(Rule::decode).next().transpose()?;
                }
                Outcome::Rule(match saved {
                    Some(r) => crate::RuleSaved::Saved(Box::new(r)),
                    None => crate::RuleSaved::NotFound,
                })
            }
            // The batch was committed, so the rule is gone either way.
            WriteOp::DeleteRule { .. } => Outcome::Count(1),
            // Which deliveries a committed claim took is not known any
            // more: they are due again when their lease runs out.
            WriteOp::ClaimDeliveries { .. } => Outcome::Deliveries(Vec::new()),
            WriteOp::DeliveryTried { .. } => Outcome::Count(1),
        });
    }
    Ok(out)
}
