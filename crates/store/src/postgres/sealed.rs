//! Sealed logs on PostgreSQL: the segments table (partitioned like the
//! log), the writer's seal of one slice, and the log reads, each in one
//! `REPEATABLE READ` transaction so that it sees the sealed part and the
//! rows after it as of one instant (`crate::sealed`).

use std::collections::HashMap;

use futures_util::{pin_mut, TryStreamExt};
use joblog_core::{EarlierPage, JobId, LogOutline, LogSearch, Record, SearchHits, Stream};
use tokio_postgres::{Statement, Transaction};

use super::navigation::{self, READ_LOG_BEFORE};
use super::pool::PooledConn;
use super::sql::{record_from_row, READ_LOG};
use super::writer::batch::prepared;
use crate::navigation::{earlier_page, seq_bound};
use crate::outline::{read_mask, text_mask, Outliner};
use crate::rows::stream_mask;
use crate::sealed::{self, Page, SealSlice, SealedMatches};
use crate::{Outcome, Result, MAX_PAGE_BYTES};

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

const SEALED_TO: &str = "SELECT COALESCE(max(last_seq), 0) FROM segments WHERE job_id = $1";

/// Up to `$4` segments with records after `$2`, of the streams in mask
/// `$3`.
const SEGMENTS_AFTER: &str = "SELECT first_seq, last_seq, data FROM segments \
     WHERE job_id = $1 AND last_seq > $2 AND (streams & $3) <> 0 ORDER BY last_seq LIMIT $4";

/// Up to `$4` segments with records before `$2`, nearest first, from the
/// one that holds `$2 - 1` (or the last) down, below `$5`.
const SEGMENTS_BEFORE: &str = "SELECT first_seq, last_seq, data FROM segments \
     WHERE job_id = $1 AND (streams & $3) <> 0 AND last_seq < $5 AND last_seq <= COALESCE( \
        (SELECT last_seq FROM segments WHERE job_id = $1 AND last_seq >= $2::bigint - 1 \
         ORDER BY last_seq LIMIT 1), 9223372036854775807) \
     ORDER BY last_seq DESC LIMIT $4";

/// Every segment of the streams in mask `$2`.
const SEGMENTS_ALL: &str = "SELECT first_seq, last_seq, data FROM segments \
     WHERE job_id = $1 AND (streams & $2) <> 0 ORDER BY last_seq";

const UNSEALED_ROWS: &str = "SELECT seq, ts, stream, message, fields FROM (
        SELECT seq, ts, stream, message, fields,
               sum(octet_length(message)) OVER (ORDER BY seq) - octet_length(message) AS before
        FROM (SELECT seq, ts, stream, message, fields FROM log
              WHERE job_id = $1 ORDER BY seq LIMIT $2) page
    ) sized WHERE before < $3 ORDER BY seq";

const UNSEALED_JOBS: &str = "SELECT id, finished_at FROM jobs \
     WHERE sealed_at IS NULL AND finished_at IS NOT NULL AND id > $1 \
       AND ($3::text IS NULL OR node = $3 OR node IS NULL) \
     ORDER BY id LIMIT $2";

pub(super) const COUNT_UNSEALED: &str = "SELECT count(*) FROM (SELECT 1 FROM jobs \
     WHERE sealed_at IS NULL AND finished_at IS NOT NULL LIMIT $1) q";

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

/// Segments per round trip of a page read: a page of 1,000 records spans
/// two segments at most unless a stream filter skips records.
const SEGMENTS_PER_READ: i64 = 2;

/// Runs the read `f` with the job's sealed part `S`, in one snapshot. Its
/// first statement reads `segments`, so a read always locks `segments`
/// before `log`: the order partition creation and drops keep
/// (`partitions.rs`), or a read and the writer could deadlock.
macro_rules! in_snapshot {
    ($c:expr, $id:expr, |$s:ident| $body:expr) => {{
        $c.client
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await?;
        let out: Result<_> = async {
            let rows = $c.query(SEALED_TO, &[&$id]).await?;
            let $s: u64 = match rows.first() {
                Some(r) => r.try_get::<_, i64>(0)? as u64,
                None => 0,
            };
            $body
        }
        .await;
        let end = if out.is_ok() { "COMMIT" } else { "ROLLBACK" };
        $c.client.batch_execute(end).await?;
        out
    }};
}

fn segment(id: JobId, row: &tokio_postgres::Row) -> Result<(u64, Vec<Record>)> {
    let first: i64 = row.try_get(0)?;
    let last: i64 = row.try_get(1)?;
    let data: &[u8] = row.try_get(2)?;
    Ok((last as u64, sealed::decode(id, first as u64, data)?))
}

