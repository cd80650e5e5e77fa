//! From settings to a node's configuration: settings checked against each
//! other (and for values that would make the server unusable), what
//! defaults to other settings derived (the database from the data dir, the
//! node from the host and port), and the data directory and a SQLite file
//! made absolute, once, so that no path handed on depends on a working
//! directory.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use joblog_api::limits::Limits;
use joblog_api::{ApiOptions, SessionOptions};
use joblog_engine::EngineConfig;
use joblog_oplog::LoggingConfig;
use joblog_pipeline::LogLimits;
use joblog_store::{Database, GroomPolicy, SyncMode};

use super::secrets::{bootstrap_token, database_password};
use crate::config::value::shown;
use crate::config::Settings;
use crate::http::HttpLimits;

/// The resolved configuration of one node.
#[derive(Debug)]
pub(crate) struct ServeConfig {
    pub(super) listen: SocketAddr,
    /// Absolute.
    pub(super) data_dir: PathBuf,
    pub(super) database: String,
    /// The database's file when it is SQLite, absolute.
    pub(super) sqlite_file: Option<PathBuf>,
    pub(super) api: ApiOptions,
    pub(super) http: HttpLimits,
    /// Certificate and key files, for HTTPS.
    pub(super) tls: Option<(PathBuf, PathBuf)>,
    pub(super) sync: SyncMode,
    pub(super) grace_period: Duration,
    pub(super) engine: EngineConfig,
    pub(super) retention: Option<(GroomPolicy, Duration, Duration)>,
    /// Audit entries older than this are deleted every `.1` (`None`: kept).
    pub(super) audit_retention: Option<(Duration, Duration)>,
    pub(super) logging: LoggingConfig,
    /// The bootstrap token's file, kept from `jobs.run_as`.
    pub(super) token_file: Option<PathBuf>,
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Checks the settings against each other and derives what defaults to
/// other settings (the database from the data dir, the node from the port).
pub(crate) fn resolve(s: Settings) -> anyhow::Result<ServeConfig> {
    s.check_ranges()?;
    let listen = s.listen;
    let token = bootstrap_token(s.token.clone(), s.token_file.as_deref())?;
    if !listen.ip().is_loopback() && token.is_none() {
        bail!(
            "refusing to listen on {listen} without an API token: set token_file (or JOBLOG_TOKEN), or listen on 127.0.0.1"
        );
    }
    let oidc = oidc(&s, public_url(s.http_public_url.as_deref())?.as_deref())?;
    let tls = match (s.tls_cert.clone(), s.tls_key.clone()) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => bail!("tls_cert and tls_key go together: set both, or neither"),
    };
    let (http, limits) = http_limits(&s)?;
    let logging = logging(&s)?;
    let data_dir = absolute("data_dir", &s.data_dir)?;
    let (database, sqlite_file) = match s.database {
        None => {
            let file = data_dir.join("joblog.db");
            (format!("sqlite://{}", file.display()), Some(file))
        }
        Some(url) => match Database::of(&url)? {
            Database::Postgres => (url, None),
            Database::Sqlite(file) => {
                let file = absolute("database", file)?;
                (format!("sqlite://{}", file.display()), Some(file))
            }
        },
    };
    if s.log_tail_records as u64 >= s.log_max_records {
        bail!("log.tail_records must be smaller than log.max_records");
    }
    let node = s
        .node
        .unwrap_or_else(|| format!("{}:{}", hostname(), listen.port()));
    let mut engine = EngineConfig::new(node, data_dir.clone());
    engine.labels = s.node_labels.clone();
    engine.paused_at_start = s.scheduler_paused_at_start;
    engine.max_concurrency = s.max_concurrency;
    engine.heartbeat_timeout = s.heartbeat_timeout;
    engine.kill_grace = s.kill_grace;
    engine.max_queued = s.max_queued;
    engine.min_free_bytes = s.store_min_free_bytes.0;
    engine.max_schedules = s.max_schedules;
    engine.seal = s.log_seal;
    engine.notify = joblog_engine::NotifyConfig {
        public_url: public_url(s.http_public_url.as_deref())?,
        retry_for: s.notify_retry_for,
        allow_private_targets: s.notify_allow_private_targets,
        timeout: s.notify_timeout,
        smtp_url: s.notify_smtp_url.clone().filter(|u| !u.trim().is_empty()),
        smtp_from: s
            .notify_smtp_from
            .clone()
            .unwrap_or_else(|| format!("joblog@{}", hostname())),
    };
    // `joblog serve` is the engine's alone: it reaps every orphan it is handed.
    engine.reap_all_children = true;
    engine.run_as = s
        .jobs_run_as
        .as_deref()
        .filter(|u| !u.is_empty())
        .map(super::run_as::look_up)
        .transpose()?;
    engine.max_result_bytes = s.max_result.0;
    engine.server_secrets = token
        .iter()
        .cloned()
        .chain(database_password(&database))
        .chain(
            engine
                .notify
                .smtp_url
                .as_deref()
                .and_then(database_password),
        )
        .collect();
    engine.log_limits = LogLimits {
        max_records: s.log_max_records,
        max_bytes: s.log_max_bytes.0,
        tail_records: s.log_tail_records,
        ..LogLimits::default()
    };
    let retention = match (s.retention_older_than, s.retention_keep_per_name) {
        (None, None) => None,
        (older, keep) => Some((
            GroomPolicy {
                finished_before: None,
                keep_per_name: keep,
            },
            older.unwrap_or(Duration::ZERO),
            s.retention_every,
        )),
    };
    Ok(ServeConfig {
        listen,
        data_dir,
        database,
        sqlite_file,
        api: ApiOptions {
            token,
            allowed_hosts: s.allowed_hosts.0,
            limits,
            max_job_names: s.metrics_max_job_names,
            sessions: SessionOptions {
                idle_timeout: s.auth_session_idle_timeout,
                lifetime: s.auth_session_lifetime,
                // Served over HTTPS here, or behind a proxy that is.
                secure: tls.is_some()
                    || s.http_public_url
                        .as_deref()
                        .is_some_and(|u| u.trim_start().starts_with("https:")),
            },
            oidc,
        },
        http,
        tls,
        sync: s.sync,
        grace_period: s.grace_period,
        engine,
        retention,
        audit_retention: (!s.retention_audit.is_zero())
            .then_some((s.retention_audit, s.retention_every)),
        logging,
        token_file: s
            .token_file
            .as_deref()
            .map(|f| absolute("token_file", f))
            .transpose()?,
    })
}

