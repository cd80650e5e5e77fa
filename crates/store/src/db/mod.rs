//! The one mechanism by which the store's logic is written once for both
//! databases. Shared code sees a [`Conn`]: it runs a [`Statement`] (one
//! text, or two where the databases really differ) or a [`Sql`] built at
//! run time, binds [`Param`]s, and gets rows back as domain values through
//! [`Decode`], which reads columns through the tiny [`Row`] trait both
//! drivers implement. `sqlite/conn.rs` and `postgres/conn.rs` are the two
//! implementations; everything else in the store that is not a genuine
//! difference between the databases is written against this module.
//!
//! Dialect rules, checked by tests:
//! - Placeholders are `$N` in every text; SQLite gets them as `?N` (the
//!   same length, rewritten at compile time by [`sql!`]), because SQLite
//!   numbers `$N` by first appearance rather than by `N`.
//! - No `::` casts in a shared text (`CAST(x AS bigint)` works in both).
//! - A SQLite text may leave out trailing parameters that the PostgreSQL
//!   one uses only to save round trips (a byte bound the shared code
//!   applies anyway); the SQLite connection binds as many as its text has.

mod row;
mod statement;

use std::borrow::Cow;
use std::future::Future;

pub(crate) use row::{Decode, Message, Row, SmallInt, Value};
pub(crate) use statement::{sql, sqlite_text, Statement};

use crate::Result;

/// Which database a text is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

/// A value bound to a statement. Integers are sized to the column on
/// PostgreSQL (`smallint`, `integer` or `bigint`), text binds to `bytea`
/// where a column is bytes, bytes are a BLOB or `bytea`, and `Null` is a
/// NULL of any type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Param {
    Int(i64),
    Text(String),
    Bool(bool),
    Real(f64),
    Bytes(Vec<u8>),
    Null,
}

impl From<i64> for Param {
    fn from(v: i64) -> Param {
        Param::Int(v)
    }
}

impl From<u32> for Param {
    fn from(v: u32) -> Param {
        Param::Int(i64::from(v))
    }
}

impl From<&str> for Param {
    fn from(v: &str) -> Param {
        Param::Text(v.to_owned())
    }
}

impl From<String> for Param {
    fn from(v: String) -> Param {
        Param::Text(v)
    }
}

impl From<f64> for Param {
    fn from(v: f64) -> Param {
        Param::Real(v)
    }
}

impl From<Vec<u8>> for Param {
    fn from(v: Vec<u8>) -> Param {
        Param::Bytes(v)
    }
}

impl From<bool> for Param {
    fn from(v: bool) -> Param {
        Param::Bool(v)
    }
}

impl<T: Into<Param>> From<Option<T>> for Param {
    fn from(v: Option<T>) -> Param {
        v.map_or(Param::Null, Into::into)
    }
}

/// A statement built at run time (a listing's page, say), in one dialect,
/// with its values in placeholder order.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    pub text: Cow<'static, str>,
    pub params: Vec<Param>,
}

impl Sql {
    /// Binds `p` and returns its placeholder.
    pub(crate) fn bind(&mut self, d: Dialect, p: Param) -> String {
        self.params.push(p);
        match d {
            Dialect::Sqlite => format!("?{}", self.params.len()),
            Dialect::Postgres => format!("${}", self.params.len()),
        }
    }
}

/// A connection of either database, as the store's shared logic uses it:
/// a read connection, or the writer inside its transaction. SQLite's
/// implementation never waits (its futures are ready at once, so blocking
/// code drives them with `futures_executor::block_on`).
pub(crate) trait Conn {
    const DIALECT: Dialect;

    /// Every row of `st`, decoded.
    fn query<T: Decode>(
        &mut self,
        st: &Statement,
        params: &[Param],
    ) -> impl Future<Output = Result<Vec<T>>>;

    /// The rows of `st` one at a time as they come, decoded, to `f` until
    /// it answers `false`: for reads that fold many rows into little.
    fn each<T: Decode>(
        &mut self,
        st: &Statement,
        params: &[Param],
        f: impl FnMut(T) -> Result<bool>,
    ) -> impl Future<Output = Result<()>>;

    /// Runs `st`; how many rows it changed.
    fn execute(&mut self, st: &Statement, params: &[Param]) -> impl Future<Output = Result<u64>>;

    /// Runs statements that take no values and return no rows
    /// (savepoints), as one simple query.
    fn batch(&mut self, text: &'static str) -> impl Future<Output = Result<()>>;

    /// Every row of a statement built at run time, decoded.
    fn query_sql<T: Decode>(&mut self, sql: &Sql) -> impl Future<Output = Result<Vec<T>>>;

    /// Runs `f` in one read snapshot: every statement it runs sees the
    /// database as of one instant.
    fn snapshot<T>(
        &mut self,
        f: impl AsyncFnOnce(&mut Self) -> Result<T>,
    ) -> impl Future<Output = Result<T>>;
}

/// The first row of `st`, if any.
pub(crate) async fn query_opt<C: Conn + ?Sized, T: Decode>(
    c: &mut C,
    st: &Statement,
    params: &[Param],
) -> Result<Option<T>> {
    Ok(c.query(st, params).await?.into_iter().next())
}

/// The one value of a statement that always answers one row
/// (`SELECT count(*) …`).
pub(crate) async fn query_one<C: Conn, T: Value>(
    c: &mut C,
    st: &Statement,
    params: &[Param],
) -> Result<T> {
    match query_opt::<C, (T,)>(c, st, params).await? {
        Some((v,)) => Ok(v),
        None => Err(crate::StoreError::Database(format!(
            "no row from a statement that always answers one: {}",
            st.text(C::DIALECT)
        ))),
    }
}

/// Every statement a job listing, an audit listing or a search builds in `d`,
/// with its values: for the query-plan tests of both stores.
#[cfg(test)]
pub(crate) fn listing_statements(d: Dialect) -> Vec<(String, Vec<Param>)> {
    let listings = crate::listing::tests::every_statement(d);
    assert!(listings.len() > 10);
    // The audit trail's listings: each walk, forward and backward.
    let audit = crate::audit::every_statement(d);
    assert_eq!(audit.len(), 16);
    listings
        .into_iter()
        .chain(audit)
        .chain(crate::search::every_statement(d))
        .map(|s| (s.text.into_owned(), s.params))
        .collect()
}
