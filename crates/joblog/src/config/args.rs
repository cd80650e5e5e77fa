//! `joblog serve`'s flags, made from the declarations: one flag per
//! setting, plus `--config`, and the bootstrap token from the global
//! `--token` / `--token-file`. The settings' environment variables are not
//! read here but by `Layers::add_env`, from the snapshot the server takes
//! of its environment: one path for every variable.

use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::parser::{MatchesError, ValueSource};
use clap::{Arg, ArgMatches, Command};

use super::layers::{Layers, Origin};
use super::settings::DECLARED;

/// What `joblog serve` was given on its command line (and the global
/// token options, which clap also reads from their variables).
#[derive(Debug, Default, Clone)]
pub struct ServeArgs {
    /// `--config FILE`; default `./joblog.toml` when it exists.
    pub config: Option<PathBuf>,
    /// Where `config` came from: the flag or `JOBLOG_CONFIG`.
    config_origin: Option<Origin>,
    given: Vec<(&'static str, String, Origin)>,
}

impl ServeArgs {
    /// Adds what was given to `layers`, above the file.
    pub fn add_to(&self, layers: &mut Layers) {
        // Environment first, so that a flag wins over its variable.
        let (env, flags): (Vec<_>, Vec<_>) = self
            .given
            .iter()
            .partition(|(_, _, origin)| matches!(origin, Origin::Env(_)));
        for (key, text, origin) in env.into_iter().chain(flags) {
            layers.give(key, text.clone(), origin.clone());
        }
    }

    /// Where `--config` came from, when it was given.
    pub fn config_origin(&self) -> Option<&Origin> {
        self.config_origin.as_ref()
    }

    fn give(&mut self, key: &'static str, text: String, origin: Origin) {
        self.given.retain(|(k, _, _)| *k != key);
        self.given.push((key, text, origin));
    }
}

/// The origin of a value clap read: the flag, or its variable.
fn origin_of(matches: &ArgMatches, id: &str, flag: &'static str, env: &'static str) -> Origin {
    match matches.value_source(id) {
        Some(ValueSource::EnvVariable) => Origin::Env(env),
        _ => Origin::Flag(flag),
    }
}

/// A global option's value: clap hands the global options (ids of
/// `client::Global`) to every subcommand's matches. `ServeArgs` parsed
/// without them (in tests) has none.
fn global_value<T: Clone + Send + Sync + 'static>(
    matches: &ArgMatches,
    id: &str,
) -> Result<Option<T>, clap::Error> {
    match matches.try_get_one::<T>(id) {
        Ok(value) => Ok(value.cloned()),
        Err(MatchesError::UnknownArgument { .. }) => Ok(None),
        Err(e) => Err(clap::Error::raw(
            ErrorKind::InvalidValue,
            format!("{id}: {e}"),
        )),
    }
}

impl clap::FromArgMatches for ServeArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut args = ServeArgs::default();
        args.update_from_arg_matches(matches)?;
        Ok(args)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        if let Some(path) = matches.get_one::<PathBuf>("config") {
            self.config = Some(path.clone());
            self.config_origin = Some(origin_of(matches, "config", "config", "JOBLOG_CONFIG"));
        }
        for d in DECLARED {
            let Some(flag) = d.flag else { continue };
            let Some(text) = matches.get_one::<String>(d.key) else {
                continue;
            };
            self.give(d.key, text.clone(), Origin::Flag(flag));
        }
        // The bootstrap token: the settings `token` and `token_file` have
        // no flag of serve's own; their flags are the global ones.
        if let Some(token) = global_value::<String>(matches, "token")?.filter(|t| !t.is_empty()) {
            let origin = origin_of(matches, "token", "token", "JOBLOG_TOKEN");
            self.give("token", token, origin);
        }
        if let Some(path) = global_value::<PathBuf>(matches, "token_file")? {
            let origin = origin_of(matches, "token_file", "token-file", "JOBLOG_TOKEN_FILE");
            self.give("token_file", path.display().to_string(), origin);
        }
        Ok(())
    }
}

impl clap::Args for ServeArgs {
    fn augment_args(mut cmd: Command) -> Command {
        for d in DECLARED {
            let Some(flag) = d.flag else { continue };
            let mut arg = Arg::new(d.key).long(flag);
            // A switch may stand alone: `--paused` is `--paused true`.
            if d.kind == "boolean" {
                arg = arg.num_args(0..=1).default_missing_value("true");
            }
            cmd = cmd.arg(
                arg.value_name(value_name(d.kind))
                    .help(match (d.default)() {
                        default if default.is_empty() => {
                            format!("{} [env: {}]", d.summary(), d.env)
                        }
                        default => {
                            format!("{} [default: {default}] [env: {}]", d.summary(), d.env)
                        }
                    }),
            );
        }
        cmd.arg(
            Arg::new("config")
                .long("config")
                .env("JOBLOG_CONFIG")
                .value_name("FILE")
                .value_parser(clap::value_parser!(PathBuf))
                .help("Configuration file; default ./joblog.toml when it exists"),
        )
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

fn value_name(kind: &str) -> &'static str {
    match kind {
        "address" => "ADDR",
        "path" => "PATH",
        "integer" => "N",
        "duration" => "DURATION",
        "size" => "SIZE",
        "normal | full" => "normal|full",
        "host names" => "NAMES",
        "labels" => "LABELS",
        "boolean" => "BOOL",
        _ => "TEXT",
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::{Args, FromArgMatches};

    use super::*;

    #[test]
    fn a_flag_wins_over_its_variable_and_errors_name_the_one_used() {
        let cmd = ServeArgs::augment_args(Command::new("serve"));
        let matches = cmd
            .try_get_matches_from(["serve", "--kill-grace", "3s", "--config", "x.toml"])
            .unwrap();
        let args = ServeArgs::from_arg_matches(&matches).unwrap();
        assert_eq!(args.config, Some(PathBuf::from("x.toml")));
        let mut layers = Layers::default();
        layers.give("kill_grace", "1s".into(), Origin::File("x.toml".into()));
        layers.add_env(|var| match var {
            "JOBLOG_KILL_GRACE" => Some("2s".into()),
            "JOBLOG_GRACE_PERIOD" => Some("forever".into()),
            _ => None,
        });
        args.add_to(&mut layers);
        assert_eq!(
            layers.get::<Duration>("kill_grace").unwrap(),
            Some(Duration::from_secs(3))
        );
        let e = layers
            .get::<Duration>("grace_period")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("environment variable JOBLOG_GRACE_PERIOD") && e.contains("forever"),
            "{e}"
        );
    }

    /// The flags do not read the settings' variables themselves: the
    /// server's snapshot of its environment is the one path.
    #[test]
    fn a_setting_variable_reaches_the_settings_only_through_add_env() {
        std::env::set_var("JOBLOG_MAX_QUEUED", "7");
        let cmd = ServeArgs::augment_args(Command::new("serve"));
        let matches = cmd.try_get_matches_from(["serve"]).unwrap();
        let args = ServeArgs::from_arg_matches(&matches).unwrap();
        let mut layers = Layers::default();
        args.add_to(&mut layers);
        assert_eq!(layers.get::<u64>("max_queued").unwrap(), None);
        layers.add_env(|var| std::env::var(var).ok());
        assert_eq!(layers.get::<u64>("max_queued").unwrap(), Some(7));
    }
}
