//! The log viewer's reads on PostgreSQL: pages backwards, searches and
//! outlines, each a range scan of one job's log by its primary key (see
//! `crate::navigation` for why no other index serves them).

use futures_util::{pin_mut, TryStreamExt};
use joblog_core::{EarlierPage, JobId, LogSearch, SearchHits, Stream};

use super::pool::PooledConn;
use super::sql::record_from_row;
use crate::navigation::{earlier_page, seq_bound, SearchPage, SeqRange};
use crate::outline::{read_mask, text_mask, OutlineRow, Outliner};
use crate::rows::stream_mask;
use crate::{Result, MAX_PAGE_BYTES};

/// Records before `$2`, nearest first, of the streams in mask `$4`, cut
/// one record after the one that crosses `$5` bytes of message text (the
/// cut itself is `earlier_page`'s; the extra record tells it whether more
/// remain), so a page of long lines stays bounded, as on SQLite.
pub(super) const READ_LOG_BEFORE: &str = "SELECT seq, ts, stream, message, fields FROM (
        SELECT seq, ts, stream, message, fields,
               COALESCE(sum(octet_length(message)) OVER (ORDER BY seq DESC
                   ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING), 0) AS before
        FROM (SELECT seq, ts, stream, message, fields FROM log
              WHERE job_id = $1 AND seq < $2 AND ((1::bigint << stream) & $4) <> 0
              ORDER BY seq DESC LIMIT $3) page
    ) sized WHERE before < $5 ORDER BY seq DESC";

/// A message with A–Z folded to a–z and nothing else: `lower` under the
/// "C" collation folds ASCII only, whatever the database's locale (under
/// another one it would fold `É`, or `I` to a dotless `ı`, and disagree
/// with SQLite); `translate` would too, but costs twenty times more (6 s
/// for a million records, against 0.3 s). Messages are bytea, which may
/// hold NUL bytes, which text cannot: their `escape` encoding is text
/// without NUL, with letters as themselves and nothing else as a letter,
/// and it decodes back byte for byte.
macro_rules! matches_text {
    () => {
        "((1::bigint << stream) & $3) <> 0 AND position($4 IN decode(\
         lower(encode(message, 'escape') COLLATE \"C\"), 'escape')) > 0"
    };
}

/// The seqs of the first `$5` matches after `$2`.
pub(super) const SEARCH_PAGE: &str = concat!(
    "SELECT seq FROM log WHERE job_id = $1 AND seq > $2 AND ",
    matches_text!(),
    " ORDER BY seq LIMIT $5"
);

/// Matches with `$2 < seq <= $5`.
pub(super) const SEARCH_COUNT: &str = concat!(
    "SELECT count(*) FROM log WHERE job_id = $1 AND seq > $2 AND seq <= $5 AND ",
    matches_text!()
);

/// The rows an outline folds, in seq order: the streams of mask `$2`, with
/// message and fields for those of mask `$3`.
pub(super) const OUTLINE: &str = "SELECT seq, ts, stream, \
     CASE WHEN ((1::bigint << stream) & $3) <> 0 THEN message END, \
     CASE WHEN ((1::bigint << stream) & $3) <> 0 THEN fields END \
     FROM log WHERE job_id = $1 AND ((1::bigint << stream) & $2) <> 0 ORDER BY seq";

pub(super) async fn read_before(
    c: &mut PooledConn,
    id: JobId,
    before_seq: u64,
    limit: u32,
    streams: &Option<Vec<Stream>>,
) -> Result<EarlierPage> {
    let rows = c
        .query(
            READ_LOG_BEFORE,
            &[
                &id,
                &seq_bound(before_seq),
                &(i64::from(limit) + 1),
                &stream_mask(streams),
                &(MAX_PAGE_BYTES as i64),
            ],
        )
        .await?;
    earlier_page(rows.iter().map(record_from_row), limit)
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
    let needle = search.folded().as_bytes();
    let rows = c
        .query(
            SEARCH_PAGE,
            &[
                &id,
                &seq_bound(after_seq),
                &mask,
                &needle,
                &i64::from(limit),
            ],
        )
        .await?;
    let seqs = rows
        .iter()
        .map(|r| Ok(r.try_get::<_, i64>(0)? as u64))
        .collect::<Result<Vec<u64>>>()?;
    let page = SearchPage::new(after_seq, seqs, limit);
    let mut counts = [0u64; 2];
    for (n, range) in counts.iter_mut().zip([page.before(), page.after()]) {
        let Some((from, to)): Option<SeqRange> = range else {
            continue;
        };
        let rows = c
            .query(SEARCH_COUNT, &[&id, &from, &mask, &needle, &to])
            .await?;
        if let Some(row) = rows.first() {
            *n = row.try_get::<_, i64>(0)? as u64;
        }
    }
    Ok(page.hits(counts[0], counts[1]))
}

/// Every match in the job's rows.
pub(super) async fn count_matches(
    c: &mut PooledConn,
    id: JobId,
    search: &LogSearch,
    mask: i64,
) -> Result<u64> {
    let needle = search.folded().as_bytes();
    let rows = c
        .query(SEARCH_COUNT, &[&id, &0i64, &mask, &needle, &i64::MAX])
        .await?;
    match rows.first() {
        Some(row) => Ok(row.try_get::<_, i64>(0)? as u64),
        None => Ok(0),
    }
}

/// Folds the job's rows into `outliner`.
pub(super) async fn outline_rows(
    c: &mut PooledConn,
    id: JobId,
    outliner: &mut Outliner,
) -> Result<()> {
    // Streamed: a job that wrote a million lines on stderr is folded row
    // by row, never held as a million rows.
    let rows = c
        .query_rows(OUTLINE, &[&id, &read_mask(), &text_mask()])
        .await?;
    pin_mut!(rows);
    while let Some(r) = rows.try_next().await? {
        let message: Option<Vec<u8>> = r.try_get(3)?;
        outliner.push(OutlineRow {
            seq: r.try_get(0)?,
            ts: r.try_get(1)?,
            stream: i64::from(r.try_get::<_, i16>(2)?),
            // As `record_from_row` reads it: stored from a String.
            message: message.map(|m| {
                String::from_utf8(m)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
            }),
            fields: r.try_get(4)?,
        })?;
    }
    Ok(())
}
