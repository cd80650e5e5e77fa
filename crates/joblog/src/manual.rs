//! The manual shipped beside the binary: man pages and shell completions,
//! both made from the command line's one declaration (`Cli`), so neither
//! can fall behind it. The Debian package installs what these write
//! (packaging/deb/build).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{CommandFactory, Subcommand};
use clap_complete::Shell;

use crate::Cli;

#[derive(Subcommand, Debug)]
pub enum ManualCommand {
    /// Print the shell completion script for SHELL (bash, zsh, fish, …).
    Completions {
        #[arg(value_name = "SHELL")]
        shell: Shell,
    },
    /// Write the man pages of joblog and each subcommand into DIR.
    Man {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

/// Runs a manual command; returns the exit code.
pub fn run(cmd: ManualCommand) -> anyhow::Result<i32> {
    match cmd {
        ManualCommand::Completions { shell } => completions(shell, &mut io::stdout().lock()),
        ManualCommand::Man { dir } => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let pages = man_pages(&dir)
                .with_context(|| format!("cannot write man pages into {}", dir.display()))?;
            println!("{} man pages written to {}", pages.len(), dir.display());
        }
    }
    Ok(0)
}

/// Writes the completion script for `shell` to `out`.
pub fn completions(shell: Shell, out: &mut dyn Write) {
    clap_complete::generate(shell, &mut Cli::command(), "joblog", out);
}

/// Writes `joblog.1` and a page per subcommand, nested ones included
/// (`joblog-schedule-add.1`), into `dir`, which must exist; returns
/// the pages' paths, sorted.
pub fn man_pages(dir: &Path) -> io::Result<Vec<PathBuf>> {
    clap_mangen::generate_to(Cli::command(), dir)?;
    let mut pages = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("joblog") && name.ends_with(".1") {
            pages.push(path);
        }
    }
    pages.sort();
    Ok(pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command the CLI accepts, as the page name it gets:
    /// `joblog`, `joblog-run`, `joblog-schedule-add`, …
    fn page_names(cmd: &clap::Command, prefix: &str, out: &mut Vec<(String, clap::Command)>) {
        let name = if prefix.is_empty() {
            cmd.get_name().to_string()
        } else {
            format!("{prefix}-{}", cmd.get_name())
        };
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            if sub.get_name() != "help" {
                page_names(sub, &name, out);
            }
        }
        out.push((name, cmd.clone()));
    }

    #[test]
    fn every_command_has_a_man_page_naming_its_options() {
        let dir = tempfile::tempdir().unwrap();
        let pages = man_pages(dir.path()).unwrap();
        let mut commands = Vec::new();
        page_names(&Cli::command(), "", &mut commands);
        assert!(
            commands.len() > 20,
            "only {} commands found",
            commands.len()
        );
        for (name, cmd) in &commands {
            let path = dir.path().join(format!("{name}.1"));
            assert!(
                pages.contains(&path),
                "no man page {name}.1 among {pages:?}"
            );
            let page = std::fs::read_to_string(&path).unwrap();
            assert!(
                page.starts_with(".ie") || page.contains(".TH"),
                "{name}.1 is not roff"
            );
            for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
                if let Some(long) = arg.get_long() {
                    // roff escapes each '-' as "\-".
                    let flag = format!("\\-\\-{}", long.replace('-', "\\-"));
                    assert!(page.contains(&flag), "{name}.1 does not mention --{long}");
                }
            }
        }
        assert_eq!(
            pages.len(),
            commands.len(),
            "pages for commands that do not exist"
        );
    }

    #[test]
    fn every_shell_completes_every_subcommand() {
        let cli = Cli::command();
        let subs: Vec<_> = cli
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| s.get_name().to_string())
            .collect();
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut script = Vec::new();
            completions(shell, &mut script);
            let script = String::from_utf8(script).unwrap();
            for sub in &subs {
                assert!(
                    script.contains(sub.as_str()),
                    "{shell}'s completions lack `{sub}`"
                );
            }
            // A nested subcommand and a flag of one, to see the script is
            // the whole tree.
            assert!(script.contains("undrain"), "{shell}: no `nodes undrain`");
            assert!(script.contains("follow"), "{shell}: no `logs --follow`");
        }
    }
}
