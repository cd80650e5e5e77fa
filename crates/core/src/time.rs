//! Timestamps as microseconds since the Unix epoch, shown as RFC 3339 UTC.

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
        humantime::format_rfc3339_micros(self.to_system_time()).to_string()
    }
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
}
