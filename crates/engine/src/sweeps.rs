//! When the sweep for orphans runs (`orphans` says how): after each job,
//! at each SIGCHLD and every [`ORPHAN_SWEEP`], one sweep at a time, each
//! serving every ask made before it started, at most one per
//! `SWEEP_GAP`.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;

use crate::{orphans, Engine};

/// How often processes that outlived their jobs are looked for.
pub(crate) const ORPHAN_SWEEP: Duration = Duration::from_secs(5);

/// The least time from one sweep's start to the next's. A sweep reads a
/// `/proc` file per server thread; with jobs ending a thousand times a
/// second, one sweep per end (and per SIGCHLD) kept a blocking thread
/// busy for little: a leftover now waits at most this much longer.
const SWEEP_GAP: Duration = Duration::from_millis(10);

/// The sweeper's state.
pub(crate) struct Sweeps {
    /// Kills what is left of ended jobs outside their process groups.
    pub(crate) orphans: orphans::Sweeper,
    /// Held while a job's process is spawned and its pid recorded, so the
    /// orphan sweep never takes a new main process for an orphan.
    pub(crate) spawning: Mutex<()>,
    /// Sweeps asked for (a count), and the count the last finished sweep
    /// started after: a burst of job ends is served by one sweep, not
    /// one each (a sweep reads `/proc`, on a blocking thread).
    asked: watch::Sender<u64>,
    done: watch::Sender<u64>,
}

impl Sweeps {
    pub(crate) fn new(orphans: orphans::Sweeper) -> Sweeps {
        Sweeps {
            orphans,
            spawning: Mutex::new(()),
            asked: watch::channel(0).0,
            done: watch::channel(0).0,
        }
    }
}

impl Engine {
    /// Kills what is left of ended jobs: processes that escaped their
    /// job's process group and were handed to this process (see
    /// `orphans`).
    pub(crate) fn sweep_orphans(&self) {
        let reap_all = self.inner.config.reap_all_children;
        self.inner.sweeps.orphans.sweep(reap_all, || {
            let _spawning = self
                .inner
                .sweeps
                .spawning
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let running = self.lock_running();
            (
                running
                    .jobs
                    .iter()
                    .filter_map(|(id, j)| Some((*id, j.key.clone()?)))
                    .collect(),
                running.jobs.values().filter_map(|j| j.pgid).collect(),
            )
        });
    }

    /// Returns once a sweep that started after this call has finished:
    /// what the caller's job left behind is gone. Calls that come while a
    /// sweep runs share the next one.
    pub(crate) async fn sweep_soon(&self) {
        let mut asked = 0;
        self.inner.sweeps.asked.send_modify(|n| {
            *n += 1;
            asked = *n;
        });
        let mut done = self.inner.sweeps.done.subscribe();
        let _ = done.wait_for(|d| *d >= asked).await;
    }

    /// Runs the sweeps asked for, one at a time: each serves every ask
    /// made before it started.
    pub(crate) async fn sweeper(self) {
        let mut asked = self.inner.sweeps.asked.subscribe();
        loop {
            let done = *self.inner.sweeps.done.borrow();
            let Ok(now) = asked.wait_for(|a| *a > done).await.map(|a| *a) else {
                return;
            };
            let started = tokio::time::Instant::now();
            let engine = self.clone();
            let _ = tokio::task::spawn_blocking(move || engine.sweep_orphans()).await;
            self.inner.sweeps.done.send_replace(now);
            tokio::time::sleep_until(started + SWEEP_GAP).await;
        }
    }

    /// Every child that dies is reaped soon after, not at the next
    /// periodic sweep: a job forking thousands of short-lived orphans
    /// must not fill the process table with zombies. Signals that come
    /// while a sweep runs are served by the next one.
    pub(crate) fn sweep_at_each_sigchld(self) {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::child()) {
            Ok(mut children) => {
                tokio::spawn(async move {
                    while children.recv().await.is_some() {
                        self.sweep_soon().await;
                    }
                });
            }
            Err(e) => tracing::warn!(
                error = %e,
                "cannot watch SIGCHLD: orphans that exit are reaped only by the sweep every 5 s"
            ),
        }
    }

    /// A sweep now and then reaps what the one at each job's end could not
    /// see yet (a daemon whose parent exited after its job).
    pub(crate) async fn sweep_orphans_every(self, period: Duration) {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            self.sweep_soon().await;
        }
    }
}
