//! Sealed logs: the parts both stores share. A finished job's log is moved,
//! a slice at a time, from rows into segments (`joblog_core::segment`);
//! each slice is one transaction that deletes the slice's rows and inserts
//! its segment, so every record is always in exactly one of the two
//! forms, and the sealed ones are a prefix of the log: segments hold seqs
//! `1..=S`, rows hold the seqs after `S`.
//!
//! A read runs in one snapshot of the database (a read transaction), finds
//! `S`, then reads the segments it needs and the rows after `S`, and joins
//! them here: the records, pages, searches and outlines are the same as
//! from rows alone. Each store only runs its statements.

use joblog_core::search::build_index;
use joblog_core::segment::{self, SegmentHeader};
use joblog_core::{JobId, LogSearch, Record, SearchHits, Stream};

use crate::outline::OutlineRow;
use crate::{Result, StoreError, MAX_PAGE_BYTES};

/// A segment as a store keeps it beside its blob: the seq range it covers
/// and a mask of the streams it holds (`1 << code`), so that a read can
/// skip it without reading the blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentKey {
    pub first_seq: u64,
    pub last_seq: u64,
    pub streams: i64,
}

impl SegmentKey {
    /// The key of an encoded segment, from its header.
    fn of(job: JobId, header: &SegmentHeader) -> Result<SegmentKey> {
        if header.count == 0 {
            return Err(StoreError::Database(format!(
                "job {job}: an empty log segment is never stored"
            )));
        }
        let streams = Stream::ALL
            .iter()
            .filter(|s| header.streams.get(**s) > 0)
            .fold(0, |m, s| m | (1i64 << s.code()));
        Ok(SegmentKey {
            first_seq: header.first_seq,
            last_seq: header.last_seq(),
            streams,
        })
    }
}

/// The error of a segment that does not decode: the job and where, for the
/// error log; clients get a clean error naming the job.
fn damaged(job: JobId, first_seq: u64, e: &segment::SegmentError) -> StoreError {
    StoreError::DamagedLog {
        job,
        detail: format!("segment from seq {first_seq}: {e}"),
    }
}

/// The records of one stored segment (its blob), checked against where the
/// store says it starts.
pub(crate) fn decode(job: JobId, first_seq: u64, data: &[u8]) -> Result<Vec<Record>> {
    let records = segment::decode(data).map_err(|e| damaged(job, first_seq, &e))?;
    match records.first() {
        Some(r) if r.seq == first_seq => Ok(records),
        _ => Err(StoreError::DamagedLog {
            job,
            detail: format!("segment stored from seq {first_seq} does not start there"),
        }),
    }
}

fn in_mask(r: &Record, mask: i64) -> bool {
    mask & (1i64 << r.stream.code()) != 0
}

/// A page read forwards, filled from segments and then from rows: at most
/// `limit` records, and no more once it holds [`MAX_PAGE_BYTES`] of text
/// (the record that crosses it is the last).
pub(crate) struct Page {
    records: Vec<Record>,
    bytes: usize,
    limit: usize,
}

impl Page {
    pub(crate) fn new(limit: u32) -> Page {
        Page {
            records: Vec::with_capacity((limit as usize).min(10_000)),
            bytes: 0,
            limit: limit as usize,
        }
    }

    pub(crate) fn is_full(&self) -> bool {
        self.records.len() >= self.limit || self.bytes >= MAX_PAGE_BYTES
    }

    /// Adds a record; the caller checks [`Self::is_full`] first.
    pub(crate) fn push(&mut self, r: Record) {
        self.bytes += r.message.len();
        self.records.push(r);
    }

    /// The records of a segment after `after` of the streams in `mask`,
    /// until the page is full.
    pub(crate) fn extend_sealed(&mut self, records: Vec<Record>, after: u64, mask: i64) {
        for r in records {
            if self.is_full() {
                return;
            }
            if r.seq > after && in_mask(&r, mask) {
                self.push(r);
            }
        }
    }

    /// Records still to read.
    pub(crate) fn remaining(&self) -> u32 {
        (self.limit - self.records.len().min(self.limit)) as u32
    }

    /// Text the page may still take before it is full.
    pub(crate) fn bytes_left(&self) -> usize {
        MAX_PAGE_BYTES.saturating_sub(self.bytes)
    }

    pub(crate) fn into_records(self) -> Vec<Record> {
        self.records
    }
}

/// A segment's records before `before` of the streams in `mask`, nearest
/// first: what a page read backwards takes after the rows.
pub(crate) fn backwards(records: Vec<Record>, before: u64, mask: i64) -> Vec<Record> {
    records
        .into_iter()
        .rev()
        .filter(|r| r.seq < before && in_mask(r, mask))
        .collect()
}

