//! The log end to end, with sinks in memory: routing through the
//! `tracing` layer, both queue policies, a failing sink beside a working
//! one, live reconfiguration, and 8 threads × 100,000 events.

use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::queue::Overflow;

/// What each memory sink received, by sink name.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<Got>>>);

/// One entry as a sink got it: the sink's name and the entry.
type Got = (String, Arc<Entry>);

impl Received {
    fn of(&self, sink: &str) -> Vec<Arc<Entry>> {
        let all = self.0.lock().unwrap();
        all.iter()
            .filter(|(s, _)| s == sink)
            .map(|(_, e)| e.clone())
            .collect()
    }
}

struct MemorySink {
    name: String,
    received: Received,
    /// Writes fail while this is set.
    failing: Arc<Mutex<bool>>,
    /// Writes wait for this lock (a slow disk).
    gate: Arc<Mutex<()>>,
}

impl Sink for MemorySink {
    fn write(&mut self, batch: &[Arc<Entry>]) -> io::Result<()> {
        let _gate = self.gate.lock().unwrap();
        if *self.failing.lock().unwrap() {
            return Err(io::Error::other("disk full"));
        }
        let mut all = self.received.0.lock().unwrap();
        all.extend(batch.iter().map(|e| (self.name.clone(), e.clone())));
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn describe(&self) -> String {
        format!("memory {}", self.name)
    }
}

struct Harness {
    received: Received,
    failing: Arc<Mutex<bool>>,
    gate: Arc<Mutex<()>>,
}

impl Harness {
    fn new() -> Harness {
        Harness {
            received: Received::default(),
            failing: Arc::new(Mutex::new(false)),
            gate: Arc::new(Mutex::new(())),
        }
    }

    /// Sinks named `bad…` fail while `failing` is set and `slow…` ones
    /// wait on `gate`; the others always write.
    fn options(&self) -> OplogOptions {
        let received = self.received.clone();
        let failing = self.failing.clone();
        let gate = self.gate.clone();
        OplogOptions {
            default_dir: PathBuf::from("/nonexistent"),
            node: "n1".into(),
            opener: Arc::new(move |plan: &Plan| {
                let bad = plan.name.starts_with("bad");
                let slow = plan.name.starts_with("slow");
                Ok(Box::new(MemorySink {
                    name: plan.name.clone(),
                    received: received.clone(),
                    failing: if bad {
                        failing.clone()
                    } else {
                        Arc::new(Mutex::new(false))
                    },
                    gate: if slow {
                        gate.clone()
                    } else {
                        Arc::new(Mutex::new(()))
                    },
                }) as Box<dyn Sink>)
            }),
        }
    }
}

fn sink(name: &str, logs: &[Log]) -> SinkConfig {
    SinkConfig {
        name: Some(name.into()),
        ..SinkConfig::new(SinkKind::Stdout, logs)
    }
}

fn config(sinks: Vec<SinkConfig>) -> LoggingConfig {
    LoggingConfig {
        sinks: Some(sinks),
        slow_threshold: Duration::from_millis(50),
        ..LoggingConfig::default()
    }
}

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn a_request_logged_through_tracing_reaches_each_log_it_belongs_in() {
    use tracing_subscriber::layer::SubscriberExt;
    let h = Harness::new();
    let sinks = vec![
        sink("access", &[Log::Access]),
        sink("audit", &[Log::Audit]),
        sink("errors", &[Log::Error]),
        sink("slow", &[Log::Slow]),
        sink("server", &[Log::Server]),
    ];
    let oplog = Oplog::start(config(sinks), h.options()).unwrap();
    let subscriber = tracing_subscriber::registry().with(oplog.layer());
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!(
            "request",
            unit = "request",
            method = "POST",
            path = "/api/v1/jobs",
            status = tracing::field::Empty,
            actor = tracing::field::Empty,
        );
        span.in_scope(|| {
            tracing::Span::current().record("actor", "ci");
            tracing::info!(audit = "job.submitted", job_id = 7u64, "job submitted");
            tracing::warn!(rows = 3u64, "store was slow");
            std::thread::sleep(Duration::from_millis(60));
        });
        span.record("status", 201u64);
        drop(span);
        tracing::info!("outside any request");
    });
    assert!(oplog.flush(WAIT));
    let access = h.received.of("access");
    assert_eq!(access.len(), 1);
    assert_eq!(access[0].fields.get_json("status").unwrap(), 201);
    assert_eq!(access[0].fields.get_json("actor").unwrap(), "ci");
    let audit = h.received.of("audit");
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].kind, "job.submitted");
    assert_eq!(audit[0].fields.get_json("actor").unwrap(), "ci");
    let errors = h.received.of("errors");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].fields.get_json("path").unwrap(), "/api/v1/jobs");
    assert!(errors[0]
        .fields
        .get_json("file")
        .unwrap()
        .as_str()
        .unwrap()
        .ends_with("tests.rs"));
    let slow = h.received.of("slow");
    assert_eq!(slow.len(), 1, "60ms against a 50ms threshold");
    assert_eq!(
        slow[0]
            .fields
            .get_json("events")
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let server = h.received.of("server");
    assert_eq!(server.len(), 1);
    assert_eq!(server[0].message, "outside any request");
    assert!(oplog.shutdown(WAIT));
}

