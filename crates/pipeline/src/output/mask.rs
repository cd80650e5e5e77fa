//! Secret masking: replaces secrets, and the forms they take inside
//! encoded text (base64, URL-encoded, JSON-escaped, hex), with `***`.

use std::collections::HashSet;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use base64::Engine as _;
use serde_json::{Map, Value};

/// What every occurrence of a masked value becomes.
pub(crate) const MASK: &str = "***";

/// Up to this many pattern bytes the automaton is a DFA (fastest to scan);
/// building one for long patterns (a 64 KiB `::add-mask::` value) takes
/// quadratic time, so larger sets use a contiguous NFA.
const DFA_MAX_PATTERN_BYTES: usize = 4 * 1024;

/// Shorter base64 fragments would match ordinary text far too often.
const MIN_BASE64_LEN: usize = 4;

/// Shorter URL or JSON forms likewise.
const MIN_ENCODED_LEN: usize = 4;

/// Hex digits of a value shorter than 4 bytes are an ordinary number.
const MIN_HEX_LEN: usize = 8;

/// The set of values to hide, compiled into one leftmost-longest automaton.
#[derive(Debug, Default)]
pub(crate) struct Masker {
    values: HashSet<String>,
    patterns: Vec<String>,
    known_patterns: HashSet<String>,
    max_len: usize,
    automaton: Option<AhoCorasick>,
    /// Patterns were added since `automaton` was built. Rebuilding lazily lets a
    /// job that registers many masks in a row pay for one build, not one each.
    stale: bool,
    /// The automaton could not be built (only conceivable with absurdly large
    /// patterns): fail closed and hide whole messages rather than leak.
    broken: bool,
}

impl Masker {
    /// Registers `value` and its base64 forms; returns false if it was empty or known.
    pub(crate) fn add(&mut self, value: &str) -> bool {
        if value.is_empty() || !self.values.insert(value.to_owned()) {
            return false;
        }
        self.add_pattern(value.to_owned(), 1);
        let bytes = value.as_bytes();
        self.add_pattern(STANDARD.encode(bytes), MIN_BASE64_LEN);
        self.add_pattern(STANDARD_NO_PAD.encode(bytes), MIN_BASE64_LEN);
        for offset in 0..3 {
            self.add_pattern(aligned_base64(bytes, offset), MIN_BASE64_LEN);
        }
        // A form equal to the value adds nothing; a short hex form would
        // match ordinary numbers.
        for form in encoded_forms(value) {
            if form != value {
                self.add_pattern(form, MIN_ENCODED_LEN);
            }
        }
        let hex: String = value.bytes().map(|b| format!("{b:02x}")).collect();
        self.add_pattern(hex.to_uppercase(), MIN_HEX_LEN);
        self.add_pattern(hex, MIN_HEX_LEN);
        true
    }

    /// Registers a submitted secret as it is, trimmed, and line by line: a
    /// multi-line secret can only ever appear one line at a time.
    pub(crate) fn add_secret(&mut self, secret: &str) {
        self.add(secret);
        self.add(secret.trim());
        if secret.contains('\n') {
            for line in secret.lines() {
                self.add(line.trim());
            }
        }
    }

    fn add_pattern(&mut self, pattern: String, min_len: usize) {
        if pattern.len() >= min_len && self.known_patterns.insert(pattern.clone()) {
            self.max_len = self.max_len.max(pattern.len());
            self.patterns.push(pattern);
            self.stale = true;
        }
    }

    /// Length in bytes of the longest pattern (0 without any): how far an
    /// occurrence can reach past a cut point.
    pub(crate) fn max_len(&self) -> usize {
        self.max_len
    }

    fn refresh(&mut self) {
        if self.stale {
            self.stale = false;
            let total: usize = self.patterns.iter().map(String::len).sum();
            let kind = if total <= DFA_MAX_PATTERN_BYTES {
                AhoCorasickKind::DFA
            } else {
                AhoCorasickKind::ContiguousNFA
            };
            match AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .kind(Some(kind))
                .build(&self.patterns)
            {
                Ok(ac) => self.automaton = Some(ac),
                Err(_) => self.broken = true,
            }
        }
    }

    pub(crate) fn mask(&mut self, text: String) -> String {
        self.refresh();
        if self.broken {
            return MASK.to_owned();
        }
        let Some(ac) = &self.automaton else {
            return text;
        };
        if !ac.is_match(&text) {
            return text;
        }
        let mut masked = String::with_capacity(text.len());
        ac.replace_all_with(&text, &mut masked, |_, _, dst| {
            dst.push_str(MASK);
            true
        });
        masked
    }

