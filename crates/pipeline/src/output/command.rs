//! Workflow commands (docs/records.md): parsing of `::name key=value,...::message`
//! lines and of the percent escapes CI tools use inside them, and what each
//! command does to the job's output. Commands are recognised only at the
//! start of a line — except `::add-mask::`, recognised anywhere in a line
//! (after `printf 'working... '`, say), since missing it leaks a secret —
//! and never while `::stop-commands::` is in effect.

use std::borrow::Cow;

use joblog_core::{Record, Stream, Timestamp};
use serde_json::{Map, Value};

use super::cap::human_bytes;
use super::lines::Rest;
use super::{OutputParser, ResultText, Source};

/// Most `::add-mask::` values one job may register, and their total size.
/// Each one grows the automaton every record is scanned with (and its memory),
/// so a job masking in a loop would otherwise slow the whole server; past
/// either limit the command is refused loudly.
pub(super) const MAX_ADDED_MASKS: usize = 1024;
const MAX_ADDED_MASK_BYTES: usize = 256 * 1024;

/// Commands joblog interprets; any other `::name::` line is ordinary text.
const KNOWN: [&str; 12] = [
    "error",
    "warning",
    "notice",
    "info",
    "verbose",
    "debug",
    "progress",
    "group",
    "endgroup",
    "add-mask",
    "set-result",
    "stop-commands",
];

/// `::add-mask::`, the one command recognised anywhere in a line.
pub(super) const ADD_MASK: &str = "::add-mask::";

/// Where `::add-mask::` starts in `bytes`, if it does.
pub(super) fn find_add_mask(bytes: &[u8]) -> Option<usize> {
    memchr::memmem::find(bytes, ADD_MASK.as_bytes())
}

/// A workflow command as written, before its effects.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Command<'a> {
    pub name: &'a str,
    /// Keys as written, values unescaped.
    pub params: Vec<(&'a str, String)>,
    /// As written: each command decides whether its message is escaped.
    pub message: &'a str,
}

/// Parses a line that starts with `::`; `None` means it is ordinary text
/// (unknown name, no closing `::`, or a parameter without `=`).
pub(crate) fn parse(line: &str) -> Option<Command<'_>> {
    let rest = line.strip_prefix("::")?;
    let end = rest.find("::")?;
    let (head, message) = (&rest[..end], &rest[end + 2..]);
    let (name, params_text) = match head.split_once(' ') {
        Some((name, params)) => (name, Some(params)),
        None => (head, None),
    };
    if !KNOWN.contains(&name) {
        return None;
    }
    let mut params = Vec::new();
    for part in params_text.unwrap_or_default().split(',') {
        if part.trim().is_empty() {
            continue;
        }
        let (key, value) = part.split_once('=')?;
        let key = key.trim();
        if key.is_empty() {
            return None;
        }
        params.push((key, unescape(value, true).into_owned()));
    }
    Some(Command {
        name,
        params,
        message,
    })
}