/// Whether `nearest` (records before a seq, nearest first) holds all that a
/// page read backwards of `limit` takes, and the one past it that tells
/// whether more remain (as `crate::navigation::earlier_page` reads them).
pub(crate) fn earlier_is_read(nearest: &[Record], limit: u32) -> bool {
    let mut bytes = 0;
    for (n, r) in nearest.iter().enumerate() {
        if n >= limit as usize || bytes >= MAX_PAGE_BYTES {
            return true;
        }
        bytes += r.message.len();
    }
    false
}

/// A search over the sealed part of a log: every match counted, the first
/// `limit` after `after` kept. The rows after the sealed part are searched
/// next, as [`Self::rows_limit`] says, and the two joined by
/// [`Self::join`] or [`Self::join_count`].
pub(crate) struct SealedMatches {
    after: u64,
    limit: usize,
    total: u64,
    seqs: Vec<u64>,
    /// Matches after `after` that the page had no room for.
    beyond: u64,
}

impl SealedMatches {
    pub(crate) fn new(after: u64, limit: u32) -> SealedMatches {
        SealedMatches {
            after,
            limit: limit as usize,
            total: 0,
            seqs: Vec::new(),
            beyond: 0,
        }
    }

    pub(crate) fn add(&mut self, records: &[Record], search: &LogSearch, mask: i64) {
        for r in records {
            if !in_mask(r, mask) || !search.matches(&r.message) {
                continue;
            }
            self.total += 1;
            if r.seq > self.after {
                if self.seqs.len() < self.limit {
                    self.seqs.push(r.seq);
                } else {
                    self.beyond += 1;
                }
            }
        }
    }

    /// How many matches the rows' search is to list (`None`: the page is
    /// full, so the rows' matches only count, all of them after it).
    pub(crate) fn rows_limit(&self) -> Option<u32> {
        (self.seqs.len() < self.limit).then(|| (self.limit - self.seqs.len()) as u32)
    }

    /// The hits, given the rows' own search with [`Self::rows_limit`]
    /// after the same seq: every sealed match after `after` is listed, so
    /// whether more follow is the rows' to say.
    pub(crate) fn join(mut self, rows: SearchHits) -> SearchHits {
        self.seqs.extend(rows.seqs);
        SearchHits {
            total: self.total + rows.total,
            seqs: self.seqs,
            more: rows.more,
        }
    }

    /// The hits, given the count of every match in the rows (all after the
    /// sealed part, so after the page).
    pub(crate) fn join_count(self, rows_total: u64) -> SearchHits {
        SearchHits {
            total: self.total + rows_total,
            more: self.beyond + rows_total > 0,
            seqs: self.seqs,
        }
    }
}

/// A sealed record as an outline row: only the outline's streams (in
/// `read_mask`), with text and fields for those in `text_mask`.
pub(crate) fn outline_rows(
    records: Vec<Record>,
    read_mask: i64,
    text_mask: i64,
) -> impl Iterator<Item = OutlineRow> {
    records
        .into_iter()
        .filter(move |r| in_mask(r, read_mask))
        .map(move |r| {
            let text = in_mask(&r, text_mask);
            OutlineRow {
                seq: r.seq as i64,
                ts: r.ts.micros(),
                stream: i64::from(r.stream.code()),
                fields: r
                    .fields
                    .as_ref()
                    .filter(|_| text)
                    .map(|f| serde_json::Value::Object(f.clone()).to_string()),
                message: text.then_some(r.message),
            }
        })
}

/// Records per segment at most. Measured (docs/segments.md): smaller
/// segments cost bytes (250 records: ~35 % more per record on short
/// lines), larger ones gain little (4,000: within 5 %) and make a page
/// decode more than it returns.
pub const SEGMENT_RECORDS: u32 = 1_000;

/// Message text per segment at most (the segment that crosses it ends
/// there, at least one record each): a page of long lines decodes a
/// bounded block.
pub const SEGMENT_TEXT_BYTES: usize = 256 * 1024;

/// What sealing one slice of a job's log asks of the writer: the segment,
/// and what it replaces (checked: the rows of its seqs must all be there).
#[derive(Debug, Clone)]
pub struct SealSlice {
    pub job: JobId,
    pub key: SegmentKey,
    pub data: Vec<u8>,
    /// The segment's text index (`None`: too small for one).
    pub grams: Option<Vec<u8>>,
    /// Text and fields (JSON) of its records: the log's bytes before.
    pub raw_bytes: u64,
}

impl SealSlice {
    /// Encodes `records` (consecutive seqs of `job`) as one segment, and
    /// the index of their text.
    pub fn encode(job: JobId, records: &[Record]) -> Result<SealSlice> {
        let data = segment::encode(records)
            .map_err(|e| StoreError::Database(format!("job {job}: cannot seal its log: {e}")))?;
        let header = SegmentHeader::parse(&data).map_err(|e| damaged(job, 0, &e))?;
        let key = SegmentKey::of(job, &header)?;
        let grams = build_index(records.iter().map(|r| r.message.as_str()), data.len());
        Ok(SealSlice {
            job,
            key,
            data,
            grams,
            raw_bytes: header.text_bytes + header.fields_bytes,
        })
    }

