//! A job's log as text: each record rendered for a person (stream
//! prefixes, group marks, escaped control characters) or as one JSON line,
//! `output` to stdout and every other stream to stderr, in the job's order.

use std::io::{self, IsTerminal, Write};

use joblog_core::Stream;
use serde_json::{Map, Value};

use super::{escape_display, write_answer};
use crate::client::commands::{Answer, Sink};
use crate::client::wire::LogRecord;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dest {
    Out,
    Err,
}

/// What a group record means to a viewer (docs/records.md `::group::`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GroupMark {
    Start,
    End,
}

fn group_mark(fields: Option<&Map<String, Value>>) -> Option<GroupMark> {
    let f = fields?;
    if f.get("endgroup").and_then(Value::as_bool) == Some(true) {
        return Some(GroupMark::End);
    }
    match f.get("group")? {
        Value::Bool(true) => Some(GroupMark::Start),
        Value::Bool(false) => Some(GroupMark::End),
        Value::String(s) => match s.as_str() {
            "start" | "begin" | "open" => Some(GroupMark::Start),
            "end" | "close" | "stop" => Some(GroupMark::End),
            _ => None,
        },
        _ => None,
    }
}

fn is_continued(fields: Option<&Map<String, Value>>) -> bool {
    fields
        .and_then(|f| f.get("continued"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn dest_of(r: &LogRecord) -> Dest {
    if r.stream == Stream::Output.name() {
        Dest::Out
    } else {
        Dest::Err
    }
}

/// The text shown for a record (without its newline), or `None` for records
/// that only structure the log (end of a group).
fn render_record(r: &LogRecord, timestamps: bool, keep_sgr: bool) -> Option<String> {
    let fields = r.fields.as_ref();
    let mut s = String::new();
    if timestamps {
        s.push_str(&escape_display(&r.ts, false));
        s.push(' ');
    }
    match group_mark(fields) {
        Some(GroupMark::End) => return None,
        Some(GroupMark::Start) => {
            s.push_str("▸ ");
            s.push_str(&escape_display(&r.message, keep_sgr));
            return Some(s);
        }
        None => {}
    }
    match Stream::parse(&r.stream) {
        Some(Stream::Output) | Some(Stream::Error) => {}
        Some(Stream::Warning) => s.push_str("warning: "),
        Some(Stream::Information) => s.push_str("info: "),
        Some(Stream::Verbose) => s.push_str("verbose: "),
        Some(Stream::Debug) => s.push_str("debug: "),
        Some(Stream::Progress) => {
            let pct = fields.and_then(|f| f.get("percent")).and_then(|p| match p {
                Value::Number(n) => Some(n.to_string()),
                Value::String(t) => Some(escape_display(t, false).into_owned()),
                _ => None,
            });
            match pct {
                Some(p) => {
                    s.push_str("progress ");
                    s.push_str(&p);
                    s.push_str("%: ");
                }
                None => s.push_str("progress: "),
            }
        }
        None => {
            s.push_str(&escape_display(&r.stream, false));
            s.push_str(": ");
        }
    }
    s.push_str(&escape_display(&r.message, keep_sgr));
    Some(s)
}

/// Writes records to stdout (`output`) and stderr (the rest).
///
/// A record's newline is written only when the next record arrives, so a
/// record marked `continued` (a long line split by the server) is joined to
/// the line before it, as the job wrote it.
pub(in crate::client) struct Printer<O: Write, E: Write> {
    out: O,
    err: E,
    out_tty: bool,
    err_tty: bool,
    timestamps: bool,
    json: bool,
    open_line: Option<Dest>,
    last: Option<Dest>,
}

impl Printer<io::BufWriter<io::Stdout>, io::BufWriter<io::Stderr>> {
    pub(in crate::client) fn stdio(timestamps: bool, json: bool) -> Self {
        Printer {
            out_tty: io::stdout().is_terminal(),
            err_tty: io::stderr().is_terminal(),
            out: io::BufWriter::new(io::stdout()),
            err: io::BufWriter::new(io::stderr()),
            timestamps,
            json,
            open_line: None,
            last: None,
        }
    }
}

impl<O: Write, E: Write> Printer<O, E> {
    fn writer(&mut self, d: Dest) -> &mut dyn Write {
        match d {
            Dest::Out => &mut self.out,
            Dest::Err => &mut self.err,
        }
    }

    /// Switching between stdout and stderr flushes the other one first, so
    /// a terminal shows the lines in the job's order.
    fn switch_to(&mut self, d: Dest) -> io::Result<()> {
        if let Some(prev) = self.last {
            if prev != d {
                self.writer(prev).flush()?;
            }
        }
        self.last = Some(d);
        Ok(())
    }

    fn record(&mut self, r: &LogRecord) -> io::Result<()> {
        if self.json {
            let line = serde_json::to_string(r).map_err(io::Error::other)?;
            self.switch_to(Dest::Out)?;
            return writeln!(self.out, "{line}");
        }
        let d = dest_of(r);
        let keep_sgr = match d {
            Dest::Out => self.out_tty,
            Dest::Err => self.err_tty,
        };
        if is_continued(r.fields.as_ref()) && self.open_line == Some(d) {
            self.switch_to(d)?;
            let text = escape_display(&r.message, keep_sgr);
            return self.writer(d).write_all(text.as_bytes());
        }
        let Some(text) = render_record(r, self.timestamps, keep_sgr) else {
            return Ok(());
        };
        self.close_line()?;
        self.switch_to(d)?;
        self.writer(d).write_all(text.as_bytes())?;
        self.open_line = Some(d);
        Ok(())
    }

    fn close_line(&mut self) -> io::Result<()> {
        if let Some(d) = self.open_line.take() {
            self.switch_to(d)?;
            self.writer(d).write_all(b"\n")?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()?;
        self.err.flush()
    }

    fn finish(&mut self) -> io::Result<()> {
        self.close_line()?;
        self.flush()
    }
}

impl<O: Write, E: Write> Sink for Printer<O, E> {
    fn answer(&mut self, answer: &Answer) -> anyhow::Result<()> {
        self.close_line()?;
        self.switch_to(Dest::Out)?;
        write_answer(&mut self.out, answer)?;
        Ok(self.out.flush()?)
    }

    fn records(&mut self, page: &[LogRecord]) -> anyhow::Result<()> {
        for r in page {
            self.record(r)?;
        }
        Ok(self.flush()?)
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        Ok(Printer::finish(self)?)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rec(stream: &str, message: &str, fields: Option<Value>) -> LogRecord {
        LogRecord {
            seq: 1,
            ts: "2026-11-22T10:15:02.123456Z".into(),
            stream: stream.into(),
            message: message.into(),
            fields: fields.and_then(|f| f.as_object().cloned()),
        }
    }

    #[test]
    fn record_rendering() {
        let r = |s, m, f| render_record(&rec(s, m, f), false, false);
        assert_eq!(r("output", "hello", None).unwrap(), "hello");
        assert_eq!(r("error", "boom", None).unwrap(), "boom");
        assert_eq!(r("warning", "careful", None).unwrap(), "warning: careful");
        assert_eq!(r("information", "fyi", None).unwrap(), "info: fyi");
        assert_eq!(r("debug", "d", None).unwrap(), "debug: d");
        assert_eq!(
            r("progress", "Copying", Some(json!({"percent": 40}))).unwrap(),
            "progress 40%: Copying"
        );
        assert_eq!(r("progress", "Copying", None).unwrap(), "progress: Copying");
        assert_eq!(
            r("information", "Build", Some(json!({"group": "start"}))).unwrap(),
            "▸ Build"
        );
        assert_eq!(r("information", "", Some(json!({"group": "end"}))), None);
        assert_eq!(r("future", "x", None).unwrap(), "future: x");
        assert_eq!(r("output", "nul\0", None).unwrap(), "nul\\0");
        assert_eq!(
            render_record(&rec("warning", "w", None), true, false).unwrap(),
            "2026-11-22T10:15:02.123456Z warning: w"
        );
        assert_eq!(dest_of(&rec("output", "", None)), Dest::Out);
        assert_eq!(dest_of(&rec("warning", "", None)), Dest::Err);
    }

    fn printer(json: bool) -> Printer<Vec<u8>, Vec<u8>> {
        Printer {
            out: Vec::new(),
            err: Vec::new(),
            out_tty: false,
            err_tty: false,
            timestamps: false,
            json,
            open_line: None,
            last: None,
        }
    }

    #[test]
    fn printer_splits_streams_and_joins_continued_lines() {
        let mut p = printer(false);
        p.record(&rec("output", "a", None)).unwrap();
        p.record(&rec("output", "b1", None)).unwrap();
        p.record(&rec("output", "b2", Some(json!({"continued": true}))))
            .unwrap();
        p.record(&rec("error", "e", None)).unwrap();
        p.record(&rec("warning", "w", None)).unwrap();
        p.finish().unwrap();
        assert_eq!(String::from_utf8(p.out).unwrap(), "a\nb1b2\n");
        assert_eq!(String::from_utf8(p.err).unwrap(), "e\nwarning: w\n");
    }

    #[test]
    fn printer_json_lines_keep_api_field_order() {
        let mut p = printer(true);
        p.record(&rec("warning", "w", Some(json!({"file": "a.py"}))))
            .unwrap();
        p.record(&rec("output", "o", None)).unwrap();
        p.finish().unwrap();
        assert_eq!(
            String::from_utf8(p.out).unwrap(),
            "{\"seq\":1,\"ts\":\"2026-11-22T10:15:02.123456Z\",\"stream\":\"warning\",\"message\":\"w\",\"fields\":{\"file\":\"a.py\"}}\n\
             {\"seq\":1,\"ts\":\"2026-11-22T10:15:02.123456Z\",\"stream\":\"output\",\"message\":\"o\"}\n"
        );
        assert!(p.err.is_empty());
    }
}
