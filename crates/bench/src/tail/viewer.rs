//! One viewer of the followed job's live tail: its own HTTP/1.1
//! connection, every event parsed as it comes and each line's latency
//! taken the moment its event is parsed.

use std::sync::Arc;
use std::time::SystemTime;

use reqwest::Url;
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::lines::{wall_ns, Tally, ViewerOutcome};
use super::sse::SseParser;
use joblog_client::{Api, JobView};

/// The fields of a record event the bench reads.
#[derive(Deserialize)]
struct EventRecord {
    seq: u64,
    ts: String,
    message: String,
}

pub(super) struct Viewer {
    pub(super) index: usize,
    pub(super) api: Arc<Api>,
    pub(super) url: Url,
    pub(super) expected: u64,
    /// Past this, the stream is given up (and reported short).
    pub(super) deadline: Instant,
}

/// What a viewer saw, and the job as its `end` event gave it.
pub(super) struct Seen {
    pub(super) index: usize,
    pub(super) outcome: ViewerOutcome,
    pub(super) end: Option<JobView>,
}

impl Viewer {
    /// Connects, says so on `ready` (or why not), and reads to the `end`
    /// event, the end of the stream or the deadline.
    pub(super) async fn run(self, ready: mpsc::Sender<Result<(), String>>) -> Seen {
        let mut tally = Tally::new(self.expected);
        let mut resp = match self.api.get_streaming(self.url.clone()).await {
            Ok(r) => r,
            Err(e) => {
                let _ = ready.send(Err(format!("{e:#}"))).await;
                tally.problem(format!("could not connect: {e:#}"));
                return self.seen(tally, None);
            }
        };
        // The answer's head came after the server subscribed the viewer
        // to commits: from here on, no line can be missed.
        let _ = ready.send(Ok(())).await;
        drop(ready);
        let mut parser = SseParser::default();
        let mut events = Vec::new();
        let mut end = None;
        let mut ended = false;
        while !ended {
            let chunk = match tokio::time::timeout_at(self.deadline, self.api.next_chunk(&mut resp))
                .await
            {
                Ok(Ok(Some(chunk))) => chunk,
                Ok(Ok(None)) => {
                    tally.problem("the stream ended without an `end` event".into());
                    break;
                }
                Ok(Err(e)) => {
                    tally.problem(format!("the stream failed: {e:#}"));
                    break;
                }
                Err(_) => {
                    tally.problem("no `end` event before the job's deadline".into());
                    break;
                }
            };
            parser.push(&chunk, &mut events);
            for event in events.drain(..) {
                match event.event.as_str() {
                    "message" => match serde_json::from_str::<EventRecord>(&event.data) {
                        Ok(r) => {
                            // Delivered: parsed, before anything else is done with it.
                            let delivered = wall_ns(SystemTime::now());
                            let received = humantime::parse_rfc3339(&r.ts).ok().map(wall_ns);
                            tally.record(r.seq, &r.message, received, delivered);
                        }
                        Err(e) => tally.problem(format!("an event that is not a record: {e}")),
                    },
                    "end" => {
                        ended = true;
                        match serde_json::from_str::<JobView>(&event.data) {
                            Ok(job) => end = Some(job),
                            Err(e) => tally.problem(format!("an `end` event without a job: {e}")),
                        }
                    }
                    "error" => {
                        tally.problem(format!("the server ended the stream: {}", event.data))
                    }
                    other => tally.problem(format!("an unexpected `{other}` event")),
                }
            }
        }
        self.seen(tally, end)
    }

    fn seen(&self, tally: Tally, end: Option<JobView>) -> Seen {
        Seen {
            index: self.index,
            outcome: tally.finish(),
            end,
        }
    }
}
