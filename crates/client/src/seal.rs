//! `joblog seal --all`: asks the server to seal the log of every finished
//! job (`POST /api/v1/sealing`), then follows its progress
//! (`GET /api/v1/sealing`) until the pass is over. The sealing runs on the
//! server: stopping this command does not stop it.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::api::Api;
use super::api::REQUEST_TIMEOUT;
use super::args::SealArgs;
use super::commands::Answer;
use crate::progress::Progress;

/// Between two looks at the server's progress.
const POLL: Duration = Duration::from_millis(500);

/// `GET /api/v1/sealing`.
#[derive(Debug, Clone, Deserialize)]
pub struct SealStatus {
    pub enabled: bool,
    pub sealing_all: bool,
    pub unsealed_jobs: u64,
}

/// Waits until the server has sealed every finished job's log (its
/// sealer caught up); how long that took. For `joblog bench`, which
/// measures sealed logs.
pub async fn wait_sealed(api: &Api, limit: Duration) -> anyhow::Result<Duration> {
    let url = api.url("/api/v1/sealing", &[])?;
    let started = std::time::Instant::now();
    loop {
        let now: SealStatus = api.decode(&api.get_raw(url.clone(), REQUEST_TIMEOUT).await?)?;
        if now.unsealed_jobs == 0 && !now.sealing_all {
            return Ok(started.elapsed());
        }
        if started.elapsed() > limit {
            anyhow::bail!(
                "{} finished jobs still unsealed after {limit:?}",
                now.unsealed_jobs
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(super) async fn run(api: &Api, a: SealArgs) -> anyhow::Result<Answer> {
    let url = api.url("/api/v1/sealing", &[])?;
    let started: SealStatus = api.decode(&api.post_raw(url.clone(), &Value::Null).await?)?;
    let total = started.unsealed_jobs;
    let progress = Progress::new(total, "jobs sealed");
    let mut last_line = std::time::Instant::now();
    let mut raw;
    loop {
        tokio::time::sleep(POLL).await;
        raw = api.get_raw(url.clone(), REQUEST_TIMEOUT).await?;
        let now: SealStatus = api.decode(&raw)?;
        let sealed = total.saturating_sub(now.unsealed_jobs);
        progress.set(sealed);
        if !now.sealing_all {
            break;
        }
        if last_line.elapsed() >= Duration::from_secs(10) {
            progress.note(format!(
                "sealing: {sealed} of {total} jobs sealed, {} left",
                now.unsealed_jobs
            ));
            last_line = std::time::Instant::now();
        }
    }
    drop(progress);
    if a.json {
        return Ok(Answer::Raw(raw));
    }
    let done: SealStatus = api.decode(&raw)?;
    Ok(Answer::Sealed {
        before: total,
        after: done.unsealed_jobs,
        enabled: done.enabled,
    })
}
