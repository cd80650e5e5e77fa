//! API tokens as the domain sees them: roles, names and what is kept of a
//! token (its hash, never the token itself).

use serde::{Deserialize, Serialize};

use crate::{Scope, Timestamp};

/// What a token may do. Roles are ordered: each may do everything the one
/// below it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads jobs, logs, results and schedules.
    Viewer,
    /// Also submits and cancels jobs, manages and runs schedules.
    Operator,
    /// Also grooms, manages tokens and configuration, reads the audit log.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Operator, Role::Admin];

    /// The name stored in databases and shown to users; never changes.
    pub fn name(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.name() == s)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Longest token name.
pub const MAX_TOKEN_NAME: usize = 64;

/// Checks a token's name: 1 to 64 of `A-Z a-z 0-9 . _ -`, so that it is
/// safe in a URL path, a log line and a shell.
pub fn validate_token_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_TOKEN_NAME {
        return Err(format!("must be 1 to {MAX_TOKEN_NAME} characters"));
    }
    match name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        Some(c) => Err(format!(
            "{c:?} is not allowed (use letters, digits, '.', '_' and '-')"
        )),
        None => Ok(()),
    }
}

/// A stored token, as listed: everything but its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenInfo {
    pub name: String,
    pub role: Role,
    pub created_at: Timestamp,
    /// `None`: never expires.
    pub expires_at: Option<Timestamp>,
    /// Updated at most once a minute per token, so authenticating is not a
    /// write per request.
    pub last_used_at: Option<Timestamp>,
    /// Limited to these folders, with its role in each (see [`Scope`]);
    /// absent: every folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folders: Option<Folders>,
}

/// The folders a token or user is limited to, with the role in each.
pub type Folders = std::collections::BTreeMap<String, Role>;

impl TokenInfo {
    /// What it may reach.
    pub fn scope(&self) -> Scope {
        Scope {
            role: self.role,
            folders: self.folders.clone(),
        }
    }

    pub fn is_expired(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

/// A token about to be stored: its hash (SHA-256 of the token's text), never
/// the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    pub name: String,
    pub role: Role,
    pub hash: [u8; 32],
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub folders: Option<Folders>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered_and_named_stably() {
        assert!(Role::Viewer < Role::Operator && Role::Operator < Role::Admin);
        for r in Role::ALL {
            assert_eq!(Role::parse(r.name()), Some(r));
        }
        assert_eq!(Role::parse("root"), None);
        assert_eq!(
            serde_json::to_string(&Role::Operator).unwrap(),
            "\"operator\""
        );
    }

    #[test]
    fn token_names_are_plain() {
        assert!(validate_token_name("ci-deploy_2.prod").is_ok());
        assert!(validate_token_name("").is_err());
        assert!(validate_token_name(&"a".repeat(65)).is_err());
        let e = validate_token_name("a/b").unwrap_err();
        assert!(e.contains("'/'"), "{e}");
        assert!(validate_token_name("naïve").is_err());
    }

    #[test]
    fn expiry_is_inclusive() {
        let t = TokenInfo {
            name: "t".into(),
            role: Role::Viewer,
            created_at: Timestamp(0),
            expires_at: Some(Timestamp(10)),
            last_used_at: None,
            folders: None,
        };
        assert!(!t.is_expired(Timestamp(9)));
        assert!(t.is_expired(Timestamp(10)));
    }
}
