//! Limits on failed sign-ins, so passwords cannot be guessed at speed:
//! [`BY_NAME`] failures of one name, or [`BY_ADDRESS`] from one address,
//! within [`WINDOW`], and further sign-ins of that name or from that
//! address are refused (`429`, `Retry-After`) until the oldest failure
//! leaves the window. A right password clears its name's failures.
//!
//! Kept in each node's memory: behind several nodes, an attacker gets
//! each node's allowance (stated in docs/api.md). Bounded: at most
//! [`MAX_KEYS`] names and addresses are followed; past that, new ones are
//! not (expired ones are forgotten first), and the other limit holds.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const WINDOW: Duration = Duration::from_secs(15 * 60);
pub const BY_NAME: usize = 5;
pub const BY_ADDRESS: usize = 20;
const MAX_KEYS: usize = 10_000;

#[derive(Debug, Default)]
pub(crate) struct SignInLimits {
    by_name: Failures<String>,
    by_address: Failures<Option<IpAddr>>,
}

impl SignInLimits {
    /// `Err(wait)` when `name` or `address` is over its limit at `now`.
    pub fn check(&self, name: &str, address: Option<IpAddr>, now: Instant) -> Result<(), Duration> {
        let a = self.by_address.wait(&address, BY_ADDRESS, now);
        let n = self.by_name.wait(&name.to_string(), BY_NAME, now);
        match a.max(n) {
            Some(wait) => Err(wait),
            None => Ok(()),
        }
    }

    pub fn failed(&self, name: &str, address: Option<IpAddr>, now: Instant) {
        self.by_name.add(name.to_string(), now);
        self.by_address.add(address, now);
    }

    pub fn succeeded(&self, name: &str) {
        self.by_name.clear(&name.to_string());
    }
}

#[derive(Debug)]
struct Failures<K> {
    at: Mutex<HashMap<K, VecDeque<Instant>>>,
}

impl<K> Default for Failures<K> {
    fn default() -> Self {
        Failures {
            at: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq + Clone> Failures<K> {
    /// How long until `key` may try again, if it is at `limit`.
    fn wait(&self, key: &K, limit: usize, now: Instant) -> Option<Duration> {
        let mut at = self.at.lock().unwrap_or_else(|p| p.into_inner());
        let times = at.get_mut(key)?;
        forget_old(times, now);
        if times.len() < limit {
            return None;
        }
        let oldest = *times.front()?;
        Some(
            (oldest + WINDOW)
                .saturating_duration_since(now)
                .max(Duration::from_secs(1)),
        )
    }

    fn add(&self, key: K, now: Instant) {
        let mut at = self.at.lock().unwrap_or_else(|p| p.into_inner());
        if !at.contains_key(&key) && at.len() >= MAX_KEYS {
            at.retain(|_, times| {
                forget_old(times, now);
                !times.is_empty()
            });
            if at.len() >= MAX_KEYS {
                return;
            }
        }
        let times = at.entry(key).or_default();
        forget_old(times, now);
        times.push_back(now);
        // More than any limit is never needed.
        while times.len() > BY_ADDRESS {
            times.pop_front();
        }
    }

    fn clear(&self, key: &K) {
        self.at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }
}

fn forget_old(times: &mut VecDeque<Instant>, now: Instant) {
    while times
        .front()
        .is_some_and(|t| now.duration_since(*t) >= WINDOW)
    {
        times.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_held_after_five_failures_until_the_first_leaves_the_window() {
        let l = SignInLimits::default();
        let t0 = Instant::now();
        let a = Some("192.0.2.1".parse().unwrap());
        for i in 0..BY_NAME as u64 {
            assert!(l.check("ada", a, t0 + Duration::from_secs(i)).is_ok());
            l.failed("ada", a, t0 + Duration::from_secs(i));
        }
        let wait = l.check("ada", a, t0 + Duration::from_secs(10)).unwrap_err();
        assert_eq!(wait, WINDOW - Duration::from_secs(10));
        // Another name from the same address is not held yet.
        assert!(l.check("bob", a, t0 + Duration::from_secs(10)).is_ok());
        assert!(
            l.check("ada", a, t0 + WINDOW).is_ok(),
            "the first failure left the window"
        );
        l.succeeded("ada");
        assert!(l.check("ada", a, t0 + Duration::from_secs(11)).is_ok());
    }

    #[test]
    fn an_address_is_held_after_twenty_failures_whatever_the_names() {
        let l = SignInLimits::default();
        let t0 = Instant::now();
        let a = Some("192.0.2.7".parse().unwrap());
        for i in 0..BY_ADDRESS {
            l.failed(&format!("name{i}"), a, t0);
        }
        assert!(l.check("fresh", a, t0).is_err());
        assert!(l
            .check("fresh", Some("192.0.2.8".parse().unwrap()), t0)
            .is_ok());
        // A right password clears its name, not its address.
        l.succeeded("fresh");
        assert!(l.check("fresh", a, t0).is_err());
    }
}
