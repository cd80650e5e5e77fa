//! Line splitting: a pipe's bytes become lines at `\n`, and lines longer
//! than `line_max` become several pieces, never cut inside a UTF-8
//! character nor inside an occurrence of a masked value (which would let
//! both halves through unmasked). Partial lines wait in a per-pipe buffer
//! until their newline, the idle timer or the end of the job.

use joblog_core::{Record, Stream, Timestamp};
use serde_json::{Map, Value};

use super::command::{find_add_mask, ADD_MASK};
use super::{OutputParser, Source};

/// What the rest of a line becomes once its first piece has been handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rest {
    /// Further pieces are records of this stream marked `continued`.
    Record(Stream),
    /// The line was a command that consumes it whole: drop the remainder.
    Discard,
}

/// The unfinished line of one pipe.
#[derive(Debug, Default)]
pub(super) struct LineBuf {
    /// Bytes not emitted yet; never contains `\n`.
    buf: Vec<u8>,
    /// `None` while the next byte starts a line.
    rest: Option<Rest>,
}

impl OutputParser {
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
        if self.stop_token.is_none() {
            // An `::add-mask::` (or what may become one) waits for its
            // line's end: shown early, the rest of its value would pass
            // unmasked.
            cut = cut.min(add_mask_cut(&buf));
        }
        // What may be shown goes out in pieces of at most `line_max`, as a
        // long line's would.
        let mut start = 0;
        while start < cut && self.lines[i].rest != Some(Rest::Discard) {
            let end = if cut - start > self.line_max {
                start + self.long_cut(&buf[start..cut])
            } else {
                cut
            };
            self.piece(src, &buf[start..end], false, ts, out);
            start = end;
        }
        if self.lines[i].rest == Some(Rest::Discard) {
            buf.clear();
        } else {
            buf.drain(..start);
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

    /// End of the job: unterminated last lines are handled as complete lines
    /// (so a final `::set-result::{}` without newline still counts).
    pub(super) fn finish_lines(&mut self, ts: Timestamp, out: &mut Vec<Record>) {
        for src in [Source::Stdout, Source::Stderr] {
            let i = src.index();
            let line = std::mem::take(&mut self.lines[i].buf);
            if !line.is_empty() {
                self.complete_line(src, &line, ts, out);
            }
            self.lines[i].rest = None;
        }
    }

    /// A line longer than this many buffered bytes gets a piece cut off; the
    /// margin past `line_max` lets the cut see any masked value across it.
    fn buffer_limit(&self) -> usize {
        self.line_max + self.masker.max_len().max(ADD_MASK.len())
    }

    /// Where to cut an overlong line: at most `line_max` bytes in, never
    /// inside a UTF-8 character nor an occurrence of a masked value (both
    /// halves would pass unmasked); and an `::add-mask::` inside the piece
    /// is cut before, so that it starts the next piece with `line_max`
    /// bytes for its value rather than what was left of this one.
    fn long_cut(&mut self, line: &[u8]) -> usize {
        let mut cut = utf8_cut(line, self.line_max);
        if let Some((start, end)) = self.masker.spanning(line, cut) {
            cut = if start > 0 { start } else { end };
        }
        if self.stop_token.is_none() {
            if let Some(start) = add_mask_within(line, cut) {
                cut = start;
            }
        }
        cut
    }

    /// Cuts at most `line_max` bytes off an overlong buffered line, never
    /// inside a UTF-8 character nor inside an occurrence of a masked value.
    fn emit_long_piece(&mut self, src: Source, ts: Timestamp, out: &mut Vec<Record>) {
        let i = src.index();
        let mut buf = std::mem::take(&mut self.lines[i].buf);
        // The buffer holds at least `max_len` bytes, and the length of
        // `::add-mask::`, past the cut, so whatever crosses it is visible.
        let cut = self.long_cut(&buf);
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
            let cut = self.long_cut(line);
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
                let add_mask = self
                    .stop_token
                    .is_none()
                    .then(|| find_add_mask(bytes))
                    .flatten();
                let (text, rest) = match add_mask {
                    Some(at) => {
                        let value = String::from_utf8_lossy(&bytes[at + ADD_MASK.len()..]);
                        self.add_mask(&value, last, ts, out);
                        (&bytes[..at], Rest::Discard)
                    }
                    None => (bytes, Rest::Record(stream)),
                };
                // Empty when a flushed partial line simply got its newline.
                if !text.is_empty() {
                    let message = String::from_utf8_lossy(text).into_owned();
                    self.emit(stream, message, Some(continued()), ts, out);
                }
                Some(rest)
            }
            Some(Rest::Discard) => Some(Rest::Discard),
        };
        self.lines[i].rest = if last { None } else { rest };
    }
}

/// Marks a record as a further piece of the line before it, so a viewer can
/// join the pieces back.
pub(super) fn continued() -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("continued".into(), true.into());
    fields
}

/// The start of the first `::add-mask::` that begins after the start of
/// `line` and before `cut`, if there is one.
fn add_mask_within(line: &[u8], cut: usize) -> Option<usize> {
    let to = (cut + ADD_MASK.len() - 1).min(line.len());
    find_add_mask(line.get(1..to)?).map(|at| 1 + at)
}

/// Where an idle flush of `buf` must stop so that an `::add-mask::` in it,
/// or at its end the start of one, waits for the rest of its line.
fn add_mask_cut(buf: &[u8]) -> usize {
    let pattern = ADD_MASK.as_bytes();
    if let Some(at) = find_add_mask(buf) {
        return at;
    }
    let longest = (1..pattern.len().min(buf.len() + 1))
        .rev()
        .find(|n| buf.ends_with(&pattern[..*n]))
        .unwrap_or(0);
    buf.len() - longest
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
