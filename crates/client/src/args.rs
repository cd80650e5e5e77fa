//! The client's command line: the clap structs of every subcommand and the
//! value parsers that reject bad input before any request is sent.

use std::time::Duration;

use clap::{ArgGroup, Args, Subcommand};
use joblog_core::{JobState, Labels, Role, Stream};

mod nodes;
mod notify;
mod schedules;
mod users;

pub use nodes::{NodesArgs, NodesCommand, SchedulerArgs, SchedulerCommand};
pub use notify::{Header, NotifyArgs, NotifyCommand, RuleFields};
pub use schedules::{ScheduleArgs, ScheduleCommand, ScheduleFields, TriggerArgs};
pub use users::{UserArgs, UserCommand};

/// The options before the command name. `--token` and `--token-file` are
/// global (every command takes them, `serve` as its bootstrap token);
/// `--server` and `--cacert` are the client's, so that `joblog serve
/// --help` does not offer them: each client command takes them again
/// after its name ([`Connection`]).
#[derive(Args, Debug, Clone)]
pub struct Global {
    /// Server to talk to.
    #[arg(
        long,
        env = "JOBLOG_SERVER",
        value_name = "URL",
        default_value = "http://127.0.0.1:7878"
    )]
    pub server: String,
    /// API token (sent as `Authorization: Bearer`); for `serve`, the
    /// bootstrap admin token it accepts. Shows in `ps`: prefer
    /// --token-file or JOBLOG_TOKEN.
    #[arg(long, global = true, env = "JOBLOG_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// File whose first line is the API token (for `serve`, the bootstrap
    /// token).
    #[arg(
        long,
        global = true,
        env = "JOBLOG_TOKEN_FILE",
        value_name = "FILE",
        conflicts_with = "token"
    )]
    pub token_file: Option<std::path::PathBuf>,
    /// PEM file of CA certificates to trust, besides the system's, for an
    /// https:// server (a private CA or a self-signed certificate).
    #[arg(long, env = "JOBLOG_CACERT", value_name = "FILE")]
    pub cacert: Option<std::path::PathBuf>,
    /// The zone times are shown in, from the command's `--utc`/`--local`.
    #[arg(skip)]
    pub times: super::render::Times,
}

impl Global {
    /// The token to send: `--token`, or the first line of `--token-file`.
    pub fn token(&self) -> anyhow::Result<Option<String>> {
        match (&self.token, &self.token_file) {
            (Some(t), _) if !t.is_empty() => Ok(Some(t.clone())),
            (_, Some(path)) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    anyhow::anyhow!("--token-file: cannot read {}: {e}", path.display())
                })?;
                Ok(text.lines().next().map(|l| l.trim().to_string()))
            }
            _ => Ok(None),
        }
    }

    /// These options with those given after the command name, which win.
    pub fn with(self, after: &Connection) -> Global {
        Global {
            server: after.server.clone().unwrap_or(self.server),
            cacert: after.cacert.clone().or(self.cacert),
            times: after.times(),
            ..self
        }
    }
}

/// `--server` and `--cacert` after a client command's name (`joblog jobs
/// --server URL`, `joblog token create … --server URL`); they win over the
/// same options before it. Their variables and default are read by
/// [`Global`], before the name.
#[derive(Args, Debug, Clone, Default)]
pub struct Connection {
    /// Server to talk to [env: JOBLOG_SERVER] [default: http://127.0.0.1:7878].
    #[arg(
        long = "server",
        id = "after_server",
        global = true,
        value_name = "URL"
    )]
    pub server: Option<String>,
    /// PEM file of CA certificates to trust, besides the system's, for an
    /// https:// server [env: JOBLOG_CACERT].
    #[arg(
        long = "cacert",
        id = "after_cacert",
        global = true,
        value_name = "FILE"
    )]
    pub cacert: Option<std::path::PathBuf>,
    /// Show times in UTC, each marked `UTC` (the default; or
    /// JOBLOG_TIMES=utc).
    #[arg(long, global = true, conflicts_with = "local")]
    pub utc: bool,
    /// Show times in this machine's time zone, each with its offset
    /// (`+01:00`; or JOBLOG_TIMES=local).
    #[arg(long, global = true)]
    pub local: bool,
}

