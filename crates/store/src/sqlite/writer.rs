//! The embedded store's one writer: a batch of ops in one `IMMEDIATE`
//! transaction, each op by the shared statements (`crate::writes`,
//! `crate::schedules::writes`) or SQLite's own (appending rows, claims,
//! nodes, audit entries), the jobs' counters once per job per batch.

use joblog_core::{JobId, LogSummary, Timestamp};
use rusqlite::{params, Connection};

use super::{audit, conn, jobs, nodes};
use crate::notifications;
use crate::rows::{fields_text, streams_to_text};
use crate::schedules::writes as schedule_writes;
use crate::writes::{self, note_summary};
use crate::{Outcome, Result, StoreError, StoreWriter, WriteOp};

pub(super) struct SqliteWriter {
    pub(super) conn: Connection,
}

/// The writer goes last, at a clean stop: what the WAL holds is folded
/// into the database file and the WAL emptied, so `joblog.db` alone is
/// the whole store (a copy of it is a backup; a `-wal` left beside it is
/// empty). Failing that, the WAL stays as it was and is read at the next
/// open: nothing is lost.
impl Drop for SqliteWriter {
    fn drop(&mut self) {
        let checkpoint = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                r.get::<_, i64>(0)
            });
        match checkpoint {
            Ok(0) => {}
            Ok(_) => tracing::info!("the WAL could not be emptied at the stop (a reader held it); it is read at the next start"),
            Err(e) => tracing::warn!(error = %e, "checkpointing the WAL at the stop failed; it is read at the next start"),
        }
    }
}

impl StoreWriter for SqliteWriter {
    fn apply(&mut self, ops: &[WriteOp]) -> Result<Vec<Outcome>> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut outcomes = Vec::with_capacity(ops.len());
        // Counters are written once per job per batch, not once per Append.
        let mut summaries: Vec<(JobId, LogSummary)> = Vec::new();
        for op in ops {
            outcomes.push(apply_one(&tx, op, &mut summaries)?);
        }
        if !summaries.is_empty() {
            let mut stmt = tx.prepare_cached(
                "UPDATE jobs SET log_records = ?2, log_bytes = ?3, log_truncated = ?4, \
                 log_streams = ?5 WHERE id = ?1",
            )?;
            for (job, s) in &summaries {
                stmt.execute(params![
                    job,
                    s.records as i64,
                    s.bytes as i64,
                    s.truncated,
                    streams_to_text(&s.streams)
                ])?;
            }
        }
        tx.commit()?;
        Ok(outcomes)
    }
}

fn apply_one(
    tx: &rusqlite::Transaction,
    op: &WriteOp,
    summaries: &mut Vec<(JobId, LogSummary)>,
) -> Result<Outcome> {
    let now = Timestamp::now().micros();
    match op {
        WriteOp::InsertJob { name, spec } => {
            let job = conn::run(tx, async |c| {
                schedule_writes::insert_job(c, name.as_deref(), spec, None, now).await
            })?;
            Ok(Outcome::Job(job.ok_or_else(|| {
                StoreError::Database("a job for a fire that already has one".into())
            })?))
        }
        WriteOp::ClaimNext { node, labels, at } => {
            Ok(Outcome::Claimed(jobs::claim(tx, node, labels, *at, now)?))
        }
        WriteOp::FireDue { now: at, node } => conn::run(tx, async |c| {
            schedule_writes::fire_due(c, *at, node, now).await
        }),
        WriteOp::SaveSchedule {
            id,
            schedule,
            next_fire,
        } => conn::run(tx, async |c| {
            schedule_writes::save(c, *id, schedule, *next_fire, now).await
        }),
        WriteOp::DeleteSchedule { id } => {
            conn::run(tx, async |c| schedule_writes::delete(c, *id).await)
        }
        WriteOp::Append {
            job,
            records,
            summary,
        } => {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO log (job_id, seq, ts, stream, message, fields) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for r in records {
                stmt.execute(params![
                    job,
                    r.seq as i64,
                    r.ts.micros(),
                    r.stream.code(),
                    r.message,
                    fields_text(r)
                ])?;
            }
            note_summary(summaries, *job, *summary);
            Ok(Outcome::Done)
        }
        WriteOp::Finish { .. } => {
            conn::run(tx, async |c| writes::finish(c, op, summaries, now).await)
        }
        WriteOp::CancelQueued { job } => {
            conn::run(tx, async |c| writes::cancel_queued(c, *job, now).await)
        }
        WriteOp::Interrupt {
            node,
            include_queued,
        } => nodes::interrupt(tx, node.as_deref(), *include_queued, now, summaries),
        WriteOp::DeleteLogChunk { job, max } => {
            conn::run(tx, async |c| writes::delete_log_chunk(c, *job, *max).await)
        }
        WriteOp::SealSlice(slice) => conn::run(tx, async |c| writes::seal_slice(c, slice).await),
        WriteOp::MarkSealed { job } => {
            conn::run(tx, async |c| writes::mark_sealed(c, *job, now).await)
        }
        // One node, no partitions, nobody else to tell.
        WriteOp::DropLogPartitions { .. } => Ok(Outcome::Groomed {
            jobs: Vec::new(),
            records: 0,
        }),
        WriteOp::Heartbeat { node, .. } => nodes::heartbeat(tx, node, now),
        WriteOp::RegisterNode {
            node,
            version,
            secret_names,
            labels,
            paused,
        } => {
            nodes::register(tx, node, version, secret_names, labels, now)?;
            // The store's one node: any other in it came with a copy.
            conn::run(tx, async |c| {
                crate::controls::on_start(c, node, *paused, true, now).await
            })?;
            Ok(Outcome::Done)
        }
        WriteOp::SetDrain { node, drain } => conn::run(tx, async |c| {
            crate::controls::set_drain(c, node, *drain, now).await
        }),
        WriteOp::SetPaused { by } => conn::run(tx, async |c| {
            crate::controls::set_paused(c, by.as_deref(), now).await
        }),
        WriteOp::NodeStopped { node } => nodes::stopped(tx, node, now),
        WriteOp::RequestCancel { .. } => Ok(Outcome::Done),
        WriteOp::CreateToken(token) => {
            conn::run(tx, async |c| writes::create_token(c, token).await)
        }
        WriteOp::RevokeToken { name } => {
            conn::run(tx, async |c| writes::revoke_token(c, name).await)
        }
        WriteOp::TouchToken { name, at } => {
            conn::run(tx, async |c| writes::touch_token(c, name, *at).await)
        }
        WriteOp::Account(op) => conn::run(tx, async |c| crate::accounts::apply(c, op).await),
        WriteOp::Audit(entries) => audit::append(tx, entries),
        WriteOp::DeleteAudit { before, max } => {
            conn::run(tx, async |c| writes::delete_audit(c, *before, *max).await)
        }
        WriteOp::DeleteJob { job } => conn::run(tx, async |c| writes::delete_job(c, *job).await),
        WriteOp::SaveRule { id, rule } => {
            conn::run(tx, async |c| notifications::save(c, *id, rule, now).await)
        }
        WriteOp::DeleteRule { id } => conn::run(tx, async |c| notifications::delete(c, *id).await),
        WriteOp::ClaimDeliveries {
            node,
            at,
            lease,
            max,
        } => conn::run(tx, async |c| {
            notifications::claim(c, node, *at, *lease, *max).await
        }),
        WriteOp::DeliveryTried {
            id,
            outcome,
            retry_at,
            at,
        } => conn::run(tx, async |c| {
            notifications::tried(c, *id, outcome, *retry_at, *at).await
        }),
    }
}
