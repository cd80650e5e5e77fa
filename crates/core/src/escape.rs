//! Untrusted text made safe for a terminal: job output and server strings
//! can carry control characters and escape sequences that would rewrite
//! the screen; only colours survive, and only when asked for. Shared by the
//! CLI's output and the API's escaped text log.

use std::borrow::Cow;

/// Invisible characters that change how the text around them shows:
/// bidirectional overrides, isolates and marks, zero-width spaces and
/// joiners' kin, the byte-order mark (Unicode's format characters that
/// can hide or reorder text, "Trojan Source"). ZWJ and ZWNJ are left:
/// emoji and several scripts need them, and they reorder nothing.
pub fn is_hidden_format(c: char) -> bool {
    matches!(
        c,
        '\u{061C}'
            | '\u{180E}'
            | '\u{200B}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
    )
}

fn is_bidi_control(c: char) -> bool {
    is_hidden_format(c)
}

/// Length of an SGR sequence (`ESC [ 0-9;: m`, colours and styles) at the
/// start of `s`, which begins with ESC.
fn sgr_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.get(1) != Some(&b'[') {
        return None;
    }
    let mut i = 2;
    while i < b.len() && i < 64 {
        match b[i] {
            b'0'..=b'9' | b';' | b':' => i += 1,
            b'm' => return Some(i + 1),
            _ => return None,
        }
    }
    None
}

/// Makes untrusted text safe to print: control characters (except TAB) are
/// shown escaped (`\0`, `\xNN`), as are bidirectional overrides. With
/// `keep_sgr` (a terminal), colour sequences pass through and a reset is
/// appended so a colour cannot leak into the next line; every other escape
/// sequence is shown escaped, since it could rewrite the terminal.
pub fn escape_display(s: &str, keep_sgr: bool) -> Cow<'_, str> {
    let needs = |c: char| (c.is_control() && c != '\t') || is_bidi_control(c);
    if !s.chars().any(needs) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut used_sgr = false;
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '\u{1b}' && keep_sgr {
            if let Some(n) = sgr_len(rest) {
                out.push_str(&rest[..n]);
                used_sgr = true;
                rest = &rest[n..];
                continue;
            }
        }
        if c == '\0' {
            out.push_str("\\0");
        } else if needs(c) {
            let cp = c as u32;
            if cp <= 0xff {
                out.push_str(&format!("\\x{cp:02x}"));
            } else {
                out.push_str(&format!("\\u{{{cp:x}}}"));
            }
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    if used_sgr {
        out.push_str("\x1b[0m");
    }
    Cow::Owned(out)
}

/// Text made inert in HTML or XML (an e-mail's HTML part, an SVG label):
/// the five characters they give meaning to, as entities.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_format_characters_are_shown_escaped() {
        assert_eq!(escape_display("a\u{202E}b", false), "a\\u{202e}b");
        assert_eq!(
            escape_display("x\u{200B}y\u{FEFF}", false),
            "x\\u{200b}y\\u{feff}"
        );
        assert_eq!(
            escape_display("\u{2067}rtl\u{2069}", false),
            "\\u{2067}rtl\\u{2069}"
        );
        // Joiners stay: emoji sequences and scripts need them.
        let family = "👨\u{200D}👩\u{200D}👧";
        assert_eq!(escape_display(family, false), family);
    }

    #[test]
    fn escaping() {
        assert_eq!(escape_display("plain\ttext", false), "plain\ttext");
        assert!(matches!(escape_display("plain", false), Cow::Borrowed(_)));
        assert_eq!(escape_display("a\0b", false), "a\\0b");
        assert_eq!(escape_display("a\rb\x07", false), "a\\x0db\\x07");
        assert_eq!(escape_display("\u{85}", false), "\\x85");
        assert_eq!(escape_display("x\u{202e}y", false), "x\\u{202e}y");
        // Not a terminal: no escape sequence survives.
        assert_eq!(
            escape_display("\x1b[31mred\x1b[0m", false),
            "\\x1b[31mred\\x1b[0m"
        );
        // Terminal: colours pass, with a reset appended.
        assert_eq!(
            escape_display("\x1b[1;31mred", true),
            "\x1b[1;31mred\x1b[0m"
        );
        // Terminal: sequences that are not colours are still escaped.
        assert_eq!(
            escape_display("\x1b]0;title\x07", true),
            "\\x1b]0;title\\x07"
        );
        assert_eq!(escape_display("\x1b[2J", true), "\\x1b[2J");
        assert_eq!(escape_display("\x1b", true), "\\x1b");
    }
}
