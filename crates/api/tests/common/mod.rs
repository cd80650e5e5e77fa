//! The harness of the API tests: a whole node (store on a [`TestDatabase`],
//! pipeline, engine, router) driven through `tower::ServiceExt::oneshot`.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use joblog_api::{app, ApiOptions, AppState};
use joblog_core::Timestamp;
use joblog_engine::{Clock, Engine, EngineConfig, SystemClock};
use joblog_pipeline::{Pipeline, PipelineConfig, WriterThread};
use joblog_store::testing::TestDatabase;
use joblog_store::StoreOptions;
use serde_json::Value;
use tower::ServiceExt;

pub mod openapi;

/// The kit every suite shares: waits, and the typed views the helpers
/// below read answers through.
pub use joblog_testkit::views::{ErrorBody, Job, LogPage};
pub use joblog_testkit::{eventually, view, PATIENCE};

/// A running node. Fields drop in declaration order: `db` goes last, after
/// everything that may still hold a connection to it (its drop removes the
/// temp dir and, on PostgreSQL, the database).
pub struct TestApp {
    pub router: Router,
    pub engine: Engine,
    pub pipeline: Pipeline,
    pub writer: Option<WriterThread>,
    pub db: TestDatabase,
}

pub async fn start_app(db: TestDatabase, max_concurrency: usize) -> TestApp {
    start_app_with_token(db, max_concurrency, None).await
}

/// Builds a node the way `joblog serve` does, without a socket: the store
/// opened by the URL of `db`, the results files in its temp dir.
pub async fn start_app_with_token(
    db: TestDatabase,
    max_concurrency: usize,
    token: Option<&str>,
) -> TestApp {
    let options = ApiOptions {
        token: token.map(str::to_string),
        ..ApiOptions::default()
    };
    start_app_with(db, max_concurrency, options, |_| {}).await
}

/// [`start_app`] with the API's options and a last say on the engine's.
pub async fn start_app_with(
    db: TestDatabase,
    max_concurrency: usize,
    options: ApiOptions,
    engine: impl FnOnce(&mut EngineConfig),
) -> TestApp {
    start_app_full(db, max_concurrency, options, engine, Arc::new(SystemClock)).await
}

/// [`start_app`] whose schedules fire by `clock`.
pub async fn start_app_with_clock(
    db: TestDatabase,
    max_concurrency: usize,
    clock: Arc<ManualClock>,
) -> TestApp {
    start_app_full(db, max_concurrency, ApiOptions::default(), |_| {}, clock).await
}

/// [`start_app_with_clock`] with a last say on the engine's options.
pub async fn start_app_with_clock_and(
    db: TestDatabase,
    max_concurrency: usize,
    clock: Arc<ManualClock>,
    engine: impl FnOnce(&mut EngineConfig),
) -> TestApp {
    start_app_full(db, max_concurrency, ApiOptions::default(), engine, clock).await
}

async fn start_app_full(
    db: TestDatabase,
    max_concurrency: usize,
    options: ApiOptions,
    engine: impl FnOnce(&mut EngineConfig),
    clock: Arc<dyn Clock>,
) -> TestApp {
    let store_options = StoreOptions {
        node: "test-node".into(),
        ..Default::default()
    };
    let store = joblog_store::open(db.url(), &store_options).unwrap();
    let mut registry = prometheus_client::registry::Registry::default();
    let (pipeline, writer) = Pipeline::start(
        store.open_writer().unwrap(),
        PipelineConfig::default(),
        &mut registry,
    );
    let mut config = EngineConfig::new("test-node".into(), db.dir().to_path_buf());
    config.max_concurrency = max_concurrency;
    engine(&mut config);
    let engine = Engine::start_with_clock(store, pipeline.clone(), config, &mut registry, clock)
        .await
        .unwrap();
    let router = app(AppState::new(engine.clone(), registry, &options));
    TestApp {
        router,
        engine,
        pipeline,
        writer: Some(writer),
        db,
    }
}

/// A clock a test moves by hand: the scheduler sleeps until the test
/// sets it at or past the time it waits for.
pub struct ManualClock {
    now: tokio::sync::watch::Sender<Timestamp>,
}

impl ManualClock {
    pub fn at(t: Timestamp) -> Arc<ManualClock> {
        Arc::new(ManualClock {
            now: tokio::sync::watch::channel(t).0,
        })
    }

