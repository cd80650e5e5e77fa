//! The queue, every node's: its depth, and the jobs no node can take —
//! queued jobs whose `node_selector` asks for labels that no up node has,
//! counted from the store's queue and the nodes' states (each such job
//! shows why in its `waiting_for`).

use joblog_core::{waiting_for, Labels, NodeInfo, NodeState};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

pub(super) struct PlacementMetrics {
    queued: Gauge,
    waiting: Gauge,
}

impl PlacementMetrics {
    pub(super) fn register(registry: &mut Registry) -> PlacementMetrics {
        let m = PlacementMetrics {
            queued: Gauge::default(),
            waiting: Gauge::default(),
        };
        registry.register(
            "joblog_jobs_queued",
            "Jobs queued, waiting to start on any node",
            m.queued.clone(),
        );
        registry.register(
            "joblog_jobs_waiting_for_node",
            "Queued jobs whose node_selector no up node satisfies",
            m.waiting.clone(),
        );
        m
    }

    pub(super) fn update(&self, queued: &[(Labels, u64)], nodes: &[(NodeInfo, NodeState)]) {
        self.queued.set(queued.iter().map(|(_, n)| *n as i64).sum());
        self.waiting.set(unplaceable(queued, nodes) as i64);
    }
}

fn unplaceable(queued: &[(Labels, u64)], nodes: &[(NodeInfo, NodeState)]) -> u64 {
    queued
        .iter()
        .filter(|(selector, _)| waiting_for(selector, nodes).is_some())
        .map(|(_, n)| n)
        .sum()
}

#[cfg(test)]
mod tests {
    use joblog_core::Timestamp;

    use super::*;

    #[test]
    fn only_jobs_no_up_node_satisfies_are_counted() {
        let labels = |t: &str| Labels::parse(t).unwrap();
        let node = NodeInfo {
            name: "a".into(),
            version: None,
            started_at: Timestamp(0),
            heartbeat_at: Timestamp(0),
            stopped_at: None,
            running_jobs: 0,
            secret_names: Vec::new(),
            labels: labels("role=db,os=linux"),
            drain_at: None,
            presumed_lapsed: false,
        };
        let queued = [
            (labels("role=db"), 3),
            (labels("gpu=yes"), 2),
            (labels("role=web"), 4),
        ];
        assert_eq!(unplaceable(&queued, &[(node.clone(), NodeState::Up)]), 6);
        assert_eq!(
            unplaceable(&queued, &[(node.clone(), NodeState::Drained)]),
            9
        );
        assert_eq!(unplaceable(&queued, &[(node, NodeState::Lapsed)]), 9);
    }
}
