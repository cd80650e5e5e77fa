//! People and their sessions, written once for both stores: users (a
//! role, a password's hash, disabled or not) and the sessions they open
//! by signing in, kept by the SHA-256 of the cookie's value. A session is
//! read with its user's role and state, so a change of role applies at
//! its next request; disabling a user, deleting one or giving one a new
//! password ends their sessions in the same transaction.

use joblog_core::{
    NewSession, NewUser, PendingSignIn, Role, SessionAuth, SessionInfo, SsoUser, Timestamp,
    UserAuth, UserChange, UserInfo,
};

use crate::db::{query_opt, sql, Conn, Decode, Row, Statement};
use crate::{Outcome, Result, StoreError};

/// Added to the PostgreSQL schema and SQLite's alike (booleans are
/// `boolean` on one and integers on the other, which both read as bool).
pub(crate) const MIGRATION: &str = r#"
-- People who sign in (`crate::accounts`): the password as an Argon2id PHC
-- string (none for single sign-on), and their sessions by the SHA-256 of
-- the cookie's value; `id` is public, for listing and revoking.
CREATE TABLE users (
    name            text PRIMARY KEY,
    role            text NOT NULL,
    password_hash   text,
    disabled        boolean NOT NULL DEFAULT false,
    created_at      bigint NOT NULL,
    updated_at      bigint NOT NULL,
    last_sign_in_at bigint
);
CREATE TABLE sessions (
    id           text PRIMARY KEY,
    hash         bytea NOT NULL UNIQUE,
    user_name    text NOT NULL,
    created_at   bigint NOT NULL,
    last_seen_at bigint NOT NULL,
    expires_at   bigint NOT NULL,
    address      text,
    user_agent   text
);
CREATE INDEX sessions_user ON sessions (user_name, created_at);
CREATE INDEX sessions_expires ON sessions (expires_at);
"#;

/// Single sign-on (OpenID Connect): who a user made by it is at the
/// provider, and the sign-ins begun and not yet come back.
pub(crate) const SSO_MIGRATION: &str = r#"
-- `issuer sub` of a user made by single sign-on; NULL for a local user.
ALTER TABLE users ADD COLUMN sso_subject text;
-- A sign-in sent to the provider, by the SHA-256 of its `state`: taken
-- (deleted) by the first callback, so a replayed state finds nothing.
CREATE TABLE sign_ins (
    state_hash    bytea PRIMARY KEY,
    nonce         text NOT NULL,
    pkce_verifier text NOT NULL,
    return_to     text NOT NULL,
    created_at    bigint NOT NULL,
    expires_at    bigint NOT NULL
);
CREATE INDEX sign_ins_expires ON sign_ins (expires_at);
"#;

/// Folders: what a job (and so its schedule's runs) belongs to, by this
/// index a listing limited to folders walks one range per folder; and the
/// folders a token or user is limited to, as a JSON object of folder →
/// role (`NULL`: every folder).
pub(crate) const FOLDERS_MIGRATION: &str = r#"
ALTER TABLE jobs ADD COLUMN folder text;
CREATE INDEX jobs_folder ON jobs (folder, id);
ALTER TABLE tokens ADD COLUMN folders text;
ALTER TABLE users ADD COLUMN folders text;
"#;

macro_rules! user_columns {
    () => {
        "name, role, disabled, created_at, updated_at, last_sign_in_at, sso_subject, folders"
    };
}
macro_rules! session_columns {
    () => {
        "s.id, s.user_name, s.created_at, s.last_seen_at, s.expires_at, s.address, s.user_agent"
    };
}

