//! One entry as an RFC 5424 message,
//! `<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID - MSG`, cut to fit a
//! size limit. A JSON message that is too long stays valid JSON: its
//! timeline is shortened from the end first, then its largest fields are
//! dropped, then its text is cut, and a `truncated` field says so.

use serde_json::{json, Map, Value};

use super::target::Facility;
use crate::entry::{Entry, Level};
use crate::format::{human_line, json_line, Format};
use crate::sinks::clock::Utc;

/// What every message of a sink starts with, made printable once.
#[derive(Debug, Clone)]
pub struct Header {
    facility: Facility,
    hostname: String,
    app_name: String,
    procid: String,
}

/// RFC 5424's limits on the header fields.
const HOSTNAME_MAX: usize = 255;
const APP_NAME_MAX: usize = 48;
const PROCID_MAX: usize = 128;
const MSGID_MAX: usize = 32;

/// Marks human text cut to fit.
const CUT_MARK: &str = " [truncated]";

impl Header {
    pub fn new(facility: Facility, hostname: &str, app_name: &str, pid: u32) -> Header {
        Header {
            facility,
            hostname: header_field(hostname, HOSTNAME_MAX),
            app_name: header_field(app_name, APP_NAME_MAX),
            procid: header_field(&pid.to_string(), PROCID_MAX),
        }
    }

    /// The machine may have been renamed since the sink was made.
    pub fn set_hostname(&mut self, hostname: &str) {
        self.hostname = header_field(hostname, HOSTNAME_MAX);
    }

    #[cfg(test)]
    pub fn hostname(&self) -> &str {
        &self.hostname
    }

    /// Appends `entry` as one message of at most `limit` bytes (the
    /// header always whole) to `out`.
    pub fn write(&self, entry: &Entry, format: Format, limit: usize, out: &mut Vec<u8>) {
        let start = out.len();
        let pri = u16::from(self.facility.code()) * 8 + u16::from(severity(entry.level));
        out.extend_from_slice(
            format!(
                "<{pri}>1 {} {} {} {} {} - ",
                Utc::of(entry.at).rfc3339(),
                self.hostname,
                self.app_name,
                self.procid,
                header_field(entry.log.as_str(), MSGID_MAX),
            )
            .as_bytes(),
        );
        let budget = limit.saturating_sub(out.len() - start);
        match format {
            Format::Json => fit_json(entry, budget, out),
            Format::Human => {
                let mut text = Vec::new();
                human_line(entry, &mut text);
                fit_text(&String::from_utf8_lossy(&text), budget, out);
            }
        }
    }
}

/// RFC 5424 severity: error 3, warning 4, informational 6, debug 7.
pub fn severity(level: Level) -> u8 {
    match level {
        Level::Error => 3,
        Level::Warn => 4,
        Level::Info => 6,
        Level::Debug | Level::Trace => 7,
    }
}

/// A header field as RFC 5424 allows it: printable US-ASCII without
/// spaces (anything else becomes `_`), at most `max` characters, `-`
/// when empty.
pub fn header_field(s: &str, max: usize) -> String {
    let field: String = s
        .chars()
        .take(max)
        .map(|c| if c.is_ascii_graphic() { c } else { '_' })
        .collect();
    if field.is_empty() {
        "-".into()
    } else {
        field
    }
}