/// The `[logging]` settings as the logs take them, the directory made
/// absolute. Also read again on SIGHUP.
pub(crate) fn logging(s: &Settings) -> anyhow::Result<LoggingConfig> {
    Ok(LoggingConfig {
        dir: s
            .logging_dir
            .as_deref()
            .map(|d| absolute("logging.dir", d))
            .transpose()?,
        slow_threshold: s.logging_slow_threshold,
        queue: s.logging_queue,
        overflow: s.logging_overflow,
        sinks: s.logging_sinks.0.clone(),
    })
}

/// `path` made absolute against the server's working directory at start
/// (without resolving links): jobs run in directories of their own, so a
/// relative path handed to one (`JOBLOG_RESULT`) would point elsewhere.
fn absolute(setting: &str, path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path)
        .with_context(|| format!("{setting}: cannot use {}", shown(&path.to_string_lossy())))
}

/// The limits on connections and requests (each one's range, which keeps
/// out a value that would make the server unusable, is declared with it).
fn http_limits(s: &Settings) -> anyhow::Result<(HttpLimits, Limits)> {
    let size = |b: crate::config::value::ByteSize| usize::try_from(b.0).unwrap_or(usize::MAX);
    Ok((
        HttpLimits {
            max_connections: s.http_max_connections,
            max_connections_per_address: s.http_max_connections_per_address,
            max_body_bytes: size(s.http_max_body_bytes),
            header_read_timeout: s.http_header_read_timeout,
            max_header_bytes: size(s.http_max_header_bytes),
        },
        Limits {
            request_timeout: s.http_request_timeout,
            max_uri_bytes: size(s.http_max_uri_bytes),
            max_body_bytes: size(s.http_max_body_bytes),
            max_viewers: s.http_max_viewers,
            max_viewers_per_job: s.http_max_viewers_per_job,
            max_viewers_per_identity: s.http_max_viewers_per_identity,
        },
    ))
}

