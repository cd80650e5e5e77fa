//! `/api/v1/nodes`: the nodes that run jobs on this store, with the state
//! each is judged to be in (by this node's heartbeat timeout).

use axum::extract::State;
use axum::Json;
use joblog_core::{NodeInfo, NodeState, Timestamp};
use serde::Serialize;

use crate::error::ApiError;
use crate::AppState;

#[derive(Serialize)]
pub(crate) struct NodeView {
    #[serde(flatten)]
    node: NodeInfo,
    state: NodeState,
}

#[derive(Serialize)]
pub(crate) struct NodeList {
    nodes: Vec<NodeView>,
    /// The silence after which a node counts as lapsed.
    heartbeat_timeout_s: f64,
    /// The node that answered.
    this_node: String,
}

pub async fn list(State(state): State<AppState>) -> Result<Json<NodeList>, ApiError> {
    let engine = &state.engine;
    let timeout = engine.heartbeat_timeout();
    let now = Timestamp::now();
    let nodes = engine
        .store()
        .list_nodes()
        .await?
        .into_iter()
        .map(|node| NodeView {
            state: node.state(now, timeout),
            node,
        })
        .collect();
    Ok(Json(NodeList {
        nodes,
        heartbeat_timeout_s: timeout.as_secs_f64(),
        this_node: engine.node().to_string(),
    }))
}