fn fit_text(text: &str, budget: usize, out: &mut Vec<u8>) {
    if text.len() <= budget {
        out.extend_from_slice(text.as_bytes());
        return;
    }
    let cut = floor_char_boundary(text, budget.saturating_sub(CUT_MARK.len()));
    out.extend_from_slice(&text.as_bytes()[..cut]);
    out.extend_from_slice(CUT_MARK.as_bytes());
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn json_len(entry: &Entry) -> usize {
    let mut scratch = Vec::new();
    json_line(entry, &mut scratch);
    scratch.len()
}

fn value_len(v: &Value) -> usize {
    serde_json::to_vec(v).map_or(0, |b| b.len())
}

fn fit_json(entry: &Entry, budget: usize, out: &mut Vec<u8>) {
    let start = out.len();
    json_line(entry, out);
    let original = out.len() - start;
    if original <= budget {
        return;
    }
    out.truncate(start);
    let mut e = entry.clone();
    e.fields.make_owned();
    let mut mark = Map::new();
    mark.insert("bytes".into(), json!(original));
    e.fields.remove("truncated");
    e.fields.insert("truncated", Value::Object(mark.clone()));

    // The beginning of a timeline says how the operation started; keep
    // as much of it as fits.
    if let Some(Value::Array(events)) = e.fields.get_mut("events") {
        let events = std::mem::take(events);
        mark.insert("events_dropped".into(), json!(events.len()));
        e.fields.insert("truncated", Value::Object(mark.clone()));
        let mut room = budget.saturating_sub(json_len(&e));
        let kept = events
            .iter()
            .take_while(|ev| {
                let n = value_len(ev) + 1;
                let fits = n <= room;
                room = room.saturating_sub(n);
                fits
            })
            .count();
        mark.insert("events_dropped".into(), json!(events.len() - kept));
        e.fields.insert("truncated", Value::Object(mark.clone()));
        e.fields
            .insert("events", Value::Array(events[..kept].to_vec()));
    }

    // Then whatever is largest goes first: a field, or the message's
    // text cut (to `…` at most; the fields go after it).
    let mut dropped = 0usize;
    loop {
        let over = json_len(&e).saturating_sub(budget);
        if over == 0 {
            break;
        }
        let biggest = e
            .fields
            .iter()
            .filter(|(k, _)| *k != "truncated")
            .map(|(k, v)| (value_len(&v.to_json()), k))
            .max()
            .map(|(n, k)| (n, k.to_string()));
        match biggest {
            Some((n, _)) if e.message.len() > ELLIPSIS.len() && e.message.len() >= n => {
                // No shorter than the field that goes next, so the two
                // share what room there is.
                let by = over.min(e.message.len() + 1 - n);
                cut(&mut e.message, by);
            }
            Some((_, key)) => {
                e.fields.remove(&key);
                dropped += 1;
                mark.insert("fields_dropped".into(), json!(dropped));
                e.fields.insert("truncated", Value::Object(mark.clone()));
            }
            None => {
                // Only the fixed keys are left: the kind is all that can
                // still give (a limit of at least 2 KiB leaves room for
                // the rest).
                cut(&mut e.message, over);
                let over = json_len(&e).saturating_sub(budget);
                cut(&mut e.kind, over);
                break;
            }
        }
    }
    json_line(&e, out);
}

const ELLIPSIS: &str = "…";

/// Cuts `over` bytes and more from the end of `text`, marking the cut.
/// Escaping only lengthens text in JSON, so that shortens the JSON by at
/// least `over` bytes, unless the text is shorter than that.
fn cut(text: &mut String, over: usize) {
    if over == 0 {
        return;
    }
    let keep = floor_char_boundary(text, text.len().saturating_sub(over + ELLIPSIS.len()));
    text.truncate(keep);
    text.push_str(ELLIPSIS);
}

#[cfg(test)]
mod tests {
    use joblog_core::Timestamp;
    use proptest::prelude::*;

    use super::*;
    use crate::entry::Log;
    use crate::sinks::syslog::MIN_MAX_MESSAGE;

    fn text(max: usize) -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            4 => "[a-z ]{1,40}",
            1 => Just("\"\\\n\t\u{1b}".to_string()),
            1 => Just("é€😀".to_string()),
            1 => "[a-z]{200,2000}",
        ];
        proptest::collection::vec(piece, 0..max).prop_map(|p| p.concat())
    }

    fn any_entry() -> impl Strategy<Value = Entry> {
        (
            text(30),
            text(8),
            proptest::collection::vec(("[a-z_]{1,12}", text(6)), 0..8),
            proptest::option::of(proptest::collection::vec(text(4), 0..300)),
        )
            .prop_map(|(message, kind, fields, events)| {
                let mut map = Map::new();
                for (k, v) in fields {
                    map.insert(k, Value::String(v));
                }
                if let Some(events) = events {
                    let events = events.into_iter().map(|msg| json!({"msg": msg})).collect();
                    map.insert("events".into(), Value::Array(events));
                }
                Entry {
                    log: Log::Slow,
                    level: Level::Warn,
                    at: Timestamp(1_795_488_347_123_456),
                    kind,
                    message,
                    fields: map.into(),
                }
            })
    }

    proptest! {
        #![proptest_config(joblog_testkit::proptest_config(500))]

        /// Whatever the entry and the limit: the message fits the limit,
        /// a JSON message parses, and one that needed no cut is the
        /// entry's JSON line untouched.
        #[test]
        fn every_message_fits_its_limit_and_json_stays_json(
            entry in any_entry(),
            limit in MIN_MAX_MESSAGE..12_000,
            hostname in "[a-z.]{0,300}",
        ) {
            let header = Header::new(Facility::Local7, &hostname, "joblog", 7);
            for format in [Format::Json, Format::Human] {
                let mut out = Vec::new();
                header.write(&entry, format, limit, &mut out);
                prop_assert!(out.len() <= limit, "{} > {limit}", out.len());
                let text = std::str::from_utf8(&out).unwrap();
                let msg = text.splitn(8, ' ').nth(7).unwrap();
                if format == Format::Json {
                    let v: Value = serde_json::from_str(msg).unwrap();
                    let mut whole = Vec::new();
                    json_line(&entry, &mut whole);
                    if v.get("truncated").is_none() {
                        prop_assert_eq!(msg.as_bytes(), &whole[..]);
                    } else {
                        prop_assert_eq!(&v["truncated"]["bytes"], &json!(whole.len()));
                        prop_assert!(whole.len() > msg.len());
                    }
                }
            }
        }
    }
}
