//! JSON indented for reading as it arrives, without parsing it into a map:
//! a result of any size is printed piece by piece, its keys in the order
//! the job wrote them and its numbers spelled as the job spelled them.
//! Works on bytes: no byte of a multi-byte UTF-8 character is one of
//! JSON's structural characters.
//!
//! Indentation stops growing at [`MAX_INDENT`] levels (deeper than any
//! result the server stores), so each byte in gives a bounded number of
//! bytes out whatever the input: five million `[` never become
//! terabytes of spaces.

/// Levels indented; deeper ones are printed at this depth.
pub(crate) const MAX_INDENT: usize = 128;

/// Where the indenter is between two pieces.
#[derive(Debug, Default)]
pub(crate) struct Pretty {
    depth: usize,
    in_str: bool,
    escaped: bool,
    /// Just after `{` or `[`: an empty container stays on one line.
    opened: bool,
}

impl Pretty {
    /// Appends the indented form of `piece` to `out`.
    pub(crate) fn feed(&mut self, piece: &[u8], out: &mut Vec<u8>) {
        for &c in piece {
            if self.in_str {
                out.push(c);
                if self.escaped {
                    self.escaped = false;
                } else if c == b'\\' {
                    self.escaped = true;
                } else if c == b'"' {
                    self.in_str = false;
                }
                continue;
            }
            if c.is_ascii_whitespace() {
                continue;
            }
            if self.opened {
                self.opened = false;
                if matches!(c, b'}' | b']') {
                    out.push(c);
                    continue;
                }
                self.depth += 1;
                self.newline(out);
            }
            match c {
                b'"' => {
                    self.in_str = true;
                    out.push(c);
                }
                b'{' | b'[' => {
                    out.push(c);
                    self.opened = true;
                }
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    self.newline(out);
                    out.push(c);
                }
                b',' => {
                    out.push(c);
                    self.newline(out);
                }
                b':' => out.extend_from_slice(b": "),
                c => out.push(c),
            }
        }
    }

    fn newline(&self, out: &mut Vec<u8>) {
        out.push(b'\n');
        for _ in 0..self.depth.min(MAX_INDENT) {
            out.extend_from_slice(b"  ");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pretty_json(src: &str) -> String {
        let mut out = Vec::new();
        Pretty::default().feed(src.as_bytes(), &mut out);
        String::from_utf8(out).unwrap()
    }

    const DOC: &str = r#"{"z":1,"a":[1,2],"e":{},"s":"a,b:{\"c\"}","u":"é✓"}"#;

    #[test]
    fn pretty_json_keeps_order() {
        assert_eq!(
            pretty_json(DOC),
            "{\n  \"z\": 1,\n  \"a\": [\n    1,\n    2\n  ],\n  \"e\": {},\n  \"s\": \"a,b:{\\\"c\\\"}\",\n  \"u\": \"é✓\"\n}"
        );
        assert_eq!(pretty_json("42"), "42");
        assert_eq!(pretty_json(" [ ] "), "[]");
        // Broken input is shown, not a panic.
        let _ = pretty_json("{{{]]]\"");
    }

    /// Any nesting: what comes out is bounded by what goes in.
    #[test]
    fn deep_nesting_is_indented_at_most_max_indent_levels() {
        let n = 100_000;
        let deep = format!("{}{}", "[".repeat(n), "]".repeat(n));
        let out = pretty_json(&deep);
        let widest = out.lines().map(str::len).max().unwrap();
        assert_eq!(
            widest,
            2 * MAX_INDENT + 2,
            "the innermost `[]`, at the deepest indent"
        );
        assert!(out.len() <= deep.len() * (2 * MAX_INDENT + 2));
        assert_eq!(out.matches('[').count(), n);
    }

    #[test]
    fn cut_anywhere_it_indents_the_same_as_whole() {
        let whole = pretty_json(DOC);
        let bytes = DOC.as_bytes();
        for cut in 0..=bytes.len() {
            let mut p = Pretty::default();
            let mut out = Vec::new();
            p.feed(&bytes[..cut], &mut out);
            p.feed(&bytes[cut..], &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), whole, "cut at {cut}");
        }
    }
}
