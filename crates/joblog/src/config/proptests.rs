//! Property tests of the configuration: arbitrary `joblog.toml` text, and
//! valid and junk values for every declared setting in every layer, read
//! through the layers into the typed settings and then `serve`'s checks.
//! Each property says its invariant above it; each runs a few thousand
//! generated cases (`PROPTEST_CASES` overrides).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use joblog_oplog::queue::Overflow;
use joblog_oplog::{Log, SinkConfig, SinkKind};
use joblog_store::SyncMode;
use proptest::prelude::*;

use super::layers::{Layers, Origin};
use super::settings::{Settings, DECLARED};
use super::value::{ByteSize, HostList, RoleMap, SettingValue, SinkList};
use crate::serve::resolve::resolve;

/// Both ends of every value given to a secret setting: an error showing
/// any end of one shows them.
const MARK: &str = "s3cr3t";
const END: &str = "t3rc3s";

fn secret() -> impl Strategy<Value = String> {
    any::<String>().prop_map(|s| format!("{MARK}{s}{END}"))
}

fn is_secret(key: &str) -> bool {
    super::layers::SECRETS.contains(&key)
}

/// An error as `joblog` prints it, checked never to show a secret.
fn shown(e: &anyhow::Error) -> Result<String, TestCaseError> {
    let text = format!("{e:#}");
    prop_assert!(
        !text.contains(MARK) && !text.contains(END),
        "a secret in {:?}",
        text
    );
    Ok(text)
}

/// Whether the server can run with `s` without panicking: it adds every
/// duration to its clock (deadlines; a timer adds its period to the last
/// deadline) and counts connections with a semaphore.
fn runnable(s: &Settings) -> bool {
    let now = std::time::Instant::now();
    let durations = [
        s.heartbeat_timeout,
        s.grace_period,
        s.kill_grace,
        s.http_header_read_timeout,
        s.http_request_timeout,
        s.retention_every,
        s.retention_older_than.unwrap_or_default(),
    ];
    durations.iter().all(|d| {
        now.checked_add(*d)
            .and_then(|t| t.checked_add(*d))
            .is_some()
    }) && s.http_max_connections <= tokio::sync::Semaphore::MAX_PERMITS
}

/// `serve`'s checks: settings they accept are ones the server can run
/// with; an error shows no secret and names a setting.
fn check_resolve(settings: Settings) -> Result<(), TestCaseError> {
    let runnable = runnable(&settings);
    match resolve(settings) {
        Ok(_) => prop_assert!(runnable, "accepted settings the server cannot run with"),
        Err(e) => {
            let text = shown(&e)?;
            prop_assert!(
                DECLARED.iter().any(|d| text.contains(d.key)),
                "{:?} names no setting",
                text
            );
        }
    }
    Ok(())
}

/// A value as the setting's type holds it.
#[derive(Debug, Clone)]
enum Typed {
    Duration(Duration),
    Size(u64),
    Integer(u64),
    Address(SocketAddr),
    Text(String),
    Path(String),
    Hosts(Vec<String>),
    Sync(SyncMode),
    Bool(bool),
    Overflow(Overflow),
    Sinks(Vec<SinkConfig>),
    Labels(joblog_core::Labels),
    Roles(Vec<(String, joblog_core::Role)>),
}

/// A queue policy, and the policy.
fn overflow() -> impl Strategy<Value = (String, Typed)> {
    prop_oneof![
        Just(("block".to_string(), Typed::Overflow(Overflow::Block))),
        Just((
            "drop_newest".to_string(),
            Typed::Overflow(Overflow::DropNewest)
        )),
    ]
}

