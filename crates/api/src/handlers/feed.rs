//! The job-list feed `GET /api/v1/events`: Server-Sent Events telling a
//! list of jobs what changed (jobs queued; jobs that started, finished or
//! whose log grew), so that it re-reads its page instead of polling.
//!
//! Like the live tail (`sse.rs`), a viewer costs one broadcast subscription
//! to commits and no task: the response body is the whole state, so a
//! client that goes away drops it and its place among the viewers. It never
//! reads the store, but for a viewer limited to folders (`InFolders`),
//! whose events keep only its folders' jobs. Events are coalesced, at most one per [`INTERVAL`]:
//! commits that arrive meanwhile are gathered into the next event, never
//! dropped, and a viewer holds at most [`MAX_CHANGED`] ids.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::Event;
use axum::response::Response;
use joblog_core::JobId;
use joblog_store::Committed;
use serde::Serialize;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::broadcast::Receiver;
use tokio::time::Instant;

use crate::error::ApiError;
use crate::handlers::log::tail::{event_stream, json_event};
use crate::limits::ViewerSlot;
use crate::AppState;

/// The least time between two events of one viewer: a page re-read per
/// commit would cost more than the polling the feed replaces.
const INTERVAL: Duration = Duration::from_millis(250);

/// Ids one event lists at most; past it the event is a `reset` (re-read
/// everything), which is cheaper for the client than a huge list.
const MAX_CHANGED: usize = 1000;

/// Commits already waiting that are taken into an event when it is due;
/// under a flood, the rest go into the next one.
const TAKE_WAITING: usize = 1024;

/// `event: jobs` until the client goes away (or the server stops).
pub async fn job_events(
    State(state): State<AppState>,
    identity: Option<axum::Extension<crate::auth::Identity>>,
    peer: Option<axum::Extension<axum::extract::ConnectInfo<std::net::SocketAddr>>>,
) -> Result<Response, ApiError> {
    let who = crate::limits::viewer_key(identity.as_ref().map(|i| &i.0), peer.map(|p| p.0 .0));
    let slot = state.viewers.admit_feed(&state.limits, &who)?;
    // Subscribed before the answer begins: a client that reads its page
    // once the stream is open misses nothing.
    let commits = state.engine.pipeline().subscribe();
    let in_folders = match identity.as_ref().and_then(|i| i.scope.visible()) {
        None => None,
        Some(folders) => Some(InFolders {
            store: state.engine.store().clone(),
            folders: folders.into_iter().map(str::to_owned).collect(),
            high: state.engine.store().latest_job_id().await?.unwrap_or(0),
        }),
    };
    let feed = Feed {
        commits,
        pending: Coalescer::default(),
        closed: false,
        in_folders,
        _slot: slot,
    };
    let events = futures_util::stream::unfold(feed, |mut feed| async move {
        let event = feed.next_event().await?;
        Some((Ok::<_, Infallible>(event), feed))
    });
    Ok(event_stream(events, &state, identity))
}

/// The data of one event: what changed since the one before.
#[derive(Debug, Default, PartialEq, Serialize)]
struct Changes {
    /// Jobs queued.
    new: u64,
    /// Jobs that started, finished (cancelled jobs included) or whose log
    /// grew, each once, in ascending order.
    changed: BTreeSet<JobId>,
    /// Anything may have changed: re-read everything (`changed` is empty).
    reset: bool,
}

impl Changes {
    fn add(&mut self, c: &Committed) {
        self.new += u64::from(c.queued);
        if c.reset {
            self.reset();
        }
        if self.reset {
            return;
        }
        // A cancel request (`c.cancel`) is not listed: nothing a list
        // shows changes until the job ends, which `finished` tells.
        let ids = (c.started.iter().copied())
            .chain(c.finished.iter().copied())
            .chain(c.appended.iter().map(|(job, _)| *job));
        for id in ids {
            self.changed.insert(id);
            if self.changed.len() > MAX_CHANGED {
                self.reset();
                return;
            }
        }
    }

