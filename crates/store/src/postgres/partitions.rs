//! Log partitions: the log table is partitioned by job-id range (`log_p<N>`
//! holds jobs `N*PARTITION_JOBS ..`, and `segments_p<N>` their sealed
//! segments), created by the writer as jobs reach a
//! range and dropped whole by retention. A partition is only dropped once
//! no new job can fall into it.

use std::collections::HashSet;

use joblog_core::JobId;
use tokio_postgres::Client;

use crate::{Outcome, Result};

/// Job ids per log partition. Retention drops a partition once every job in
/// its range is to be deleted; a range of 10,000 jobs is a few days of a
/// busy node, and a few hundred partitions cover years.
pub const PARTITION_JOBS: i64 = 10_000;

/// Advisory lock key (arbitrary, fixed): partition creation is serialised
/// across nodes.
const PARTITION_LOCK: i64 = 0x6a6f_626c_6f67_0002;

/// Creates log partition `p` unless it exists; serialised across nodes.
pub(crate) async fn create_partition(tx: &Client, p: i64) -> Result<()> {
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&PARTITION_LOCK])
        .await?;
    let (lo, hi) = (p * PARTITION_JOBS, (p + 1) * PARTITION_JOBS);
    // Segments before the log, always: a log read locks `segments` and
    // then `log` (`sealed.rs`), and this locks both parents whole; in the
    // other order the two would deadlock.
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS segments_p{p} PARTITION OF segments FOR VALUES FROM ({lo}) TO ({hi});
         CREATE TABLE IF NOT EXISTS log_p{p} PARTITION OF log FOR VALUES FROM ({lo}) TO ({hi})"
    ))
    .await?;
    Ok(())
}

/// Creates the partitions that records of `jobs` need and `known` does not
/// hold, and returns them; the caller adds them to `known` only once the
/// transaction commits, since a rolled-back creation never happened.
pub(super) async fn create_missing(
    tx: &Client,
    known: &HashSet<i64>,
    jobs: impl Iterator<Item = JobId>,
) -> Result<Vec<i64>> {
    let mut needed: Vec<i64> = jobs
        .map(|job| job.div_euclid(PARTITION_JOBS))
        .filter(|p| !known.contains(p))
        .collect();
    needed.sort_unstable();
    needed.dedup();
    for &p in &needed {
        create_partition(tx, p).await?;
    }
    Ok(needed)
}

/// The partitions that exist now (partition numbers).
pub(super) async fn load_partitions(client: &Client) -> Result<HashSet<i64>> {
    let rows = client
        .query(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
             WHERE i.inhparent = 'log'::regclass",
            &[],
        )
        .await?;
    let mut out = HashSet::new();
    for r in rows {
        let name: String = r.try_get(0)?;
        if let Some(n) = name.strip_prefix("log_p").and_then(|n| n.parse().ok()) {
            out.insert(n);
        }
    }
    Ok(out)
}

/// Drops every log partition that holds only jobs retention deletes, with
/// those jobs. A partition is only dropped once the job ids have moved at
/// least one whole partition past it, so no job can still arrive in it.
pub(super) async fn drop_partitions(tx: &Client, candidates: &[JobId]) -> Result<Outcome> {
    let mut jobs = Vec::new();
    let mut records = 0u64;
    if candidates.is_empty() {
        return Ok(Outcome::Groomed { jobs, records });
    }
    let last_id: i64 = tx
        .query_one(
            "SELECT COALESCE(pg_sequence_last_value(pg_get_serial_sequence('jobs', 'id')::regclass), 0)",
            &[],
        )
        .await?
        .try_get(0)?;
    let mut partitions: Vec<i64> = load_partitions(tx).await?.into_iter().collect();
    partitions.sort_unstable();
    let candidates: Vec<i64> = candidates.to_vec();
    for p in partitions {
        let (lo, hi) = (p * PARTITION_JOBS, (p + 1) * PARTITION_JOBS);
        if hi + PARTITION_JOBS > last_id + 1 {
            continue;
        }
        let row = tx
            .query_one(
                "SELECT count(*) FILTER (WHERE NOT (id = ANY($3))),
                        COALESCE(sum(log_records), 0)::bigint,
                        COALESCE(array_agg(id ORDER BY id), '{}')
                 FROM jobs WHERE id >= $1 AND id < $2",
                &[&lo, &hi, &candidates],
            )
            .await?;
        let kept: i64 = row.try_get(0)?;
        if kept > 0 {
            continue;
        }
        let n: i64 = row.try_get(1)?;
        let ids: Vec<i64> = row.try_get(2)?;
        // Segments first, as in `create_partition`.
        tx.batch_execute(&format!(
            "DROP TABLE IF EXISTS segments_p{p}; DROP TABLE log_p{p}"
        ))
        .await?;
        tx.execute(
            "DELETE FROM results WHERE job_id >= $1 AND job_id < $2",
            &[&lo, &hi],
        )
        .await?;
        tx.execute("DELETE FROM jobs WHERE id >= $1 AND id < $2", &[&lo, &hi])
            .await?;
        records += n as u64;
        jobs.extend(ids);
    }
    Ok(Outcome::Groomed { jobs, records })
}
