//! Limits on failed sign-ins, so passwords cannot be guessed at speed:
//! [`BY_NAME`] failures of one name, or [`BY_ADDRESS`] from one address,
//! within [`WINDOW`], and further sign-ins of that name or from that
//! address are refused (`429`, `Retry-After`) until the oldest failure
//! leaves the window. A right password clears its name's failures.
//!
//! An attempt counts as a failure from the moment it is admitted, before
//! its password is checked, and is taken back if it succeeds: a burst of
//! guesses sent at once cannot all pass the check before the first is
//! counted, and people signing in from one address (a proxy, an office)
//! are never held by their own successes.
//!
//! Kept in each node's memory: behind several nodes, an attacker gets
//! each node's allowance (stated in docs/api.md). Bounded: at most
//! [`MAX_KEYS`] names and addresses are followed; past that, new ones are
//! not (expired ones are forgotten first), and the other limit holds. A
//! name no user can have is counted under one empty name.

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

/// An admitted sign-in, counted as a failure until it
/// [`succeeded`](SignInLimits::succeeded).
#[derive(Debug)]
pub(crate) struct Attempt {
    name: String,
    address: Option<IpAddr>,
    at: Instant,
}

impl SignInLimits {
    /// Admits a sign-in of `name` from `address` at `now`, counting it as
    /// a failure; `Err(wait)` when either is over its limit.
    pub fn attempt(
        &self,
        name: &str,
        address: Option<IpAddr>,
        now: Instant,
    ) -> Result<Attempt, Duration> {
        let name = match joblog_core::validate_user_name(name) {
            Ok(()) => name.to_string(),
            Err(_) => String::new(),
        };
        let a = self.by_address.wait(&address, BY_ADDRESS, now);
        let n = self.by_name.wait(&name, BY_NAME, now);
        if let Some(wait) = a.max(n) {
            return Err(wait);
        }
        self.by_name.add(name.clone(), now);
        self.by_address.add(address, now);
        Ok(Attempt {
            name,
            address,
            at: now,
        })
    }

    /// The password was right: the attempt is no failure, and its name's
    /// earlier failures are forgotten.
    pub fn succeeded(&self, attempt: Attempt) {
        self.by_name.clear(&attempt.name);
        self.by_address.take_back(&attempt.address, attempt.at);
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

    /// Forgets the failure counted at `at`, if it is still there.
    fn take_back(&self, key: &K, at: Instant) {
        let mut map = self.at.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(times) = map.get_mut(key) {
            if let Some(i) = times.iter().rposition(|t| *t == at) {
                times.remove(i);
            }
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

    fn address(last: u8) -> Option<IpAddr> {
        Some(IpAddr::from([192, 0, 2, last]))
    }

    #[test]
    fn a_name_is_held_after_five_attempts_until_the_first_leaves_the_window() {
        let l = SignInLimits::default();
        let t0 = Instant::now();
        let secs = |s: u64| t0 + Duration::from_secs(s);
        for i in 0..BY_NAME as u64 {
            // Counted as it is admitted: not yet checked, already counted.
            assert!(l.attempt("ada", address(1), secs(i)).is_ok());
        }
        let wait = l.attempt("ada", address(1), secs(10)).unwrap_err();
        assert_eq!(wait, WINDOW - Duration::from_secs(10));
        // Another name from the same address is not held; a right
        // password takes its attempt back.
        let bob = l.attempt("bob", address(1), secs(10)).unwrap();
        l.succeeded(bob);
        let ada = l
            .attempt("ada", address(1), t0 + WINDOW)
            .expect("the first attempt left the window");
        l.succeeded(ada);
        for _ in 0..BY_NAME - 1 {
            assert!(
                l.attempt("ada", address(1), t0 + WINDOW).is_ok(),
                "a success forgets the name's failures"
            );
        }
    }

    #[test]
    fn an_address_is_held_after_twenty_failures_whatever_the_names() {
        let l = SignInLimits::default();
        let t0 = Instant::now();
        for i in 0..BY_ADDRESS {
            l.attempt(&format!("name{i}"), address(7), t0).unwrap();
        }
        assert!(l.attempt("fresh", address(7), t0).is_err());
        let other = l.attempt("fresh", address(8), t0).unwrap();
        // A right password takes back its own attempt, not the others'.
        l.succeeded(other);
        assert!(l.attempt("fresh", address(7), t0).is_err());
    }

    #[test]
    fn people_signing_in_from_one_address_are_never_held() {
        let l = SignInLimits::default();
        let t0 = Instant::now();
        for i in 0..(BY_ADDRESS * 3) {
            let ok = l
                .attempt(&format!("user{i}"), address(9), t0)
                .expect("behind a proxy, people sign in");
            l.succeeded(ok);
        }
    }

    #[test]
    fn names_no_user_can_have_are_counted_as_one() {
        let l = SignInLimits::default();
        let t0 = Instant::now();
        for i in 0..BY_NAME as u8 {
            let junk = format!("{} {i}", "x".repeat(10_000));
            assert!(l.attempt(&junk, address(i), t0).is_ok());
        }
        assert!(l.attempt("not a name", address(99), t0).is_err());
        let names = l.by_name.at.lock().unwrap();
        assert!(names.keys().all(String::is_empty), "{:?}", names.keys());
    }
}
