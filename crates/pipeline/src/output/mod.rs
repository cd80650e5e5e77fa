//! Turns the raw bytes a job writes on stdout/stderr into ordered, masked log
//! records (SPEC §3), applying workflow commands and the per-job log cap (§8).
//!
//! Pure code: the caller reads the pipes, runs the idle timer and stores the
//! records this produces.

mod command;
mod mask;

use std::collections::VecDeque;

use joblog_core::{LogSummary, Record, Stream, Timestamp};
use serde_json::{Map, Value};

use self::mask::Masker;

/// Most `::add-mask::` values one job may register, and their total size.
/// Each one grows the automaton every record is scanned with (and its memory),
/// so a job masking in a loop would otherwise slow the whole server; past
/// either limit the command is refused loudly.
pub const MAX_ADDED_MASKS: usize = 1024;
pub const MAX_ADDED_MASK_BYTES: usize = 256 * 1024;

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

/// The per-job log limits (SPEC §8).
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

/// What the rest of a line becomes once its first piece has been handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rest {
    /// Further pieces are records of this stream marked `continued`.
    Record(Stream),
    /// The line was a command that consumes it whole: drop the remainder.
    Discard,
}

/// The unfinished line of one pipe.
#[derive(Debug, Default)]
struct LineBuf {
    /// Bytes not emitted yet; never contains `\n`.
    buf: Vec<u8>,
    /// `None` while the next byte starts a line.
    rest: Option<Rest>,
}

/// The log of one job, fed with pipe bytes, producing sequenced records.
#[derive(Debug)]
pub struct OutputParser {
    limits: LogLimits,
    line_max: usize,
    masker: Masker,
    added_masks: usize,
    added_mask_bytes: usize,
    lines: [LineBuf; 2],
    stop_token: Option<String>,
    result: Option<ResultText>,
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

impl OutputParser {
    pub fn new(limits: LogLimits, secrets: impl IntoIterator<Item = String>) -> Self {
        let mut masker = Masker::default();
        for secret in secrets {
            add_secret(&mut masker, &secret);
        }
        let mut limits = limits;
        limits.tail_records = limits
            .tail_records
            .min(usize::try_from(limits.max_records).unwrap_or(usize::MAX));
        limits.tail_bytes = limits
            .tail_bytes
            .min(usize::try_from(limits.max_bytes).unwrap_or(usize::MAX));
        OutputParser {
            head_records: limits.max_records - limits.tail_records as u64,
            head_bytes: limits.max_bytes - limits.tail_bytes as u64,
            line_max: limits.line_max.max(1),
            limits,
            masker,
            added_masks: 0,
            added_mask_bytes: 0,
            lines: Default::default(),
            stop_token: None,
            result: None,
            summary: LogSummary::default(),
            tailing: false,
            tail: VecDeque::new(),
            tail_len_bytes: 0,
            dropped_records: 0,
            dropped_bytes: 0,
        }
    }

    /// Feeds bytes just read from a pipe; complete records are pushed to
    /// `out` with their seq assigned.
    pub fn push(&mut self, src: Source, data: &[u8], ts: Timestamp, out: &mut Vec<Record>) {
        let i = src.index();
        let mut data = data;
        while !data.is_empty() {
            if self.lines[i].rest == Some(Rest::Discard) {
                match memchr::memchr(b'\n', data) {
                    Some(p) => {
                        self.lines[i].rest = None;
                        data = &data[p + 1..];
                    }
                    None => return,
                }
                continue;
            }
            let limit = self.buffer_limit();
            let room = limit.saturating_sub(self.lines[i].buf.len()).max(1);
            let window = &data[..room.min(data.len())];
            match memchr::memchr(b'\n', window) {
                Some(p) if self.lines[i].buf.is_empty() => {
                    // The common case: a whole line in one read, no copy needed.
                    self.complete_line(src, &window[..p], ts, out);
                    data = &data[p + 1..];
                }
                Some(p) => {
                    let mut line = std::mem::take(&mut self.lines[i].buf);
                    line.extend_from_slice(&window[..p]);
                    self.complete_line(src, &line, ts, out);
                    line.clear();
                    self.lines[i].buf = line;
                    data = &data[p + 1..];
                }
                None => {
                    self.lines[i].buf.extend_from_slice(window);
                    data = &data[window.len()..];
                    while self.lines[i].buf.len() >= self.buffer_limit() {
                        self.emit_long_piece(src, ts, out);
                    }
                }
            }
        }
    }

    /// The idle timer fired: emits the partial line of `src`, if any, so
    /// `printf 'working...'` shows up live.
    ///
    /// Held back: a line start that is or may become a workflow command
    /// (`::`, `:`), a trailing `\r` (maybe half of CRLF), an incomplete UTF-8
    /// character, and a tail that could be the start of a masked value.
    pub fn flush_partial(&mut self, src: Source, ts: Timestamp, out: &mut Vec<Record>) {
        let i = src.index();
        let line = &self.lines[i];
        if line.buf.is_empty()
            || (line.rest.is_none() && (line.buf.starts_with(b"::") || line.buf == b":"))
        {
            return;
        }
        let mut buf = std::mem::take(&mut self.lines[i].buf);
        let hold = usize::from(buf.ends_with(b"\r"))
            .max(incomplete_utf8_tail(&buf))
            .max(self.masker.prefix_holdback(&buf));
        let mut cut = buf.len().saturating_sub(hold);
        if let Some((start, _)) = self.masker.spanning(&buf, cut) {
            cut = start;
        }
        if cut > 0 {
            self.piece(src, &buf[..cut], false, ts, out);
            buf.drain(..cut);
            if self.lines[i].rest == Some(Rest::Discard) {
                buf.clear();
            }
        }
        self.lines[i].buf = buf;
    }

