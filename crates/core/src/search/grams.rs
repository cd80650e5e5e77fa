//! The text index a sealed segment carries: a filter of the trigrams of
//! its messages (bytes, [`fold`]ed), so that a search skips every
//! segment that cannot hold a match without decompressing it, and what a
//! pattern requires of that filter ([`Grams`]).
//!
//! The filter is a bitmap with one bit per hashed trigram (a Bloom filter
//! with one hash): a trigram's bit clear means no message of the segment
//! holds it; set means it may. It is sized for about one bit in eight set
//! ([`BITS_PER_GRAM`]) and never more than [`MAX_SHARE_PERCENT`] of the
//! segment's own bytes: a segment of many distinct trigrams gets a
//! fuller filter, which still skips a search of several trigrams (each
//! must be set). Trigrams never cross two messages: no match does.
//!
//! Stored form (version 1): a version byte, the log₂ of the bitmap's bits
//! (6 to 20), then the bitmap. A form this build does not know skips
//! nothing: the segment is read and searched.

/// Text as the index keeps it: A–Z as a–z, and the two other characters
/// that a case-insensitive regular expression matches for an ASCII letter
/// (KELVIN SIGN for `k`, LONG S for `s`) as that letter. Character by
/// character, so text holding a match holds the match folded.
pub fn fold(text: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut rest = text;
    while let Some((&b, tail)) = rest.split_first() {
        match (b, tail) {
            (0xE2, [0x84, 0xAA, ..]) => {
                out.push(b'k');
                rest = &tail[2..];
            }
            (0xC5, [0xBF, ..]) => {
                out.push(b's');
                rest = &tail[1..];
            }
            _ => {
                out.push(b.to_ascii_lowercase());
                rest = tail;
            }
        }
    }
}

/// The stored form's version.
const VERSION: u8 = 1;

/// Bits per distinct trigram the bitmap aims for: about one bit in eight
/// set, so a trigram absent from the segment is still found absent 88 %
/// of the time.
const BITS_PER_GRAM: usize = 8;

/// The index is at most this share of its segment's bytes.
pub const MAX_SHARE_PERCENT: usize = 15;

/// Smallest and largest bitmaps, as log₂ of their bits: 8 bytes to
/// 128 KiB. A segment whose share allows less than the smallest has no
/// index (it is small: reading it costs little).
const MIN_LOG2_BITS: u8 = 6;
const MAX_LOG2_BITS: u8 = 20;

/// A trigram as a number: its three bytes.
fn gram(w: &[u8]) -> u32 {
    u32::from(w[0]) | (u32::from(w[1]) << 8) | (u32::from(w[2]) << 16)
}

/// A trigram's bit in a bitmap of `1 << log2` bits: the low bits of a
/// well-mixed hash (MurmurHash3's finaliser), so that a bitmap folded in
/// half (its halves OR-ed) is the bitmap of half the size.
fn bit(gram: u32, log2: u8) -> usize {
    let mut h = gram;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    (h & ((1u32 << log2) - 1)) as usize
}

/// The filter of the messages of one segment of `segment_bytes` bytes
/// (its encoded size), in its stored form; `None` when that segment is too
/// small to carry one. Built at the largest size the budget allows, one
/// pass over the text, then folded in half while it stays at most one
/// bit in [`BITS_PER_GRAM`] set: no set of distinct trigrams is kept.
pub fn build_index<'a>(
    messages: impl IntoIterator<Item = &'a str>,
    segment_bytes: usize,
) -> Option<Vec<u8>> {
    let budget_bits = segment_bytes.saturating_sub(2) * 8 * MAX_SHARE_PERCENT / 100;
    if budget_bits < 1 << MIN_LOG2_BITS {
        return None;
    }
    let mut log2 = ((usize::BITS - 1 - budget_bits.leading_zeros()) as u8).min(MAX_LOG2_BITS);
    let mut words = vec![0u64; (1usize << log2) / 64];
    let mut folded = Vec::new();
    for message in messages {
        fold(message.as_bytes(), &mut folded);
        for w in folded.windows(3) {
            let b = bit(gram(w), log2);
            words[b / 64] |= 1 << (b % 64);
        }
    }
    while log2 > MIN_LOG2_BITS {
        let half = words.len() / 2;
        let ones: usize = (0..half)
            .map(|i| (words[i] | words[i + half]).count_ones() as usize)
            .sum();
        if ones * BITS_PER_GRAM > half * 64 {
            break;
        }
        for i in 0..half {
            words[i] |= words[i + half];
        }
        words.truncate(half);
        log2 -= 1;
    }
    let mut out = Vec::with_capacity(2 + words.len() * 8);
    out.push(VERSION);
    out.push(log2);
    for w in words {
        out.extend_from_slice(&w.to_le_bytes());
    }
    Some(out)
}