    /// Rows the slice replaces.
    pub fn records(&self) -> u64 {
        self.key.last_seq - self.key.first_seq + 1
    }
}

#[cfg(test)]
mod tests {
    use joblog_core::Timestamp;

    use super::*;

    fn rec(seq: u64, stream: Stream, message: &str) -> Record {
        Record {
            seq,
            ts: Timestamp(seq as i64),
            stream,
            message: message.into(),
            fields: None,
        }
    }

    #[test]
    fn a_key_says_the_seqs_and_streams_of_its_segment() {
        let records = [
            rec(5, Stream::Output, "a"),
            rec(6, Stream::Error, "b"),
            rec(7, Stream::Output, "c"),
        ];
        let slice = SealSlice::encode(3, &records).unwrap();
        assert_eq!(
            slice.key,
            SegmentKey {
                first_seq: 5,
                last_seq: 7,
                streams: 0b11
            }
        );
        assert_eq!(slice.records(), 3);
        assert_eq!(decode(3, 5, &slice.data).unwrap(), records);
    }

    #[test]
    fn a_damaged_segment_is_an_error_naming_its_job() {
        let slice = SealSlice::encode(3, &[rec(1, Stream::Output, "a")]).unwrap();
        let mut bad = slice.data.clone();
        let last = bad.len() - 1;
        bad[last] ^= 0xff;
        match decode(3, 1, &bad) {
            Err(StoreError::DamagedLog { job: 3, detail }) => {
                assert!(detail.contains("seq 1"), "{detail}")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            decode(3, 2, &slice.data),
            Err(StoreError::DamagedLog { job: 3, .. })
        ));
    }

    #[test]
    fn a_page_takes_sealed_records_after_the_seq_of_its_streams() {
        let records: Vec<Record> = (1..=10)
            .map(|s| {
                let stream = if s % 2 == 0 {
                    Stream::Error
                } else {
                    Stream::Output
                };
                rec(s, stream, "x")
            })
            .collect();
        let mut page = Page::new(3);
        page.extend_sealed(records.clone(), 2, 1 << Stream::Error.code());
        let seqs: Vec<u64> = page.into_records().iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [4, 6, 8]);
        let mut page = Page::new(100);
        page.extend_sealed(records, 8, 0x7f);
        assert_eq!((page.remaining(), page.is_full()), (98, false));
    }

    #[test]
    fn a_page_stops_after_the_record_that_fills_its_bytes() {
        let big = "x".repeat(MAX_PAGE_BYTES / 2 + 1);
        let records: Vec<Record> = (1..=5).map(|s| rec(s, Stream::Output, &big)).collect();
        let mut page = Page::new(100);
        page.extend_sealed(records, 0, 0x7f);
        assert!(page.is_full());
        assert_eq!(page.bytes_left(), 0);
        assert_eq!(page.into_records().len(), 2);
    }

    #[test]
    fn backwards_keeps_the_records_before_nearest_first() {
        let records: Vec<Record> = (1..=5).map(|s| rec(s, Stream::Output, "x")).collect();
        let seqs: Vec<u64> = backwards(records, 4, 0x7f).iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [3, 2, 1]);
    }

    #[test]
    fn a_search_joins_sealed_matches_with_the_rows() {
        let search = LogSearch::new("hit").unwrap();
        let records: Vec<Record> = (1..=10)
            .map(|s| rec(s, Stream::Output, if s % 3 == 0 { "a HIT" } else { "miss" }))
            .collect();
        // Matches 3, 6, 9; a page of 2 after seq 3 is full with 6 and 9.
        let mut m = SealedMatches::new(3, 2);
        m.add(&records, &search, 0x7f);
        assert_eq!(m.rows_limit(), None);
        let hits = m.join_count(4);
        assert_eq!((hits.total, hits.seqs, hits.more), (7, vec![6, 9], true));
        let mut m = SealedMatches::new(3, 5);
        m.add(&records, &search, 0x7f);
        assert_eq!(m.rows_limit(), Some(3));
        let rows = SearchHits {
            total: 2,
            seqs: vec![12, 15],
            more: false,
        };
        let hits = m.join(rows);
        assert_eq!(
            (hits.total, hits.seqs, hits.more),
            (5, vec![6, 9, 12, 15], false)
        );
        let mut m = SealedMatches::new(9, 1);
        m.add(&records, &search, 0x7f);
        let hits = m.join_count(0);
        assert_eq!((hits.total, hits.seqs, hits.more), (3, vec![], false));
    }
}