    /// Whether `src` has bytes of an unfinished line waiting (which
    /// `flush_partial` may still hold back, see there).
    pub fn has_partial(&self, src: Source) -> bool {
        !self.lines[src.index()].buf.is_empty()
    }

    /// Bytes held in the line buffers: at most about `line_max` plus the
    /// longest masked value (in any form) per pipe.
    pub fn buffered_bytes(&self) -> usize {
        self.lines.iter().map(|l| l.buf.len()).sum()
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

    /// End of the job: unterminated last lines are handled as complete lines
    /// (so a final `::set-result::{}` without newline still counts); then, if
    /// the cap dropped records, the truncation marker and the kept tail.
    pub fn finish(&mut self, ts: Timestamp, out: &mut Vec<Record>) {
        for src in [Source::Stdout, Source::Stderr] {
            let i = src.index();
            let line = std::mem::take(&mut self.lines[i].buf);
            if !line.is_empty() {
                self.complete_line(src, &line, ts, out);
            }
            self.lines[i].rest = None;
        }
        if self.dropped_records > 0 {
            let marker = self.truncation_marker(ts);
            self.publish(marker, out);
            self.dropped_records = 0;
            self.dropped_bytes = 0;
        }
        while let Some(record) = self.tail.pop_front() {
            self.publish(record, out);
        }
        self.tail_len_bytes = 0;
    }

    /// Counters of the records emitted so far.
    pub fn summary(&self) -> LogSummary {
        self.summary
    }

    /// The last `::set-result::` seen, if any (taken).
    pub fn take_result(&mut self) -> Option<ResultText> {
        self.result.take()
    }

    /// A line longer than this many buffered bytes gets a piece cut off; the
    /// margin past `line_max` lets the cut see any masked value across it.
    fn buffer_limit(&self) -> usize {
        self.line_max + self.masker.max_len().max(1)
    }

    /// Cuts at most `line_max` bytes off an overlong buffered line, never
    /// inside a UTF-8 character nor inside an occurrence of a masked value.
    fn emit_long_piece(&mut self, src: Source, ts: Timestamp, out: &mut Vec<Record>) {
        let i = src.index();
        let mut buf = std::mem::take(&mut self.lines[i].buf);
        let mut cut = utf8_cut(&buf, self.line_max);
        // The buffer holds at least `max_len` bytes past `cut`, so any
        // occurrence across it is complete and visible here.
        if let Some((start, end)) = self.masker.spanning(&buf, cut) {
            cut = if start > 0 { start } else { end };
        }
        self.piece(src, &buf[..cut], false, ts, out);
        buf.drain(..cut);
        if self.lines[i].rest == Some(Rest::Discard) {
            buf.clear();
        }
        self.lines[i].buf = buf;
    }

    fn complete_line(&mut self, src: Source, line: &[u8], ts: Timestamp, out: &mut Vec<Record>) {
        let mut line = line.strip_suffix(b"\r").unwrap_or(line);
        // A line ending within the masking margin past `line_max` is split
        // like any longer one; the whole line is here, so any occurrence of
        // a masked value across the cut is visible.
        while line.len() > self.line_max {
            let mut cut = utf8_cut(line, self.line_max);
            if let Some((start, end)) = self.masker.spanning(line, cut) {
                cut = if start > 0 { start } else { end };
            }
            self.piece(src, &line[..cut], false, ts, out);
            line = &line[cut..];
        }
        self.piece(src, line, true, ts, out);
    }

    /// Handles the next piece of `src`'s current line; `last` says whether
    /// it ends the line.
    fn piece(
        &mut self,
        src: Source,
        bytes: &[u8],
        last: bool,
        ts: Timestamp,
        out: &mut Vec<Record>,
    ) {
        let i = src.index();
        let rest = match self.lines[i].rest {
            None => Some(self.line_start(src, bytes, last, ts, out)),
            Some(Rest::Record(stream)) => {
                // Empty when a flushed partial line simply got its newline.
                if !bytes.is_empty() {
                    let message = String::from_utf8_lossy(bytes).into_owned();
                    self.emit(stream, message, Some(continued()), ts, out);
                }
                Some(Rest::Record(stream))
            }
            Some(Rest::Discard) => Some(Rest::Discard),
        };
        self.lines[i].rest = if last { None } else { rest };
    }

    /// Handles the start of a line (the whole line, or its first piece):
    /// workflow commands are recognised here only.
    fn line_start(
        &mut self,
        src: Source,
        bytes: &[u8],
        whole: bool,
        ts: Timestamp,
        out: &mut Vec<Record>,
    ) -> Rest {
        let ordinary = src.stream();
        let text = String::from_utf8_lossy(bytes);
        if let Some(token) = &self.stop_token {
            let is_end = text
                .strip_prefix("::")
                .and_then(|t| t.strip_suffix("::"))
                .is_some_and(|t| t == token);
            if whole && is_end {
                self.stop_token = None;
                return Rest::Discard;
            }
            self.emit(ordinary, text.into_owned(), None, ts, out);
            return Rest::Record(ordinary);
        }
        let Some(cmd) = command::parse(&text) else {
            self.emit(ordinary, text.into_owned(), None, ts, out);
            return Rest::Record(ordinary);
        };
        let stream = match cmd.name {
            "error" => Stream::Error,
            "warning" => Stream::Warning,
            "notice" | "info" | "group" | "endgroup" => Stream::Information,
            "verbose" => Stream::Verbose,
            "debug" => Stream::Debug,
            "progress" => Stream::Progress,
            "add-mask" => {
                self.add_mask(cmd.message, whole, ts, out);
                return Rest::Discard;
            }
            "set-result" => {
                self.set_result(cmd.message, whole, ts, out);
                return Rest::Discard;
            }
            "stop-commands" if whole && !cmd.message.is_empty() => {
                self.stop_token = Some(cmd.message.to_owned());
                return Rest::Discard;
            }
            // An empty or overlong token: the line is ordinary text.
            _ => {
                self.emit(ordinary, text.into_owned(), None, ts, out);
                return Rest::Record(ordinary);
            }
        };
        let mut fields = Map::new();
        for (key, value) in cmd.params {
            let key = self.masker.mask(key.to_owned());
            let value = self.masker.mask(value);
            fields.insert(key, command::field_value(value));
        }
        match cmd.name {
            "group" => drop(fields.insert("group".into(), "start".into())),
            "endgroup" => drop(fields.insert("group".into(), "end".into())),
            _ => {}
        }
        let message = command::unescape(cmd.message, false).into_owned();
        let fields = (!fields.is_empty()).then_some(fields);
        self.emit(stream, message, fields, ts, out);
        Rest::Record(stream)
    }

    fn add_mask(&mut self, raw: &str, whole: bool, ts: Timestamp, out: &mut Vec<Record>) {
        let unescaped = command::unescape(raw, false);
        let values = [unescaped.trim(), raw.trim()];
        if values[0].is_empty() {
            return;
        }
        let size = values[0].len()
            + if values[1] != values[0] {
                values[1].len()
            } else {
                0
            };
        if self.added_masks >= MAX_ADDED_MASKS
            || self.added_mask_bytes + size > MAX_ADDED_MASK_BYTES
        {
            let message = format!(
                "::add-mask:: refused: a job may register at most {MAX_ADDED_MASKS} masks of {} in all; the value is not masked in later records",
                human_bytes(MAX_ADDED_MASK_BYTES as u64)
            );
            self.emit(Stream::Warning, message, None, ts, out);
            return;
        }
        let mut added = false;
        for value in values {
            added |= self.masker.add(value);
        }
        if added {
            self.added_masks += 1;
            self.added_mask_bytes += size;
        }
        if !whole {
            let message = format!(
                "::add-mask:: value longer than {} bytes: only its first part is masked in later records",
                self.line_max
            );
            self.emit(Stream::Warning, message, None, ts, out);
        }
    }

    fn set_result(&mut self, json: &str, whole: bool, ts: Timestamp, out: &mut Vec<Record>) {
        let verdict = if !whole {
            Err(format!(
                "the result set by ::set-result:: is longer than {} bytes; write large results to the file named by JOBLOG_RESULT",
                self.line_max
            ))
        } else {
            match serde_json::from_str::<Value>(json) {
                Ok(_) => Ok(json.trim().to_owned()),
                // serde's message names the position, never the value.
                Err(e) => Err(format!(
                    "the result set by ::set-result:: is not valid JSON: {e}"
                )),
            }
        };
        self.result = Some(match verdict {
            Ok(text) => ResultText::Valid(text),
            Err(reason) => {
                self.emit(Stream::Error, reason.clone(), None, ts, out);
                ResultText::Invalid(reason)
            }
        });
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

    fn publish(&mut self, mut record: Record, out: &mut Vec<Record>) {
        self.summary.records += 1;
        record.seq = self.summary.records;
        self.summary.bytes += record.message.len() as u64;
        self.summary.streams.add(record.stream, 1);
        out.push(record);
    }

    fn truncation_marker(&mut self, ts: Timestamp) -> Record {
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
            message: self.masker.mask(message),
            fields: Some(fields),
        }
    }
}

/// Registers a submitted secret as it is, trimmed, and line by line: a
/// multi-line secret can only ever appear one line at a time.
fn add_secret(masker: &mut Masker, secret: &str) {
    masker.add(secret);
    masker.add(secret.trim());
    if secret.contains('\n') {
        for line in secret.lines() {
            masker.add(line.trim());
        }
    }
}

fn continued() -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("continued".into(), true.into());
    fields
}

fn is_utf8_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// The largest cut `<= max` that does not split a UTF-8 character (backing
/// off at most 3 bytes; in invalid data, `max` itself).
fn utf8_cut(buf: &[u8], max: usize) -> usize {
    let max = max.min(buf.len());
    let mut cut = max;
    for _ in 0..3 {
        if cut > 0 && cut < buf.len() && is_utf8_continuation(buf[cut]) {
            cut -= 1;
        }
    }
    if cut == 0 || (cut < buf.len() && is_utf8_continuation(buf[cut])) {
        max
    } else {
        cut
    }
}

/// Bytes at the end of `buf` that begin a UTF-8 character still missing
/// its continuation bytes.
fn incomplete_utf8_tail(buf: &[u8]) -> usize {
    for back in 1..=buf.len().min(3) {
        let b = buf[buf.len() - back];
        if is_utf8_continuation(b) {
            continue;
        }
        let needed = match b {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `512 MiB`, `25.3 MiB`, `900 bytes`.
fn human_bytes(bytes: u64) -> String {
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
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;
    use serde_json::json;

    const KIB64: usize = 64 * 1024;

    fn t(n: i64) -> Timestamp {
        Timestamp(n)
    }

    fn parser(secrets: &[&str]) -> OutputParser {
        OutputParser::new(LogLimits::default(), secrets.iter().map(|s| s.to_string()))
    }

    fn push(log: &mut OutputParser, src: Source, data: impl AsRef<[u8]>) -> Vec<Record> {
        let mut out = Vec::new();
        log.push(src, data.as_ref(), t(1), &mut out);
        out
    }

    /// Feeds stdout then finishes.
    fn run(log: &mut OutputParser, data: impl AsRef<[u8]>) -> Vec<Record> {
        let mut out = push(log, Source::Stdout, data);
        log.finish(t(2), &mut out);
        out
    }

    fn run_stdout(data: impl AsRef<[u8]>) -> Vec<Record> {
        run(&mut parser(&[]), data)
    }

    /// (stream, message, fields) of each record, the parts most tests compare.
    fn view(records: &[Record]) -> Vec<(Stream, String, Value)> {
        records
            .iter()
            .map(|r| {
                let fields = r.fields.clone().map_or(Value::Null, Value::Object);
                (r.stream, r.message.clone(), fields)
            })
            .collect()
    }

    fn messages(records: &[Record]) -> Vec<&str> {
        records.iter().map(|r| r.message.as_str()).collect()
    }

    fn assert_gapless(records: &[Record]) {
        let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
        let expected: Vec<u64> = (1..=records.len() as u64).collect();
        assert_eq!(seqs, expected);
    }

    /// The text a viewer would reassemble: continued pieces glued to their line.
    fn rejoin(records: &[Record]) -> String {
        let mut text = String::new();
        for (n, r) in records.iter().enumerate() {
            let continued = r
                .fields
                .as_ref()
                .is_some_and(|f| f.contains_key("continued"));
            if n > 0 && !continued {
                text.push('\n');
            }
            text.push_str(&r.message);
        }
        text
    }

    #[test]
    fn lines_become_records_of_their_stream_in_order() {
        let mut log = parser(&[]);
        let mut out = Vec::new();
        log.push(Source::Stdout, b"one\ntw", t(1), &mut out);
        log.push(Source::Stderr, b"oops\n", t(2), &mut out);
        log.push(Source::Stdout, b"o\n\n", t(3), &mut out);
        log.finish(t(4), &mut out);
        assert_eq!(
            view(&out),
            vec![
                (Stream::Output, "one".into(), Value::Null),
                (Stream::Error, "oops".into(), Value::Null),
                (Stream::Output, "two".into(), Value::Null),
                (Stream::Output, "".into(), Value::Null),
            ]
        );
        assert_gapless(&out);
        // ts is that of the push that completed the line.
        let ts: Vec<i64> = out.iter().map(|r| r.ts.0).collect();
        assert_eq!(ts, [1, 2, 3, 3]);
        let s = log.summary();
        assert_eq!((s.records, s.bytes, s.truncated), (4, 10, false));
        assert_eq!(s.streams.get(Stream::Output), 3);
        assert_eq!(s.streams.get(Stream::Error), 1);
    }

    #[test]
    fn crlf_is_stripped_but_inner_cr_kept() {
        let out = run_stdout("a\r\nb\rc\r\n\r\nd\r\r\n");
        assert_eq!(messages(&out), ["a", "b\rc", "", "d\r"]);
    }

    #[test]
    fn invalid_utf8_is_replaced_and_controls_kept() {
        let out = run_stdout(b"a\xffb\0c\x1b[31mred\x07\n\xe2\x82\n");
        assert_eq!(messages(&out), ["a\u{FFFD}b\0c\x1b[31mred\x07", "\u{FFFD}"]);
    }

    #[test]
    fn message_commands_map_to_streams() {
        let out = run_stdout(
            "::error::e\n::warning::w\n::notice::n\n::info::i\n::verbose::v\n::debug::d\n::progress::p\n",
        );
        let streams: Vec<Stream> = out.iter().map(|r| r.stream).collect();
        assert_eq!(
            streams,
            [
                Stream::Error,
                Stream::Warning,
                Stream::Information,
                Stream::Information,
                Stream::Verbose,
                Stream::Debug,
                Stream::Progress
            ]
        );
        assert_eq!(messages(&out), ["e", "w", "n", "i", "v", "d", "p"]);
        assert!(out.iter().all(|r| r.fields.is_none()));
    }

    #[test]
    fn commands_work_on_stderr_too() {
        let mut log = parser(&[]);
        let mut out = push(&mut log, Source::Stderr, "::warning::careful\nplain\n");
        log.finish(t(2), &mut out);
        assert_eq!(
            view(&out),
            vec![
                (Stream::Warning, "careful".into(), Value::Null),
                (Stream::Error, "plain".into(), Value::Null),
            ]
        );
    }

    #[test]
    fn params_become_fields() {
        let out = run_stdout(
            "::warning file=app.py,line=3,col=-1.5::deprecated call\n::progress percent=40::Copying files\n",
        );
        assert_eq!(
            view(&out),
            vec![
                (
                    Stream::Warning,
                    "deprecated call".into(),
                    json!({"file": "app.py", "line": 3, "col": -1.5})
                ),
                (
                    Stream::Progress,
                    "Copying files".into(),
                    json!({"percent": 40})
                ),
            ]
        );
    }

    #[test]
    fn escapes_in_params_and_message() {
        let out = run_stdout("::error title=a%2Cb%3Ac%25::50%25 done%0Anext%0Dx %3A\n");
        assert_eq!(
            view(&out),
            vec![(
                Stream::Error,
                "50% done\nnext\rx %3A".into(),
                json!({"title": "a,b:c%"})
            )]
        );
    }

    #[test]
    fn groups() {
        let out = run_stdout("::group::Build step\nx\n::endgroup::\n");
        assert_eq!(
            view(&out),
            vec![
                (
                    Stream::Information,
                    "Build step".into(),
                    json!({"group": "start"})
                ),
                (Stream::Output, "x".into(), Value::Null),
                (Stream::Information, "".into(), json!({"group": "end"})),
            ]
        );
    }

    #[test]
    fn unknown_and_malformed_commands_are_ordinary_lines() {
        let input = [
            "::",
            "::::",
            "::warning",
            "::warning no close",
            "::set-output name=x::y",
            "::warning file::x",
            "::stop-commands::",
            " ::warning::indented",
            "text ::error::mid-line",
        ];
        let out = run_stdout(input.join("\n") + "\n");
        assert_eq!(messages(&out), input);
        assert!(out
            .iter()
            .all(|r| r.stream == Stream::Output && r.fields.is_none()));
    }

    #[test]
    fn set_result_valid_is_taken_not_stored() {
        let mut log = parser(&[]);
        let out = run(&mut log, "::set-result:: {\"ok\": [1, 2]} \nafter\n");
        assert_eq!(messages(&out), ["after"]);
        assert_eq!(
            log.take_result(),
            Some(ResultText::Valid("{\"ok\": [1, 2]}".into()))
        );
        assert_eq!(log.take_result(), None);
    }

    #[test]
    fn set_result_invalid_is_an_error_record_without_the_value() {
        let mut log = parser(&[]);
        let out = run(&mut log, "::set-result::{\"token\": s3cr3tvalue}\n");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].stream, Stream::Error);
        assert!(
            out[0].message.contains("not valid JSON"),
            "{}",
            out[0].message
        );
        assert!(out[0].message.contains("column"), "{}", out[0].message);
        assert!(!out[0].message.contains("s3cr3t"), "{}", out[0].message);
        match log.take_result() {
            Some(ResultText::Invalid(reason)) => assert_eq!(reason, out[0].message),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn last_set_result_wins_and_unterminated_one_counts_at_finish() {
        let mut log = parser(&[]);
        let out = run(&mut log, "::set-result::1\n::set-result::[2]");
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(log.take_result(), Some(ResultText::Valid("[2]".into())));
    }

    #[test]
    fn secrets_are_masked_in_messages_and_fields() {
        let mut log = parser(&["hunter2", "", "  spaced  "]);
        let out = run(
            &mut log,
            "pw=hunter2!\n::warning file=hunter2.txt,hunter2=1,n=12::x hunter2\nspaced\n",
        );
        assert_eq!(
            view(&out),
            vec![
                (Stream::Output, "pw=***!".into(), Value::Null),
                (
                    Stream::Warning,
                    "x ***".into(),
                    json!({"file": "***.txt", "***": 1, "n": 12})
                ),
                (Stream::Output, "***".into(), Value::Null),
            ]
        );
    }

    #[test]
    fn masked_number_param_stays_masked() {
        let out = run(&mut parser(&["12345"]), "::warning line=12345::x\n");
        assert_eq!(out[0].fields, json!({"line": "***"}).as_object().cloned());
    }

    #[test]
    fn base64_forms_of_secrets_are_masked() {
        let secret = "s3cr3t-Pa55word";
        let mut log = parser(&[secret]);
        let mut lines = vec![
            STANDARD.encode(secret),
            STANDARD.encode(secret).trim_end_matches('=').to_string(),
        ];
        // Offsets 0, 1 and 2 inside longer encoded strings, e.g. HTTP basic auth.
        for prefix in ["", "u", "user:", "ab"] {
            for suffix in ["", "x", "yz"] {
                lines.push(STANDARD.encode(format!("{prefix}{secret}{suffix}")));
            }
        }
        let out = run(&mut log, lines.join("\n") + "\n");
        assert_eq!(out.len(), lines.len());
        for (record, line) in out.iter().zip(&lines) {
            assert!(
                record.message.contains("***"),
                "{line} -> {}",
                record.message
            );
            // Only the few characters that also depend on neighbouring bytes remain.
            assert!(
                record.message.len() <= 3 + 3 + 8 + 3,
                "{line} -> {}",
                record.message
            );
        }
    }

    #[test]
    fn add_mask_applies_to_later_records_only_and_is_not_stored() {
        let mut log = parser(&[]);
        let out = run(
            &mut log,
            "before tok3n\n::add-mask::  tok3n \r\nafter tok3n\n::add-mask::\n::add-mask::   \n",
        );
        assert_eq!(messages(&out), ["before tok3n", "after ***"]);
        let mut out = Vec::new();
        log.note(
            Stream::Error,
            "failed: tok3n",
            json!({"arg": "tok3n"}).as_object().cloned(),
            t(3),
            &mut out,
        );
        assert_eq!(
            view(&out),
            vec![(Stream::Error, "failed: ***".into(), json!({"arg": "***"}))]
        );
        assert_eq!(out[0].seq, 3);
    }

    #[test]
    fn add_mask_value_is_unescaped_and_masks_base64() {
        let out = run_stdout(format!(
            "::add-mask::multi%0Aline\nmulti\nline\n{}\n",
            STANDARD.encode("multi\nline")
        ));
        // A masked value containing a newline cannot appear within one line;
        // its base64 form can.
        assert_eq!(messages(&out), ["multi", "line", "***"]);
    }

    #[test]
    fn multi_line_secret_is_masked_line_by_line() {
        let out = run(
            &mut parser(&["-----BEGIN KEY-----\nAAAAsecretbody\n-----END KEY-----\n"]),
            "AAAAsecretbody\n",
        );
        assert_eq!(messages(&out), ["***"]);
    }

    #[test]
    fn too_many_masks_are_refused_loudly() {
        let mut input = String::new();
        for n in 0..=MAX_ADDED_MASKS {
            input.push_str(&format!("::add-mask::value-{n:05}\n"));
        }
        input.push_str("value-00000 value-01024\n");
        let out = run_stdout(input);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].stream, Stream::Warning);
        assert!(
            out[0].message.contains("at most 1024"),
            "{}",
            out[0].message
        );
        assert!(!out[0].message.contains("value-"));
        assert_eq!(out[1].message, "*** value-01024");
    }

    #[test]
    fn masks_over_the_byte_budget_are_refused_loudly() {
        let mut input = String::new();
        for c in ['a', 'b', 'c', 'd', 'e'] {
            input.push_str(&format!("::add-mask::{}\n", c.to_string().repeat(60_000)));
        }
        input.push_str(&format!("{} {}\n", "a".repeat(60_000), "e".repeat(60_000)));
        let out = run_stdout(input);
        assert_eq!(out[0].stream, Stream::Warning);
        assert!(out[0].message.contains("256 KiB"), "{}", out[0].message);
        assert_eq!(rejoin(&out[1..]), format!("*** {}", "e".repeat(60_000)));
    }

    #[test]
    fn stop_commands_suspends_interpretation() {
        let mut log = parser(&[]);
        let out = run(
            &mut log,
            "::stop-commands::tok\n::warning::not a warning\n::add-mask::visible\n::set-result::{}\n::tok:: \n::tok::\n::warning::real\nvisible\n",
        );
        assert_eq!(
            view(&out),
            vec![
                (
                    Stream::Output,
                    "::warning::not a warning".into(),
                    Value::Null
                ),
                (Stream::Output, "::add-mask::visible".into(), Value::Null),
                (Stream::Output, "::set-result::{}".into(), Value::Null),
                (Stream::Output, "::tok:: ".into(), Value::Null),
                (Stream::Warning, "real".into(), Value::Null),
                (Stream::Output, "visible".into(), Value::Null),
            ]
        );
        assert_eq!(log.take_result(), None);
    }

    #[test]
    fn partial_line_is_flushed_and_continued() {
        let mut log = parser(&[]);
        let mut out = push(&mut log, Source::Stdout, "working...");
        assert!(out.is_empty());
        assert!(log.has_partial(Source::Stdout));
        log.flush_partial(Source::Stdout, t(5), &mut out);
        assert!(!log.has_partial(Source::Stdout));
        out.extend(push(&mut log, Source::Stdout, " done\r\nnext"));
        log.flush_partial(Source::Stdout, t(6), &mut out);
        out.extend(push(&mut log, Source::Stdout, "\n"));
        log.finish(t(9), &mut out);
        assert_eq!(
            view(&out),
            vec![
                (Stream::Output, "working...".into(), Value::Null),
                (Stream::Output, " done".into(), json!({"continued": true})),
                (Stream::Output, "next".into(), Value::Null),
            ]
        );
        assert_eq!(out[0].ts, t(5));
        assert_gapless(&out);
    }

    #[test]
    fn flush_holds_back_cr_incomplete_utf8_and_mask_prefixes() {
        let mut log = parser(&["hunter2"]);
        let mut out = push(&mut log, Source::Stdout, b"a\r");
        log.flush_partial(Source::Stdout, t(1), &mut out);
        out.extend(push(&mut log, Source::Stdout, b"\nb\xc3"));
        log.flush_partial(Source::Stdout, t(1), &mut out);
        out.extend(push(&mut log, Source::Stdout, b"\xa9 pw: hun"));
        log.flush_partial(Source::Stdout, t(1), &mut out);
        out.extend(push(&mut log, Source::Stdout, b"ter2 ok\n"));
        assert_eq!(
            view(&out),
            vec![
                (Stream::Output, "a".into(), Value::Null),
                (Stream::Output, "b".into(), Value::Null),
                (Stream::Output, "é pw: ".into(), json!({"continued": true})),
                (Stream::Output, "*** ok".into(), json!({"continued": true})),
            ]
        );
    }

    #[test]
    fn command_like_partial_is_not_flushed() {
        let mut log = parser(&[]);
        let mut out = Vec::new();
        for piece in [":", ":add-", "mask::", "s3cret"] {
            out.extend(push(&mut log, Source::Stdout, piece));
            log.flush_partial(Source::Stdout, t(1), &mut out);
            assert!(out.is_empty(), "flushed after {piece:?}: {out:?}");
        }
        out.extend(push(&mut log, Source::Stdout, "\nmy s3cret\n:x"));
        log.flush_partial(Source::Stdout, t(1), &mut out);
        assert_eq!(messages(&out), ["my ***", ":x"]);
    }

    #[test]
    fn long_lines_are_split_with_continued_pieces() {
        let line = "x".repeat(KIB64 * 2 + 10);
        let out = run_stdout(format!("{line}\nshort\n"));
        let lens: Vec<usize> = out.iter().map(|r| r.message.len()).collect();
        assert_eq!(lens, [KIB64, KIB64, 10, 5]);
        assert_eq!(out[0].fields, None);
        assert_eq!(out[1].fields, Some(continued()));
        assert_eq!(out[2].fields, Some(continued()));
        assert_eq!(out[3].fields, None);
    }

    #[test]
    fn line_just_over_the_limit_is_split_even_with_masks() {
        // With masks the buffer keeps a margin past line_max; a line ending
        // inside that margin must still be split.
        for extra in [1, 5, 20] {
            let line = "x".repeat(KIB64 + extra);
            let out = run(&mut parser(&["a-long-secret-value"]), format!("{line}\n"));
            let lens: Vec<usize> = out.iter().map(|r| r.message.len()).collect();
            assert_eq!(lens, [KIB64, extra]);
        }
    }

    #[test]
    fn long_command_line_keeps_its_stream_for_continuations() {
        let out = run_stdout(format!("::warning::{}\n", "w".repeat(KIB64)));
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|r| r.stream == Stream::Warning));
        assert_eq!(out[1].fields, Some(continued()));
        assert_eq!(out[0].message.len() + out[1].message.len(), KIB64);
    }