/// What a pattern requires of a segment's text for it to hold a match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grams {
    /// Nothing known: every segment may match.
    Any,
    /// Text ([`fold`]ed) that a match holds: all its trigrams.
    Text(Vec<u8>),
    /// Every one of these.
    All(Vec<Grams>),
    /// At least one of these.
    OneOf(Vec<Grams>),
}

impl Grams {
    /// The requirement of holding `text`, [`fold`]ed here.
    pub fn text(text: &[u8]) -> Grams {
        let mut folded = Vec::new();
        fold(text, &mut folded);
        if folded.len() < 3 {
            return Grams::Any;
        }
        Grams::Text(folded)
    }

    /// All of `parts`, flattened; `Any` parts add nothing.
    pub fn all(parts: Vec<Grams>) -> Grams {
        let mut out = Vec::new();
        for p in parts {
            match p {
                Grams::Any => {}
                Grams::All(inner) => out.extend(inner),
                p => out.push(p),
            }
        }
        match out.len() {
            0 => Grams::Any,
            1 => out.pop().unwrap_or(Grams::Any),
            _ => Grams::All(out),
        }
    }

    /// One of `parts`: nothing is known if any part is `Any` (or none is
    /// given: an empty alternation matches nothing, but skipping on it is
    /// not worth a special case).
    pub fn one_of(parts: Vec<Grams>) -> Grams {
        if parts.is_empty() || parts.contains(&Grams::Any) {
            return Grams::Any;
        }
        let mut out = Vec::new();
        for p in parts {
            match p {
                Grams::OneOf(inner) => out.extend(inner),
                p => out.push(p),
            }
        }
        if out.len() == 1 {
            return out.pop().unwrap_or(Grams::Any);
        }
        Grams::OneOf(out)
    }

    /// Whether a segment with this stored index may hold a match. An index
    /// this build cannot read answers yes.
    pub fn may_match(&self, index: &[u8]) -> bool {
        match Filter::parse(index) {
            Some(filter) => filter.admits(self),
            None => true,
        }
    }
}

/// A stored index, read.
struct Filter<'a> {
    log2: u8,
    bitmap: &'a [u8],
}

