//! Reads shared by the live tails of one job: the viewers a commit wakes
//! at the same place make one store read between them, not one each.
//!
//! A read may be joined only by a viewer woken by the *same* commit
//! ([`ByCommit`]): the read was started by a viewer that had received that
//! commit, so it holds everything the commit (and every one before it)
//! made, which is all a joiner knows of. A viewer woken otherwise (its
//! first read, a lag, the safety net) reads alone.

use std::collections::HashMap;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use futures_util::future::{BoxFuture, FutureExt, Shared, WeakShared};
use joblog_store::Committed;

/// A commit, compared and hashed by identity: every viewer receives the
/// same `Arc` from the broadcast. Held in a key, it keeps its address
/// from being reused while the key exists.
#[derive(Clone)]
pub(crate) struct ByCommit(pub(crate) Arc<Committed>);

impl PartialEq for ByCommit {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ByCommit {}

impl Hash for ByCommit {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.0) as usize).hash(state)
    }
}

/// Reads in flight by key, each run once for everyone who asks for it
/// while it runs. The map holds weak handles: when every viewer waiting
/// for a read has gone, the read is dropped, and so is its entry at the
/// next insertion.
pub(crate) struct SharedReads<K, T: Clone> {
    inflight: Mutex<HashMap<K, WeakShared<BoxFuture<'static, T>>>>,
}

impl<K, T: Clone> Default for SharedReads<K, T> {
    fn default() -> Self {
        SharedReads {
            inflight: Mutex::new(HashMap::new()),
        }
    }
}

impl<K, T> SharedReads<K, T>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    T: Clone + Send + Sync + 'static,
{
    /// The result of the read in flight under `key`, or of `load()`
    /// started now (and joinable until it ends).
    pub(crate) async fn get<F>(self: &Arc<Self>, key: K, load: impl FnOnce() -> F) -> T
    where
        F: Future<Output = T> + Send + 'static,
    {
        let read = {
            let mut inflight = self.lock();
            match inflight.get(&key).and_then(WeakShared::upgrade) {
                Some(read) => read,
                None => {
                    inflight.retain(|_, r| r.upgrade().is_some());
                    let read = Self::start(Arc::downgrade(self), key.clone(), load());
                    if let Some(weak) = read.downgrade() {
                        inflight.insert(key, weak);
                    }
                    read
                }
            }
        };
        read.await
    }

    /// `load` as a shared future that leaves the map as soon as it has
    /// its result: a viewer that asks later reads anew.
    fn start<F>(reads: std::sync::Weak<Self>, key: K, load: F) -> Shared<BoxFuture<'static, T>>
    where
        F: Future<Output = T> + Send + 'static,
    {
        async move {
            let out = load.await;
            if let Some(reads) = reads.upgrade() {
                reads.lock().remove(&key);
            }
            out
        }
        .boxed()
        .shared()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, WeakShared<BoxFuture<'static, T>>>> {
        self.inflight.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn commit() -> ByCommit {
        ByCommit(Arc::new(Committed::default()))
    }

    /// A hundred viewers woken by one commit at one place: one load; woken
    /// by another commit, or at another place, loads of their own; and a
    /// load that has ended is not joined.
    #[tokio::test]
    async fn viewers_woken_by_one_commit_at_one_place_share_one_read() {
        let reads: Arc<SharedReads<(u64, ByCommit), u64>> = Arc::default();
        let loads = Arc::new(AtomicUsize::new(0));
        let (c1, c2) = (commit(), commit());
        let gate = Arc::new(tokio::sync::Notify::new());
        let read = |at: u64, c: &ByCommit| {
            let (reads, loads, gate, c) = (reads.clone(), loads.clone(), gate.clone(), c.clone());
            async move {
                reads
                    .get((at, c), || async move {
                        loads.fetch_add(1, Ordering::SeqCst);
                        gate.notified().await;
                        at * 10
                    })
                    .await
            }
        };
        let mut viewers: Vec<_> = (0..100).map(|_| tokio::spawn(read(5, &c1))).collect();
        viewers.push(tokio::spawn(read(5, &c2)));
        viewers.push(tokio::spawn(read(6, &c1)));
        while loads.load(Ordering::SeqCst) < 3 {
            tokio::task::yield_now().await;
        }
        // Every viewer is waiting on one of the three reads.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert_eq!(loads.load(Ordering::SeqCst), 3);
        assert_eq!(reads.len(), 3);
        gate.notify_waiters();
        let mut got = Vec::new();
        for v in viewers {
            got.push(v.await.unwrap());
        }
        assert_eq!(got.iter().filter(|&&v| v == 50).count(), 101);
        assert_eq!(got.iter().filter(|&&v| v == 60).count(), 1);
        assert_eq!(reads.len(), 0, "ended reads leave the map");
        // The same key once its read has ended: read anew.
        let again = tokio::spawn(read(5, &c1));
        while loads.load(Ordering::SeqCst) < 4 {
            tokio::task::yield_now().await;
        }
        gate.notify_waiters();
        assert_eq!(again.await.unwrap(), 50);
        assert_eq!(loads.load(Ordering::SeqCst), 4);
    }

    /// A read whose viewers all went away is dropped, not kept running for
    /// nobody, and its entry goes at the next insertion.
    #[tokio::test]
    async fn a_read_nobody_waits_for_is_dropped() {
        let reads: Arc<SharedReads<(u64, ByCommit), u64>> = Arc::default();
        let c = commit();
        let waiter = {
            let (reads, c) = (reads.clone(), c.clone());
            tokio::spawn(async move { reads.get((1, c), std::future::pending::<u64>).await })
        };
        while reads.len() == 0 {
            tokio::task::yield_now().await;
        }
        waiter.abort();
        let _ = waiter.await;
        let fresh = reads.get((2, c.clone()), || async { 7 }).await;
        assert_eq!(fresh, 7);
        assert_eq!(reads.len(), 0, "the abandoned read's entry went");
        // And the key of the abandoned read starts a new one.
        assert_eq!(reads.get((1, c), || async { 9 }).await, 9);
    }
}
