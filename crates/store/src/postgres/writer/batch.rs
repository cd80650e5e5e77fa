//! One batch in one transaction: each op's statement, then all records in
//! one binary COPY, the jobs' counters in one `UPDATE … FROM unnest`, the
//! audit entries in one `INSERT … FROM unnest` (under the audit lock, taken
//! last), the batch marker, and one NOTIFY of what was committed. Nothing
//! of a batch is applied unless all of it is.

use std::collections::{HashMap, HashSet};

use joblog_core::{JobId, LogSummary, Record, Timestamp};
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Statement};

use super::{pipeline, Attempt, WriterConn};
use crate::interrupt::{interruption, Cause};
use crate::notifications;
use crate::postgres::audit::{self, INSERT_AUDIT, LOCK_AUDIT};
use crate::postgres::conn::PgTx;
use crate::postgres::listener::{self, CHANNEL};
use crate::postgres::partitions::{create_missing, drop_partitions, load_partitions};
use crate::postgres::sql::{
    victim_from_row, COPY_LOG, FORGET_LAPSED, HEARTBEAT, INTERRUPT_IDS, MARK_BATCH,
    MARK_BATCH_AND_NOTIFY, NODE_STOPPED, REGISTER_NODE, SAVE_SUMMARIES, VICTIMS_ALL,
    VICTIMS_LAPSED, VICTIMS_OF_NODE,
};
use crate::rows::{fields_text, streams_to_text};
use crate::schedules::writes as schedule_writes;
use crate::writes::{self, note_summary};
use crate::{Committed, Outcome, Result, StoreError, WriteOp};

/// The statement for `sql`, prepared once per connection.
pub(crate) async fn prepared(
    statements: &mut HashMap<&'static str, Statement>,
    tx: &Client,
    sql: &'static str,
) -> Result<Statement> {
    if let Some(s) = statements.get(sql) {
        return Ok(s.clone());
    }
    let s = tx.prepare(sql).await?;
    statements.insert(sql, s.clone());
    Ok(s)
}

/// Applies `ops` in one transaction stamped with `attempt`'s marker. →
/// each op's outcome, and whether the batch queued a notification
/// delivery.
pub(super) async fn apply_batch(
    conn: &mut WriterConn,
    node: &str,
    ops: &[WriteOp],
    attempt: &Attempt,
) -> Result<(Vec<Outcome>, bool)> {
    if conn.partitions.is_none() {
        conn.partitions = Some(load_partitions(&conn.client).await?);
    }
    let applied = in_transaction(conn, node, ops, attempt).await;
    if applied.is_err() && !conn.committing {
        // The transaction is begun with the batch's first statements and
        // ended by hand (no `Transaction` guard to roll it back on drop).
        // On a lost connection this fails too, and the next batch opens
        // a new one.
        if let Err(e) = conn.client.batch_execute("ROLLBACK").await {
            tracing::debug!(error = %crate::error::pg_message(&e), "rolling back a failed batch");
        }
    }
    applied
}

