//! The psu load on its own, for a scenario that measures something else
//! under it (`bench tail`): the same batches of concurrent jobs, back to
//! back, until told to stop; no checkpoints, no retrievals.

use tokio::sync::watch;

use super::super::stats::median;
use super::super::BenchArgs;
use super::Psu;
use joblog_client::Api;

/// What the load did while it ran.
#[derive(Debug, Clone, Default)]
pub(crate) struct LoadFigures {
    pub(crate) jobs: u64,
    /// Jobs that did not succeed with every line.
    pub(crate) failed: u64,
    /// Median `duration_ms` of the jobs of the last `--window-batches` batches.
    pub(crate) exec_median: Option<f64>,
    /// Median wall time of every batch, submit to the last job seen finished.
    pub(crate) batch_median: Option<f64>,
}

/// Runs batches until `stop` says so (checked between batches), telling
/// `batches` how many have finished after each one. Fails if the first
/// batch fails (the load would not be the psu load), as `bench psu` does.
pub(crate) async fn run_until(
    api: &Api,
    args: &BenchArgs,
    mut stop: watch::Receiver<bool>,
    batches: watch::Sender<u64>,
) -> anyhow::Result<LoadFigures> {
    let mut psu = Psu::new(api, args, None);
    let mut walls = Vec::new();
    let mut n = 0u64;
    while !*stop.borrow_and_update() {
        psu.batch().await?;
        n += 1;
        walls.extend(psu.batch_walls.back().copied());
        batches.send_replace(n);
    }
    let durations: Vec<f64> = psu.durations.iter().copied().collect();
    Ok(LoadFigures {
        jobs: psu.jobs,
        failed: psu.failed,
        exec_median: median(&durations),
        batch_median: median(&walls),
    })
}
