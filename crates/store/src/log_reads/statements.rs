//! The statements under every log read, written once where the databases
//! agree. Each reads one job's log (or segments) by its primary key; the
//! query-plan tests of both stores hold them to index searches.

use crate::db::{sql, Statement};
use crate::rows::record_columns;

macro_rules! sqlite_matches {
    () => {
        "((1 << stream) & ?3) != 0 AND instr(lower(message), ?4) > 0"
    };
}

macro_rules! postgres_matches {
    () => {
        "((1::bigint << stream) & $3) <> 0 AND position($4 IN decode(\
         lower(encode(message, 'escape') COLLATE \"C\"), 'escape')) > 0"
    };
}

/// How far the job's log is sealed (`S`: segments hold seqs `1..=S`).
pub(super) const SEALED_TO: Statement =
    sql!("SELECT COALESCE(max(last_seq), 0) FROM segments WHERE job_id = $1");

/// Up to `$4` segments with records after `$2`, of the streams in mask
/// `$3`.
pub(super) const SEGMENTS_AFTER: Statement = sql!(
    "SELECT first_seq, last_seq, data FROM segments \
     WHERE job_id = $1 AND last_seq > $2 AND (streams & $3) <> 0 ORDER BY last_seq LIMIT $4"
);

/// Up to `$4` segments with records before `$2`, nearest first, from the
/// one that holds `$2 - 1` (or the last) down, below `$5`.
pub(super) const SEGMENTS_BEFORE: Statement = sql!(
    "SELECT first_seq, last_seq, data FROM segments \
     WHERE job_id = $1 AND (streams & $3) <> 0 AND last_seq < $5 AND last_seq <= COALESCE( \
        (SELECT last_seq FROM segments WHERE job_id = $1 AND last_seq >= CAST($2 AS bigint) - 1 \
         ORDER BY last_seq LIMIT 1), 9223372036854775807) \
     ORDER BY last_seq DESC LIMIT $4"
);

/// Every segment of the streams in mask `$2`.
pub(super) const SEGMENTS_ALL: Statement = sql!(
    "SELECT first_seq, last_seq, data FROM segments \
     WHERE job_id = $1 AND (streams & $2) <> 0 ORDER BY last_seq"
);

/// Up to `$3` records after `$2`, of the streams in mask `$4`. Two texts:
/// PostgreSQL also cuts the page after the record that crosses `$5` bytes
/// of message text, so that a page of long lines does not cross the
/// network; SQLite reads rows lazily in process and stops there.
pub(super) const READ_ROWS: Statement = Statement::new(
    concat!(
        "SELECT ",
        record_columns!(),
        " FROM log WHERE job_id = ?1 AND seq > ?2 AND ((1 << stream) & ?4) != 0 \
         ORDER BY seq LIMIT ?3"
    ),
    "SELECT seq, ts, stream, message, fields FROM (
        SELECT seq, ts, stream, message, fields,
               sum(octet_length(message)) OVER (ORDER BY seq) - octet_length(message) AS before
        FROM (SELECT seq, ts, stream, message, fields FROM log
              WHERE job_id = $1 AND seq > $2 AND ((1::bigint << stream) & $4) <> 0
              ORDER BY seq LIMIT $3) page
    ) sized WHERE before < $5 ORDER BY seq",
);

/// Up to `$3` records before `$2`, nearest first, of the streams in mask
/// `$4`. Two texts, as [`READ_ROWS`]: PostgreSQL cuts one record after the
/// one that crosses `$5` bytes (the cut itself is `earlier_page`'s; the
/// extra record tells it whether more remain).
pub(super) const READ_ROWS_BEFORE: Statement = Statement::new(
    concat!(
        "SELECT ",
        record_columns!(),
        " FROM log WHERE job_id = ?1 AND seq < ?2 AND ((1 << stream) & ?4) != 0 \
         ORDER BY seq DESC LIMIT ?3"
    ),
    "SELECT seq, ts, stream, message, fields FROM (
        SELECT seq, ts, stream, message, fields,
               COALESCE(sum(octet_length(message)) OVER (ORDER BY seq DESC
                   ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING), 0) AS before
        FROM (SELECT seq, ts, stream, message, fields FROM log
              WHERE job_id = $1 AND seq < $2 AND ((1::bigint << stream) & $4) <> 0
              ORDER BY seq DESC LIMIT $3) page
    ) sized WHERE before < $5 ORDER BY seq DESC",
);

