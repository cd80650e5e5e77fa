//! The engine's own metrics: jobs' waits and runs, the pool, and the
//! scheduler's fires (the sealer registers its own).

use joblog_core::JobState;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone)]
pub(crate) struct Metrics {
    pub(crate) queue_wait: Histogram,
    pub(crate) run_time: Histogram,
    pub(crate) finished: Family<Vec<(String, String)>, Counter>,
    pub(crate) in_use: Gauge,
    pub(crate) fire_lateness: Histogram,
    pub(crate) fires: Counter,
    pub(crate) fires_skipped: Counter,
    pub(crate) storage_low: Gauge,
}

impl Metrics {
    /// The metrics of an engine of `max_concurrency` slots, registered.
    pub(crate) fn register(registry: &mut Registry, max_concurrency: usize) -> Metrics {
        let metrics = Metrics {
            queue_wait: Histogram::new(joblog_core::exponential_buckets(0.001, 4.0, 10)),
            run_time: Histogram::new(joblog_core::exponential_buckets(0.01, 4.0, 10)),
            finished: Family::default(),
            in_use: Gauge::default(),
            // 0.5 ms to 16 s, doubling: fine enough to read a p99 of a few ms.
            fire_lateness: Histogram::new(joblog_core::exponential_buckets(0.0005, 2.0, 16)),
            fires: Counter::default(),
            fires_skipped: Counter::default(),
            storage_low: Gauge::default(),
        };
        registry.register(
            "joblog_storage_low",
            "1 while the data directory's disk has less free space than store.min_free_bytes \
             (new jobs refused), as last measured (at a submission or a /healthz)",
            metrics.storage_low.clone(),
        );
        registry.register(
            "joblog_schedule_fire_lateness_seconds",
            "From a schedule's fire time to its job queued (committed)",
            metrics.fire_lateness.clone(),
        );
        registry.register(
            "joblog_schedule_fires",
            "Jobs made by this node's scheduler for fires of schedules",
            metrics.fires.clone(),
        );
        registry.register(
            "joblog_schedule_fires_skipped",
            "Fires that made no job (overlap skip, or missed while down)",
            metrics.fires_skipped.clone(),
        );
        registry.register(
            "joblog_job_queue_wait_seconds",
            "From submission to start",
            metrics.queue_wait.clone(),
        );
        registry.register(
            "joblog_job_run_seconds",
            "From start to finish (log committed)",
            metrics.run_time.clone(),
        );
        registry.register(
            "joblog_jobs_finished",
            "Jobs finished, by final state",
            metrics.finished.clone(),
        );
        registry.register(
            "joblog_pool_in_use",
            "Jobs running on this node (worker slots in use)",
            metrics.in_use.clone(),
        );
        let pool_max = Gauge::<i64>::default();
        pool_max.set(max_concurrency as i64);
        registry.register("joblog_pool_max", "Worker slots", pool_max);
        metrics
    }
}

pub(crate) fn state_label(s: JobState) -> Vec<(String, String)> {
    vec![("state".to_string(), s.name().to_string())]
}