async fn in_transaction(
    conn: &mut WriterConn,
    node: &str,
    ops: &[WriteOp],
    attempt: &Attempt,
) -> Result<(Vec<Outcome>, bool)> {
    let statements = &mut conn.statements;
    let tx = &conn.client;
    // Sent with the first run's statements, or alone before any other op.
    let mut begin = Some(tx.batch_execute("BEGIN"));
    let now = attempt.now;
    let mut outcomes = Vec::with_capacity(ops.len());
    let mut summaries: Vec<(JobId, LogSummary)> = Vec::new();
    let mut partitions_changed = false;
    // Interruption records, written with the batch's other records.
    let mut endings: Vec<(JobId, Vec<Record>)> = Vec::new();
    // Audit entries, inserted after every other write of the batch.
    let mut audited: Vec<&joblog_core::NewAudit> = Vec::new();
    let mut rules = None;
    let mut queued = false;
    let mut i = 0;
    while i < ops.len() {
        let op = &ops[i];
        if let WriteOp::SaveRule { .. } | WriteOp::DeleteRule { .. } = op {
            rules = None;
        }
        // The shared ops' view of this transaction (`crate::writes`).
        let mut w = PgTx {
            tx,
            statements: &mut *statements,
            node,
            rules: &mut rules,
            queued: &mut queued,
        };
        if pipeline::pipelined(op) {
            let end = ops[i..]
                .iter()
                .position(|op| !pipeline::pipelined(op))
                .map_or(ops.len(), |n| i + n);
            let run = &ops[i..end];
            outcomes
                .extend(pipeline::apply_run(&mut w, begin.take(), run, &mut summaries, now).await?);
            i = end;
            continue;
        }
        i += 1;
        if let Some(begin) = begin.take() {
            begin.await?;
        }
        let outcome = match op {
            WriteOp::InsertJob { .. }
            | WriteOp::ClaimNext { .. }
            | WriteOp::Append { .. }
            | WriteOp::Finish { .. } => {
                return Err(StoreError::Database(format!(
                    "a {} op applied outside a pipelined run",
                    op.name()
                )))
            }
            WriteOp::FireDue { now: at, node } => {
                schedule_writes::fire_due(&mut w, *at, node, now).await?
            }
            WriteOp::SaveSchedule {
                id,
                schedule,
                next_fire,
            } => schedule_writes::save(&mut w, *id, schedule, *next_fire, now).await?,
            WriteOp::DeleteSchedule { id } => schedule_writes::delete(&mut w, *id).await?,
            WriteOp::CancelQueued { job } => writes::cancel_queued(&mut w, *job, now).await?,
            WriteOp::Interrupt {
                node,
                include_queued,
            } => {
                let victims = match node {
                    Some(node) => {
                        let st = w.prepared(VICTIMS_OF_NODE).await?;
                        tx.query(&st, &[node]).await?
                    }
                    None => {
                        let st = w.prepared(VICTIMS_ALL).await?;
                        tx.query(&st, &[include_queued]).await?
                    }
                };
                let ending = End {
                    cause: Cause::Restarted,
                    now,
                };
                ending
                    .apply(&mut w, &victims, &mut summaries, &mut endings)
                    .await?
            }
            WriteOp::DeleteLogChunk { job, max } => {
                writes::delete_log_chunk(&mut w, *job, *max).await?
            }
            WriteOp::SealSlice(slice) => writes::seal_slice(&mut w, slice).await?,
            WriteOp::MarkSealed { job } => writes::mark_sealed(&mut w, *job, now).await?,
            WriteOp::DeleteJob { job } => writes::delete_job(&mut w, *job).await?,
            WriteOp::SaveRule { id, rule } => notifications::save(&mut w, *id, rule, now).await?,
            WriteOp::DeleteRule { id } => notifications::delete(&mut w, *id).await?,
            WriteOp::ClaimDeliveries {
                node,
                at,
                lease,
                max,
            } => notifications::claim(&mut w, node, *at, *lease, *max).await?,
            WriteOp::DeliveryTried {
                id,
                outcome,
                retry_at,
                at,
            } => notifications::tried(&mut w, *id, outcome, *retry_at, *at).await?,
            WriteOp::DropLogPartitions { candidates } => {
                partitions_changed = true;
                drop_partitions(tx, candidates).await?
            }
            WriteOp::Heartbeat { node, lapse } => {
                let st = w.prepared(HEARTBEAT).await?;
                tx.execute(&st, &[node]).await?;
                match lapse {
                    Some(lapse) => {
                        let secs = lapse.as_secs_f64();
                        let st = w.prepared(VICTIMS_LAPSED).await?;
                        let victims = tx.query(&st, &[node, &secs]).await?;
                        let ending = End {
                            cause: Cause::Lapsed {
                                by: node,
                                timeout: *lapse,
                            },
                            now,
                        };
                        let n = ending
                            .apply(&mut w, &victims, &mut summaries, &mut endings)
                            .await?;
                        let st = w.prepared(FORGET_LAPSED).await?;
                        tx.execute(&st, &[node]).await?;
                        n
                    }
                    None => Outcome::Interrupted(Vec::new()),
                }
            }
            WriteOp::RegisterNode {
                node,
                version,
                secret_names,
                labels,
                paused,
            } => {
                let st = w.prepared(REGISTER_NODE).await?;
                let names = crate::rows::secret_names_text(secret_names);
                w.tx.execute(&st, &[node, version, &names, &labels.canonical()])
                    .await?;
                // Other nodes share the database: only a paused start (a
                // restore) takes them for copies.
                crate::controls::on_start(&mut w, node, *paused, *paused, now).await?;
                Outcome::Done
            }
            WriteOp::SetDrain { node, drain } => {
                crate::controls::set_drain(&mut w, node, *drain, now).await?
            }
            WriteOp::SetPaused { by } => {
                crate::controls::set_paused(&mut w, by.as_deref(), now).await?
            }
            WriteOp::NodeStopped { node } => {
                let st = prepared(statements, tx, NODE_STOPPED).await?;
                tx.execute(&st, &[node]).await?;
                Outcome::Done
            }
            WriteOp::RequestCancel { .. } => Outcome::Done,
            WriteOp::CreateToken(t) => writes::create_token(&mut w, t).await?,
            WriteOp::DeleteAudit { before, max } => {
                writes::delete_audit(&mut w, *before, *max).await?
            }
            WriteOp::RevokeToken { name } => writes::revoke_token(&mut w, name).await?,
            WriteOp::TouchToken { name, at } => writes::touch_token(&mut w, name, *at).await?,
            WriteOp::Account(op) => crate::accounts::apply(&mut w, op).await?,
            WriteOp::Audit(entries) => {
                audited.extend(entries);
                Outcome::Done
            }
        };
        outcomes.push(outcome);
    }
    if let Some(begin) = begin.take() {
        begin.await?;
    }

    let known = conn.partitions.get_or_insert_with(HashSet::new);
    let appends = ops
        .iter()
        .filter_map(|op| match op {
            WriteOp::Append { job, records, .. } if !records.is_empty() => Some((*job, records)),
            _ => None,
        })
        .chain(endings.iter().map(|(job, records)| (*job, records)));
    let created = create_missing(tx, known, appends.clone().map(|(job, _)| job)).await?;
    if appends.clone().next().is_some() {
        copy_records(tx, appends).await.inspect_err(|e| {
            if let StoreError::Unavailable(_) = e {
                partitions_changed = true;
            }
        })?;
    }
    if !summaries.is_empty() {
        let mut ids = Vec::with_capacity(summaries.len());
        let mut records = Vec::with_capacity(summaries.len());
        let mut bytes = Vec::with_capacity(summaries.len());
        let mut truncated = Vec::with_capacity(summaries.len());
        let mut streams = Vec::with_capacity(summaries.len());
        for (job, s) in &summaries {
            ids.push(*job);
            records.push(s.records as i64);
            bytes.push(s.bytes as i64);
            truncated.push(s.truncated);
            streams.push(streams_to_text(&s.streams));
        }
        let st = prepared(statements, tx, SAVE_SUMMARIES).await?;
        tx.execute(&st, &[&ids, &records, &bytes, &truncated, &streams])
            .await?;
    }
    if !audited.is_empty() {
        let lock = prepared(statements, tx, LOCK_AUDIT).await?;
        let insert = prepared(statements, tx, INSERT_AUDIT).await?;
        audit::append(tx, &lock, &insert, &audited).await?;
    }
    let mut committed = Committed::default();
    for (op, outcome) in ops.iter().zip(&outcomes) {
        committed.add(op, outcome);
    }
    committed.deliveries = queued;
    // The marker and the COMMIT travel together: one round trip, not
    // two. Should the marker fail, the server rolls the transaction back
    // and answers the COMMIT with a ROLLBACK, and the marker's error is
    // the batch's.
    let payload = match committed.is_empty() {
        true => None,
        false => Some(listener::notice(node, committed)?),
    };
    let (st, params): (_, Vec<&(dyn ToSql + Sync)>) = match &payload {
        None => (
            prepared(statements, tx, MARK_BATCH).await?,
            vec![&node, &attempt.marker],
        ),
        Some(payload) => (
            prepared(statements, tx, MARK_BATCH_AND_NOTIFY).await?,
            vec![&node, &attempt.marker, &CHANNEL, payload],
        ),
    };
    conn.committing = true;
    let (marked, committed) =
        futures_util::join!(tx.execute(&st, &params), tx.batch_execute("COMMIT"));
    let committed = marked.map(drop).and(committed);
    if partitions_changed {
        conn.partitions = None;
    }
    committed?;
    if let Some(known) = conn.partitions.as_mut() {
        known.extend(created);
    }
    Ok((outcomes, queued))
}

