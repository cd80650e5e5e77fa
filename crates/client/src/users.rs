//! `joblog user add|list|set|remove`: people over `/api/v1/users`. A
//! password is read from the terminal without echo (asked twice), or
//! from stdin's first line when stdin is not a terminal; never from the
//! command line, where `ps` and shell histories would keep it.

use std::io::{BufRead, IsTerminal};

use serde_json::{json, Map, Value};

use crate::api::{Api, REQUEST_TIMEOUT};
use crate::args::{UserArgs, UserCommand};
use crate::commands::Answer;
use crate::wire::{UserList, UserView};
use crate::UsageError;

pub(super) async fn run(api: &Api, a: UserArgs) -> anyhow::Result<Answer> {
    let raw = match a.command {
        UserCommand::Add {
            name,
            role,
            folders,
        } => {
            let password = read_password(&format!("password for {name}: "))?;
            let mut body = json!({"name": name, "role": role.name(), "password": password});
            if !folders.is_empty() {
                body["folders"] = folders_json(&folders);
            }
            api.post_raw(api.url("/api/v1/users", &[])?, &body).await?
        }
        UserCommand::List => {
            let raw = api
                .get_raw(api.url("/api/v1/users", &[])?, REQUEST_TIMEOUT)
                .await?;
            return Ok(if a.json {
                Answer::Raw(raw)
            } else {
                Answer::Users(api.decode::<UserList>(&raw)?.users)
            });
        }
        UserCommand::Set {
            name,
            role,
            disable,
            enable,
            password,
            folders,
            all_folders,
        } => {
            let mut body = Map::new();
            if all_folders {
                body.insert("folders".into(), Value::Null);
            } else if !folders.is_empty() {
                body.insert("folders".into(), folders_json(&folders));
            }
            if let Some(role) = role {
                body.insert("role".into(), role.name().into());
            }
            if disable || enable {
                body.insert("disabled".into(), Value::Bool(disable));
            }
            if password {
                let p = read_password(&format!("new password for {name}: "))?;
                body.insert("password".into(), p.into());
            }
            if body.is_empty() {
                return Err(UsageError(
                    "user set: say what to change (--role, --disable, --enable, --password, --folder or --all-folders)"
                        .into(),
                )
                .into());
            }
            api.patch_raw(user_url(api, &name)?, &Value::Object(body))
                .await?
        }
        UserCommand::Remove { name } => {
            api.delete_raw(user_url(api, &name)?).await?;
            return Ok(Answer::UserRemoved(name));
        }
    };
    Ok(if a.json {
        Answer::Raw(raw)
    } else {
        Answer::User(api.decode::<UserView>(&raw)?)
    })
}

fn user_url(api: &Api, name: &str) -> anyhow::Result<reqwest::Url> {
    let mut url = api.url("/api/v1/users", &[])?;
    url.path_segments_mut()
        .map_err(|_| anyhow::anyhow!("the server URL cannot take a path"))?
        .push(name);
    Ok(url)
}

/// A password from the terminal (typed twice, the same), or stdin's
/// first line without its line ending.
fn read_password(prompt: &str) -> anyhow::Result<String> {
    if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password(prompt)?;
        let again = rpassword::prompt_password("again: ")?;
        if first != again {
            anyhow::bail!("the two passwords differ; nothing was changed");
        }
        return Ok(first);
    }
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let password = line.trim_end_matches(['\n', '\r']).to_string();
    if password.is_empty() {
        anyhow::bail!("no password on stdin (give it as the first line, or run on a terminal)");
    }
    Ok(password)
}

/// `--folder FOLDER=ROLE` arguments as the API's `folders` object.
pub(super) fn folders_json(folders: &[(String, joblog_core::Role)]) -> Value {
    Value::Object(
        folders
            .iter()
            .map(|(folder, role)| (folder.clone(), Value::from(role.name())))
            .collect(),
    )
}
