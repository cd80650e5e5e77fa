//! The live tail `GET /jobs/{id}/log/events`: a job's records as
//! Server-Sent Events, then an `end` event carrying the final job.
//!
//! A viewer costs one broadcast subscription to commits (taken before the
//! first read, so no commit is missed) and at most one page of records in
//! memory. It reads the store only when a commit touches its job, plus a
//! slow safety-net re-read, and the viewers that commit wakes at the same
//! place share that read ([`shared`](super::shared)): a hundred viewers of
//! a job cost about one read a commit, not a hundred. There is no task per
//! viewer: the response body is the whole state, so a client that goes
//! away drops it and everything it held.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use joblog_core::{Job, JobId, Record, Stream};
use joblog_store::{Committed, Store};
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::broadcast::Receiver;

use crate::auth::Identity;
use crate::error::{ApiError, ErrorCode};
use crate::extract::{JobIdPath, QueryParams};
use crate::handlers::jobs::load_job;
use crate::handlers::log::shared::{ByCommit, SharedReads};
use crate::handlers::log::{parse_streams, DEFAULT_LOG_LIMIT};
use crate::AppState;

/// Records per store read; also the most a viewer holds in memory (the
/// store bounds a page in bytes too).
const PAGE: u32 = DEFAULT_LOG_LIMIT;

/// A followed job is re-read this often even when no commit woke it up: a
/// safety net against a missed notification, not the way records arrive.
const SAFETY_NET: Duration = Duration::from_secs(5);

/// Comment lines this often while nothing else is sent, so that proxies
/// keep an idle connection (a queued job, a quiet one) open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

const LAST_EVENT_ID: &str = "last-event-id";

/// A page of a job's log after a seq, in some streams, read after a commit.
type PageKey = (JobId, u64, Option<Vec<Stream>>, ByCommit);
type PageRead = Result<Arc<Vec<Record>>, Arc<ApiError>>;
type JobRead = Result<Option<Job>, Arc<ApiError>>;

/// The reads the live tails share (see [`shared`](super::shared)).
#[derive(Default)]
pub(crate) struct TailReads {
    pages: Arc<SharedReads<PageKey, PageRead>>,
    jobs: Arc<SharedReads<(JobId, ByCommit), JobRead>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsParams {
    pub(crate) after_seq: Option<u64>,
    pub(crate) streams: Option<String>,
}

/// Every record after `Last-Event-ID` (or `after_seq`) once and in order,
/// each event's `id` its seq, then `event: end` with the final job.
pub async fn log_events(
    State(state): State<AppState>,
    identity: Option<axum::Extension<Identity>>,
    peer: Option<axum::Extension<axum::extract::ConnectInfo<std::net::SocketAddr>>>,
    JobIdPath(id): JobIdPath,
    QueryParams(p): QueryParams<EventsParams>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let streams = parse_streams(p.streams.as_deref())?;
    // A reconnecting EventSource says where it was; that wins over the URL
    // it reuses.
    let after = last_event_id(&headers)?.unwrap_or(p.after_seq.unwrap_or(0));
    // Subscribe before the first read so that a commit made meanwhile is
    // not missed.
    let commits = state.engine.pipeline().subscribe();
    let job = load_job(&state, id).await?;
    let who = crate::limits::viewer_key(identity.as_ref().map(|i| &i.0), peer.map(|p| p.0 .0));
    let slot = state.viewers.admit(id, &state.limits, &who)?;
    // Read before any record: if it had finished then, every record it
    // wrote is committed, and reading to the end is all that is left.
    let finished = job.state.is_finished().then_some(job);
    let tail = Tail {
        store: state.engine.store().clone(),
        id,
        streams,
        commits,
        reads: state.tail_reads.clone(),
        woken: None,
        page: Arc::default(),
        next: 0,
        last: after,
        step: Step::Read,
        finished,
        _slot: slot,
    };
    let events = futures_util::stream::unfold(tail, |mut tail| async move {
        let event = tail.next_event().await?;
        Some((Ok::<_, Infallible>(event), tail))
    });
    Ok(event_stream(events, &state, identity))
}

/// The `text/event-stream` answer of a live route: its events, with a
/// keep-alive comment line while none comes, until the caller's token
/// expires or is revoked (`auth::lease`).
pub(crate) fn event_stream<S>(
    events: S,
    state: &AppState,
    identity: Option<axum::Extension<Identity>>,
) -> Response
where
    S: futures_util::Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    use futures_util::StreamExt;
    let events = match identity {
        Some(axum::Extension(identity)) => events
            .take_until(Box::pin(crate::auth::lease::ended(state.clone(), identity)))
            .left_stream(),
        None => events.right_stream(),
    };
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    // Tells nginx not to buffer the stream.
    response.headers_mut().insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    response
}

