//! [`Conn`] on SQLite: a read connection or the writer's transaction,
//! running the shared statements synchronously (their futures are ready
//! at once; blocking code drives them with [`run`]).

use rusqlite::types::{Null, ToSqlOutput};
use rusqlite::Connection;

use crate::db::{Conn, Decode, Dialect, Param, Sql, Statement};
use crate::Result;

/// A SQLite connection as the shared code sees it.
pub(crate) struct Lite<'c>(pub &'c Connection);

/// Drives shared store logic on a SQLite connection, on this thread.
pub(crate) fn run<T>(c: &Connection, f: impl AsyncFnOnce(&mut Lite<'_>) -> Result<T>) -> Result<T> {
    futures_executor::block_on(f(&mut Lite(c)))
}

impl rusqlite::ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Param::Int(i) => ToSqlOutput::from(*i),
            Param::Text(t) => ToSqlOutput::from(t.as_str()),
            Param::Bool(b) => ToSqlOutput::from(*b),
            Param::Real(r) => ToSqlOutput::from(*r),
            Param::Bytes(b) => ToSqlOutput::from(b.as_slice()),
            Param::Null => ToSqlOutput::from(Null),
        })
    }
}

/// The values a statement's text takes: a SQLite text may leave out
/// trailing ones its PostgreSQL text uses (`crate::db`).
fn bound<'p>(stmt: &rusqlite::Statement<'_>, params: &'p [Param]) -> &'p [Param] {
    &params[..stmt.parameter_count().min(params.len())]
}

fn rows<T: Decode>(
    c: &Connection,
    text: &str,
    params: &[Param],
    mut f: impl FnMut(T) -> Result<bool>,
) -> Result<()> {
    let mut stmt = c.prepare_cached(text)?;
    let params = bound(&stmt, params);
    let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
    while let Some(row) = rows.next()? {
        if !f(T::decode(row)?)? {
            break;
        }
    }
    Ok(())
}

impl Conn for Lite<'_> {
    const DIALECT: Dialect = Dialect::Sqlite;

    async fn query<T: Decode>(&mut self, st: &Statement, params: &[Param]) -> Result<Vec<T>> {
        let mut out = Vec::new();
        rows(self.0, st.sqlite, params, |t| {
            out.push(t);
            Ok(true)
        })?;
        Ok(out)
    }

    async fn each<T: Decode>(
        &mut self,
        st: &Statement,
        params: &[Param],
        f: impl FnMut(T) -> Result<bool>,
    ) -> Result<()> {
        rows(self.0, st.sqlite, params, f)
    }

    async fn execute(&mut self, st: &Statement, params: &[Param]) -> Result<u64> {
        let mut stmt = self.0.prepare_cached(st.sqlite)?;
        let params = bound(&stmt, params);
        Ok(stmt.execute(rusqlite::params_from_iter(params))? as u64)
    }

    async fn batch(&mut self, text: &'static str) -> Result<()> {
        Ok(self.0.execute_batch(text)?)
    }

    async fn query_sql<T: Decode>(&mut self, sql: &Sql) -> Result<Vec<T>> {
        let mut out = Vec::new();
        rows(self.0, &sql.text, &sql.params, |t| {
            out.push(t);
            Ok(true)
        })?;
        Ok(out)
    }

    async fn snapshot<T>(&mut self, f: impl AsyncFnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.0.execute_batch("BEGIN")?;
        let out = f(self).await;
        self.0
            .execute_batch(if out.is_ok() { "COMMIT" } else { "ROLLBACK" })?;
        out
    }
}
