//! Server-Sent Events as a viewer reads them: bytes in whatever pieces the
//! connection delivers → whole events. Only what the live tail sends is
//! needed (`event`, `data`, `id`, comments; lines ending in `\n` or
//! `\r\n`), so this is the WHATWG parsing minus lone-`\r` line ends and
//! `retry`.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SseEvent {
    /// `message` unless an `event:` field named it.
    pub(super) event: String,
    pub(super) data: String,
    pub(super) id: Option<String>,
}

/// Incremental parser: [`SseParser::push`] each chunk as it arrives.
#[derive(Debug, Default)]
pub(super) struct SseParser {
    /// Bytes of a line not yet ended.
    partial: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    id: Option<String>,
}

impl SseParser {
    /// Parses `chunk`, appending every event it completes to `out`.
    pub(super) fn push(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) {
        let mut rest = chunk;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let (line, tail) = rest.split_at(end);
            rest = &tail[1..];
            if self.partial.is_empty() {
                self.line(line, out);
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                self.line(&whole, out);
            }
        }
        self.partial.extend_from_slice(rest);
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match field {
            b"event" => self.event = value.into_owned(),
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"id" if !value.contains('\0') => self.id = Some(value.into_owned()),
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            // An event without data is not dispatched (keep-alive blocks).
            return;
        }
        out.push(SseEvent {
            event: if event.is_empty() {
                "message".to_string()
            } else {
                event
            },
            data: std::mem::take(&mut self.data),
            // The last event id persists from event to event.
            id: self.id.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(text: &str, piece: usize) -> Vec<SseEvent> {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for chunk in text.as_bytes().chunks(piece) {
            p.push(chunk, &mut out);
        }
        out
    }

    fn ev(event: &str, data: &str, id: Option<&str>) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
            id: id.map(String::from),
        }
    }

    #[test]
    fn events_come_out_whole_however_the_bytes_are_cut() {
        let text = "data: {\"seq\":1}\nid: 1\n\n:\n\n\
                    data:{\"seq\":2}\r\nid:2\r\n\r\n\
                    event: end\ndata: a\ndata:  b\n\n\
                    data: cut";
        let want = vec![
            ev("message", "{\"seq\":1}", Some("1")),
            ev("message", "{\"seq\":2}", Some("2")),
            ev("end", "a\n b", Some("2")),
        ];
        for piece in 1..=text.len() {
            assert_eq!(parse_in_pieces(text, piece), want, "pieces of {piece}");
        }
    }

    #[test]
    fn odd_lines_do_not_make_events() {
        let out = parse_in_pieces(
            "event: x\n\nretry: 5\nfoo\n\ndata\n\nid: a\0b\ndata: é\n\n",
            3,
        );
        assert_eq!(out, vec![ev("message", "", None), ev("message", "é", None)]);
        let mut p = SseParser::default();
        let mut out = Vec::new();
        p.push(b"data: \xff\n\n", &mut out);
        assert_eq!(out, vec![ev("message", "\u{fffd}", None)]);
    }
}