    #[test]
    fn overlong_add_mask_is_never_stored() {
        let value = "v".repeat(KIB64 + 100);
        let out = run_stdout(format!("::add-mask::{value}\nafter\n"));
        assert_eq!(out.len(), 2, "{:?}", messages(&out));
        assert_eq!(out[0].stream, Stream::Warning);
        assert!(!out[0].message.contains("vvvv"));
        assert_eq!(out[1].message, "after");
    }

    #[test]
    fn overlong_set_result_is_refused_clearly() {
        let mut log = parser(&[]);
        let out = run(
            &mut log,
            format!("::set-result::[\"{}\"]\nafter\n", "r".repeat(KIB64)),
        );
        assert_eq!(messages(&out)[1], "after");
        assert!(
            out[0].message.contains("JOBLOG_RESULT"),
            "{}",
            out[0].message
        );
        assert!(matches!(log.take_result(), Some(ResultText::Invalid(_))));
    }

    #[test]
    fn split_never_cuts_a_utf8_character() {
        // 3-byte characters: 65536 is not a multiple of 3.
        let line = "€".repeat(30_000);
        let out = run_stdout(format!("{line}\n"));
        assert!(out.len() > 1);
        assert!(out.iter().all(|r| !r.message.contains('\u{FFFD}')));
        assert!(out.iter().all(|r| r.message.len() <= KIB64));
        assert_eq!(rejoin(&out), line);
    }

