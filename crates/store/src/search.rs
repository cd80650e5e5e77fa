//! A search across every job's log, written once for both stores: one page
//! ([`joblog_core::search::Scan`]) in one snapshot of the database. Jobs
//! come newest first through the listing's index searches (its filters
//! applied before any log is read), a few hundred per read; their
//! segments' text indexes come in one read per such batch, and only the
//! segments an index cannot rule out are read and decompressed, one at a
//! time. Rows (the logs of running jobs and of those not sealed yet) are
//! read after a job's segments; for a literal text the database picks the
//! candidates (`instr`/`position` on A–Z folded text), for a regular
//! expression every row is a candidate. joblog matches every candidate
//! itself, so both stores answer alike.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use joblog_core::search::{Grams, Scan, SearchCursor, SearchPage, SearchPattern, SearchQuery};
use joblog_core::{JobId, Record};

use crate::db::{query_opt, sql, Conn, Decode, Dialect, Param, Row, Sql, Statement};
use crate::log_reads::{SEARCH_ROWS, SEGMENT_DATA};
use crate::{listing, sealed, Result, StoreError};

/// Jobs listed per read.
const JOBS_PER_READ: u32 = 512;

/// The index rows of the segments of jobs `$1..=$2` holding a stream of
/// mask `$3`: one range of the primary key, prepared once. Used when the
/// jobs listed are most of the ids they span (no filter, or a loose one).
const SEGMENT_INDEXES: Statement = sql!(
    "SELECT job_id, first_seq, last_seq, grams FROM segments \
     WHERE job_id >= $1 AND job_id <= $2 AND (streams & $3) <> 0"
);

/// How much one page may read before it answers with a cursor: a search
/// of a pattern found nowhere, or everywhere but filtered out, is read in
/// pages of bounded cost, each one a request.
#[derive(Debug, Clone, Copy)]
pub struct SearchBudget {
    /// Records matched at most.
    pub records: u64,
    /// Time spent at most (checked between segments and jobs).
    pub time: Duration,
}

impl Default for SearchBudget {
    /// About a quarter of a second of reading.
    fn default() -> SearchBudget {
        SearchBudget {
            records: 2_000_000,
            time: Duration::from_millis(250),
        }
    }
}

/// A job as a search lists it.
struct Candidate {
    id: JobId,
    name: Option<String>,
    /// Whether rows may remain (the log is not wholly sealed).
    unsealed: bool,
}

const CANDIDATE_COLUMNS: &str = "id, name, sealed_at";

impl Decode for Candidate {
    fn decode(row: &impl Row) -> Result<Candidate> {
        Ok(Candidate {
            id: row.get(0)?,
            name: row.get(1)?,
            unsealed: row.get::<Option<i64>>(2)?.is_none(),
        })
    }
}

/// A segment as its index row says: where it is and its text index.
struct Indexed {
    job: JobId,
    first_seq: i64,
    last_seq: i64,
    grams: Option<Vec<u8>>,
}

impl Decode for Indexed {
    fn decode(row: &impl Row) -> Result<Indexed> {
        Ok(Indexed {
            job: row.get(0)?,
            first_seq: row.get(1)?,
            last_seq: row.get(2)?,
            grams: row.get(3)?,
        })
    }
}

/// The statement reading the index rows of the segments of jobs `ids`
/// holding a stream of `mask`: one seek of the primary key per job.
fn index_sql(d: Dialect, ids: impl IntoIterator<Item = JobId>, mask: i64) -> Sql {
    let mut sql = Sql {
        text: "".into(),
        params: Vec::new(),
    };
    let ids: Vec<String> = ids
        .into_iter()
        .map(|id| sql.bind(d, Param::Int(id)))
        .collect();
    let mask = sql.bind(d, Param::Int(mask));
    let ne = match d {
        Dialect::Sqlite => "!=",
        Dialect::Postgres => "<>",
    };
    sql.text = format!(
        "SELECT job_id, first_seq, last_seq, grams FROM segments \
         WHERE job_id IN ({}) AND (streams & {mask}) {ne} 0",
        ids.join(", ")
    )
    .into();
    sql
}

/// The index rows of the segments of `jobs` holding a stream of `mask`,
/// by job, each job's in seq order: the range of ids they span when they
/// are most of it (a statement planned once; the few others' rows are
/// dropped here), else the list of their ids.
async fn segment_indexes<C: Conn>(
    c: &mut C,
    jobs: &[Candidate],
    mask: i64,
) -> Result<HashMap<JobId, Vec<Indexed>>> {
    let mut by_job: HashMap<JobId, Vec<Indexed>> =
        jobs.iter().map(|j| (j.id, Vec::new())).collect();
    let lo = jobs.iter().map(|j| j.id).min().unwrap_or(0);
    let hi = jobs.iter().map(|j| j.id).max().unwrap_or(0);
    let rows: Vec<Indexed> = if (hi - lo) as usize / 2 < jobs.len() {
        c.query(&SEGMENT_INDEXES, &[lo.into(), hi.into(), mask.into()])
            .await?
    } else {
        let sql = index_sql(C::DIALECT, jobs.iter().map(|j| j.id), mask);
        c.query_sql(&sql).await?
    };
    for row in rows {
        if let Some(segments) = by_job.get_mut(&row.job) {
            segments.push(row);
        }
    }
    for segments in by_job.values_mut() {
        segments.sort_by_key(|s| s.last_seq);
    }
    Ok(by_job)
}

