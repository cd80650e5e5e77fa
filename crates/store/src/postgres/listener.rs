//! Commits announced between the nodes sharing a database: each writer
//! NOTIFYs what its batch committed, and each node's listener turns the
//! notices of *other* nodes into [`Committed`] values on its broadcast.
//! Both ends of the notice format live here, so they cannot drift apart.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use joblog_core::Backoff;
use tokio::sync::broadcast;
use tokio_postgres::AsyncMessage;

use super::Target;
use crate::error::pg_message;
use crate::{Committed, Result, StoreError};

/// The channel every node's writer notifies and every node listens on.
pub(super) const CHANNEL: &str = "joblog";

/// NOTIFY payloads must stay under 8000 bytes; a larger announcement
/// becomes a `reset` (followers re-read).
const MAX_NOTIFY_BYTES: usize = 7_000;

/// What other nodes' writers announce: their name and what they committed.
#[derive(serde::Serialize, serde::Deserialize)]
struct Note {
    n: String,
    #[serde(flatten)]
    c: Committed,
}

/// The payload announcing that `node` committed `committed`; one that
/// would not fit a NOTIFY becomes a `reset` (followers re-read).
pub(super) fn notice(node: &str, committed: Committed) -> Result<String> {
    let payload = serde_json::to_string(&Note {
        n: node.to_string(),
        c: committed,
    })
    .map_err(|e| StoreError::Database(format!("encoding a notification: {e}")))?;
    if payload.len() > MAX_NOTIFY_BYTES {
        return Ok(serde_json::json!({ "n": node, "r": true }).to_string());
    }
    Ok(payload)
}

/// The one listener of a node: turns other nodes' NOTIFYs into commits on
/// the node's broadcast. Reconnects with backoff for as long as the node
/// runs, and announces a `reset` after each (re)connection, since whatever
/// was notified meanwhile is lost.
pub(super) async fn listen(target: Target, node: String, sink: broadcast::Sender<Arc<Committed>>) {
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    let mut failing = false;
    loop {
        match target.connect().await {
            Ok((client, mut conn)) => {
                let mut messages = futures_util::stream::poll_fn(move |cx| conn.poll_message(cx));
                let forward = sink.clone();
                let me = node.clone();
                let driver = tokio::spawn(async move {
                    while let Some(m) = messages.next().await {
                        match m {
                            Ok(AsyncMessage::Notification(n)) => {
                                match serde_json::from_str::<Note>(n.payload()) {
                                    Ok(note) if note.n == me => {}
                                    Ok(note) => {
                                        let _ = forward.send(Arc::new(note.c));
                                    }
                                    Err(e) => {
                                        tracing::warn!(error = %e, "unreadable notification")
                                    }
                                }
                            }
                            Ok(AsyncMessage::Notice(notice)) => super::notices::log(&notice),
                            Ok(_) => {}
                            Err(e) => {
                                tracing::warn!(error = %pg_message(&e), "listener connection failed");
                                return;
                            }
                        }
                    }
                });
                match client.batch_execute(&format!("LISTEN {CHANNEL}")).await {
                    Ok(()) => {
                        if failing {
                            tracing::info!("listening for other nodes' commits again");
                            failing = false;
                        }
                        backoff.reset();
                        let _ = sink.send(Arc::new(Committed {
                            reset: true,
                            ..Committed::default()
                        }));
                        let _ = driver.await;
                    }
                    Err(e) => {
                        tracing::warn!(error = %pg_message(&e), "LISTEN failed");
                        driver.abort();
                    }
                }
            }
            Err(e) => {
                if !failing {
                    tracing::error!(error = %pg_message(&e), "listener cannot connect; retrying with backoff");
                    failing = true;
                }
            }
        }
        tokio::time::sleep(backoff.next_delay()).await;
    }
}
