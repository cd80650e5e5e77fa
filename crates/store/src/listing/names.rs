//! Name patterns as SQL: the names a pattern's literal prefix covers,
//! found one seek of the name index at a time, and the pattern written for
//! SQLite's GLOB or PostgreSQL's LIKE with the name's own wildcard
//! characters kept literal.

use std::borrow::Cow;

use joblog_core::{GlobPiece, JobQuery, NameFilter, NameGlob};

use super::{Dialect, Param, Sql, MAX_NAME_ARMS};

/// The names a pattern's literal prefix covers, found one index seek at a
/// time: feed each answer of [`NameScan::next_sql`] to [`NameScan::found`]
/// until there is no next statement.
#[derive(Debug)]
pub(crate) struct NameScan<'q> {
    glob: &'q NameGlob,
    /// The names under the prefix are those `>= lower` and `< upper`.
    lower: String,
    upper: Option<String>,
    /// The last name found; the next seek starts after it.
    last: Option<String>,
    seen: usize,
    matched: Vec<String>,
    done: bool,
}

impl<'q> NameScan<'q> {
    /// A scan when the query's name is a pattern with a literal prefix.
    pub fn new(q: &'q JobQuery) -> Option<NameScan<'q>> {
        let Some(NameFilter::Glob(glob)) = &q.name else {
            return None;
        };
        let prefix = glob.literal_prefix();
        if prefix.is_empty() {
            return None;
        }
        Some(NameScan {
            glob,
            lower: prefix.to_string(),
            upper: prefix_upper_bound(prefix),
            last: None,
            seen: 0,
            matched: Vec::new(),
            done: false,
        })
    }

    /// The next seek, answering one row with one name or no row; `None`
    /// once the scan is over.
    pub fn next_sql(&self, d: Dialect) -> Option<Sql> {
        if self.done {
            return None;
        }
        // Byte order on both stores (PostgreSQL compares in the database's
        // collation unless told otherwise), so a prefix is one range.
        let text = match (d, self.last.is_some(), self.upper.is_some()) {
            (Dialect::Sqlite, false, true) => {
                "SELECT name FROM jobs WHERE name >= ?1 AND name < ?2 ORDER BY name LIMIT 1"
            }
            (Dialect::Sqlite, false, false) => {
                "SELECT name FROM jobs WHERE name >= ?1 ORDER BY name LIMIT 1"
            }
            (Dialect::Sqlite, true, true) => {
                "SELECT name FROM jobs WHERE name > ?1 AND name < ?2 ORDER BY name LIMIT 1"
            }
            (Dialect::Sqlite, true, false) => {
                "SELECT name FROM jobs WHERE name > ?1 ORDER BY name LIMIT 1"
            }
            (Dialect::Postgres, false, true) => {
                r#"SELECT name FROM jobs WHERE name COLLATE "C" >= $1 AND name COLLATE "C" < $2 ORDER BY name COLLATE "C" LIMIT 1"#
            }
            (Dialect::Postgres, false, false) => {
                r#"SELECT name FROM jobs WHERE name COLLATE "C" >= $1 ORDER BY name COLLATE "C" LIMIT 1"#
            }
            (Dialect::Postgres, true, true) => {
                r#"SELECT name FROM jobs WHERE name COLLATE "C" > $1 AND name COLLATE "C" < $2 ORDER BY name COLLATE "C" LIMIT 1"#
            }
            (Dialect::Postgres, true, false) => {
                r#"SELECT name FROM jobs WHERE name COLLATE "C" > $1 ORDER BY name COLLATE "C" LIMIT 1"#
            }
        };
        let from = self.last.clone().unwrap_or_else(|| self.lower.clone());
        let mut params = vec![Param::Text(from)];
        params.extend(self.upper.clone().map(Param::Text));
        Some(Sql {
            text: Cow::Borrowed(text),
            params,
        })
    }

    /// The answer to the last [`NameScan::next_sql`]: the next name, or
    /// `None` when there is none.
    pub fn found(&mut self, name: Option<String>) {
        let Some(name) = name else {
            self.done = true;
            return;
        };
        self.seen += 1;
        if self.seen > MAX_NAME_ARMS {
            self.done = true;
            return;
        }
        if self.glob.matches(&name) {
            self.matched.push(name.clone());
        }
        self.last = Some(name);
    }

    /// The names the pattern matches, or `None` when its prefix covers too
    /// many names to walk one range each.
    pub fn names(self) -> Option<Vec<String>> {
        (self.seen <= MAX_NAME_ARMS).then_some(self.matched)
    }
}

/// The smallest text greater than every text that starts with `prefix` (in
/// byte order, which for UTF-8 is code point order), or `None` when there
/// is none (a prefix of U+10FFFF characters only).
pub(super) fn prefix_upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(c) = chars.pop() {
        let next = (u32::from(c) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// A pattern for SQLite's GLOB: its wildcards are `*` and `?`, and `[`
/// opens a class, so literal ones are written as classes.
pub(super) fn sqlite_glob(glob: &NameGlob) -> String {
    let mut out = String::new();
    for piece in glob.pieces() {
        match piece {
            GlobPiece::Literal(text) => {
                for c in text.chars() {
                    match c {
                        '*' => out.push_str("[*]"),
                        '?' => out.push_str("[?]"),
                        '[' => out.push_str("[[]"),
                        c => out.push(c),
                    }
                }
            }
            GlobPiece::AnyChar => out.push('?'),
            GlobPiece::AnyRun => out.push('*'),
        }
    }
    out
}

/// A pattern for LIKE … ESCAPE '\': literal `%`, `_` and `\` escaped, so a
/// name's own `%` or `_` is never a wildcard.
pub(super) fn like_pattern(glob: &NameGlob) -> String {
    let mut out = String::new();
    for piece in glob.pieces() {
        match piece {
            GlobPiece::Literal(text) => {
                for c in text.chars() {
                    if matches!(c, '%' | '_' | '\\') {
                        out.push('\\');
                    }
                    out.push(c);
                }
            }
            GlobPiece::AnyChar => out.push('_'),
            GlobPiece::AnyRun => out.push('%'),
        }
    }
    out
}
