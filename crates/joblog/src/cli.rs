//! The command line as a whole: global options and the subcommands, each
//! handed to the module that runs it.

use clap::{Parser, Subcommand};

use crate::{bench, client, config, serve};

#[derive(Parser, Debug)]
#[command(
    name = "joblog",
    version,
    about = "Run jobs and keep every line they write"
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
    #[command(flatten)]
    Client(client::ClientCommand),
    /// Run a benchmark scenario and print a Markdown table.
    Bench(bench::BenchArgs),
}

impl Cli {
    /// Runs the command on a fresh runtime; returns the process exit code.
    pub fn run(self) -> anyhow::Result<i32> {
        // Before any thread exists: the server's secrets leave its
        // environment here.
        let env = matches!(self.command, Command::Serve(_)).then(serve::take_environment);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        rt.block_on(async move {
            match self.command {
                Command::Serve(args) => {
                    let global = config::GlobalSecrets {
                        token: self.global.token,
                        token_file: self.global.token_file,
                    };
                    serve::run(args, global, env.unwrap_or_default()).await
                }
                Command::Client(cmd) => client::run(cmd, self.global).await,
                Command::Bench(args) => bench::run(args, self.global).await,
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
}
