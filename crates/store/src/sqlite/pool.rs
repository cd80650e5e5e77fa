//! The read connections of a SQLite store: at most `size` reads run at
//! once, each on a connection kept open between reads. A burst beyond that
//! waits for a connection rather than opening one: opening a SQLite
//! connection (pragmas, reading the schema, preparing the statements
//! again) costs far more than a read of one page, and a connection opened
//! for a burst was closed right after it (docs/benchmarks.md, `bench tail`:
//! 100 live-tail viewers woken by one commit made most of the server's CPU
//! time go to opening and closing connections).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use tokio::sync::Semaphore;

use super::open_conn;
use crate::{ReadWait, Result, StoreError, SyncMode};

/// Reads at once (and connections kept) unless the options say otherwise.
pub(super) const DEFAULT_READERS: usize = 8;

pub(super) struct Readers {
    path: PathBuf,
    sync: SyncMode,
    vfs: Option<String>,
    idle: Arc<Mutex<Vec<Connection>>>,
    /// One permit per connection the pool may have: a read holds one from
    /// before it takes a connection until it has given it back.
    permits: Arc<Semaphore>,
    /// Connections opened so far.
    opened: Arc<AtomicUsize>,
    read_wait: Option<ReadWait>,
}

impl Readers {
    /// A pool of `size` connections (0 = [`DEFAULT_READERS`]), opened as
    /// reads first need them.
    pub(super) fn new(
        path: PathBuf,
        sync: SyncMode,
        vfs: Option<String>,
        size: usize,
        read_wait: Option<ReadWait>,
    ) -> Readers {
        let size = if size == 0 { DEFAULT_READERS } else { size };
        Readers {
            path,
            sync,
            vfs,
            idle: Arc::new(Mutex::new(Vec::with_capacity(size))),
            permits: Arc::new(Semaphore::new(size)),
            opened: Arc::new(AtomicUsize::new(0)),
            read_wait,
        }
    }

    /// Runs `f` on a connection of the pool, on the blocking thread pool,
    /// once one is free.
    pub(super) async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let asked = std::time::Instant::now();
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Unavailable("read pool closed".into()))?;
        let idle = self.idle.clone();
        let opened = self.opened.clone();
        let (path, sync, vfs) = (self.path.clone(), self.sync, self.vfs.clone());
        let read_wait = self.read_wait.clone();
        tokio::task::spawn_blocking(move || {
            // Held here, not by the caller: a caller that goes away while
            // the read runs must not let another read in beside it.
            let _permit = permit;
            let pooled = idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let conn = match pooled {
                Some(c) => c,
                None => {
                    opened.fetch_add(1, Ordering::Relaxed);
                    open_conn(&path, sync, true, vfs.as_deref())?
                }
            };
            ReadWait::observe(&read_wait, asked);
            let out = f(&conn);
            idle.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
            out
        })
        .await
        .map_err(|e| StoreError::Database(format!("read task failed: {e}")))?
    }

    /// Connections opened so far (never more than the pool's size).
    #[cfg(test)]
    pub(super) fn opened(&self) -> usize {
        self.opened.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use super::*;

    /// A burst of reads larger than the pool waits for its connections:
    /// no more than `size` run at once and no more than `size` are ever
    /// opened, however many reads come.
    #[test]
    fn a_burst_of_reads_reuses_the_pools_connections() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("joblog.db");
        drop(open_conn(&path, SyncMode::Normal, false, None).unwrap());
        let waits = Arc::new(Mutex::new(Vec::new()));
        let observed = waits.clone();
        let read_wait = ReadWait(Arc::new(move |d| observed.lock().unwrap().push(d)));
        let readers = Arc::new(Readers::new(
            path,
            SyncMode::Normal,
            None,
            3,
            Some(read_wait),
        ));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let now = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        rt.block_on(async {
            let reads: Vec<_> = (0..40)
                .map(|_| {
                    let (readers, now, peak) = (readers.clone(), now.clone(), peak.clone());
                    tokio::spawn(async move {
                        readers
                            .read(move |c| {
                                let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                                peak.fetch_max(n, Ordering::SeqCst);
                                std::thread::sleep(Duration::from_millis(5));
                                now.fetch_sub(1, Ordering::SeqCst);
                                Ok(c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))?)
                            })
                            .await
                    })
                })
                .collect();
            for r in reads {
                assert_eq!(r.await.unwrap().unwrap(), 1);
            }
        });
        let peak = peak.load(Ordering::SeqCst);
        assert!(peak <= 3, "{peak} reads at once");
        // Every read's wait is told; the last ones waited for 12 rounds
        // of 3 reads of 5 ms.
        let waits = waits.lock().unwrap();
        assert_eq!(waits.len(), 40);
        let longest = waits.iter().max().unwrap();
        assert!(*longest >= Duration::from_millis(50), "{longest:?}");
        assert!(peak > 1, "reads ran one at a time");
        assert!(
            readers.opened() <= 3,
            "{} connections opened",
            readers.opened()
        );
    }
}