    fn reset(&mut self) {
        self.reset = true;
        self.changed = BTreeSet::new();
    }

    fn is_empty(&self) -> bool {
        self.new == 0 && self.changed.is_empty() && !self.reset
    }
}

/// What a viewer has gathered and when it may send it: the decisions of
/// the feed, apart from the waiting.
#[derive(Debug, Default)]
struct Coalescer {
    changes: Changes,
    /// When the last event was sent.
    sent_at: Option<Instant>,
}

impl Coalescer {
    /// When the changes gathered may be sent: `None` when there are none;
    /// at once (`now`) when no event went out within the interval.
    fn due(&self, now: Instant) -> Option<Instant> {
        if self.changes.is_empty() {
            return None;
        }
        Some(self.sent_at.map_or(now, |sent| (sent + INTERVAL).max(now)))
    }

    /// The changes to send at `now`, starting the next interval.
    fn take(&mut self, now: Instant) -> Changes {
        self.sent_at = Some(now);
        std::mem::take(&mut self.changes)
    }
}

/// The folders a limited viewer sees, and how far its count of new jobs
/// has gone.
struct InFolders {
    store: Arc<dyn joblog_store::Store>,
    folders: Vec<String>,
    /// The highest id counted as new (or the newest job when the stream
    /// opened).
    high: JobId,
}

impl InFolders {
    /// `changes` without the jobs of other folders: the new ones counted
    /// in its folders above `high`, the changed ones looked up by id. A
    /// reset stays a reset (re-read what you see).
    async fn keep(&mut self, mut changes: Changes) -> Result<Changes, ApiError> {
        if changes.new > 0 {
            let up_to = u32::try_from(changes.new).unwrap_or(u32::MAX);
            let ids = self
                .store
                .newer_in_folders(self.folders.clone(), self.high, up_to)
                .await?;
            changes.new = ids.len() as u64;
            self.high = ids.into_iter().fold(self.high, JobId::max);
        }
        if !changes.changed.is_empty() {
            let ids = changes.changed.iter().copied().collect();
            changes.changed = (self.store.job_folders(ids).await?)
                .into_iter()
                .filter(|(_, f)| f.as_ref().is_some_and(|f| self.folders.contains(f)))
                .map(|(id, _)| id)
                .collect();
        }
        Ok(changes)
    }
}

struct Feed {
    commits: Receiver<Arc<Committed>>,
    pending: Coalescer,
    /// No commit can come any more: what is gathered is the last event.
    closed: bool,
    /// Set for a viewer limited to folders.
    in_folders: Option<InFolders>,
    /// This viewer's place among the bounded viewers, held as long as the
    /// stream.
    _slot: ViewerSlot,
}

impl Feed {
    /// The next event, or `None` once no commit can come any more.
    async fn next_event(&mut self) -> Option<Event> {
        loop {
            let now = Instant::now();
            let Some(due) = self.pending.due(now) else {
                if self.closed {
                    return None;
                }
                let received = self.commits.recv().await;
                self.receive(received);
                continue;
            };
            if due <= now || self.closed {
                self.take_waiting();
                let mut changes = self.pending.take(now);
                if let Some(filter) = &mut self.in_folders {
                    changes = match filter.keep(changes).await {
                        Ok(kept) => kept,
                        Err(e) => return Some(self.fail(&e)),
                    };
                    if changes.is_empty() && !self.closed {
                        continue;
                    }
                }
                return Some(match json_event(&changes) {
                    Ok(event) => event.event("jobs"),
                    Err(e) => self.fail(&e),
                });
            }
            // Gather what comes until the event is due.
            if let Ok(received) = tokio::time::timeout_at(due, self.commits.recv()).await {
                self.receive(received);
            }
        }
    }