/// Log sinks as the environment (or a string in the file) gives them: a
/// JSON array of sink tables.
fn sinks() -> impl Strategy<Value = (String, Typed)> {
    let kind = prop::sample::select(vec![SinkKind::Stdout, SinkKind::Stderr, SinkKind::Syslog]);
    let logs = prop::sample::subsequence(Log::ALL.to_vec(), 1..=Log::ALL.len());
    let sink = (kind, logs).prop_map(|(kind, logs)| SinkConfig::new(kind, &logs));
    prop::collection::vec(sink, 0..3)
        .prop_map(|sinks| (serde_json::to_string(&sinks).unwrap(), Typed::Sinks(sinks)))
}

/// A duration as people write it (`90s`, `1h30m`, `2 days 5min`, `500ms`)
/// or as the docs render it, and the duration it means.
fn duration() -> impl Strategy<Value = (String, Typed)> {
    const UNITS: [(&[&str], u64); 7] = [
        (&["d", "day", "days"], 86_400_000_000_000),
        (&["h", "hr", "hours"], 3_600_000_000_000),
        (&["m", "min", "minutes"], 60_000_000_000),
        (&["s", "sec", "seconds"], 1_000_000_000),
        (&["ms", "msec"], 1_000_000),
        (&["us", "usec"], 1_000),
        (&["ns", "nsec"], 1),
    ];
    let part = (0..UNITS.len(), 0u64..100_000, any::<prop::sample::Index>());
    let written = (
        prop::collection::vec(part, 1..4),
        prop_oneof![Just(""), Just(" ")],
    )
        .prop_map(|(parts, sep)| {
            let mut nanos = 0u128;
            let text: Vec<String> = parts
                .iter()
                .map(|&(unit, n, name)| {
                    let (names, size) = UNITS[unit];
                    nanos += u128::from(n) * u128::from(size);
                    format!("{n}{}", name.get(names))
                })
                .collect();
            let d = Duration::new(
                (nanos / 1_000_000_000) as u64,
                (nanos % 1_000_000_000) as u32,
            );
            (text.join(sep), Typed::Duration(d))
        });
    let seconds = prop_oneof![0u64..4_000_000_000, any::<u64>()];
    let rendered = (seconds, 0u32..1_000_000_000).prop_map(|(s, n)| {
        let d = Duration::new(s, n);
        (d.render(), Typed::Duration(d))
    });
    prop_oneof![written, rendered]
}

/// A size as people write it (`512MiB`, `64 kib`, `1_000`) or as the docs
/// render it, and its bytes.
fn size() -> impl Strategy<Value = (String, Typed)> {
    const UNITS: [(&str, u64); 10] = [
        ("", 1),
        ("B", 1),
        ("kB", 1000),
        ("KiB", 1 << 10),
        ("MB", 1_000_000),
        ("MiB", 1 << 20),
        ("GB", 1_000_000_000),
        ("GiB", 1 << 30),
        ("TB", 1_000_000_000_000),
        ("TiB", 1 << 40),
    ];
    let number = prop_oneof![0u64..5000, any::<u64>()];
    let written = (0..UNITS.len(), number, any::<bool>(), any::<bool>()).prop_map(
        |(unit, n, space, upper)| {
            let (name, size) = UNITS[unit];
            let n = n % (u64::MAX / size);
            let name = if upper {
                name.to_uppercase()
            } else {
                name.to_lowercase()
            };
            let space = if space && !name.is_empty() { " " } else { "" };
            (format!("{n}{space}{name}"), Typed::Size(n * size))
        },
    );
    let rendered = any::<u64>().prop_map(|n| (ByteSize(n).render(), Typed::Size(n)));
    prop_oneof![written, rendered]
}

/// A whole number, with `_` between thousands or not, spaces around or
/// not.
fn integer() -> impl Strategy<Value = (String, Typed)> {
    let n = prop_oneof![any::<u32>().prop_map(u64::from), any::<u64>()];
    (n, any::<bool>(), any::<bool>()).prop_map(|(n, grouped, padded)| {
        let digits = n.to_string();
        let mut text = String::new();
        for (i, c) in digits.chars().enumerate() {
            if grouped && i > 0 && (digits.len() - i) % 3 == 0 {
                text.push('_');
            }
            text.push(c);
        }
        if padded {
            text = format!(" {text} ");
        }
        (text, Typed::Integer(n))
    })
}

