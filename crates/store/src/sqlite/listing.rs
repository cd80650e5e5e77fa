//! Job listings in the embedded store: the statements of
//! [`crate::listing`] run on one read connection, and the migration adding
//! the indexes they search.

use joblog_core::{Job, JobQuery};
use rusqlite::types::ToSqlOutput;
use rusqlite::{Connection, OptionalExtension};

use super::query_jobs;
use crate::listing::{page_sql, window_sql, Dialect, IdSpan, NameScan, Param, Sql};
use crate::Result;

/// Migration 3: listings by node and by creation time (`jobs --node`,
/// `--since`), each index ending in `id` like the others.
pub(super) const MIGRATION: &str = r#"
CREATE INDEX jobs_node ON jobs(node, id);
CREATE INDEX jobs_created ON jobs(created_at, id);
"#;

impl rusqlite::ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Param::Int(i) => ToSqlOutput::from(*i),
            Param::Text(t) => ToSqlOutput::from(t.as_str()),
        })
    }
}

fn params(sql: &Sql) -> Vec<&dyn rusqlite::ToSql> {
    sql.params
        .iter()
        .map(|p| p as &dyn rusqlite::ToSql)
        .collect()
}

pub(super) fn list(c: &Connection, q: &JobQuery) -> Result<Vec<Job>> {
    let d = Dialect::Sqlite;
    let span = match window_sql(d, q) {
        None => None,
        Some(sql) => {
            let bounds: (Option<i64>, Option<i64>) = c
                .prepare_cached(&sql.text)?
                .query_row(params(&sql).as_slice(), |r| Ok((r.get(0)?, r.get(1)?)))?;
            match bounds {
                (Some(first), Some(last)) => Some(IdSpan { first, last }),
                // No job was created in the window.
                _ => return Ok(Vec::new()),
            }
        }
    };
    let names = match NameScan::new(q) {
        None => None,
        Some(mut scan) => {
            while let Some(sql) = scan.next_sql(d) {
                let name: Option<String> = c
                    .prepare_cached(&sql.text)?
                    .query_row(params(&sql).as_slice(), |r| r.get(0))
                    .optional()?;
                scan.found(name);
            }
            scan.names()
        }
    };
    match page_sql(d, q, names.as_deref(), span) {
        Some(sql) => query_jobs(c, &sql.text, &params(&sql)),
        None => Ok(Vec::new()),
    }
}