const CREATE_USER: Statement = sql!(
    "INSERT INTO users (name, role, password_hash, disabled, created_at, updated_at, folders) \
     VALUES ($1, $2, $3, false, $4, $4, $5) ON CONFLICT (name) DO NOTHING"
);
/// `NULL` keeps a field; the folders change when `$6`.
const UPDATE_USER: Statement = sql!(
    "UPDATE users SET role = COALESCE($2, role), disabled = COALESCE($3, disabled), \
     password_hash = COALESCE($4, password_hash), updated_at = $5, \
     folders = CASE WHEN $6 THEN $7 ELSE folders END WHERE name = $1"
);
const DELETE_USER: Statement = sql!("DELETE FROM users WHERE name = $1");
const SIGNED_IN: Statement = sql!("UPDATE users SET last_sign_in_at = $2 WHERE name = $1");
const USER: Statement = sql!(concat!(
    "SELECT ",
    user_columns!(),
    ", password_hash FROM users WHERE name = $1"
));
const USERS: Statement = sql!(concat!(
    "SELECT ",
    user_columns!(),
    " FROM users ORDER BY name"
));
/// Makes the user, or brings their role up to date if the name is theirs
/// (the same subject); a name another holds is left alone (no row).
const SSO_USER: Statement = sql!(
    "INSERT INTO users (name, role, password_hash, disabled, created_at, updated_at, sso_subject) \
     VALUES ($1, $2, NULL, false, $4, $4, $3) \
     ON CONFLICT (name) DO UPDATE SET role = excluded.role, updated_at = excluded.updated_at \
     WHERE users.sso_subject = excluded.sso_subject"
);
/// Kept only while fewer than `$7` are: anyone may begin a sign-in, so
/// what they can make the store hold is bounded.
const BEGIN_SIGN_IN: Statement = sql!(
    "INSERT INTO sign_ins (state_hash, nonce, pkce_verifier, return_to, created_at, expires_at) \
     SELECT $1, $2, $3, $4, $5, $6 WHERE (SELECT count(*) FROM sign_ins) < $7"
);
/// Sign-ins begun and not come back that the store holds at most.
pub const MAX_PENDING_SIGN_INS: i64 = 10_000;
/// Sign-ins never come back from the provider, cleared as one begins.
const DELETE_EXPIRED_SIGN_INS: Statement = sql!("DELETE FROM sign_ins WHERE expires_at <= $1");
const TAKE_SIGN_IN: Statement =
    sql!("DELETE FROM sign_ins WHERE state_hash = $1 AND expires_at > $2");
const PENDING_SIGN_IN: Statement = sql!(
    "SELECT state_hash, nonce, pkce_verifier, return_to, created_at, expires_at \
     FROM sign_ins WHERE state_hash = $1"
);
const OPEN_SESSION: Statement = sql!(
    "INSERT INTO sessions (id, hash, user_name, created_at, last_seen_at, expires_at, address, user_agent) \
     VALUES ($1, $2, $3, $4, $4, $5, $6, $7)"
);
/// Sessions past their absolute end, cleared as a new one opens (one
/// index range; an idle one goes by its end at the latest).
const DELETE_EXPIRED: Statement = sql!("DELETE FROM sessions WHERE expires_at <= $1");
const END_SESSION: Statement = sql!("DELETE FROM sessions WHERE id = $1");
const END_OWN_SESSION: Statement = sql!("DELETE FROM sessions WHERE id = $1 AND user_name = $2");
const END_USERS_SESSIONS: Statement = sql!("DELETE FROM sessions WHERE user_name = $1");
const TOUCH_SESSION: Statement = sql!("UPDATE sessions SET last_seen_at = $2 WHERE id = $1");
const SESSION_BY_HASH: Statement = sql!(concat!(
    "SELECT ",
    session_columns!(),
    ", u.role, u.disabled, u.folders FROM sessions s JOIN users u ON u.name = s.user_name WHERE s.hash = $1"
));
const SESSIONS_OF: Statement = sql!(concat!(
    "SELECT ",
    session_columns!(),
    " FROM sessions s WHERE s.user_name = $1 ORDER BY s.created_at"
));
const ALL_SESSIONS: Statement = sql!(concat!(
    "SELECT ",
    session_columns!(),
    " FROM sessions s ORDER BY s.user_name, s.created_at"
));

