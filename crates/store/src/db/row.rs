//! Rows as the shared code reads them: [`Row`] is the tiny trait both
//! drivers' rows implement, [`Value`] the column types both read alike,
//! and [`Decode`] a domain type read from a row once, for both databases.

use crate::Result;

/// A row of either database, read by column position.
pub(crate) trait Row {
    fn get<T: Value>(&self, i: usize) -> Result<T>;
}

impl Row for rusqlite::Row<'_> {
    fn get<T: Value>(&self, i: usize) -> Result<T> {
        T::from_sqlite(self, i)
    }
}

impl Row for tokio_postgres::Row {
    fn get<T: Value>(&self, i: usize) -> Result<T> {
        T::from_postgres(self, i)
    }
}

/// A column type, as each driver reads it.
pub(crate) trait Value: Sized {
    fn from_sqlite(row: &rusqlite::Row<'_>, i: usize) -> Result<Self>;
    fn from_postgres(row: &tokio_postgres::Row, i: usize) -> Result<Self>;
}

/// Types both drivers read natively, the same way.
macro_rules! native {
    ($($t:ty),*) => {$(
        impl Value for $t {
            fn from_sqlite(row: &rusqlite::Row<'_>, i: usize) -> Result<Self> {
                Ok(row.get(i)?)
            }
            fn from_postgres(row: &tokio_postgres::Row, i: usize) -> Result<Self> {
                Ok(row.try_get(i)?)
            }
        }
    )*};
}
native!(
    i64,
    Option<i64>,
    i32,
    Option<i32>,
    bool,
    f64,
    String,
    Option<String>,
    Vec<u8>,
    Option<Vec<u8>>
);

/// A stream code: `integer` on SQLite, `smallint` on PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SmallInt(pub i64);

impl Value for SmallInt {
    fn from_sqlite(row: &rusqlite::Row<'_>, i: usize) -> Result<Self> {
        Ok(SmallInt(row.get(i)?))
    }
    fn from_postgres(row: &tokio_postgres::Row, i: usize) -> Result<Self> {
        Ok(SmallInt(i64::from(row.try_get::<_, i16>(i)?)))
    }
}

/// A record's message: `TEXT` on SQLite, `bytea` on PostgreSQL (text
/// there cannot hold the NUL bytes a job may print). Stored from a
/// `String`, so valid UTF-8; a row written by anything else is shown with
/// replacement characters rather than refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Message(pub Option<String>);

impl Value for Message {
    fn from_sqlite(row: &rusqlite::Row<'_>, i: usize) -> Result<Self> {
        Ok(Message(row.get(i)?))
    }
    fn from_postgres(row: &tokio_postgres::Row, i: usize) -> Result<Self> {
        let bytes: Option<Vec<u8>> = row.try_get(i)?;
        Ok(Message(bytes.map(|b| {
            String::from_utf8(b)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
        })))
    }
}

/// A value read from one row, the same for both databases.
pub(crate) trait Decode: Sized {
    fn decode(row: &impl Row) -> Result<Self>;
}

macro_rules! tuple {
    ($($t:ident $i:tt),*) => {
        impl<$($t: Value),*> Decode for ($($t,)*) {
            fn decode(row: &impl Row) -> Result<Self> {
                Ok(($(row.get::<$t>($i)?,)*))
            }
        }
    };
}
tuple!(A 0);
tuple!(A 0, B 1);
tuple!(A 0, B 1, C 2);
tuple!(A 0, B 1, C 2, D 3);
