//! A PostgreSQL URL naming another database on the same server: how a test
//! or a benchmark gets a fresh database of its own next to the one it was
//! given.

/// `url` with its database (the URL path) replaced by `dbname`; user,
/// password, hosts, ports and `?` parameters stay as they were. `None` when
/// `url` has no `scheme://`.
pub(crate) fn with_dbname(url: &str, dbname: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    // Reserved characters in user or password are percent-encoded in a URL,
    // so the authority ends at the first '/' or '?'.
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let query = tail.find('?').map_or("", |q| &tail[q..]);
    Some(format!("{scheme}://{authority}/{dbname}{query}"))
}

/// `name` as an SQL identifier, whatever it holds.
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_dbname_keeps_everything_but_the_database() {
        let w = |url: &str| with_dbname(url, "x").unwrap();
        assert_eq!(
            w("postgres://postgres@127.0.0.1:5432/test"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            w("postgresql://u:p%2Fw@h1:1,h2:2/db?sslmode=disable"),
            "postgresql://u:p%2Fw@h1:1,h2:2/x?sslmode=disable"
        );
        assert_eq!(w("postgres://h"), "postgres://h/x");
        assert_eq!(
            w("postgres://h?application_name=a"),
            "postgres://h/x?application_name=a"
        );
        assert_eq!(
            w("postgres:///db?host=/run/postgresql"),
            "postgres:///x?host=/run/postgresql"
        );
        assert_eq!(with_dbname("no scheme", "x"), None);
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(quote_ident("joblog_b"), "\"joblog_b\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }
}
