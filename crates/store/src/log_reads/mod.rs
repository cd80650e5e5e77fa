//! Reading a job's log, written once for both stores: pages forwards and
//! backwards, searches, outlines, and what the sealer reads. Each read
//! runs in one snapshot of the database, finds how far the log is sealed
//! (`S`), reads the segments it needs and the rows after `S`, and joins
//! them (`crate::sealed`, `crate::navigation`), so the answer is the same
//! as from rows alone. Segments are read a few per round trip, so a page
//! near the start of a long sealed log decodes two segments, not all.

mod statements;

#[cfg(test)]
pub(crate) use statements::every_statement;
use statements::*;
pub(crate) use statements::{SEARCH_ROWS, SEGMENT_DATA};

use joblog_core::{EarlierPage, JobId, LogOutline, LogSearch, Record, SearchHits, Stream};

use crate::db::{query_one, Conn, Decode, Message, Param, Row, SmallInt};
use crate::navigation::{earlier_page, seq_bound, SearchPage};
use crate::outline::{read_mask, text_mask, OutlineRow, Outliner};
use crate::rows::stream_mask;
use crate::sealed::{self, Page, SealedMatches};
use crate::{Result, MAX_PAGE_BYTES};

/// Segments per round trip of a page read: a page of 1,000 records spans
/// two segments at most unless a stream filter skips records.
const SEGMENTS_PER_READ: i64 = 2;

/// A row of the segments table: its seqs and its blob.
struct Segment {
    first: i64,
    last: i64,
    data: Vec<u8>,
}

impl Decode for Segment {
    fn decode(row: &impl Row) -> Result<Segment> {
        Ok(Segment {
            first: row.get(0)?,
            last: row.get(1)?,
            data: row.get(2)?,
        })
    }
}

impl Segment {
    fn records(&self, job: JobId) -> Result<Vec<Record>> {
        sealed::decode(job, self.first as u64, &self.data)
    }
}

impl Decode for OutlineRow {
    fn decode(row: &impl Row) -> Result<OutlineRow> {
        Ok(OutlineRow {
            seq: row.get(0)?,
            ts: row.get(1)?,
            stream: row.get::<SmallInt>(2)?.0,
            message: row.get::<Message>(3)?.0,
            fields: row.get(4)?,
        })
    }
}

async fn sealed_to<C: Conn>(c: &mut C, id: JobId) -> Result<u64> {
    Ok(query_one::<C, i64>(c, &SEALED_TO, &[id.into()]).await? as u64)
}

pub(crate) async fn read_log<C: Conn>(
    c: &mut C,
    id: JobId,
    after_seq: u64,
    limit: u32,
    streams: &Option<Vec<Stream>>,
) -> Result<Vec<Record>> {
    let mask = stream_mask(streams);
    c.snapshot(async |c: &mut C| {
        let s = sealed_to(c, id).await?;
        let mut page = Page::new(limit);
        let mut cursor = after_seq;
        while cursor < s && !page.is_full() {
            let params = [
                id.into(),
                seq_bound(cursor).into(),
                mask.into(),
                SEGMENTS_PER_READ.into(),
            ];
            let segments: Vec<Segment> = c.query(&SEGMENTS_AFTER, &params).await?;
            if segments.is_empty() {
                break;
            }
            for segment in &segments {
                if page.is_full() {
                    break;
                }
                page.extend_sealed(segment.records(id)?, after_seq, mask);
                cursor = segment.last as u64;
            }
        }
        if !page.is_full() {
            let params = [
                id.into(),
                seq_bound(after_seq.max(s)).into(),
                page.remaining().into(),
                mask.into(),
                Param::Int(page.bytes_left() as i64),
            ];
            c.each(&READ_ROWS, &params, |r: Record| {
                page.push(r);
                Ok(!page.is_full())
            })
            .await?;
        }
        Ok(page.into_records())
    })
    .await
}

/// The rows before `before_seq`, nearest first, as far as a page read
/// backwards takes them (`sealed::earlier_is_read`).
async fn rows_before<C: Conn>(
    c: &mut C,
    id: JobId,
    before_seq: u64,
    limit: u32,
    mask: i64,
) -> Result<Vec<Record>> {
    let params = [
        id.into(),
        seq_bound(before_seq).into(),
        Param::Int(i64::from(limit) + 1),
        mask.into(),
        Param::Int(MAX_PAGE_BYTES as i64),
    ];
    let mut nearest = Vec::new();
    let mut bytes = 0;
    c.each(&READ_ROWS_BEFORE, &params, |r: Record| {
        let read = nearest.len() >= limit as usize || bytes >= MAX_PAGE_BYTES;
        bytes += r.message.len();
        nearest.push(r);
        Ok(!read)
    })
    .await?;
    Ok(nearest)
}

pub(crate) async fn read_before<C: Conn>(
    c: &mut C,
    id: JobId,
    before_seq: u64,
    limit: u32,
    streams: &Option<Vec<Stream>>,
) -> Result<EarlierPage> {
    let mask = stream_mask(streams);
    c.snapshot(async |c: &mut C| {
        let s = sealed_to(c, id).await?;
        let mut nearest = rows_before(c, id, before_seq, limit, mask).await?;
        let mut below = i64::MAX;
        while s > 0 && !sealed::earlier_is_read(&nearest, limit) {
            let params = [
                id.into(),
                seq_bound(before_seq).into(),
                mask.into(),
                SEGMENTS_PER_READ.into(),
                below.into(),
            ];
            let segments: Vec<Segment> = c.query(&SEGMENTS_BEFORE, &params).await?;
            if segments.is_empty() {
                break;
            }
            for segment in &segments {
                if sealed::earlier_is_read(&nearest, limit) {
                    break;
                }
                nearest.extend(sealed::backwards(segment.records(id)?, before_seq, mask));
                below = segment.last;
            }
        }
        earlier_page(nearest.into_iter().map(Ok), limit)
    })
    .await
}