    #[test]
    fn secret_straddling_the_split_is_masked() {
        let secret = "hunter2-secret";
        for offset in KIB64 - secret.len() - 1..=KIB64 + 1 {
            let line = format!("{}{secret}{}", "a".repeat(offset), "b".repeat(100));
            for chunk in [line.len() + 1, 8192, 1000] {
                let mut log = parser(&[secret]);
                let mut out = Vec::new();
                for piece in format!("{line}\n").as_bytes().chunks(chunk) {
                    log.push(Source::Stdout, piece, t(1), &mut out);
                }
                log.finish(t(2), &mut out);
                assert!(out.len() >= 2, "offset {offset}");
                assert!(out.iter().all(|r| r.message.len() <= KIB64));
                assert_eq!(
                    rejoin(&out),
                    format!("{}***{}", "a".repeat(offset), "b".repeat(100)),
                    "offset {offset}, chunk {chunk}"
                );
            }
        }
    }

    #[test]
    fn streaming_a_huge_line_keeps_the_buffer_small() {
        let mut log = parser(&["some-secret"]);
        let bound = KIB64 + 64;
        let piece = vec![b'z'; 8192];
        let total = 20 * 1024 * 1024;
        let mut records = 0;
        let mut out = Vec::new();
        for _ in 0..total / piece.len() {
            log.push(Source::Stdout, &piece, t(1), &mut out);
            assert!(log.buffered_bytes() <= bound, "{}", log.buffered_bytes());
            records += out.len();
            assert!(out.iter().all(|r| r.message.len() == KIB64));
            out.clear();
        }
        log.finish(t(2), &mut out);
        records += out.len();
        assert_eq!(records, total / KIB64);
        assert_eq!(log.buffered_bytes(), 0);

        // One 20 MB read is not copied whole either.
        let mut log = parser(&[]);
        let data = vec![b'z'; total];
        log.push(Source::Stdout, &data, t(1), &mut out);
        assert!(log.buffered_bytes() <= bound);
    }