fn address() -> impl Strategy<Value = (String, Typed)> {
    (any::<IpAddr>(), any::<u16>()).prop_map(|(ip, port)| {
        let a = SocketAddr::new(ip, port);
        (a.to_string(), Typed::Address(a))
    })
}

fn hosts() -> impl Strategy<Value = (String, Typed)> {
    let name = prop_oneof![4 => "[a-zA-Z0-9.-]{1,20}", 1 => Just("*".to_string())];
    (
        prop::collection::vec(name, 0..4),
        prop_oneof![Just(","), Just(", "), Just(" ,")],
    )
        .prop_map(|(names, sep)| {
            let lower = names.iter().map(|n| n.to_ascii_lowercase()).collect();
            (names.join(sep), Typed::Hosts(lower))
        })
}

/// A node's labels, `role=db, os=linux`, and the labels.
fn labels() -> impl Strategy<Value = (String, Typed)> {
    (
        prop::collection::btree_map("[a-z][a-z0-9./_-]{0,8}", "[A-Za-z0-9._-]{1,8}", 0..5),
        prop_oneof![Just(","), Just(", "), Just(" ,")],
    )
        .prop_map(|(map, sep)| {
            let items: Vec<String> = map.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let labels = joblog_core::Labels::try_from(map).unwrap();
            (items.join(sep), Typed::Labels(labels))
        })
}

/// Claim values and roles, `ops=operator, a.b=admin` or as a JSON object
/// (values with `,` or `=`), and the pairs.
fn roles() -> impl Strategy<Value = (String, Typed)> {
    let role = prop::sample::select(joblog_core::Role::ALL.to_vec());
    let plain = (
        prop::collection::btree_map("[a-z][a-z0-9./_-]{0,8}", role.clone(), 0..4),
        prop_oneof![Just(","), Just(", "), Just(" ,")],
    )
        .prop_map(|(map, sep)| {
            let items: Vec<String> = map
                .iter()
                .map(|(k, r)| format!("{k}={}", r.name()))
                .collect();
            (items.join(sep), Typed::Roles(map.into_iter().collect()))
        });
    let json = prop::collection::btree_map("[A-Za-z=, ]{1,8}", role, 1..4).prop_map(|map| {
        let object: serde_json::Map<String, serde_json::Value> = map
            .iter()
            .map(|(k, r)| (k.clone(), serde_json::Value::from(r.name())))
            .collect();
        let text = serde_json::Value::Object(object).to_string();
        (text, Typed::Roles(map.into_iter().collect()))
    });
    prop_oneof![plain, json]
}

fn sync() -> impl Strategy<Value = (String, Typed)> {
    prop_oneof![
        Just(("normal".to_string(), Typed::Sync(SyncMode::Normal))),
        Just((" full ".to_string(), Typed::Sync(SyncMode::Full))),
    ]
}

fn boolean() -> impl Strategy<Value = (String, Typed)> {
    prop::sample::select(vec![
        ("true", true),
        (" False ", false),
        ("on", true),
        ("OFF", false),
        ("yes", true),
        ("no", false),
        ("1", true),
        ("0", false),
    ])
    .prop_map(|(text, b)| (text.to_string(), Typed::Bool(b)))
}

/// Text no setting should take (`|` between them), or that one may take
/// by chance.
const JUNK: &str = "| |-1|1e3|0x10|1.5|99999999999999999999999|18446744073709551615|12 parsecs\
    |1h30|µs|5µs|1__0|_|512MiBs|99999999TiB|true|localhost:80|[::1]|normal,full|*, a b|https://x.org";

