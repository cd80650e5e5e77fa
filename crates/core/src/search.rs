//! A search across every job's log: what it asks ([`SearchQuery`]: a
//! pattern, the jobs' filters, streams), where a page stopped
//! ([`SearchCursor`]), what it answers ([`SearchPage`]), and [`Scan`], the
//! bookkeeping of one page that the stores feed with records, newest job
//! first and each job's records in seq order.
//!
//! `grams`: the text index of a sealed segment and what a pattern
//! requires of it; `pattern`: literal text or a regular expression.

mod grams;
mod pattern;

use serde::Serialize;

pub use grams::{build_index, Grams, MAX_SHARE_PERCENT};
pub use pattern::SearchPattern;

use crate::job::{invalid, ValidationError};
use crate::{JobId, JobQuery, Record, Stream, Timestamp};

/// Hits a page holds by default, and at most.
pub const DEFAULT_SEARCH_LIMIT: u32 = 100;
pub const MAX_SEARCH_LIMIT: u32 = 1_000;

/// Message text a page holds at most (the hit that crosses it is the
/// last), as a log page.
const MAX_HIT_BYTES: usize = 1 << 20;

/// What to find, and where.
#[derive(Debug, Clone)]
pub struct SearchQuery {
    pub pattern: SearchPattern,
    /// Which jobs: a listing's filters (its `limit` and `before_id` are
    /// the search's own business).
    pub jobs: JobQuery,
    /// Records of these streams only; `None`: all.
    pub streams: Option<Vec<Stream>>,
}

impl SearchQuery {
    /// Whether a record's stream is searched.
    fn wants(&self, stream: Stream) -> bool {
        self.streams.as_ref().is_none_or(|s| s.contains(&stream))
    }

    /// The streams searched as a mask (`1 << code`), as the stores keep
    /// them beside segments.
    pub fn stream_mask(&self) -> i64 {
        match &self.streams {
            None => Stream::ALL.iter().fold(0, |m, s| m | (1i64 << s.code())),
            Some(list) => list.iter().fold(0, |m, s| m | (1i64 << s.code())),
        }
    }
}

/// Where a page stopped: in job `job`, after seq `after_seq` (`None`:
/// after the whole job), with `jobs_matched` jobs holding hits so far
/// (`job_matched`: whether `job` is one of them). Written as
/// `JOB-SEQ-MATCHED-0|1` (`JOB-end-…` after a whole job).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchCursor {
    pub job: JobId,
    pub after_seq: Option<u64>,
    pub jobs_matched: u64,
    pub job_matched: bool,
}

impl SearchCursor {
    pub fn parse(text: &str) -> Result<SearchCursor, ValidationError> {
        let bad = || {
            invalid(
                "cursor",
                format!("{text:?} is not a search's next_cursor (pass it back as given)"),
            )
        };
        let parts: Vec<&str> = text.split('-').collect();
        let [job, seq, matched, flag] = parts.as_slice() else {
            return Err(bad());
        };
        let job: JobId = job.parse().map_err(|_| bad())?;
        let after_seq = match *seq {
            "end" => None,
            s => Some(s.parse::<u64>().map_err(|_| bad())?),
        };
        let jobs_matched = matched.parse::<u64>().map_err(|_| bad())?;
        let job_matched = match *flag {
            "0" => false,
            "1" => true,
            _ => return Err(bad()),
        };
        if job < 1 {
            return Err(bad());
        }
        Ok(SearchCursor {
            job,
            after_seq,
            jobs_matched,
            job_matched,
        })
    }
}

impl std::fmt::Display for SearchCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.after_seq {
            Some(s) => write!(f, "{}-{s}-", self.job)?,
            None => write!(f, "{}-end-", self.job)?,
        }
        write!(f, "{}-{}", self.jobs_matched, u8::from(self.job_matched))
    }
}

impl Serialize for SearchCursor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A record that matched, and its job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    pub job_id: JobId,
    pub job_name: Option<String>,
    pub seq: u64,
    pub ts: Timestamp,
    pub stream: Stream,
    pub message: String,
}

/// What one page read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Scanned {
    /// Jobs whose log it read (some of it).
    pub jobs: u64,
    /// Segments it decompressed.
    pub segments: u64,
    /// Segments their text index ruled out.
    pub skipped_by_index: u64,
    /// Segments that failed their checks, so were not searched (the
    /// server's error log names them); the rest of their job's log was.
    pub unreadable: u64,
}

/// One page of a search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchPage {
    /// Newest job first; a job's hits in seq order.
    pub hits: Vec<SearchHit>,
    /// Jobs holding hits, once the search reached the end (`null` while
    /// pages remain).
    pub jobs_matched: Option<u64>,
    /// Where the next page starts; `null` at the end.
    pub next_cursor: Option<SearchCursor>,
    pub scanned: Scanned,
}

/// The job a page is in.
struct Current {
    id: JobId,
    name: Option<String>,
    /// Seqs up to this one are read.
    read_to: u64,
    matched: bool,
}

