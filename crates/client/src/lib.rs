//! The command-line client (docs/cli.md): talks to a joblog server over
//! its HTTP API (docs/api.md). `args` the clap definitions, `api` the HTTP
//! client, `wire` lenient views of what the server sends (an older client
//! works with a newer server), `commands` and one module per command group
//! producing data, `render` alone turning it into text, tables or JSON;
//! `progress` bars drawn only on a terminal. This module wires commands to
//! rendering and maps failures to exit codes.
//!
//! Application code, like the binary (`anyhow` for a person's reports);
//! `joblog-bench` drives servers through the same `Api`. Invariant:
//! commands never print while they compute.

mod api;
mod args;
mod backup;
mod commands;
mod health;
mod nodes;
mod notify;
mod params;
pub mod progress;
mod render;
mod schedules;
pub mod seal;
mod search;
mod tokens;
mod users;
mod wire;

use std::fmt;
use std::io;

pub use api::{redact_url, Api, ApiError};
pub use args::{ClientCommand, Connection, Global};
pub use wire::JobView;

use commands::Answer;
use render::{Layout, Printer};

/// Makes ring the crypto provider of every TLS client in the process (as
/// it is the server's): the HTTP client is built without a provider of its
/// own, to keep aws-lc (and its build tools) out. Must run before any
/// `reqwest::Client` is built; running it again does nothing.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Bad usage found after clap has parsed: the command exits 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

pub async fn run(cmd: ClientCommand, global: Global) -> anyhow::Result<i32> {
    render::choose_times(global.times);
    let result = async {
        // `/healthz` needs no token: a health check works whatever the
        // token settings around it (a token file it may not read, say).
        let token = match cmd {
            ClientCommand::Health(_) => None,
            _ => global.token()?,
        };
        let api = Api::with_ca(&global.server, token.as_deref(), global.cacert.as_deref())?;
        match cmd {
            ClientCommand::Run(a) => {
                // A job being watched keeps its stderr on stderr.
                let mut printer = Printer::stdio(Layout::Split, false, a.json);
                commands::run(&api, a, &mut printer).await
            }
            ClientCommand::Rerun(a) => {
                let mut printer = Printer::stdio(Layout::Split, false, a.json);
                commands::rerun(&api, a, &mut printer).await
            }
            ClientCommand::Jobs(a) => print(commands::jobs(&api, a).await?),
            ClientCommand::Search(a) => search::run(&api, a).await.or_else(search::failed),
            ClientCommand::Show(a) => print(commands::show(&api, a).await?),
            ClientCommand::Logs(a) => {
                let mut printer = Printer::stdio(Layout::Stdout, a.timestamps, a.json);
                commands::logs(&api, a, &mut printer).await
            }
            ClientCommand::JobResult(a) => commands::result(&api, a).await,
            ClientCommand::Cancel(a) => print(commands::cancel(&api, a).await?),
            ClientCommand::Groom(a) => print(commands::groom(&api, a).await?),
            ClientCommand::Seal(a) => print(seal::run(&api, a).await?),
            ClientCommand::Token(a) => print(tokens::run(&api, a.command).await?),
            ClientCommand::User(a) => print(users::run(&api, a).await?),
            ClientCommand::Schedule(a) => print(schedules::run(&api, a.command).await?),
            ClientCommand::Notify(a) => {
                // `notify test` exits 1 when its notification was not
                // delivered, as `health` does when the server is not healthy.
                let (answer, done) = notify::run(&api, a.command).await?;
                render::print(&answer)?;
                Ok(if done { 0 } else { 1 })
            }
            ClientCommand::Nodes(a) => print(nodes::nodes(&api, a).await?),
            ClientCommand::Scheduler(a) => print(nodes::scheduler(&api, a).await?),
            ClientCommand::Backup(a) => print(backup::run(&api, a).await?),
            ClientCommand::Health(a) => {
                let (answer, healthy) = health::run(&api, a).await?;
                render::print(&answer)?;
                Ok(if healthy { 0 } else { 1 })
            }
        }
    }
    .await;
    match result {
        Ok(code) => Ok(code),
        Err(e) => {
            if let Some(u) = e.downcast_ref::<UsageError>() {
                eprintln!("joblog: {u}");
                return Ok(2);
            }
            // `joblog logs 7 | head` closes our stdout early: that is the
            // reader's choice, not a failure worth a message.
            if e.chain().any(|c| {
                c.downcast_ref::<io::Error>()
                    .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
            }) {
                return Ok(0);
            }
            Err(e)
        }
    }
}

fn print(answer: Answer) -> anyhow::Result<i32> {
    render::print(&answer)?;
    Ok(0)
}
