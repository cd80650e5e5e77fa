//! Sealed logs on PostgreSQL: the segments table (partitioned like the
//! log) and the writer's seal of one slice (`crate::sealed`). The reads
//! are the shared ones (`crate::log_reads`), each in one `REPEATABLE READ`
//! transaction whose first statement reads `segments`, so a read always
//! locks `segments` before `log`: the order partition creation and drops
//! keep (`partitions.rs`), or a read and the writer could deadlock.

use std::collections::HashMap;

use joblog_core::JobId;
use tokio_postgres::{Statement, Transaction};

use super::writer::batch::prepared;
use crate::sealed::SealSlice;
use crate::{Outcome, Result};

pub(super) const MIGRATION: &str = r#"
-- Sealed logs: a finished job's records in compressed segments (one row
-- per segment, its seqs first_seq..last_seq; streams is a mask of the
-- streams it holds), replacing their rows a slice at a time. A job's
-- segments hold seqs 1..S and its rows the seqs after S. Partitioned as
-- the log is (segments_p<N> beside log_p<N>), dropped with it.
CREATE TABLE segments (
    job_id    bigint NOT NULL,
    last_seq  bigint NOT NULL,
    first_seq bigint NOT NULL,
    streams   bigint NOT NULL,
    data      bytea NOT NULL,
    PRIMARY KEY (job_id, last_seq)
) PARTITION BY RANGE (job_id);
DO $$
DECLARE
    p bigint;
BEGIN
    FOR p IN SELECT substr(c.relname, 6)::bigint FROM pg_inherits i
             JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'log'::regclass AND c.relname ~ '^log_p[0-9]+$'
    LOOP
        EXECUTE format('CREATE TABLE IF NOT EXISTS segments_p%s PARTITION OF segments '
                       'FOR VALUES FROM (%s) TO (%s)', p, p * 10000, (p + 1) * 10000);
    END LOOP;
END $$;
-- When the job's whole log was sealed; finished jobs not sealed yet are
-- found by the partial index.
ALTER TABLE jobs ADD COLUMN sealed_at bigint;
CREATE INDEX jobs_unsealed ON jobs (id) WHERE sealed_at IS NULL AND finished_at IS NOT NULL;
"#;

pub(super) const SEAL_DELETE: &str =
    "DELETE FROM log WHERE job_id = $1 AND seq >= $2 AND seq <= $3";
pub(super) const SEAL_INSERT: &str =
    "INSERT INTO segments (job_id, last_seq, first_seq, streams, data) VALUES ($1, $2, $3, $4, $5)";
pub(super) const MARK_SEALED: &str = "UPDATE jobs SET sealed_at = $2 WHERE id = $1 \
     AND sealed_at IS NULL AND finished_at IS NOT NULL \
     AND NOT EXISTS (SELECT 1 FROM log WHERE job_id = $1)";
/// Whether a committed batch's slice is in: its segment is there.
pub(super) const SEGMENT_EXISTS: &str =
    "SELECT count(*) FROM segments WHERE job_id = $1 AND last_seq = $2";
/// Whether a committed batch's mark is in.
pub(super) const IS_SEALED: &str =
    "SELECT count(*) FROM jobs WHERE id = $1 AND sealed_at IS NOT NULL";

/// The writer's seal of one slice (see the SQLite store's): under a
/// savepoint, so a slice whose rows are not all there changes nothing.
pub(super) async fn seal_slice(
    statements: &mut HashMap<&'static str, Statement>,
    tx: &Transaction<'_>,
    slice: &SealSlice,
) -> Result<Outcome> {
    let key = &slice.key;
    let (first, last) = (key.first_seq as i64, key.last_seq as i64);
    tx.batch_execute("SAVEPOINT seal").await?;
    let st = prepared(statements, tx, SEAL_DELETE).await?;
    let deleted = tx.execute(&st, &[&slice.job, &first, &last]).await?;
    if deleted != slice.records() {
        tx.batch_execute("ROLLBACK TO SAVEPOINT seal; RELEASE SAVEPOINT seal")
            .await?;
        return Ok(Outcome::Count(0));
    }
    let st = prepared(statements, tx, SEAL_INSERT).await?;
    tx.execute(&st, &[&slice.job, &last, &first, &key.streams, &slice.data])
        .await?;
    tx.batch_execute("RELEASE SAVEPOINT seal").await?;
    Ok(Outcome::Count(1))
}

/// Deletes whole segments from the start of the job's log until they hold
/// `max` records or none remain; returns the records they held.
pub(super) async fn delete_segments(tx: &Transaction<'_>, id: JobId, max: u64) -> Result<u64> {
    let rows = tx
        .query(
            "SELECT first_seq, last_seq FROM segments WHERE job_id = $1 ORDER BY last_seq",
            &[&id],
        )
        .await?;
    let mut upto = None;
    let mut records = 0u64;
    for row in rows {
        if records >= max {
            break;
        }
        let (first, last): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
        records += (last - first + 1) as u64;
        upto = Some(last);
    }
    if let Some(upto) = upto {
        tx.execute(
            "DELETE FROM segments WHERE job_id = $1 AND last_seq <= $2",
            &[&id, &upto],
        )
        .await?;
    }
    Ok(records)
}