fn server_unit(i: u64) -> Unit {
    Unit::server_event(Event::new(Level::Info, "test", "e").with("i", Value::U64(i)))
}

#[test]
fn drop_newest_counts_what_a_full_queue_drops_and_block_loses_nothing() {
    let h = Harness::new();
    // Access lines: the sinks' own warnings (server and error lines)
    // stay out of the count.
    let mut dropping = sink("slow-dropping", &[Log::Access]);
    dropping.overflow = Some(Overflow::DropNewest);
    dropping.queue = Some(10);
    let mut blocking = sink("slow-blocking", &[Log::Access]);
    blocking.overflow = Some(Overflow::Block);
    blocking.queue = Some(10);
    let oplog = Oplog::start(config(vec![dropping, blocking]), h.options()).unwrap();
    let gate = h.gate.lock().unwrap();
    // The router blocks on the blocking sink's full queue, so this
    // thread must not wait for it: submit from another.
    let submitter = {
        let oplog = oplog.clone();
        std::thread::spawn(move || {
            (0..200)
                .for_each(|i| oplog.submit(Unit::new(UnitKind::Request).with("i", Value::U64(i))))
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    drop(gate);
    submitter.join().unwrap();
    assert!(oplog.flush(WAIT));
    let figures = oplog.figures();
    let stats = |name: &str| {
        figures
            .iter()
            .find(|f| f.name == name)
            .unwrap()
            .stats
            .clone()
    };
    let kept = h.received.of("slow-dropping").len() as u64;
    let dropped = stats("slow-dropping")
        .dropped
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(dropped > 0, "the gate held the sink while 200 came");
    assert_eq!(kept + dropped, 200, "every entry is written or counted");
    let blocked: Vec<u64> = h
        .received
        .of("slow-blocking")
        .iter()
        .map(|e| e.fields.get_json("i").unwrap().as_u64().unwrap())
        .collect();
    assert_eq!(
        blocked,
        (0..200).collect::<Vec<_>>(),
        "block keeps all, in order"
    );
    assert_eq!(
        stats("slow-blocking")
            .dropped
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
}

#[test]
fn a_failing_sink_does_not_stop_the_others_and_is_retried() {
    let h = Harness::new();
    let oplog = Oplog::start(
        config(vec![
            sink("bad", &[Log::Server, Log::Error]),
            sink("good", &[Log::Server, Log::Error]),
        ]),
        h.options(),
    )
    .unwrap();
    *h.failing.lock().unwrap() = true;
    for i in 0..100 {
        oplog.submit(server_unit(i));
    }
    assert!(oplog.flush(WAIT));
    // The bad sink's warning was queued while it was flushed: one more
    // flush routes it.
    assert!(oplog.flush(WAIT));
    let good = h.received.of("good");
    assert_eq!(good.len() as u64, 100 + warnings(&good), "{good:#?}");
    assert!(h.received.of("bad").is_empty());
    let figures = oplog.figures();
    let bad = &figures.iter().find(|f| f.name == "bad").unwrap().stats;
    assert!(bad.failed_writes.load(std::sync::atomic::Ordering::Relaxed) >= 1);
    // Its own warning, routed to it too, is lost with the 100.
    assert_eq!(
        bad.lost.load(std::sync::atomic::Ordering::Relaxed),
        100 + warnings(&good)
    );
    // The sink's warning names it, and reached the good sink.
    assert!(h.received.of("good").iter().any(|e| e
        .message
        .contains("log sink bad (memory bad) failed: disk full")));
    // Back up: after its backoff it writes again.
    *h.failing.lock().unwrap() = false;
    std::thread::sleep(Duration::from_millis(300));
    oplog.submit(server_unit(1000));
    assert!(oplog.flush(WAIT));
    assert!(h
        .received
        .of("bad")
        .iter()
        .any(|e| e.fields.get_json("i") == Some(1000.into())));
}

/// Entries the sinks themselves logged (their warnings).
fn warnings(entries: &[Arc<Entry>]) -> u64 {
    entries
        .iter()
        .filter(|e| e.fields.get("i").is_none())
        .count() as u64
}

#[test]
fn a_new_configuration_applies_from_the_next_event_and_an_invalid_one_is_refused() {
    let h = Harness::new();
    let oplog = Oplog::start(config(vec![sink("first", &[Log::Server])]), h.options()).unwrap();
    oplog.submit(server_unit(1));
    assert!(oplog
        .reconfigure(config(vec![sink("second", &[Log::Server])]))
        .unwrap());
    oplog.submit(server_unit(2));
    let bad = config(vec![SinkConfig::new(SinkKind::File, &[Log::Access])]);
    let e = oplog.reconfigure(bad).unwrap_err().to_string();
    assert!(e.contains("needs a `path`"), "{e}");
    oplog.submit(server_unit(3));
    assert!(oplog.flush(WAIT));
    let ids = |sink: &str| -> Vec<u64> {
        h.received
            .of(sink)
            .iter()
            .filter_map(|e| e.fields.get_json("i")?.as_u64())
            .collect()
    };
    assert_eq!(ids("first"), [1]);
    assert_eq!(
        ids("second"),
        [2, 3],
        "the refused configuration changed nothing"
    );
    assert_eq!(
        oplog.config().sinks.unwrap()[0].name.as_deref(),
        Some("second")
    );
    assert!(
        !oplog.reconfigure(oplog.config()).unwrap(),
        "the same one is no change"
    );
}

#[test]
fn eight_threads_of_100000_events_under_block_lose_nothing_and_keep_each_threads_order() {
    use tracing_subscriber::layer::SubscriberExt;
    const THREADS: u64 = 8;
    const EACH: u64 = 100_000;
    let h = Harness::new();
    let mut only = sink("all", &[Log::Server]);
    only.queue = Some(1024);
    let oplog = Oplog::start(config(vec![only]), h.options()).unwrap();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(oplog.layer()));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let dispatch = dispatch.clone();
            std::thread::spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    for i in 0..EACH {
                        tracing::info!(t, i, "e");
                    }
                })
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(oplog.flush(Duration::from_secs(120)));
    let mut next = vec![0u64; THREADS as usize];
    for e in h.received.of("all") {
        let t = e.fields.get_json("t").unwrap().as_u64().unwrap() as usize;
        assert_eq!(
            e.fields.get_json("i").unwrap().as_u64().unwrap(),
            next[t],
            "thread {t} out of order"
        );
        next[t] += 1;
    }
    assert_eq!(next, vec![EACH; THREADS as usize]);
}

/// A `block` sink whose write never returns (a FIFO nobody reads, a hung
/// mount) is taken for stalled after `STALL`: the threads that log and the
/// other sinks go on, its entries are counted, the others are told, and
/// once it writes again it takes entries again.
#[test]
fn a_sink_that_stalls_is_counted_and_skipped_and_holds_nobody_up() {
    let h = Harness::new();
    let mut stuck = sink("slow-stuck", &[Log::Server]);
    stuck.overflow = Some(Overflow::Block);
    stuck.queue = Some(10);
    let oplog = Oplog::start(
        config(vec![stuck, sink("good", &[Log::Server, Log::Error])]),
        h.options(),
    )
    .unwrap();
    let gate = h.gate.lock().unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    {
        let oplog = oplog.clone();
        std::thread::spawn(move || {
            for i in 0..200 {
                oplog.submit(server_unit(i));
            }
            let _ = done.send(oplog.flush(WAIT));
        });
    }
    assert_eq!(
        finished.recv_timeout(WAIT),
        Ok(true),
        "the thread that logs was held up by the stuck sink"
    );
    let good = h.received.of("good");
    let numbered = good.iter().filter(|e| e.fields.get("i").is_some()).count();
    assert_eq!(numbered, 200, "the other sink got everything");
    assert!(
        good.iter()
            .any(|e| e.message.starts_with("log sink slow-stuck stalled")),
        "{good:#?}"
    );
    let stalled = |oplog: &Oplog| {
        oplog
            .figures()
            .iter()
            .find(|f| f.name == "slow-stuck")
            .unwrap()
            .stats
            .stalled
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    let counted = stalled(&oplog);
    assert!(counted > 0);
    // Written (at most the queue and a batch) or counted: none unaccounted.
    drop(gate);
    std::thread::sleep(Duration::from_millis(300));
    oplog.submit(server_unit(1000));
    assert!(oplog.flush(WAIT));
    assert!(oplog.flush(WAIT));
    let stuck = h.received.of("slow-stuck");
    assert!(
        stuck
            .iter()
            .any(|e| e.fields.get_json("i") == Some(1000.into())),
        "it takes entries again once it writes"
    );
    assert!(h.received.of("good").iter().any(|e| e
        .message
        .starts_with("log sink slow-stuck takes entries again")));
    // Every entry routed to it is written or counted: the 201 numbered,
    // and the server lines about its stall and recovery (the other sink
    // got the same ones). Flushes are no entries.
    let about_it = h
        .received
        .of("good")
        .iter()
        .filter(|e| e.log == Log::Server && e.message.starts_with("log sink slow-stuck"))
        .count() as u64;
    assert_eq!(
        stuck.len() as u64 + stalled(&oplog),
        201 + about_it,
        "every entry written or counted"
    );
}
