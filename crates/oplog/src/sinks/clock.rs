//! The time the sinks go by: a [`Clock`] the file sink asks when to rotate
//! (a [`ManualClock`] lets tests cross midnight without waiting), and UTC
//! calendar text for rotated names and syslog headers that, unlike
//! humantime's, cannot panic on a time before 1970.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use joblog_core::Timestamp;

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// Where a sink reads the time.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that stays where it is set: for tests of daily rotation.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(at: Timestamp) -> ManualClock {
        ManualClock(AtomicI64::new(at.0))
    }

    pub fn set(&self, at: Timestamp) {
        self.0.store(at.0, Ordering::Relaxed);
    }

    pub fn advance(&self, by: Duration) {
        let micros = i64::try_from(by.as_micros()).unwrap_or(i64::MAX);
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_add(micros))
            });
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::Relaxed))
    }
}

/// `t` as a [`Timestamp`]; before 1970 it is 1970.
pub fn timestamp_of(t: SystemTime) -> Timestamp {
    let micros = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros());
    Timestamp(i64::try_from(micros).unwrap_or(i64::MAX))
}

/// The UTC day `at` falls on, counted from 1970-01-01.
pub fn utc_day(at: Timestamp) -> i64 {
    at.0.div_euclid(MICROS_PER_DAY)
}

/// A UTC time broken into its calendar fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utc {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub micros: u32,
}

impl Utc {
    /// Times before 1970 are taken as 1970-01-01T00:00:00Z: no log line
    /// is older, and a wrong clock must not make a name that sorts
    /// before every real one.
    pub fn of(at: Timestamp) -> Utc {
        let micros = at.0.max(0);
        let days = micros.div_euclid(MICROS_PER_DAY);
        let in_day = micros.rem_euclid(MICROS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        let secs = in_day / 1_000_000;
        Utc {
            year,
            month,
            day,
            hour: (secs / 3600) as u32,
            minute: (secs / 60 % 60) as u32,
            second: (secs % 60) as u32,
            micros: (in_day % 1_000_000) as u32,
        }
    }

    /// `2026-11-24T02:45:47.123456Z`, as RFC 5424 wants its TIMESTAMP.
    pub fn rfc3339(&self) -> String {
        self.with_time_separator(':')
    }

    /// `2026-11-24T02-45-47.123456Z`: RFC 3339 with `-` for `:`, which
    /// some file systems and tools (scp, Windows shares) do not take in
    /// a name. Fixed width, so names sort as times do.
    pub fn file_name_part(&self) -> String {
        self.with_time_separator('-')
    }

    fn with_time_separator(&self, sep: char) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}{sep}{:02}{sep}{:02}.{:06}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.micros
        )
    }
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_text_agrees_with_the_core_formatter() {
        // Leap days, century rules, the last microsecond of a year.
        for micros in [
            0,
            951_782_400_000_000,     // 2000-02-29
            4_107_542_399_999_999,   // 2100-02-28T23:59:59.999999
            1_795_488_347_123_456,   // 2026-11-24
            1_709_164_800_000_001,   // 2024-02-29
            1_735_689_599_999_999,   // 2024-12-31T23:59:59.999999
            253_402_300_799_999_999, // 9999-12-31T23:59:59.999999
        ] {
            let t = Timestamp(micros);
            assert_eq!(Utc::of(t).rfc3339(), t.to_rfc3339(), "{micros}");
        }
    }

    #[test]
    fn names_use_dashes_and_times_before_1970_do_not_panic() {
        let t = Timestamp(1_795_488_347_123_456);
        assert_eq!(Utc::of(t).file_name_part(), "2026-11-24T02-45-47.123456Z");
        assert_eq!(
            Utc::of(Timestamp(-5)).rfc3339(),
            "1970-01-01T00:00:00.000000Z"
        );
        assert_eq!(Utc::of(Timestamp(i64::MAX)).year, 294_247);
    }

    #[test]
    fn days_change_at_utc_midnight() {
        let midnight = Timestamp(1_795_564_800_000_000); // 2026-11-25T00:00:00Z
        assert_eq!(Utc::of(midnight).rfc3339(), "2026-11-25T00:00:00.000000Z");
        assert_eq!(utc_day(midnight), utc_day(Timestamp(midnight.0 - 1)) + 1);
        assert_eq!(
            utc_day(midnight),
            utc_day(Timestamp(midnight.0 + 86_399_999_999))
        );
    }

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(Timestamp(10));
        assert_eq!(clock.now(), Timestamp(10));
        clock.advance(Duration::from_secs(1));
        assert_eq!(clock.now(), Timestamp(1_000_010));
        clock.set(Timestamp(3));
        assert_eq!(clock.now(), Timestamp(3));
    }
}
