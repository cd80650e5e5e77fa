//! API tokens in the embedded store: kept by the SHA-256 of their text,
//! looked up by that hash (a unique index), listed without it.

use joblog_core::{NewToken, Timestamp, TokenInfo};
use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::rows::{token_columns, TokenRow};
use crate::{Outcome, Result};

/// Migration 2: the tokens table.
pub(super) const MIGRATION: &str = r#"
CREATE TABLE tokens (
    name         TEXT PRIMARY KEY,
    hash         BLOB NOT NULL UNIQUE,
    role         TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER,
    last_used_at INTEGER
);
"#;

fn token_from_row(row: &Row) -> rusqlite::Result<TokenRow> {
    Ok(TokenRow {
        name: row.get(0)?,
        role: row.get(1)?,
        created_at: row.get(2)?,
        expires_at: row.get(3)?,
        last_used_at: row.get(4)?,
    })
}

pub(super) fn by_hash(c: &Connection, hash: &[u8; 32]) -> Result<Option<TokenInfo>> {
    let row = c
        .prepare_cached(concat!(
            "SELECT ",
            token_columns!(),
            " FROM tokens WHERE hash = ?1"
        ))?
        .query_row([&hash[..]], token_from_row)
        .optional()?;
    row.map(TokenRow::into_info).transpose()
}

pub(super) fn list(c: &Connection) -> Result<Vec<TokenInfo>> {
    let mut stmt = c.prepare_cached(concat!(
        "SELECT ",
        token_columns!(),
        " FROM tokens ORDER BY name"
    ))?;
    let rows = stmt.query_map([], token_from_row)?;
    rows.map(|r| r?.into_info()).collect()
}

/// → `Count(1)`, or `Count(0)` when the name is taken.
pub(super) fn create(c: &Connection, t: &NewToken) -> Result<Outcome> {
    let n = c
        .prepare_cached(
            "INSERT INTO tokens (name, hash, role, created_at, expires_at) \
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (name) DO NOTHING",
        )?
        .execute(params![
            t.name,
            &t.hash[..],
            t.role.name(),
            t.created_at.micros(),
            t.expires_at.map(Timestamp::micros)
        ])?;
    Ok(Outcome::Count(n as u64))
}

pub(super) fn revoke(c: &Connection, name: &str) -> Result<Outcome> {
    let n = c
        .prepare_cached("DELETE FROM tokens WHERE name = ?1")?
        .execute([name])?;
    Ok(Outcome::Count(n as u64))
}

pub(super) fn touch(c: &Connection, name: &str, at: Timestamp) -> Result<Outcome> {
    c.prepare_cached("UPDATE tokens SET last_used_at = ?2 WHERE name = ?1")?
        .execute(params![name, at.micros()])?;
    Ok(Outcome::Done)
}
