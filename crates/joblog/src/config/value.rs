//! The types settings take, each parsed from the text a file, environment
//! variable or flag gives and rendered back for the reference docs.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use joblog_oplog::queue::Overflow;
use joblog_oplog::SinkConfig;
use joblog_store::SyncMode;

/// A setting's text as an error may show it: quoted when it is one
/// line, and otherwise only counted. A `"""` or `'''` string left open
/// takes the lines below it (the token's perhaps) as its value.
pub fn shown(text: &str) -> String {
    if text.contains(['\n', '\r']) {
        format!(
            "a value of {} lines (is a \"\"\" or ''' string left open?)",
            text.lines().count()
        )
    } else {
        format!("{text:?}")
    }
}

/// A type a setting can have.
pub trait SettingValue: Sized {
    /// How the reference names the type.
    const KIND: &'static str;
    fn parse_setting(text: &str) -> Result<Self, String>;
    /// The value as a user would write it (for defaults in the docs).
    fn render(&self) -> String;
}

impl SettingValue for String {
    const KIND: &'static str = "string";
    fn parse_setting(text: &str) -> Result<Self, String> {
        Ok(text.to_string())
    }
    fn render(&self) -> String {
        self.clone()
    }
}

impl SettingValue for PathBuf {
    const KIND: &'static str = "path";
    fn parse_setting(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("an empty path".into());
        }
        Ok(PathBuf::from(text))
    }
    fn render(&self) -> String {
        self.display().to_string()
    }
}

impl SettingValue for bool {
    const KIND: &'static str = "boolean";
    fn parse_setting(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "true" | "on" | "yes" | "1" => Ok(true),
            "false" | "off" | "no" | "0" => Ok(false),
            _ => Err(format!("{text:?} is not true or false")),
        }
    }
    fn render(&self) -> String {
        self.to_string()
    }
}

