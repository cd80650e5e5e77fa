//! Reading a log backwards and searching it: the parts both stores share.
//! Where a page read backwards is cut, and what a search has left to count
//! once its page is read, are decided here; each store only runs its
//! statements.
//!
//! No index serves these statements beyond the log's primary key
//! `(job_id, seq)`, on purpose: each is a range scan of one job's log, the
//! stream and the text checked on every row. Measured on SQLite over one
//! job of 1,000,000 records, a stream filter costs ~50 ms (the viewer's
//! first error is due within 200 ms) and matching text ~170 ms with `LIKE`,
//! about twice that with the `instr(lower(…))` searches use (`LIKE` stops at
//! a NUL byte); PostgreSQL's search ~0.3 s. An index on stream or text
//! would tax every insert of the ingest path for reads that are within
//! their budgets without it.

use joblog_core::{EarlierPage, Record, SearchHits};

use crate::{Result, MAX_PAGE_BYTES};

/// A seq as the databases compare it: one past `i64::MAX` is past every
/// seq anyway.
pub(crate) fn seq_bound(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

/// The page read backwards from rows newest first: the `limit` nearest
/// (fewer once they hold [`MAX_PAGE_BYTES`] of text, at least one), in seq
/// order. One row more is read, if there is one, to tell whether earlier
/// records remain, so a store asks for `limit + 1` rows, or reads them
/// lazily and stops there.
pub(crate) fn earlier_page(
    rows: impl IntoIterator<Item = Result<Record>>,
    limit: u32,
) -> Result<EarlierPage> {
    let mut rows = rows.into_iter();
    let mut records = Vec::new();
    let mut bytes = 0;
    let mut more = false;
    for row in rows.by_ref() {
        let record = row?;
        if records.len() >= limit as usize || bytes >= MAX_PAGE_BYTES {
            more = true;
            break;
        }
        bytes += record.message.len();
        records.push(record);
    }
    records.reverse();
    Ok(EarlierPage { records, more })
}

/// A search's page as read (the seqs of the first matches after
/// `after_seq`), and what is left to count for its total: the matches up
/// to `after_seq`, and those after the page when it stopped at its limit.
/// A page that did not fill has read to the end of the log, so the two
/// counts and the page together are one pass over it.
pub(crate) struct SearchPage {
    after: i64,
    seqs: Vec<u64>,
    full: bool,
}

/// `(from, to]`: a range of seqs to count matches in.
pub(crate) type SeqRange = (i64, i64);

impl SearchPage {
    pub(crate) fn new(after_seq: u64, seqs: Vec<u64>, limit: u32) -> SearchPage {
        SearchPage {
            after: seq_bound(after_seq),
            full: seqs.len() >= limit as usize,
            seqs,
        }
    }

    /// The matches before the page are still to count.
    pub(crate) fn before(&self) -> Option<SeqRange> {
        (self.after > 0).then_some((0, self.after))
    }

    /// The matches after the page are still to count (it stopped at its
    /// limit).
    pub(crate) fn after(&self) -> Option<SeqRange> {
        match self.seqs.last() {
            Some(&last) if self.full => Some((seq_bound(last), i64::MAX)),
            _ => None,
        }
    }

    /// The hits, given the matches counted in [`Self::before`] and
    /// [`Self::after`] (0 for a range not to count).
    pub(crate) fn hits(self, before: u64, after: u64) -> SearchHits {
        SearchHits {
            total: before + self.seqs.len() as u64 + after,
            seqs: self.seqs,
            more: after > 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use joblog_core::{Stream, Timestamp};

    use super::*;

    fn rec(seq: u64, bytes: usize) -> Result<Record> {
        Ok(Record {
            seq,
            ts: Timestamp(0),
            stream: Stream::Output,
            message: "x".repeat(bytes),
            fields: None,
        })
    }

    fn seqs(p: &EarlierPage) -> Vec<u64> {
        p.records.iter().map(|r| r.seq).collect()
    }

    #[test]
    fn an_earlier_page_keeps_the_nearest_records_and_tells_whether_more_remain() {
        let page = earlier_page((1..=9).rev().map(|s| rec(s, 1)), 3).unwrap();
        assert_eq!((seqs(&page), page.more), (vec![7, 8, 9], true));
        let page = earlier_page((1..=3).rev().map(|s| rec(s, 1)), 3).unwrap();
        assert_eq!((seqs(&page), page.more), (vec![1, 2, 3], false));
        let page = earlier_page(std::iter::empty(), 3).unwrap();
        assert_eq!((seqs(&page), page.more), (vec![], false));
    }

    #[test]
    fn an_earlier_page_stops_after_the_record_that_fills_it() {
        let half = MAX_PAGE_BYTES / 2;
        let page = earlier_page((1..=9).rev().map(|s| rec(s, half + 1)), 100).unwrap();
        assert_eq!((seqs(&page), page.more), (vec![8, 9], true));
        let huge = earlier_page([rec(5, 2 * MAX_PAGE_BYTES), rec(4, 1)], 100).unwrap();
        assert_eq!((seqs(&huge), huge.more), (vec![5], true), "at least one");
    }

    #[test]
    fn an_earlier_page_reads_one_row_past_it_at_most() {
        let mut read = 0;
        let rows = (1..=1000).rev().map(|s| {
            read += 1;
            rec(s, 1)
        });
        earlier_page(rows, 10).unwrap();
        assert_eq!(read, 11);
    }

    #[test]
    fn a_search_counts_what_its_page_did_not_read() {
        let first = SearchPage::new(0, vec![3, 5], 10);
        assert_eq!((first.before(), first.after()), (None, None));
        assert_eq!(
            first.hits(0, 0),
            SearchHits {
                total: 2,
                seqs: vec![3, 5],
                more: false
            }
        );
        let full = SearchPage::new(4, vec![5, 9], 2);
        assert_eq!(
            (full.before(), full.after()),
            (Some((0, 4)), Some((9, i64::MAX)))
        );
        let hits = full.hits(1, 6);
        assert_eq!((hits.total, hits.more), (9, true));
        let last = SearchPage::new(9, vec![], 2);
        assert_eq!((last.before(), last.after()), (Some((0, 9)), None));
        assert_eq!(
            SearchPage::new(u64::MAX, vec![], 1).before(),
            Some((0, i64::MAX))
        );
    }
}
