//! A run of claims, ends and appends sent at once: the first statement of
//! each (and the batch's `BEGIN`, and the enabled notification rules when
//! an end needs them) goes to the server in one write, and each op goes on
//! from its answer in order. A batch of `bench dispatch` is mostly such a
//! run, and one round trip a statement was where PostgreSQL's time went
//! (docs/benchmarks.md).
//!
//! Why the order holds: the server runs pipelined statements one after
//! another, in the order sent, in the batch's one transaction, so each
//! sees what the ones before it wrote, as when sent one at a time. Only
//! an op's *further* statements (a claim whose candidate has a
//! concurrency key or was taken, an end's result, retry, triggered runs
//! and notifications) now run after the later ops' first ones. So two
//! claims that found the same keyed candidate settle it in turn, the
//! second finding it taken or its key full and looking again; a claim
//! that looks again may take a job a later op of the batch queued (which
//! claim takes it differs, not that one does); and a claim does not see
//! a run its batch's end triggered (the next round takes it). An end is
//! never in the batch of its own job's claim: the engine ends only jobs
//! whose claim was committed.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;

use futures_util::future::{maybe_done, MaybeDone};
use joblog_core::{Job, JobId, LogSummary};
use tokio_postgres::{Client, Row, Statement};

use crate::db::{Decode, Param};
use crate::notifications::{enabled_from, ENABLED_RULES};
use crate::postgres::conn::{refs, PgTx};
use crate::postgres::jobs::{Claiming, CLAIM_KEYLESS};
use crate::schedules::writes::{insert_job_params, INSERT_JOB};
use crate::writes::{note_summary, Finishing, FINISH};
use crate::{Outcome, Result, StoreError, WriteOp};

/// Whether `op` may be part of a run: its first statement needs nothing
/// an earlier op of the batch answered.
pub(super) fn pipelined(op: &WriteOp) -> bool {
    matches!(
        op,
        WriteOp::InsertJob { .. }
            | WriteOp::ClaimNext { .. }
            | WriteOp::Finish { .. }
            | WriteOp::Append { .. }
    )
}

/// One op of a run, ready to send its first statement.
enum Step<'o> {
    Insert([Param; 13], Statement),
    Claim(Claiming<'o>, Statement),
    Finish(Finishing<'o>, [Param; 9], Statement),
    Append(JobId, LogSummary),
}

/// What was answered to each statement sent at once.
enum Answer {
    Begun(std::result::Result<(), tokio_postgres::Error>),
    Rules(std::result::Result<Vec<Row>, tokio_postgres::Error>),
    Row(Result<Option<Row>>),
    Nothing,
}

type Sent<'a> = Pin<Box<dyn Future<Output = Answer> + Send + 'a>>;

/// Applies `ops` (each [`pipelined`]), sending `begin` first if given.
/// → one outcome per op.
pub(super) async fn apply_run<B>(
    w: &mut PgTx<'_>,
    begin: Option<B>,
    ops: &[WriteOp],
    summaries: &mut Vec<(JobId, LogSummary)>,
    now: i64,
) -> Result<Vec<Outcome>>
where
    B: Future<Output = std::result::Result<(), tokio_postgres::Error>> + Send,
{
    let steps = steps(w, ops, now).await?;
    let rules = match w.rules.is_none() && steps.iter().any(|s| matches!(s, Step::Finish(..))) {
        true => Some(w.prepared(ENABLED_RULES.postgres).await?),
        false => None,
    };
    let client = w.tx;
    let mut sent: Vec<Sent<'_>> = Vec::with_capacity(steps.len() + 2);
    if let Some(begin) = begin {
        sent.push(Box::pin(async move { Answer::Begun(begin.await) }));
    }
    if let Some(st) = &rules {
        sent.push(Box::pin(async move {
            Answer::Rules(client.query(st, &[]).await)
        }));
    }
    for step in &steps {
        sent.push(match step {
            Step::Claim(claiming, st) => {
                Box::pin(async move { Answer::Row(claiming.first(client, st).await) })
            }
            Step::Insert(params, st) => row_of(client, st, params),
            Step::Finish(_, params, st) => row_of(client, st, params),
            Step::Append(..) => Box::pin(async { Answer::Nothing }),
        });
    }
    // The first error in the order sent is the cause; the statements
    // after it fail only because the transaction was aborted.
    let mut rows = Vec::with_capacity(steps.len());
    for answer in in_order(sent).await? {
        match answer {
            Answer::Begun(r) => r?,
            Answer::Rules(r) => {
                let rows = r?
                    .iter()
                    .map(<(i64, String)>::decode)
                    .collect::<Result<Vec<_>>>()?;
                *w.rules = Some(enabled_from(rows)?);
            }
            Answer::Row(r) => rows.push(Some(r?)),
            Answer::Nothing => rows.push(None),
        }
    }
    let mut outcomes = Vec::with_capacity(ops.len());
    for (step, row) in steps.iter().zip(rows) {
        outcomes.push(match (step, row) {
            (Step::Insert(..), Some(row)) => match row {
                Some(row) => Outcome::Job(Job::decode(&row)?),
                None => {
                    return Err(StoreError::Database(
                        "a job for a fire that already has one".into(),
                    ))
                }
            },
            (Step::Claim(claiming, _), Some(row)) => Outcome::Claimed(claiming.then(w, row).await?),
            (Step::Finish(finishing, ..), Some(row)) => {
                let done = row.as_ref().map(Job::decode).transpose()?;
                finishing.ended(w, done, summaries, now).await?
            }
            (Step::Append(job, summary), None) => {
                note_summary(summaries, *job, *summary);
                Outcome::Done
            }
            _ => {
                return Err(StoreError::Database(
                    "a pipelined statement's answer did not match its op".into(),
                ))
            }
        });
    }
    Ok(outcomes)
}

/// The row `st` with `params` answers, if any.
fn row_of<'a>(client: &'a Client, st: &'a Statement, params: &'a [Param]) -> Sent<'a> {
    Box::pin(async move {
        Answer::Row(
            client
                .query_opt(st, &refs(params))
                .await
                .map_err(Into::into),
        )
    })
}