/// A change to users or sessions, applied by the writer in its batch's
/// transaction ([`crate::WriteOp::Account`]). Each answers
/// [`Outcome::Count`]: the rows of users or sessions it changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountOp {
    /// → `Count(1)`, or `Count(0)` when the name is taken.
    CreateUser(NewUser),
    /// → `Count(1)`, or `Count(0)` when no user has that name. Ends the
    /// user's sessions when [`UserChange::ends_sessions`].
    UpdateUser {
        name: String,
        change: UserChange,
        at: Timestamp,
    },
    /// Deletes a user and their sessions. → `Count`
    DeleteUser { name: String },
    /// Stores a session and notes the sign-in. → `Count(1)`
    OpenSession(NewSession),
    /// Ends a session; with `user`, only if it is theirs. → `Count`
    EndSession { id: String, user: Option<String> },
    /// Notes a session's use. → `Count`: 0 if it ended meanwhile
    TouchSession { id: String, at: Timestamp },
    /// Makes a single sign-on user or sets their role. → `Count(1)`, or
    /// `Count(0)` when the name is another user's (a local one, or
    /// another subject's).
    SsoUser(SsoUser),
    /// Keeps a single sign-on begun, clearing those expired. → `Count(1)`,
    /// or `Count(0)` when [`MAX_PENDING_SIGN_INS`] are pending already.
    BeginSignIn(PendingSignIn),
    /// Takes a sign-in begun, once: → `Count(1)`, or `Count(0)` when it
    /// was taken already, expired, or never begun.
    TakeSignIn { state_hash: [u8; 32], at: Timestamp },
}

impl AccountOp {
    pub fn name(&self) -> &'static str {
        match self {
            AccountOp::CreateUser(_) => "create_user",
            AccountOp::UpdateUser { .. } => "update_user",
            AccountOp::DeleteUser { .. } => "delete_user",
            AccountOp::OpenSession(_) => "open_session",
            AccountOp::EndSession { .. } => "end_session",
            AccountOp::TouchSession { .. } => "touch_session",
            AccountOp::SsoUser(_) => "sso_user",
            AccountOp::BeginSignIn(_) => "begin_sign_in",
            AccountOp::TakeSignIn { .. } => "take_sign_in",
        }
    }

    /// Whether this op, having changed `n` rows, ended sessions that a
    /// stream may hold open.
    pub(crate) fn ended_sessions(&self, n: u64) -> bool {
        n > 0
            && match self {
                AccountOp::UpdateUser { change, .. } => change.ends_sessions(),
                AccountOp::DeleteUser { .. } | AccountOp::EndSession { .. } => true,
                AccountOp::CreateUser(_)
                | AccountOp::OpenSession(_)
                | AccountOp::TouchSession { .. }
                | AccountOp::SsoUser(_)
                | AccountOp::BeginSignIn(_)
                | AccountOp::TakeSignIn { .. } => false,
            }
    }
}