/// `auth.oidc.*` as the API takes it, when an issuer is set: checked
/// whole here, so that a server that cannot sign anyone in does not start.
fn oidc(
    s: &Settings,
    public_url: Option<&str>,
) -> anyhow::Result<Option<std::sync::Arc<joblog_api::Oidc>>> {
    // A text setting given, and not blank.
    fn set(v: &Option<String>) -> Option<&str> {
        v.as_deref().map(str::trim).filter(|t| !t.is_empty())
    }
    let Some(issuer) = set(&s.auth_oidc_issuer) else {
        return Ok(None);
    };
    let Some(client_id) = set(&s.auth_oidc_client_id) else {
        bail!("auth.oidc.issuer is set, so auth.oidc.client_id must be too: the client joblog is registered as at the provider");
    };
    let Some(public_url) = public_url else {
        bail!("auth.oidc.issuer is set, so http.public_url must be too: the provider sends people back to <public_url>/api/v1/session/oidc/callback");
    };
    if s.auth_oidc_roles.0.is_empty() {
        bail!("auth.oidc.roles is empty, so single sign-on would refuse everyone: map values of the claim {:?} to roles (ops=operator,joblog-admins=admin)", s.auth_oidc_role_claim);
    }
    let options = joblog_api::OidcOptions {
        issuer: issuer.to_string(),
        client_id: client_id.to_string(),
        client_secret: s
            .auth_oidc_client_secret
            .clone()
            .filter(|c| !c.trim().is_empty()),
        // `openid` the client asks for itself.
        scopes: s
            .auth_oidc_scopes
            .split([' ', ','])
            .filter(|scope| !scope.is_empty() && *scope != "openid")
            .map(str::to_string)
            .collect(),
        role_claim: s.auth_oidc_role_claim.clone(),
        roles: s.auth_oidc_roles.0.clone(),
        name_claim: s.auth_oidc_name_claim.clone(),
        label: s.auth_oidc_label.clone(),
        public_url: public_url.to_string(),
    };
    let oidc = joblog_api::Oidc::new(options).map_err(anyhow::Error::msg)?;
    Ok(Some(std::sync::Arc::new(oidc)))
}

