//! The per-job log cap (docs/durability.md): records are published at once while they
//! fit the head; past it only the most recent ones are kept, and at the end
//! of the job one marker record says what was dropped before that tail.
//!
//! Seqs are assigned here, on publishing, so the stored log is gapless
//! whatever the cap dropped.

use std::collections::VecDeque;

use joblog_core::{LogSummary, Record, Stream, Timestamp};
use serde_json::Map;

use super::mask::Masker;
use super::LogLimits;

/// Counts what was published and holds the tail once over the head.
#[derive(Debug)]
pub(super) struct LogCap {
    /// With the tail bounds clamped to the totals.
    limits: LogLimits,
    summary: LogSummary,
    /// Below these counts records are emitted at once; past them they wait in `tail`.
    head_records: u64,
    head_bytes: u64,
    /// Set once a record went to `tail`, so later records never overtake it.
    tailing: bool,
    tail: VecDeque<Record>,
    tail_len_bytes: usize,
    dropped_records: u64,
    dropped_bytes: u64,
}

impl LogCap {
    pub(super) fn new(limits: LogLimits) -> Self {
        let mut limits = limits;
        limits.tail_records = limits
            .tail_records
            .min(usize::try_from(limits.max_records).unwrap_or(usize::MAX));
        limits.tail_bytes = limits
            .tail_bytes
            .min(usize::try_from(limits.max_bytes).unwrap_or(usize::MAX));
        LogCap {
            head_records: limits.max_records - limits.tail_records as u64,
            head_bytes: limits.max_bytes - limits.tail_bytes as u64,
            limits,
            summary: LogSummary::default(),
            tailing: false,
            tail: VecDeque::new(),
            tail_len_bytes: 0,
            dropped_records: 0,
            dropped_bytes: 0,
        }
    }

    /// Counters of the records published so far.
    pub(super) fn summary(&self) -> LogSummary {
        self.summary
    }

    /// Publishes `record` (masked already) if it fits the head, or keeps it
    /// in the tail.
    pub(super) fn offer(&mut self, record: Record, out: &mut Vec<Record>) {
        let len = record.message.len() as u64;
        if !self.tailing
            && self.summary.records < self.head_records
            && self.summary.bytes + len <= self.head_bytes
        {
            self.publish(record, out);
            return;
        }
        // Over the head of the log: keep only the most recent records, whose
        // seqs are assigned at `finish` so the stored log stays gapless.
        self.tailing = true;
        self.tail_len_bytes += record.message.len();
        self.tail.push_back(record);
        while self.tail.len() > self.limits.tail_records
            || self.tail_len_bytes > self.limits.tail_bytes
        {
            let Some(old) = self.tail.pop_front() else {
                break;
            };
            self.tail_len_bytes -= old.message.len();
            self.dropped_records += 1;
            self.dropped_bytes += old.message.len() as u64;
            self.summary.truncated = true;
        }
    }

    /// End of the job: if records were dropped, the truncation marker, then
    /// the kept tail.
    pub(super) fn finish(&mut self, ts: Timestamp, masker: &mut Masker, out: &mut Vec<Record>) {
        if self.dropped_records > 0 {
            let marker = self.truncation_marker(ts, masker);
            self.publish(marker, out);
            self.dropped_records = 0;
            self.dropped_bytes = 0;
        }
        while let Some(record) = self.tail.pop_front() {
            self.publish(record, out);
        }
        self.tail_len_bytes = 0;
    }

    fn publish(&mut self, mut record: Record, out: &mut Vec<Record>) {
        self.summary.records += 1;
        record.seq = self.summary.records;
        self.summary.bytes += record.message.len() as u64;
        self.summary.streams.add(record.stream, 1);
        out.push(record);
    }

    fn truncation_marker(&mut self, ts: Timestamp, masker: &mut Masker) -> Record {
        let message = format!(
            "joblog dropped {} ({}) over the log cap ({} or {}); the last {} follow",
            count(self.dropped_records, "record"),
            human_bytes(self.dropped_bytes),
            count(self.limits.max_records, "record"),
            human_bytes(self.limits.max_bytes),
            count(self.tail.len() as u64, "record"),
        );
        let mut fields = Map::new();
        fields.insert("truncated".into(), true.into());
        fields.insert("dropped_records".into(), self.dropped_records.into());
        fields.insert("dropped_bytes".into(), self.dropped_bytes.into());
        Record {
            seq: 0,
            // The kept tail's first time, so ts never goes backwards along seq.
            ts: self.tail.front().map_or(ts, |r| r.ts),
            stream: Stream::Warning,
            // Masked like every record: a secret may be as short as a count.
            message: masker.mask(message),
            fields: Some(fields),
        }
    }
}

fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `512 MiB`, `25.3 MiB`, `900 bytes`.
pub(super) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return count(bytes, "byte");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes() {
        assert_eq!(human_bytes(1), "1 byte");
        assert_eq!(human_bytes(900), "900 bytes");
        assert_eq!(human_bytes(512 * 1024 * 1024), "512 MiB");
        assert_eq!(human_bytes(26_528_972), "25.3 MiB");
    }
}