    #[test]
    fn cap_keeps_head_marker_and_tail() {
        let limits = LogLimits {
            max_records: 100,
            tail_records: 10,
            ..LogLimits::default()
        };
        let mut log = OutputParser::new(limits, Vec::new());
        let mut out = Vec::new();
        for n in 1..=1000 {
            log.push(
                Source::Stdout,
                format!("line {n}\n").as_bytes(),
                t(n),
                &mut out,
            );
        }
        assert_eq!(out.len(), 90);
        assert!(log.summary().truncated);
        log.finish(t(2000), &mut out);
        assert_eq!(out.len(), 101);
        assert_gapless(&out);
        assert_eq!(out[89].message, "line 90");
        let marker = &out[90];
        assert_eq!(marker.stream, Stream::Warning);
        let dropped_bytes: usize = (91..=990).map(|n| format!("line {n}").len()).sum();
        assert_eq!(
            marker.fields,
            json!({"truncated": true, "dropped_records": 900, "dropped_bytes": dropped_bytes})
                .as_object()
                .cloned()
        );
        assert_eq!(
            marker.message,
            "joblog dropped 900 records (7.0 KiB) over the log cap (100 records or 512 MiB); the last 10 records follow"
        );
        assert_eq!(marker.ts, t(991));
        let tail: Vec<String> = (991..=1000).map(|n| format!("line {n}")).collect();
        assert_eq!(messages(&out[91..]), tail);
        let s = log.summary();
        assert_eq!((s.records, s.truncated), (101, true));
        assert_eq!(s.streams.get(Stream::Warning), 1);
    }

