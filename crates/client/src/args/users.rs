//! The `joblog user` arguments: add, list, change and remove the people
//! who sign in to the web UI (needs an admin token). A password is never
//! an argument: it is read from the terminal, or from stdin's first line.

use clap::{Args, Subcommand};
use joblog_core::Role;

use super::{parse_folder_role, parse_role, Connection};

#[derive(Args, Debug)]
pub struct UserArgs {
    #[command(subcommand)]
    pub command: UserCommand,
    /// Print the API's JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(flatten)]
    pub connection: Connection,
}

#[derive(Subcommand, Debug)]
pub enum UserCommand {
    /// Add a user who signs in with a password (asked for on the terminal,
    /// twice, or read from stdin's first line; at least 12 characters).
    Add {
        /// The name they sign in with (letters, digits, '.', '_', '-', '@').
        #[arg(value_name = "NAME")]
        name: String,
        /// What they may do.
        #[arg(long, value_parser = parse_role)]
        role: Role,
        /// Limit them to this folder with this role (`team-a=operator`);
        /// repeat for several. --role is then their role on what is in
        /// no folder (viewer or operator).
        #[arg(long = "folder", value_name = "FOLDER=ROLE", value_parser = parse_folder_role)]
        folders: Vec<(String, Role)>,
    },
    /// List users: name, role, state, created, last sign-in (never passwords).
    List,
    /// Change a user's role, disable or enable them, or set a new password
    /// (disabling and a new password sign them out everywhere).
    Set {
        #[arg(value_name = "NAME")]
        name: String,
        #[arg(long, value_parser = parse_role)]
        role: Option<Role>,
        /// They can no longer sign in; their sessions end.
        #[arg(long, conflicts_with = "enable")]
        disable: bool,
        /// They can sign in again.
        #[arg(long)]
        enable: bool,
        /// Set a new password, read as `add` reads one.
        #[arg(long)]
        password: bool,
        /// Limit them to these folders (`team-a=operator`, repeated),
        /// in place of the folders they had.
        #[arg(long = "folder", value_name = "FOLDER=ROLE", value_parser = parse_folder_role,
              conflicts_with = "all_folders")]
        folders: Vec<(String, Role)>,
        /// Let them reach every folder again.
        #[arg(long)]
        all_folders: bool,
    },
    /// Remove a user; their sessions end.
    Remove {
        #[arg(value_name = "NAME")]
        name: String,
    },
}