/// Ends the jobs a `victim_columns!` query locked, each with its
/// interruption record (written by the batch's COPY) and counters (saved
/// with the batch's others; counters this batch has yet to save win over
/// the stored ones).
struct End<'a> {
    cause: Cause<'a>,
    now: i64,
}

impl End<'_> {
    async fn apply(
        &self,
        w: &mut PgTx<'_>,
        victims: &[tokio_postgres::Row],
        summaries: &mut Vec<(JobId, LogSummary)>,
        endings: &mut Vec<(JobId, Vec<Record>)>,
    ) -> Result<Outcome> {
        let mut ids = Vec::with_capacity(victims.len());
        let mut ended = Vec::with_capacity(victims.len());
        let mut jobs = Vec::with_capacity(victims.len());
        for row in victims {
            let (mut job, node, heartbeat) = victim_from_row(row)?;
            if let Some((_, pending)) = summaries.iter().find(|(j, _)| *j == job.id) {
                job.log = *pending;
            }
            let (record, summary) = interruption(
                &job,
                node.as_deref(),
                heartbeat,
                self.cause,
                Timestamp(self.now),
            );
            note_summary(summaries, job.id, summary);
            endings.push((job.id, vec![record]));
            ids.push(job.id);
            ended.push((job.id, node));
            jobs.push(job);
        }
        if !ids.is_empty() {
            let st = w.prepared(INTERRUPT_IDS).await?;
            w.tx.execute(&st, &[&ids, &self.now]).await?;
        }
        for job in &jobs {
            notifications::on_interrupted(w, job, self.now).await?;
        }
        Ok(Outcome::Interrupted(ended))
    }
}

