//! How a job listing ([`JobQuery`]) becomes SQL, the same for both stores,
//! so that a page is index searches merged in id order, never a scan of the
//! table nor a sort of everything that matches:
//!
//! 1. A creation window (`since`) is first turned into the ids it spans,
//!    by one search of `jobs_created`; every walk below stays inside them.
//!    The window is still checked row by row, so ids need not follow
//!    creation times (several nodes' clocks) for the answer to be exact.
//! 2. A name pattern with a literal prefix (`backup*`) is first turned into
//!    the names it matches, by one seek of the name index per distinct
//!    name under the prefix, at most [`MAX_NAME_ARMS`] of them.
//! 3. The page walks, newest first, one index range per exact name, or per
//!    state, or the node's, or else the primary key; the database merges
//!    the walks by id and stops at the limit. Every other filter is checked
//!    on the rows walked.
//!
//! A pattern that starts with a wildcard, or whose prefix covers more
//! names than that, is checked on the rows walked like the other filters.

use std::borrow::Cow;

use joblog_core::{GlobPiece, JobQuery, JobState, NameFilter, NameGlob};

use crate::rows::JOB_COLUMNS;

/// Most names a pattern's prefix may cover for the page to walk one index
/// range per name.
pub(crate) const MAX_NAME_ARMS: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

/// A value bound to a statement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Param {
    Int(i64),
    Text(String),
}

/// A statement and its values, in placeholder order.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    pub text: Cow<'static, str>,
    pub params: Vec<Param>,
}

impl Sql {
    /// Binds `p` and returns its placeholder.
    fn bind(&mut self, d: Dialect, p: Param) -> String {
        self.params.push(p);
        match d {
            Dialect::Sqlite => format!("?{}", self.params.len()),
            Dialect::Postgres => format!("${}", self.params.len()),
        }
    }
}

/// The lowest and highest id of the jobs created in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdSpan {
    pub first: i64,
    pub last: i64,
}