macro_rules! integer_setting {
    ($($t:ty),*) => {$(
        impl SettingValue for $t {
            const KIND: &'static str = "integer";
            fn parse_setting(text: &str) -> Result<Self, String> {
                text.trim()
                    .replace('_', "")
                    .parse()
                    .map_err(|_| format!("{text:?} is not a whole number from 0 to {}", <$t>::MAX))
            }
            fn render(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
integer_setting!(u32, u64, usize);

impl SettingValue for SocketAddr {
    const KIND: &'static str = "address";
    fn parse_setting(text: &str) -> Result<Self, String> {
        text.trim()
            .parse()
            .map_err(|_| format!("{text:?} is not an address like 127.0.0.1:7878"))
    }
    fn render(&self) -> String {
        self.to_string()
    }
}

/// Longest duration a setting takes: a hundred years is "never" to a
/// person, and the server adds durations to its clock (deadlines, timer
/// intervals), which panics on overflow some 290 billion years out.
const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 86_400);

impl SettingValue for Duration {
    const KIND: &'static str = "duration";
    fn parse_setting(text: &str) -> Result<Self, String> {
        let d = joblog_core::parse_duration(text)?;
        if d > MAX_DURATION {
            return Err(format!("{text:?} is more than 100 years"));
        }
        Ok(d)
    }
    fn render(&self) -> String {
        humantime::format_duration(*self).to_string()
    }
}

impl SettingValue for SyncMode {
    const KIND: &'static str = "normal | full";
    fn parse_setting(text: &str) -> Result<Self, String> {
        SyncMode::parse(text.trim()).ok_or_else(|| format!("{text:?} is not normal or full"))
    }
    fn render(&self) -> String {
        match self {
            SyncMode::Normal => "normal",
            SyncMode::Full => "full",
        }
        .into()
    }
}

/// A setting without a default: absent unless given.
impl<T: SettingValue> SettingValue for Option<T> {
    const KIND: &'static str = T::KIND;
    fn parse_setting(text: &str) -> Result<Self, String> {
        T::parse_setting(text).map(Some)
    }
    fn render(&self) -> String {
        self.as_ref().map(T::render).unwrap_or_default()
    }
}

/// A number of bytes: `536870912`, `512MiB`, `64 KiB`, `1GB`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl SettingValue for ByteSize {
    const KIND: &'static str = "size";
    fn parse_setting(text: &str) -> Result<Self, String> {
        joblog_core::parse_byte_size(text).map(ByteSize)
    }
    fn render(&self) -> String {
        joblog_core::render_byte_size(self.0)
    }
}

/// A node's labels, `role=db,os=linux`.
impl SettingValue for joblog_core::Labels {
    const KIND: &'static str = "labels";
    fn parse_setting(text: &str) -> Result<Self, String> {
        joblog_core::Labels::parse(text)
    }
    fn render(&self) -> String {
        self.canonical()
    }
}

/// Host names, comma-separated: `joblog.example.org, jobs.internal`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostList(pub Vec<String>);

impl SettingValue for HostList {
    const KIND: &'static str = "host names";
    fn parse_setting(text: &str) -> Result<Self, String> {
        let mut names = Vec::new();
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let plain = name == "*"
                || name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
            if !plain {
                return Err(format!(
                    "{name:?} is not a host name (no scheme, port or path: joblog.example.org)"
                ));
            }
            names.push(name.to_ascii_lowercase());
        }
        Ok(HostList(names))
    }
    fn render(&self) -> String {
        self.0.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_lists_are_plain_names() {
        assert_eq!(
            HostList::parse_setting(" Jobs.Example.org, b ,").unwrap().0,
            vec!["jobs.example.org", "b"]
        );
        assert!(HostList::parse_setting("https://x.org").is_err());
        assert!(HostList::parse_setting("x.org:443").is_err());
        assert_eq!(HostList::parse_setting("*").unwrap().render(), "*");
    }

    #[test]
    fn sizes_parse_with_units_and_render_in_the_largest_exact_one() {
        let parse = |s| ByteSize::parse_setting(s).map(|b| b.0);
        assert_eq!(parse("536870912"), Ok(512 << 20));
        assert_eq!(parse("512MiB"), Ok(512 << 20));
        assert_eq!(parse("64 kib"), Ok(64 << 10));
        assert_eq!(parse("1GB"), Ok(1_000_000_000));
        assert!(parse("12 parsecs").unwrap_err().contains("parsecs"));
        assert!(parse("-1").is_err());
        assert!(parse("99999999TiB").unwrap_err().contains("too large"));
        assert_eq!(ByteSize(512 << 20).render(), "512MiB");
        assert_eq!(ByteSize(1000).render(), "1000");
    }

    #[test]
    fn integers_durations_and_addresses_say_what_was_wrong() {
        assert_eq!(u32::parse_setting("1_000"), Ok(1000));
        assert!(u32::parse_setting("-3").unwrap_err().contains("\"-3\""));
        assert_eq!(
            Duration::parse_setting("1h30m"),
            Ok(Duration::from_secs(5400))
        );
        assert_eq!(Duration::from_secs(30).render(), "30s");
        assert!(Duration::parse_setting("300000000000y")
            .unwrap_err()
            .contains("more than 100 years"));
        assert!(SocketAddr::parse_setting("localhost").is_err());
        assert!(SyncMode::parse_setting("fast")
            .unwrap_err()
            .contains("fast"));
        assert_eq!(Option::<u32>::parse_setting("7"), Ok(Some(7)));
        assert_eq!(Option::<u32>::None.render(), "");
    }
}

impl SettingValue for Overflow {
    const KIND: &'static str = "block | drop_newest";
    fn parse_setting(text: &str) -> Result<Self, String> {
        Overflow::parse(text.trim())
    }
    fn render(&self) -> String {
        match self {
            Overflow::Block => "block",
            Overflow::DropNewest => "drop_newest",
        }
        .into()
    }
}

/// The log sinks: `[[logging.sinks]]` tables, which the file layer hands
/// on as JSON (the environment gives JSON too). `None`: the defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SinkList(pub Option<Vec<SinkConfig>>);

impl SettingValue for SinkList {
    const KIND: &'static str = "list of sinks";
    fn parse_setting(text: &str) -> Result<Self, String> {
        serde_json::from_str(text)
            .map(|sinks| SinkList(Some(sinks)))
            .map_err(|e| format!("not a list of sinks: {e}"))
    }
    fn render(&self) -> String {
        match &self.0 {
            None => String::new(),
            Some(sinks) => serde_json::to_string(sinks).unwrap_or_default(),
        }
    }
}

/// Claim values and the role each gives (`auth.oidc.roles`): in the
/// environment or a flag `ops=operator,joblog-admins=admin`, or a JSON
/// object `{"CN=ops,OU=groups": "operator"}` for values holding `,` or
/// `=`; in the file a table (which arrives here as that JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoleMap(pub Vec<(String, joblog_core::Role)>);

impl SettingValue for RoleMap {
    const KIND: &'static str = "claim values and roles";
    fn parse_setting(text: &str) -> Result<Self, String> {
        let role = |value: &str, role: &str| {
            joblog_core::Role::parse(role.trim()).ok_or_else(|| {
                format!("{value:?} maps to {role:?}, which is not a role (viewer, operator, admin)")
            })
        };
        let mut pairs = Vec::new();
        if text.trim_start().starts_with('{') {
            let map: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(text).map_err(|e| format!("not a JSON object: {e}"))?;
            for (value, r) in map {
                let Some(r) = r.as_str() else {
                    return Err(format!("{value:?} must map to a role's name, as text"));
                };
                pairs.push((value.clone(), role(&value, r)?));
            }
        } else {
            for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                let Some((value, r)) = item.rsplit_once('=') else {
                    return Err(format!("{item:?} is not value=role"));
                };
                let value = value.trim();
                if value.is_empty() {
                    return Err(format!("{item:?} has no claim value before '='"));
                }
                pairs.push((value.to_string(), role(value, r)?));
            }
        }
        Ok(RoleMap(pairs))
    }
    fn render(&self) -> String {
        let plain = self
            .0
            .iter()
            .all(|(v, _)| !v.contains([',', '=']) && !v.starts_with('{') && v.trim() == v);
        if plain {
            let items: Vec<String> = self
                .0
                .iter()
                .map(|(v, r)| format!("{v}={}", r.name()))
                .collect();
            items.join(",")
        } else {
            let map: serde_json::Map<String, serde_json::Value> = self
                .0
                .iter()
                .map(|(v, r)| (v.clone(), serde_json::Value::from(r.name())))
                .collect();
            serde_json::Value::Object(map).to_string()
        }
    }
}
