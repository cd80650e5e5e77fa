//! `joblog token create|list|revoke`: API tokens over `/api/v1/tokens`.
//! Like every command, these produce an [`Answer`] and print nothing.

use serde_json::{json, Value};

use super::api::Api;
use super::args::TokenCommand;
use super::commands::Answer;
use super::wire::{TokenList, TokenView};

pub(super) async fn run(api: &Api, cmd: TokenCommand) -> anyhow::Result<Answer> {
    match cmd {
        TokenCommand::Create {
            name,
            role,
            expires,
            folders,
            json,
        } => {
            let mut body = json!({
                "name": name,
                "role": role.name(),
                "expires_s": expires.map(|d| d.as_secs_f64()),
            });
            if !folders.is_empty() {
                body["folders"] = super::users::folders_json(&folders);
            }
            let raw = api.post_raw(api.url("/api/v1/tokens", &[])?, &body).await?;
            if json {
                return Ok(Answer::Raw(raw));
            }
            let created: TokenView = api.decode(&raw)?;
            Ok(Answer::TokenCreated(created))
        }
        TokenCommand::List { json } => {
            let raw = api
                .get_raw(api.url("/api/v1/tokens", &[])?, super::api::REQUEST_TIMEOUT)
                .await?;
            if json {
                return Ok(Answer::Raw(raw));
            }
            let list: TokenList = api.decode(&raw)?;
            Ok(Answer::Tokens(list.tokens))
        }
        TokenCommand::Revoke { name, json } => {
            let mut url = api.url("/api/v1/tokens", &[])?;
            url.path_segments_mut()
                .map_err(|_| anyhow::anyhow!("the server URL cannot take a path"))?
                .push(&name);
            let raw = api.delete_raw(url).await?;
            if json {
                return Ok(Answer::Raw(raw));
            }
            let answer: Value = api.decode(&raw)?;
            Ok(Answer::Revoked(
                answer["revoked"].as_str().unwrap_or(&name).to_string(),
            ))
        }
    }
}
