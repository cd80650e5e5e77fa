//! Sealed log segments (docs/segments.md): a run of one job's consecutive
//! records in one compact, versioned block. The header is plain (version,
//! seq range, per-stream counts, sizes) so a reader can skip a segment
//! without decompressing it; the body is the records' columns (timestamp
//! deltas, streams, lengths) followed by their text and fields, compressed
//! together with zstd.
//!
//! Decoding never panics: a damaged segment is a [`SegmentError`] naming
//! what was wrong.

use serde_json::{Map, Value};

use crate::{Record, Stream, StreamCounts, Timestamp};

/// The format this code writes. Every version it ever wrote keeps
/// decoding (a checked-in fixture of each is tested).
pub const VERSION: u8 = 1;

/// The first bytes of every segment.
const MAGIC: &[u8; 3] = b"JLS";

/// zstd level of the body (chosen by `joblog bench`, docs/benchmarks.md).
const LEVEL: i32 = 3;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SegmentError {
    #[error("not a log segment (no JLS magic)")]
    Magic,
    #[error("log segment version {0} is newer than this joblog reads (up to {VERSION})")]
    Version(u8),
    #[error("log segment cut short in its {0}")]
    Truncated(&'static str),
    #[error("log segment damaged: {0}")]
    Corrupt(String),
}

/// What a segment says of itself without being decompressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentHeader {
    pub version: u8,
    pub first_seq: u64,
    /// Records in the segment: seqs `first_seq..first_seq + count`.
    pub count: u64,
    pub streams: StreamCounts,
    /// Bytes of message text, all records.
    pub text_bytes: u64,
    /// Bytes of the records' fields as JSON, all records.
    pub fields_bytes: u64,
    /// Bytes of the compressed body that follows the header.
    body_bytes: u64,
    /// Where the body starts.
    body_at: usize,
}

impl SegmentHeader {
    /// The last seq in the segment (`first_seq - 1` when empty).
    pub fn last_seq(&self) -> u64 {
        self.first_seq + self.count - 1
    }

    /// Reads the header of `bytes` (a whole segment).
    pub fn parse(bytes: &[u8]) -> Result<SegmentHeader, SegmentError> {
        if bytes.len() < 4 || &bytes[..3] != MAGIC {
            return Err(SegmentError::Magic);
        }
        let version = bytes[3];
        if version == 0 || version > VERSION {
            return Err(SegmentError::Version(version));
        }
        let mut r = Reader {
            bytes,
            at: 4,
            part: "header",
        };
        let first_seq = r.varint()?;
        let count = r.varint()?;
        let mut streams = StreamCounts::default();
        for s in Stream::ALL {
            let n = r.varint()?;
            streams.add(s, n);
        }
        let text_bytes = r.varint()?;
        let fields_bytes = r.varint()?;
        let body_bytes = r.varint()?;
        if first_seq == 0 || first_seq.checked_add(count).is_none() {
            return Err(SegmentError::Corrupt(format!(
                "seq range {first_seq} + {count}"
            )));
        }
        let total = streams.0.iter().try_fold(0u64, |a, n| a.checked_add(*n));
        if total != Some(count) {
            return Err(SegmentError::Corrupt(format!(
                "stream counts do not add up to {count}"
            )));
        }
        if (bytes.len() - r.at) as u64 != body_bytes {
            return Err(SegmentError::Truncated("body"));
        }
        Ok(SegmentHeader {
            version,
            first_seq,
            count,
            streams,
            text_bytes,
            fields_bytes,
            body_bytes,
            body_at: r.at,
        })
    }
}

/// zstd contexts kept between segments. A fresh compression context is
/// megabytes of newly mapped memory, faulted in and zeroed for every
/// segment, then unmapped (on a busy server, page faults and TLB
/// shootdowns were a fifth of its samples while it sealed); a few kept in
/// a pool are taken and given back instead.
mod contexts {
    use std::sync::Mutex;

    use super::{SegmentError, LEVEL};

    /// Contexts kept, each kind: about as many as segments are encoded or
    /// decoded at once on a busy node; more are made when needed and
    /// dropped after.
    const KEPT: usize = 8;

    static COMPRESSORS: Mutex<Vec<zstd::bulk::Compressor<'static>>> = Mutex::new(Vec::new());
    static DECOMPRESSORS: Mutex<Vec<zstd::bulk::Decompressor<'static>>> = Mutex::new(Vec::new());