/// All records of the batch in one binary COPY: the fastest way into
/// PostgreSQL measured (docs/benchmarks.md).
pub(crate) async fn copy_records<'a>(
    tx: &Client,
    appends: impl Iterator<Item = (JobId, &'a Vec<Record>)>,
) -> Result<()> {
    let sink = tx.copy_in(COPY_LOG).await?;
    let writer = BinaryCopyInWriter::new(
        sink,
        &[
            Type::INT8,
            Type::INT8,
            Type::INT8,
            Type::INT2,
            Type::BYTEA,
            Type::TEXT,
        ],
    );
    futures_util::pin_mut!(writer);
    for (job, records) in appends {
        for r in records {
            let seq = r.seq as i64;
            let ts = r.ts.micros();
            let stream = r.stream.code() as i16;
            let message = r.message.as_bytes();
            let fields = fields_text(r);
            writer
                .as_mut()
                .write(&[&job, &seq, &ts, &stream, &message, &fields])
                .await
                .map_err(copy_error)?;
        }
    }
    writer.as_mut().finish().await.map_err(copy_error)?;
    Ok(())
}

/// A record whose job's partition went missing (dropped by another node)
/// is retried after the partition is recreated, not rejected.
fn copy_error(e: tokio_postgres::Error) -> StoreError {
    if e.code() == Some(&tokio_postgres::error::SqlState::CHECK_VIOLATION) {
        StoreError::Unavailable(format!("log partition missing, recreating it: {e}"))
    } else {
        e.into()
    }
}