/// Applies `op` in the writer's transaction.
pub(crate) async fn apply<C: Conn>(c: &mut C, op: &AccountOp) -> Result<Outcome> {
    Ok(match op {
        AccountOp::CreateUser(u) => {
            let params = [
                u.name.as_str().into(),
                u.role.name().into(),
                u.password_hash.as_str().into(),
                u.created_at.micros().into(),
                crate::rows::folders_text(u.folders.as_ref()).into(),
            ];
            Outcome::Count(c.execute(&CREATE_USER, &params).await?)
        }
        AccountOp::UpdateUser { name, change, at } => {
            let params = [
                name.as_str().into(),
                change.role.map(Role::name).into(),
                change.disabled.into(),
                change.password_hash.clone().into(),
                at.micros().into(),
                change.folders.is_some().into(),
                crate::rows::folders_text(change.folders.as_ref().and_then(Option::as_ref)).into(),
            ];
            let n = c.execute(&UPDATE_USER, &params).await?;
            if n > 0 && change.ends_sessions() {
                c.execute(&END_USERS_SESSIONS, &[name.as_str().into()])
                    .await?;
            }
            Outcome::Count(n)
        }
        AccountOp::DeleteUser { name } => {
            c.execute(&END_USERS_SESSIONS, &[name.as_str().into()])
                .await?;
            Outcome::Count(c.execute(&DELETE_USER, &[name.as_str().into()]).await?)
        }
        AccountOp::OpenSession(s) => {
            c.execute(&DELETE_EXPIRED, &[s.created_at.micros().into()])
                .await?;
            let params = [
                s.id.as_str().into(),
                s.hash.to_vec().into(),
                s.user.as_str().into(),
                s.created_at.micros().into(),
                s.expires_at.micros().into(),
                s.address.clone().into(),
                s.user_agent.clone().into(),
            ];
            let n = c.execute(&OPEN_SESSION, &params).await?;
            c.execute(
                &SIGNED_IN,
                &[s.user.as_str().into(), s.created_at.micros().into()],
            )
            .await?;
            Outcome::Count(n)
        }
        AccountOp::EndSession { id, user } => Outcome::Count(match user {
            Some(user) => {
                c.execute(
                    &END_OWN_SESSION,
                    &[id.as_str().into(), user.as_str().into()],
                )
                .await?
            }
            None => c.execute(&END_SESSION, &[id.as_str().into()]).await?,
        }),
        AccountOp::TouchSession { id, at } => Outcome::Count(
            c.execute(&TOUCH_SESSION, &[id.as_str().into(), at.micros().into()])
                .await?,
        ),
        AccountOp::SsoUser(u) => {
            let params = [
                u.name.as_str().into(),
                u.role.name().into(),
                u.subject.as_str().into(),
                u.at.micros().into(),
            ];
            Outcome::Count(c.execute(&SSO_USER, &params).await?)
        }
        AccountOp::BeginSignIn(p) => {
            c.execute(&DELETE_EXPIRED_SIGN_INS, &[p.created_at.micros().into()])
                .await?;
            let params = [
                p.state_hash.to_vec().into(),
                p.nonce.as_str().into(),
                p.pkce_verifier.as_str().into(),
                p.return_to.as_str().into(),
                p.created_at.micros().into(),
                p.expires_at.micros().into(),
                MAX_PENDING_SIGN_INS.into(),
            ];
            Outcome::Count(c.execute(&BEGIN_SIGN_IN, &params).await?)
        }
        AccountOp::TakeSignIn { state_hash, at } => Outcome::Count(
            c.execute(
                &TAKE_SIGN_IN,
                &[state_hash.to_vec().into(), at.micros().into()],
            )
            .await?,
        ),
    })
}

/// The sign-in begun with the `state` whose SHA-256 is `hash`, expired or
/// not (taking it judges).
pub(crate) async fn pending_sign_in<C: Conn>(
    c: &mut C,
    hash: [u8; 32],
) -> Result<Option<PendingSignIn>> {
    query_opt(c, &PENDING_SIGN_IN, &[hash.to_vec().into()]).await
}

pub(crate) async fn user<C: Conn>(c: &mut C, name: &str) -> Result<Option<UserAuth>> {
    query_opt(c, &USER, &[name.into()]).await
}

pub(crate) async fn users<C: Conn>(c: &mut C) -> Result<Vec<UserInfo>> {
    c.query(&USERS, &[]).await
}

pub(crate) async fn session_by_hash<C: Conn>(
    c: &mut C,
    hash: [u8; 32],
) -> Result<Option<SessionAuth>> {
    query_opt(c, &SESSION_BY_HASH, &[hash.to_vec().into()]).await
}

/// The sessions of `user`, or everyone's.
pub(crate) async fn sessions<C: Conn>(c: &mut C, user: Option<&str>) -> Result<Vec<SessionInfo>> {
    match user {
        Some(user) => c.query(&SESSIONS_OF, &[user.into()]).await,
        None => c.query(&ALL_SESSIONS, &[]).await,
    }
}

fn role(user: &str, text: &str) -> Result<Role> {
    Role::parse(text).ok_or_else(|| StoreError::Corrupt(format!("user {user:?} has role {text:?}")))
}