/// Up to `$2` of a job's rows not sealed yet, in order (two texts, as
/// [`READ_ROWS`], PostgreSQL's cut at `$3` bytes).
pub(super) const UNSEALED_ROWS: Statement = Statement::new(
    concat!(
        "SELECT ",
        record_columns!(),
        " FROM log WHERE job_id = ?1 ORDER BY seq LIMIT ?2"
    ),
    "SELECT seq, ts, stream, message, fields FROM (
        SELECT seq, ts, stream, message, fields,
               sum(octet_length(message)) OVER (ORDER BY seq) - octet_length(message) AS before
        FROM (SELECT seq, ts, stream, message, fields FROM log
              WHERE job_id = $1 ORDER BY seq LIMIT $2) page
    ) sized WHERE before < $3 ORDER BY seq",
);

/// Finished jobs not sealed yet after `$1`, of node `$3` (and of none)
/// unless it is NULL.
pub(super) const UNSEALED_JOBS: Statement = sql!(
    "SELECT id, finished_at FROM jobs \
     WHERE sealed_at IS NULL AND finished_at IS NOT NULL AND id > $1 \
       AND (CAST($3 AS text) IS NULL OR node = $3 OR node IS NULL) \
     ORDER BY id LIMIT $2"
);

pub(super) const COUNT_UNSEALED: Statement = sql!(
    "SELECT count(*) FROM (SELECT 1 FROM jobs \
     WHERE sealed_at IS NULL AND finished_at IS NOT NULL LIMIT $1) q"
);

/// The seqs of the first `$5` matches of `$4` after `$2`, of the streams
/// in mask `$3`. Two texts: each database folds case its own way, to the
/// same result (A–Z only).
///
/// SQLite's `lower` folds A–Z only (no ICU here); `instr` compares bytes,
/// so `%`, `_` and `\` are themselves.
///
/// PostgreSQL: `lower` under the "C" collation folds ASCII only, whatever
/// the database's locale (under another one it would fold `É`, or `I` to
/// a dotless `ı`, and disagree with SQLite); `translate` would too, but
/// costs twenty times more (6 s for a million records, against 0.3 s).
/// Messages are bytea, which may hold NUL bytes, which text cannot: their
/// `escape` encoding is text without NUL, with letters as themselves and
/// nothing else as a letter, and it decodes back byte for byte.
pub(super) const SEARCH_PAGE: Statement = Statement::new(
    concat!(
        "SELECT seq FROM log WHERE job_id = ?1 AND seq > ?2 AND ",
        sqlite_matches!(),
        " ORDER BY seq LIMIT ?5"
    ),
    concat!(
        "SELECT seq FROM log WHERE job_id = $1 AND seq > $2 AND ",
        postgres_matches!(),
        " ORDER BY seq LIMIT $5"
    ),
);

/// The rows after `$2` of the streams in mask `$3` whose message holds
/// `$4` (two texts, as [`SEARCH_PAGE`]; empty text: every row), at most
/// `$5`, in order: the candidates of a search across jobs
/// (`crate::search`), which joblog then matches itself.
pub(crate) const SEARCH_ROWS: Statement = Statement::new(
    concat!(
        "SELECT ",
        record_columns!(),
        " FROM log WHERE job_id = ?1 AND seq > ?2 AND ",
        sqlite_matches!(),
        " ORDER BY seq LIMIT ?5"
    ),
    concat!(
        "SELECT seq, ts, stream, message, fields FROM log WHERE job_id = $1 AND seq > $2 AND ",
        postgres_matches!(),
        " ORDER BY seq LIMIT $5"
    ),
);

