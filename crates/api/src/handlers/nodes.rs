//! `/api/v1/nodes`: the nodes that run jobs on this store, with the state
//! each is judged to be in (by this node's heartbeat timeout).

use axum::extract::{Path, State};
use axum::{Extension, Json};
use joblog_core::{waiting_for, Job, JobState, NodeInfo, NodeState, Timestamp};
use serde::Serialize;

use crate::auth::Identity;
use crate::error::{ApiError, ErrorCode};
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

/// Every node with the state this node judges it in.
pub(crate) async fn judged(state: &AppState) -> Result<Vec<(NodeInfo, NodeState)>, ApiError> {
    let timeout = state.engine.heartbeat_timeout();
    let now = Timestamp::now();
    Ok(state
        .engine
        .store()
        .list_nodes()
        .await?
        .into_iter()
        .map(|node| {
            let judged = node.state(now, timeout);
            (node, judged)
        })
        .collect())
}

/// Sets `waiting_for` on the queued jobs that ask for labels no up node
/// has; the nodes are read only when such a job is among `jobs`. A
/// failed read is logged and leaves it unset: the jobs are what was
/// asked for (a submission is stored already).
pub(crate) async fn explain_waits(state: &AppState, jobs: &mut [Job]) {
    let asks = |j: &Job| j.state == JobState::Queued && !j.spec.node_selector.is_empty();
    if !jobs.iter().any(asks) {
        return;
    }
    let nodes = match judged(state).await {
        Ok(nodes) => nodes,
        Err(e) => {
            tracing::error!(error = ?e, "reading the nodes for jobs' waiting_for");
            return;
        }
    };
    for job in jobs.iter_mut().filter(|j| asks(j)) {
        job.waiting_for = waiting_for(&job.spec.node_selector, &nodes);
    }
}

/// `POST /api/v1/nodes/{name}/drain`: the node takes no new job and
/// fires no schedule; its running jobs go on. Answers the node.
pub async fn drain(
    state: State<AppState>,
    caller: Extension<Identity>,
    name: Path<String>,
) -> Result<Json<NodeView>, ApiError> {
    set_drain(state, caller, name, true).await
}

/// `POST /api/v1/nodes/{name}/undrain`: the node takes jobs again.
pub async fn undrain(
    state: State<AppState>,
    caller: Extension<Identity>,
    name: Path<String>,
) -> Result<Json<NodeView>, ApiError> {
    set_drain(state, caller, name, false).await
}

async fn set_drain(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
    Path(name): Path<String>,
    drain: bool,
) -> Result<Json<NodeView>, ApiError> {
    let not_found = || ApiError::new(ErrorCode::NodeNotFound, format!("no node named {name:?}"));
    // A name no node can have is not looked up (PostgreSQL refuses a NUL).
    if name.contains('\0') || !state.engine.set_drain(name.clone(), drain).await? {
        return Err(not_found());
    }
    let (audit, done) = if drain {
        ("node.drained", "asked to drain")
    } else {
        ("node.undrained", "taking jobs again")
    };
    tracing::info!(audit, node = %name, "node {name:?} {done}, by {}", caller.name());
    let node = judged(&state)
        .await?
        .into_iter()
        .find(|(n, _)| n.name == name)
        .ok_or_else(not_found)?;
    Ok(Json(NodeView {
        node: node.0,
        state: node.1,
    }))
}

pub async fn list(State(state): State<AppState>) -> Result<Json<NodeList>, ApiError> {
    let engine = &state.engine;
    let timeout = engine.heartbeat_timeout();
    let nodes = judged(&state)
        .await?
        .into_iter()
        .map(|(node, state)| NodeView { node, state })
        .collect();
    Ok(Json(NodeList {
        nodes,
        heartbeat_timeout_s: timeout.as_secs_f64(),
        this_node: engine.node().to_string(),
    }))
}
