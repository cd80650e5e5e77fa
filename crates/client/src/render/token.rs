//! Who may call: the `token list` and `user list` tables. A created token
//! is printed alone on stdout so that it can be redirected into a file.

use std::collections::BTreeMap;

use super::escape_display;
use super::job::{short_time, table};
use crate::wire::{TokenView, UserView};

/// A role, and the folders it is limited to: `viewer (team-a=operator)`.
fn role_text(role: &str, folders: Option<&BTreeMap<String, String>>) -> String {
    let role = escape_display(role, false);
    match folders {
        None => role.into_owned(),
        Some(folders) => {
            let each: Vec<String> = folders
                .iter()
                .map(|(f, r)| format!("{}={}", escape_display(f, false), escape_display(r, false)))
                .collect();
            format!("{role} ({})", each.join(", "))
        }
    }
}

pub(super) fn users_table(users: &[UserView]) -> String {
    let header = [
        "NAME",
        "ROLE",
        "STATE",
        "SIGNS IN WITH",
        "CREATED",
        "LAST SIGN-IN",
    ];
    let rows: Vec<[String; 6]> = users
        .iter()
        .map(|u| {
            [
                escape_display(&u.name, false).into_owned(),
                role_text(&u.role, u.folders.as_ref()),
                if u.disabled { "disabled" } else { "enabled" }.to_string(),
                if u.single_sign_on {
                    "single sign-on"
                } else {
                    "password"
                }
                .to_string(),
                short_time(u.created_at.as_deref()),
                short_time(u.last_sign_in_at.as_deref()),
            ]
        })
        .collect();
    table(&header, &rows, &[false; 6])
}

pub(super) fn tokens_table(tokens: &[TokenView]) -> String {
    let header = ["NAME", "ROLE", "CREATED", "EXPIRES", "LAST USED"];
    let rows: Vec<[String; 5]> = tokens
        .iter()
        .map(|t| {
            [
                escape_display(&t.name, false).into_owned(),
                role_text(&t.role, t.folders.as_ref()),
                short_time(t.created_at.as_deref()),
                t.expires_at
                    .as_deref()
                    .map_or_else(|| "never".to_string(), |e| short_time(Some(e))),
                short_time(t.last_used_at.as_deref()),
            ]
        })
        .collect();
    table(&header, &rows, &[false; 5])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_are_listed_with_their_state_and_last_sign_in() {
        let u = |name: &str, disabled: bool| UserView {
            name: name.into(),
            role: "operator".into(),
            disabled,
            created_at: Some("2026-11-22T10:15:01Z".into()),
            last_sign_in_at: None,
            single_sign_on: disabled,
            folders: None,
        };
        assert_eq!(
            users_table(&[u("ada", false), u("bob\u{1b}", true)]),
            "NAME     ROLE      STATE     SIGNS IN WITH   CREATED                  LAST SIGN-IN\n\
             ada      operator  enabled   password        2026-11-22 10:15:01 UTC  -\n\
             bob\\x1b  operator  disabled  single sign-on  2026-11-22 10:15:01 UTC  -\n"
        );
    }

    #[test]
    fn tokens_are_listed_aligned_with_never_for_no_expiry() {
        let t = |name: &str, expires: Option<&str>| TokenView {
            name: name.into(),
            role: "viewer".into(),
            created_at: Some("2026-11-22T10:15:01.000001Z".into()),
            expires_at: expires.map(String::from),
            last_used_at: None,
            token: None,
            folders: None,
        };
        let text = tokens_table(&[
            t("ci", None),
            t("grafana\u{1b}", Some("2027-02-20T10:15:01Z")),
        ]);
        assert_eq!(
            text,
            "NAME         ROLE    CREATED                  EXPIRES                  LAST USED\n\
             ci           viewer  2026-11-22 10:15:01 UTC  never                    -\n\
             grafana\\x1b  viewer  2026-11-22 10:15:01 UTC  2027-02-20 10:15:01 UTC  -\n"
        );
        let limited = TokenView {
            folders: Some(BTreeMap::from([
                ("team-a".to_string(), "operator".to_string()),
                ("x\u{1b}".to_string(), "viewer".to_string()),
            ])),
            ..t("team", None)
        };
        assert!(
            tokens_table(&[limited]).contains("team  viewer (team-a=operator, x\\x1b=viewer)  "),
            "{}",
            tokens_table(&[t("team", None)])
        );
    }
}
