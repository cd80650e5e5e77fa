//! Where syslog messages go ([`SyslogTarget`]: the local socket, a unix
//! socket path, a UDP or TCP address) and under which facility
//! ([`Facility`]), as a configuration writes them.

use std::fmt;
use std::path::PathBuf;

/// A syslog destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyslogTarget {
    /// A unix datagram socket: `/dev/log`, the local syslog daemon.
    Unix(PathBuf),
    /// One datagram per message (RFC 5426).
    Udp { host: String, port: u16 },
    /// A stream of octet-counted messages (RFC 6587).
    Tcp { host: String, port: u16 },
}

/// The port of syslog over UDP, and the one rsyslog and syslog-ng listen
/// on for TCP unless told otherwise.
pub const DEFAULT_PORT: u16 = 514;

const EXPECTED: &str =
    "expected /dev/log, an absolute socket path, unix:///path, udp://host[:port] or tcp://host[:port]";

impl SyslogTarget {
    /// `/dev/log` (or any absolute path), `unix:///path`,
    /// `udp://host[:port]`, `tcp://host[:port]`; port 514 when left out,
    /// an IPv6 address in brackets (`udp://[::1]:514`).
    pub fn parse(text: &str) -> Result<SyslogTarget, String> {
        let bad = |why: &str| format!("syslog target '{text}': {why} ({EXPECTED})");
        if text.starts_with('/') {
            return Ok(SyslogTarget::Unix(PathBuf::from(text)));
        }
        if let Some(path) = text.strip_prefix("unix://") {
            if !path.starts_with('/') {
                return Err(bad("the socket path must be absolute"));
            }
            return Ok(SyslogTarget::Unix(PathBuf::from(path)));
        }
        let (udp, rest) = if let Some(rest) = text.strip_prefix("udp://") {
            (true, rest)
        } else if let Some(rest) = text.strip_prefix("tcp://") {
            (false, rest)
        } else {
            return Err(bad("unknown form"));
        };
        let (host, port) = host_port(rest).map_err(|why| bad(&why))?;
        Ok(if udp {
            SyslogTarget::Udp { host, port }
        } else {
            SyslogTarget::Tcp { host, port }
        })
    }
}

/// `host`, `host:port`, `[v6]`, `[v6]:port`.
fn host_port(s: &str) -> Result<(String, u16), String> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or("an IPv6 address's '[' has no ']'")?;
        match after {
            "" => (host, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => return Err("only ':port' may follow ']'".into()),
            },
        }
    } else {
        match s.split_once(':') {
            Some((_, port)) if port.contains(':') => {
                return Err("put an IPv6 address in brackets: [::1]:514".into())
            }
            Some((host, port)) => (host, Some(port)),
            None => (s, None),
        }
    };
    if host.is_empty() {
        return Err("no host".into());
    }
    if host.contains(['/', '?', '#', '@', ' ']) {
        return Err("a host is a name or an address, nothing more".into());
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => match p.parse::<u16>() {
            Ok(0) | Err(_) => return Err(format!("port '{p}' is not a number from 1 to 65535")),
            Ok(n) => n,
        },
    };
    Ok((host.to_string(), port))
}

impl fmt::Display for SyslogTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (scheme, host, port) = match self {
            SyslogTarget::Unix(path) => return write!(f, "unix://{}", path.display()),
            SyslogTarget::Udp { host, port } => ("udp", host, port),
            SyslogTarget::Tcp { host, port } => ("tcp", host, port),
        };
        if host.contains(':') {
            write!(f, "{scheme}://[{host}]:{port}")
        } else {
            write!(f, "{scheme}://{host}:{port}")
        }
    }
}

/// The syslog facility messages are sent under (RFC 5424 table 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Facility {
    Kern,
    User,
    Mail,
    #[default]
    Daemon,
    Auth,
    Syslog,
    Lpr,
    News,
    Uucp,
    Cron,
    Authpriv,
    Ftp,
    Local0,
    Local1,
    Local2,
    Local3,
    Local4,
    Local5,
    Local6,
    Local7,
}

