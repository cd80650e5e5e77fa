//! [`Conn`] on PostgreSQL: a pooled read connection and the writer's
//! transaction, their statements prepared once each; and how a [`Param`]
//! binds to the column the server says it is for.

use std::collections::HashMap;
use std::error::Error;

use bytes::BytesMut;
use futures_util::{pin_mut, TryStreamExt};
use tokio_postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use tokio_postgres::Client;

use super::pool::PooledConn;
use super::writer::batch::prepared;
use crate::db::{Conn, Decode, Dialect, Param, Sql, Statement};
use crate::Result;

impl ToSql for Param {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            Param::Null => Ok(IsNull::Yes),
            Param::Int(v) => match *ty {
                Type::INT2 => i16::try_from(*v)?.to_sql_checked(ty, out),
                Type::INT4 => i32::try_from(*v)?.to_sql_checked(ty, out),
                _ => v.to_sql_checked(ty, out),
            },
            Param::Text(t) if *ty == Type::BYTEA => t.as_bytes().to_sql_checked(ty, out),
            Param::Text(t) => t.as_str().to_sql_checked(ty, out),
            Param::Bool(b) => b.to_sql_checked(ty, out),
            Param::Real(r) => r.to_sql_checked(ty, out),
            Param::Bytes(b) => b.as_slice().to_sql_checked(ty, out),
        }
    }

    /// Any: each value checks the type it is written as.
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// `params` as the driver takes them.
pub(super) fn refs(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

impl Conn for PooledConn {
    const DIALECT: Dialect = Dialect::Postgres;

    async fn query<T: Decode>(&mut self, st: &Statement, params: &[Param]) -> Result<Vec<T>> {
        let rows = self.query(st.postgres, &refs(params)).await?;
        rows.iter().map(T::decode).collect()
    }

    async fn each<T: Decode>(
        &mut self,
        st: &Statement,
        params: &[Param],
        mut f: impl FnMut(T) -> Result<bool>,
    ) -> Result<()> {
        let rows = self.query_rows(st.postgres, &refs(params)).await?;
        pin_mut!(rows);
        while let Some(row) = rows.try_next().await? {
            if !f(T::decode(&row)?)? {
                break;
            }
        }
        Ok(())
    }

    async fn execute(&mut self, st: &Statement, params: &[Param]) -> Result<u64> {
        let stmt = self.prepared(st.postgres).await?;
        Ok(self.client.execute(&stmt, &refs(params)).await?)
    }

    async fn batch(&mut self, text: &'static str) -> Result<()> {
        Ok(self.client.batch_execute(text).await?)
    }

    /// Prepared once per connection when its text is fixed; a text built
    /// for one query is sent with its values (and planned for them).
    async fn query_sql<T: Decode>(&mut self, sql: &Sql) -> Result<Vec<T>> {
        let rows = match &sql.text {
            std::borrow::Cow::Borrowed(text) => self.query(text, &refs(&sql.params)).await?,
            std::borrow::Cow::Owned(text) => {
                self.client.query(text.as_str(), &refs(&sql.params)).await?
            }
        };
        rows.iter().map(T::decode).collect()
    }

    async fn snapshot<T>(&mut self, f: impl AsyncFnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.client
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await?;
        let out = f(self).await;
        let end = if out.is_ok() { "COMMIT" } else { "ROLLBACK" };
        self.client.batch_execute(end).await?;
        out
    }
}

/// The writer's transaction as the shared code sees it: statements
/// prepared once per connection, and the node it writes for.
pub(crate) struct PgTx<'a> {
    pub tx: &'a Client,
    pub statements: &'a mut HashMap<&'static str, tokio_postgres::Statement>,
    pub node: &'a str,
    /// The enabled notification rules, read once a batch: on PostgreSQL
    /// each read is a round trip, and a burst of jobs ends many in one.
    pub rules: &'a mut Option<crate::notifications::EnabledRules>,
    /// Whether the batch queued a notification delivery.
    pub queued: &'a mut bool,
}

impl PgTx<'_> {
    pub(crate) async fn prepared(
        &mut self,
        sql: &'static str,
    ) -> Result<tokio_postgres::Statement> {
        prepared(self.statements, self.tx, sql).await
    }
}

impl Conn for PgTx<'_> {
    const DIALECT: Dialect = Dialect::Postgres;

    async fn query<T: Decode>(&mut self, st: &Statement, params: &[Param]) -> Result<Vec<T>> {
        let stmt = self.prepared(st.postgres).await?;
        let rows = self.tx.query(&stmt, &refs(params)).await?;
        rows.iter().map(T::decode).collect()
    }

    async fn each<T: Decode>(
        &mut self,
        st: &Statement,
        params: &[Param],
        mut f: impl FnMut(T) -> Result<bool>,
    ) -> Result<()> {
        let stmt = self.prepared(st.postgres).await?;
        let rows = self.tx.query_raw(&stmt, refs(params)).await?;
        pin_mut!(rows);
        while let Some(row) = rows.try_next().await? {
            if !f(T::decode(&row)?)? {
                break;
            }
        }
        Ok(())
    }

    async fn execute(&mut self, st: &Statement, params: &[Param]) -> Result<u64> {
        let stmt = self.prepared(st.postgres).await?;
        Ok(self.tx.execute(&stmt, &refs(params)).await?)
    }

    async fn batch(&mut self, text: &'static str) -> Result<()> {
        Ok(self.tx.batch_execute(text).await?)
    }

    async fn query_sql<T: Decode>(&mut self, sql: &Sql) -> Result<Vec<T>> {
        let rows = self.tx.query(sql.text.as_ref(), &refs(&sql.params)).await?;
        rows.iter().map(T::decode).collect()
    }

    /// The writer's transaction is one snapshot already.
    async fn snapshot<T>(&mut self, f: impl AsyncFnOnce(&mut Self) -> Result<T>) -> Result<T> {
        f(self).await
    }
}
