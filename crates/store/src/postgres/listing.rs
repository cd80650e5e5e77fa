//! Job listings in the shared store: the statements of
//! [`crate::listing`] run on one read connection. The seeks and the window
//! are prepared once per connection like the other reads; a page's text
//! depends on the filters, so it is sent with its values each time (and
//! planned for them).

use joblog_core::{Job, JobQuery};
use tokio_postgres::types::ToSql;

use super::pool::PooledConn;
use super::sql::jobs_from_rows;
use crate::listing::{page_sql, window_sql, Dialect, IdSpan, NameScan, Param, Sql};
use crate::Result;

pub(super) fn params(sql: &Sql) -> Vec<&(dyn ToSql + Sync)> {
    sql.params
        .iter()
        .map(|p| match p {
            Param::Int(i) => i as &(dyn ToSql + Sync),
            Param::Text(t) => t as &(dyn ToSql + Sync),
        })
        .collect()
}

/// Runs `sql`: prepared once per connection when its text is fixed.
async fn run(c: &mut PooledConn, sql: &Sql) -> Result<Vec<tokio_postgres::Row>> {
    match &sql.text {
        std::borrow::Cow::Borrowed(text) => c.query(text, &params(sql)).await,
        std::borrow::Cow::Owned(text) => Ok(c.client.query(text.as_str(), &params(sql)).await?),
    }
}

pub(super) async fn list(c: &mut PooledConn, q: &JobQuery) -> Result<Vec<Job>> {
    let d = Dialect::Postgres;
    let span = match window_sql(d, q) {
        None => None,
        Some(sql) => {
            let rows = run(c, &sql).await?;
            let bounds: (Option<i64>, Option<i64>) = match rows.first() {
                Some(row) => (row.try_get(0)?, row.try_get(1)?),
                None => (None, None),
            };
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
                let rows = run(c, &sql).await?;
                let name: Option<String> = match rows.first() {
                    Some(row) => row.try_get(0)?,
                    None => None,
                };
                scan.found(name);
            }
            scan.names()
        }
    };
    match page_sql(d, q, names.as_deref(), span) {
        Some(sql) => jobs_from_rows(&run(c, &sql).await?),
        None => Ok(Vec::new()),
    }
}