    /// Masks every key and string inside a JSON value.
    pub(crate) fn mask_value(&mut self, value: Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.mask(s)),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.mask_value(v)).collect())
            }
            Value::Object(map) => Value::Object(self.mask_map(map)),
            other => other,
        }
    }

    pub(crate) fn mask_map(&mut self, map: Map<String, Value>) -> Map<String, Value> {
        map.into_iter()
            .map(|(k, v)| (self.mask(k), self.mask_value(v)))
            .collect()
    }

    /// A JSON document (a job's result) with every masked value hidden in
    /// its keys and strings, and numbers that would show one turned into
    /// the string `***`. A document with nothing to hide is returned as it
    /// was written, byte for byte; one that changed is written anew
    /// (compact, keys in order). Text that is not JSON is returned as it is
    /// (results are checked to be JSON before this).
    pub(crate) fn mask_document(&mut self, body: Vec<u8>) -> Vec<u8> {
        if self.patterns.is_empty() && !self.broken {
            return body;
        }
        let Ok(value) = serde_json::from_slice::<Value>(&body) else {
            return body;
        };
        let mut changed = false;
        let masked = self.mask_document_value(value, &mut changed);
        if !changed {
            return body;
        }
        serde_json::to_vec(&masked).unwrap_or_else(|_| MASK.as_bytes().to_vec())
    }

    fn mask_document_value(&mut self, value: Value, changed: &mut bool) -> Value {
        let text = |masker: &mut Masker, s: String, changed: &mut bool| {
            let masked = masker.mask(s.clone());
            *changed |= masked != s;
            masked
        };
        match value {
            Value::String(s) => Value::String(text(self, s, changed)),
            Value::Number(n) => {
                let written = n.to_string();
                if self.mask(written.clone()) != written {
                    *changed = true;
                    Value::String(MASK.to_owned())
                } else {
                    Value::Number(n)
                }
            }
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|v| self.mask_document_value(v, changed))
                    .collect(),
            ),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| {
                        let k = text(self, k, changed);
                        (k, self.mask_document_value(v, changed))
                    })
                    .collect(),
            ),
            other => other,
        }
    }

    /// The occurrence that would be masked across position `cut` of `hay`,
    /// as (start, end), if any.
    pub(crate) fn spanning(&mut self, hay: &[u8], cut: usize) -> Option<(usize, usize)> {
        self.refresh();
        self.automaton
            .as_ref()?
            .find_iter(hay)
            .take_while(|m| m.start() < cut)
            .find(|m| m.end() > cut)
            .map(|m| (m.start(), m.end()))
    }

    /// How many trailing bytes of `hay` could be the start of an occurrence
    /// that the next bytes complete: they must not be emitted yet.
    pub(crate) fn prefix_holdback(&self, hay: &[u8]) -> usize {
        self.patterns
            .iter()
            .map(|p| suffix_prefix_overlap(hay, p.as_bytes()))
            .max()
            .unwrap_or(0)
    }
}