const FACILITIES: [(Facility, &str, u8); 20] = [
    (Facility::Kern, "kern", 0),
    (Facility::User, "user", 1),
    (Facility::Mail, "mail", 2),
    (Facility::Daemon, "daemon", 3),
    (Facility::Auth, "auth", 4),
    (Facility::Syslog, "syslog", 5),
    (Facility::Lpr, "lpr", 6),
    (Facility::News, "news", 7),
    (Facility::Uucp, "uucp", 8),
    (Facility::Cron, "cron", 9),
    (Facility::Authpriv, "authpriv", 10),
    (Facility::Ftp, "ftp", 11),
    (Facility::Local0, "local0", 16),
    (Facility::Local1, "local1", 17),
    (Facility::Local2, "local2", 18),
    (Facility::Local3, "local3", 19),
    (Facility::Local4, "local4", 20),
    (Facility::Local5, "local5", 21),
    (Facility::Local6, "local6", 22),
    (Facility::Local7, "local7", 23),
];

impl Facility {
    /// A facility by its name: `daemon`, `auth`, `local0` … `local7`.
    pub fn parse(name: &str) -> Result<Facility, String> {
        FACILITIES
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(f, _, _)| *f)
            .ok_or_else(|| {
                let names: Vec<&str> = FACILITIES.iter().map(|(_, n, _)| *n).collect();
                format!(
                    "unknown syslog facility '{name}' (expected one of {})",
                    names.join(", ")
                )
            })
    }

    pub fn as_str(self) -> &'static str {
        FACILITIES
            .iter()
            .find(|(f, _, _)| *f == self)
            .map_or("daemon", |(_, n, _)| n)
    }

    /// The facility's number, which PRI multiplies by 8.
    pub fn code(self) -> u8 {
        FACILITIES
            .iter()
            .find(|(f, _, _)| *f == self)
            .map_or(3, |(_, _, c)| *c)
    }
}

impl fmt::Display for Facility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp(host: &str, port: u16) -> SyslogTarget {
        SyslogTarget::Udp {
            host: host.into(),
            port,
        }
    }

    #[test]
    fn every_form_of_target_parses() {
        let cases = [
            ("/dev/log", SyslogTarget::Unix("/dev/log".into())),
            (
                "/run/systemd/journal/syslog",
                SyslogTarget::Unix("/run/systemd/journal/syslog".into()),
            ),
            (
                "unix:///var/run/log",
                SyslogTarget::Unix("/var/run/log".into()),
            ),
            ("udp://loghost:1514", udp("loghost", 1514)),
            ("udp://10.0.0.7", udp("10.0.0.7", 514)),
            ("udp://[::1]:515", udp("::1", 515)),
            ("udp://[fe80::1]", udp("fe80::1", 514)),
            (
                "tcp://logs.example.org:601",
                SyslogTarget::Tcp {
                    host: "logs.example.org".into(),
                    port: 601,
                },
            ),
        ];
        for (text, want) in cases {
            assert_eq!(SyslogTarget::parse(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn a_bad_target_is_refused_saying_what_is_wrong() {
        let cases = [
            ("", "unknown form"),
            ("dev/log", "unknown form"),
            ("unix://dev/log", "must be absolute"),
            ("udp://", "no host"),
            ("udp://:514", "no host"),
            ("udp://host:0", "port '0'"),
            ("udp://host:http", "port 'http'"),
            ("udp://host:70000", "port '70000'"),
            ("udp://::1:514", "in brackets"),
            ("udp://[::1", "no ']'"),
            ("udp://[::1]514", "only ':port'"),
            ("tcp://user@host", "nothing more"),
            ("http://host", "unknown form"),
        ];
        for (text, why) in cases {
            let e = SyslogTarget::parse(text).unwrap_err();
            assert!(
                e.contains(&format!("'{text}'")) && e.contains(why),
                "{text}: {e}"
            );
            assert!(e.contains("udp://host[:port]"), "{e}");
        }
    }

    #[test]
    fn targets_display_as_they_parse() {
        for text in [
            "unix:///dev/log",
            "udp://loghost:514",
            "udp://[::1]:515",
            "tcp://10.1.2.3:601",
        ] {
            let target = SyslogTarget::parse(text).unwrap();
            assert_eq!(target.to_string(), text);
            assert_eq!(SyslogTarget::parse(&target.to_string()), Ok(target));
        }
    }

    #[test]
    fn facilities_have_their_rfc_numbers() {
        assert_eq!(Facility::default(), Facility::Daemon);
        for (name, code) in [
            ("kern", 0),
            ("user", 1),
            ("daemon", 3),
            ("auth", 4),
            ("authpriv", 10),
            ("local0", 16),
            ("local7", 23),
        ] {
            let f = Facility::parse(name).unwrap();
            assert_eq!((f.code(), f.as_str()), (code, name));
        }
        let e = Facility::parse("local8").unwrap_err();
        assert!(e.contains("'local8'") && e.contains("local7"), "{e}");
    }
}