    pub fn set(&self, t: Timestamp) {
        self.now.send_replace(t);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.now.borrow()
    }

    fn sleep_until(&self, at: Timestamp) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let mut now = self.now.subscribe();
        Box::pin(async move {
            let _ = now.wait_for(|t| *t >= at).await;
        })
    }
}

impl TestApp {
    pub fn path(&self, name: &str) -> PathBuf {
        self.db.dir().join(name)
    }

    /// Stops the node in order: jobs, then the pipeline, then waits for the
    /// writer to have committed everything.
    pub async fn shutdown(mut self) {
        self.engine.shutdown(Duration::from_secs(10)).await;
        self.pipeline.close();
        if let Some(writer) = self.writer.take() {
            tokio::task::spawn_blocking(move || writer.join())
                .await
                .unwrap();
        }
    }
}

/// A response, its body collected.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub content_type: Option<String>,
    pub www_authenticate: Option<String>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "{} body is not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("UTF-8 body")
    }
}

/// Sends `request`; the answer is checked against openapi.json
/// ([`openapi::check`]).
pub async fn send(router: &Router, request: Request<Body>) -> Reply {
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    let response = router.clone().oneshot(request).await.unwrap();
    let content_type = content_type_of(&response);
    // A compressed body is checked by the tests that ask for it.
    let encoded = response.headers().contains_key(header::CONTENT_ENCODING);
    let reply = into_reply(response, content_type).await;
    let body: &[u8] = if encoded { &[] } else { &reply.body };
    openapi::check(
        &method,
        &path,
        reply.status,
        reply.content_type.as_deref(),
        body,
    );
    reply
}

fn content_type_of(response: &axum::response::Response) -> Option<String> {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
}

/// Reads a whole response; of an open event stream, which may never end,
/// only its head (the body is left empty: read one with [`open_events`]).
async fn into_reply(response: axum::response::Response, content_type: Option<String>) -> Reply {
    let status = response.status();
    let www_authenticate = response
        .headers()
        .get(header::WWW_AUTHENTICATE)
        .map(|v| v.to_str().unwrap().to_owned());
    if status == StatusCode::OK && content_type.as_deref() == Some("text/event-stream") {
        return Reply {
            status,
            content_type,
            www_authenticate,
            body: Vec::new(),
        };
    }
    let body = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    Reply {
        status,
        content_type,
        www_authenticate,
        body,
    }
}

pub async fn get(router: &Router, uri: &str) -> Reply {
    let req = Request::get(uri).body(Body::empty()).unwrap();
    send(router, req).await
}

pub async fn post_raw(router: &Router, uri: &str, body: impl Into<Body>) -> Reply {
    let req = Request::builder()
        .method(Method::POST)
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.into())
        .unwrap();
    send(router, req).await
}

pub async fn post(router: &Router, uri: &str, json: &Value) -> Reply {
    post_raw(router, uri, json.to_string()).await
}

/// GETs `uri` and expects 200 with a JSON body.
pub async fn patch(router: &Router, uri: &str, json: &Value) -> Reply {
    let req = Request::builder()
        .method(Method::PATCH)
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(json.to_string()))
        .unwrap();
    send(router, req).await
}

pub async fn delete(router: &Router, uri: &str) -> Reply {
    let req = Request::delete(uri).body(Body::empty()).unwrap();
    send(router, req).await
}

pub async fn get_json(router: &Router, uri: &str) -> Value {
    let reply = get(router, uri).await;
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "GET {uri}: {}",
        String::from_utf8_lossy(&reply.body)
    );
    reply.json()
}

/// Checks the error shape `{"error": {"code", "message"}}` and the status,
/// and returns the message.
pub fn assert_error(reply: &Reply, status: StatusCode, code: &str) -> String {
    let body = reply.json();
    assert_eq!(reply.status, status, "{body}");
    // The view admits `error.code` and `error.message` and nothing else.
    let error = view::<ErrorBody>(&body).error;
    assert_eq!(error.code, code, "{body}");
    assert!(!error.message.is_empty(), "{body}");
    error.message
}

/// Submits a job and returns it (expects 201).
pub async fn submit(router: &Router, json: Value) -> Value {
    let reply = post(router, "/api/v1/jobs", &json).await;
    assert_eq!(
        reply.status,
        StatusCode::CREATED,
        "submit {json}: {}",
        String::from_utf8_lossy(&reply.body)
    );
    let job = reply.json();
    assert!(view::<Job>(&job).id > 0, "{job}");
    job
}

