//! A job's log as text: each record rendered for a person (stream labels,
//! coloured on a terminal, group marks, escaped control characters) or as
//! one JSON line, in the job's order. `joblog logs` prints every record on
//! stdout, where `| grep` and `> file` find them all; `joblog run` keeps a
//! job's streams apart, `output` on stdout and the others on stderr.

use std::io::{self, IsTerminal, Write};

use joblog_core::Stream;
use serde_json::{Map, Value};

use super::{escape_display, write_answer};
use crate::commands::{Answer, Sink};
use crate::wire::LogRecord;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dest {
    Out,
    Err,
}

/// Where a log's records go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Every record on stdout, each stream but `output` labelled
    /// (`error: `, `warning: `, …): what a log read later is for.
    Stdout,
    /// `output` on stdout, every other stream on stderr, as a job being
    /// watched writes them (its `error` records unlabelled: stderr says it).
    Split,
}

/// How a label looks on a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tint {
    Red,
    Yellow,
    Dim,
}

impl Tint {
    fn sgr(self) -> &'static str {
        match self {
            Tint::Red => "\x1b[31m",
            Tint::Yellow => "\x1b[33m",
            Tint::Dim => "\x1b[2m",
        }
    }
}

/// How records are rendered for one destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Style {
    timestamps: bool,
    /// Keep the job's own colour codes (on a terminal).
    keep_sgr: bool,
    /// Colour the labels.
    colour: bool,
    /// Label `error` records too (they share stdout with `output`).
    label_errors: bool,
}

/// Colour only on a terminal, and never when `NO_COLOR` is set to anything
/// but the empty string (no-color.org), as for the server's own log.
fn use_colour(is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    is_terminal && no_color.is_none_or(|v| v.is_empty())
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

fn dest_of(r: &LogRecord, layout: Layout) -> Dest {
    match layout {
        Layout::Stdout => Dest::Out,
        Layout::Split if r.stream == Stream::Output.name() => Dest::Out,
        Layout::Split => Dest::Err,
    }
}

/// The label a record's stream is shown with (`warning: `), if any.
fn label(r: &LogRecord, label_errors: bool) -> Option<(String, Tint)> {
    let fields = r.fields.as_ref();
    Some(match Stream::parse(&r.stream) {
        Some(Stream::Output) => return None,
        Some(Stream::Error) if !label_errors => return None,
        Some(Stream::Error) => ("error: ".into(), Tint::Red),
        Some(Stream::Warning) => ("warning: ".into(), Tint::Yellow),
        Some(Stream::Information) => ("info: ".into(), Tint::Dim),
        Some(Stream::Verbose) => ("verbose: ".into(), Tint::Dim),
        Some(Stream::Debug) => ("debug: ".into(), Tint::Dim),
        Some(Stream::Progress) => {
            let pct = fields.and_then(|f| f.get("percent")).and_then(|p| match p {
                Value::Number(n) => Some(n.to_string()),
                Value::String(t) => Some(escape_display(t, false).into_owned()),
                _ => None,
            });
            match pct {
                Some(p) => (format!("progress {p}%: "), Tint::Dim),
                None => ("progress: ".into(), Tint::Dim),
            }
        }
        None => (format!("{}: ", escape_display(&r.stream, false)), Tint::Dim),
    })
}

/// The text shown for a record (without its newline), or `None` for records
/// that only structure the log (end of a group).
fn render_record(r: &LogRecord, style: Style) -> Option<String> {
    let mut s = String::new();
    if style.timestamps {
        s.push_str(&super::job::full_time(&r.ts));
        s.push(' ');
    }
    match group_mark(r.fields.as_ref()) {
        Some(GroupMark::End) => return None,
        Some(GroupMark::Start) => {
            s.push_str("▸ ");
            s.push_str(&escape_display(&r.message, style.keep_sgr));
            return Some(s);
        }
        None => {}
    }
    if let Some((text, tint)) = label(r, style.label_errors) {
        if style.colour {
            s.push_str(tint.sgr());
            s.push_str(&text);
            s.push_str("\x1b[0m");
        } else {
            s.push_str(&text);
        }
    }
    s.push_str(&escape_display(&r.message, style.keep_sgr));
    Some(s)
}

/// Writes records to stdout, or to stdout and stderr (see [`Layout`]).
///
/// A record's newline is written only when the next record arrives, so a
/// record marked `continued` (a long line split by the server) is joined to
/// the line before it, as the job wrote it.
pub(crate) struct Printer<O: Write, E: Write> {
    out: O,
    err: E,
    layout: Layout,
    out_style: Style,
    err_style: Style,
    json: bool,
    open_line: Option<Dest>,
    last: Option<Dest>,
}

impl Printer<io::BufWriter<io::Stdout>, io::BufWriter<io::Stderr>> {
    pub(crate) fn stdio(layout: Layout, timestamps: bool, json: bool) -> Self {
        let no_color = std::env::var_os("NO_COLOR");
        let style = |tty: bool| Style {
            timestamps,
            keep_sgr: tty,
            colour: use_colour(tty, no_color.as_deref()),
            label_errors: layout == Layout::Stdout,
        };
        Printer {
            out_style: style(io::stdout().is_terminal()),
            err_style: style(io::stderr().is_terminal()),
            out: io::BufWriter::new(io::stdout()),
            err: io::BufWriter::new(io::stderr()),
            layout,
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
        let d = dest_of(r, self.layout);
        let style = match d {
            Dest::Out => self.out_style,
            Dest::Err => self.err_style,
        };
        if is_continued(r.fields.as_ref()) && self.open_line == Some(d) {
            self.switch_to(d)?;
            let text = escape_display(&r.message, style.keep_sgr);
            return self.writer(d).write_all(text.as_bytes());
        }
        let Some(text) = render_record(r, style) else {
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
mod tests;