/// The statement answering one row `(min(id), max(id))` (both NULL when no
/// job was created in the window), or `None` without `since`: a window
/// open to the past would be found by reading most of the index.
pub(crate) fn window_sql(d: Dialect, q: &JobQuery) -> Option<Sql> {
    let since = q.created_since?;
    let until = q.created_until.map_or(i64::MAX, |t| t.micros());
    Some(Sql {
        text: Cow::Borrowed(match d {
            Dialect::Sqlite => {
                "SELECT min(id), max(id) FROM jobs WHERE created_at >= ?1 AND created_at < ?2"
            }
            Dialect::Postgres => {
                "SELECT min(id), max(id) FROM jobs WHERE created_at >= $1 AND created_at < $2"
            }
        }),
        params: vec![Param::Int(since.micros()), Param::Int(until)],
    })
}

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
fn prefix_upper_bound(prefix: &str) -> Option<String> {
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

/// What one walk of the page follows.
#[derive(Debug, Clone, Copy)]
enum Walk<'a> {
    Name(&'a str),
    State(JobState),
    Node(&'a str),
    Id,
}

/// The page of `q`: `names` are the names its pattern matched (from
/// [`NameScan`]), `span` the ids its window covers (from [`window_sql`]).
/// `None` when nothing can match (a pattern that matched no name).
pub(crate) fn page_sql(
    d: Dialect,
    q: &JobQuery,
    names: Option<&[String]>,
    span: Option<IdSpan>,
) -> Option<Sql> {
    let mut sql = Sql {
        text: Cow::Borrowed(""),
        params: Vec::new(),
    };
    // Every state is no filter at all.
    let states: &[JobState] = if q.states.len() >= JobState::ALL.len() {
        &[]
    } else {
        &q.states
    };
    let mut walks: Vec<Walk> = Vec::new();
    let mut glob_checked = None;
    match (&q.name, names) {
        (Some(NameFilter::Exact(name)), _) => walks.push(Walk::Name(name)),
        (Some(NameFilter::Glob(_)), Some(names)) => {
            if names.is_empty() {
                return None;
            }
            walks.extend(names.iter().map(|n| Walk::Name(n)));
        }
        (Some(NameFilter::Glob(glob)), None) => glob_checked = Some(glob),
        (None, _) => {}
    }
    if walks.is_empty() {
        match (states, &q.node) {
            ([_, ..], _) => walks.extend(states.iter().map(|&s| Walk::State(s))),
            ([], Some(node)) => walks.push(Walk::Node(node)),
            ([], None) => walks.push(Walk::Id),
        }
    }
    let by_state = matches!(walks[0], Walk::State(_));
    let by_node = matches!(walks[0], Walk::Node(_));

    // What every walk checks besides its key, bound once.
    let before = sql.bind(d, Param::Int(q.before_id.unwrap_or(i64::MAX)));
    let limit = sql.bind(d, Param::Int(i64::from(q.limit)));
    let mut checks = format!("id < {before}");
    if let Some(span) = span {
        let first = sql.bind(d, Param::Int(span.first));
        let last = sql.bind(d, Param::Int(span.last));
        checks.push_str(&format!(" AND id >= {first} AND id <= {last}"));
    }
    if !by_state && !states.is_empty() {
        // State names are joblog's own words, never user text.
        let list: Vec<String> = states.iter().map(|s| format!("'{}'", s.name())).collect();
        checks.push_str(&format!(" AND state IN ({})", list.join(", ")));
    }
    if let Some(glob) = glob_checked {
        let pattern = match d {
            Dialect::Sqlite => sql.bind(d, Param::Text(sqlite_glob(glob))),
            Dialect::Postgres => sql.bind(d, Param::Text(like_pattern(glob))),
        };
        checks.push_str(&match d {
            Dialect::Sqlite => format!(" AND name GLOB {pattern}"),
            Dialect::Postgres => format!(" AND name LIKE {pattern} ESCAPE '\\'"),
        });
    }
    if let (false, Some(node)) = (by_node, &q.node) {
        let node = sql.bind(d, Param::Text(node.clone()));
        checks.push_str(&format!(" AND node = {node}"));
    }
    if let Some(since) = q.created_since {
        let since = sql.bind(d, Param::Int(since.micros()));
        checks.push_str(&format!(" AND created_at >= {since}"));
    }
    if let Some(until) = q.created_until {
        let until = sql.bind(d, Param::Int(until.micros()));
        checks.push_str(&format!(" AND created_at < {until}"));
    }
    let arms: Vec<String> = walks
        .iter()
        .map(|walk| {
            // SQLite is told the index: with several filters its planner
            // may otherwise prefer one that needs a sort.
            let (index, key) = match *walk {
                Walk::Name(name) => ("INDEXED BY jobs_name", {
                    let p = sql.bind(d, Param::Text(name.to_string()));
                    format!("name = {p} AND ")
                }),
                Walk::State(state) => (
                    "INDEXED BY jobs_state",
                    format!("state = '{}' AND ", state.name()),
                ),
                Walk::Node(node) => ("INDEXED BY jobs_node", {
                    let p = sql.bind(d, Param::Text(node.to_string()));
                    format!("node = {p} AND ")
                }),
                Walk::Id => ("NOT INDEXED", String::new()),
            };
            let index = match d {
                Dialect::Sqlite => format!(" {index}"),
                Dialect::Postgres => String::new(),
            };
            format!("SELECT {JOB_COLUMNS} FROM jobs{index} WHERE {key}{checks}")
        })
        .collect();
    let order = format!("ORDER BY id DESC LIMIT {limit}");
    let text = match (d, arms.as_slice()) {
        (_, [one]) => format!("{one} {order}"),
        // SQLite merges the walks of a compound SELECT by its ORDER BY.
        (Dialect::Sqlite, _) => format!("{} {order}", arms.join(" UNION ALL ")),
        // PostgreSQL merges them (Merge Append) only when each is ordered.
        (Dialect::Postgres, _) => {
            let arms: Vec<String> = arms.iter().map(|a| format!("({a} {order})")).collect();
            format!("{} {order}", arms.join(" UNION ALL "))
        }
    };
    sql.text = Cow::Owned(text);
    Some(sql)
}

/// A pattern for SQLite's GLOB: its wildcards are `*` and `?`, and `[`
/// opens a class, so literal ones are written as classes.
fn sqlite_glob(glob: &NameGlob) -> String {
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
fn like_pattern(glob: &NameGlob) -> String {
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

/// Every kind of statement a listing runs, for the tests that hold each
/// to an index search: the window, the four seeks of a name scan, and a
/// page of each shape (walked by id, by one or several states, by node, by
/// an exact name, by the names a pattern matched), with the other filters
/// checked on the way.
#[cfg(test)]
pub(crate) fn every_statement(d: Dialect) -> Vec<Sql> {
    use joblog_core::Timestamp;

    let span = Some(IdSpan { first: 3, last: 90 });
    let query =
        |states: &[JobState], name: Option<&str>, node: Option<&str>, window: bool| JobQuery {
            states: states.to_vec(),
            name: name.map(NameFilter::parse),
            node: node.map(str::to_string),
            created_since: window.then_some(Timestamp(1_000)),
            created_until: window.then_some(Timestamp(9_000)),
            limit: 50,
            before_id: Some(100),
        };
    let failed = [JobState::Failed, JobState::TimedOut];
    let mut out = vec![window_sql(d, &query(&[], None, None, true)).unwrap()];
    let pattern = query(&[], Some("backup*"), None, false);
    let mut scan = NameScan::new(&pattern).unwrap();
    out.push(scan.next_sql(d).unwrap());
    scan.found(Some("backup-db".into()));
    out.push(scan.next_sql(d).unwrap());
    let unbounded = query(&[], Some("\u{10FFFF}*"), None, false);
    let mut scan = NameScan::new(&unbounded).unwrap();
    out.push(scan.next_sql(d).unwrap());
    scan.found(Some("\u{10FFFF}x".into()));
    out.push(scan.next_sql(d).unwrap());
    let names = ["backup-db".to_string(), "backup-files".to_string()];
    let pages = [
        (query(&[], None, None, false), None, None),
        (query(&JobState::ALL, None, None, false), None, None),
        (query(&[JobState::Running], None, None, false), None, None),
        (query(&failed, None, None, true), None, span),
        (query(&failed, Some("*-db"), Some("n"), true), None, span),
        (query(&[], None, Some("n"), true), None, span),
        (query(&[], Some("x"), None, false), None, None),
        (query(&failed, Some("x"), Some("n"), true), None, span),
        (
            query(&failed, Some("backup*"), None, true),
            Some(&names[..]),
            span,
        ),
        (
            query(&[], Some("backup*"), Some("n"), false),
            Some(&names[..1]),
            None,
        ),
        (query(&[], Some("*-db"), None, false), None, None),
        (query(&failed, Some("b*"), None, false), None, None),
    ];
    for (q, names, span) in &pages {
        out.push(page_sql(d, q, *names, *span).unwrap());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(text: &str) -> NameGlob {
        match NameFilter::parse(text) {
            NameFilter::Glob(g) => g,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn patterns_keep_their_literal_wildcards_literal() {
        let g = glob(r"50%_[x]\*\?*?");
        assert_eq!(sqlite_glob(&g), "50%_[[]x][*][?]*?");
        assert_eq!(like_pattern(&g), r"50\%\_[x]*?%_");
        assert_eq!(like_pattern(&glob(r"a\b*")), r"a\\b%");
    }

    #[test]
    fn a_prefix_range_holds_exactly_the_names_that_start_with_it() {
        assert_eq!(prefix_upper_bound("backup").as_deref(), Some("backuq"));
        assert_eq!(prefix_upper_bound("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_upper_bound("\u{D7FF}").as_deref(), Some("\u{E000}"));
        assert_eq!(prefix_upper_bound("\u{10FFFF}"), None);
        let upper = prefix_upper_bound("é").unwrap();
        for name in ["é", "é\u{10FFFF}", "éz"] {
            assert!(name >= "é" && name < upper.as_str(), "{name}");
        }
        for name in ["e", "ê", "f"] {
            assert!(!(name >= "é" && name < upper.as_str()), "{name}");
        }
    }

    #[test]
    fn a_scan_stops_after_too_many_names_and_keeps_the_matching_ones() {
        let q = JobQuery {
            name: Some(NameFilter::parse("b*-db")),
            ..JobQuery::default()
        };
        let mut scan = NameScan::new(&q).unwrap();
        let first = scan.next_sql(Dialect::Sqlite).unwrap();
        assert_eq!(
            first.params,
            [Param::Text("b".into()), Param::Text("c".into())]
        );
        scan.found(Some("b-db".into()));
        scan.found(Some("b-files".into()));
        let next = scan.next_sql(Dialect::Postgres).unwrap();
        assert!(
            next.text.contains(r#"name COLLATE "C" > $1"#),
            "{}",
            next.text
        );
        assert_eq!(next.params[0], Param::Text("b-files".into()));
        scan.found(None);
        assert!(scan.next_sql(Dialect::Sqlite).is_none());
        assert_eq!(scan.names(), Some(vec!["b-db".to_string()]));

        let mut scan = NameScan::new(&q).unwrap();
        for i in 0..=MAX_NAME_ARMS {
            assert!(scan.next_sql(Dialect::Sqlite).is_some());
            scan.found(Some(format!("b{i:03}-db")));
        }
        assert!(scan.next_sql(Dialect::Sqlite).is_none());
        assert_eq!(scan.names(), None);
    }

    #[test]
    fn a_pattern_without_prefix_is_not_scanned() {
        let q = JobQuery {
            name: Some(NameFilter::parse("*-db")),
            ..JobQuery::default()
        };
        assert!(NameScan::new(&q).is_none());
        let q = JobQuery {
            name: Some(NameFilter::parse("backup")),
            ..JobQuery::default()
        };
        assert!(NameScan::new(&q).is_none());
    }
}