/// Submits `sh -c SCRIPT`.
pub async fn submit_sh(router: &Router, script: &str) -> Value {
    submit(router, serde_json::json!({"command": ["sh", "-c", script]})).await
}

pub fn id_of(job: &Value) -> i64 {
    view::<Job>(job).id
}

pub async fn show(router: &Router, id: i64) -> Value {
    get_json(router, &format!("/api/v1/jobs/{id}")).await
}

/// Polls the job until `done` holds, up to [`PATIENCE`]; gives the job's
/// whole answer, for the fields its view does not hold.
pub async fn wait_for(router: &Router, id: i64, what: &str, done: impl Fn(&Job) -> bool) -> Value {
    eventually(&format!("job {id} to become {what}"), PATIENCE, || async {
        let job = show(router, id).await;
        if done(&view::<Job>(&job)) {
            Ok(job)
        } else {
            Err(job)
        }
    })
    .await
}

pub async fn wait_finished(router: &Router, id: i64) -> Value {
    wait_for(router, id, "finished", Job::is_finished).await
}

pub async fn wait_running(router: &Router, id: i64) -> Value {
    wait_for(router, id, "running", |j| j.state == "running").await
}

/// Runs a `sh -c` script to its end and returns the finished job.
pub async fn run_sh(router: &Router, script: &str) -> Value {
    let id = id_of(&submit_sh(router, script).await);
    wait_finished(router, id).await
}

/// The whole log of a finished job, read page by page following
/// `next_after_seq` until it is `null`.
pub async fn whole_log(router: &Router, id: i64) -> Vec<Value> {
    const PAGE: usize = 400;
    let mut records: Vec<Value> = Vec::new();
    let mut after = 0u64;
    for _ in 0..100_000 {
        let page = get_json(
            router,
            &format!("/api/v1/jobs/{id}/log?after_seq={after}&limit={PAGE}"),
        )
        .await;
        let typed = view::<LogPage>(&page);
        let batch = page["records"].as_array().expect("records").clone();
        assert!(batch.len() <= PAGE, "page larger than its limit");
        for r in &typed.records {
            assert!(r.seq > after, "seq {} after {after}: not in order", r.seq);
            after = r.seq;
        }
        records.extend(batch);
        match typed.next_after_seq {
            None => return records,
            Some(next) => {
                assert_eq!(next, after, "next_after_seq is the last seq given");
            }
        }
    }
    panic!("log of job {id} never ended (is the job finished?)");
}

/// Polls the log of a job (running or not) until it holds at least `count`
/// records, up to [`PATIENCE`], and returns them.
pub async fn wait_records(router: &Router, id: i64, count: usize) -> Vec<Value> {
    eventually(
        &format!("job {id} to write {count} records"),
        PATIENCE,
        || async {
            let page = get_json(router, &format!("/api/v1/jobs/{id}/log")).await;
            if view::<LogPage>(&page).records.len() >= count {
                Ok(page["records"].as_array().expect("records").clone())
            } else {
                Err(page)
            }
        },
    )
    .await
}

