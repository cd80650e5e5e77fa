//! The server's configuration: every setting declared once
//! (`settings.rs`), read from `joblog.toml` < `JOBLOG_*` < flags, typed
//! from the start (durations, sizes, addresses), and shown in
//! `docs/configuration.md` from the same declarations.

mod args;
pub(crate) mod declare;
mod layers;
#[cfg(test)]
mod reference;
mod settings;
pub(crate) mod value;

use std::path::PathBuf;

use anyhow::Context;

pub use args::ServeArgs;
pub use settings::Settings;

/// Reads every layer: the file (`--config`, or `./joblog.toml` when it
/// exists), the environment and the flags. `token` is the global
/// `--token`/`JOBLOG_TOKEN`.
pub fn load(args: &ServeArgs, token: Option<String>) -> anyhow::Result<Settings> {
    let mut layers = layers::Layers::default();
    let (path, required) = match &args.config {
        Some(p) => (p.clone(), true),
        None => (PathBuf::from("joblog.toml"), false),
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => layers.add_file(&path, &text)?,
        Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(e)
                .with_context(|| format!("cannot read configuration file {}", path.display()))
        }
    }
    layers.add_env(|var| std::env::var(var).ok());
    args.add_to(&mut layers);
    if let Some(token) = token.filter(|t| !t.is_empty()) {
        layers.give("token", token, layers::Origin::Flag("token"));
    }
    Settings::resolve(&layers)
}