    fn receive(&mut self, received: Result<Arc<Committed>, RecvError>) {
        match received {
            Ok(c) => self.pending.changes.add(&c),
            // Missed some commits: what they changed is unknown.
            Err(RecvError::Lagged(_)) => self.pending.changes.reset(),
            Err(RecvError::Closed) => self.closed = true,
        }
    }

    /// Takes in the commits already waiting, so that a burst of commits
    /// goes out as one event.
    fn take_waiting(&mut self) {
        for _ in 0..TAKE_WAITING {
            match self.commits.try_recv() {
                Ok(c) => self.pending.changes.add(&c),
                Err(TryRecvError::Lagged(_)) => self.pending.changes.reset(),
                Err(TryRecvError::Empty) => return,
                Err(TryRecvError::Closed) => {
                    self.closed = true;
                    return;
                }
            }
        }
    }

    /// Ends the stream with `event: error` and the error as every
    /// answer gives it, `{"error": {"code", "message"}}`.
    fn fail(&mut self, e: &ApiError) -> Event {
        self.closed = true;
        self.pending.changes = Changes::default();
        Event::default().event("error").data(e.body().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn appended(ids: impl IntoIterator<Item = JobId>) -> Committed {
        Committed {
            appended: ids.into_iter().map(|id| (id, 1)).collect(),
            ..Committed::default()
        }
    }

    #[test]
    fn changes_list_each_job_once_whatever_changed_it() {
        let mut c = Changes::default();
        c.add(&Committed {
            queued: 2,
            started: vec![7],
            ..Committed::default()
        });
        c.add(&Committed {
            finished: vec![3, 7],
            appended: vec![(9, 40), (7, 12)],
            queued: 1,
            // Not a change a list shows.
            cancel: vec![11],
            ..Committed::default()
        });
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"new":3,"changed":[3,7,9],"reset":false}"#
        );
    }

    #[test]
    fn too_many_ids_or_a_reset_commit_make_a_reset_that_keeps_counting_new_jobs() {
        let mut c = Changes::default();
        c.add(&appended(1..=MAX_CHANGED as JobId));
        assert_eq!(c.changed.len(), MAX_CHANGED);
        assert!(!c.reset, "exactly the bound is still listed");
        c.add(&appended([MAX_CHANGED as JobId + 1]));
        assert!(c.reset && c.changed.is_empty(), "{c:?}");
        c.add(&Committed {
            queued: 4,
            finished: vec![5],
            ..Committed::default()
        });
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"new":4,"changed":[],"reset":true}"#
        );

        let mut c = Changes::default();
        c.add(&appended([1]));
        c.add(&Committed {
            reset: true,
            ..Committed::default()
        });
        assert_eq!(c.changed.len(), 0);
        assert!(c.reset && !c.is_empty());
    }

    /// At most one event per interval: the first change after a quiet
    /// interval goes at once, the ones that follow within it wait for its
    /// end, together; nothing gathered is lost.
    #[test]
    fn events_are_at_most_one_per_interval_and_lose_nothing() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut p = Coalescer::default();
        assert_eq!(p.due(t0), None, "nothing to send");
        p.changes.add(&appended([1]));
        assert_eq!(p.due(t0), Some(t0), "the first event goes at once");
        assert_eq!(p.take(t0).changed, BTreeSet::from([1]));
        assert_eq!(p.due(ms(10)), None);

        p.changes.add(&appended([2]));
        assert_eq!(p.due(ms(10)), Some(ms(250)), "waits out the interval");
        p.changes.add(&appended([3]));
        assert_eq!(p.due(ms(200)), Some(ms(250)));
        assert_eq!(p.due(ms(260)), Some(ms(260)), "due: at once");
        assert_eq!(p.take(ms(260)).changed, BTreeSet::from([2, 3]));

        // After a quiet interval, at once again.
        p.changes.add(&appended([4]));
        assert_eq!(p.due(ms(900)), Some(ms(900)));
    }
}
