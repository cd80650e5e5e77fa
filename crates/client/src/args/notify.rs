//! The `joblog notify` subcommands' arguments: a notification rule's
//! fields as flags, shared by `add` and `edit`, and the parsers of
//! `--on` and `--header`.

use clap::{ArgGroup, Args, Subcommand};

use super::*;

#[derive(Args, Debug)]
pub struct NotifyArgs {
    #[command(subcommand)]
    pub command: NotifyCommand,
    #[command(flatten)]
    pub connection: Connection,
}

#[derive(Subcommand, Debug)]
pub enum NotifyCommand {
    /// Create a rule: the ends of jobs it matches (--on, --job-name,
    /// --schedule) are told to --webhook URL or by --email.
    // A rule sends somewhere: one target, required here, optional in
    // `edit` (the group is the variant's so each says which).
    #[command(group(ArgGroup::new("target").required(true).args(["webhook", "email"])))]
    Add {
        /// Name of the rule (unique).
        #[arg(long)]
        name: String,
        /// The end states it tells of, comma-separated (succeeded, failed,
        /// cancelled, timed_out, interrupted).
        #[arg(long, value_name = "STATES", value_parser = parse_end_states)]
        on: StateList,
        /// Create it disabled (nothing sent until `notify edit ID --enable`).
        #[arg(long)]
        disabled: bool,
        #[command(flatten)]
        fields: RuleFields,
        /// Print the API's JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the rules: what each tells of and where it goes (a web hook by
    /// its host only).
    List {
        /// Print the API's JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a rule in full (its web hook's whole URL too) with its latest
    /// deliveries.
    Show(RuleIdArgs),
    /// Change what the options given say (the rest stays).
    #[command(group(ArgGroup::new("target").args(["webhook", "email"])))]
    Edit {
        /// Rule id.
        #[arg(value_name = "ID", value_parser = clap::value_parser!(i64).range(1..))]
        id: i64,
        /// New name.
        #[arg(long)]
        name: Option<String>,
        /// New end states, comma-separated (they replace the old ones).
        #[arg(long, value_name = "STATES", value_parser = parse_end_states)]
        on: Option<StateList>,
        /// Tell of jobs of any name again (drops --job-name).
        #[arg(long, conflicts_with = "job_name")]
        any_job_name: bool,
        /// Tell of the jobs of any schedule, or none, again (drops --schedule).
        #[arg(long, conflicts_with = "schedule")]
        any_schedule: bool,
        /// Send the web hook no headers of the rule's own (drops every --header).
        #[arg(long, conflicts_with_all = ["header", "email"])]
        no_headers: bool,
        /// Sign the web hook's deliveries no more (drops --secret-name).
        #[arg(long, conflicts_with_all = ["secret_name", "email"])]
        no_secret_name: bool,
        /// Send again.
        #[arg(long, conflicts_with = "disable")]
        enable: bool,
        /// Send nothing until --enable.
        #[arg(long)]
        disable: bool,
        #[command(flatten)]
        fields: RuleFields,
        /// Print the API's JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete a rule and its deliveries.
    Delete(RuleIdArgs),
    /// Send the rule a notification now (of the newest job that ended in
    /// one of its states); exits 1 if it was not delivered.
    Test(RuleIdArgs),
}

#[derive(Args, Debug)]
pub struct RuleIdArgs {
    /// Rule id.
    #[arg(value_name = "ID", value_parser = clap::value_parser!(i64).range(1..))]
    pub id: i64,
    /// Print the API's JSON.
    #[arg(long)]
    pub json: bool,
}

/// What `notify add` and `notify edit` share: which jobs a rule tells of
/// besides their state, and where it sends.
#[derive(Args, Debug)]
pub struct RuleFields {
    /// Only jobs with this name, or matching this pattern: `*` any
    /// characters, `?` one (quote it: 'backup*').
    #[arg(long, value_name = "PATTERN")]
    pub job_name: Option<String>,
    /// Only the runs of this schedule (its id).
    #[arg(long, value_name = "ID", value_parser = clap::value_parser!(i64).range(1..))]
    pub schedule: Option<i64>,
    /// Send to this web hook (http or https; its path is often its
    /// credential, so `list` shows its host only).
    #[arg(long, value_name = "URL")]
    pub webhook: Option<String>,
    /// What the web hook is sent: json (joblog's document), slack or teams.
    #[arg(long, value_name = "FORMAT", value_parser = ["json", "slack", "teams"],
          conflicts_with = "email")]
    pub format: Option<String>,
    /// A header sent with every delivery of the web hook ('X-Team: ops');
    /// repeat it for more.
    #[arg(long = "header", value_name = "'NAME: VALUE'", value_parser = parse_header,
          conflicts_with = "email")]
    pub header: Vec<Header>,
    /// Sign each delivery (Joblog-Signature-256) with this secret the
    /// delivering node holds as JOBLOG_SECRET_<NAME> (a name, never a value).
    #[arg(long, value_name = "NAME", conflicts_with = "email")]
    pub secret_name: Option<String>,
    /// Send e-mail to these addresses, comma-separated or repeated.
    #[arg(long, value_name = "ADDR,…", value_delimiter = ',')]
    pub email: Vec<String>,
}

/// One `--header NAME: VALUE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub value: String,
}

