//! A `[logging]` configuration checked whole and resolved into one `Plan`
//! per sink: its filter, format, queue and where it writes, with the
//! paths an API caller may name confined to the trusted directory.

use std::path::{Path, PathBuf};

use crate::config::{
    default_sinks, LoggingConfig, SinkConfig, SinkKind, DEFAULT_ROTATION, MAX_QUEUE,
};
use crate::entry::{Level, Log};
use crate::format::Format;
use crate::queue::Overflow;
use crate::route::SinkFilter;
use crate::sinks::{Facility, Rotation, SyslogTarget};

/// Where a checked sink writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    File {
        path: PathBuf,
        rotation: Rotation,
        /// A path other than a regular file is allowed (`special_file`).
        special: bool,
    },
    Stdout,
    Stderr,
    Syslog {
        target: SyslogTarget,
        facility: Facility,
    },
    Database,
}

/// One sink, checked and resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub name: String,
    pub filter: SinkFilter,
    pub format: Format,
    pub overflow: Overflow,
    pub queue: usize,
    pub target: Target,
}

/// Checks `config` whole. `default_dir` is where relative file paths go
/// when `dir` is not set.
pub fn plan(config: &LoggingConfig, default_dir: &Path) -> Result<Vec<Plan>, String> {
    let dir = config
        .dir
        .clone()
        .unwrap_or_else(|| default_dir.to_path_buf());
    if !(1..=MAX_QUEUE).contains(&config.queue) {
        return Err(format!(
            "logging.queue must be 1 to {MAX_QUEUE} entries, not {}",
            config.queue
        ));
    }
    let defaults;
    let sinks = match &config.sinks {
        Some(sinks) => sinks,
        None => {
            defaults = default_sinks();
            &defaults
        }
    };
    let mut plans: Vec<Plan> = Vec::with_capacity(sinks.len());
    for (i, sink) in sinks.iter().enumerate() {
        let plan = plan_sink(config, sink, &dir)
            .map_err(|e| format!("logging sink {} ({:?}): {e}", i + 1, sink_label(sink)))?;
        if plans.iter().any(|p| p.name == plan.name) {
            return Err(format!(
                "two logging sinks are named {:?}: give one a different `name`",
                plan.name
            ));
        }
        if let Target::File { path, .. } = &plan.target {
            if let Some(other) = plans
                .iter()
                .find(|p| matches!(&p.target, Target::File { path: q, .. } if q == path))
            {
                return Err(format!(
                    "logging sinks {:?} and {:?} both write {}: two writers would rotate one file",
                    other.name,
                    plan.name,
                    path.display()
                ));
            }
        }
        plans.push(plan);
    }
    Ok(plans)
}

/// Holds a configuration sent through the API to the file's (`trusted`,
/// whose logging directory is `dir`): each file sink writes a regular file
/// inside `dir` (no `..`), or a file a sink of the file's configuration
/// writes, with no more than that sink allows. The API's admin cannot
/// make the server write its own database, its token file or anything
/// else outside the logs.
pub fn confine(plans: &[Plan], trusted: &[Plan], dir: &Path) -> Result<(), String> {
    for plan in plans {
        let Target::File { path, special, .. } = &plan.target else {
            continue;
        };
        let named_by_file = trusted.iter().any(|t| {
            matches!(&t.target, Target::File { path: p, special: s, .. } if p == path && (*s || !*special))
        });
        if named_by_file {
            continue;
        }
        let inside = path.starts_with(dir)
            && !path
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir));
        if !inside {
            return Err(format!(
                "logging sink {:?}: {} is outside the logging directory {}; through the API a file sink writes only inside it (or a file joblog.toml's [logging] names)",
                plan.name,
                path.display(),
                dir.display()
            ));
        }
        if *special {
            return Err(format!(
                "logging sink {:?}: `special_file` is set only in joblog.toml, not through the API",
                plan.name
            ));
        }
    }
    Ok(())
}