/// One segment's blob.
pub(crate) const SEGMENT_DATA: Statement =
    sql!("SELECT data FROM segments WHERE job_id = $1 AND last_seq = $2");

/// Matches with `$2 < seq <= $5` (two texts, as [`SEARCH_PAGE`]).
pub(super) const SEARCH_COUNT: Statement = Statement::new(
    concat!(
        "SELECT count(*) FROM log WHERE job_id = ?1 AND seq > ?2 AND seq <= ?5 AND ",
        sqlite_matches!()
    ),
    concat!(
        "SELECT count(*) FROM log WHERE job_id = $1 AND seq > $2 AND seq <= $5 AND ",
        postgres_matches!()
    ),
);

/// The rows an outline folds, in seq order: the streams of mask `$2`, with
/// message and fields for those of mask `$3`.
pub(super) const OUTLINE: Statement = sql!(
    "SELECT seq, ts, stream, \
     CASE WHEN ((CAST(1 AS bigint) << stream) & $3) <> 0 THEN message END, \
     CASE WHEN ((CAST(1 AS bigint) << stream) & $3) <> 0 THEN fields END \
     FROM log WHERE job_id = $1 AND ((CAST(1 AS bigint) << stream) & $2) <> 0 ORDER BY seq"
);

/// Every statement above with values to plan it for, for the query-plan
/// tests of both stores: job 1, a seq in the middle, every stream.
#[cfg(test)]
pub(crate) fn every_statement() -> Vec<(&'static str, Statement, Vec<crate::db::Param>)> {
    use crate::db::Param::{Int, Null, Text};
    use crate::outline::{read_mask, text_mask};
    let needle = || Text("error".into());
    vec![
        ("SEALED_TO", SEALED_TO, vec![Int(1)]),
        (
            "SEGMENTS_AFTER",
            SEGMENTS_AFTER,
            vec![Int(1), Int(5), Int(127), Int(2)],
        ),
        (
            "SEGMENTS_BEFORE",
            SEGMENTS_BEFORE,
            vec![Int(1), Int(500), Int(127), Int(2), Int(i64::MAX)],
        ),
        ("SEGMENTS_ALL", SEGMENTS_ALL, vec![Int(1), Int(127)]),
        ("SEGMENT_DATA", SEGMENT_DATA, vec![Int(1), Int(1000)]),
        (
            "SEARCH_ROWS",
            SEARCH_ROWS,
            vec![
                Int(1),
                Int(5),
                Int(127),
                Text("disk full".into()),
                Int(1000),
            ],
        ),
        (
            "READ_ROWS",
            READ_ROWS,
            vec![Int(1), Int(5), Int(1000), Int(127), Int(1 << 20)],
        ),
        (
            "READ_ROWS_BEFORE",
            READ_ROWS_BEFORE,
            vec![Int(1), Int(500), Int(101), Int(6), Int(1 << 20)],
        ),
        (
            "UNSEALED_ROWS",
            UNSEALED_ROWS,
            vec![Int(1), Int(1000), Int(1 << 20)],
        ),
        ("UNSEALED_JOBS", UNSEALED_JOBS, vec![Int(0), Int(100), Null]),
        ("COUNT_UNSEALED", COUNT_UNSEALED, vec![Int(1000)]),
        (
            "SEARCH_PAGE",
            SEARCH_PAGE,
            vec![Int(1), Int(5), Int(127), needle(), Int(1000)],
        ),
        (
            "SEARCH_COUNT",
            SEARCH_COUNT,
            vec![Int(1), Int(0), Int(127), needle(), Int(5)],
        ),
        (
            "OUTLINE",
            OUTLINE,
            vec![Int(1), Int(read_mask()), Int(text_mask())],
        ),
    ]
}
