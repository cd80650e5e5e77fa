//! Nodes: the servers that run jobs on a store, as `joblog nodes` and
//! `GET /api/v1/nodes` show them.

use std::time::Duration;

use serde::Serialize;

use crate::{Labels, Timestamp};

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
    /// Its labels (`node.labels`), as of its last start: it takes the
    /// jobs whose `node_selector` they satisfy.
    pub labels: Labels,
    /// Since when it is asked to drain (`POST /nodes/{name}/drain`): it
    /// takes no job and fires no schedule; `None` when it is not.
    pub drain_at: Option<Timestamp>,
    /// Found in the database by a node started paused (a restored copy's
    /// nodes): taken for lapsed until it heartbeats.
    #[serde(skip)]
    pub presumed_lapsed: bool,
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
    /// interrupted. Also a node a restored database holds, until it
    /// heartbeats on it.
    Lapsed,
    /// Asked to drain, with jobs still running: it takes no new ones.
    Draining,
    /// Asked to drain, and none of its jobs runs.
    Drained,
}

impl NodeInfo {
    /// The node's state at `now`, with nodes silent for longer than
    /// `timeout` taken for lapsed.
    pub fn state(&self, now: Timestamp, timeout: Duration) -> NodeState {
        if self.stopped_at.is_some() {
            return NodeState::Stopped;
        }
        let silent = now.0.saturating_sub(self.heartbeat_at.0);
        if self.presumed_lapsed || silent > i64::try_from(timeout.as_micros()).unwrap_or(i64::MAX) {
            NodeState::Lapsed
        } else if self.drain_at.is_none() {
            NodeState::Up
        } else if self.running_jobs > 0 {
            NodeState::Draining
        } else {
            NodeState::Drained
        }
    }
}

/// Why a queued job with `selector` waits, when no node judged `Up` in
/// `nodes` has its labels: `no up node has labels role=gpu`. `None` when
/// one has (it waits its turn like any job) or the job asks for nothing.
pub fn waiting_for(selector: &Labels, nodes: &[(NodeInfo, NodeState)]) -> Option<String> {
    if selector.is_empty()
        || nodes
            .iter()
            .any(|(n, state)| *state == NodeState::Up && n.labels.satisfy(selector))
    {
        return None;
    }
    Some(format!("no up node has labels {selector}"))
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
            labels: Labels::default(),
            drain_at: None,
            presumed_lapsed: false,
        };
        let timeout = Duration::from_secs(30);
        assert_eq!(node.state(Timestamp(40_000_000), timeout), NodeState::Up);
        assert_eq!(
            node.state(Timestamp(40_000_001), timeout),
            NodeState::Lapsed
        );
        let stopped = NodeInfo {
            stopped_at: Some(Timestamp(11_000_000)),
            ..node.clone()
        };
        assert_eq!(
            stopped.state(Timestamp(99_000_000), timeout),
            NodeState::Stopped
        );
        let at = Timestamp(20_000_000);
        let draining = NodeInfo {
            drain_at: Some(Timestamp(15_000_000)),
            running_jobs: 2,
            ..node.clone()
        };
        assert_eq!(draining.state(at, timeout), NodeState::Draining);
        let drained = NodeInfo {
            running_jobs: 0,
            ..draining.clone()
        };
        assert_eq!(drained.state(at, timeout), NodeState::Drained);
        // Silence wins over a drain: a dead node drains nothing.
        assert_eq!(
            drained.state(Timestamp(99_000_000), timeout),
            NodeState::Lapsed
        );
        let copied = NodeInfo {
            presumed_lapsed: true,
            ..node
        };
        assert_eq!(copied.state(at, timeout), NodeState::Lapsed);
    }

    #[test]
    fn a_selector_waits_only_while_no_up_node_has_its_labels() {
        let node = |name: &str, labels: &str| NodeInfo {
            name: name.into(),
            version: None,
            started_at: Timestamp(0),
            heartbeat_at: Timestamp(0),
            stopped_at: None,
            running_jobs: 0,
            secret_names: Vec::new(),
            labels: Labels::parse(labels).unwrap(),
            drain_at: None,
            presumed_lapsed: false,
        };
        let gpu = Labels::parse("gpu=yes").unwrap();
        let nodes = [
            (node("a", "role=db"), NodeState::Up),
            (node("b", "gpu=yes"), NodeState::Lapsed),
        ];
        assert_eq!(
            waiting_for(&gpu, &nodes).as_deref(),
            Some("no up node has labels gpu=yes")
        );
        assert_eq!(waiting_for(&Labels::default(), &nodes), None);
        assert_eq!(
            waiting_for(&Labels::parse("role=db").unwrap(), &nodes),
            None
        );
        assert_eq!(
            waiting_for(&gpu, &[(node("c", "gpu=yes"), NodeState::Up)]),
            None
        );
    }
}