/// `--on`: end states only (a rule tells of jobs that ended), at least one.
fn parse_end_states(s: &str) -> Result<StateList, String> {
    let list = JobState::parse_list(s)?;
    if let Some(st) = list.iter().find(|st| !st.is_finished()) {
        return Err(format!(
            "{:?} is not an end state (succeeded, failed, cancelled, timed_out, interrupted)",
            st.name()
        ));
    }
    if list.is_empty() {
        return Err("give at least one end state, such as failed,timed_out".to_string());
    }
    Ok(StateList(list))
}

/// `--header 'X-Team: ops'`, as curl takes it. The name is checked here
/// (a token, as HTTP has it) so a typo is not a round trip; the server
/// checks the rest (the headers it sets itself, the value's length).
fn parse_header(s: &str) -> Result<Header, String> {
    let Some((name, value)) = s.split_once(':') else {
        return Err(format!(
            "{s:?}: expected 'NAME: VALUE', such as 'X-Team: ops'"
        ));
    };
    let name = name.trim();
    let token = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !token {
        return Err(format!(
            "{name:?} is not a header name (letters, digits and !#$%&'*+-.^_`|~)"
        ));
    }
    let value = value.trim();
    // Not echoed: a header's value is often a credential.
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err(format!(
            "the value of {name} has control characters (a header is one line)"
        ));
    }
    Ok(Header {
        name: name.to_string(),
        value: value.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(subcommand)]
        command: NotifyCommand,
    }

    fn parse(args: &[&str]) -> Result<NotifyCommand, clap::Error> {
        Cli::try_parse_from(std::iter::once("notify").chain(args.iter().copied()))
            .map(|c| c.command)
    }

    #[test]
    fn headers_are_name_colon_value() {
        assert_eq!(
            parse_header("X-Team:  ops team ").unwrap(),
            Header {
                name: "X-Team".into(),
                value: "ops team".into()
            }
        );
        assert_eq!(
            parse_header("Authorization: Bearer a:b").unwrap().value,
            "Bearer a:b"
        );
        assert_eq!(parse_header("X-Empty:").unwrap().value, "");
        assert!(parse_header("X-Team ops")
            .unwrap_err()
            .contains("NAME: VALUE"));
        assert!(parse_header(": ops")
            .unwrap_err()
            .contains("not a header name"));
        assert!(parse_header("X Team: ops").is_err());
        let e = parse_header("X-Key: s3cr3t\nInjected: 1").unwrap_err();
        assert!(!e.contains("s3cr3t"), "{e}");
    }

    #[test]
    fn on_takes_end_states_only() {
        assert_eq!(
            parse_end_states("timed_out, failed,failed").unwrap().0,
            [JobState::Failed, JobState::TimedOut]
        );
        assert!(parse_end_states("running")
            .unwrap_err()
            .contains("not an end state"));
        assert!(parse_end_states("faild").unwrap_err().contains("failed"));
        assert!(parse_end_states(" , ")
            .unwrap_err()
            .contains("at least one"));
    }

    #[test]
    fn add_takes_exactly_one_target() {
        let hook = [
            "add",
            "--name",
            "n",
            "--on",
            "failed",
            "--webhook",
            "https://h/x",
        ];
        let NotifyCommand::Add { fields, on, .. } = parse(
            &[
                &hook[..],
                &[
                    "--header", "X-A: 1", "--header", "X-B: 2", "--format", "slack",
                ],
            ]
            .concat(),
        )
        .unwrap() else {
            panic!("not add");
        };
        assert_eq!(on.0, [JobState::Failed]);
        assert_eq!(fields.header.len(), 2);
        assert_eq!(fields.format.as_deref(), Some("slack"));
        let NotifyCommand::Add { fields, .. } = parse(&[
            "add",
            "--name",
            "n",
            "--on",
            "failed",
            "--email",
            "a@x.org,b@x.org",
            "--email",
            "c@x.org",
        ])
        .unwrap() else {
            panic!("not add");
        };
        assert_eq!(fields.email, ["a@x.org", "b@x.org", "c@x.org"]);
        // Neither, both, and a web hook's option with e-mail.
        assert!(parse(&["add", "--name", "n", "--on", "failed"]).is_err());
        assert!(parse(&[&hook[..], &["--email", "a@x.org"]].concat()).is_err());
        assert!(parse(&[
            "add", "--name", "n", "--on", "failed", "--email", "a@x.org", "--format", "slack"
        ])
        .is_err());
        // --on is required.
        assert!(parse(&["add", "--name", "n", "--webhook", "https://h/x"]).is_err());
    }

    #[test]
    fn edit_takes_any_options_but_not_contrary_ones() {
        let NotifyCommand::Edit {
            id, fields, enable, ..
        } = parse(&["edit", "4", "--format", "teams", "--enable"]).unwrap()
        else {
            panic!("not edit");
        };
        assert_eq!((id, enable), (4, true));
        assert_eq!(fields.format.as_deref(), Some("teams"));
        assert!(
            parse(&["edit", "4"]).is_ok(),
            "refused later, with a message"
        );
        for contrary in [
            &["edit", "4", "--enable", "--disable"][..],
            &[
                "edit",
                "4",
                "--webhook",
                "https://h/x",
                "--email",
                "a@x.org",
            ],
            &["edit", "4", "--job-name", "b*", "--any-job-name"],
            &["edit", "4", "--schedule", "3", "--any-schedule"],
            &["edit", "4", "--header", "X-A: 1", "--no-headers"],
            &["edit", "4", "--email", "a@x.org", "--no-secret-name"],
            &["edit", "0"],
        ] {
            assert!(parse(contrary).is_err(), "{contrary:?} accepted");
        }
    }
}