/// One page of a search, as it is read: the store lists jobs (newest
/// first, from [`Scan::jobs_before`]), and for each calls
/// [`Scan::start_job`], feeds its records after the seq that returns
/// ([`Scan::record`]; segments the index rules out with
/// [`Scan::skip_segment`]) and calls [`Scan::end_job`], until
/// [`Scan::is_full`] or no job remains.
pub struct Scan<'q> {
    query: &'q SearchQuery,
    resume: Option<SearchCursor>,
    limit: usize,
    hits: Vec<SearchHit>,
    bytes: usize,
    jobs_matched: u64,
    current: Option<Current>,
    /// The last job read to its end.
    done: Option<JobId>,
    scanned: Scanned,
    /// Records a page may still read.
    work_left: u64,
    stopped: bool,
}

impl<'q> Scan<'q> {
    /// A page of `limit` hits at most, reading at most `max_records`
    /// records, from `cursor` (the start without one).
    pub fn new(
        query: &'q SearchQuery,
        cursor: Option<SearchCursor>,
        limit: u32,
        max_records: u64,
    ) -> Scan<'q> {
        Scan {
            query,
            resume: cursor,
            limit: limit.clamp(1, MAX_SEARCH_LIMIT) as usize,
            hits: Vec::new(),
            bytes: 0,
            jobs_matched: cursor.map_or(0, |c| c.jobs_matched),
            current: None,
            done: None,
            scanned: Scanned::default(),
            work_left: max_records.max(1),
            stopped: false,
        }
    }

    pub fn query(&self) -> &SearchQuery {
        self.query
    }

    /// The jobs still to read have ids below this (`None`: any).
    pub fn jobs_before(&self) -> Option<JobId> {
        if let Some(done) = self.done {
            return Some(done);
        }
        match self.resume {
            None => None,
            Some(c) if c.after_seq.is_none() => Some(c.job),
            Some(c) => Some(c.job.saturating_add(1)),
        }
    }

    /// Begins reading job `id`: its records after the seq returned are to
    /// be fed.
    pub fn start_job(&mut self, id: JobId, name: Option<String>) -> u64 {
        self.scanned.jobs += 1;
        let (read_to, matched) = match self.resume.take() {
            Some(c) if c.job == id => (c.after_seq.unwrap_or(u64::MAX), c.job_matched),
            _ => (0, false),
        };
        self.current = Some(Current {
            id,
            name,
            read_to,
            matched,
        });
        read_to
    }

    /// A segment up to `last_seq` that cannot hold a match.
    pub fn skip_segment(&mut self, last_seq: u64) {
        self.scanned.skipped_by_index += 1;
        if self.stopped {
            return;
        }
        if let Some(c) = &mut self.current {
            c.read_to = c.read_to.max(last_seq);
        }
    }

    /// A segment read (before its records are fed).
    pub fn segment_read(&mut self) {
        self.scanned.segments += 1;
    }

    /// A segment up to `last_seq` that does not decode: passed over.
    pub fn segment_unreadable(&mut self, last_seq: u64) {
        self.scanned.unreadable += 1;
        if let (false, Some(c)) = (self.stopped, &mut self.current) {
            c.read_to = c.read_to.max(last_seq);
        }
    }

    /// The next record of the current job; `false` once the page is full
    /// (the record is then the last one read).
    pub fn record(&mut self, r: &Record) -> bool {
        let Some(c) = &mut self.current else {
            return false;
        };
        if r.seq <= c.read_to {
            return true;
        }
        if self.stopped {
            return false;
        }
        c.read_to = r.seq;
        self.work_left = self.work_left.saturating_sub(1);
        if self.query.wants(r.stream) && self.query.pattern.matches(&r.message) {
            if !c.matched {
                c.matched = true;
                self.jobs_matched += 1;
            }
            self.bytes += r.message.len();
            self.hits.push(SearchHit {
                job_id: c.id,
                job_name: c.name.clone(),
                seq: r.seq,
                ts: r.ts,
                stream: r.stream,
                message: r.message.clone(),
            });
        }
        if self.hits.len() >= self.limit || self.bytes >= MAX_HIT_BYTES || self.work_left == 0 {
            self.stopped = true;
        }
        !self.stopped
    }

    /// The current job is read to its end (unless the page filled).
    pub fn end_job(&mut self) {
        if self.stopped {
            return;
        }
        if let Some(c) = self.current.take() {
            self.done = Some(c.id);
        }
    }

    /// Stops the page where it is (its time is up).
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    pub fn is_full(&self) -> bool {
        self.stopped
    }

    /// The page; `exhausted` when no job remained to read.
    pub fn finish(self, exhausted: bool) -> SearchPage {
        let next_cursor = if exhausted && self.current.is_none() {
            None
        } else if let Some(c) = &self.current {
            Some(SearchCursor {
                job: c.id,
                after_seq: Some(c.read_to),
                jobs_matched: self.jobs_matched,
                job_matched: c.matched,
            })
        } else if let Some(done) = self.done {
            Some(SearchCursor {
                job: done,
                after_seq: None,
                jobs_matched: self.jobs_matched,
                job_matched: false,
            })
        } else {
            // Stopped before reading any job: start where it was asked to.
            self.resume
        };
        SearchPage {
            jobs_matched: next_cursor.is_none().then_some(self.jobs_matched),
            hits: self.hits,
            next_cursor,
            scanned: self.scanned,
        }
    }
}

#[cfg(test)]
mod tests;