/// The seq in `Last-Event-ID`, if the header is there and not empty.
fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get(LAST_EVENT_ID) else {
        return Ok(None);
    };
    let bad = || {
        ApiError::new(
            ErrorCode::InvalidHeader,
            format!(
                "Last-Event-ID: must be the seq of a record (an integer ≥ 0), not {:?}",
                String::from_utf8_lossy(value.as_bytes())
            ),
        )
    };
    let text = value.to_str().map_err(|_| bad())?.trim();
    if text.is_empty() {
        // An empty id is "no id" in SSE.
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| bad())
}

/// What a viewer does once the records it holds are sent.
#[derive(Clone, Copy)]
enum Step {
    /// Read the next page.
    Read,
    /// Read the job: finished → a last drain, then `end`; else wait.
    CheckJob,
    /// Wait for a commit touching the job.
    Wait,
    /// Send `end`.
    End,
    Done,
}

struct Tail {
    store: Arc<dyn Store>,
    id: JobId,
    streams: Option<Vec<Stream>>,
    commits: Receiver<Arc<Committed>>,
    reads: Arc<TailReads>,
    /// The last commit received, when every one before it was received
    /// too: a read started after it may be shared.
    woken: Option<ByCommit>,
    /// The last page read, sent up to `next`.
    page: Arc<Vec<Record>>,
    next: usize,
    /// Seq of the last record read.
    last: u64,
    step: Step,
    /// The job, once it was seen finished (read before the records that
    /// are still to be sent, so it covers them all).
    finished: Option<Job>,
    /// This viewer's place among the bounded viewers, held as long as
    /// the stream.
    _slot: crate::limits::ViewerSlot,
}

impl Tail {
    /// The next event, or `None` once the stream is over.
    async fn next_event(&mut self) -> Option<Event> {
        loop {
            if let Some(record) = self.page.get(self.next) {
                self.next += 1;
                return Some(match json_event(record) {
                    Ok(event) => event.id(record.seq.to_string()),
                    Err(e) => self.fail(&e),
                });
            }
            match self.step {
                Step::Read => {
                    // Whatever was committed before this read is in it.
                    self.skip_pending_commits();
                    let records = match self.read_page().await {
                        Ok(records) => records,
                        Err(e) => return Some(self.fail(&e)),
                    };
                    self.step = if joblog_store::page_is_full(&records, PAGE) {
                        Step::Read
                    } else if self.finished.is_some() {
                        Step::End
                    } else {
                        Step::CheckJob
                    };
                    if let Some(r) = records.last() {
                        self.last = r.seq;
                    }
                    self.page = records;
                    self.next = 0;
                }
                Step::CheckJob => match self.read_job().await {
                    // Read after the records: some may have been committed
                    // in between, hence one more read before `end`.
                    Ok(Some(job)) if job.state.is_finished() => {
                        self.finished = Some(job);
                        self.step = Step::Read;
                    }
                    Ok(Some(_)) => self.step = Step::Wait,
                    // Deleted by retention meanwhile.
                    Ok(None) => return Some(self.fail(&ApiError::job_not_found(self.id))),
                    Err(e) => return Some(self.fail(&e)),
                },
                Step::Wait => {
                    if !self.wait_for_commit().await {
                        let e =
                            ApiError::new(ErrorCode::ShuttingDown, "the server is shutting down");
                        return Some(self.fail(&e));
                    }
                    self.step = Step::Read;
                }
                Step::End => {
                    self.step = Step::Done;
                    let job = self.finished.take()?;
                    return Some(match json_event(&job) {
                        Ok(event) => event.event("end"),
                        Err(e) => self.fail(&e),
                    });
                }
                Step::Done => return None,
            }
        }
    }