fn junk() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[0-9 _.a-zA-Zµ:,*\\[\\]-]{0,12}",
        prop::sample::select(JUNK.split('|').collect::<Vec<_>>()).prop_map(str::to_string),
    ]
}

/// Text for a setting of `kind`, with the value it must parse to (`None`
/// for junk). Secret settings always get a marked secret.
fn value_for(kind: &'static str, key: &'static str) -> BoxedStrategy<(String, Option<Typed>)> {
    if is_secret(key) {
        return secret()
            .prop_map(|s| (s.clone(), Some(Typed::Text(s))))
            .boxed();
    }
    // Durations are taken up to 100 years (docs/configuration.md), and
    // every integer setting takes any u32 (some take more).
    let in_range = |(text, typed): (String, Typed)| match typed {
        Typed::Duration(d) if d > Duration::from_secs(100 * 365 * 86_400) => (text, None),
        Typed::Integer(n) if n > u64::from(u32::MAX) => (text, None),
        typed => (text, Some(typed)),
    };
    let valid = match kind {
        "duration" => duration().boxed(),
        "size" => size().boxed(),
        "integer" => integer().boxed(),
        "address" => address().boxed(),
        "host names" => hosts().boxed(),
        "labels" => labels().boxed(),
        "claim values and roles" => roles().boxed(),
        "normal | full" => sync().boxed(),
        "boolean" => boolean().boxed(),
        "block | drop_newest" => overflow().boxed(),
        "list of sinks" => sinks().boxed(),
        "path" => ".+".prop_map(|p| (p.clone(), Typed::Path(p))).boxed(),
        _ => any::<String>()
            .prop_map(|s| (s.clone(), Typed::Text(s)))
            .boxed(),
    };
    prop_oneof![
        3 => valid.prop_map(in_range),
        1 => junk().prop_map(|text| (text, None)),
    ]
    .boxed()
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Layer {
    File,
    Env,
    Flag,
}

/// Some settings, each with its text, expected value and layer.
type Given = Vec<(&'static str, String, Option<Typed>, Layer)>;

fn given() -> impl Strategy<Value = Given> {
    let layer = prop_oneof![Just(Layer::File), Just(Layer::Env), Just(Layer::Flag)];
    DECLARED
        .iter()
        .map(|d| {
            prop::option::weighted(0.3, (value_for(d.kind, d.key), layer.clone()))
                .prop_map(|v| v.map(|((text, typed), layer)| (d.key, text, typed, layer)))
        })
        .collect::<Vec<_>>()
        .prop_map(|all| all.into_iter().flatten().collect())
}

/// Where `key` comes from when given in `layer`, as `joblog serve` does it.
fn origin(key: &str, layer: Layer) -> Origin {
    let d = DECLARED.iter().find(|d| d.key == key).unwrap();
    match layer {
        Layer::File => Origin::File("joblog.toml".into()),
        Layer::Env => Origin::Env(d.env),
        Layer::Flag => Origin::Flag(d.flag.unwrap_or(match key {
            "token" => "token",
            _ => "token-file",
        })),
    }
}

/// The layers as `config::load` builds them: the file, the variables of
/// settings without a flag, then the other variables and the flags.
fn layers(given: &Given, bare_integers: bool) -> anyhow::Result<Layers> {
    let mut file = String::new();
    for (key, text, typed, layer) in given {
        if *layer == Layer::File {
            let value = match typed {
                Some(Typed::Integer(n)) if bare_integers => n.to_string(),
                _ => toml::Value::String(text.clone()).to_string(),
            };
            file.push_str(&format!("{key} = {value}\n"));
        }
    }
    let mut layers = Layers::default();
    layers.add_file(Path::new("joblog.toml"), &file)?;
    let env_of = |var: &str| {
        given.iter().find_map(|(key, text, _, layer)| {
            let d = DECLARED.iter().find(|d| d.key == *key).unwrap();
            (*layer == Layer::Env && d.env == var).then(|| text.clone())
        })
    };
    layers.add_env(env_of);
    for (key, text, _, layer) in given {
        let has_flag = DECLARED.iter().any(|d| d.key == *key && d.flag.is_some());
        if *layer == Layer::Flag || (*layer == Layer::Env && has_flag) {
            layers.give(key, text.clone(), origin(key, *layer));
        }
    }
    Ok(layers)
}

/// `layers` holds for `key` exactly the value generated.
fn check_parsed(layers: &Layers, key: &str, typed: &Typed) -> Result<(), TestCaseError> {
    let fail = |e: anyhow::Error| TestCaseError::fail(format!("{e:#}"));
    match typed {
        Typed::Duration(d) => prop_assert_eq!(layers.get::<Duration>(key).map_err(fail)?, Some(*d)),
        Typed::Size(n) => prop_assert_eq!(
            layers.get::<ByteSize>(key).map_err(fail)?,
            Some(ByteSize(*n))
        ),
        Typed::Integer(n) => prop_assert_eq!(layers.get::<u64>(key).map_err(fail)?, Some(*n)),
        Typed::Address(a) => {
            prop_assert_eq!(layers.get::<SocketAddr>(key).map_err(fail)?, Some(*a))
        }
        Typed::Text(t) => {
            prop_assert_eq!(layers.get::<String>(key).map_err(fail)?, Some(t.clone()))
        }
        Typed::Path(p) => prop_assert_eq!(
            layers.get::<PathBuf>(key).map_err(fail)?,
            Some(PathBuf::from(p))
        ),
        Typed::Hosts(h) => prop_assert_eq!(
            layers.get::<HostList>(key).map_err(fail)?,
            Some(HostList(h.clone()))
        ),
        Typed::Sync(m) => prop_assert_eq!(layers.get::<SyncMode>(key).map_err(fail)?, Some(*m)),
        Typed::Labels(l) => prop_assert_eq!(
            layers.get::<joblog_core::Labels>(key).map_err(fail)?,
            Some(l.clone())
        ),
        Typed::Roles(r) => prop_assert_eq!(
            layers.get::<RoleMap>(key).map_err(fail)?,
            Some(RoleMap(r.clone()))
        ),
        Typed::Bool(b) => prop_assert_eq!(layers.get::<bool>(key).map_err(fail)?, Some(*b)),
        Typed::Overflow(o) => prop_assert_eq!(layers.get::<Overflow>(key).map_err(fail)?, Some(*o)),
        Typed::Sinks(v) => prop_assert_eq!(
            layers.get::<SinkList>(key).map_err(fail)?,
            Some(SinkList(Some(v.clone())))
        ),
    }
    Ok(())
}

/// Lines of something like TOML: settings (known, unknown, quoted keys)
/// with values of every TOML type or junk, the secret settings written
/// well and badly, tables, comments and anything.
fn toml_text() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        4 => prop::sample::select(DECLARED.iter().map(|d| d.key).collect::<Vec<_>>())
            .prop_map(str::to_string),
        1 => "[a-z_.]{1,12}",
        1 => "\"[^\"\n]{0,8}\"",
    ];
    let value = prop_oneof![
        4 => prop_oneof![any::<String>(), junk()].prop_map(|s| toml::Value::String(s).to_string()),
        2 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<f64>().prop_map(|n| n.to_string()),
        1 => prop::sample::select(&["true", "1979-05-27T07:32:00Z", "07:32:00", "[1, \"x\"]", "{a = 1}"][..])
            .prop_map(str::to_string),
        1 => "[^\n]{0,16}",
        1 => "\\[[^\n]{0,10}\\]|\\{[^\n]{0,10}\\}|\"[^\n]{0,10}|'''[^']{0,10}'''",
        // A multi-line string left open: it takes the lines below.
        1 => prop::sample::select(&["\"\"\"", "'''"][..]).prop_map(str::to_string),
    ];
    let secret_value = (secret(), 0..16).prop_map(|(s, form)| match form {
        1 => s,
        2 => format!("\"{s}"),
        3 => format!("'{s}' x"),
        4 => format!("[\"{s}\"]"),
        5 => format!("{{ a = \"{s}\" }}"),
        6 => format!("\"\"\"{s}\"\"\""),
        7 => format!("'{s}'"),
        _ => toml::Value::String(s).to_string(),
    });
    let line = prop_oneof![
        6 => (key, value).prop_map(|(k, v)| format!("{k} = {v}")),
        2 => (prop::sample::select(super::layers::SECRETS), secret_value)
            .prop_map(|(k, v)| format!("{k} = {v}")),
        1 => prop::sample::select(&["[log]", "[http]", "[retention]", "[token]", "[[log]]", "[", "[a.b]"][..])
            .prop_map(str::to_string),
        1 => "#[^\n]{0,10}|[^\n]{0,20}||\"\"\"|'''",
    ];
    (
        prop::collection::vec(line, 0..8),
        prop_oneof![Just("\n"), Just("\r\n")],
    )
        .prop_map(|(lines, end)| lines.join(end))
}