    fn take<T>(pool: &Mutex<Vec<T>>) -> Option<T> {
        pool.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    fn give_back<T>(pool: &Mutex<Vec<T>>, t: T) {
        let mut kept = pool.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() < KEPT {
            kept.push(t);
        }
    }

    pub(super) fn compress(body: &[u8]) -> Result<Vec<u8>, SegmentError> {
        let zstd = |e: std::io::Error| SegmentError::Corrupt(format!("zstd: {e}"));
        let mut c = match take(&COMPRESSORS) {
            Some(c) => c,
            None => zstd::bulk::Compressor::new(LEVEL).map_err(zstd)?,
        };
        let out = c.compress(body).map_err(zstd)?;
        give_back(&COMPRESSORS, c);
        Ok(out)
    }

    pub(super) fn decompress(body: &[u8], bound: usize) -> Result<Vec<u8>, SegmentError> {
        let zstd = |e: std::io::Error| SegmentError::Corrupt(format!("body: {e}"));
        let mut d = match take(&DECOMPRESSORS) {
            Some(d) => d,
            None => zstd::bulk::Decompressor::new().map_err(zstd)?,
        };
        let out = d.decompress(body, bound).map_err(zstd)?;
        give_back(&DECOMPRESSORS, d);
        Ok(out)
    }
}

/// Encodes `records`: consecutive seqs of one job, in order (checked).
pub fn encode(records: &[Record]) -> Result<Vec<u8>, SegmentError> {
    let first_seq = records.first().map_or(1, |r| r.seq);
    let mut streams = StreamCounts::default();
    let mut columns = Vec::with_capacity(records.len() * 4);
    let mut text = Vec::new();
    let mut fields = Vec::new();
    let mut last_ts = 0i64;
    for (i, r) in records.iter().enumerate() {
        if r.seq != first_seq + i as u64 {
            return Err(SegmentError::Corrupt(format!(
                "record {i} has seq {}, not {}",
                r.seq,
                first_seq + i as u64
            )));
        }
        streams.add(r.stream, 1);
        put_varint(&mut columns, zigzag(r.ts.0.wrapping_sub(last_ts)));
        last_ts = r.ts.0;
        columns.push(r.stream.code());
        put_varint(&mut columns, r.message.len() as u64);
        text.extend_from_slice(r.message.as_bytes());
        match &r.fields {
            None => put_varint(&mut columns, 0),
            Some(map) => {
                let json = serde_json::to_vec(map)
                    .map_err(|e| SegmentError::Corrupt(format!("fields: {e}")))?;
                put_varint(&mut columns, json.len() as u64 + 1);
                fields.extend_from_slice(&json);
            }
        }
    }
    let mut body = columns;
    body.extend_from_slice(&text);
    body.extend_from_slice(&fields);
    let compressed = contexts::compress(&body)?;
    let mut out = Vec::with_capacity(compressed.len() + 32);
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    put_varint(&mut out, first_seq);
    put_varint(&mut out, records.len() as u64);
    for s in Stream::ALL {
        put_varint(&mut out, streams.get(s));
    }
    put_varint(&mut out, text.len() as u64);
    put_varint(&mut out, fields.len() as u64);
    put_varint(&mut out, compressed.len() as u64);
    out.extend_from_slice(&compressed);
    Ok(out)
}

/// Decodes a whole segment into its records.
pub fn decode(bytes: &[u8]) -> Result<Vec<Record>, SegmentError> {
    let h = SegmentHeader::parse(bytes)?;
    // The most the body can be: per record at most 10 + 1 + 10 + 10 bytes
    // of columns, plus the text and fields the header announces.
    let bound = h
        .count
        .checked_mul(31)
        .and_then(|c| c.checked_add(h.text_bytes))
        .and_then(|c| c.checked_add(h.fields_bytes))
        .filter(|b| *b <= isize::MAX as u64 / 2)
        .ok_or_else(|| SegmentError::Corrupt("sizes out of range".into()))?;
    let body = contexts::decompress(&bytes[h.body_at..], bound as usize)?;
    let mut r = Reader {
        bytes: &body,
        at: 0,
        part: "columns",
    };
    struct Column {
        ts: i64,
        stream: Stream,
        len: usize,
        fields: usize,
    }
    let mut cols = Vec::with_capacity(h.count.min(1 << 20) as usize);
    let mut ts = 0i64;
    for _ in 0..h.count {
        ts = ts.wrapping_add(unzigzag(r.varint()?));
        let code = r.byte()?;
        let stream = Stream::from_code(i64::from(code))
            .ok_or_else(|| SegmentError::Corrupt(format!("stream code {code}")))?;
        let len = r.length()?;
        let fields = r.length()?;
        cols.push(Column {
            ts,
            stream,
            len,
            fields,
        });
    }
    let text_len: u64 = cols.iter().map(|c| c.len as u64).sum();
    let fields_len: u64 = cols.iter().map(|c| c.fields.saturating_sub(1) as u64).sum();
    if text_len != h.text_bytes || fields_len != h.fields_bytes {
        return Err(SegmentError::Corrupt(
            "lengths differ from the header".into(),
        ));
    }
    if (body.len() - r.at) as u64 != text_len + fields_len {
        return Err(SegmentError::Truncated("text"));
    }
    let mut text_at = r.at;
    let mut fields_at = r.at + text_len as usize;
    let mut out = Vec::with_capacity(cols.len());
    for (i, c) in cols.into_iter().enumerate() {
        let message = std::str::from_utf8(&body[text_at..text_at + c.len])
            .map_err(|e| SegmentError::Corrupt(format!("record {i}'s text: {e}")))?
            .to_string();
        text_at += c.len;
        let fields = match c.fields {
            0 => None,
            n => {
                let json = &body[fields_at..fields_at + n - 1];
                fields_at += n - 1;
                Some(
                    serde_json::from_slice::<Map<String, Value>>(json)
                        .map_err(|e| SegmentError::Corrupt(format!("record {i}'s fields: {e}")))?,
                )
            }
        };
        out.push(Record {
            seq: h.first_seq + i as u64,
            ts: Timestamp(c.ts),
            stream: c.stream,
            message,
            fields,
        });
    }
    Ok(out)
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    part: &'static str,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, SegmentError> {
        let b = *self
            .bytes
            .get(self.at)
            .ok_or(SegmentError::Truncated(self.part))?;
        self.at += 1;
        Ok(b)
    }

    /// LEB128, at most 10 bytes.
    fn varint(&mut self) -> Result<u64, SegmentError> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                break;
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(SegmentError::Corrupt(format!(
            "a number in its {} is too long",
            self.part
        )))
    }

    /// A varint that must fit in memory.
    fn length(&mut self) -> Result<usize, SegmentError> {
        let v = self.varint()?;
        usize::try_from(v)
            .ok()
            .filter(|n| *n as u64 <= self.bytes.len() as u64 + 1)
            .ok_or_else(|| SegmentError::Corrupt(format!("a length of {v} in its {}", self.part)))
    }
}

#[cfg(test)]
mod tests;
