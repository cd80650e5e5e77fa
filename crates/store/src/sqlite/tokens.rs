//! API tokens in the embedded store: kept by the SHA-256 of their text,
//! looked up by that hash (a unique index, `crate::reads`), listed
//! without it.

use joblog_core::{NewToken, Timestamp};
use rusqlite::{params, Connection};

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