/// The other ways a value is commonly written inside text: percent-encoded
/// (upper- and lower-case hex, space as `%20` or `+`, and keeping `/` as
/// Python's `urllib.parse.quote` does or `!'()*` as JavaScript's
/// `encodeURIComponent` does), JSON-escaped (as
/// serde and Go write it, with `\/`, and with non-ASCII as `\uXXXX` as
/// Python's `json.dumps` does). (Hex forms are added beside these.)
fn encoded_forms(value: &str) -> Vec<String> {
    let mut forms = Vec::with_capacity(12);
    let url_upper = percent_encode(value.as_bytes(), false, b"");
    forms.push(url_upper.replace("%20", "+"));
    forms.push(percent_encode(value.as_bytes(), true, b""));
    forms.push(url_upper);
    for keep in [&b"/"[..], b"!'()*"] {
        forms.push(percent_encode(value.as_bytes(), false, keep));
        forms.push(percent_encode(value.as_bytes(), true, keep));
    }
    let json = serde_json::to_string(value).unwrap_or_default();
    let json = json[1..json.len().saturating_sub(1).max(1)].to_string();
    forms.push(json.replace('/', "\\/"));
    let mut ascii = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_ascii() {
            ascii.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                ascii.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    forms.push(ascii);
    forms.push(json);
    // A value without `/` has the same form either way.
    forms.sort_unstable();
    forms.dedup();
    forms
}

/// RFC 3986 percent-encoding of everything but the unreserved characters
/// and those of `keep`.
fn percent_encode(bytes: &[u8], lower: bool, keep: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') || keep.contains(&b)
        {
            out.push(b as char);
        } else if lower {
            out.push_str(&format!("%{b:02x}"));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The length of the longest proper prefix of `pattern` that `hay` ends
/// with. Knuth-Morris-Pratt keeps this linear: the naive check is quadratic
/// for a long value such as `vvvv...` (a 64 KiB `::add-mask::`).
fn suffix_prefix_overlap(hay: &[u8], pattern: &[u8]) -> usize {
    if pattern.len() < 2 || hay.is_empty() {
        return 0;
    }
    let mut fail = vec![0usize; pattern.len()];
    let mut k = 0;
    for i in 1..pattern.len() {
        while k > 0 && pattern[i] != pattern[k] {
            k = fail[k - 1];
        }
        if pattern[i] == pattern[k] {
            k += 1;
        }
        fail[i] = k;
    }
    // Only the last len-1 bytes can hold a proper prefix, so `k` never
    // reaches a whole match.
    let mut k = 0;
    for &b in &hay[hay.len().saturating_sub(pattern.len() - 1)..] {
        while k > 0 && pattern[k] != b {
            k = fail[k - 1];
        }
        if pattern[k] == b {
            k += 1;
        }
    }
    k
}

/// The characters of `value`'s base64 encoding that do not depend on the
/// surrounding bytes, when `value` starts at byte offset `offset` (mod 3) of
/// a longer encoded string.
fn aligned_base64(value: &[u8], offset: usize) -> String {
    let mut padded = vec![0u8; offset];
    padded.extend_from_slice(value);
    let encoded = STANDARD_NO_PAD.encode(&padded);
    // Filler bits reach into the first 2 (offset 1) or 3 (offset 2) characters.
    let lead = [0, 2, 3][offset % 3];
    // An incomplete last group's final character also carries bits of the next byte.
    let trail = (padded.len() % 3).min(1);
    encoded
        .get(lead..encoded.len().saturating_sub(trail))
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masker(values: &[&str]) -> Masker {
        let mut m = Masker::default();
        for v in values {
            m.add(v);
        }
        m
    }

    #[test]
    fn aligned_variants_are_found_inside_longer_encodings() {
        let secret = b"hunter2-secret";
        for prefix_len in 0..6 {
            for suffix_len in 0..4 {
                let mut text = vec![b'u'; prefix_len];
                text.extend_from_slice(secret);
                text.extend(std::iter::repeat_n(b'z', suffix_len));
                let encoded = STANDARD.encode(&text);
                let variant = aligned_base64(secret, prefix_len % 3);
                assert!(variant.len() >= 14, "{variant}");
                assert!(
                    encoded.contains(&variant),
                    "{encoded} lacks {variant} (prefix {prefix_len}, suffix {suffix_len})"
                );
            }
        }
    }

    /// Every common way to URL-encode a secret is masked: RFC 3986,
    /// form encoding, Python's `quote` (keeps `/`) and JavaScript's
    /// `encodeURIComponent` (keeps `!'()*`).
    #[test]
    fn url_encodings_that_keep_some_characters_are_masked() {
        let mut m = masker(&["p/w d!(x)*é"]);
        for encoded in [
            "p%2Fw%20d%21%28x%29%2A%C3%A9",
            "p%2fw%20d%21%28x%29%2a%c3%a9",
            "p%2Fw+d%21%28x%29%2A%C3%A9",
            "p/w%20d%21%28x%29%2A%C3%A9",
            "p/w%20d%21%28x%29%2a%c3%a9",
            "p%2Fw%20d!(x)*%C3%A9",
        ] {
            assert_eq!(m.mask(format!("url={encoded};")), "url=***;", "{encoded}");
        }
    }

    #[test]
    fn masks_leftmost_longest_and_skips_short_base64() {
        let mut m = masker(&["ab", "abcdef"]);
        assert_eq!(m.mask("xxabcdefyy ab".into()), "xx***yy ***");
        // "ab" encodes to "YWI=": its 3-character aligned forms are not patterns.
        assert!(m.patterns.iter().all(|p| p.len() >= 4 || p == "ab"));
        assert_eq!(m.mask("YWI= YW".into()), "*** YW");
    }

    #[test]
    fn holdback_covers_proper_prefixes_only() {
        let m = masker(&["secret"]);
        assert_eq!(m.prefix_holdback(b"my secr"), 4);
        assert_eq!(m.prefix_holdback(b"my secret"), 0);
        assert_eq!(m.prefix_holdback(b"nothing"), 0);
        assert_eq!(Masker::default().prefix_holdback(b"x"), 0);
        // Self-overlapping values need the failure links, not just a rescan.
        assert_eq!(suffix_prefix_overlap(b"xaabaa", b"aabaab"), 5);
        assert_eq!(suffix_prefix_overlap(b"aaba", b"aabaab"), 4);
        assert_eq!(suffix_prefix_overlap(b"abaab", b"aabaab"), 3);
        assert_eq!(suffix_prefix_overlap(b"aabaab", b"aabaab"), 3);
        assert_eq!(suffix_prefix_overlap(b"b", b"ab"), 0);
        let long = vec![b'v'; 70_000];
        assert_eq!(suffix_prefix_overlap(&long, &long), 69_999);
    }

    #[test]
    fn spanning_reports_the_match_across_a_cut() {
        let mut m = masker(&["secret"]);
        assert_eq!(m.spanning(b"a secret b", 4), Some((2, 8)));
        assert_eq!(m.spanning(b"a secret b", 2), None);
        assert_eq!(m.spanning(b"a secret b", 8), None);
    }

    #[test]
    fn masks_keys_and_nested_strings() {
        let mut m = masker(&["pw1"]);
        let v = serde_json::json!({"pw1": ["x pw1", 3, {"k": "pw1"}]});
        assert_eq!(
            m.mask_value(v),
            serde_json::json!({"***": ["x ***", 3, {"k": "***"}]})
        );
    }
}
