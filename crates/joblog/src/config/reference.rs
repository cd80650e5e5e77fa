//! The settings reference in `docs/configuration.md`, rendered from the
//! declarations; a test keeps the docs equal to it.

use super::settings::DECLARED;

pub const BEGIN: &str =
    "<!-- settings:begin (generated from crates/joblog/src/config/settings.rs) -->";
pub const END: &str = "<!-- settings:end -->";

/// The Markdown table of every setting.
pub fn table() -> String {
    let mut out = String::from(
        "| Key (`joblog.toml`) | Environment | Flag | Type | Default | Meaning |\n\
         |---|---|---|---|---|---|\n",
    );
    for d in DECLARED {
        let flag = match d.flag {
            Some(f) => format!("`--{f}`"),
            // The bootstrap token's flags are the global ones.
            None if matches!(d.key, "token" | "token_file") => {
                format!("`--{}` (global)", d.key.replace('_', "-"))
            }
            None => "—".into(),
        };
        let default = match (d.default)() {
            text if text.is_empty() => "—".to_string(),
            text => format!("`{text}`"),
        };
        let doc = d.summary();
        out.push_str(&format!(
            "| `{}` | `{}` | {flag} | {} | {default} | {doc} |\n",
            d.key,
            d.env,
            d.kind.replace('|', "\\|"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::config::layers::Layers;
    use crate::config::Settings;

    fn repo_file(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(name)
    }

    /// Fails when the docs' table differs from the declarations; with
    /// `JOBLOG_UPDATE_DOCS=1` it rewrites the docs instead.
    #[test]
    fn the_docs_show_every_setting_as_declared() {
        let path = repo_file("docs/configuration.md");
        let docs = std::fs::read_to_string(&path).unwrap();
        let (Some(start), Some(end)) = (docs.find(BEGIN), docs.find(END)) else {
            panic!("{} has no {BEGIN} … {END} section", path.display());
        };
        let expected = format!("{BEGIN}\n{}{END}", table());
        let current = &docs[start..end + END.len()];
        if current != expected {
            if std::env::var_os("JOBLOG_UPDATE_DOCS").is_some() {
                let updated = docs.replace(current, &expected);
                std::fs::write(&path, updated).unwrap();
            } else {
                panic!(
                    "{} is out of date with the settings; run \
                     JOBLOG_UPDATE_DOCS=1 cargo test -p joblog config:: to regenerate it",
                    path.display()
                );
            }
        }
    }

    /// Every `joblog.toml` example in the docs, and the one the systemd
    /// packaging installs as `/etc/joblog/joblog.toml`, is one the server
    /// accepts.
    #[test]
    fn every_example_file_in_the_docs_is_valid() {
        let valid = |name: &str, block: &str| {
            let mut layers = Layers::default();
            layers
                .add_file(Path::new(name), block)
                .unwrap_or_else(|e| panic!("{name}: {e:#}\n{block}"));
            Settings::resolve(&layers).unwrap_or_else(|e| panic!("{name}: {e:#}\n{block}"));
        };
        let mut examples = 0;
        for name in ["README.md", "docs/configuration.md", "docs/production.md"] {
            let text = std::fs::read_to_string(repo_file(name)).unwrap();
            for block in text.split("```toml\n").skip(1) {
                valid(name, block.split("```").next().unwrap_or_default());
                examples += 1;
            }
        }
        assert!(examples >= 1, "no ```toml example found");
        let name = "packaging/systemd/joblog.toml";
        valid(name, &std::fs::read_to_string(repo_file(name)).unwrap());
    }

    #[test]
    fn names_follow_one_rule() {
        for d in DECLARED {
            let env = match d.key {
                // The URL may carry a password; the name says it is a URL.
                "database" => "JOBLOG_DATABASE_URL".to_string(),
                // Named before `[node]` held labels too.
                "node.name" => "JOBLOG_NODE".to_string(),
                key => format!("JOBLOG_{}", key.replace('.', "_").to_uppercase()),
            };
            assert_eq!(d.env, env, "{}", d.key);
            if let Some(flag) = d.flag {
                let expected = match d.key {
                    // Said as often as `--token`: `--run-as nobody`.
                    "jobs.run_as" => "run-as".to_string(),
                    "node.name" => "node".to_string(),
                    // What an operator types in a restore: `serve --paused`.
                    "scheduler.paused_at_start" => "paused".to_string(),
                    key => key.replace(['.', '_'], "-"),
                };
                assert_eq!(flag, expected, "{}", d.key);
            }
            assert!(!d.summary().is_empty(), "{} has no doc", d.key);
        }
    }
}
