//! When a schedule fires: its cron expression (5 fields, an optional
//! seconds field first, or a shortcut such as `@hourly`) read in an IANA
//! time zone. Pure computation on instants (`Timestamp`s): no clock, no
//! storage — the scheduler asks, with the time it has.
//!
//! Daylight saving time follows Debian's (Vixie) cron: an expression
//! whose minute and hour fields both do not start with `*` is a fixed
//! time (`30 2 * * *`, `30,40 2 * * *`, `30 1-3 * * *`, `@daily`): a
//! fire that falls in a skipped hour (02:30 on the night clocks spring
//! forward) fires at the first instant after it, once however many fall
//! there, and one that falls in a repeated hour fires once, the first
//! time. The others (`*/15 * * * *`, `0 * * * *`, `@hourly`) fire by the
//! clock on the wall in each offset, so a repeated hour has their fires
//! twice and a skipped hour has none. Fixed times are walked on the wall
//! clock (croner in UTC standing in for it) and placed in the zone here;
//! croner's own rule, which takes only single values for fixed, would
//! skip `30,40 2 * * *` in the gap and run it twice in the repeated hour.

use std::str::FromStr;

use chrono::{DateTime, LocalResult, NaiveDateTime, TimeZone as _, Utc};

use crate::job::invalid;
use crate::{Timestamp, ValidationError};

/// Wall-clock times a fixed-time walk places before it gives up: more
/// than the fires of a repeated hour (3,600 with a seconds field).
const MAX_PLACED: usize = 4_000;
/// The longest gap a zone's change skips that is searched past (a day:
/// Pacific/Apia skipped 2011-12-30).
const MAX_GAP_MINUTES: usize = 1_500;

/// A cron expression as given, and parsed.
#[derive(Debug, Clone)]
pub struct CronExpr {
    text: String,
    cron: croner::Cron,
    seconds: bool,
    /// A fixed time (see the module's doc), not a wall-clock interval.
    fixed: bool,
}

impl PartialEq for CronExpr {
    fn eq(&self, other: &CronExpr) -> bool {
        self.text == other.text
    }
}

/// Shortcuts croner does not know, as the patterns they stand for.
const ALIASES: [(&str, &str); 1] = [("@midnight", "0 0 * * *")];

