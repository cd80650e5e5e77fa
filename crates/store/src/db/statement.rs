//! A statement the store runs again and again: its text for each
//! database, fixed at compile time, so that each connection prepares it
//! once (keyed by its text) and no text is built per call.

use super::Dialect;

/// The texts of one statement. Written once with [`sql!`] where the
/// databases agree; with [`Statement::new`] and two texts where they
/// really differ (each such place says why).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Statement {
    pub postgres: &'static str,
    pub sqlite: &'static str,
}

impl Statement {
    /// Two texts: only where the databases really differ.
    pub(crate) const fn new(sqlite: &'static str, postgres: &'static str) -> Statement {
        Statement { postgres, sqlite }
    }

    pub(crate) fn text(&self, d: Dialect) -> &'static str {
        match d {
            Dialect::Sqlite => self.sqlite,
            Dialect::Postgres => self.postgres,
        }
    }
}

/// One statement for both databases, from one text with `$N`
/// placeholders: SQLite's text is the same with `?N`, rewritten at compile
/// time (a `::` cast in the text fails the build: SQLite would read it as
/// part of a parameter's name).
macro_rules! sql {
    ($text:expr) => {{
        const POSTGRES: &str = $text;
        const BYTES: [u8; POSTGRES.len()] = $crate::db::sqlite_text::<{ POSTGRES.len() }>(POSTGRES);
        const SQLITE: &str = match ::std::str::from_utf8(&BYTES) {
            Ok(s) => s,
            Err(_) => panic!("not UTF-8"),
        };
        $crate::db::Statement {
            postgres: POSTGRES,
            sqlite: SQLITE,
        }
    }};
}
pub(crate) use sql;

/// `text` with each `$` that starts a placeholder (`$` and a digit) made
/// `?`. Compile-time only (from [`sql!`]).
pub(crate) const fn sqlite_text<const N: usize>(text: &str) -> [u8; N] {
    let bytes = text.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        let b = bytes[i];
        if b == b':' && i + 1 < N && bytes[i + 1] == b':' {
            panic!("a shared statement has a `::` cast: write CAST(x AS type)");
        }
        out[i] = if b == b'$' && i + 1 < N && bytes[i + 1].is_ascii_digit() {
            b'?'
        } else {
            b
        };
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOTH: Statement = sql!("SELECT a FROM t WHERE b = $2 AND c = $1 AND d = '$x'");

    #[test]
    fn one_text_gives_sqlite_numbered_placeholders() {
        assert_eq!(
            BOTH.postgres,
            "SELECT a FROM t WHERE b = $2 AND c = $1 AND d = '$x'"
        );
        assert_eq!(
            BOTH.sqlite,
            "SELECT a FROM t WHERE b = ?2 AND c = ?1 AND d = '$x'"
        );
        assert_eq!(BOTH.text(Dialect::Sqlite), BOTH.sqlite);
    }

    /// SQLite numbers `$N` by first appearance, not by `N`: the reason
    /// for the rewrite.
    #[test]
    fn sqlite_binds_question_numbers_by_number() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let st = sql!("SELECT $2, $1");
        let got: (i64, i64) = c
            .query_row(st.sqlite, [10, 20], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        assert_eq!(got, (20, 10));
        let wrong: (i64, i64) = c
            .query_row(st.postgres, [10, 20], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        assert_eq!(wrong, (10, 20), "SQLite reads `$2, $1` as the first two");
    }
}
