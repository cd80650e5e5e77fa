//! What an interrupted job's log says: one `error` record, appended by the
//! store in the transaction that ends the job, naming the node that had it,
//! that node's last heartbeat, and why the job was ended. Both stores build
//! it here so they say the same.

use std::time::Duration;

use joblog_core::{Job, JobState, LogSummary, Record, Stream, Timestamp};
use serde_json::{json, Map, Value};

/// Why jobs are being interrupted.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cause<'a> {
    /// The node started again: its earlier process ended without ending
    /// the job (killed, crashed, or the machine went down).
    Restarted,
    /// The node went silent for longer than `timeout`; node `by` judged it
    /// lost.
    Lapsed { by: &'a str, timeout: Duration },
}

/// The record that ends `job`'s log, and the job's counters with it.
/// `node` is the node the job depended on (the one running it, or for a
/// queued job the one holding its secrets); `heartbeat` that node's last.
pub(crate) fn interruption(
    job: &Job,
    node: Option<&str>,
    heartbeat: Option<Timestamp>,
    cause: Cause<'_>,
    now: Timestamp,
) -> (Record, LogSummary) {
    let node_name = node.unwrap_or("(unknown)");
    let last = heartbeat.map_or_else(|| "unknown".to_string(), Timestamp::to_rfc3339);
    let relation = match job.state {
        JobState::Queued => "was waiting for node",
        _ => "was running on node",
    };
    let (what, reason) = match cause {
        Cause::Restarted => (
            format!("{node_name}, which ended without stopping it (killed or crashed); the node found it at its next start"),
            "node_restarted",
        ),
        Cause::Lapsed { by, timeout } => (
            format!(
                "{node_name}, which stopped heartbeating for more than {}; node {by} declared it lost",
                humantime::format_duration(Duration::from_secs(timeout.as_secs().max(1)))
            ),
            "node_lapsed",
        ),
    };
    let message =
        format!("interrupted: this job {relation} {what} (last heartbeat of {node_name}: {last})");
    let mut fields = Map::new();
    fields.insert("reason".into(), json!(reason));
    fields.insert("node".into(), node.map_or(Value::Null, |n| json!(n)));
    fields.insert(
        "last_heartbeat".into(),
        heartbeat.map_or(Value::Null, |t| json!(t.to_rfc3339())),
    );
    if let Cause::Lapsed { by, .. } = cause {
        fields.insert("declared_by".into(), json!(by));
    }
    let mut summary = job.log;
    summary.records += 1;
    summary.bytes += message.len() as u64;
    summary.streams.add(Stream::Error, 1);
    let record = Record {
        seq: summary.records,
        ts: now,
        stream: Stream::Error,
        message,
        fields: Some(fields),
    };
    (record, summary)
}
