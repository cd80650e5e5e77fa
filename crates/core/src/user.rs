//! People who sign in: local users (a name, a role, a password kept as an
//! Argon2id hash by the api, never here), and their sessions, kept by the
//! SHA-256 of the cookie's value as tokens are.

use serde::Serialize;

use crate::{Folders, Role, Scope, Timestamp};

/// Longest user name.
pub const MAX_USER_NAME: usize = 64;
/// Shortest password a user may be given.
pub const MIN_PASSWORD_CHARS: usize = 12;
/// Longest password: hashing is deliberately slow, and its cost must not
/// grow with what a caller sends.
pub const MAX_PASSWORD_BYTES: usize = 1024;

/// Checks a user's name: 1 to 64 of `A-Z a-z 0-9 . _ - @`, so that it is
/// safe in a URL path, a log line and a shell, and an e-mail address fits.
pub fn validate_user_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_USER_NAME {
        return Err(format!("must be 1 to {MAX_USER_NAME} characters"));
    }
    match name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@')))
    {
        Some(c) => Err(format!(
            "{c:?} is not allowed (use letters, digits, '.', '_', '-' and '@')"
        )),
        None => Ok(()),
    }
}

/// Checks a new password's length (in characters, as people count them;
/// at most [`MAX_PASSWORD_BYTES`] bytes). The error never quotes it.
pub fn validate_password(password: &str) -> Result<(), String> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(format!("must be at least {MIN_PASSWORD_CHARS} characters"));
    }
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(format!("must be at most {MAX_PASSWORD_BYTES} bytes"));
    }
    Ok(())
}

/// A user as listed: everything but the password's hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserInfo {
    pub name: String,
    pub role: Role,
    /// A disabled user cannot sign in, and has no sessions.
    pub disabled: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub last_sign_in_at: Option<Timestamp>,
    /// Made by a sign-in through the OpenID provider: no password, and
    /// the role the provider's claim maps to at each sign-in.
    pub single_sign_on: bool,
    /// Limited to these folders, with the role in each; absent: every
    /// folder, with `role`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folders: Option<Folders>,
}

impl UserInfo {
    /// What they may reach.
    pub fn scope(&self) -> Scope {
        Scope {
            role: self.role,
            folders: self.folders.clone(),
        }
    }
}

/// A user with the hash a sign-in checks the password against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserAuth {
    pub info: UserInfo,
    /// The PHC string of the password's hash (`$argon2id$v=19$…`);
    /// `None` for a user who signs in only through single sign-on.
    pub password_hash: Option<String>,
    /// For a single sign-on user, who they are at the provider:
    /// `issuer` and `sub`, joined by a space.
    pub sso_subject: Option<String>,
}

/// A user about to be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUser {
    pub name: String,
    pub role: Role,
    pub password_hash: String,
    pub created_at: Timestamp,
    pub folders: Option<Folders>,
}

/// What a change of a user changes; `None` keeps a field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserChange {
    pub role: Option<Role>,
    pub disabled: Option<bool>,
    pub password_hash: Option<String>,
    /// `Some(None)`: every folder again.
    pub folders: Option<Option<Folders>>,
}

impl UserChange {
    /// Whether the user's sessions end with this change: a disabled user
    /// has none, and a new password signs the old ones out.
    pub fn ends_sessions(&self) -> bool {
        self.disabled == Some(true) || self.password_hash.is_some()
    }
}

/// A session about to be stored: the SHA-256 of its cookie's value, never
/// the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    /// Public, for listing and revoking; not a credential.
    pub id: String,
    pub hash: [u8; 32],
    pub user: String,
    pub created_at: Timestamp,
    /// The absolute end, however busy the session.
    pub expires_at: Timestamp,
    /// The address and browser it was opened from, to tell sessions apart.
    pub address: Option<String>,
    pub user_agent: Option<String>,
}

/// A person coming back from the OpenID provider, to be made a user or
/// brought up to date: their role follows the provider at each sign-in;
/// whether they are disabled is joblog's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SsoUser {
    pub name: String,
    /// `issuer` and `sub`, joined by a space: the one identity a name
    /// made by single sign-on answers to.
    pub subject: String,
    pub role: Role,
    pub at: Timestamp,
}