impl Filter<'_> {
    fn parse(index: &[u8]) -> Option<Filter<'_>> {
        let (&version, rest) = index.split_first()?;
        let (&log2, bitmap) = rest.split_first()?;
        let valid = version == VERSION
            && (MIN_LOG2_BITS..=MAX_LOG2_BITS).contains(&log2)
            && bitmap.len() == (1usize << log2) / 8;
        valid.then_some(Filter { log2, bitmap })
    }

    fn has(&self, g: u32) -> bool {
        let b = bit(g, self.log2);
        self.bitmap[b / 8] & (1 << (b % 8)) != 0
    }

    fn admits(&self, grams: &Grams) -> bool {
        match grams {
            Grams::Any => true,
            Grams::Text(t) => t.windows(3).all(|w| self.has(gram(w))),
            Grams::All(parts) => parts.iter().all(|p| self.admits(p)),
            Grams::OneOf(parts) => parts.iter().any(|p| self.admits(p)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(messages: &[&str]) -> Vec<u8> {
        build_index(messages.iter().copied(), 1 << 20).unwrap()
    }

    #[test]
    fn a_segment_is_skipped_for_text_it_does_not_hold() {
        let ix = index(&["backup of /srv finished", "disk FULL on sda1"]);
        assert!(Grams::text(b"disk full").may_match(&ix));
        assert!(Grams::text(b"Backup").may_match(&ix));
        assert!(!Grams::text(b"kernel panic").may_match(&ix));
        // Short text says nothing.
        assert!(Grams::text(b"zz").may_match(&ix));
    }

    #[test]
    fn a_trigram_never_spans_two_messages() {
        let ix = index(&["abc", "def"]);
        assert!(Grams::text(b"abc").may_match(&ix));
        assert!(!Grams::text(b"bcd").may_match(&ix));
    }

    #[test]
    fn the_index_keeps_to_its_share_of_the_segment() {
        let messages: Vec<String> = (0..1000)
            .map(|i| format!("id {i:08x} {}", i * 7919))
            .collect();
        for segment_bytes in [600, 5_000, 40_000] {
            let ix = build_index(messages.iter().map(String::as_str), segment_bytes).unwrap();
            assert!(
                ix.len() * 100 <= segment_bytes * MAX_SHARE_PERCENT,
                "{} bytes for a segment of {segment_bytes}",
                ix.len()
            );
        }
        assert_eq!(build_index(["anything"], 40), None);
    }

    #[test]
    fn an_unknown_or_damaged_index_skips_nothing() {
        let mut ix = index(&["abc"]);
        assert!(!Grams::text(b"xyz").may_match(&ix));
        ix[0] = 2;
        assert!(Grams::text(b"xyz").may_match(&ix));
        assert!(Grams::text(b"xyz").may_match(&[]));
        assert!(Grams::text(b"xyz").may_match(&[1, 6, 0]));
    }

    /// The messages of the checked-in index of version 1.
    fn fixture_messages() -> Vec<String> {
        (0..1000)
            .map(|i| {
                format!(
                    "request id={:08x} took {} ms: disk full on sd{}",
                    i * 2_654_435_761u64 % (1 << 32),
                    i % 250,
                    i % 4
                )
            })
            .collect()
    }

    #[test]
    fn the_version_1_fixture_keeps_ruling_the_same() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/grams-v1.bin");
        let messages = fixture_messages();
        if std::env::var_os("JOBLOG_WRITE_GRAMS_FIXTURE").is_some() {
            let ix = build_index(messages.iter().map(String::as_str), 20_000).unwrap();
            std::fs::write(path, ix).unwrap();
        }
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(bytes[0], 1, "the fixture is of version 1");
        // What this build makes of the same text is the same bytes.
        assert_eq!(
            build_index(messages.iter().map(String::as_str), 20_000).unwrap(),
            bytes
        );
        for held in ["DISK FULL", "request id=", "took 249 ms"] {
            assert!(Grams::text(held.as_bytes()).may_match(&bytes), "{held}");
        }
        for absent in ["kernel panic", "zanzibar", "out of memory"] {
            assert!(
                !Grams::text(absent.as_bytes()).may_match(&bytes),
                "{absent}"
            );
        }
    }

    #[test]
    fn requirements_combine() {
        let ix = index(&["alpha beta", "gamma"]);
        let alpha = Grams::text(b"alpha");
        let delta = Grams::text(b"delta");
        assert!(!Grams::all(vec![alpha.clone(), delta.clone()]).may_match(&ix));
        assert!(Grams::one_of(vec![alpha.clone(), delta.clone()]).may_match(&ix));
        assert!(Grams::one_of(vec![delta.clone(), Grams::Any]).may_match(&ix));
        assert_eq!(Grams::all(vec![Grams::Any, alpha.clone()]), alpha);
    }

    #[test]
    fn folding_maps_what_a_case_insensitive_letter_matches_to_that_letter() {
        let mut out = Vec::new();
        fold("Disk \u{212A}ERNEL \u{17F}ÉÉ".as_bytes(), &mut out);
        assert_eq!(out, "disk kernel sÉÉ".as_bytes());
        // No other character folds to an ASCII letter.
        for letter in b'a'..=b'z' {
            let mut class =
                regex_syntax::hir::ClassUnicode::new([regex_syntax::hir::ClassUnicodeRange::new(
                    char::from(letter),
                    char::from(letter),
                )]);
            class.case_fold_simple();
            for range in class.ranges() {
                for c in range.start()..=range.end() {
                    let mut buf = [0u8; 4];
                    fold(c.encode_utf8(&mut buf).as_bytes(), &mut out);
                    assert_eq!(
                        out,
                        [letter],
                        "{c:?} is in the class of {}",
                        char::from(letter)
                    );
                }
            }
        }
        let ix = index(&["\u{212A}elvin"]);
        assert!(Grams::text(b"KELVIN").may_match(&ix));
    }
}
