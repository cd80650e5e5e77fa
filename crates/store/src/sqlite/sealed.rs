//! Sealed logs on SQLite: the segments table and the writer's seal of one
//! slice (`crate::sealed`). The reads are the shared ones
//! (`crate::log_reads`).

use joblog_core::JobId;
use rusqlite::{params, Connection};

use crate::sealed::SealSlice;
use crate::{Outcome, Result};

pub(super) const MIGRATION: &str = r#"
-- Sealed logs: a finished job's records in compressed segments (one row
-- per segment, its seqs first_seq..last_seq; streams is a mask of the
-- streams it holds), replacing their rows a slice at a time. A job's
-- segments hold seqs 1..S and its rows the seqs after S.
CREATE TABLE segments (
    job_id    INTEGER NOT NULL,
    last_seq  INTEGER NOT NULL,
    first_seq INTEGER NOT NULL,
    streams   INTEGER NOT NULL,
    data      BLOB NOT NULL,
    PRIMARY KEY (job_id, last_seq)
);
-- When the job's whole log was sealed; finished jobs not sealed yet are
-- found by the partial index.
ALTER TABLE jobs ADD COLUMN sealed_at INTEGER;
CREATE INDEX jobs_unsealed ON jobs(id) WHERE sealed_at IS NULL AND finished_at IS NOT NULL;
"#;

/// The writer's seal of one slice: its rows go and its segment comes, or
/// nothing changes when the rows are not all there (sealed or deleted
/// meanwhile). → [`Outcome::Count`] 1 or 0
pub(super) fn seal_slice(tx: &Connection, slice: &SealSlice) -> Result<Outcome> {
    let key = &slice.key;
    tx.execute_batch("SAVEPOINT seal")?;
    let deleted = tx
        .prepare_cached("DELETE FROM log WHERE job_id = ?1 AND seq >= ?2 AND seq <= ?3")?
        .execute(params![
            slice.job,
            key.first_seq as i64,
            key.last_seq as i64
        ])?;
    if deleted as u64 != slice.records() {
        tx.execute_batch("ROLLBACK TO seal; RELEASE seal")?;
        return Ok(Outcome::Count(0));
    }
    tx.prepare_cached(
        "INSERT INTO segments (job_id, last_seq, first_seq, streams, data) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        slice.job,
        key.last_seq as i64,
        key.first_seq as i64,
        key.streams,
        slice.data
    ])?;
    tx.execute_batch("RELEASE seal")?;
    Ok(Outcome::Count(1))
}

/// Marks the job's log sealed once it is finished and no rows remain. →
/// [`Outcome::Count`]
pub(super) fn mark_sealed(tx: &Connection, id: JobId, now: i64) -> Result<Outcome> {
    let n = tx
        .prepare_cached(
            "UPDATE jobs SET sealed_at = ?2 WHERE id = ?1 AND sealed_at IS NULL \
             AND finished_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM log WHERE job_id = ?1)",
        )?
        .execute(params![id, now])?;
    Ok(Outcome::Count(n as u64))
}

/// Deletes whole segments from the start of the job's log until they hold
/// `max` records or none remain; returns the records they held.
pub(super) fn delete_segments(tx: &Connection, id: JobId, max: u64) -> Result<u64> {
    let mut upto = None;
    let mut records = 0u64;
    {
        let mut stmt = tx.prepare_cached(
            "SELECT first_seq, last_seq FROM segments WHERE job_id = ?1 ORDER BY last_seq",
        )?;
        let mut rows = stmt.query([id])?;
        while records < max {
            let Some(row) = rows.next()? else { break };
            let (first, last): (i64, i64) = (row.get(0)?, row.get(1)?);
            records += (last - first + 1) as u64;
            upto = Some(last);
        }
    }
    if let Some(upto) = upto {
        tx.prepare_cached("DELETE FROM segments WHERE job_id = ?1 AND last_seq <= ?2")?
            .execute(params![id, upto])?;
    }
    Ok(records)
}