impl Connection {
    /// `--utc` or `--local`, else `JOBLOG_TIMES` (`utc`, `local`), else UTC.
    pub fn times(&self) -> super::render::Times {
        use super::render::Times;
        match (self.utc, self.local) {
            (true, _) => Times::Utc,
            (_, true) => Times::Local,
            _ => match std::env::var("JOBLOG_TIMES").as_deref() {
                Ok("local") => Times::Local,
                _ => Times::Utc,
            },
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum ClientCommand {
    /// Submit a job; without --detach, follow its log and exit with its exit code.
    Run(RunArgs),
    /// Submit a job again as it was submitted (secrets given again); like
    /// run, follow it unless --detach.
    Rerun(RerunArgs),
    /// List jobs, newest first.
    Jobs(JobsArgs),
    /// Find the lines holding a text (or matching --regex) in every job's
    /// log, newest job first.
    Search(SearchArgs),
    /// Show one job with its log counts.
    Show(IdArgs),
    /// Print a job's log.
    Logs(LogsArgs),
    /// Print a job's result (JSON).
    #[command(name = "result")]
    JobResult(IdArgs),
    /// Cancel a queued or running job.
    Cancel(IdArgs),
    /// Delete old jobs with their logs and results (retention).
    Groom(GroomArgs),
    /// Seal the log of every finished job now (compressed segments that read
    /// as before), showing progress; needs an admin token.
    Seal(SealArgs),
    /// Create, list, show, change, delete and run now the schedules that
    /// submit a job at each fire of a cron expression.
    Schedule(ScheduleArgs),
    /// Create, list, show, change, delete and test the rules that tell of
    /// job ends by web hook or e-mail (needs an admin token).
    Notify(NotifyArgs),
    /// Create, list and revoke API tokens (needs an admin token).
    Token(TokenArgs),
    /// Add, list, change and remove the people who sign in to the web UI
    /// (needs an admin token).
    User(UserArgs),
    /// List the nodes running jobs on the server's store (state, labels,
    /// last heartbeat, running jobs, version), or drain one.
    Nodes(NodesArgs),
    /// Say whether schedules fire, or pause or resume them on every node.
    Scheduler(SchedulerArgs),
    /// Save a consistent copy of the server's SQLite database to FILE while
    /// it runs (needs an admin token).
    Backup(BackupArgs),
    /// Ask the server whether it is healthy; exits 0 if so, 1 if not or
    /// unreachable (for container and service health checks).
    Health(HealthArgs),
}

impl ClientCommand {
    /// The `--server` and `--cacert` given after the command's name.
    pub fn connection(&self) -> &Connection {
        match self {
            ClientCommand::Run(a) => &a.connection,
            ClientCommand::Jobs(a) => &a.connection,
            ClientCommand::Search(a) => &a.connection,
            ClientCommand::Show(a) | ClientCommand::JobResult(a) | ClientCommand::Cancel(a) => {
                &a.connection
            }
            ClientCommand::Logs(a) => &a.connection,
            ClientCommand::Groom(a) => &a.connection,
            ClientCommand::Seal(a) => &a.connection,
            ClientCommand::Token(a) => &a.connection,
            ClientCommand::User(a) => &a.connection,
            ClientCommand::Schedule(a) => &a.connection,
            ClientCommand::Notify(a) => &a.connection,
            ClientCommand::Rerun(a) => &a.connection,
            ClientCommand::Nodes(a) => &a.connection,
            ClientCommand::Scheduler(a) => &a.connection,
            ClientCommand::Backup(a) => &a.connection,
            ClientCommand::Health(a) => &a.connection,
        }
    }
}

#[derive(Args, Debug)]
pub struct SealArgs {
    /// Every finished job whose log is not sealed yet, of every node (the
    /// only choice so far, and so required).
    #[arg(long, required = true)]
    pub all: bool,
    /// Print the API's JSON at the end.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connection: Connection,
}

#[derive(Args, Debug)]
pub struct BackupArgs {
    /// File to write the copy to: a SQLite database, restored by putting it
    /// in place of the data directory's joblog.db.
    #[arg(value_name = "FILE")]
    pub file: std::path::PathBuf,
    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub connection: Connection,
}

#[derive(Args, Debug)]
pub struct HealthArgs {
    /// Print the server's JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connection: Connection,
}

#[derive(Args, Debug)]
pub struct TokenArgs {
    #[command(subcommand)]
    pub command: TokenCommand,
    #[command(flatten)]
    pub connection: Connection,
}

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Create a token and print it: it is shown this once (the server keeps
    /// only its hash).
    Create {
        /// Name of the token (letters, digits, '.', '_', '-').
        #[arg(long)]
        name: String,
        /// What the token may do.
        #[arg(long, value_parser = parse_role)]
        role: Role,
        /// The token stops working after this long (e.g. 90d); default never.
        #[arg(long, value_name = "DUR", value_parser = joblog_core::parse_positive_duration)]
        expires: Option<Duration>,
        /// Limit it to this folder with this role (`team-a=operator`);
        /// repeat for several. --role is then its role on what is in no
        /// folder (viewer or operator).
        #[arg(long = "folder", value_name = "FOLDER=ROLE", value_parser = parse_folder_role)]
        folders: Vec<(String, Role)>,
        /// Print the API's JSON.
        #[arg(long)]
        json: bool,
    },
    /// List tokens: name, role, created, expiry, last use (never the tokens).
    List {
        /// Print the API's JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token: it stops working at once.
    Revoke {
        /// Name of the token.
        #[arg(value_name = "NAME")]
        name: String,
        /// Print the API's JSON.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn parse_labels(s: &str) -> Result<Labels, String> {
    Labels::parse(s)
}

/// `FOLDER=ROLE` of `--folder` on a token or user.
pub(crate) fn parse_folder_role(s: &str) -> Result<(String, Role), String> {
    let (folder, role) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not FOLDER=ROLE (team-a=operator)"))?;
    joblog_core::validate_folder(folder).map_err(|e| format!("folder {folder:?} {e}"))?;
    Ok((folder.to_string(), parse_role(role)?))
}

/// A folder's name, as `--folder` of a job gives it.
pub(crate) fn parse_folder(s: &str) -> Result<String, String> {
    joblog_core::validate_folder(s).map_err(|e| format!("folder {s:?} {e}"))?;
    Ok(s.to_string())
}

pub(crate) fn parse_role(s: &str) -> Result<Role, String> {
    Role::parse(s).ok_or_else(|| format!("unknown role {s:?} (viewer, operator or admin)"))
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Name of the job (for listing and retention).
    #[arg(long)]
    pub name: Option<String>,
    /// Environment variable for the job; `K` alone passes this shell's value of K.
    #[arg(long = "env", value_name = "K=V", value_parser = parse_kv)]
    pub env: Vec<KeyValue>,
    /// Secret for the job: an environment variable masked in its log.
    /// `K` alone passes this shell's value of K (keeps it off the command line).
    #[arg(long = "secret", value_name = "K=V", value_parser = parse_kv)]
    pub secret: Vec<KeyValue>,
    /// Stop the job after this long (e.g. 90s, 15m, 2h).
    #[arg(long, value_name = "DUR", value_parser = joblog_core::parse_positive_duration)]
    pub timeout: Option<Duration>,
    /// Working directory of the job, on the server.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// Jobs with this key run at most --max-concurrent at once (all
    /// nodes); this one waits queued until it may start.
    #[arg(long, value_name = "KEY")]
    pub concurrency_key: Option<String>,
    /// The limit of --concurrency-key (default 1).
    #[arg(long, value_name = "N", requires = "concurrency_key")]
    pub max_concurrent: Option<u32>,
    /// Run it only on a node with these labels (`role=db,os=linux`; every
    /// one must match).
    #[arg(long = "on", visible_alias = "node-selector", value_name = "LABELS", value_parser = parse_labels)]
    pub on: Option<Labels>,
    /// The folder it belongs to (who may see and act on it).
    #[arg(long, value_name = "FOLDER", value_parser = parse_folder)]
    pub folder: Option<String>,
    /// The parameters it takes: a JSON Schema file (`-`: standard input),
    /// as a saved job's `params` (docs/params.md).
    #[arg(long, value_name = "FILE")]
    pub params_schema: Option<String>,
    /// A parameter's value, read as --params-schema types it (`count=3`
    /// an integer); `K` alone passes this shell's value of K.
    #[arg(long = "param", value_name = "K=V", value_parser = parse_kv, requires = "params_schema")]
    pub param: Vec<KeyValue>,
    /// Print the job id and return instead of following the log.
    #[arg(long)]
    pub detach: bool,
    /// Print JSON: the job with --detach, else one log record per line.
    #[arg(long)]
    pub json: bool,
    /// Run this script file (`-`: standard input) instead of a command; it
    /// is sent to the server and stored with the job.
    #[arg(long, value_name = "FILE|-", conflicts_with = "command")]
    pub script: Option<String>,
    /// The shell that runs --script (default sh; bash, pwsh, python3 -c …).
    #[arg(long, value_name = "SHELL", requires = "script")]
    pub shell: Option<String>,
    /// The command to run and its arguments (after `--`).
    #[arg(
        required_unless_present = "script",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<String>,
    #[command(flatten)]
    pub connection: Connection,
}

#[derive(Args, Debug)]
pub struct RerunArgs {
    /// The job to submit again.
    #[arg(value_name = "ID", value_parser = clap::value_parser!(i64).range(1..))]
    pub id: i64,
    /// A secret the original job was given, again (its value was never
    /// kept); `K` alone passes this shell's value of K.
    #[arg(long = "secret", value_name = "K=V", value_parser = parse_kv)]
    pub secret: Vec<KeyValue>,
    /// A parameter in place of the value the original ran with, and each
    /// secret parameter again (never kept); `K` alone passes this shell's
    /// value of K.
    #[arg(long = "param", value_name = "K=V", value_parser = parse_kv)]
    pub param: Vec<KeyValue>,
    /// Print the new job's id and return instead of following its log.
    #[arg(long)]
    pub detach: bool,
    /// Print JSON: the job with --detach, else one log record per line.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connection: Connection,
}

/// The job filters `jobs` and `search` share, sent as the API's query
/// parameters of the same names.
#[derive(Args, Debug)]
pub struct JobFilterArgs {
    /// Only jobs in these states, comma-separated (queued, running,
    /// succeeded, failed, cancelled, timed_out, interrupted).
    #[arg(long, value_name = "LIST", value_parser = parse_states)]
    pub state: Option<StateList>,
    /// Only jobs with this name, or matching this pattern: `*` any
    /// characters, `?` one (quote it: 'backup*').
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Only jobs run on this node.
    #[arg(long, value_name = "NODE")]
    pub node: Option<String>,
    /// Only the runs of this schedule (its id).
    #[arg(long, value_name = "ID", value_parser = clap::value_parser!(i64).range(1..))]
    pub schedule: Option<i64>,
    /// Only jobs of this folder.
    #[arg(long, value_name = "FOLDER", value_parser = parse_folder)]
    pub folder: Option<String>,
    /// Only jobs created since then: a duration back from now (24h, 7d) or
    /// a time (2026-11-22T10:00:00Z, 2026-11-22).
    #[arg(long, value_name = "WHEN", value_parser = parse_when)]
    pub since: Option<String>,
    /// Only jobs created before then (same forms as --since).
    #[arg(long, value_name = "WHEN", value_parser = parse_when)]
    pub until: Option<String>,
}

impl JobFilterArgs {
    /// The query pairs of the filters given.
    pub fn query(&self) -> Vec<(&'static str, String)> {
        let mut q = Vec::new();
        if let Some(s) = &self.state {
            let names: Vec<&str> = s.0.iter().map(|st| st.name()).collect();
            q.push(("state", names.join(",")));
        }
        for (key, value) in [
            ("name", &self.name),
            ("node", &self.node),
            ("folder", &self.folder),
            ("since", &self.since),
            ("until", &self.until),
        ] {
            if let Some(v) = value {
                q.push((key, v.clone()));
            }
        }
        if let Some(s) = self.schedule {
            q.push(("schedule_id", s.to_string()));
        }
        q
    }
}

#[derive(Args, Debug)]
pub struct JobsArgs {
    #[command(flatten)]
    pub filters: JobFilterArgs,
    /// Only jobs older than this one (its id), to read on from an earlier
    /// listing.
    #[arg(long, value_name = "ID", value_parser = clap::value_parser!(i64).range(1..))]
    pub before_id: Option<i64>,
    /// How many jobs to list.
    #[arg(long, value_name = "N", default_value_t = 50,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: u32,
    /// Print the API's JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connection: Connection,
}

#[derive(Args, Debug)]
pub struct SearchArgs {
    /// The text to find: anywhere in a line, ASCII letters in either case,
    /// every other character as itself (1 to 256 bytes).
    #[arg(value_name = "TEXT")]
    pub text: String,
    /// TEXT is a regular expression (RE2 syntax), case-insensitive unless
    /// it starts with (?-i).
    #[arg(long)]
    pub regex: bool,
    #[command(flatten)]
    pub filters: JobFilterArgs,
    /// Only lines of these streams (comma-separated: output, error, …).
    #[arg(long, value_name = "LIST", value_parser = parse_streams)]
    pub streams: Option<StreamList>,
    /// Stop after this many lines.
    #[arg(long, value_name = "N", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: u32,
    /// Print each line found as one JSON object (the API's hit).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connection: Connection,
}

#[derive(Args, Debug)]
pub struct IdArgs {
    /// Job id.
    #[arg(value_name = "ID", value_parser = clap::value_parser!(i64).range(1..))]
    pub id: i64,
    /// Print the API's JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connection: Connection,
}

#[derive(Args, Debug)]
pub struct LogsArgs {
    /// Job id.
    #[arg(value_name = "ID", value_parser = clap::value_parser!(i64).range(1..))]
    pub id: i64,
    /// Keep printing new records until the job ends.
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Only these streams (comma-separated: output, error, warning,
    /// information, verbose, debug, progress).
    #[arg(long, value_name = "LIST", value_parser = parse_streams)]
    pub streams: Option<StreamList>,
    /// Start after this sequence number.
    #[arg(long, value_name = "SEQ", default_value_t = 0)]
    pub after: u64,
    /// Prefix every line with the time joblog received it.
    #[arg(long)]
    pub timestamps: bool,
    /// Print one JSON record per line.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connection: Connection,
}

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("policy").required(true).multiple(true)
    .args(["older_than", "keep_per_name"])))]
pub struct GroomArgs {
    /// Delete finished jobs older than this (e.g. 30d).
    #[arg(long, value_name = "DUR", value_parser = joblog_core::parse_positive_duration)]
    pub older_than: Option<Duration>,
    /// Keep only the newest N finished jobs of each name (unnamed jobs:
    /// of each command).
    #[arg(long, value_name = "N")]
    pub keep_per_name: Option<u32>,
    /// Delete nothing: list what would be deleted.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the API's JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connection: Connection,
}

/// One `--env`/`--secret` argument; `value` is `None` for a bare `K`,
/// which takes the value from the client's own environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamList(pub Vec<Stream>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateList(pub Vec<JobState>);

fn parse_kv(s: &str) -> Result<KeyValue, String> {
    let (key, value) = match s.split_once('=') {
        Some((k, v)) => (k, Some(v.to_string())),
        None => (s, None),
    };
    if key.is_empty() {
        return Err(format!("{s:?}: expected K=V with a non-empty name K"));
    }
    if key.contains('\0') || value.as_deref().is_some_and(|v| v.contains('\0')) {
        return Err("names and values may not contain NUL bytes".to_string());
    }
    Ok(KeyValue {
        key: key.to_string(),
        value,
    })
}

fn parse_states(s: &str) -> Result<StateList, String> {
    let list = JobState::parse_list(s)?;
    if list.is_empty() {
        return Err("give at least one state".to_string());
    }
    Ok(StateList(list))
}

/// A `--since`/`--until` in a form the server accepts; kept as text, so the
/// server reads a duration against its own clock.
fn parse_when(s: &str) -> Result<String, String> {
    joblog_core::parse_time_bound(s, joblog_core::Timestamp::now())?;
    Ok(s.trim().to_string())
}

fn parse_streams(s: &str) -> Result<StreamList, String> {
    let list = Stream::parse_list(s)?;
    if list.is_empty() {
        return Err("give at least one stream".to_string());
    }
    Ok(StreamList(list))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_values() {
        assert_eq!(
            parse_kv("A=b=c").unwrap(),
            KeyValue {
                key: "A".into(),
                value: Some("b=c".into())
            }
        );
        assert_eq!(parse_kv("A=").unwrap().value, Some(String::new()));
        assert_eq!(parse_kv("HOME").unwrap().value, None);
        assert!(parse_kv("=x").unwrap_err().contains("K=V"));
        assert!(parse_kv("").is_err());
        assert!(parse_kv("A=\0").is_err());
    }

    #[test]
    fn states_times_and_streams() {
        assert!(parse_states("runing").unwrap_err().contains("running"));
        assert_eq!(
            parse_states("timed_out,failed").unwrap().0,
            [JobState::Failed, JobState::TimedOut]
        );
        assert!(parse_states(",").is_err());
        assert_eq!(parse_when(" 24h").unwrap(), "24h");
        assert!(parse_when("yesterday").unwrap_err().contains("24h"));
        assert!(parse_streams("warning,eror").is_err());
        assert!(parse_streams(",").is_err());
    }
}
