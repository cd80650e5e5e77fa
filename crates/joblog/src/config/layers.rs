//! Where a setting's value comes from: `joblog.toml` < `JOBLOG_*`
//! environment < flags. Values stay text until the setting's own type
//! parses them, so an error can name the layer that gave the bad value.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::settings::DECLARED;
use super::value::SettingValue;

/// The layer a value came from, as an error message names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File(PathBuf),
    Env(&'static str),
    Flag(&'static str),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File(path) => write!(f, "{}", path.display()),
            Origin::Env(var) => write!(f, "environment variable {var}"),
            Origin::Flag(flag) => write!(f, "--{flag}"),
        }
    }
}

/// The winning text of each setting given anywhere.
#[derive(Debug, Default)]
pub struct Layers {
    given: BTreeMap<&'static str, (String, Origin)>,
}

impl Layers {
    /// Sets `key` from a higher layer than any before.
    pub fn give(&mut self, key: &'static str, text: String, origin: Origin) {
        self.given.insert(key, (text, origin));
    }

    /// Adds the settings of a `joblog.toml`. Unknown keys are an error, so
    /// that a typo does not silently fall back to a default.
    pub fn add_file(&mut self, path: &Path, text: &str) -> anyhow::Result<()> {
        let table: toml::Table = toml::from_str(text)
            .with_context(|| format!("invalid configuration file {}", path.display()))?;
        let mut flat = Vec::new();
        flatten("", table, &mut flat)
            .with_context(|| format!("invalid configuration file {}", path.display()))?;
        for (key, value) in flat {
            let Some(declared) = DECLARED.iter().find(|d| d.key == key) else {
                bail!(
                    "invalid configuration file {}: unknown setting {key:?} (docs/configuration.md lists them)",
                    path.display()
                );
            };
            self.give(declared.key, value, Origin::File(path.to_path_buf()));
        }
        Ok(())
    }

    /// Adds the environment variables of settings that have no flag (those
    /// with a flag are read with it by the command line parser).
    pub fn add_env(&mut self, var: impl Fn(&str) -> Option<String>) {
        for d in DECLARED.iter().filter(|d| d.flag.is_none()) {
            if let Some(text) = var(d.env).filter(|t| !t.is_empty()) {
                self.give(d.key, text, Origin::Env(d.env));
            }
        }
    }

    /// The value of `key` parsed as its type, or `None` when no layer gives it.
    pub fn get<T: SettingValue>(&self, key: &str) -> anyhow::Result<Option<T>> {
        let Some((text, origin)) = self.given.get(key) else {
            return Ok(None);
        };
        match T::parse_setting(text) {
            Ok(v) => Ok(Some(v)),
            Err(e) => bail!("{key} (from {origin}): {e}"),
        }
    }
}

/// `[log] max_records = 5` → `("log.max_records", "5")`.
fn flatten(
    prefix: &str,
    table: toml::Table,
    out: &mut Vec<(String, String)>,
) -> anyhow::Result<()> {
    for (name, value) in table {
        let key = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}.{name}")
        };
        let text = match value {
            toml::Value::Table(t) => {
                flatten(&key, t, out)?;
                continue;
            }
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            toml::Value::Datetime(d) => d.to_string(),
            toml::Value::Array(_) => bail!("{key}: a list is not a value any setting takes"),
        };
        out.push((key, text));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn file(text: &str) -> anyhow::Result<Layers> {
        let mut layers = Layers::default();
        layers.add_file(Path::new("joblog.toml"), text)?;
        Ok(layers)
    }

    #[test]
    fn tables_become_dotted_keys_and_numbers_stay_numbers() {
        let layers = file("listen = \"0.0.0.0:1\"\n[log]\nmax_records = 5\n").unwrap();
        assert_eq!(layers.get::<u64>("log.max_records").unwrap(), Some(5));
        assert_eq!(layers.get::<u64>("log.max_bytes").unwrap(), None);
    }

    #[test]
    fn unknown_keys_and_bad_values_are_named_with_their_layer() {
        let e = file("[log]\nmax_record = 5\n").unwrap_err().to_string();
        assert!(e.contains("\"log.max_record\""), "{e}");
        let e = format!("{:#}", file("retention = [1]").unwrap_err());
        assert!(e.contains("list"), "{e}");
        let layers = file("kill_grace = \"soon\"").unwrap();
        let e = layers
            .get::<Duration>("kill_grace")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("kill_grace (from joblog.toml)") && e.contains("soon"),
            "{e}"
        );
    }

    #[test]
    fn a_higher_layer_wins() {
        let mut layers = file("kill_grace = \"1s\"").unwrap();
        layers.give("kill_grace", "2s".into(), Origin::Env("JOBLOG_KILL_GRACE"));
        layers.give("kill_grace", "3s".into(), Origin::Flag("kill-grace"));
        assert_eq!(
            layers.get::<Duration>("kill_grace").unwrap(),
            Some(Duration::from_secs(3))
        );
        layers.add_env(|var| (var == "JOBLOG_TOKEN").then(|| "t".to_string()));
        assert_eq!(layers.get::<String>("token").unwrap(), Some("t".into()));
    }
}
