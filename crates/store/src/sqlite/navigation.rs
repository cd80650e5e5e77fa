//! The log viewer's reads on SQLite: pages backwards, searches and
//! outlines, each a range scan of one job's log by its primary key (see
//! `crate::navigation` for why no other index serves them).

use joblog_core::{EarlierPage, JobId, LogSearch, SearchHits, Stream};
use rusqlite::{params, Connection};

use super::record_from_row;
use crate::navigation::{earlier_page, seq_bound, SearchPage, SeqRange};
use crate::outline::{read_mask, text_mask, OutlineRow, Outliner};
use crate::rows::stream_mask;
use crate::Result;

/// Records before `?2`, nearest first, of the streams in mask `?4`.
pub(super) const READ_LOG_BEFORE: &str = "SELECT seq, ts, stream, message, fields FROM log \
     WHERE job_id = ?1 AND seq < ?2 AND ((1 << stream) & ?4) != 0 \
     ORDER BY seq DESC LIMIT ?3";

/// SQLite's `lower` folds A–Z only (no ICU here), as the search asks;
/// `instr` compares bytes, so `%`, `_` and `\` are themselves.
macro_rules! matches_text {
    () => {
        "((1 << stream) & ?3) != 0 AND instr(lower(message), ?4) > 0"
    };
}

/// The seqs of the first `?5` matches after `?2`.
pub(super) const SEARCH_PAGE: &str = concat!(
    "SELECT seq FROM log WHERE job_id = ?1 AND seq > ?2 AND ",
    matches_text!(),
    " ORDER BY seq LIMIT ?5"
);

/// Matches with `?2 < seq <= ?5`.
pub(super) const SEARCH_COUNT: &str = concat!(
    "SELECT count(*) FROM log WHERE job_id = ?1 AND seq > ?2 AND seq <= ?5 AND ",
    matches_text!()
);

/// The rows an outline folds, in seq order: the streams of mask `?2`, with
/// message and fields for those of mask `?3`.
pub(super) const OUTLINE: &str = "SELECT seq, ts, stream, \
     CASE WHEN ((1 << stream) & ?3) != 0 THEN message END, \
     CASE WHEN ((1 << stream) & ?3) != 0 THEN fields END \
     FROM log WHERE job_id = ?1 AND ((1 << stream) & ?2) != 0 ORDER BY seq";

pub(super) fn read_before(
    c: &Connection,
    id: JobId,
    before_seq: u64,
    limit: u32,
    streams: &Option<Vec<Stream>>,
) -> Result<EarlierPage> {
    let mut stmt = c.prepare_cached(READ_LOG_BEFORE)?;
    let rows = stmt.query_map(
        params![
            id,
            seq_bound(before_seq),
            i64::from(limit) + 1,
            stream_mask(streams)
        ],
        record_from_row,
    )?;
    earlier_page(rows.map(|r| -> Result<_> { r? }), limit)
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
    let needle = search.folded();
    let seqs = c
        .prepare_cached(SEARCH_PAGE)?
        .query_map(
            params![id, seq_bound(after_seq), mask, needle, limit],
            |r| r.get::<_, i64>(0),
        )?
        .map(|s| -> Result<u64> { Ok(s? as u64) })
        .collect::<Result<Vec<u64>>>()?;
    let page = SearchPage::new(after_seq, seqs, limit);
    let count = |range: Option<SeqRange>| -> Result<u64> {
        let Some((from, to)) = range else {
            return Ok(0);
        };
        let n: i64 = c
            .prepare_cached(SEARCH_COUNT)?
            .query_row(params![id, from, mask, needle, to], |r| r.get(0))?;
        Ok(n as u64)
    };
    let (before, after) = (count(page.before())?, count(page.after())?);
    Ok(page.hits(before, after))
}

/// Every match in the job's rows.
pub(super) fn count_matches(
    c: &Connection,
    id: JobId,
    search: &LogSearch,
    mask: i64,
) -> Result<u64> {
    let n: i64 = c
        .prepare_cached(SEARCH_COUNT)?
        .query_row(params![id, 0, mask, search.folded(), i64::MAX], |r| {
            r.get(0)
        })?;
    Ok(n as u64)
}

/// Folds the job's rows into `outliner`.
pub(super) fn outline_rows(c: &Connection, id: JobId, outliner: &mut Outliner) -> Result<()> {
    let mut stmt = c.prepare_cached(OUTLINE)?;
    let mut rows = stmt.query(params![id, read_mask(), text_mask()])?;
    while let Some(r) = rows.next()? {
        outliner.push(OutlineRow {
            seq: r.get(0)?,
            ts: r.get(1)?,
            stream: r.get(2)?,
            message: r.get(3)?,
            fields: r.get(4)?,
        })?;
    }
    Ok(())
}
