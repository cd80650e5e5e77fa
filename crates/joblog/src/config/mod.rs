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
pub(crate) mod value;

use std::path::PathBuf;

use anyhow::Context;

pub use args::ServeArgs;
pub use settings::Settings;

/// What the global options give the server: `--token`, `--token-file`.
#[derive(Debug, Default)]
pub struct GlobalSecrets {
    pub token: Option<String>,
    pub token_file: Option<PathBuf>,
}

/// Reads every layer: the file (`--config`, or `./joblog.toml` when it
/// exists), the environment (through `env`) and the flags.
pub fn load(
    args: &ServeArgs,
    global: GlobalSecrets,
    env: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<Settings> {
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
    layers.add_env(env);
    args.add_to(&mut layers);
    if let Some(token) = global.token.filter(|t| !t.is_empty()) {
        layers.give("token", token, layers::Origin::Flag("token"));
    }
    if let Some(path) = global.token_file {
        layers.give(
            "token_file",
            path.display().to_string(),
            layers::Origin::Flag("token-file"),
        );
    }
    Settings::resolve(&layers)
}
