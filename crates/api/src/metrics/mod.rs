//! `GET /metrics`: the registry's metrics, plus figures read from the
//! store, which every node shares — per job name ([`names`]) and per
//! schedule ([`schedules`]), and the queue's depth and jobs no node can
//! take ([`placement`]) —
//! in the format the scraper asks for
//! ([`format`]). The store's figures are read at most every [`REFRESH`].

mod format;
mod names;
mod placement;
mod schedules;

use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use prometheus_client::registry::Registry;

use crate::AppState;

/// How stale the store's figures may be: scrapes within it reuse them.
const REFRESH: Duration = Duration::from_secs(10);

type Labels = Vec<(String, String)>;

/// The metrics read from the store rather than counted by this node.
pub(crate) struct StoreMetrics {
    names: names::JobNameMetrics,
    schedules: schedules::ScheduleMetrics,
    placement: placement::PlacementMetrics,
    refreshed: tokio::sync::Mutex<Option<Instant>>,
}

impl StoreMetrics {
    pub(crate) fn register(registry: &mut Registry, max_names: usize) -> StoreMetrics {
        StoreMetrics {
            names: names::JobNameMetrics::register(registry, max_names),
            schedules: schedules::ScheduleMetrics::register(registry),
            placement: placement::PlacementMetrics::register(registry),
            refreshed: tokio::sync::Mutex::new(None),
        }
    }

    /// Reads the store unless the figures are fresher than [`REFRESH`].
    /// Each part is kept as it was when its read fails.
    async fn refresh(&self, state: &AppState) {
        let store = state.engine.store().as_ref();
        let mut refreshed = self.refreshed.lock().await;
        if refreshed.is_some_and(|at| at.elapsed() < REFRESH) {
            return;
        }
        let mut ok = true;
        match store.finished_by_name().await {
            Ok(rows) => self.names.update(&rows),
            Err(e) => {
                ok = false;
                tracing::error!(error = %e, "reading per-name job metrics");
            }
        }
        match schedules::read(store).await {
            Ok((list, finished)) => self.schedules.update(&list, &finished),
            Err(e) => {
                ok = false;
                tracing::error!(error = %e, "reading per-schedule metrics");
            }
        }
        let queued = store.queued_by_selector().await;
        match (queued, crate::handlers::nodes::judged(state).await) {
            (Ok(queued), Ok(nodes)) => self.placement.update(&queued, &nodes),
            (Err(e), _) => {
                ok = false;
                tracing::error!(error = %e, "reading the queue by node selector");
            }
            (_, Err(e)) => {
                ok = false;
                tracing::error!(error = ?e, "reading the nodes");
            }
        }
        if ok {
            *refreshed = Some(Instant::now());
        }
    }
}

pub(crate) async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    // The other metrics still matter most when the store is away.
    state.store_metrics.refresh(&state).await;
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = format::negotiate(accept);
    let mut body = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut body, &state.registry) {
        tracing::error!(error = %e, "encoding metrics");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    if format == format::Format::Text {
        body = format::to_text(&body);
    }
    (
        [
            (header::CONTENT_TYPE, format.content_type()),
            (header::VARY, "Accept"),
        ],
        body,
    )
        .into_response()
}