/// The statement a search runs that is built at run time, with values:
/// for the query-plan tests of both stores.
#[cfg(test)]
pub(crate) fn every_statement(d: Dialect) -> Vec<Sql> {
    let range = Sql {
        text: match d {
            Dialect::Sqlite => SEGMENT_INDEXES.sqlite.into(),
            Dialect::Postgres => SEGMENT_INDEXES.postgres.into(),
        },
        params: vec![Param::Int(2), Param::Int(9), Param::Int(0b101)],
    };
    vec![index_sql(d, [9, 5, 2], 0b101), range]
}

/// One page of `query` from `cursor`, of `limit` hits at most.
pub(crate) async fn search<C: Conn>(
    c: &mut C,
    query: &SearchQuery,
    cursor: Option<SearchCursor>,
    limit: u32,
    budget: SearchBudget,
) -> Result<SearchPage> {
    let deadline = Instant::now() + budget.time;
    let grams = query.pattern.grams();
    let mask = query.stream_mask();
    let candidates = match &query.pattern {
        SearchPattern::Text(t) => t.folded().to_owned(),
        SearchPattern::Regex { .. } => String::new(),
    };
    c.snapshot(async |c: &mut C| {
        let mut scan = Scan::new(query, cursor, limit, budget.records);
        let exhausted = 'pages: loop {
            let mut listing = query.jobs.clone();
            listing.limit = JOBS_PER_READ;
            listing.before_id = scan.jobs_before();
            let jobs: Vec<Candidate> = listing::select(c, &listing, CANDIDATE_COLUMNS).await?;
            if jobs.is_empty() {
                break true;
            }
            let mut indexes = segment_indexes(c, &jobs, mask).await?;
            for job in &jobs {
                if scan.is_full() {
                    break 'pages false;
                }
                if Instant::now() >= deadline {
                    scan.stop();
                    break 'pages false;
                }
                let segments = indexes.remove(&job.id).unwrap_or_default();
                read_job(c, &mut scan, job, &segments, &grams, &candidates, deadline).await?;
                scan.end_job();
            }
            if jobs.len() < JOBS_PER_READ as usize {
                break true;
            }
        };
        Ok(scan.finish(exhausted))
    })
    .await
}

/// Feeds `scan` the job's records: its segments that may match, then its
/// rows.
async fn read_job<C: Conn>(
    c: &mut C,
    scan: &mut Scan<'_>,
    job: &Candidate,
    segments: &[Indexed],
    grams: &Grams,
    candidates: &str,
    deadline: Instant,
) -> Result<()> {
    let after = scan.start_job(job.id, job.name.clone());
    let mut sealed_to = 0;
    for segment in segments {
        sealed_to = segment.last_seq as u64;
        if segment.last_seq as u64 <= after {
            continue;
        }
        if segment
            .grams
            .as_ref()
            .is_some_and(|ix| !grams.may_match(ix))
        {
            scan.skip_segment(segment.last_seq as u64);
            continue;
        }
        if scan.is_full() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            scan.stop();
            return Ok(());
        }
        let params = [job.id.into(), segment.last_seq.into()];
        let Some((data,)) = query_opt::<C, (Vec<u8>,)>(c, &SEGMENT_DATA, &params).await? else {
            continue;
        };
        scan.segment_read();
        let records = match sealed::decode(job.id, segment.first_seq as u64, &data) {
            Ok(records) => records,
            // One damaged segment must not hide every other job's hits.
            Err(e @ StoreError::DamagedLog { .. }) => {
                tracing::error!(error = %e, "a search passed over a damaged log segment");
                scan.segment_unreadable(segment.last_seq as u64);
                continue;
            }
            Err(e) => return Err(e),
        };
        for r in records {
            if !scan.record(&r) {
                return Ok(());
            }
        }
    }
    if job.unsealed && !scan.is_full() {
        let params = [
            job.id.into(),
            (after.max(sealed_to).min(i64::MAX as u64) as i64).into(),
            scan.query().stream_mask().into(),
            candidates.into(),
            Param::Int(i64::MAX),
        ];
        c.each(&SEARCH_ROWS, &params, |r: Record| Ok(scan.record(&r)))
            .await?;
    }
    Ok(())
}
