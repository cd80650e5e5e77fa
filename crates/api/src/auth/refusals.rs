//! Which refusals are written to the audit trail: the first of a kind
//! from one source (refused tokens by address, refused roles by actor),
//! then at most one per [`WINDOW`], carrying how many were refused in
//! between. A client trying made-up tokens, or a viewer trying admin
//! routes, as fast as it can costs the trail one entry a minute, not one
//! per request; the access log still has every request.

use std::collections::HashMap;
use std::hash::Hash;
#[cfg(test)]
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// At most one `token.refused` entry per address this often.
pub(crate) const WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered at most; past it, the oldest are forgotten (a
/// forgotten address's next refusal is written, with what it had).
const MAX_ADDRESSES: usize = 4096;

#[derive(Debug)]
pub(crate) struct Refusals<K> {
    by_peer: Mutex<HashMap<K, Seen>>,
}

impl<K> Default for Refusals<K> {
    fn default() -> Self {
        Refusals {
            by_peer: Mutex::new(HashMap::new()),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    written_at: Instant,
    /// Refused since, not written.
    held: u64,
}

impl<K: Hash + Eq + Clone> Refusals<K> {
    /// Whether a refusal from `peer` at `now` is written: `Some(n)` with
    /// the `n` refusals from it not written since its last entry, or
    /// `None` (counted, for the next).
    pub(crate) fn admit(&self, peer: K, now: Instant) -> Option<u64> {
        let mut by_peer = self.by_peer.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(seen) = by_peer.get_mut(&peer) {
            if now.duration_since(seen.written_at) < WINDOW {
                seen.held += 1;
                return None;
            }
            let held = seen.held;
            *seen = Seen {
                written_at: now,
                held: 0,
            };
            return Some(held);
        }
        if by_peer.len() >= MAX_ADDRESSES {
            // Those past their window first; else the oldest writes.
            by_peer.retain(|_, s| now.duration_since(s.written_at) < WINDOW);
            if by_peer.len() >= MAX_ADDRESSES {
                let oldest = by_peer
                    .iter()
                    .min_by_key(|(_, s)| s.written_at)
                    .map(|(p, _)| p.clone());
                if let Some(oldest) = oldest {
                    by_peer.remove(&oldest);
                }
            }
        }
        by_peer.insert(
            peer,
            Seen {
                written_at: now,
                held: 0,
            },
        );
        Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_entry_per_address_per_window_carrying_the_rest() {
        let r = Refusals::<Option<IpAddr>>::default();
        let a = Some(IpAddr::from([10, 0, 0, 1]));
        let b = Some(IpAddr::from([10, 0, 0, 2]));
        let t0 = Instant::now();
        assert_eq!(r.admit(a, t0), Some(0));
        for i in 1..=1000 {
            assert_eq!(r.admit(a, t0 + Duration::from_millis(i)), None);
        }
        assert_eq!(r.admit(b, t0), Some(0), "another address is its own");
        assert_eq!(r.admit(a, t0 + WINDOW), Some(1000));
        assert_eq!(r.admit(a, t0 + WINDOW), None);
    }

    #[test]
    fn the_addresses_remembered_are_bounded() {
        let r = Refusals::<Option<IpAddr>>::default();
        let t0 = Instant::now();
        for i in 0..(MAX_ADDRESSES as u32 + 100) {
            let peer = Some(IpAddr::from(i.to_be_bytes()));
            assert_eq!(r.admit(peer, t0), Some(0));
        }
        assert!(r.by_peer.lock().unwrap().len() <= MAX_ADDRESSES);
    }
}