/// Each op's step, its statements prepared (once per connection).
async fn steps<'o>(w: &mut PgTx<'_>, ops: &'o [WriteOp], now: i64) -> Result<Vec<Step<'o>>> {
    let mut steps = Vec::with_capacity(ops.len());
    for op in ops {
        steps.push(match op {
            WriteOp::InsertJob { name, spec } => Step::Insert(
                insert_job_params(Some(w.node), name.as_deref(), spec, None, now)?,
                w.prepared(INSERT_JOB.postgres).await?,
            ),
            WriteOp::ClaimNext { node, labels, at } => Step::Claim(
                Claiming::new(node, labels, *at, now),
                w.prepared(CLAIM_KEYLESS).await?,
            ),
            WriteOp::Finish { .. } => {
                let finishing = Finishing::of(op)?;
                let params = finishing.params(now);
                Step::Finish(finishing, params, w.prepared(FINISH.postgres).await?)
            }
            WriteOp::Append { job, summary, .. } => Step::Append(*job, *summary),
            other => {
                return Err(StoreError::Database(format!(
                    "a {} op sent in a pipelined run",
                    other.name()
                )))
            }
        });
    }
    Ok(steps)
}

/// Awaits every future of `sent`, each polled first in the order given: a
/// statement's future sends it when first polled, so the server receives
/// them in that order (`join_all` promises no order of first polls).
async fn in_order<T>(sent: Vec<Pin<Box<dyn Future<Output = T> + Send + '_>>>) -> Result<Vec<T>> {
    let mut pending: Vec<MaybeDone<_>> = sent.into_iter().map(maybe_done).collect();
    poll_fn(|cx| {
        let mut all = true;
        for f in &mut pending {
            all &= Pin::new(f).poll(cx).is_ready();
        }
        match all {
            true => Poll::Ready(()),
            false => Poll::Pending,
        }
    })
    .await;
    pending
        .iter_mut()
        .map(|f| Pin::new(f).take_output())
        .collect::<Option<Vec<T>>>()
        .ok_or_else(|| StoreError::Database("a pipelined statement went unanswered".into()))
}