proptest! {
    #![proptest_config(joblog_testkit::proptest_config(2000))]

    /// Any text as `joblog.toml`: reading it, typing its settings and
    /// checking them never panics. A file that is not TOML is refused
    /// with the line and column at fault, a key that is no setting or a
    /// list by its key; a bad value is refused naming its key and the
    /// file; a refusal by `serve`'s checks names a setting. No error ever
    /// shows any part of a value given to `token` or `database`.
    #[test]
    fn any_file_is_read_or_refused_by_place_or_key_never_quoting_a_secret(text in toml_text()) {
        let mut layers = Layers::default();
        match layers.add_file(Path::new("joblog.toml"), &text) {
            Err(e) => {
                let shown = shown(&e)?;
                prop_assert!(shown.starts_with("invalid configuration file joblog.toml"), "{}", shown);
                let located = shown.contains(", line ") && shown.contains(", column ");
                let keyed = shown.contains(": unknown setting \"")
                    || shown.contains(": a list is not a value any setting takes")
                    || shown.contains(": must be a quoted string");
                prop_assert!(located || keyed, "{}", shown);
            }
            Ok(()) => match Settings::resolve(&layers) {
                Err(e) => {
                    let shown = shown(&e)?;
                    prop_assert!(
                        DECLARED.iter().any(|d| shown.starts_with(&format!("{} (from joblog.toml): ", d.key))),
                        "{}", shown
                    );
                }
                Ok(settings) => check_resolve(settings)?,
            },
        }
    }

    /// Valid and junk text for every setting, each from the file, its
    /// variable or its flag: a valid text parses to exactly the value it
    /// was made from (a duration written `1h30m` to that duration, a size
    /// `512MiB` to its bytes, a string through TOML quoting to itself);
    /// the settings resolve when every text is valid, and otherwise the
    /// error names a key given junk and the layer it came from; `serve`'s
    /// checks name a setting. No error shows a secret.
    #[test]
    fn every_setting_parses_as_given_or_is_refused_naming_it(
        given in given(),
        bare_integers in any::<bool>(),
    ) {
        let layers = layers(&given, bare_integers)
            .map_err(|e| TestCaseError::fail(format!("{e:#}")))?;
        for (key, _, typed, _) in &given {
            if let Some(typed) = typed {
                check_parsed(&layers, key, typed)?;
            }
        }
        match Settings::resolve(&layers) {
            Ok(settings) => check_resolve(settings)?,
            Err(e) => {
                let shown = shown(&e)?;
                let named = given.iter().any(|(key, _, typed, layer)| {
                    typed.is_none()
                        && shown.starts_with(&format!("{key} (from {}): ", origin(key, *layer)))
                });
                prop_assert!(named, "{} names no key given junk", shown);
            }
        }
    }
}