    /// Drops notifications that are already waiting: the read about to
    /// start covers their commits.
    fn skip_pending_commits(&mut self) {
        loop {
            match self.commits.try_recv() {
                Ok(c) => self.woken = Some(ByCommit(c)),
                // Which commits were missed is unknown: read alone.
                Err(TryRecvError::Lagged(_)) => self.woken = None,
                Err(TryRecvError::Empty | TryRecvError::Closed) => return,
            }
        }
    }

    /// The page after `last`: shared with the viewers the same commit
    /// woke at the same place, alone otherwise.
    async fn read_page(&self) -> PageRead {
        let (store, id, last, streams) =
            (self.store.clone(), self.id, self.last, self.streams.clone());
        let read = async move {
            match store.read_log(id, last, PAGE, streams).await {
                Ok(records) => Ok(Arc::new(records)),
                Err(e) => Err(Arc::new(ApiError::from(e))),
            }
        };
        match &self.woken {
            Some(c) => {
                let key = (id, last, self.streams.clone(), c.clone());
                self.reads.pages.get(key, || read).await
            }
            None => read.await,
        }
    }

    /// The job, shared like [`Tail::read_page`].
    async fn read_job(&self) -> JobRead {
        let (store, id) = (self.store.clone(), self.id);
        let read = async move { store.get_job(id).await.map_err(|e| Arc::new(e.into())) };
        match &self.woken {
            Some(c) => self.reads.jobs.get((id, c.clone()), || read).await,
            None => read.await,
        }
    }

    /// Waits until a commit touches the job, some were missed, or the
    /// safety net's time is up (true: read again); false when no commit
    /// can come any more.
    async fn wait_for_commit(&mut self) -> bool {
        let (id, last) = (self.id, self.last);
        let commits = &mut self.commits;
        let woken = &mut self.woken;
        let touched = async {
            loop {
                match commits.recv().await {
                    Ok(c) if c.touches_after(id, last) => {
                        *woken = Some(ByCommit(c));
                        return true;
                    }
                    Ok(c) => *woken = Some(ByCommit(c)),
                    // Missed some: re-read rather than guess, alone.
                    Err(RecvError::Lagged(_)) => {
                        *woken = None;
                        return true;
                    }
                    Err(RecvError::Closed) => return false,
                }
            }
        };
        match tokio::time::timeout(SAFETY_NET, touched).await {
            Ok(more) => more,
            // The safety net's re-read covers what no commit said.
            Err(_) => {
                self.woken = None;
                true
            }
        }
    }

    /// Ends the stream with `event: error` and the error as every
    /// answer gives it, `{"error": {"code", "message"}}` (the cause was logged where the `ApiError` was made).
    fn fail(&mut self, e: &ApiError) -> Event {
        tracing::warn!(
            job = self.id,
            code = e.code.as_str(),
            "live log tail stopped"
        );
        self.step = Step::Done;
        self.page = Arc::default();
        self.next = 0;
        Event::default().event("error").data(e.body().to_string())
    }
}

/// `data:` is the value exactly as the JSON endpoints serialise it.
pub(crate) fn json_event<T: Serialize>(value: &T) -> Result<Event, ApiError> {
    match serde_json::to_string(value) {
        Ok(json) => Ok(Event::default().data(json)),
        Err(e) => {
            tracing::error!(error = %e, "encoding a live log event");
            Err(ApiError::new(
                ErrorCode::Internal,
                "encoding an event failed; see the server's error log",
            ))
        }
    }
}
