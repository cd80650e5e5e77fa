//! Timestamps as microseconds since the Unix epoch, shown as RFC 3339 UTC,
//! and read from what people type for a point in time (`24h` ago,
//! `2026-11-22T10:00:00Z`).

use serde::{Serialize, Serializer};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point in time with microsecond precision, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub fn now() -> Self {
        let d = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        Timestamp(d.as_micros() as i64)
    }

    pub fn micros(self) -> i64 {
        self.0
    }

    /// Milliseconds from `self` to `later`, as the API's `duration_ms`.
    pub fn millis_until(self, later: Timestamp) -> f64 {
        (later.0 - self.0) as f64 / 1000.0
    }

    pub fn to_system_time(self) -> SystemTime {
        if self.0 >= 0 {
            UNIX_EPOCH + Duration::from_micros(self.0 as u64)
        } else {
            UNIX_EPOCH - Duration::from_micros(self.0.unsigned_abs())
        }
    }

    /// `2026-11-22T10:15:02.123456Z`
    pub fn to_rfc3339(self) -> String {
        self.rfc3339().to_string()
    }

    /// The time as [`Timestamp::to_rfc3339`] writes it, to be written
    /// into a buffer without a string of its own.
    pub fn rfc3339(self) -> impl std::fmt::Display {
        humantime::format_rfc3339_micros(self.to_system_time())
    }
}

/// A point in time as people give one to a listing: a duration back from
/// `now` (`30m`, `24h`, `7d`, `1h30m`), an RFC 3339 time
/// (`2026-11-22T10:00:00Z`, `2026-11-22T11:00:00.5+01:00`) or a date
/// (`2026-11-22`, midnight UTC). A duration reaching back before 1970
/// stops there: no job is older. The error says which forms are accepted.
pub fn parse_time_bound(text: &str, now: Timestamp) -> Result<Timestamp, String> {
    let t = text.trim();
    let starts_with_date = t.len() >= 10
        && t.is_char_boundary(10)
        && t[..10].bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
    let parsed = if starts_with_date {
        parse_rfc3339(t)
    } else {
        crate::parse_duration(t).ok().map(|ago| {
            let micros = i64::try_from(ago.as_micros()).unwrap_or(i64::MAX);
            Timestamp(now.0.saturating_sub(micros).max(0))
        })
    };
    parsed.ok_or_else(|| {
        format!(
            "{text:?} is neither a duration back from now (30m, 24h, 7d) nor a time \
             (2026-11-22T10:00:00Z, 2026-11-22T11:00:00+01:00, 2026-11-22)"
        )
    })
}

/// `YYYY-MM-DD`, or `YYYY-MM-DDTHH:MM:SS[.frac]` with `Z` or a `±HH:MM`
/// offset (`T` and `Z` in either case).
fn parse_rfc3339(t: &str) -> Option<Timestamp> {
    if t.len() == 10 {
        return parse_utc(&format!("{t}T00:00:00Z"));
    }
    let upper = t.to_ascii_uppercase();
    if let Some(utc) = upper.strip_suffix('Z') {
        return parse_utc(&format!("{utc}Z"));
    }
    // A numeric offset: the local time is that much ahead of UTC.
    let cut = upper.len().checked_sub(6)?;
    let (local, offset) = (upper.get(..cut)?, upper.get(cut..)?.as_bytes());
    let sign = match offset[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits = |a: u8, b: u8| -> Option<i64> {
        (a.is_ascii_digit() && b.is_ascii_digit()).then(|| i64::from((a - b'0') * 10 + (b - b'0')))
    };
    let (hours, minutes) = (digits(offset[1], offset[2])?, digits(offset[4], offset[5])?);
    if offset[3] != b':' || hours > 23 || minutes > 59 {
        return None;
    }
    let at = parse_utc(&format!("{local}Z"))?;
    Some(Timestamp(
        at.0 - sign * (hours * 3600 + minutes * 60) * 1_000_000,
    ))
}

fn parse_utc(t: &str) -> Option<Timestamp> {
    let at = humantime::parse_rfc3339(t).ok()?;
    let micros = at.duration_since(UNIX_EPOCH).ok()?.as_micros();
    Some(Timestamp(i64::try_from(micros).ok()?))
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_microseconds_utc() {
        let t = Timestamp(1_795_342_502_123_456);
        assert_eq!(t.to_rfc3339(), "2026-11-22T10:15:02.123456Z");
        assert_eq!(Timestamp(1000).millis_until(Timestamp(29_000)), 28.0);
    }

    #[test]
    fn time_bounds_are_durations_back_or_times() {
        let now = Timestamp(1_795_342_502_123_456);
        let hour = 3_600_000_000;
        let at = |t| parse_time_bound(t, now);
        assert_eq!(at("24h").unwrap(), Timestamp(now.0 - 24 * hour));
        assert_eq!(at(" 30m ").unwrap(), Timestamp(now.0 - hour / 2));
        assert_eq!(at("7d").unwrap(), Timestamp(now.0 - 7 * 24 * hour));
        assert_eq!(at("1h30m").unwrap(), Timestamp(now.0 - 3 * hour / 2));
        let ten = Timestamp(1_795_341_600_000_000);
        assert_eq!(ten.to_rfc3339(), "2026-11-22T10:00:00.000000Z");
        assert_eq!(at("2026-11-22T10:00:00Z").unwrap(), ten);
        assert_eq!(at("2026-11-22t10:00:00z").unwrap(), ten);
        assert_eq!(at("2026-11-22T11:30:00+01:30").unwrap(), ten);
        assert_eq!(at("2026-11-22T08:00:00-02:00").unwrap(), ten);
        assert_eq!(
            at("2026-11-22T10:00:00.25Z").unwrap(),
            Timestamp(ten.0 + 250_000)
        );
        assert_eq!(at("2026-11-22").unwrap(), Timestamp(ten.0 - 10 * hour));
        // Far enough back to leave the epoch behind: no overflow, and a
        // time that can be shown.
        assert_eq!(at("200000000y").unwrap(), Timestamp(0));
        assert_eq!(
            at("200000000y").unwrap().to_rfc3339(),
            "1970-01-01T00:00:00.000000Z"
        );
        for bad in [
            "yesterday",
            "",
            "24",
            "-1h",
            "2026-11-22T10:00:00",
            "2026-11-22T10:00:00+1:00",
            "2026-11-22T10:00:00+24:00",
            "2026-13-01",
            "2026-11-22 10:00",
            "2026-11-22T10:00:00+01:0é",
        ] {
            let e = at(bad).unwrap_err();
            assert!(
                e.contains("24h") && e.contains("2026-11-22T10:00:00Z"),
                "{bad}: {e}"
            );
        }
    }
}
