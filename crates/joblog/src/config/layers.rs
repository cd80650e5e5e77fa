//! Where a setting's value comes from: `joblog.toml` < `JOBLOG_*`
//! environment < flags. Values stay text until the setting's own type
//! parses them, so an error can name the layer that gave the bad value.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::settings::DECLARED;
use super::value::{shown, SettingValue, SinkList};

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
    /// Every origin that gave a value, also those overridden since.
    origins: Vec<Origin>,
}

impl Layers {
    /// Sets `key` from a higher layer than any before.
    pub fn give(&mut self, key: &'static str, text: String, origin: Origin) {
        self.origins.push(origin.clone());
        self.given.insert(key, (text, origin));
    }

    /// Every origin that gave a value, in the order given.
    pub fn origins(&self) -> &[Origin] {
        &self.origins
    }

    /// Adds the settings of a `joblog.toml`. Unknown keys are an error, so
    /// that a typo does not silently fall back to a default.
    pub fn add_file(&mut self, path: &Path, text: &str) -> anyhow::Result<()> {
        let table: toml::Table = toml::from_str(text).map_err(|e| syntax_error(path, text, &e))?;
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

    /// Adds every setting's environment variable, read through `var` (the
    /// server's snapshot of its environment): the one path by which the
    /// settings see the environment.
    pub fn add_env(&mut self, var: impl Fn(&str) -> Option<String>) {
        for d in DECLARED {
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
            // A `"""` or `'''` string left open takes the lines below it,
            // the token's perhaps, as its value: never quoted.
            Err(_) if text.contains(['\n', '\r']) => {
                bail!("{key} (from {origin}): {} is not valid here", shown(text))
            }
            Err(e) => bail!("{key} (from {origin}): {e}"),
        }
    }
}

/// A file that is not TOML. The parser's own text quotes the line at
/// fault, which may hold the token or a database password: this says
/// where and what was wrong, never the line.
fn syntax_error(path: &Path, text: &str, e: &toml::de::Error) -> anyhow::Error {
    let at = match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!(", line {line}, column {column}")
        }
        None => String::new(),
    };
    anyhow::anyhow!(
        "invalid configuration file {}{at}: {}",
        path.display(),
        unquoted(e.message().trim()).replace('\n', "; ")
    )
}

/// The parser's message without what it quotes between backticks (`` `…` ``):
/// a number too large for TOML (an unquoted token) is quoted whole there.
fn unquoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for (i, part) in message.split('`').enumerate() {
        out.push_str(if i % 2 == 1 { "…" } else { part });
    }
    out
}

