//! What a viewer of a huge log needs besides pages read forwards: pages
//! read backwards from a seq, the seqs of the records whose message holds
//! a text, and an outline (first error and warning, groups, last progress)
//! to draw before reading any of it.

use serde::Serialize;

use crate::job::{invalid, ValidationError};
use crate::Record;

/// Bytes a search text may have.
pub const MAX_SEARCH_BYTES: usize = 256;

/// Groups an outline lists at most; a log with more says so
/// ([`LogOutline::groups_truncated`]).
pub const MAX_OUTLINE_GROUPS: usize = 10_000;

/// Bytes of a group's title an outline carries: 10,000 groups of 64 KiB
/// titles must not make an outline of 640 MiB. The whole title is the
/// message of the group's first record.
pub const MAX_GROUP_TITLE_BYTES: usize = 256;

/// Records before a seq, in seq order: the ones nearest that seq.
#[derive(Debug, Clone, PartialEq)]
pub struct EarlierPage {
    pub records: Vec<Record>,
    /// Whether records (of the streams asked for) come before the first.
    pub more: bool,
}

/// A text to find in messages: a substring, ASCII letters in either case,
/// every other character (`%`, `_`, `*`, `\`, non-ASCII letters) only as
/// itself. Folding only A–Z keeps both stores and every locale in
/// agreement (`É` is not `é`, `K` (Kelvin) not `k`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSearch {
    folded: String,
}

impl LogSearch {
    /// `text` of 1 to [`MAX_SEARCH_BYTES`] bytes; the field at fault is `q`,
    /// as the API names it.
    pub fn new(text: &str) -> Result<LogSearch, ValidationError> {
        if text.is_empty() {
            return Err(invalid("q", "must not be empty"));
        }
        if text.len() > MAX_SEARCH_BYTES {
            return Err(invalid(
                "q",
                format!("is {} bytes; at most {MAX_SEARCH_BYTES}", text.len()),
            ));
        }
        Ok(LogSearch {
            folded: text.to_ascii_lowercase(),
        })
    }

    /// The text with A–Z as a–z, to find in messages folded the same way.
    pub fn folded(&self) -> &str {
        &self.folded
    }

    /// Whether `message` holds the text: what the stores compute in SQL.
    pub fn matches(&self, message: &str) -> bool {
        message.to_ascii_lowercase().contains(&self.folded)
    }
}

/// The matches of a [`LogSearch`] in one job's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHits {
    /// Matches in the whole log (of the streams asked for).
    pub total: u64,
    /// The first matches after the seq asked for, ascending.
    pub seqs: Vec<u64>,
    /// Whether matches follow the last of `seqs`.
    pub more: bool,
}

/// What a viewer must know before it draws a log it will not read whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LogOutline {
    pub first_error_seq: Option<u64>,
    pub first_warning_seq: Option<u64>,
    /// In seq order; the first [`MAX_OUTLINE_GROUPS`].
    pub groups: Vec<LogGroup>,
    /// Whether the log has groups past those listed.
    pub groups_truncated: bool,
    /// The last `progress` record.
    pub progress: Option<Record>,
}

/// A section of the log from a `::group::` record to its `::endgroup::`.
/// Groups do not nest: a group starting ends the one open before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogGroup {
    /// The seq of the group's start record.
    pub seq: u64,
    /// The seq of its end record, or of the record before the next group's
    /// start; `None` while it is open (the log ends inside it).
    pub end_seq: Option<u64>,
    /// The start record's message, cut at [`MAX_GROUP_TITLE_BYTES`] (on a
    /// character boundary).
    pub title: String,
    /// `error` records inside it.
    pub errors: u64,
    /// `warning` records inside it.
    pub warnings: u64,
}

/// `title` cut to at most [`MAX_GROUP_TITLE_BYTES`] bytes without cutting
/// a character.
pub fn group_title(mut title: String) -> String {
    if title.len() > MAX_GROUP_TITLE_BYTES {
        let mut end = MAX_GROUP_TITLE_BYTES;
        while !title.is_char_boundary(end) {
            end -= 1;
        }
        title.truncate(end);
    }
    title
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_folds_ascii_letters_only_and_takes_the_rest_literally() {
        let s = LogSearch::new("ERROR: 100%_*\\").unwrap();
        assert_eq!(s.folded(), "error: 100%_*\\");
        assert!(s.matches("an Error: 100%_*\\ here"));
        assert!(!s.matches("error: 100x_*\\"), "% is no wildcard");
        assert!(!s.matches("error: 100%a*\\"), "_ is no wildcard");
        let accented = LogSearch::new("école").unwrap();
        assert!(accented.matches("ÉCOLE école"));
        assert!(!accented.matches("ÉCOLE"), "only A-Z fold");
        assert!(
            !LogSearch::new("k").unwrap().matches("\u{212A}"),
            "Kelvin sign"
        );
        assert!(LogSearch::new("a\0b").unwrap().matches("xA\0By"));
    }

    #[test]
    fn a_search_text_is_one_to_256_bytes() {
        let e = LogSearch::new("").unwrap_err();
        assert_eq!(e.field, "q");
        assert!(LogSearch::new(&"x".repeat(MAX_SEARCH_BYTES)).is_ok());
        let e = LogSearch::new(&"é".repeat(129)).unwrap_err();
        assert_eq!(e.to_string(), "q: is 258 bytes; at most 256");
    }

    #[test]
    fn a_group_title_is_cut_on_a_character_boundary() {
        assert_eq!(group_title("Build".into()), "Build");
        let long = format!("a{}", "é".repeat(200));
        let cut = group_title(long.clone());
        assert_eq!(cut.len(), MAX_GROUP_TITLE_BYTES - 1);
        assert!(long.starts_with(&cut));
    }
}
