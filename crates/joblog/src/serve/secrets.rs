//! The server's secrets: its bootstrap token (from `token` or
//! `token_file`) and the secret environment variables, taken out of the
//! process's environment before any thread starts and hidden from its jobs.

use anyhow::{bail, Context};

/// Shortest bootstrap token accepted: 32 characters of a random token are
/// at least 128 bits however they are written.
const MIN_TOKEN_CHARS: usize = 32;

/// Environment variables that hold the server's secrets. They are read
/// once, then removed from the process's environment, so that nothing the
/// server starts inherits them.
const SECRET_VARS: &[&str] = &["JOBLOG_TOKEN", "JOBLOG_DATABASE_URL"];

/// The prefix of the secrets this node gives schedules' runs that name
/// them (`JOBLOG_SECRET_DB_PASSWORD` is the secret `DB_PASSWORD`); taken
/// out of the environment like [`SECRET_VARS`].
pub const NODE_SECRET_PREFIX: &str = "JOBLOG_SECRET_";

/// The prefix of the lists of schedules each node secret may be given to
/// (`JOBLOG_ALLOW_SECRET_DB_PASSWORD=nightly-*,backup`).
pub const ALLOW_SECRET_PREFIX: &str = "JOBLOG_ALLOW_SECRET_";

/// The `JOBLOG_*` environment as it was when the server started.
#[derive(Debug, Default)]
pub struct Environment(std::collections::HashMap<String, String>);

impl Environment {
    pub(super) fn get(&self, var: &str) -> Option<String> {
        self.0.get(var).cloned()
    }

    /// Which schedules may be given each node secret: for the secret
    /// `NAME`, `JOBLOG_ALLOW_SECRET_NAME` lists patterns (`*`, `?`) of
    /// schedule names, separated by commas. A secret not listed is given
    /// to none.
    pub(super) fn node_secret_scopes(&self) -> std::collections::BTreeMap<String, Vec<String>> {
        self.0
            .iter()
            .filter_map(|(k, v)| {
                let name = k.strip_prefix(ALLOW_SECRET_PREFIX)?;
                let patterns = v
                    .split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned)
                    .collect();
                (!name.is_empty()).then(|| (name.to_owned(), patterns))
            })
            .collect()
    }

    /// The secrets this node holds for schedules' runs, by name.
    pub(super) fn node_secrets(&self) -> std::collections::BTreeMap<String, String> {
        self.0
            .iter()
            .filter_map(|(k, v)| {
                let name = k.strip_prefix(NODE_SECRET_PREFIX)?;
                (!name.is_empty()).then(|| (name.to_owned(), v.clone()))
            })
            .collect()
    }
}

/// Takes the server's environment before any thread starts: keeps a copy
/// of the `JOBLOG_*` variables, removes the secret ones from the process,
/// and makes the process non-dumpable, which makes `/proc/<pid>/environ`
/// (the environment as it was at exec, secrets included), `mem` and `fd`
/// readable by root only, not by the server's own jobs. Must run before
/// the runtime starts threads (changing the environment is not thread
/// safe).
pub fn take_environment() -> Environment {
    let vars = std::env::vars()
        .filter(|(k, _)| k.starts_with("JOBLOG_"))
        .collect();
    for var in SECRET_VARS {
        std::env::remove_var(var);
    }
    // Node secrets, and parameters: a job gets only its own
    // `JOBLOG_PARAM_*`, never ones the server was started with.
    let taken: Vec<String> = std::env::vars()
        .map(|(k, _)| k)
        .filter(|k| {
            k.starts_with(NODE_SECRET_PREFIX) || k.starts_with(joblog_core::params::ENV_PREFIX)
        })
        .collect();
    for var in taken {
        std::env::remove_var(var);
    }
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        eprintln!(
            "joblog: warning: cannot hide the process's memory and environment from jobs: {e}"
        );
    }
    Environment(vars)
}

/// The bootstrap token from `token` or the first line of `token_file`
/// (not both), at least [`MIN_TOKEN_CHARS`] long. Errors never quote it.
pub(super) fn bootstrap_token(
    token: Option<String>,
    file: Option<&std::path::Path>,
) -> anyhow::Result<Option<String>> {
    let token = match (token.filter(|t| !t.is_empty()), file) {
        (Some(_), Some(_)) => bail!("token and token_file are both set; keep one"),
        (Some(t), None) => t,
        (None, Some(path)) => {
            // Such a path is a quote left open in joblog.toml that took the
            // lines below (perhaps `token = …`): refused, and not quoted.
            if path.to_string_lossy().chars().any(char::is_control) {
                bail!("token_file: the path holds a line break or control character (a quote left open in joblog.toml?)");
            }
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("token_file: cannot read {}", path.display()))?;
            let line = text.lines().next().unwrap_or("").trim().to_string();
            if line.is_empty() {
                bail!("token_file: {} is empty", path.display());
            }
            line
        }
        (None, None) => return Ok(None),
    };
    if token.chars().count() < MIN_TOKEN_CHARS {
        bail!(
            "the API token is {} characters; it must be at least {MIN_TOKEN_CHARS} (make one with `openssl rand -base64 32`)",
            token.chars().count()
        );
    }
    if token.chars().any(|c| c.is_control() || c == ' ') {
        bail!("the API token must not contain spaces or control characters");
    }
    Ok(Some(token))
}

/// The password of a `postgres://user:password@…` URL, to be masked in
/// jobs' logs.
pub(super) fn database_password(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let userinfo = &rest[..rest.rfind('@')?];
    let password = userinfo.split_once(':')?.1;
    (!password.is_empty()).then(|| password.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bootstrap_token_is_long_from_one_place_and_never_quoted() {
        let long = "x".repeat(40);
        assert_eq!(
            bootstrap_token(Some(long.clone()), None).unwrap(),
            Some(long.clone())
        );
        assert_eq!(bootstrap_token(Some(String::new()), None).unwrap(), None);
        let e = bootstrap_token(Some("hunter2".into()), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 32") && !e.contains("hunter2"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, format!("{long}\n")).unwrap();
        assert_eq!(
            bootstrap_token(None, Some(&file)).unwrap(),
            Some(long.clone())
        );
        let e = bootstrap_token(Some(long), Some(&file))
            .unwrap_err()
            .to_string();
        assert!(e.contains("both"), "{e}");
        let e = format!(
            "{:#}",
            bootstrap_token(None, Some(&dir.path().join("none"))).unwrap_err()
        );
        assert!(e.contains("token_file: cannot read"), "{e}");
        // A quote left open took the next line into the path: refused
        // without quoting what it swallowed.
        let swallowed = std::path::Path::new("\ntoken = \"s3cr3t-value\"\nlisten = ");
        let e = format!("{:#}", bootstrap_token(None, Some(swallowed)).unwrap_err());
        assert!(e.contains("line break") && !e.contains("s3cr3t"), "{e}");
    }

    #[test]
    fn a_database_password_is_found_for_masking() {
        assert_eq!(
            database_password("postgres://u:p%40ss@h:5432/db"),
            Some("p%40ss".into())
        );
        assert_eq!(database_password("postgres://u@h/db"), None);
        assert_eq!(database_password("sqlite:///x/joblog.db"), None);
    }
}