    #[test]
    fn cap_by_bytes_keeps_a_bounded_tail() {
        let limits = LogLimits {
            max_bytes: 1000,
            tail_bytes: 100,
            ..LogLimits::default()
        };
        let mut log = OutputParser::new(limits, Vec::new());
        let line = format!("{}\n", "x".repeat(9));
        let out = run(&mut log, line.repeat(500));
        // 100 lines fill the 900-byte head, 11 lines the 100-byte tail.
        assert_eq!(out.len(), 100 + 1 + 11);
        assert_eq!(
            out[100].fields.as_ref().unwrap()["dropped_records"],
            json!(389)
        );
        assert_gapless(&out);
    }

    #[test]
    fn a_record_that_fits_the_head_never_overtakes_the_tail() {
        let limits = LogLimits {
            max_bytes: 1000,
            tail_bytes: 100,
            ..LogLimits::default()
        };
        let mut log = OutputParser::new(limits, Vec::new());
        let input = format!("{}{}\nx\n", "123456789\n".repeat(94), "y".repeat(60));
        // 846 bytes in the head; the long line does not fit in its 900, "x" would.
        let out = run(&mut log, input);
        assert_eq!(out.len(), 96);
        assert_eq!(messages(&out[94..]), [&"y".repeat(60), "x"]);
        assert_gapless(&out);
    }

