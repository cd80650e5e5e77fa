//! Sealed logs on SQLite: the segments table, the writer's seal of one
//! slice, and the log reads, each in one read transaction so that it sees
//! the sealed part and the rows after it as of one instant
//! (`crate::sealed`).

use joblog_core::{EarlierPage, JobId, LogOutline, LogSearch, Record, SearchHits, Stream};
use rusqlite::{params, Connection};

use super::navigation::{self, READ_LOG_BEFORE};
use super::record_from_row;
use crate::navigation::{earlier_page, seq_bound};
use crate::outline::{read_mask, text_mask, Outliner};
use crate::rows::stream_mask;
use crate::sealed::{self, Page, SealSlice, SealedMatches};
use crate::{Outcome, Result, MAX_PAGE_BYTES};

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

const SEALED_TO: &str = "SELECT COALESCE(max(last_seq), 0) FROM segments WHERE job_id = ?1";

/// Segments with records after `?2`, of the streams in mask `?3`.
const SEGMENTS_AFTER: &str = "SELECT first_seq, data FROM segments \
     WHERE job_id = ?1 AND last_seq > ?2 AND (streams & ?3) != 0 ORDER BY last_seq";

/// Segments with records before `?2`, nearest first: from the one that
/// holds `?2 - 1` (or the last) down.
const SEGMENTS_BEFORE: &str = "SELECT first_seq, data FROM segments \
     WHERE job_id = ?1 AND (streams & ?3) != 0 AND last_seq <= COALESCE( \
        (SELECT last_seq FROM segments WHERE job_id = ?1 AND last_seq >= ?2 - 1 \
         ORDER BY last_seq LIMIT 1), 9223372036854775807) \
     ORDER BY last_seq DESC";

/// Every segment of the streams in mask `?2`.
const SEGMENTS_ALL: &str = "SELECT first_seq, data FROM segments \
     WHERE job_id = ?1 AND (streams & ?2) != 0 ORDER BY last_seq";

/// Records after `?2`, of the streams in mask `?4`.
const READ_ROWS: &str = "SELECT seq, ts, stream, message, fields FROM log \
     WHERE job_id = ?1 AND seq > ?2 AND ((1 << stream) & ?4) != 0 \
     ORDER BY seq LIMIT ?3";

/// The rows of a job not sealed yet, in order.
const UNSEALED_ROWS: &str = "SELECT seq, ts, stream, message, fields FROM log \
     WHERE job_id = ?1 ORDER BY seq LIMIT ?2";

/// Finished jobs not sealed yet after `?1`, of node `?3` (and of none)
/// unless it is NULL.
const UNSEALED_JOBS: &str = "SELECT id, finished_at FROM jobs \
     WHERE sealed_at IS NULL AND finished_at IS NOT NULL AND id > ?1 \
       AND (?3 IS NULL OR node = ?3 OR node IS NULL) \
     ORDER BY id LIMIT ?2";

pub(super) const COUNT_UNSEALED: &str = "SELECT count(*) FROM (SELECT 1 FROM jobs \
     WHERE sealed_at IS NULL AND finished_at IS NOT NULL LIMIT ?1)";

fn sealed_to(c: &Connection, id: JobId) -> Result<u64> {
    let s: i64 = c.prepare_cached(SEALED_TO)?.query_row([id], |r| r.get(0))?;
    Ok(s as u64)
}

/// Runs `f` with the job's sealed part `S` in one read transaction.
fn in_snapshot<T>(
    c: &Connection,
    id: JobId,
    f: impl FnOnce(&Connection, u64) -> Result<T>,
) -> Result<T> {
    let tx = c.unchecked_transaction()?;
    let s = sealed_to(&tx, id)?;
    let out = f(&tx, s)?;
    tx.commit()?;
    Ok(out)
}

/// Calls `f` with the records of each segment `sql` lists, until it says
/// to stop.
fn each_segment(
    c: &Connection,
    id: JobId,
    sql: &str,
    params: impl rusqlite::Params,
    mut f: impl FnMut(Vec<Record>) -> bool,
) -> Result<()> {
    let mut stmt = c.prepare_cached(sql)?;
    let mut rows = stmt.query(params)?;
    while let Some(row) = rows.next()? {
        let first: i64 = row.get(0)?;
        let data = row.get_ref(1)?.as_blob().map_err(rusqlite::Error::from)?;
        if !f(sealed::decode(id, first as u64, data)?) {
            break;
        }
    }
    Ok(())
}

