//! The logs' figures in `/metrics`, read from the sinks' counters at each
//! scrape: per sink, entries written, dropped (queue full), failed writes,
//! entries lost to failures, and queue depth.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::sync::atomic::Ordering;

use super::router::Oplog;

#[derive(Debug)]
struct OplogMetrics(Oplog);

/// Reads one counter of a sink's figures.
type Read = fn(&super::router::SinkFigures) -> u64;

impl std::fmt::Debug for Oplog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Oplog")
    }
}

impl Oplog {
    /// Adds the logs' metrics to `registry`.
    pub fn register_metrics(&self, registry: &mut Registry) {
        registry.register_collector(Box::new(OplogMetrics(self.clone())));
    }
}

impl Collector for OplogMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let figures = self.0.figures();
        let counters: [(&str, &str, Read); 5] = [
            (
                "joblog_log_sink_written",
                "Log entries a sink wrote.",
                |f| f.stats.written.load(Ordering::Relaxed),
            ),
            (
                "joblog_log_sink_dropped",
                "Log entries a sink's full queue dropped (policy drop_newest).",
                |f| f.stats.dropped.load(Ordering::Relaxed),
            ),
            (
                "joblog_log_sink_failed_writes",
                "Writes a sink failed (it is retried with backoff).",
                |f| f.stats.failed_writes.load(Ordering::Relaxed),
            ),
            (
                "joblog_log_sink_lost",
                "Log entries lost to a sink's failed writes.",
                |f| f.stats.lost.load(Ordering::Relaxed),
            ),
            (
                "joblog_log_sink_stalled",
                "Log entries dropped because a sink stalled (its queue stayed full for a second).",
                |f| f.stats.stalled.load(Ordering::Relaxed),
            ),
        ];
        for (name, help, read) in counters {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for f in &figures {
                let labels = [("sink", f.name.as_str())];
                ConstCounter::new(read(f)).encode(family.encode_family(&labels)?)?;
            }
        }
        let mut depth = encoder.encode_descriptor(
            "joblog_log_sink_queue_depth",
            "Log entries waiting in a sink's queue.",
            None,
            MetricType::Gauge,
        )?;
        for f in &figures {
            let labels = [("sink", f.name.as_str())];
            ConstGauge::new(f.queue.depth() as i64).encode(depth.encode_family(&labels)?)?;
        }
        let router = encoder.encode_descriptor(
            "joblog_log_router_dropped",
            "Log units the log's own threads could not queue (router queue full).",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(self.0.router_dropped()).encode(router)?;
        let depth = encoder.encode_descriptor(
            "joblog_log_router_queue_depth",
            "Log units waiting for the router.",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(self.0.router_depth() as i64).encode(depth)?;
        Ok(())
    }
}
