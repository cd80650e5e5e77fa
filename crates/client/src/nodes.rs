//! `joblog nodes` (list, drain, undrain) and `joblog scheduler` (status,
//! pause, resume).

use serde_json::json;

use crate::api::{Api, REQUEST_TIMEOUT};
use crate::args::{NodesArgs, NodesCommand, SchedulerArgs, SchedulerCommand};
use crate::commands::Answer;

pub(super) async fn nodes(api: &Api, a: NodesArgs) -> anyhow::Result<Answer> {
    let (path, drain) = match &a.command {
        None => {
            let raw = api
                .get_raw(api.url("/api/v1/nodes", &[])?, REQUEST_TIMEOUT)
                .await?;
            return Ok(if a.json {
                Answer::Raw(raw)
            } else {
                Answer::Nodes(api.decode(&raw)?)
            });
        }
        Some(NodesCommand::Drain { name }) => (name, "drain"),
        Some(NodesCommand::Undrain { name }) => (name, "undrain"),
    };
    let mut url = api.url("/api/v1/nodes", &[])?;
    url.path_segments_mut()
        .map_err(|_| anyhow::anyhow!("the server URL cannot take a path"))?
        .push(path)
        .push(drain);
    let raw = api.post_raw(url, &json!({})).await?;
    Ok(if a.json {
        Answer::Raw(raw)
    } else {
        Answer::Node(api.decode(&raw)?)
    })
}

pub(super) async fn scheduler(api: &Api, a: SchedulerArgs) -> anyhow::Result<Answer> {
    let raw = match a.command.unwrap_or(SchedulerCommand::Status) {
        SchedulerCommand::Status => {
            api.get_raw(api.url("/api/v1/scheduler", &[])?, REQUEST_TIMEOUT)
                .await?
        }
        SchedulerCommand::Pause => {
            api.post_raw(api.url("/api/v1/scheduler/pause", &[])?, &json!({}))
                .await?
        }
        SchedulerCommand::Resume => {
            api.post_raw(api.url("/api/v1/scheduler/resume", &[])?, &json!({}))
                .await?
        }
    };
    Ok(if a.json {
        Answer::Raw(raw)
    } else {
        Answer::Scheduler(api.decode(&raw)?)
    })
}