fn sink_label(sink: &SinkConfig) -> String {
    sink.name.clone().unwrap_or_else(|| {
        serde_json::to_value(sink.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    })
}

fn plan_sink(config: &LoggingConfig, sink: &SinkConfig, dir: &Path) -> Result<Plan, String> {
    if sink.logs.is_empty() {
        return Err(
            "`logs` is empty: name the logs it takes (access, audit, error, slow, server)".into(),
        );
    }
    for pattern in &sink.ignore {
        // All but the last character (never a byte index: `é` is two).
        let mut head = pattern.chars();
        head.next_back();
        if pattern.is_empty() || head.as_str().contains('*') {
            return Err(format!(
                "ignore entry {pattern:?}: an exact type, or a prefix ending in one `*`"
            ));
        }
    }
    if let Some(queue) = sink.queue.filter(|q| !(1..=MAX_QUEUE).contains(q)) {
        return Err(format!(
            "`queue` must be 1 to {MAX_QUEUE} entries, not {queue}"
        ));
    }
    let only = |field: &str, given: bool, kind: &str| -> Result<(), String> {
        if given {
            Err(format!("`{field}` applies to {kind} sinks only"))
        } else {
            Ok(())
        }
    };
    let is_file = sink.kind == SinkKind::File;
    only(
        "rotate_size",
        !is_file && sink.rotate_size.is_some(),
        "file",
    )?;
    only(
        "rotate_daily",
        !is_file && sink.rotate_daily.is_some(),
        "file",
    )?;
    only("keep", !is_file && sink.keep.is_some(), "file")?;
    only("compress", !is_file && sink.compress.is_some(), "file")?;
    only(
        "special_file",
        !is_file && sink.special_file.is_some(),
        "file",
    )?;
    only("path", !is_file && sink.path.is_some(), "file")?;
    let is_syslog = sink.kind == SinkKind::Syslog;
    only("address", !is_syslog && sink.address.is_some(), "syslog")?;
    only("facility", !is_syslog && sink.facility.is_some(), "syslog")?;
    let (target, default_name) = match sink.kind {
        SinkKind::File => {
            let path = sink.path.as_ref().ok_or("a file sink needs a `path`")?;
            let stem = path
                .file_name()
                .and_then(|n| n.to_str())
                .map(|n| n.strip_suffix(".log").unwrap_or(n).to_string())
                .ok_or_else(|| format!("`path` {} names no file", path.display()))?;
            let max_bytes = match &sink.rotate_size {
                Some(text) if text.trim() == "off" => None,
                Some(text) => Some(
                    joblog_core::parse_byte_size(text)
                        .map_err(|e| format!("`rotate_size`: {e}"))?,
                ),
                None => DEFAULT_ROTATION.max_bytes,
            };
            if max_bytes == Some(0) {
                return Err("`rotate_size` must be more than 0".into());
            }
            let rotation = Rotation {
                max_bytes,
                daily: sink.rotate_daily.unwrap_or(DEFAULT_ROTATION.daily),
                keep: sink.keep.unwrap_or(DEFAULT_ROTATION.keep),
                compress: sink.compress.unwrap_or(DEFAULT_ROTATION.compress),
            };
            (
                Target::File {
                    path: dir.join(path),
                    rotation,
                    special: sink.special_file.unwrap_or(false),
                },
                stem,
            )
        }
        SinkKind::Stdout => (Target::Stdout, "stdout".into()),
        SinkKind::Stderr => (Target::Stderr, "stderr".into()),
        SinkKind::Syslog => {
            let address = sink.address.as_deref().unwrap_or("/dev/log");
            let facility = sink.facility.as_deref().unwrap_or("daemon");
            (
                Target::Syslog {
                    target: SyslogTarget::parse(address).map_err(|e| format!("`address`: {e}"))?,
                    facility: Facility::parse(facility).map_err(|e| format!("`facility`: {e}"))?,
                },
                "syslog".into(),
            )
        }
        SinkKind::Database => {
            if sink.logs != [Log::Audit] {
                return Err(
                    "a database sink takes the audit log only: `logs = [\"audit\"]`".into(),
                );
            }
            (Target::Database, "database".into())
        }
    };
    let name = sink.name.clone().unwrap_or(default_name);
    if name.is_empty()
        || name.chars().count() > 64
        || name.chars().any(|c| c.is_control() || c == '"')
    {
        return Err(format!(
            "`name` {name:?}: 1 to 64 characters, no quotes or control characters"
        ));
    }
    let format = sink.format.unwrap_or(match sink.kind {
        SinkKind::Stderr => Format::Human,
        _ => Format::Json,
    });
    Ok(Plan {
        name,
        filter: SinkFilter {
            logs: sink.logs.clone(),
            min_level: sink.min_level.unwrap_or(Level::Trace),
            ignore: sink.ignore.clone(),
        },
        format,
        overflow: sink.overflow.unwrap_or(config.overflow),
        queue: sink.queue.unwrap_or(config.queue),
        target,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::sinks::Compression;

    fn parse(json: serde_json::Value) -> Result<Vec<Plan>, String> {
        let config: LoggingConfig = serde_json::from_value(json).map_err(|e| e.to_string())?;
        plan(&config, Path::new("/data/logs"))
    }

    #[test]
    fn no_configuration_gives_the_four_files_stderr_and_the_database() {
        let plans = plan(&LoggingConfig::default(), Path::new("/data/logs")).unwrap();
        let names: Vec<_> = plans.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            ["access", "audit", "error", "slow", "stderr", "database"]
        );
        assert_eq!(
            plans[0].target,
            Target::File {
                path: PathBuf::from("/data/logs/access.log"),
                rotation: DEFAULT_ROTATION,
                special: false,
            }
        );
        assert_eq!(plans[0].format, Format::Json);
        assert_eq!(plans[4].format, Format::Human);
        assert_eq!(plans[4].filter.logs, [Log::Error, Log::Server]);
    }

    #[test]
    fn a_configuration_round_trips_through_json() {
        let json = serde_json::json!({
            "dir": "/var/log/joblog",
            "slow_threshold": "250ms",
            "overflow": "drop_newest",
            "sinks": [
                {"kind": "file", "path": "access.log", "logs": ["access"], "ignore": ["GET /healthz"],
                 "rotate_size": "10MiB", "keep": 3, "compress": "gzip"},
                {"kind": "syslog", "logs": ["audit", "error"], "address": "udp://127.0.0.1:514",
                 "min_level": "warn", "overflow": "block"}
            ]
        });
        let config: LoggingConfig = serde_json::from_value(json).unwrap();
        assert_eq!(config.slow_threshold, Duration::from_millis(250));
        let back: LoggingConfig =
            serde_json::from_value(serde_json::to_value(&config).unwrap()).unwrap();
        assert_eq!(back, config);
        let plans = plan(&config, Path::new("/ignored")).unwrap();
        assert_eq!(plans[0].overflow, Overflow::DropNewest);
        assert_eq!(plans[1].overflow, Overflow::Block);
        assert_eq!(
            plans[0].target,
            Target::File {
                path: PathBuf::from("/var/log/joblog/access.log"),
                rotation: Rotation {
                    max_bytes: Some(10 << 20),
                    daily: true,
                    keep: 3,
                    compress: Compression::Gzip
                },
                special: false,
            }
        );
        assert_eq!(plans[1].filter.min_level, Level::Warn);
    }

    #[test]
    fn invalid_configurations_are_refused_naming_the_sink_and_field() {
        let refused = |json: serde_json::Value, needle: &str| {
            let e = parse(json).unwrap_err();
            assert!(e.contains(needle), "{e:?} should say {needle:?}");
        };
        refused(
            serde_json::json!({"sinks": [{"kind": "file", "logs": ["access"]}]}),
            "needs a `path`",
        );
        refused(
            serde_json::json!({"sinks": [{"kind": "stdout", "logs": ["access"], "keep": 3}]}),
            "`keep` applies to file sinks only",
        );
        refused(
            serde_json::json!({"sinks": [{"kind": "stdout", "logs": []}]}),
            "`logs` is empty",
        );
        refused(
            serde_json::json!({"sinks": [{"kind": "stdout", "logs": ["acess"]}]}),
            "unknown variant `acess`",
        );
        refused(
            serde_json::json!({"sinks": [{"kind": "stdout", "logs": ["access"], "colour": true}]}),
            "unknown field `colour`",
        );
        refused(serde_json::json!({"slow_threshold": "soon"}), "soon");
        refused(
            serde_json::json!({"sinks": [{"kind": "file", "path": "a.log", "logs": ["access"], "rotate_size": "big"}]}),
            "`rotate_size`",
        );
        refused(
            serde_json::json!({"sinks": [{"kind": "stdout", "logs": ["access"]}, {"kind": "stdout", "logs": ["audit"]}]}),
            "two logging sinks are named \"stdout\"",
        );
        refused(
            serde_json::json!({"sinks": [{"kind": "file", "path": "a.log", "logs": ["access"]}, {"name": "b", "kind": "file", "path": "a.log", "logs": ["audit"]}]}),
            "both write",
        );
        refused(
            serde_json::json!({"sinks": [{"kind": "database", "logs": ["access"]}]}),
            "audit log only",
        );
        refused(
            serde_json::json!({"sinks": [{"kind": "stdout", "logs": ["access"], "ignore": ["a*b"]}]}),
            "ignore entry",
        );
        refused(serde_json::json!({"queue": 0}), "must be 1 to 1048576");
        // Found by the API fuzzer: a queue this large aborted the server
        // when its channel was allocated.
        refused(
            serde_json::json!({"queue": 14_140_288_533_362_u64}),
            "logging.queue must be 1 to 1048576 entries",
        );
        refused(
            serde_json::json!({"sinks": [{"kind": "stdout", "logs": ["access"], "queue": 1_048_577}]}),
            "`queue` must be 1 to 1048576",
        );
    }

    /// Through the API a file sink stays inside the file's logging
    /// directory, or writes what the file names itself.
    #[test]
    fn an_api_configuration_keeps_its_files_in_the_logging_directory() {
        let file = parse(serde_json::json!({
            "sinks": [
                {"kind": "file", "path": "/var/log/joblog/audit.log", "logs": ["audit"]},
                {"kind": "file", "path": "/run/joblog.fifo", "logs": ["error"], "special_file": true}
            ]
        }))
        .unwrap();
        let dir = Path::new("/data/logs");
        let api = |path: &str, special: bool| {
            let mut sink = serde_json::json!({"kind": "file", "path": path, "logs": ["access"]});
            if special {
                sink["special_file"] = true.into();
            }
            confine(&parse(serde_json::json!({ "sinks": [sink] }))?, &file, dir)
        };
        assert_eq!(api("access.log", false), Ok(()));
        assert_eq!(api("sub/access.log", false), Ok(()));
        assert_eq!(api("/data/logs/x.log", false), Ok(()));
        assert_eq!(
            api("/var/log/joblog/audit.log", false),
            Ok(()),
            "named by the file"
        );
        assert_eq!(api("/run/joblog.fifo", true), Ok(()), "named by the file");
        for outside in [
            "../joblog.db",
            "sub/../../joblog.db",
            "/data/joblog.db",
            "/etc/x",
        ] {
            let e = api(outside, false).unwrap_err();
            assert!(
                e.contains("is outside the logging directory /data/logs"),
                "{outside}: {e}"
            );
        }
        let e = api("fifo.log", true).unwrap_err();
        assert!(
            e.contains("`special_file` is set only in joblog.toml"),
            "{e}"
        );
        // Another `dir` moves every relative path outside.
        let moved = parse(serde_json::json!({
            "dir": "/", "sinks": [{"kind": "file", "path": "x.log", "logs": ["access"]}]
        }))
        .unwrap();
        assert!(confine(&moved, &file, dir).is_err());
    }

    #[test]
    fn an_ignore_entry_ending_in_a_multibyte_character_is_checked_not_sliced() {
        for pattern in ["é", "GET /é", "ab*é", "token.*"] {
            let sinks = serde_json::json!({
                "sinks": [{"kind": "stdout", "logs": ["access"], "ignore": [pattern]}]
            });
            let result = parse(sinks);
            assert_eq!(result.is_ok(), pattern != "ab*é", "{pattern}: {result:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(joblog_testkit::proptest_config(2000))]

        /// Any Unicode in any text field of a sink (names, ignore entries,
        /// paths, sizes, addresses, facilities): the section is planned or
        /// refused naming its sink, never a panic (an ignore entry ending
        /// in `é` was sliced inside the character).
        #[test]
        fn any_text_in_a_sink_is_planned_or_refused(
            texts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::prelude::any::<String>(),
                    "[a-zé*✓\\u{202e}/.]{0,12}",
                ],
                7,
            ),
        ) {
            let file = serde_json::json!({
                "kind": "file", "logs": ["access"], "name": texts[0], "ignore": [texts[1], texts[2]],
                "path": texts[3], "rotate_size": texts[4],
            });
            let syslog = serde_json::json!({
                "kind": "syslog", "logs": ["error"], "address": texts[5], "facility": texts[6],
            });
            for sink in [file, syslog] {
                if let Err(e) = parse(serde_json::json!({ "sinks": [sink] })) {
                    proptest::prop_assert!(
                        e.starts_with("logging sink 1 (") || e.contains("two logging sinks"),
                        "{}",
                        e
                    );
                }
            }
        }
    }
}