/// `(stream, message)` of each record.
pub fn lines(records: &[Value]) -> Vec<(String, String)> {
    records
        .iter()
        .map(|r| {
            (
                r["stream"].as_str().unwrap().to_owned(),
                r["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The messages of the records of one stream, in order.
pub fn messages_of(records: &[Value], stream: &str) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["stream"] == stream)
        .map(|r| r["message"].as_str().unwrap().to_owned())
        .collect()
}

/// A timestamp of the API (`2026-11-22T10:15:02.123456Z`), checked to have
/// the fixed-width format, in which text order is time order.
pub fn timestamp(v: &Value) -> String {
    let s = v.as_str().unwrap_or_else(|| panic!("not a timestamp: {v}"));
    let b = s.as_bytes();
    assert!(
        s.len() == 27 && b[10] == b'T' && b[19] == b'.' && s.ends_with('Z'),
        "timestamp {s:?} is not YYYY-MM-DDTHH:MM:SS.ffffffZ"
    );
    s.to_owned()
}

/// Whether process `pid` still exists (and is not merely a zombie waiting to
/// be reaped by whoever adopted it).
pub fn process_alive(pid: i32) -> bool {
    let signalable = std::process::Command::new("sh")
        .args(["-c", &format!("kill -0 {pid}")])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success();
    if !signalable {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// One Server-Sent Event: its fields, `data` lines joined with `\n`.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
}

impl SseEvent {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {self:?}"))
    }

    /// The event type, `message` when there is no `event:` line.
    pub fn kind(&self) -> &str {
        self.event.as_deref().unwrap_or("message")
    }
}

/// An open `text/event-stream` response, read frame by frame as the server
/// sends it.
pub struct EventStream {
    body: Body,
    buf: Vec<u8>,
    ended: bool,
}

/// Opens an event stream; any answer but 200 `text/event-stream` comes back
/// as the (collected) reply.
pub async fn open_events(
    router: &Router,
    uri: &str,
    last_event_id: Option<&str>,
) -> Result<EventStream, Reply> {
    let mut req = Request::get(uri);
    if let Some(id) = last_event_id {
        req = req.header("last-event-id", id);
    }
    open_events_with(router, req.body(Body::empty()).unwrap()).await
}

/// [`open_events`] of a request made by the caller (headers of its own).
pub async fn open_events_with(
    router: &Router,
    request: Request<Body>,
) -> Result<EventStream, Reply> {
    let response = router.clone().oneshot(request).await.unwrap();
    let content_type = content_type_of(&response);
    if response.status() == StatusCode::OK && content_type.as_deref() == Some("text/event-stream") {
        return Ok(EventStream {
            body: response.into_body(),
            buf: Vec::new(),
            ended: false,
        });
    }
    Err(into_reply(response, content_type).await)
}

/// [`open_events`], expecting the stream to open.
pub async fn events(router: &Router, uri: &str, last_event_id: Option<&str>) -> EventStream {
    match open_events(router, uri, last_event_id).await {
        Ok(stream) => stream,
        Err(reply) => panic!(
            "GET {uri}: {} {:?} {}",
            reply.status,
            reply.content_type,
            String::from_utf8_lossy(&reply.body)
        ),
    }
}

impl EventStream {
    /// The next event (comments such as keep-alives skipped), or `None` once
    /// the body has ended. Panics after [`PATIENCE`]. Cancel-safe: dropping
    /// the future loses nothing.
    pub async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(event) = self.parse_one() {
                return Some(event);
            }
            if self.ended {
                assert!(
                    self.buf.is_empty(),
                    "the stream ended inside an event: {:?}",
                    String::from_utf8_lossy(&self.buf)
                );
                return None;
            }
            let frame = tokio::time::timeout(PATIENCE, self.body.frame())
                .await
                .expect("no event for too long");
            match frame {
                None => self.ended = true,
                Some(frame) => {
                    if let Ok(data) = frame.expect("body error").into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
            }
        }
    }

    /// Every event up to the end of the body.
    pub async fn rest(&mut self) -> Vec<SseEvent> {
        let mut all = Vec::new();
        while let Some(event) = self.next().await {
            all.push(event);
        }
        all
    }

    /// Takes one complete event (ended by a blank line) out of the buffer;
    /// blocks of comments only are dropped.
    fn parse_one(&mut self) -> Option<SseEvent> {
        loop {
            let end = self.buf.windows(2).position(|w| w == b"\n\n")?;
            let block: Vec<u8> = self.buf.drain(..end + 2).collect();
            let text = std::str::from_utf8(&block).expect("events are UTF-8");
            let (mut id, mut event, mut data, mut fields) = (None, None, Vec::new(), 0);
            for line in text.lines().filter(|l| !l.is_empty()) {
                assert!(!line.ends_with('\r'), "stray CR in {text:?}");
                if line.starts_with(':') {
                    continue;
                }
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value).to_owned();
                fields += 1;
                match field {
                    "id" => id = Some(value),
                    "event" => event = Some(value),
                    "data" => data.push(value),
                    other => panic!("unexpected field {other:?} in {text:?}"),
                }
            }
            if fields > 0 {
                return Some(SseEvent {
                    id,
                    event,
                    data: data.join("\n"),
                });
            }
        }
    }
}

/// GETs `uri` with the headers given; the status, the head and the body as
/// sent (not decoded). Not for endless bodies.
pub async fn fetch(
    router: &axum::Router,
    uri: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Vec<u8>) {
    let mut req = Request::get(uri);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let response = router
        .clone()
        .oneshot(req.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes().to_vec();
    (parts.status, parts.headers, body)
}
