//! The HTTP load of `bench oplog`: a number of keep-alive connections,
//! each a task sending one GET after the other for a fixed time, on a
//! tokio runtime of its own with few threads, so that the load
//! generator's share of the two cores is small, known, and the same for
//! every server it loads.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use nix::sys::resource::{getrusage, UsageWho};
use reqwest::Url;

/// Longer than any answer of a healthy server on this machine: a request
/// that takes this long is counted as failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The load generator: its runtime, kept for the whole bench so each
/// server's connections stay open from one round to the next.
pub(super) struct LoadGen {
    rt: tokio::runtime::Runtime,
    connections: u32,
}

/// A connection idle this long is closed by the load generator itself:
/// well before the server's `http.header_read_timeout` (10 s) closes it,
/// which would race with the next round's first request on it (a reset).
const IDLE_CLOSE: Duration = Duration::from_secs(2);

/// Where the load goes: one server's client (its connection pool) and URL.
pub(super) struct Target {
    http: reqwest::Client,
    url: Url,
}

impl Target {
    pub(super) fn new(url: Url) -> anyhow::Result<Target> {
        joblog_client::install_tls_provider();
        let http = reqwest::Client::builder()
            .pool_idle_timeout(IDLE_CLOSE)
            .tcp_nodelay(true)
            .connect_timeout(REQUEST_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .build()
            .context("cannot set up the load's HTTP client")?;
        Ok(Target { http, url })
    }
}

/// One GET; an answer other than 2xx is a failure.
async fn get(http: &reqwest::Client, url: &Url) -> anyhow::Result<()> {
    let resp = http.get(url.clone()).send().await?;
    let status = resp.status();
    // The body is read whole, as a client would.
    resp.bytes().await?;
    if !status.is_success() {
        bail!("HTTP {status}");
    }
    Ok(())
}

/// What one stretch of load did.
#[derive(Debug, Clone, Default)]
pub(super) struct Sent {
    pub(super) ok: u64,
    pub(super) failed: u64,
    pub(super) first_error: Option<String>,
    /// From the first request sent to the last answer read.
    pub(super) elapsed: Duration,
    /// CPU time of this whole process (the load generator, mostly) meanwhile.
    pub(super) own_cpu: Duration,
}

impl Sent {
    pub(super) fn per_second(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.ok as f64 / s
        } else {
            0.0
        }
    }
}

/// User and system CPU time this process has used so far.
fn own_cpu() -> Duration {
    getrusage(UsageWho::RUSAGE_SELF).map_or(Duration::ZERO, |u| {
        let t = |tv: nix::sys::time::TimeVal| {
            Duration::new(
                tv.tv_sec().max(0) as u64,
                (tv.tv_usec().max(0) as u32) * 1000,
            )
        };
        t(u.user_time()) + t(u.system_time())
    })
}

impl LoadGen {
    pub(super) fn new(connections: u32, threads: u32) -> anyhow::Result<LoadGen> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads as usize)
            .thread_name("bench-load")
            .enable_all()
            .build()
            .context("cannot start the load generator's runtime")?;
        Ok(LoadGen { rt, connections })
    }

    /// Sends GETs to `target` on every connection until `duration` has
    /// passed; each connection finishes the request it is in.
    pub(super) async fn run(&self, target: &Target, duration: Duration) -> anyhow::Result<Sent> {
        let cpu = own_cpu();
        let started = Instant::now();
        let deadline = started + duration;
        let mut tasks = Vec::with_capacity(self.connections as usize);
        for _ in 0..self.connections {
            let http = target.http.clone();
            let url = target.url.clone();
            tasks.push(self.rt.spawn(async move {
                let mut sent = Sent::default();
                while Instant::now() < deadline {
                    match get(&http, &url).await {
                        Ok(_) => sent.ok += 1,
                        Err(e) => {
                            sent.failed += 1;
                            sent.first_error.get_or_insert_with(|| format!("{e:#}"));
                            // A server that refuses at once must not make
                            // this a busy loop.
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                }
                sent
            }));
        }
        let mut all = Sent::default();
        for task in tasks {
            let sent = task.await.context("a load connection's task failed")?;
            all.ok += sent.ok;
            all.failed += sent.failed;
            if all.first_error.is_none() {
                all.first_error = sent.first_error;
            }
        }
        all.elapsed = started.elapsed();
        all.own_cpu = own_cpu().saturating_sub(cpu);
        Ok(all)
    }

    /// Stops the runtime without waiting (dropping it inside the bench's
    /// own runtime would panic).
    pub(super) fn stop(self) {
        self.rt.shutdown_background();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_counts_answered_requests_only() {
        let sent = Sent {
            ok: 500,
            failed: 7,
            elapsed: Duration::from_millis(250),
            ..Sent::default()
        };
        assert!((sent.per_second() - 2000.0).abs() < 1e-9);
        assert_eq!(Sent::default().per_second(), 0.0);
    }
}
