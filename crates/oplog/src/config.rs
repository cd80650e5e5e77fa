//! The `[logging]` configuration: which sinks there are, what each takes
//! and how it behaves when full. One shape for `joblog.toml` and for the
//! admin endpoint's JSON; checked whole before anything changes, so an
//! invalid one is refused with a message naming the sink and the field.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::entry::{Level, Log};
use super::format::Format;
use super::queue::Overflow;
use super::sinks::{Compression, Rotation};

/// The most entries a sink's queue may hold: its channel is allocated at
/// that size, so an unbounded one would let a configuration (a file, or
/// `PUT /api/v1/logging`) abort the server on allocation. A million
/// access-log lines is far beyond any burst a queue should absorb.
pub const MAX_QUEUE: usize = 1 << 20;

/// Default capacity of a sink's queue, in entries.
pub const DEFAULT_QUEUE: usize = 8192;
/// Default slow-log threshold.
pub const DEFAULT_SLOW: Duration = Duration::from_secs(1);

/// The `[logging]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoggingConfig {
    /// Directory of file sinks with a relative path. Default:
    /// `<data-dir>/logs`.
    #[serde(default)]
    pub dir: Option<PathBuf>,
    /// Requests slower than this to answer go to the slow log (`1s`,
    /// `250ms`).
    #[serde(default = "default_slow", with = "duration_text")]
    pub slow_threshold: Duration,
    /// Entries each sink's queue holds (a sink can set its own).
    #[serde(default = "default_queue")]
    pub queue: usize,
    /// What a full queue does: `block` (nothing lost; the server waits for
    /// the sink) or `drop_newest` (never waits; drops are counted and
    /// reported). A sink can set its own.
    #[serde(default = "default_overflow")]
    pub overflow: Overflow,
    /// The sinks; absent: [`default_sinks`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sinks: Option<Vec<SinkConfig>>,
}

impl Default for LoggingConfig {
    fn default() -> Self {
        LoggingConfig {
            dir: None,
            slow_threshold: DEFAULT_SLOW,
            queue: DEFAULT_QUEUE,
            overflow: Overflow::Block,
            sinks: None,
        }
    }
}

fn default_slow() -> Duration {
    DEFAULT_SLOW
}
fn default_queue() -> usize {
    DEFAULT_QUEUE
}
fn default_overflow() -> Overflow {
    Overflow::Block
}

/// Durations as people write them: `1s`, `250ms`.
mod duration_text {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        joblog_core::parse_duration(&text).map_err(serde::de::Error::custom)
    }
}

/// Where a sink writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SinkKind {
    File,
    Stdout,
    Stderr,
    Syslog,
    /// The joblog database: the audit log only, for `GET /api/v1/audit`
    /// and the web UI's Audit page.
    Database,
}

/// One `[[logging.sinks]]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SinkConfig {
    /// Names the sink in metrics and messages. Default: a file's name
    /// without `.log`, else the kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub kind: SinkKind,
    /// Which logs it takes: `access`, `audit`, `error`, `slow`, `server`.
    pub logs: Vec<Log>,
    /// Entries below this level are left out. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_level: Option<Level>,
    /// Entry types left out: exact (`GET /healthz`) or a prefix ending in
    /// `*` (`token.*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
    /// `json` (default) or `human` (default for stderr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<Format>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overflow: Option<Overflow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<usize>,
    /// file: the file, relative to `dir` unless absolute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// file: start a new file before this size is passed (`100MiB`;
    /// `off`: never by size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotate_size: Option<String>,
    /// file: start a new file each day (UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotate_daily: Option<bool>,
    /// file: rotated files kept (default 14).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep: Option<usize>,
    /// file: `zstd` (default), `gzip` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compress: Option<Compression>,
    /// file: the path may be something other than a regular file (a
    /// FIFO, `/dev/stderr`). Off by default: such a path is refused,
    /// since a FIFO nobody reads would block a writer. When on, it is
    /// opened and written without ever waiting (a full FIFO or one with
    /// no reader loses entries, counted), and never rotated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub special_file: Option<bool>,
    /// syslog: `/dev/log` (default), a socket path, `unix:///path` or
    /// `udp://host:514`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// syslog: `daemon` (default), `user`, `auth`, `local0`…`local7`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facility: Option<String>,
}

impl SinkConfig {
    pub fn new(kind: SinkKind, logs: &[Log]) -> SinkConfig {
        SinkConfig {
            name: None,
            kind,
            logs: logs.to_vec(),
            min_level: None,
            ignore: Vec::new(),
            format: None,
            overflow: None,
            queue: None,
            path: None,
            rotate_size: None,
            rotate_daily: None,
            keep: None,
            compress: None,
            special_file: None,
            address: None,
            facility: None,
        }
    }

    fn file(name: &str, log: Log) -> SinkConfig {
        SinkConfig {
            path: Some(PathBuf::from(format!("{name}.log"))),
            ..SinkConfig::new(SinkKind::File, &[log])
        }
    }
}

/// The sinks when none are configured: JSON-lines files `access.log`,
/// `audit.log`, `error.log` and `slow.log` in the logs directory; the
/// error and server logs on stderr as human text; the audit log in the
/// database, for the API and the web UI.
pub fn default_sinks() -> Vec<SinkConfig> {
    vec![
        SinkConfig::file("access", Log::Access),
        SinkConfig::file("audit", Log::Audit),
        SinkConfig::file("error", Log::Error),
        SinkConfig::file("slow", Log::Slow),
        SinkConfig::new(SinkKind::Stderr, &[Log::Error, Log::Server]),
        SinkConfig::new(SinkKind::Database, &[Log::Audit]),
    ]
}

/// A file sink's default rotation: at 100 MiB and daily, 14 kept, zstd.
pub const DEFAULT_ROTATION: Rotation = Rotation {
    max_bytes: Some(100 << 20),
    daily: true,
    keep: 14,
    compress: Compression::Zstd,
};