/// A row of [`user_columns!`].
impl Decode for UserInfo {
    fn decode(row: &impl Row) -> Result<UserInfo> {
        let name: String = row.get(0)?;
        let folders = crate::rows::folders_of(&name, row.get(7)?)?;
        Ok(UserInfo {
            role: role(&name, &row.get::<String>(1)?)?,
            name,
            disabled: row.get(2)?,
            created_at: Timestamp(row.get(3)?),
            updated_at: Timestamp(row.get(4)?),
            last_sign_in_at: row.get::<Option<i64>>(5)?.map(Timestamp),
            single_sign_on: row.get::<Option<String>>(6)?.is_some(),
            folders,
        })
    }
}

/// [`user_columns!`] and the password's hash.
impl Decode for UserAuth {
    fn decode(row: &impl Row) -> Result<UserAuth> {
        Ok(UserAuth {
            info: UserInfo::decode(row)?,
            sso_subject: row.get(6)?,
            password_hash: row.get(8)?,
        })
    }
}

/// A row of [`session_columns!`].
impl Decode for SessionInfo {
    fn decode(row: &impl Row) -> Result<SessionInfo> {
        Ok(SessionInfo {
            id: row.get(0)?,
            user: row.get(1)?,
            created_at: Timestamp(row.get(2)?),
            last_seen_at: Timestamp(row.get(3)?),
            expires_at: Timestamp(row.get(4)?),
            address: row.get(5)?,
            user_agent: row.get(6)?,
        })
    }
}

impl Decode for PendingSignIn {
    fn decode(row: &impl Row) -> Result<PendingSignIn> {
        let hash: Vec<u8> = row.get(0)?;
        Ok(PendingSignIn {
            state_hash: hash.try_into().map_err(|_| {
                StoreError::Corrupt("a sign-in's state hash is not 32 bytes".into())
            })?,
            nonce: row.get(1)?,
            pkce_verifier: row.get(2)?,
            return_to: row.get(3)?,
            created_at: Timestamp(row.get(4)?),
            expires_at: Timestamp(row.get(5)?),
        })
    }
}

/// [`session_columns!`] and its user's role and state.
impl Decode for SessionAuth {
    fn decode(row: &impl Row) -> Result<SessionAuth> {
        let info = SessionInfo::decode(row)?;
        Ok(SessionAuth {
            role: role(&info.user, &row.get::<String>(7)?)?,
            disabled: row.get(8)?,
            folders: crate::rows::folders_of(&info.user, row.get(9)?)?,
            info,
        })
    }
}

/// The statements a request runs on users and sessions, with parameters,
/// for the plan tests: each an index search. (The admin's listings of
/// every user and every session walk their tables in order, as asked.)
#[cfg(test)]
pub(crate) fn every_statement() -> Vec<(&'static str, Statement, Vec<crate::db::Param>)> {
    let hash = || vec![0u8; 32].into();
    vec![
        ("USER", USER, vec!["ada".into()]),
        ("SESSION_BY_HASH", SESSION_BY_HASH, vec![hash()]),
        ("SESSIONS_OF", SESSIONS_OF, vec!["ada".into()]),
        ("DELETE_EXPIRED", DELETE_EXPIRED, vec![5i64.into()]),
        ("END_SESSION", END_SESSION, vec!["ab".into()]),
        (
            "END_OWN_SESSION",
            END_OWN_SESSION,
            vec!["ab".into(), "ada".into()],
        ),
        ("END_USERS_SESSIONS", END_USERS_SESSIONS, vec!["ada".into()]),
        (
            "TOUCH_SESSION",
            TOUCH_SESSION,
            vec!["ab".into(), 5i64.into()],
        ),
        ("SIGNED_IN", SIGNED_IN, vec!["ada".into(), 5i64.into()]),
        ("PENDING_SIGN_IN", PENDING_SIGN_IN, vec![hash()]),
        ("TAKE_SIGN_IN", TAKE_SIGN_IN, vec![hash(), 5i64.into()]),
        (
            "DELETE_EXPIRED_SIGN_INS",
            DELETE_EXPIRED_SIGN_INS,
            vec![5i64.into()],
        ),
    ]
}
