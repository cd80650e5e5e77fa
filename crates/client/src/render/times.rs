//! The zone the CLI shows times in: UTC (the default, `--utc`) or the
//! machine's own (`--local`, or `JOBLOG_TIMES=local`), one setting for
//! every command. Every time shown says its zone: `2026-11-22 10:15:01
//! UTC`, `2026-11-22 11:15:01 +01:00`. `--json` passes the server's
//! RFC 3339 UTC times as they are.

use std::sync::OnceLock;

use chrono::{DateTime, FixedOffset, Local, Utc};

/// Which zone times are shown in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Times {
    #[default]
    Utc,
    Local,
}

static TIMES: OnceLock<Times> = OnceLock::new();

/// Chooses the zone for this process (once, at start; later calls are
/// ignored).
pub fn choose(times: Times) {
    let _ = TIMES.set(times);
}

fn chosen() -> Times {
    TIMES.get().copied().unwrap_or_default()
}

/// A server time to the second, with its zone: `2026-11-22 10:15:01 UTC`.
/// `None` for text that is no RFC 3339 time (the caller shows it
/// escaped).
pub fn short(rfc3339: &str) -> Option<String> {
    let t = DateTime::parse_from_rfc3339(rfc3339).ok()?;
    Some(match chosen() {
        Times::Utc => t
            .with_timezone(&Utc)
            .format("%Y-%m-%d %H:%M:%S UTC")
            .to_string(),
        Times::Local => local(t).format("%Y-%m-%d %H:%M:%S %:z").to_string(),
    })
}

/// A server time in full (microseconds), with its zone: RFC 3339 as the
/// server sends it in UTC, or with the local offset.
pub fn full(rfc3339: &str) -> Option<String> {
    let t = DateTime::parse_from_rfc3339(rfc3339).ok()?;
    Some(match chosen() {
        Times::Utc => t
            .with_timezone(&Utc)
            .format("%Y-%m-%dT%H:%M:%S%.6fZ")
            .to_string(),
        Times::Local => local(t).format("%Y-%m-%dT%H:%M:%S%.6f%:z").to_string(),
    })
}

/// `t` in the machine's zone, as the offset of that instant (a time on
/// the other side of a daylight saving change has its own).
fn local(t: DateTime<FixedOffset>) -> DateTime<FixedOffset> {
    t.with_timezone(&Local).fixed_offset()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_say_their_zone_and_keep_their_instant() {
        // The process's choice is UTC unless set; tests do not set it.
        assert_eq!(
            short("2026-11-22T10:15:01.000001Z").as_deref(),
            Some("2026-11-22 10:15:01 UTC")
        );
        assert_eq!(
            full("2026-11-22T10:15:01.000001Z").as_deref(),
            Some("2026-11-22T10:15:01.000001Z")
        );
        assert_eq!(short("not a time"), None);
        // Local: the same instant, with the offset of that instant.
        let t = DateTime::parse_from_rfc3339("2026-07-01T12:00:00Z").unwrap();
        let shown = local(t);
        assert_eq!(shown.timestamp(), t.timestamp());
    }
}
