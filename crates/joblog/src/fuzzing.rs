//! A thin entry point for the fuzz targets in `fuzz/` to reach the
//! configuration's layers, which are private to this crate. Not an API:
//! hidden, and it changes with the configuration.

use std::path::Path;

use crate::config::layers::Layers;
use crate::config::Settings;

/// `text` as `joblog.toml`, read, typed and checked as `joblog serve`
/// does (nothing given by the environment or flags): `Ok`, or the error
/// as `joblog` prints it. Settings naming a `token_file` are not checked
/// further: that reads the file, and a fuzzer may name `/dev/zero`.
pub fn config_file(text: &str) -> Result<(), String> {
    let shown = |e: anyhow::Error| format!("{e:#}");
    let mut layers = Layers::default();
    layers
        .add_file(Path::new("joblog.toml"), text)
        .map_err(shown)?;
    let settings = Settings::resolve(&layers).map_err(shown)?;
    if settings.token_file.is_some() {
        return Ok(());
    }
    crate::serve::resolve::resolve(settings)
        .map(drop)
        .map_err(shown)
}