/// Settings holding a secret: only ever text, never quoted in errors, and
/// a file that sets one must be closed to others (`serve::run_as`).
pub(crate) const SECRETS: &[&str] = &[
    "token",
    "database",
    "notify.smtp_url",
    "auth.oidc.client_secret",
];

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
        // `node = "…"`: the name's key before `[node]` held labels too.
        let key = if key == "node" && !value.is_table() {
            "node.name".to_string()
        } else {
            key
        };
        let text = match value {
            // A node's labels as a table, `labels = { role = "db" }`.
            toml::Value::Table(t) if key == "node.labels" => {
                let mut items = Vec::new();
                for (k, v) in t {
                    match v {
                        toml::Value::String(v) => items.push(format!("{k}={v}")),
                        _ => bail!(
                            "node.labels.{k}: must be a quoted string ({k} = \"…\"), a label's value is text"
                        ),
                    }
                }
                items.join(",")
            }
            // Claim values and roles as a table: on as JSON, as values
            // may hold the `,` and `=` of the text form.
            toml::Value::Table(t) if key == "auth.oidc.roles" => serde_json::to_string(&t)?,
            toml::Value::Table(t) => {
                flatten(&key, t, out)?;
                continue;
            }
            toml::Value::String(s) => s,
            // A secret is text: `token = 1.5e40` must not become a
            // 41-digit token, and the value is never quoted back.
            _ if SECRETS.contains(&key.as_str()) => {
                bail!("{key}: must be a quoted string ({key} = \"…\"), not a number or other value")
            }
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            toml::Value::Datetime(d) => d.to_string(),
            // A list of tables (`[[logging.sinks]]`) goes on as JSON, to
            // the one setting that takes one.
            toml::Value::Array(items)
                if DECLARED
                    .iter()
                    .any(|d| d.key == key && d.kind == SinkList::KIND) =>
            {
                serde_json::to_string(&items)?
            }
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

    /// An unquoted token is refused, without its value in the message.
    #[test]
    fn a_secret_must_be_a_string() {
        for (text, value) in [
            (
                "token = 123456789012345678901234567890123\n",
                "123456789012345678901234567890123",
            ),
            ("token = 1.5e40\n", "1.5e40"),
            ("database = 5432\n", "5432"),
            ("token = true\n", "true"),
        ] {
            let e = format!("{:#}", file(text).expect_err(text));
            // A number too large for TOML is refused by the parser, by
            // place, the number not quoted.
            assert!(
                e.contains("must be a quoted string") || e.contains(", line 1, column 9: "),
                "{e}"
            );
            assert!(!e.contains(value), "{e}");
            assert!(!e.contains("15000000000000000"), "{e}");
        }
        let layers = file("token = \"a-long-enough-token-of-thirty-two-chars\"\n").unwrap();
        assert!(layers.get::<String>("token").unwrap().is_some());
    }

    #[test]
    fn tables_become_dotted_keys_and_numbers_stay_numbers() {
        let layers = file("listen = \"0.0.0.0:1\"\n[log]\nmax_records = 5\n").unwrap();
        assert_eq!(layers.get::<u64>("log.max_records").unwrap(), Some(5));
        assert_eq!(layers.get::<u64>("log.max_bytes").unwrap(), None);
    }

    /// The file's table of roles keeps values with `,` and `=` (an LDAP
    /// group's name), which the text form cannot.
    #[test]
    fn roles_come_as_a_table_whose_values_may_hold_commas() {
        use super::super::value::RoleMap;
        use joblog_core::Role;
        let layers =
            file("[auth.oidc.roles]\n\"CN=ops,OU=groups\" = \"operator\"\nadmins = \"admin\"\n")
                .unwrap();
        let roles = layers.get::<RoleMap>("auth.oidc.roles").unwrap().unwrap();
        assert_eq!(
            roles.0,
            vec![
                ("CN=ops,OU=groups".to_string(), Role::Operator),
                ("admins".to_string(), Role::Admin)
            ]
        );
        let bad = file("[auth.oidc.roles]\nops = \"root\"\n").unwrap();
        let e = bad.get::<RoleMap>("auth.oidc.roles").unwrap_err();
        assert!(format!("{e:#}").contains("not a role"), "{e:#}");
    }

    #[test]
    fn a_node_is_named_and_labelled_under_node_or_by_its_old_key() {
        let layers =
            file("[node]\nname = \"db-1\"\nlabels = { role = \"db\", os = \"linux\" }\n").unwrap();
        assert_eq!(
            layers.get::<String>("node.name").unwrap().as_deref(),
            Some("db-1")
        );
        let labels = layers
            .get::<joblog_core::Labels>("node.labels")
            .unwrap()
            .unwrap();
        assert_eq!(labels.canonical(), "os=linux,role=db");
        let layers = file("node = \"db-1\"\n").unwrap();
        assert_eq!(
            layers.get::<String>("node.name").unwrap().as_deref(),
            Some("db-1")
        );
        let layers = file("[node]\nlabels = \"role=db\"\n").unwrap();
        assert!(layers
            .get::<joblog_core::Labels>("node.labels")
            .unwrap()
            .is_some());
        let e = format!("{:#}", file("[node]\nlabels = { role = 1 }\n").unwrap_err());
        assert!(
            e.contains("node.labels.role: must be a quoted string"),
            "{e}"
        );
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
    fn a_malformed_line_is_located_but_never_quoted() {
        for text in [
            "listen = \"127.0.0.1:1\"\ntoken = hunter2-secret-value\n",
            "token = \"hunter2-secret-value\n",
            "database = postgres://u:hunter2-secret-value@h/db\n",
            "token = 'hunter2-secret-value' x\n",
        ] {
            let e = format!("{:#}", file(text).unwrap_err());
            assert!(!e.contains("hunter2"), "{e}");
            assert!(e.contains("joblog.toml, line "), "{e}");
        }
        // A multi-line string left open takes the token's line with it.
        let layers = file("kill_grace = '''\ntoken = \"hunter2-secret-value\"\n'''").unwrap();
        let e = layers
            .get::<Duration>("kill_grace")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("hunter2") && e.contains("kill_grace"), "{e}");
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