impl CronExpr {
    /// Five fields (minute hour day-of-month month day-of-week), or six
    /// with the seconds first, or `@yearly`, `@annually`, `@monthly`,
    /// `@weekly`, `@daily`, `@midnight`, `@hourly`. Names of months and
    /// days (`JAN`, `MON`) and croner's `L`, `#` and `W` are taken. A
    /// day of month and a day of week both given match either, even when
    /// one of them starts with `*` (`*/2 * MON` is every other day *or*
    /// Monday; crontab(5) would take the `*` field for "any" and match
    /// both). `N/S` is `N-<field's last>/S` (`5/20` in the minutes is
    /// 5, 25, 45), as croniter and cronsim read it.
    ///
    /// Every second (`*` in the seconds field) is refused: a sixth field
    /// given by mistake (a year, or a copy from another tool) would fire
    /// 60 times a minute. A schedule that means it writes `*/1` or
    /// `0-59`.
    pub fn parse(text: &str) -> Result<CronExpr, ValidationError> {
        let field = "cron";
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(invalid(field, "is empty"));
        }
        let pattern = ALIASES
            .iter()
            .find(|(alias, _)| alias.eq_ignore_ascii_case(trimmed))
            .map_or(trimmed, |(_, pattern)| pattern);
        let fields: Vec<&str> = pattern.split_whitespace().collect();
        let seconds = match (pattern.starts_with('@'), fields.len()) {
            (true, _) | (false, 5) => false,
            (false, 6) => true,
            (false, n) => {
                return Err(invalid(
                    field,
                    format!(
                        "{trimmed:?} has {n} fields; give 5 (minute hour day-of-month month day-of-week), \
                         6 with the seconds first, or a shortcut such as @hourly"
                    ),
                ))
            }
        };
        if seconds && fields[0] == "*" {
            return Err(invalid(
                field,
                format!(
                    "{trimmed:?} would fire every second (its first field, the seconds, is *); \
                     write it as */1 if that is meant, or give 5 fields"
                ),
            ));
        }
        let parser = croner::parser::CronParser::builder()
            .seconds(croner::parser::Seconds::Optional)
            .year(croner::parser::Year::Disallowed)
            .build();
        let expanded = expand_steps(&fields, seconds);
        let cron = parser.parse(&expanded).map_err(|e| {
            // croner says "Number out of bounds" without saying where.
            let why = out_of_range(&fields, seconds).unwrap_or_else(|| e.to_string());
            invalid(
                field,
                format!("{trimmed:?} is not a cron expression: {why}"),
            )
        })?;
        Ok(CronExpr {
            text: trimmed.to_string(),
            cron,
            seconds,
            fixed: is_fixed_time(pattern, &fields, seconds),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether it has a seconds field (fires can be less than a minute
    /// apart).
    pub fn has_seconds(&self) -> bool {
        self.seconds
    }
}

/// An IANA time zone (`Europe/Berlin`, `America/New_York`, `UTC`), from
/// the database compiled into joblog (chrono-tz), so fires do not change
/// with the host's tzdata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone(pub(super) chrono_tz::Tz);

impl Zone {
    pub const UTC: Zone = Zone(chrono_tz::Tz::UTC);

    pub fn parse(name: &str) -> Result<Zone, ValidationError> {
        chrono_tz::Tz::from_str(name.trim()).map(Zone).map_err(|_| {
            invalid(
                "timezone",
                format!(
                    "{name:?} is not an IANA time zone name (such as UTC, Europe/Berlin, America/New_York)"
                ),
            )
        })
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }
}

/// Whether an expression is a fixed time: its minute and hour fields both
/// do not start with `*` (or `?`). Of the shortcuts, only `@hourly` runs
/// by the wall clock.
fn is_fixed_time(pattern: &str, fields: &[&str], seconds: bool) -> bool {
    if pattern.starts_with('@') {
        return !pattern.eq_ignore_ascii_case("@hourly");
    }
    let first = usize::from(seconds);
    fields[first..first + 2]
        .iter()
        .all(|f| !f.starts_with(['*', '?']))
}

/// `fields` as croner takes them: each `N/S` item becomes `N-<last>/S`,
/// the last value of its field (croner refuses `N/S`). A shortcut
/// (`@daily`) is one field and passes as it is.
fn expand_steps(fields: &[&str], seconds: bool) -> String {
    const LAST: [u32; 6] = [59, 59, 23, 31, 12, 6];
    let lasts = if seconds { &LAST[..] } else { &LAST[1..] };
    if fields.len() != lasts.len() {
        return fields.join(" ");
    }
    let field = |(text, last): (&&str, &u32)| -> String {
        text.split(',')
            .map(|item| match item.split_once('/') {
                Some((start, step))
                    if !start.is_empty() && start.bytes().all(|b| b.is_ascii_digit()) =>
                {
                    format!("{start}-{last}/{step}")
                }
                _ => item.to_string(),
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    fields
        .iter()
        .zip(lasts)
        .map(field)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first field of `fields` holding a number outside its range, said
/// with the field's name and range: `the hour field "25" is out of
/// range (0–23)`. Steps (after `/`) are counts, not bounds.
fn out_of_range(fields: &[&str], seconds: bool) -> Option<String> {
    const NAMED: [(&str, u32, u32); 6] = [
        ("second", 0, 59),
        ("minute", 0, 59),
        ("hour", 0, 23),
        ("day-of-month", 1, 31),
        ("month", 1, 12),
        ("day-of-week", 0, 7),
    ];
    let names = if seconds { &NAMED[..] } else { &NAMED[1..] };
    for (text, (name, low, high)) in fields.iter().zip(names) {
        for item in text.split(',') {
            let range = item.split('/').next().unwrap_or("");
            for bound in range.split('-') {
                let Ok(n) = bound.parse::<u32>() else {
                    continue;
                };
                if n < *low || n > *high {
                    return Some(format!(
                        "the {name} field {text:?} is out of range ({low}–{high})"
                    ));
                }
            }
        }
    }
    None
}

/// When a schedule fires: its expression in its zone.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    pub cron: CronExpr,
    pub zone: Zone,
}

impl Timing {
    /// The first fire strictly after `after`, or `None` if the pattern
    /// never fires again (`0 0 30 2 *`, or past croner's year 5000).
    pub fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        let start = self.zone.0.timestamp_micros(after.0).single()?;
        if !self.cron.fixed {
            let next = self.cron.cron.find_next_occurrence(&start, false).ok()?;
            return Some(Timestamp(next.timestamp_micros()));
        }
        // Wall-clock times after `after`'s own, each placed in the zone;
        // one placed at or before `after` (the first half of a repeated
        // hour, or the end of a gap) has fired already.
        let mut wall = Utc.from_utc_datetime(&start.naive_local());
        for _ in 0..MAX_PLACED {
            wall = self.cron.cron.find_next_occurrence(&wall, false).ok()?;
            let placed = self.place(wall.naive_utc())?;
            if placed > after {
                return Some(placed);
            }
        }
        None
    }

    /// The last fire strictly before `before`, if any.
    pub fn previous_before(&self, before: Timestamp) -> Option<Timestamp> {
        let start = self.zone.0.timestamp_micros(before.0).single()?;
        if !self.cron.fixed {
            let prev = self
                .cron
                .cron
                .find_previous_occurrence(&start, false)
                .ok()?;
            return Some(Timestamp(prev.timestamp_micros()));
        }
        // In the later half of a repeated hour, the wall-clock times up to
        // the hour's end fired (in its first half) before `before`: the
        // walk back starts from the wall clock of the earlier offset.
        let local = start.naive_local();
        let from = match self.zone.0.from_local_datetime(&local) {
            LocalResult::Ambiguous(earlier, later) if later == start => {
                local + (later.naive_utc() - earlier.naive_utc())
            }
            _ => local,
        };
        let mut wall = Utc.from_utc_datetime(&from);
        for _ in 0..MAX_PLACED {
            wall = self.cron.cron.find_previous_occurrence(&wall, false).ok()?;
            let placed = self.place(wall.naive_utc())?;
            if placed < before {
                return Some(placed);
            }
        }
        None
    }

    /// The instant a fixed time on the wall fires at: itself, the first of
    /// its two instants in a repeated hour, or in a skipped hour the first
    /// instant after it.
    fn place(&self, wall: NaiveDateTime) -> Option<Timestamp> {
        let zone = self.zone.0;
        let placed: DateTime<chrono_tz::Tz> = match zone.from_local_datetime(&wall) {
            LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => t,
            LocalResult::None => {
                // The first whole minute past the gap, then back to its
                // first second (some zones' old offsets had seconds).
                let minute = chrono::Duration::minutes(1);
                let second = chrono::Duration::seconds(1);
                let mut after = wall;
                let mut found = None;
                for _ in 0..MAX_GAP_MINUTES {
                    after += minute;
                    if let Some(t) = zone.from_local_datetime(&after).earliest() {
                        found = Some(t);
                        break;
                    }
                }
                let mut first = found?;
                while let Some(t) = zone
                    .from_local_datetime(&(first.naive_local() - second))
                    .earliest()
                    .filter(|t| t.naive_local() > wall)
                {
                    first = t;
                }
                first
            }
        };
        Some(Timestamp(placed.timestamp_micros()))
    }

    /// The fires after `after`, in order.
    pub fn fires_after(&self, after: Timestamp) -> impl Iterator<Item = Timestamp> + '_ {
        std::iter::successors(self.next_after(after), move |t| self.next_after(*t))
    }
}

#[cfg(test)]
mod range_tests {
    use super::*;

    /// `N/S` runs from N to the field's end, every S: `5/20` in the
    /// minutes fires at :05, :25 and :45 of each hour; the text stays as
    /// written.
    #[test]
    fn n_slash_s_runs_from_n_to_the_end_of_its_field() {
        assert_eq!(
            expand_steps(&["5/20", "*", "*", "*", "*"], false),
            "5-59/20 * * * *"
        );
        assert_eq!(
            expand_steps(&["0", "1/6,3", "*/2", "1/3", "0/2"], false),
            "0 1-23/6,3 */2 1-12/3 0-6/2"
        );
        assert_eq!(
            expand_steps(&["10/15", "0", "*", "*", "*", "*"], true),
            "10-59/15 0 * * * *"
        );
        let minutes = CronExpr::parse("5/20 * * * *").unwrap();
        let timing = Timing {
            cron: minutes,
            zone: Zone::parse("UTC").unwrap(),
        };
        // 2026-11-24T00:00:00Z and the next three fires: :05, :25, :45.
        let mut at = Timestamp(1_795_478_400_000_000);
        let mut minutes_seen = Vec::new();
        for _ in 0..4 {
            at = timing.next_after(at).unwrap();
            minutes_seen.push((at.0 - 1_795_478_400_000_000) / 60_000_000);
        }
        assert_eq!(minutes_seen, [5, 25, 45, 65]);
        assert_eq!(
            CronExpr::parse("0 5/20 * * *").unwrap().as_str(),
            "0 5/20 * * *"
        );
    }

    /// A number out of its field's range is named with the field and the
    /// range, for 5 and 6 fields; steps are not bounds.
    #[test]
    fn an_out_of_range_field_is_named_with_its_range() {
        for (expr, said) in [
            ("0 25 * * *", "the hour field \"25\" is out of range (0–23)"),
            (
                "61 * * * *",
                "the minute field \"61\" is out of range (0–59)",
            ),
            (
                "0 0 32 * *",
                "the day-of-month field \"32\" is out of range (1–31)",
            ),
            (
                "0 0 1 13 *",
                "the month field \"13\" is out of range (1–12)",
            ),
            (
                "0 0 * * 1-9",
                "the day-of-week field \"1-9\" is out of range (0–7)",
            ),
            (
                "70 0 0 * * *",
                "the second field \"70\" is out of range (0–59)",
            ),
            (
                "0 0-24/2 * * *",
                "the hour field \"0-24/2\" is out of range (0–23)",
            ),
        ] {
            let e = CronExpr::parse(expr).unwrap_err();
            assert!(e.message.ends_with(said), "{expr}: {}", e.message);
        }
        assert!(CronExpr::parse("0 */5 * * *").is_ok());
    }
}