pub(crate) async fn search<C: Conn>(
    c: &mut C,
    id: JobId,
    search: &LogSearch,
    after_seq: u64,
    limit: u32,
    streams: &Option<Vec<Stream>>,
) -> Result<SearchHits> {
    let mask = stream_mask(streams);
    c.snapshot(async |c: &mut C| {
        let s = sealed_to(c, id).await?;
        if s == 0 {
            return search_rows(c, id, search, after_seq, limit, mask).await;
        }
        let mut matches = SealedMatches::new(after_seq, limit);
        c.each(
            &SEGMENTS_ALL,
            &[id.into(), mask.into()],
            |segment: Segment| {
                matches.add(&segment.records(id)?, search, mask);
                Ok(true)
            },
        )
        .await?;
        Ok(match matches.rows_limit() {
            Some(n) => matches.join(search_rows(c, id, search, after_seq, n, mask).await?),
            None => matches.join_count(count_matches(c, id, search, (0, i64::MAX), mask).await?),
        })
    })
    .await
}

/// A search of the job's rows: the first `limit` matches after
/// `after_seq`, and every match counted.
async fn search_rows<C: Conn>(
    c: &mut C,
    id: JobId,
    search: &LogSearch,
    after_seq: u64,
    limit: u32,
    mask: i64,
) -> Result<SearchHits> {
    let params = [
        id.into(),
        seq_bound(after_seq).into(),
        mask.into(),
        search.folded().into(),
        limit.into(),
    ];
    let seqs: Vec<(i64,)> = c.query(&SEARCH_PAGE, &params).await?;
    let page = SearchPage::new(
        after_seq,
        seqs.into_iter().map(|(s,)| s as u64).collect(),
        limit,
    );
    let mut counts = [0u64; 2];
    for (n, range) in counts.iter_mut().zip([page.before(), page.after()]) {
        if let Some(range) = range {
            *n = count_matches(c, id, search, range, mask).await?;
        }
    }
    Ok(page.hits(counts[0], counts[1]))
}

/// The matches in the job's rows with `from < seq <= to`.
async fn count_matches<C: Conn>(
    c: &mut C,
    id: JobId,
    search: &LogSearch,
    (from, to): (i64, i64),
    mask: i64,
) -> Result<u64> {
    let params = [
        id.into(),
        from.into(),
        mask.into(),
        search.folded().into(),
        to.into(),
    ];
    Ok(query_one::<C, i64>(c, &SEARCH_COUNT, &params).await? as u64)
}

pub(crate) async fn outline<C: Conn>(
    c: &mut C,
    id: JobId,
    max_groups: usize,
) -> Result<LogOutline> {
    c.snapshot(async |c: &mut C| {
        let s = sealed_to(c, id).await?;
        let mut outliner = Outliner::new(max_groups);
        if s > 0 {
            c.each(
                &SEGMENTS_ALL,
                &[id.into(), read_mask().into()],
                |segment: Segment| {
                    for row in sealed::outline_rows(segment.records(id)?, read_mask(), text_mask())
                    {
                        outliner.push(row)?;
                    }
                    Ok(true)
                },
            )
            .await?;
        }
        // Streamed: a job that wrote a million lines on stderr is folded
        // row by row, never held as a million rows.
        let params = [id.into(), read_mask().into(), text_mask().into()];
        c.each(&OUTLINE, &params, |row: OutlineRow| {
            outliner.push(row)?;
            Ok(true)
        })
        .await?;
        Ok(outliner.finish())
    })
    .await
}

/// Up to `limit` of the job's rows not sealed yet, in order, fewer once
/// they hold [`MAX_PAGE_BYTES`] of text.
pub(crate) async fn unsealed_rows<C: Conn>(
    c: &mut C,
    id: JobId,
    limit: u32,
) -> Result<Vec<Record>> {
    let mut out = Vec::new();
    let mut bytes = 0;
    let params = [id.into(), limit.into(), Param::Int(MAX_PAGE_BYTES as i64)];
    c.each(&UNSEALED_ROWS, &params, |r: Record| {
        bytes += r.message.len();
        out.push(r);
        Ok(bytes < MAX_PAGE_BYTES)
    })
    .await?;
    Ok(out)
}

/// Finished jobs not sealed yet, after `after`, with when each finished.
pub(crate) async fn unsealed_jobs<C: Conn>(
    c: &mut C,
    after: JobId,
    limit: u32,
    node: Option<&str>,
) -> Result<Vec<(JobId, joblog_core::Timestamp)>> {
    let rows: Vec<(i64, i64)> = c
        .query(&UNSEALED_JOBS, &[after.into(), limit.into(), node.into()])
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, at)| (id, joblog_core::Timestamp(at)))
        .collect())
}

/// Finished jobs whose log is not sealed yet, counted up to `up_to`.
pub(crate) async fn count_unsealed<C: Conn>(c: &mut C, up_to: u64) -> Result<u64> {
    let up_to = i64::try_from(up_to).unwrap_or(i64::MAX);
    Ok(query_one::<C, i64>(c, &COUNT_UNSEALED, &[up_to.into()]).await? as u64)
}
