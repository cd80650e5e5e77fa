//! Where the server's configuration came from, for its first log line: a
//! stray `./joblog.toml` or a forgotten `JOBLOG_*` variable must not act
//! unseen. Names only, never values (the token, a database URL).

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

use super::layers::Origin;

/// The configuration file, by its absolute path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigFile {
    Read(PathBuf),
    /// `./joblog.toml` was looked for and is not there.
    Absent(PathBuf),
}

/// Every source a server's settings were read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    file: ConfigFile,
    env: BTreeSet<&'static str>,
    flags: BTreeSet<&'static str>,
}

impl Sources {
    /// From the file and every origin that gave a value (also those a
    /// higher layer overrode); `env` adds variables read outside the
    /// layers (`JOBLOG_LOG`).
    pub(super) fn new<'a>(
        file: ConfigFile,
        origins: impl IntoIterator<Item = &'a Origin>,
        env: impl IntoIterator<Item = &'static str>,
    ) -> Sources {
        let mut sources = Sources {
            file,
            env: env.into_iter().collect(),
            flags: BTreeSet::new(),
        };
        for origin in origins {
            match origin {
                // Named once, as `file`.
                Origin::File(_) => {}
                Origin::Env(var) => {
                    sources.env.insert(var);
                }
                Origin::Flag(flag) => {
                    sources.flags.insert(flag);
                }
            }
        }
        sources
    }

    /// The configuration file read, if one was.
    pub fn config_file(&self) -> Option<&std::path::Path> {
        match &self.file {
            ConfigFile::Read(path) => Some(path),
            ConfigFile::Absent(_) => None,
        }
    }

    /// Whether the flag `--<flag>` gave a value: `--token` is in every
    /// user's `ps`, which the server warns about.
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.contains(flag)
    }
}

impl fmt::Display for Sources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            ConfigFile::Read(path) => write!(f, "configuration: file {}", path.display())?,
            ConfigFile::Absent(path) => write!(
                f,
                "configuration: no file ({} does not exist)",
                path.display()
            )?,
        }
        if self.env.is_empty() {
            f.write_str("; no JOBLOG_* variables")?;
        } else {
            let vars: Vec<&str> = self.env.iter().copied().collect();
            write!(f, "; environment {}", vars.join(", "))?;
        }
        if self.flags.is_empty() {
            f.write_str("; no flags")
        } else {
            let flags: Vec<String> = self.flags.iter().map(|fl| format!("--{fl}")).collect();
            write!(f, "; flags {}", flags.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_is_named_once_and_no_value_is() {
        let origins = [
            Origin::File("/etc/joblog.toml".into()),
            Origin::Env("JOBLOG_TOKEN"),
            Origin::Flag("listen"),
            Origin::Env("JOBLOG_TOKEN"),
            Origin::Flag("data-dir"),
        ];
        let s = Sources::new(
            ConfigFile::Read("/etc/joblog.toml".into()),
            &origins,
            ["JOBLOG_LOG"],
        );
        assert_eq!(
            s.to_string(),
            "configuration: file /etc/joblog.toml; environment JOBLOG_LOG, JOBLOG_TOKEN; flags --data-dir, --listen"
        );
        let none = Sources::new(ConfigFile::Absent("/srv/joblog.toml".into()), &[], []);
        assert_eq!(
            none.to_string(),
            "configuration: no file (/srv/joblog.toml does not exist); no JOBLOG_* variables; no flags"
        );
    }
}