    #[test]
    fn tail_is_emitted_unmarked_when_nothing_was_dropped() {
        let limits = LogLimits {
            max_records: 100,
            tail_records: 10,
            ..LogLimits::default()
        };
        let mut log = OutputParser::new(limits, Vec::new());
        let mut out = Vec::new();
        for n in 1..=95 {
            log.push(Source::Stdout, format!("{n}\n").as_bytes(), t(n), &mut out);
        }
        assert_eq!(out.len(), 90);
        log.finish(t(100), &mut out);
        assert_eq!(out.len(), 95);
        assert_gapless(&out);
        assert_eq!(out[94].message, "95");
        assert_eq!(out[94].ts, t(95));
        assert!(!log.summary().truncated);
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human_bytes(1), "1 byte");
        assert_eq!(human_bytes(900), "900 bytes");
        assert_eq!(human_bytes(512 * 1024 * 1024), "512 MiB");
        assert_eq!(human_bytes(26_528_972), "25.3 MiB");
    }

    /// A deterministic mix of the input that tends to break line splitters.
    fn tricky_input(seed: u64, len: usize) -> Vec<u8> {
        const TOKENS: [&[u8]; 22] = [
            b"\n",
            b"\r\n",
            b"\r",
            b":",
            b"::",
            b"::warning a=1,b=x%2C::w",
            b"::add-mask::sec",
            b"::stop-commands::T",
            b"::T::",
            b"::group::g",
            b"::set-result::{\"a\":1}",
            b"::set-result::nope",
            b"topsecret",
            b"dG9wc2VjcmV0",
            b"hello ",
            b"\xc3\xa9",
            b"\xe2\x82\xac",
            b"\xff",
            b"\0",
            b"%0A",
            b"0123456789abcdefghijklmnopqrstuvwxyz",
            b"=,",
        ];
        let mut state = seed;
        let mut data = Vec::new();
        while data.len() < len {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            data.extend_from_slice(TOKENS[(state >> 33) as usize % TOKENS.len()]);
        }
        data
    }

    fn small_limits() -> LogLimits {
        LogLimits {
            line_max: 16,
            ..LogLimits::default()
        }
    }

    fn feed_in_chunks(
        data: &[u8],
        sizes: impl Fn(usize) -> usize,
    ) -> (Vec<Record>, Option<ResultText>) {
        let mut log = OutputParser::new(small_limits(), vec!["topsecret".to_string()]);
        let mut out = Vec::new();
        let mut rest = data;
        let mut n = 0;
        while !rest.is_empty() {
            let size = sizes(n).clamp(1, rest.len());
            log.push(Source::Stdout, &rest[..size], t(n as i64), &mut out);
            rest = &rest[size..];
            n += 1;
        }
        log.finish(t(0), &mut out);
        for r in &mut out {
            r.ts = t(0);
        }
        (out, log.take_result())
    }

    #[test]
    fn chunking_does_not_change_the_records() {
        for seed in 0..20 {
            let data = tricky_input(seed, 3000);
            let whole = feed_in_chunks(&data, |_| usize::MAX);
            assert!(whole.0.len() > 50);
            assert_gapless(&whole.0);
            let bytewise = feed_in_chunks(&data, |_| 1);
            assert_eq!(whole, bytewise, "seed {seed}, byte by byte");
            let uneven = feed_in_chunks(&data, |n| (n * 7919) % 23);
            assert_eq!(whole, uneven, "seed {seed}, uneven chunks");
        }
    }

    #[test]
    fn flushes_at_any_point_never_leak_a_secret_or_break_seq() {
        for seed in 0..20 {
            let data = tricky_input(seed, 3000);
            for every in [1, 2, 5, 13] {
                let mut log = OutputParser::new(small_limits(), vec!["topsecret".to_string()]);
                let mut out = Vec::new();
                for (n, piece) in data.chunks(3).enumerate() {
                    let src = if n % 50 < 25 {
                        Source::Stdout
                    } else {
                        Source::Stderr
                    };
                    log.push(src, piece, t(1), &mut out);
                    if n % every == 0 {
                        log.flush_partial(src, t(1), &mut out);
                        log.flush_partial(Source::Stdout, t(1), &mut out);
                    }
                    assert!(log.buffered_bytes() <= 2 * (16 + 16));
                }
                log.finish(t(2), &mut out);
                assert_gapless(&out);
                for src in [Stream::Output, Stream::Error] {
                    let mine: Vec<Record> =
                        out.iter().filter(|r| r.stream == src).cloned().collect();
                    let text = rejoin(&mine);
                    assert!(!text.contains("topsecret"), "seed {seed}: {text}");
                    assert!(!text.contains("dG9wc2VjcmV0"), "seed {seed}: {text}");
                }
            }
        }
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        let limits = LogLimits {
            max_records: 0,
            max_bytes: 0,
            tail_records: 5,
            tail_bytes: 5,
            line_max: 0,
        };
        let mut log = OutputParser::new(limits, vec![String::new(), "é".to_string()]);
        let mut out = Vec::new();
        for data in [
            &b""[..],
            b"::",
            b"\n",
            b"\xe2\x82",
            b"::add-mask::\n",
            b"\xff\xfe\n",
        ] {
            log.push(Source::Stdout, data, t(1), &mut out);
            log.flush_partial(Source::Stdout, t(1), &mut out);
        }
        log.finish(t(2), &mut out);
        log.finish(t(3), &mut out);
        assert_gapless(&out);
        assert!(log.summary().truncated);
    }
}
