//! The `joblog nodes` and `joblog scheduler` arguments: list the nodes,
//! drain one, and pause or resume every node's scheduler.

use clap::{Args, Subcommand};

use super::Connection;

#[derive(Args, Debug)]
pub struct NodesArgs {
    /// Without one: list the nodes.
    #[command(subcommand)]
    pub command: Option<NodesCommand>,
    /// Print the API's JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(flatten)]
    pub connection: Connection,
}

#[derive(Subcommand, Debug)]
pub enum NodesCommand {
    /// Ask a node to drain: it takes no new job and fires no schedule, its
    /// running jobs go on; `joblog nodes` shows it draining, then drained
    /// (needs an admin token).
    Drain {
        /// The node's name, as `joblog nodes` lists it.
        name: String,
    },
    /// Let a drained node take jobs and fire schedules again (needs an
    /// admin token).
    Undrain {
        /// The node's name.
        name: String,
    },
}

#[derive(Args, Debug)]
pub struct SchedulerArgs {
    /// Without one: say whether schedules fire.
    #[command(subcommand)]
    pub command: Option<SchedulerCommand>,
    /// Print the API's JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(flatten)]
    pub connection: Connection,
}

#[derive(Subcommand, Debug)]
pub enum SchedulerCommand {
    /// Say whether schedules fire (the default).
    Status,
    /// Stop every node's schedules from firing (and triggers from running)
    /// until resumed; manual runs still work (needs an admin token).
    Pause,
    /// Let schedules fire again; fires missed meanwhile follow each
    /// schedule's missed policy (needs an admin token).
    Resume,
}
