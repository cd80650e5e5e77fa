//! Turns the raw bytes a job writes on stdout/stderr into ordered, masked log
//! records (docs/records.md), applying workflow commands and the per-job
//! log cap (docs/durability.md).
//!
//! Pure code: the caller reads the pipes, runs the idle timer and stores the
//! records this produces. `OutputParser` ties the parts: `lines` splits the
//! bytes, `command` interprets workflow commands at line starts, `mask`
//! hides secrets in every record, `cap` numbers records and bounds a job's log.

mod cap;
mod command;
#[doc(hidden)]
pub mod fuzzing;
mod lines;
mod mask;
#[cfg(test)]
mod mask_tests;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

use joblog_core::{LogSummary, Record, Stream, Timestamp};
use serde_json::{Map, Value};

use self::cap::LogCap;
use self::lines::LineBuf;
use self::mask::Masker;

/// Which pipe bytes came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Stdout,
    Stderr,
}

impl Source {
    fn index(self) -> usize {
        match self {
            Source::Stdout => 0,
            Source::Stderr => 1,
        }
    }

    /// The stream of an ordinary line from this pipe.
    pub fn stream(self) -> Stream {
        match self {
            Source::Stdout => Stream::Output,
            Source::Stderr => Stream::Error,
        }
    }
}

/// The per-job log limits (docs/durability.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLimits {
    /// Records kept per job, not counting the truncation marker.
    pub max_records: u64,
    /// Sum of message byte lengths kept per job.
    pub max_bytes: u64,
    /// Records kept from the end once over the cap.
    pub tail_records: usize,
    /// Memory bound of that tail (message bytes); keeps fewer than
    /// `tail_records` if needed.
    pub tail_bytes: usize,
    /// Longer lines are split into several records.
    pub line_max: usize,
}

impl Default for LogLimits {
    fn default() -> Self {
        LogLimits {
            max_records: 1_000_000,
            max_bytes: 512 * 1024 * 1024,
            tail_records: 10_000,
            tail_bytes: 16 * 1024 * 1024,
            line_max: 64 * 1024,
        }
    }
}

/// The job's result as set by `::set-result::`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultText {
    /// Valid JSON, as written (surrounding whitespace trimmed).
    Valid(String),
    /// Not usable; the reason (never the value) is also in an `error` record.
    Invalid(String),
}

/// The log of one job, fed with pipe bytes, producing sequenced records.
#[derive(Debug)]
pub struct OutputParser {
    line_max: usize,
    masker: Masker,
    added_masks: usize,
    added_mask_bytes: usize,
    lines: [LineBuf; 2],
    stop_token: Option<String>,
    result: Option<ResultText>,
    cap: LogCap,
}

impl OutputParser {
    pub fn new(limits: LogLimits, secrets: impl IntoIterator<Item = String>) -> Self {
        let mut masker = Masker::default();
        for secret in secrets {
            masker.add_secret(&secret);
        }
        OutputParser {
            line_max: limits.line_max.max(1),
            masker,
            added_masks: 0,
            added_mask_bytes: 0,
            lines: Default::default(),
            stop_token: None,
            result: None,
            cap: LogCap::new(limits),
        }
    }

    /// Adds a record of joblog's own (e.g. "failed to start: ..."), masked
    /// and sequenced like any other.
    pub fn note(
        &mut self,
        stream: Stream,
        message: &str,
        fields: Option<Map<String, Value>>,
        ts: Timestamp,
        out: &mut Vec<Record>,
    ) {
        let fields = fields.map(|f| self.masker.mask_map(f));
        self.emit(stream, message.to_owned(), fields, ts, out);
    }

    /// End of the job's output (its pipes closed): unterminated last
    /// lines are handled as complete lines. Called before the result is
    /// taken, so that a final `::set-result::{}` without newline sets it;
    /// [`OutputParser::finish`] does it too, for whoever has no result to take.
    pub fn end_of_output(&mut self, ts: Timestamp, out: &mut Vec<Record>) {
        self.finish_lines(ts, out);
    }

    /// End of the job: unterminated last lines are handled as complete lines
    /// (so a final `::set-result::{}` without newline still counts); then, if
    /// the cap dropped records, the truncation marker and the kept tail.
    pub fn finish(&mut self, ts: Timestamp, out: &mut Vec<Record>) {
        self.finish_lines(ts, out);
        self.cap.finish(ts, &mut self.masker, out);
    }

    /// Counters of the records emitted so far.
    pub fn summary(&self) -> LogSummary {
        self.cap.summary()
    }

    /// The job's result with every value masked in its log hidden (see
    /// `Masker::mask_document`): results are stored like records, and a
    /// secret must not get out through them.
    pub fn mask_result(&mut self, body: Vec<u8>) -> Vec<u8> {
        self.masker.mask_document(body)
    }

    /// The last `::set-result::` seen, if any (taken).
    pub fn take_result(&mut self) -> Option<ResultText> {
        self.result.take()
    }

    /// Masks the message (fields must be masked already) and passes the
    /// record through the cap.
    fn emit(
        &mut self,
        stream: Stream,
        message: String,
        fields: Option<Map<String, Value>>,
        ts: Timestamp,
        out: &mut Vec<Record>,
    ) {
        let record = Record {
            seq: 0,
            ts,
            stream,
            message: self.masker.mask(message),
            fields,
        };
        self.cap.offer(record, out);
    }
}
