//! The server's configuration: every setting declared once
//! (`settings.rs`), read from `joblog.toml` < `JOBLOG_*` < flags, typed
//! from the start (durations, sizes, addresses), and shown in
//! `docs/configuration.md` from the same declarations.

mod args;
pub(crate) mod declare;
pub(crate) mod layers;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod reference;
mod settings;
mod sources;
pub(crate) mod value;

use std::path::PathBuf;

use anyhow::Context;

pub use args::ServeArgs;
pub use settings::Settings;
pub use sources::{ConfigFile, Sources};

/// Reads every layer: the file (`--config`, or `./joblog.toml` when it
/// exists), the environment (through `env`) and the flags (with the
/// global `--token` and `--token-file`). Returns the settings and where
/// they came from.
pub fn load(
    args: &ServeArgs,
    env: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<(Settings, Sources)> {
    let mut layers = layers::Layers::default();
    let (path, required) = match &args.config {
        Some(p) => (p.clone(), true),
        None => (PathBuf::from("joblog.toml"), false),
    };
    // Named absolute in the log: "joblog.toml" does not say which one.
    let absolute = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
    let file = match std::fs::read_to_string(&path) {
        Ok(text) => {
            layers.add_file(&path, &text)?;
            ConfigFile::Read(absolute)
        }
        Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => {
            ConfigFile::Absent(absolute)
        }
        Err(e) => {
            return Err(e)
                .with_context(|| format!("cannot read configuration file {}", path.display()))
        }
    };
    layers.add_env(&env);
    args.add_to(&mut layers);
    // The server's log filter is read outside the layers.
    let log_filter = env("JOBLOG_LOG")
        .is_some_and(|v| !v.is_empty())
        .then_some("JOBLOG_LOG");
    let origins = layers.origins().iter().chain(args.config_origin());
    let sources = Sources::new(file, origins, log_filter);
    Ok((Settings::resolve(&layers)?, sources))
}
