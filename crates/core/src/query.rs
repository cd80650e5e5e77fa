//! What a job listing asks for: states, a name or a name pattern, a node,
//! a window of creation times and a page. The stores turn it into index
//! searches; the API and the CLI read it from what users type.

use crate::{JobId, JobState, Timestamp};

/// A page of the job list, newest first. Every filter given must match.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobQuery {
    /// Jobs in any of these states; empty: every state.
    pub states: Vec<JobState>,
    pub name: Option<NameFilter>,
    /// Jobs run (or running) on this node.
    pub node: Option<String>,
    /// The runs of this schedule.
    pub schedule_id: Option<crate::schedule::ScheduleId>,
    /// Jobs in one of these folders; `None`: in any folder or none (an
    /// empty list matches nothing).
    pub folders: Option<Vec<String>>,
    /// Jobs created at or after this time.
    pub created_since: Option<Timestamp>,
    /// Jobs created before this time.
    pub created_until: Option<Timestamp>,
    pub limit: u32,
    /// Jobs with a smaller id than this (the `next_before_id` of the page
    /// before).
    pub before_id: Option<JobId>,
}

/// Which names a listing keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameFilter {
    /// Exactly this name.
    Exact(String),
    /// Names matching a pattern with at least one wildcard.
    Glob(NameGlob),
}

impl NameFilter {
    /// Reads a name as users write it: `*` stands for any run of
    /// characters, `?` for one character, and a backslash makes the `*`,
    /// `?` or `\` after it literal (any other backslash is itself). Text
    /// without a wildcard is an exact name.
    pub fn parse(text: &str) -> NameFilter {
        let mut pieces: Vec<GlobPiece> = Vec::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            let piece = match c {
                '*' => GlobPiece::AnyRun,
                '?' => GlobPiece::AnyChar,
                '\\' => match chars.peek() {
                    Some(&next @ ('*' | '?' | '\\')) => {
                        chars.next();
                        GlobPiece::Literal(next.to_string())
                    }
                    _ => GlobPiece::Literal(c.to_string()),
                },
                c => GlobPiece::Literal(c.to_string()),
            };
            match (pieces.last_mut(), piece) {
                // `**` matches what `*` does.
                (Some(GlobPiece::AnyRun), GlobPiece::AnyRun) => {}
                (Some(GlobPiece::Literal(text)), GlobPiece::Literal(more)) => text.push_str(&more),
                (_, piece) => pieces.push(piece),
            }
        }
        match pieces.as_slice() {
            [] => NameFilter::Exact(String::new()),
            [GlobPiece::Literal(text)] => NameFilter::Exact(text.clone()),
            _ => NameFilter::Glob(NameGlob { pieces }),
        }
    }

    /// Whether a job with this name is kept (a job without a name never
    /// is).
    pub fn matches(&self, name: &str) -> bool {
        match self {
            NameFilter::Exact(exact) => exact == name,
            NameFilter::Glob(glob) => glob.matches(name),
        }
    }
}

/// A name pattern, as pieces: literal text and the two wildcards, never
/// two literals or two `AnyRun` in a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameGlob {
    pieces: Vec<GlobPiece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GlobPiece {
    Literal(String),
    /// `?`: one character.
    AnyChar,
    /// `*`: any run of characters, empty too.
    AnyRun,
}

impl NameGlob {
    pub fn pieces(&self) -> &[GlobPiece] {
        &self.pieces
    }

    /// The literal text every matching name starts with ("" when the
    /// pattern starts with a wildcard): the part an index can search.
    pub fn literal_prefix(&self) -> &str {
        match self.pieces.first() {
            Some(GlobPiece::Literal(text)) => text,
            _ => "",
        }
    }

    /// Matches character by character, as SQLite's GLOB and PostgreSQL's
    /// LIKE do; backtracks only to the last `*` (linear in practice, never
    /// exponential).
    pub fn matches(&self, name: &str) -> bool {
        let pattern: Vec<Token> = self
            .pieces
            .iter()
            .flat_map(|p| match p {
                GlobPiece::Literal(text) => text.chars().map(Token::Char).collect::<Vec<_>>(),
                GlobPiece::AnyChar => vec![Token::One],
                GlobPiece::AnyRun => vec![Token::Run],
            })
            .collect();
        let name: Vec<char> = name.chars().collect();
        let (mut p, mut n) = (0, 0);
        // Where the last `*` was, and the name position it matched up to.
        let mut star: Option<(usize, usize)> = None;
        while n < name.len() {
            match pattern.get(p) {
                Some(Token::Char(c)) if *c == name[n] => (p, n) = (p + 1, n + 1),
                Some(Token::One) => (p, n) = (p + 1, n + 1),
                Some(Token::Run) => {
                    star = Some((p, n));
                    p += 1;
                }
                _ => match star {
                    Some((sp, sn)) => {
                        star = Some((sp, sn + 1));
                        (p, n) = (sp + 1, sn + 1);
                    }
                    None => return false,
                },
            }
        }
        pattern[p..].iter().all(|t| *t == Token::Run)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Char(char),
    One,
    Run,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(text: &str) -> NameGlob {
        match NameFilter::parse(text) {
            NameFilter::Glob(g) => g,
            other => panic!("{text:?} is not a pattern: {other:?}"),
        }
    }

    #[test]
    fn text_without_wildcards_is_an_exact_name() {
        assert_eq!(
            NameFilter::parse("backup"),
            NameFilter::Exact("backup".into())
        );
        assert_eq!(
            NameFilter::parse(r"50\% a_b \* \? \\ \x"),
            NameFilter::Exact(r"50\% a_b * ? \ \x".into())
        );
    }

    #[test]
    fn patterns_split_into_pieces_with_their_prefix() {
        let g = glob("backup-*-db?");
        assert_eq!(
            g.pieces(),
            [
                GlobPiece::Literal("backup-".into()),
                GlobPiece::AnyRun,
                GlobPiece::Literal("-db".into()),
                GlobPiece::AnyChar,
            ]
        );
        assert_eq!(g.literal_prefix(), "backup-");
        assert_eq!(
            glob("**x").pieces(),
            [GlobPiece::AnyRun, GlobPiece::Literal("x".into())]
        );
        assert_eq!(glob("*x").literal_prefix(), "");
        assert_eq!(glob(r"a\*b*").literal_prefix(), "a*b");
    }

    #[test]
    fn globs_match_like_sql_globs() {
        let cases: &[(&str, &str, bool)] = &[
            ("backup*", "backup", true),
            ("backup*", "backup-db", true),
            ("backup*", "nightly-backup", false),
            ("*backup*", "nightly-backup-2", true),
            ("b?ckup", "backup", true),
            ("b?ckup", "bckup", false),
            ("b?ckup", "bäckup", true),
            ("a*b*c", "aXbYbZc", true),
            ("a*b*c", "aXbYbZ", false),
            ("*", "", true),
            ("?", "", false),
            ("50%*", "50%-off", true),
            ("50%*", "500", false),
            ("a_*", "ab", false),
            (r"\**", "*star", true),
            (r"\**", "star", false),
            ("*.tar.?z", "etc.tar.gz", true),
            ("*.tar.?z", "etc.tar.bz2", false),
        ];
        for &(pattern, name, expected) in cases {
            assert_eq!(
                NameFilter::parse(pattern).matches(name),
                expected,
                "{pattern:?} against {name:?}"
            );
        }
    }
}
