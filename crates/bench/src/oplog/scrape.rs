//! The logs' counters read from Prometheus text (a server's `/metrics`,
//! or an in-process `Oplog`'s registry encoded the same way): what was
//! written, dropped, lost, and what still waits in the queues.

/// The value of each series of metric `name`, with its label text
/// (`sink="access"`, empty without labels).
pub(crate) fn series<'a>(text: &'a str, name: &str) -> Vec<(&'a str, f64)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        let (labels, value) = if let Some(inner) = rest.strip_prefix('{') {
            let Some(end) = inner.find('}') else {
                continue;
            };
            (&inner[..end], &inner[end + 1..])
        } else if rest.starts_with(' ') {
            ("", rest)
        } else {
            // Another metric whose name starts with this one.
            continue;
        };
        if let Some(v) = value.split_whitespace().next().and_then(|v| v.parse().ok()) {
            out.push((labels, v));
        }
    }
    out
}

/// The logs' figures, summed over sinks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct LogCounters {
    /// Lines the sink named when reading wrote.
    pub(super) written: u64,
    /// Lines dropped by full queues, every sink, and units the router's
    /// queue dropped.
    pub(super) dropped: u64,
    /// Lines lost to failed writes, every sink.
    pub(super) lost: u64,
    /// Lines and units waiting in every queue.
    pub(super) queued: u64,
}

impl LogCounters {
    /// Reads the counters out of `text`; `written` is sink `sink`'s.
    /// `None` when the logs' metrics are not there at all.
    pub(super) fn read(text: &str, sink: &str) -> Option<LogCounters> {
        let sum = |name: &str| -> u64 { series(text, name).iter().map(|(_, v)| *v as u64).sum() };
        let label = format!("sink=\"{sink}\"");
        let written = series(text, "joblog_log_sink_written_total")
            .into_iter()
            .find(|(l, _)| l.split(',').any(|p| p == label))?
            .1 as u64;
        Some(LogCounters {
            written,
            dropped: sum("joblog_log_sink_dropped_total") + sum("joblog_log_router_dropped_total"),
            lost: sum("joblog_log_sink_lost_total"),
            queued: sum("joblog_log_sink_queue_depth") + sum("joblog_log_router_queue_depth"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# HELP joblog_log_sink_written Log entries a sink wrote.
# TYPE joblog_log_sink_written counter
joblog_log_sink_written_total{sink=\"access\"} 1204
joblog_log_sink_written_total{sink=\"audit\"} 3
joblog_log_sink_dropped_total{sink=\"access\"} 2
joblog_log_sink_dropped_total{sink=\"audit\"} 1
joblog_log_sink_lost_total{sink=\"access\"} 0
joblog_log_sink_lost_total{sink=\"audit\"} 5
joblog_log_sink_queue_depth{sink=\"access\"} 7
joblog_log_sink_queue_depth{sink=\"audit\"} 0
joblog_log_router_dropped_total 4
joblog_log_router_queue_depth 1
joblog_log_router_queue_depth_other 99
";

    #[test]
    fn counters_sum_every_sink_and_the_router() {
        let c = LogCounters::read(TEXT, "access").unwrap();
        assert_eq!(
            c,
            LogCounters {
                written: 1204,
                dropped: 7,
                lost: 5,
                queued: 8
            }
        );
        assert_eq!(LogCounters::read(TEXT, "audit").unwrap().written, 3);
    }

    #[test]
    fn a_missing_sink_or_metric_is_none() {
        assert_eq!(LogCounters::read(TEXT, "slow"), None);
        assert_eq!(LogCounters::read("# nothing here\n", "access"), None);
        assert_eq!(series(TEXT, "joblog_log_router_queue_depth"), [("", 1.0)]);
    }
}
