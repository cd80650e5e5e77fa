//! The command line as a whole: global options and the subcommands, each
//! handed to the module that runs it.

use clap::{Parser, Subcommand};

use joblog_bench as bench;
use joblog_client as client;

use crate::{config, manual, serve};

#[derive(Parser, Debug)]
#[command(
    name = "joblog",
    version = VERSION,
    // The package's description (Cargo.toml), which the Debian package
    // shows too.
    about
)]
pub struct Cli {
    #[command(flatten)]
    global: client::Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a joblog node: job engine, HTTP API and log pipeline.
    Serve(config::ServeArgs),
    // Boxed: the client's and the bench's arguments are large, serve's small.
    #[command(flatten)]
    Client(Box<client::ClientCommand>),
    /// Run a benchmark scenario and print a Markdown table.
    Bench(Box<bench::BenchArgs>),
    #[command(flatten)]
    Manual(manual::ManualCommand),
}

/// `joblog --version`: the crate's version and the commit it was built
/// from (build.rs; `unknown` when built without the repository).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("JOBLOG_COMMIT"),
    ")"
);

/// Threads of the runtime's blocking pool, at most (tokio's default is
/// 512). Every thread is a stack mapping the server's `fork` must copy
/// when it starts a job: a burst of short reads used to leave hundreds of
/// them (docs/benchmarks.md, `bench dispatch`). Reads are bounded by the
/// store's read pool anyway.
const MAX_BLOCKING_THREADS: usize = 32;

impl Cli {
    /// Runs the command on a fresh runtime; returns the process exit code.
    pub fn run(self) -> anyhow::Result<i32> {
        // Before any thread exists: the server's secrets leave its
        // environment here.
        let env = matches!(self.command, Command::Serve(_)).then(serve::take_environment);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .max_blocking_threads(MAX_BLOCKING_THREADS)
            .enable_all()
            .build()?;
        rt.block_on(async move {
            match self.command {
                // The bootstrap token (global --token, --token-file) is
                // in `args`, with where it came from.
                Command::Serve(args) => serve::run(args, env.unwrap_or_default()).await,
                Command::Client(cmd) => {
                    let global = self.global.with(cmd.connection());
                    client::run(*cmd, global).await
                }
                Command::Bench(args) => {
                    let global = self.global.with(&args.connection);
                    bench::run(*args, global).await
                }
                Command::Manual(cmd) => manual::run(cmd),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// `docs/cli.md` has a section per subcommand that names each of its
    /// flags, and no section for a command that does not exist.
    #[test]
    fn the_cli_docs_cover_every_command_and_flag() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cli.md");
        let docs = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let cli = Cli::command();
        let mut names = Vec::new();
        for sub in cli.get_subcommands() {
            let name = sub.get_name();
            names.push(name.to_string());
            let heading = format!("\n## joblog {name}");
            let Some(start) = docs.find(&heading) else {
                panic!("docs/cli.md has no `## joblog {name}` section");
            };
            let section = &docs[start + heading.len()..];
            let section = &section[..section.find("\n## ").unwrap_or(section.len())];
            for arg in sub.get_arguments().filter(|a| !a.is_global_set()) {
                let named = match (arg.get_long(), arg.get_id().as_str()) {
                    (Some(long), _) => section.contains(&format!("--{long}")),
                    // Positional: its value name (ID, CMD), or else each
                    // value it can take (psu, ingest).
                    (None, id) => {
                        let value = arg
                            .get_value_names()
                            .and_then(|v| v.first().map(|s| s.to_string()))
                            .unwrap_or_else(|| id.to_uppercase());
                        let choices = arg.get_possible_values();
                        section.contains(&value)
                            || (!choices.is_empty()
                                && choices.iter().all(|c| section.contains(c.get_name())))
                    }
                };
                // `joblog serve`'s settings are all in configuration.md.
                let in_settings = name == "serve" && docs.contains("configuration.md");
                assert!(
                    named || in_settings,
                    "docs/cli.md's `joblog {name}` section does not mention {}",
                    arg.get_long()
                        .map_or(arg.get_id().to_string(), |l| format!("--{l}"))
                );
            }
        }
        for line in docs.lines().filter_map(|l| l.strip_prefix("## joblog ")) {
            let name = line.split_whitespace().next().unwrap_or_default();
            assert!(
                names.iter().any(|n| n == name),
                "docs/cli.md documents `joblog {name}`, which does not exist"
            );
        }
    }

    /// `joblog serve --help` lists what serve uses: its settings and the
    /// bootstrap token's global options, not the client's `--server` and
    /// `--cacert`, which serve would ignore.
    #[test]
    fn serve_takes_no_client_options() {
        let mut cli = Cli::command();
        cli.build();
        let serve = cli.find_subcommand_mut("serve").unwrap();
        let help = serve.render_long_help().to_string();
        for option in ["--server", "--cacert"] {
            assert!(
                !help.contains(option),
                "serve's help offers {option}:\n{help}"
            );
        }
        for option in ["--token ", "--token-file", "--listen", "--config"] {
            assert!(help.contains(option), "serve's help lacks {option}");
        }
        let e = Cli::try_parse_from(["joblog", "serve", "--server", "http://x:1"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::UnknownArgument);
    }

    /// The client's options work before the command name and after it
    /// (after wins), also after a token subcommand's name.
    #[test]
    fn client_options_go_before_or_after_the_command() {
        let server_of = |args: &[&str]| {
            let cli = Cli::try_parse_from(args).unwrap();
            match cli.command {
                Command::Client(cmd) => {
                    let global = cli.global.with(cmd.connection());
                    (global.server, global.cacert)
                }
                Command::Serve(_) | Command::Bench(_) | Command::Manual(_) => {
                    panic!("{args:?}: not a client command")
                }
            }
        };
        let x = ("http://x:1".to_string(), None);
        assert_eq!(server_of(&["joblog", "--server", "http://x:1", "jobs"]), x);
        assert_eq!(server_of(&["joblog", "jobs", "--server", "http://x:1"]), x);
        assert_eq!(
            server_of(&[
                "joblog",
                "--server",
                "http://y:2",
                "show",
                "7",
                "--server",
                "http://x:1"
            ]),
            x
        );
        let (server, cacert) = server_of(&[
            "joblog",
            "token",
            "list",
            "--server",
            "http://x:1",
            "--cacert",
            "ca.pem",
        ]);
        assert_eq!(server, "http://x:1");
        assert_eq!(cacert, Some("ca.pem".into()));
        let (server, _) = server_of(&["joblog", "token", "--server", "http://x:1", "list"]);
        assert_eq!(server, "http://x:1");
    }

    /// serve's bootstrap token comes from the global options, with the
    /// flag it came from, before or after the command name.
    #[test]
    fn serve_gets_the_bootstrap_token_from_the_global_options() {
        use crate::config::layers::{Layers, Origin};
        for args in [
            ["joblog", "--token-file", "/t", "serve"],
            ["joblog", "serve", "--token-file", "/t"],
        ] {
            let Command::Serve(serve) = Cli::try_parse_from(args).unwrap().command else {
                panic!("{args:?}: not serve");
            };
            let mut layers = Layers::default();
            serve.add_to(&mut layers);
            assert_eq!(
                layers.get::<std::path::PathBuf>("token_file").unwrap(),
                Some("/t".into()),
                "{args:?}"
            );
            assert!(layers.origins().contains(&Origin::Flag("token-file")));
        }
    }
}
