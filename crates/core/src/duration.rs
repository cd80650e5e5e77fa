//! Durations as people write them (`30s`, `12h`, `1h30m`), and the backoff
//! every retry loop of joblog waits by.

use std::time::Duration;

/// Parses `30d`, `12h`, `90s`, `1h30m`, `500ms` (humantime's syntax).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim())
        .map_err(|e| format!("invalid duration {s:?}: {e} (examples: 30s, 15m, 12h, 30d)"))
}

/// [`parse_duration`] for settings where zero makes no sense (timeouts,
/// periods).
pub fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(format!("{s:?}: must be more than 0"));
    }
    Ok(d)
}

/// Exponential backoff: each [`Backoff::next_delay`] is twice the one
/// before, up to a ceiling, until [`Backoff::reset`] after a success.
///
/// It only computes delays; the caller sleeps (a thread or a task), so the
/// same type serves the blocking writer and async loops alike.
#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(first: Duration, max: Duration) -> Self {
        Backoff {
            first,
            max,
            next: first.min(max),
        }
    }

    /// The delay to wait before the next attempt; doubles the one after.
    pub fn next_delay(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.max);
        d
    }

    /// Back to the first delay (the thing retried worked again).
    pub fn reset(&mut self) {
        self.next = self.first.min(self.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration("30d").unwrap(),
            Duration::from_secs(30 * 86400)
        );
        assert!(parse_duration("thirty").unwrap_err().contains("thirty"));
        assert_eq!(
            parse_positive_duration(" 1h30m ").unwrap(),
            Duration::from_secs(5400)
        );
        assert!(parse_positive_duration("0s")
            .unwrap_err()
            .contains("more than 0"));
    }

    #[test]
    fn backoff_doubles_to_its_ceiling_and_resets() {
        let ms = Duration::from_millis;
        let mut b = Backoff::new(ms(50), ms(300));
        let seen: Vec<_> = (0..5).map(|_| b.next_delay()).collect();
        assert_eq!(seen, [ms(50), ms(100), ms(200), ms(300), ms(300)]);
        b.reset();
        assert_eq!(b.next_delay(), ms(50));
    }
}