pub(super) fn read_log(
    c: &Connection,
    id: JobId,
    after_seq: u64,
    limit: u32,
    streams: &Option<Vec<Stream>>,
) -> Result<Vec<Record>> {
    let mask = stream_mask(streams);
    in_snapshot(c, id, |c, s| {
        let mut page = Page::new(limit);
        if after_seq < s && !page.is_full() {
            each_segment(
                c,
                id,
                SEGMENTS_AFTER,
                params![id, seq_bound(after_seq), mask],
                |records| {
                    page.extend_sealed(records, after_seq, mask);
                    !page.is_full()
                },
            )?;
        }
        if !page.is_full() {
            let mut stmt = c.prepare_cached(READ_ROWS)?;
            let after = seq_bound(after_seq.max(s));
            for r in stmt.query_map(params![id, after, page.remaining(), mask], record_from_row)? {
                page.push(r??);
                if page.is_full() {
                    break;
                }
            }
        }
        Ok(page.into_records())
    })
}

pub(super) fn read_before(
    c: &Connection,
    id: JobId,
    before_seq: u64,
    limit: u32,
    streams: &Option<Vec<Stream>>,
) -> Result<EarlierPage> {
    let mask = stream_mask(streams);
    in_snapshot(c, id, |c, s| {
        if s == 0 {
            return navigation::read_before(c, id, before_seq, limit, streams);
        }
        // Rows nearest first, then the segments': read lazily, one past
        // the page at most.
        let mut stmt = c.prepare_cached(READ_LOG_BEFORE)?;
        let rows = stmt
            .query_map(
                params![id, seq_bound(before_seq), i64::from(limit) + 1, mask],
                record_from_row,
            )?
            .map(|r| -> Result<Record> { r? });
        let mut segments = c.prepare_cached(SEGMENTS_BEFORE)?;
        let mut segment_rows = segments.query(params![id, seq_bound(before_seq), mask])?;
        let sealed = std::iter::from_fn(move || match segment_rows.next() {
            Err(e) => Some(vec![Err(e.into())]),
            Ok(None) => None,
            Ok(Some(row)) => Some(segment_backwards(row, id, before_seq, mask)),
        })
        .flatten();
        earlier_page(rows.chain(sealed), limit)
    })
}

fn segment_backwards(
    row: &rusqlite::Row,
    id: JobId,
    before_seq: u64,
    mask: i64,
) -> Vec<Result<Record>> {
    let decoded = (|| -> Result<Vec<Record>> {
        let first: i64 = row.get(0)?;
        let data = row.get_ref(1)?.as_blob().map_err(rusqlite::Error::from)?;
        sealed::decode(id, first as u64, data)
    })();
    match decoded {
        Ok(records) => sealed::backwards(records, before_seq, mask)
            .into_iter()
            .map(Ok)
            .collect(),
        Err(e) => vec![Err(e)],
    }
}

pub(super) fn search(
    c: &Connection,
    id: JobId,
    search: &LogSearch,
    after_seq: u64,
    limit: u32,
    streams: &Option<Vec<Stream>>,
) -> Result<SearchHits> {
    let mask = stream_mask(streams);
    in_snapshot(c, id, |c, s| {
        if s == 0 {
            return navigation::search(c, id, search, after_seq, limit, streams);
        }
        let mut matches = SealedMatches::new(after_seq, limit);
        each_segment(c, id, SEGMENTS_ALL, params![id, mask], |records| {
            matches.add(&records, search, mask);
            true
        })?;
        Ok(match matches.rows_limit() {
            Some(n) => matches.join(navigation::search(c, id, search, after_seq, n, streams)?),
            None => matches.join_count(navigation::count_matches(c, id, search, mask)?),
        })
    })
}

pub(super) fn outline(c: &Connection, id: JobId, max_groups: usize) -> Result<LogOutline> {
    in_snapshot(c, id, |c, s| {
        let mut outliner = Outliner::new(max_groups);
        if s > 0 {
            let mut failed = None;
            each_segment(c, id, SEGMENTS_ALL, params![id, read_mask()], |records| {
                for row in sealed::outline_rows(records, read_mask(), text_mask()) {
                    if let Err(e) = outliner.push(row) {
                        failed = Some(e);
                        return false;
                    }
                }
                true
            })?;
            if let Some(e) = failed {
                return Err(e);
            }
        }
        navigation::outline_rows(c, id, &mut outliner)?;
        Ok(outliner.finish())
    })
}

/// Up to `limit` of the job's rows not sealed yet, in order.
pub(super) fn unsealed_rows(c: &Connection, id: JobId, limit: u32) -> Result<Vec<Record>> {
    let mut stmt = c.prepare_cached(UNSEALED_ROWS)?;
    let mut out = Vec::new();
    let mut bytes = 0;
    for r in stmt.query_map(params![id, limit], record_from_row)? {
        let record = r??;
        bytes += record.message.len();
        out.push(record);
        if bytes >= MAX_PAGE_BYTES {
            break;
        }
    }
    Ok(out)
}

/// Finished jobs not sealed yet, after `after`, with when each finished.
pub(super) fn unsealed_jobs(
    c: &Connection,
    after: JobId,
    limit: u32,
    node: Option<&str>,
) -> Result<Vec<(JobId, i64)>> {
    let mut stmt = c.prepare_cached(UNSEALED_JOBS)?;
    let rows = stmt.query_map(params![after, limit, node], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

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
