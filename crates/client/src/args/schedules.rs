//! The `joblog schedules` subcommands' arguments: a schedule's fields as
//! flags, shared by `create` and `update`.

use clap::{Args, Subcommand};

use super::*;

#[derive(Args, Debug)]
pub struct ScheduleArgs {
    #[command(subcommand)]
    pub command: ScheduleCommand,
    #[command(flatten)]
    pub connection: Connection,
}

#[derive(Subcommand, Debug)]
pub enum ScheduleCommand {
    /// Create a schedule that runs CMD (or --script) at each fire of
    /// --cron in --tz, or after another schedule's jobs end (--after); with
    /// neither, a saved job that runs only when run (`schedule run`).
    Add {
        /// Name of the schedule (unique); its jobs take it.
        #[arg(long)]
        name: String,
        /// When it fires: 5 fields (minute hour day-of-month month
        /// day-of-week), 6 with seconds first, or @hourly, @daily, …
        #[arg(long, value_name = "EXPR", conflicts_with = "after")]
        cron: Option<String>,
        #[command(flatten)]
        trigger: TriggerArgs,
        /// Start disabled (no fires until `schedule enable`).
        #[arg(long)]
        disabled: bool,
        #[command(flatten)]
        fields: ScheduleFields,
        /// Print the API's JSON.
        #[arg(long)]
        json: bool,
    },
    /// List schedules: next fire, last run and its state.
    List {
        /// Print the API's JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a schedule: its definition, next 5 fires and last run.
    Show(ScheduleIdArgs),
    /// Change what the options given say (the rest stays); CMD after `--`
    /// replaces the command.
    Edit {
        /// Schedule id.
        #[arg(value_name = "ID", value_parser = clap::value_parser!(i64).range(1..))]
        id: i64,
        /// New name.
        #[arg(long)]
        name: Option<String>,
        /// New cron expression (it no longer runs after another).
        #[arg(long, value_name = "EXPR", conflicts_with = "after")]
        cron: Option<String>,
        #[command(flatten)]
        trigger: TriggerArgs,
        #[command(flatten)]
        fields: ScheduleFields,
        /// Print the API's JSON.
        #[arg(long)]
        json: bool,
    },
    /// Enable a schedule: it fires from the next fire after now.
    Enable(ScheduleIdArgs),
    /// Disable a schedule: no fires until enabled again.
    Disable(ScheduleIdArgs),
    /// Delete a schedule (its jobs stay).
    Delete(ScheduleIdArgs),
    /// Queue a run of the schedule (a saved job) now with the parameters
    /// given, and print the job's id.
    #[command(alias = "run-now")]
    Run(ScheduleRunArgs),
}

#[derive(Args, Debug)]
pub struct ScheduleRunArgs {
    /// The schedule: its name or its id.
    #[arg(value_name = "SCHEDULE")]
    pub schedule: String,
    /// A parameter's value, read as the schedule's params type it
    /// (`count=3` an integer); `K` alone passes this shell's value of K
    /// (for a secret: keeps it off the command line).
    #[arg(long = "param", value_name = "K=V", value_parser = parse_kv)]
    pub param: Vec<KeyValue>,
    /// Print the API's JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ScheduleIdArgs {
    /// Schedule id.
    #[arg(value_name = "ID", value_parser = clap::value_parser!(i64).range(1..))]
    pub id: i64,
    /// Print the API's JSON.
    #[arg(long)]
    pub json: bool,
}

/// A trigger: the schedule to run after, and on which of its jobs' ends.
#[derive(Args, Debug)]
pub struct TriggerArgs {
    /// Run after each job of this schedule (a name or an id) ends, in
    /// place of --cron.
    #[arg(long, value_name = "SCHEDULE")]
    pub after: Option<String>,
    /// The states of its jobs' ends that start this one, comma-separated:
    /// succeeded, failed, cancelled, timed_out, interrupted (default
    /// succeeded).
    #[arg(
        long,
        value_name = "STATES",
        requires = "after",
        default_value = "succeeded"
    )]
    pub on: String,
}

/// What `schedule add` and `schedule edit` share: the job each fire
/// submits and the policies.
#[derive(Args, Debug)]
pub struct ScheduleFields {
    /// IANA time zone the expression is read in (default UTC).
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,
    /// Environment variable for its jobs; `K` alone passes this shell's value of K.
    #[arg(long = "env", value_name = "K=V", value_parser = parse_kv)]
    pub env: Vec<KeyValue>,
    /// The parameters each run takes: a JSON Schema file (`-`: standard
    /// input; docs/params.md); `none` drops them.
    #[arg(long, value_name = "FILE")]
    pub params_schema: Option<String>,
    /// With --after: a parameter taken from the triggering job's result
    /// at a JSON Pointer (`db=/database`).
    #[arg(long = "param-from-result", value_name = "NAME=POINTER", value_parser = parse_kv)]
    pub param_from_result: Vec<KeyValue>,
    /// Name of a secret its jobs get (never a value): each node that runs
    /// one gives it from its environment variable JOBLOG_SECRET_<NAME>.
    #[arg(long = "secret", value_name = "NAME")]
    pub secret: Vec<String>,
    /// Stop each run after this long (e.g. 90s, 15m, 2h).
    #[arg(long, value_name = "DUR", value_parser = joblog_core::parse_positive_duration)]
    pub timeout: Option<Duration>,
    /// Working directory of its jobs, on the server.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// When a fire comes while its previous run still runs: skip, queue or allow.
    #[arg(long, value_name = "POLICY", value_parser = ["skip", "queue", "allow"])]
    pub overlap: Option<String>,
    /// Fires missed while no node ran: skip, one (the latest) or all (the latest 100).
    #[arg(long, value_name = "POLICY", value_parser = ["skip", "one", "all"])]
    pub missed: Option<String>,
    /// Attempts of a failed run, the first included (1: no retry).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub attempts: Option<u32>,
    /// Wait before the second attempt, doubled for each after (e.g. 30s).
    #[arg(long, value_name = "DUR", value_parser = joblog_core::parse_duration)]
    pub backoff: Option<Duration>,
    /// Jobs with this key run at most --max-concurrent at once (all nodes).
    #[arg(long, value_name = "KEY")]
    pub concurrency_key: Option<String>,
    /// The limit of --concurrency-key (default 1).
    #[arg(long, value_name = "N", requires = "concurrency_key")]
    pub max_concurrent: Option<u32>,
    /// Run its jobs only on a node with these labels (`role=db,os=linux`;
    /// every one must match; with `edit`, an empty value drops them).
    /// Not `--on`: with `--after`, that flag names the states.
    #[arg(long, value_name = "LABELS", value_parser = super::parse_labels)]
    pub node_selector: Option<Labels>,
    /// The folder of the schedule and its jobs (with `edit`, an empty
    /// value takes it out of any folder).
    #[arg(long, value_name = "FOLDER", value_parser = parse_folder_or_none)]
    pub folder: Option<Option<String>>,
    /// Run this script file (`-`: standard input) instead of a command.
    #[arg(long, value_name = "FILE|-", conflicts_with = "command")]
    pub script: Option<String>,
    /// The shell that runs --script (default sh).
    #[arg(long, value_name = "SHELL", requires = "script")]
    pub shell: Option<String>,
    /// The command its jobs run and its arguments (after `--`).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<String>,
}

/// `--folder`: a folder's name, or empty for none.
fn parse_folder_or_none(s: &str) -> Result<Option<String>, String> {
    match s {
        "" => Ok(None),
        name => super::parse_folder(name).map(Some),
    }
}