pub(super) async fn read_log(
    c: &mut PooledConn,
    id: JobId,
    after_seq: u64,
    limit: u32,
    streams: &Option<Vec<Stream>>,
) -> Result<Vec<Record>> {
    let mask = stream_mask(streams);
    in_snapshot!(c, id, |s| {
        let mut page = Page::new(limit);
        let mut cursor = after_seq;
        while cursor < s && !page.is_full() {
            let rows = c
                .query(
                    SEGMENTS_AFTER,
                    &[&id, &seq_bound(cursor), &mask, &SEGMENTS_PER_READ],
                )
                .await?;
            if rows.is_empty() {
                break;
            }
            for row in &rows {
                if page.is_full() {
                    break;
                }
                let (last, records) = segment(id, row)?;
                page.extend_sealed(records, after_seq, mask);
                cursor = last;
            }
        }
        if !page.is_full() {
            let rows = c
                .query(
                    READ_LOG,
                    &[
                        &id,
                        &seq_bound(after_seq.max(s)),
                        &i64::from(page.remaining()),
                        &mask,
                        &(page.bytes_left() as i64),
                    ],
                )
                .await?;
            for row in &rows {
                page.push(record_from_row(row)?);
            }
        }
        Ok(page.into_records())
    })
}

pub(super) async fn read_before(
    c: &mut PooledConn,
    id: JobId,
    before_seq: u64,
    limit: u32,
    streams: &Option<Vec<Stream>>,
) -> Result<EarlierPage> {
    let mask = stream_mask(streams);
    in_snapshot!(c, id, |s| {
        if s == 0 {
            return navigation::read_before(c, id, before_seq, limit, streams).await;
        }
        let rows = c
            .query(
                READ_LOG_BEFORE,
                &[
                    &id,
                    &seq_bound(before_seq),
                    &(i64::from(limit) + 1),
                    &mask,
                    &(MAX_PAGE_BYTES as i64),
                ],
            )
            .await?;
        let mut nearest = rows
            .iter()
            .map(record_from_row)
            .collect::<Result<Vec<Record>>>()?;
        let mut below = i64::MAX;
        while !sealed::earlier_is_read(&nearest, limit) {
            let rows = c
                .query(
                    SEGMENTS_BEFORE,
                    &[
                        &id,
                        &seq_bound(before_seq),
                        &mask,
                        &SEGMENTS_PER_READ,
                        &below,
                    ],
                )
                .await?;
            if rows.is_empty() {
                break;
            }
            for row in &rows {
                if sealed::earlier_is_read(&nearest, limit) {
                    break;
                }
                let (last, records) = segment(id, row)?;
                nearest.extend(sealed::backwards(records, before_seq, mask));
                below = last as i64;
            }
        }
        earlier_page(nearest.into_iter().map(Ok), limit)
    })
}

pub(super) async fn search(
    c: &mut PooledConn,
    id: JobId,
    search: &LogSearch,
    after_seq: u64,
    limit: u32,
    streams: &Option<Vec<Stream>>,
) -> Result<SearchHits> {
    let mask = stream_mask(streams);
    in_snapshot!(c, id, |s| {
        if s == 0 {
            return navigation::search(c, id, search, after_seq, limit, streams).await;
        }
        let mut matches = SealedMatches::new(after_seq, limit);
        {
            let rows = c.query_rows(SEGMENTS_ALL, &[&id, &mask]).await?;
            pin_mut!(rows);
            while let Some(row) = rows.try_next().await? {
                matches.add(&segment(id, &row)?.1, search, mask);
            }
        }
        Ok(match matches.rows_limit() {
            Some(n) => {
                let rows = navigation::search(c, id, search, after_seq, n, streams).await?;
                matches.join(rows)
            }
            None => matches.join_count(navigation::count_matches(c, id, search, mask).await?),
        })
    })
}

pub(super) async fn outline(
    c: &mut PooledConn,
    id: JobId,
    max_groups: usize,
) -> Result<LogOutline> {
    in_snapshot!(c, id, |s| {
        let mut outliner = Outliner::new(max_groups);
        if s > 0 {
            let rows = c.query_rows(SEGMENTS_ALL, &[&id, &read_mask()]).await?;
            pin_mut!(rows);
            while let Some(row) = rows.try_next().await? {
                let (_, records) = segment(id, &row)?;
                for r in sealed::outline_rows(records, read_mask(), text_mask()) {
                    outliner.push(r)?;
                }
            }
        }
        navigation::outline_rows(c, id, &mut outliner).await?;
        Ok(outliner.finish())
    })
}

pub(super) async fn unsealed_rows(
    c: &mut PooledConn,
    id: JobId,
    limit: u32,
) -> Result<Vec<Record>> {
    let rows = c
        .query(
            UNSEALED_ROWS,
            &[&id, &i64::from(limit), &(MAX_PAGE_BYTES as i64)],
        )
        .await?;
    rows.iter().map(record_from_row).collect()
}

pub(super) async fn unsealed_jobs(
    c: &mut PooledConn,
    after: JobId,
    limit: u32,
    node: Option<&str>,
) -> Result<Vec<(JobId, i64)>> {
    let rows = c
        .query(UNSEALED_JOBS, &[&after, &i64::from(limit), &node])
        .await?;
    rows.iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect()
}

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