/// Undoes GitHub's escaping: `%25 %0D %0A` everywhere, plus `%3A %2C` in
/// parameter values (where `:` and `,` are delimiters).
pub(crate) fn unescape(text: &str, param: bool) -> Cow<'_, str> {
    if !text.contains('%') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let code = rest.get(i + 1..i + 3);
        let decoded = match code {
            Some("25") => Some('%'),
            Some("0D") => Some('\r'),
            Some("0A") => Some('\n'),
            Some("3A") if param => Some(':'),
            Some("2C") if param => Some(','),
            _ => None,
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[i + 3..];
            }
            None => {
                out.push('%');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// A parameter value as a field: JSON numbers become numbers (`line=3`),
/// everything else stays text. Integers too large for 64 bits stay text so
/// IDs are not rounded.
pub(crate) fn field_value(value: String) -> Value {
    let looks_numeric = value.starts_with(|c: char| c == '-' || c.is_ascii_digit())
        && value.ends_with(|c: char| c.is_ascii_digit());
    if looks_numeric {
        if let Ok(n) = serde_json::from_str::<serde_json::Number>(&value) {
            let integral = !value.contains(['.', 'e', 'E']);
            if !(integral && n.is_f64()) {
                return Value::Number(n);
            }
        }
    }
    Value::String(value)
}

impl OutputParser {
    /// Handles the start of a line (the whole line, or its first piece):
    /// workflow commands are recognised here only.
    pub(super) fn line_start(
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
        if let Some(at) = find_add_mask(text.as_bytes()).filter(|at| *at > 0) {
            // The mask first, so the text before it is masked with it too;
            // what follows the value on a long line is the value's.
            self.add_mask(&text[at + ADD_MASK.len()..], whole, ts, out);
            let before = text[..at].to_owned();
            self.line_start(src, before.as_bytes(), true, ts, out);
            return Rest::Discard;
        }
        let Some(cmd) = parse(&text) else {
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
            fields.insert(key, field_value(value));
        }
        match cmd.name {
            "group" => drop(fields.insert("group".into(), "start".into())),
            "endgroup" => drop(fields.insert("group".into(), "end".into())),
            _ => {}
        }
        let message = unescape(cmd.message, false).into_owned();
        let fields = (!fields.is_empty()).then_some(fields);
        self.emit(stream, message, fields, ts, out);
        Rest::Record(stream)
    }

    pub(super) fn add_mask(
        &mut self,
        raw: &str,
        whole: bool,
        ts: Timestamp,
        out: &mut Vec<Record>,
    ) {
        let unescaped = unescape(raw, false);
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
            // Checked without building the tree: a result is stored as
            // the text it was given.
            match serde_json::from_str::<serde::de::IgnoredAny>(json) {
                Ok(_) => joblog_core::result_blob::check_depth(json.as_bytes())
                    .map(|()| json.trim().to_owned())
                    .map_err(|e| format!("the result set by ::set-result:: is refused: it is {e}")),
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_name_params_and_message() {
        let c = parse("::warning file=app.py, line=3::deprecated call").unwrap();
        assert_eq!(c.name, "warning");
        assert_eq!(
            c.params,
            vec![("file", "app.py".to_string()), ("line", "3".to_string())]
        );
        assert_eq!(c.message, "deprecated call");
        let c = parse("::endgroup::").unwrap();
        assert_eq!((c.name, c.message, c.params.len()), ("endgroup", "", 0));
        // The first `::` after the name closes it; later ones belong to the message.
        assert_eq!(parse("::error::a::b").unwrap().message, "a::b");
    }

    #[test]
    fn bad_shapes_are_not_commands() {
        for line in [
            "::",
            "::::",
            "::warning",
            "::warning deprecated",
            "::bogus::x",
            "::Warning::x",
            ":: warning::x",
            "::warning file::x",
            "::warning =3::x",
            "x::warning::y",
        ] {
            assert_eq!(parse(line), None, "{line}");
        }
        // An empty entry (trailing comma) is tolerated.
        assert!(parse("::warning a=1,::x").is_some());
    }

    #[test]
    fn unescapes_like_github() {
        assert_eq!(unescape("50%25 a%0Db%0Ac", false), "50% a\rb\nc");
        assert_eq!(unescape("a%3Ab%2Cc", false), "a%3Ab%2Cc");
        assert_eq!(unescape("a%3Ab%2Cc", true), "a:b,c");
        assert_eq!(unescape("%252C%", true), "%2C%");
        assert_eq!(unescape("%0", false), "%0");
        assert_eq!(unescape("%é", false), "%é");
        let c = parse("::warning title=a%2Cb%3A%0A::x").unwrap();
        assert_eq!(c.params[0].1, "a,b:\n");
    }

    #[test]
    fn numbers_become_numbers() {
        assert_eq!(field_value("3".into()), json!(3));
        assert_eq!(field_value("-2.5".into()), json!(-2.5));
        assert_eq!(field_value("1e3".into()), json!(1000.0));
        for text in [
            "app.py",
            "",
            " 3",
            "3 ",
            "007",
            "1.",
            "99999999999999999999999",
            "NaN",
        ] {
            assert_eq!(field_value(text.into()), json!(text), "{text}");
        }
    }
}