/// A single sign-on begun: what its callback needs, kept in the store by
/// the SHA-256 of the `state` sent to the provider, so the callback may
/// reach any node, and once only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingSignIn {
    pub state_hash: [u8; 32],
    pub nonce: String,
    pub pkce_verifier: String,
    /// Where the person goes once signed in: a path of this server.
    pub return_to: String,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}

/// A stored session as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionInfo {
    pub id: String,
    pub user: String,
    pub created_at: Timestamp,
    /// Noted at most once a minute, so a request is not a write.
    pub last_seen_at: Timestamp,
    pub expires_at: Timestamp,
    pub address: Option<String>,
    pub user_agent: Option<String>,
}

/// A session as a request finds it: with its user's role and state now,
/// so a change of role applies at the next request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionAuth {
    pub info: SessionInfo,
    pub role: Role,
    pub disabled: bool,
    /// Its user's folders (see [`UserInfo::folders`]).
    pub folders: Option<Folders>,
}

impl SessionAuth {
    /// Whether the session may still be used at `now`: its user enabled,
    /// before its absolute end, and seen within `idle`.
    pub fn is_live(&self, now: Timestamp, idle: std::time::Duration) -> bool {
        let idle = i64::try_from(idle.as_micros()).unwrap_or(i64::MAX);
        !self.disabled
            && now < self.info.expires_at
            && now.micros().saturating_sub(self.info.last_seen_at.micros()) < idle
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn user_names_are_plain_and_may_be_addresses() {
        assert!(validate_user_name("ada.lovelace@example.com").is_ok());
        assert!(validate_user_name("").is_err());
        assert!(validate_user_name(&"a".repeat(65)).is_err());
        let e = validate_user_name("a b").unwrap_err();
        assert!(e.contains("' '"), "{e}");
        assert!(validate_user_name("naïve").is_err());
    }

    #[test]
    fn passwords_are_counted_in_characters_and_never_quoted() {
        assert!(validate_password("correct horse").is_ok());
        let e = validate_password("short-pass").unwrap_err();
        assert!(
            e.contains("at least 12") && !e.contains("short-pass"),
            "{e}"
        );
        // Twelve characters of two bytes each.
        assert!(validate_password(&"é".repeat(12)).is_ok());
        assert!(validate_password(&"x".repeat(MAX_PASSWORD_BYTES + 1)).is_err());
    }

    #[test]
    fn a_session_lives_until_its_end_its_idle_limit_or_its_user_is_disabled() {
        let t0 = Timestamp(1_000_000_000);
        let at = |secs: i64| Timestamp(t0.micros() + secs * 1_000_000);
        let s = SessionAuth {
            info: SessionInfo {
                id: "a".into(),
                user: "ada".into(),
                created_at: t0,
                last_seen_at: t0,
                expires_at: at(3600),
                address: None,
                user_agent: None,
            },
            role: Role::Viewer,
            disabled: false,
            folders: None,
        };
        let idle = Duration::from_secs(600);
        assert!(s.is_live(at(599), idle));
        assert!(!s.is_live(at(600), idle), "idle too long");
        let seen = SessionAuth {
            info: SessionInfo {
                last_seen_at: at(3000),
                ..s.info.clone()
            },
            ..s.clone()
        };
        assert!(seen.is_live(at(3599), idle));
        assert!(!seen.is_live(at(3600), idle), "past its absolute end");
        let disabled = SessionAuth {
            disabled: true,
            ..s.clone()
        };
        assert!(!disabled.is_live(at(1), idle));
    }

    #[test]
    fn only_disabling_or_a_new_password_ends_sessions() {
        assert!(!UserChange::default().ends_sessions());
        assert!(!UserChange {
            role: Some(Role::Admin),
            disabled: Some(false),
            ..UserChange::default()
        }
        .ends_sessions());
        assert!(UserChange {
            disabled: Some(true),
            ..UserChange::default()
        }
        .ends_sessions());
        assert!(UserChange {
            password_hash: Some("$argon2id$…".into()),
            ..UserChange::default()
        }
        .ends_sessions());
    }
}