/// `http.public_url`: an `http` or `https` URL, kept without its trailing
/// slash (links are made by appending `/jobs/ID`); empty is unset.
fn public_url(url: Option<&str>) -> anyhow::Result<Option<String>> {
    let Some(url) = url.map(str::trim).filter(|u| !u.is_empty()) else {
        return Ok(None);
    };
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    match rest {
        Some(rest) if !rest.is_empty() && !url.contains(['?', '#', ' ']) => {
            Ok(Some(url.trim_end_matches('/').to_owned()))
        }
        _ => bail!(
            "http.public_url must be an http or https URL without a query, such as https://joblog.example.com (got {})",
            shown(url)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values that would panic a task or make the server unusable are
    /// refused at load, naming the setting.
    #[test]
    fn unusable_values_are_refused_at_load_naming_the_setting() {
        use crate::config::layers::{Layers, Origin};
        let resolve_with = |pairs: &[(&'static str, &str)]| {
            let mut layers = Layers::default();
            for (key, value) in pairs {
                layers.give(key, value.to_string(), Origin::Flag("test"));
            }
            resolve(Settings::resolve(&layers).unwrap()).map(|_| ())
        };
        assert!(resolve_with(&[]).is_ok());
        for (pairs, named) in [
            (&[("retention.every", "0s")][..], "retention.every"),
            (
                &[("http.request_timeout", "30s")][..],
                "http.request_timeout",
            ),
            (
                &[("http.header_read_timeout", "0s")][..],
                "http.header_read_timeout",
            ),
            (&[("http.max_connections", "0")][..], "http.max_connections"),
            (
                &[("http.max_connections", "18446744073709551615")][..],
                "http.max_connections",
            ),
            (
                &[("http.max_header_bytes", "1KiB")][..],
                "http.max_header_bytes",
            ),
            (&[("max_queued", "0")][..], "max_queued"),
            (&[("log.max_bytes", "10")][..], "log.max_bytes"),
            (&[("tls_cert", "/x.pem")][..], "tls_cert and tls_key"),
            // Single sign-on needs its client, its way back and roles.
            (
                &[("auth.oidc.issuer", "https://idp")][..],
                "auth.oidc.client_id",
            ),
            (
                &[
                    ("auth.oidc.issuer", "https://idp"),
                    ("auth.oidc.client_id", "joblog"),
                ][..],
                "http.public_url",
            ),
            (
                &[
                    ("auth.oidc.issuer", "https://idp"),
                    ("auth.oidc.client_id", "joblog"),
                    ("http.public_url", "https://joblog.example.com"),
                ][..],
                "auth.oidc.roles",
            ),
            (
                &[
                    ("auth.oidc.issuer", "not a url"),
                    ("auth.oidc.client_id", "joblog"),
                    ("http.public_url", "https://joblog.example.com"),
                    ("auth.oidc.roles", "ops=operator"),
                ][..],
                "auth.oidc.issuer",
            ),
        ] {
            let e = resolve_with(pairs).unwrap_err().to_string();
            assert!(e.contains(named), "{pairs:?}: {e}");
        }
        assert!(resolve_with(&[
            ("auth.oidc.issuer", "https://login.example.com/realms/main"),
            ("auth.oidc.client_id", "joblog"),
            ("http.public_url", "https://joblog.example.com"),
            ("auth.oidc.roles", "ops=operator"),
        ])
        .is_ok());
    }

    /// Jobs run in directories of their own: the data directory and a
    /// SQLite file are absolute, from the server's working directory.
    #[test]
    fn paths_handed_on_are_absolute() {
        use crate::config::layers::{Layers, Origin};
        let resolve_with = |pairs: &[(&'static str, &str)]| {
            let mut layers = Layers::default();
            for (key, value) in pairs {
                layers.give(key, value.to_string(), Origin::Flag("test"));
            }
            resolve(Settings::resolve(&layers).unwrap())
        };
        let cwd = std::env::current_dir().unwrap();
        let cfg = resolve_with(&[("data_dir", "rel/data")]).unwrap();
        assert_eq!(cfg.data_dir, cwd.join("rel/data"));
        assert_eq!(cfg.engine.data_dir, cfg.data_dir);
        let db = cwd.join("rel/data/joblog.db");
        assert_eq!(cfg.database, format!("sqlite://{}", db.display()));
        assert_eq!(cfg.sqlite_file, Some(db));

        let cfg = resolve_with(&[("database", "sqlite://other.db")]).unwrap();
        let db = cwd.join("other.db");
        assert_eq!(cfg.database, format!("sqlite://{}", db.display()));
        assert_eq!(cfg.sqlite_file, Some(db));

        let url = "postgres://u@h/db";
        let cfg = resolve_with(&[("database", url)]).unwrap();
        assert_eq!((cfg.database.as_str(), cfg.sqlite_file), (url, None));
    }

    /// The session cookie is `Secure` when people reach the server over
    /// HTTPS: it serves TLS itself, or its public URL is `https`.
    #[test]
    fn the_session_cookie_is_secure_over_https_only() {
        use crate::config::layers::{Layers, Origin};
        let secure = |pairs: &[(&'static str, &str)]| {
            let mut layers = Layers::default();
            for (key, value) in pairs {
                layers.give(key, value.to_string(), Origin::Flag("test"));
            }
            resolve(Settings::resolve(&layers).unwrap())
                .unwrap()
                .api
                .sessions
                .secure
        };
        assert!(!secure(&[]));
        assert!(!secure(&[("http.public_url", "http://joblog.lan")]));
        assert!(secure(&[("http.public_url", "https://joblog.example.com")]));
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
        std::fs::write(&cert, "").unwrap();
        std::fs::write(&key, "").unwrap();
        let (cert, key) = (cert.display().to_string(), key.display().to_string());
        assert!(secure(&[
            ("tls_cert", cert.as_str()),
            ("tls_key", key.as_str())
        ]));
    }

    #[test]
    fn the_public_url_is_an_http_url_kept_without_its_trailing_slash() {
        assert_eq!(
            public_url(Some("https://joblog.example.com/")).unwrap(),
            Some("https://joblog.example.com".into())
        );
        assert_eq!(public_url(Some(" ")).unwrap(), None);
        assert_eq!(public_url(None).unwrap(), None);
        for bad in [
            "joblog.example.com",
            "ftp://x",
            "https://",
            "https://x/?a=1",
        ] {
            assert!(public_url(Some(bad)).is_err(), "{bad}");
        }
    }
}
