//! Folders, and what a token or user limited to some of them may reach:
//! a [`Scope`] is a role everywhere (unlimited), or a role per folder
//! named, everything else out of reach (invisible, not merely refused).

use serde::{Deserialize, Serialize};

use crate::Role;

/// Longest folder name.
pub const MAX_FOLDER: usize = crate::MAX_TOKEN_NAME;
/// Most folders one scope names.
pub const MAX_SCOPE_FOLDERS: usize = 100;

/// A folder's name: 1 to 64 letters, digits, `.`, `_` or `-` (a token
/// name's characters, safe in a URL, a log line and a shell), starting
/// with a letter or digit (`team-a`, `ops.backups`).
pub fn validate_folder(name: &str) -> Result<(), String> {
    crate::validate_token_name(name)?;
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err("must start with a letter or a digit".into());
    }
    Ok(())
}

/// What a token or user may reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scope {
    /// Unlimited: the role on everything. Limited: the role on what
    /// belongs to no folder's object (the nodes, the scheduler's state,
    /// one's own sessions); never `admin`, whose routes reach every folder.
    pub role: Role,
    /// Limited to these folders, with the role in each; absent: unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folders: Option<crate::Folders>,
}

impl Scope {
    pub fn unlimited(role: Role) -> Scope {
        Scope {
            role,
            folders: None,
        }
    }

    pub fn is_limited(&self) -> bool {
        self.folders.is_some()
    }

    /// The role on an object in `folder` (`None`: in no folder); `None`
    /// when it is out of reach, which its caller must not learn exists.
    pub fn role_in(&self, folder: Option<&str>) -> Option<Role> {
        match &self.folders {
            None => Some(self.role),
            Some(folders) => folders.get(folder?).copied(),
        }
    }

    /// The highest role it has anywhere: what lets it into a route whose
    /// handler then judges each folder.
    pub fn best_role(&self) -> Role {
        match &self.folders {
            None => self.role,
            Some(folders) => folders.values().copied().fold(self.role, Role::max),
        }
    }

    /// Its folders, for a message (`team-a, team-b`); `every folder`
    /// when unlimited.
    pub fn folder_list(&self) -> String {
        match &self.folders {
            None => "every folder".into(),
            Some(folders) => folders.keys().cloned().collect::<Vec<_>>().join(", "),
        }
    }

    /// The folders whose objects a listing may show; `None`: all, and
    /// those in no folder.
    pub fn visible(&self) -> Option<Vec<&str>> {
        self.folders
            .as_ref()
            .map(|f| f.keys().map(String::as_str).collect())
    }

    /// A limited scope names at least one folder, each by a valid name, at
    /// most [`MAX_SCOPE_FOLDERS`], and is not `admin` anywhere but within
    /// its folders.
    pub fn validate(&self) -> Result<(), String> {
        let Some(folders) = &self.folders else {
            return Ok(());
        };
        if self.role == Role::Admin {
            return Err(
                "role: an admin reaches every folder; a scope limited to folders has viewer or operator"
                    .into(),
            );
        }
        if folders.is_empty() {
            return Err("folders: name at least one, or leave it out for every folder".into());
        }
        if folders.len() > MAX_SCOPE_FOLDERS {
            return Err(format!("folders: at most {MAX_SCOPE_FOLDERS}"));
        }
        for (name, role) in folders {
            validate_folder(name).map_err(|e| format!("folders: {name:?} {e}"))?;
            if *role == Role::Admin {
                return Err(format!(
                    "folders: {name:?} admin: an admin reaches every folder; a folder's role is viewer or operator"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_names_are_plain() {
        for good in ["team-a", "ops.backups", "a", "A_1", &"x".repeat(64)] {
            assert!(validate_folder(good).is_ok(), "{good:?}");
        }
        for bad in ["", "-a", ".a", "a/b", "a b", "é", &"x".repeat(65)] {
            assert!(validate_folder(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_limited_scope_reaches_its_folders_only_with_their_roles() {
        let scope: Scope = serde_json::from_str(
            r#"{"role": "viewer", "folders": {"team-a": "operator", "team-b": "viewer"}}"#,
        )
        .unwrap();
        assert!(scope.validate().is_ok());
        assert!(scope.is_limited());
        assert_eq!(scope.role_in(Some("team-a")), Some(Role::Operator));
        assert_eq!(scope.role_in(Some("team-b")), Some(Role::Viewer));
        assert_eq!(scope.role_in(Some("team-c")), None);
        assert_eq!(scope.role_in(None), None, "what is in no folder too");
        assert_eq!(scope.visible(), Some(vec!["team-a", "team-b"]));
        assert_eq!(scope.best_role(), Role::Operator);
        assert_eq!(scope.folder_list(), "team-a, team-b");

        let all = Scope::unlimited(Role::Operator);
        assert_eq!(all.role_in(Some("team-c")), Some(Role::Operator));
        assert_eq!(all.role_in(None), Some(Role::Operator));
        assert_eq!(all.visible(), None);
        assert_eq!(
            serde_json::to_string(&all).unwrap(),
            r#"{"role":"operator"}"#
        );
    }

    #[test]
    fn a_limited_scope_is_checked() {
        let limited = |role: Role, folders: &[(&str, Role)]| Scope {
            role,
            folders: Some(folders.iter().map(|(f, r)| (f.to_string(), *r)).collect()),
        };
        assert!(limited(Role::Admin, &[("a", Role::Viewer)])
            .validate()
            .unwrap_err()
            .contains("admin"));
        assert!(limited(Role::Viewer, &[("a", Role::Admin)])
            .validate()
            .unwrap_err()
            .starts_with("folders: \"a\" admin"));
        assert!(limited(Role::Viewer, &[])
            .validate()
            .unwrap_err()
            .contains("at least one"));
        assert!(limited(Role::Viewer, &[("a b", Role::Viewer)])
            .validate()
            .unwrap_err()
            .contains("\"a b\""));
        assert!(Scope::unlimited(Role::Admin).validate().is_ok());
        assert!(serde_json::from_str::<Scope>(r#"{"role": "viewer", "extra": 1}"#).is_err());
        assert!(
            serde_json::from_str::<Scope>(r#"{"role": "viewer", "folders": {"a": "root"}}"#)
                .is_err()
        );
    }
}
