//! Nodes: the servers that run jobs on a store, as `joblog nodes` and
//! `GET /api/v1/nodes` show them.

use std::time::Duration;

use serde::Serialize;

use crate::Timestamp;

/// A node as its store remembers it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeInfo {
    pub name: String,
    /// The joblog version it last started with.
    pub version: Option<String>,
    pub started_at: Timestamp,
    pub heartbeat_at: Timestamp,
    /// Set when it stopped gracefully; cleared when it starts again.
    pub stopped_at: Option<Timestamp>,
    /// Jobs the store has as `running` on it.
    pub running_jobs: u64,
    /// The names of the secrets it holds for schedules
    /// (`JOBLOG_SECRET_<NAME>`), as of its last start; never their values.
    pub secret_names: Vec<String>,
}

/// What a node is doing, judged from its store row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    /// Heartbeating.
    Up,
    /// Stopped gracefully.
    Stopped,
    /// Silent for longer than the heartbeat timeout: killed, crashed, or
    /// cut off from the database. Its running jobs are (or will be)
    /// interrupted.
    Lapsed,
}

impl NodeInfo {
    /// The node's state at `now`, with nodes silent for longer than
    /// `timeout` taken for lapsed.
    pub fn state(&self, now: Timestamp, timeout: Duration) -> NodeState {
        if self.stopped_at.is_some() {
            return NodeState::Stopped;
        }
        let silent = now.0.saturating_sub(self.heartbeat_at.0);
        if silent > i64::try_from(timeout.as_micros()).unwrap_or(i64::MAX) {
            NodeState::Lapsed
        } else {
            NodeState::Up
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_is_judged_by_its_stop_and_its_last_heartbeat() {
        let node = NodeInfo {
            name: "a".into(),
            version: None,
            started_at: Timestamp(0),
            heartbeat_at: Timestamp(10_000_000),
            stopped_at: None,
            running_jobs: 0,
            secret_names: Vec::new(),
        };
        let timeout = Duration::from_secs(30);
        assert_eq!(node.state(Timestamp(40_000_000), timeout), NodeState::Up);
        assert_eq!(
            node.state(Timestamp(40_000_001), timeout),
            NodeState::Lapsed
        );
        let stopped = NodeInfo {
            stopped_at: Some(Timestamp(11_000_000)),
            ..node
        };
        assert_eq!(
            stopped.state(Timestamp(99_000_000), timeout),
            NodeState::Stopped
        );
    }
}
