//! The command-line client (SPEC §4): talks to a joblog server over its HTTP API (SPEC §5).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, IsTerminal, Write};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{ArgGroup, Args, Subcommand};
use joblog_core::{JobState, Stream};
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use reqwest::{StatusCode, Url};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

#[derive(Args, Debug, Clone)]
pub struct Global {
    /// Server to talk to.
    #[arg(
        long,
        global = true,
        env = "JOBLOG_SERVER",
        default_value = "http://127.0.0.1:7878"
    )]
    pub server: String,
    /// API token (sent as `Authorization: Bearer`).
    #[arg(long, global = true, env = "JOBLOG_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum ClientCommand {
    /// Submit a job; without --detach, follow its log and exit with its exit code.
    Run(RunArgs),
    /// List jobs, newest first.
    Jobs(JobsArgs),
    /// Show one job with its log counts.
    Show(IdArgs),
    /// Print a job's log.
    Logs(LogsArgs),
    /// Print a job's result (JSON).
    #[command(name = "result")]
    JobResult(IdArgs),
    /// Cancel a queued or running job.
    Cancel(IdArgs),
    /// Delete old jobs with their logs and results (retention).
    Groom(GroomArgs),
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Name of the job (for listing and retention).
    #[arg(long)]
    pub name: Option<String>,
    /// Environment variable for the job; `K` alone passes this shell's value of K.
    #[arg(long = "env", value_name = "K=V", value_parser = parse_kv)]
    pub env: Vec<KeyValue>,
    /// Secret for the job: an environment variable masked in its log.
    /// `K` alone passes this shell's value of K (keeps it off the command line).
    #[arg(long = "secret", value_name = "K=V", value_parser = parse_kv)]
    pub secret: Vec<KeyValue>,
    /// Stop the job after this long (e.g. 90s, 15m, 2h).
    #[arg(long, value_name = "DUR", value_parser = joblog_core::parse_positive_duration)]
    pub timeout: Option<Duration>,
    /// Working directory of the job, on the server.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// Print the job id and return instead of following the log.
    #[arg(long)]
    pub detach: bool,
    /// Print JSON: the job with --detach, else one log record per line.
    #[arg(long)]
    pub json: bool,
    /// The command to run and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct JobsArgs {
    /// Only jobs in this state.
    #[arg(long, value_name = "S", value_parser = parse_state)]
    pub state: Option<JobState>,
    /// Only jobs with this name.
    #[arg(long, value_name = "N")]
    pub name: Option<String>,
    /// How many jobs to list.
    #[arg(long, value_name = "N", default_value_t = 50,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: u32,
    /// Print the API's JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct IdArgs {
    /// Job id.
    #[arg(value_name = "ID", value_parser = clap::value_parser!(i64).range(1..))]
    pub id: i64,
    /// Print the API's JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct LogsArgs {
    /// Job id.
    #[arg(value_name = "ID", value_parser = clap::value_parser!(i64).range(1..))]
    pub id: i64,
    /// Keep printing new records until the job ends.
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Only these streams (comma-separated: output, error, warning,
    /// information, verbose, debug, progress).
    #[arg(long, value_name = "LIST", value_parser = parse_streams)]
    pub streams: Option<StreamList>,
    /// Start after this sequence number.
    #[arg(long, value_name = "SEQ", default_value_t = 0)]
    pub after: u64,
    /// Prefix every line with the time joblog received it.
    #[arg(long)]
    pub timestamps: bool,
    /// Print one JSON record per line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("policy").required(true).multiple(true)
    .args(["older_than", "keep_per_name"])))]
pub struct GroomArgs {
    /// Delete finished jobs older than this (e.g. 30d).
    #[arg(long, value_name = "DUR", value_parser = joblog_core::parse_positive_duration)]
    pub older_than: Option<Duration>,
    /// Keep only the newest N finished jobs of each name.
    #[arg(long, value_name = "N")]
    pub keep_per_name: Option<u32>,
    /// Print the API's JSON.
    #[arg(long)]
    pub json: bool,
}

/// One `--env`/`--secret` argument; `value` is `None` for a bare `K`,
/// which takes the value from the client's own environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamList(pub Vec<Stream>);

fn parse_kv(s: &str) -> Result<KeyValue, String> {
    let (key, value) = match s.split_once('=') {
        Some((k, v)) => (k, Some(v.to_string())),
        None => (s, None),
    };
    if key.is_empty() {
        return Err(format!("{s:?}: expected K=V with a non-empty name K"));
    }
    if key.contains('\0') || value.as_deref().is_some_and(|v| v.contains('\0')) {
        return Err("names and values may not contain NUL bytes".to_string());
    }
    Ok(KeyValue {
        key: key.to_string(),
        value,
    })
}

fn parse_state(s: &str) -> Result<JobState, String> {
    JobState::parse(s).ok_or_else(|| {
        let names: Vec<&str> = JobState::ALL.iter().map(|st| st.name()).collect();
        format!("unknown state {s:?} (expected one of {})", names.join(", "))
    })
}

fn parse_streams(s: &str) -> Result<StreamList, String> {
    let list = Stream::parse_list(s)?;
    if list.is_empty() {
        return Err("give at least one stream".to_string());
    }
    Ok(StreamList(list))
}

/// Bad usage found after clap has parsed: the command exits 2.
#[derive(Debug)]
pub(crate) struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

pub async fn run(cmd: ClientCommand, global: Global) -> anyhow::Result<i32> {
    let result = async {
        let api = Api::new(&global.server, global.token.as_deref())?;
        match cmd {
            ClientCommand::Run(a) => cmd_run(&api, a).await,
            ClientCommand::Jobs(a) => cmd_jobs(&api, a).await,
            ClientCommand::Show(a) => cmd_show(&api, a).await,
            ClientCommand::Logs(a) => cmd_logs(&api, a).await,
            ClientCommand::JobResult(a) => cmd_result(&api, a).await,
            ClientCommand::Cancel(a) => cmd_cancel(&api, a).await,
            ClientCommand::Groom(a) => cmd_groom(&api, a).await,
        }
    }
    .await;
    match result {
        Ok(code) => Ok(code),
        Err(e) => {
            if let Some(u) = e.downcast_ref::<UsageError>() {
                eprintln!("joblog: {u}");
                return Ok(2);
            }
            // `joblog logs 7 | head` closes our stdout early: that is the
            // reader's choice, not a failure worth a message.
            if e.chain().any(|c| {
                c.downcast_ref::<io::Error>()
                    .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
            }) {
                return Ok(0);
            }
            Err(e)
        }
    }
}

// ---------------------------------------------------------------------------
// HTTP

/// An error the server answered with (`{"error":{"code","message"}}`).
#[derive(Debug)]
pub(crate) struct ApiError {
    pub status: StatusCode,
    pub code: String,
    pub message: String,
    server: String,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = if self.message.is_empty() {
            format!("HTTP {} ({})", self.status, self.code)
        } else {
            self.message.clone()
        };
        let msg = escape_display(&text, false);
        if self.status == StatusCode::UNAUTHORIZED {
            write!(
                f,
                "{msg} (HTTP 401 from {}; give the API token with --token or JOBLOG_TOKEN)",
                self.server
            )
        } else if self.status.is_server_error() {
            write!(f, "server error at {}: {msg}", self.server)
        } else {
            f.write_str(&msg)
        }
    }
}

impl std::error::Error for ApiError {}

#[derive(Deserialize)]
struct ErrorEnvelope {
    error: ErrorBody,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

/// One HTTP client for every call, so the connection stays warm.
pub(crate) struct Api {
    http: reqwest::Client,
    /// The server URL without a trailing slash; paths are appended to it.
    base: String,
    /// The server URL as shown in messages (no password).
    shown: String,
}

const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a follow request asks the server to hold it (the API allows 30 s).
const FOLLOW_WAIT_MS: u64 = 10_000;

impl Api {
    pub(crate) fn new(server: &str, token: Option<&str>) -> anyhow::Result<Api> {
        let url = Url::parse(server.trim())
            .map_err(|e| UsageError(format!("invalid --server URL {server:?}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(UsageError(format!(
                "invalid --server URL {:?}: expected http://HOST:PORT",
                redact_url(server)
            ))
            .into());
        }
        let mut headers = HeaderMap::new();
        if let Some(t) = token {
            let mut v = HeaderValue::from_str(&format!("Bearer {}", t.trim())).map_err(|_| {
                UsageError("the API token contains characters not allowed in a header".into())
            })?;
            // Keeps the token out of reqwest's debug output.
            v.set_sensitive(true);
            headers.insert(AUTHORIZATION, v);
        }
        let http = reqwest::Client::builder()
            .user_agent(concat!("joblog/", env!("CARGO_PKG_VERSION")))
            .default_headers(headers)
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true)
            .build()
            .context("cannot set up the HTTP client")?;
        Ok(Api {
            http,
            base: url.as_str().trim_end_matches('/').to_string(),
            shown: redact_url(url.as_str().trim_end_matches('/')),
        })
    }

    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// `path` is relative to the server root, e.g. `/api/v1/jobs`.
    pub(crate) fn url(&self, path: &str, query: &[(&str, String)]) -> anyhow::Result<Url> {
        let mut url = Url::parse(&format!("{}{path}", self.base))
            .with_context(|| format!("invalid URL for {path}"))?;
        if !query.is_empty() {
            let mut q = url.query_pairs_mut();
            for (k, v) in query {
                q.append_pair(k, v);
            }
        }
        Ok(url)
    }

    fn transport_error(&self, e: reqwest::Error) -> anyhow::Error {
        let what = if e.is_connect() {
            "cannot connect to"
        } else if e.is_timeout() {
            "timed out talking to"
        } else {
            "lost the connection to"
        };
        // The innermost cause ("Connection refused") is what tells the user
        // what to fix; reqwest's own text repeats the URL.
        let e = e.without_url();
        let mut cause: &dyn std::error::Error = &e;
        while let Some(next) = cause.source() {
            cause = next;
        }
        anyhow::Error::new(TransportError {
            message: format!("{what} joblog server at {}: {cause}", self.shown),
        })
    }

    /// Sends and turns a non-2xx answer into an [`ApiError`].
    async fn send(
        &self,
        req: reqwest::RequestBuilder,
        timeout: Option<Duration>,
    ) -> anyhow::Result<reqwest::Response> {
        let req = match timeout {
            Some(t) => req.timeout(t),
            None => req,
        };
        let resp = req.send().await.map_err(|e| self.transport_error(e))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let body = resp.text().await.unwrap_or_default();
        let (code, message) = match serde_json::from_str::<ErrorEnvelope>(&body) {
            Ok(env) => (env.error.code, env.error.message),
            Err(_) => {
                let snippet: String = body.trim().chars().take(200).collect();
                (
                    String::new(),
                    format!("HTTP {status} from {}: {snippet}", self.shown),
                )
            }
        };
        Err(ApiError {
            status,
            code,
            message,
            server: self.shown.clone(),
        }
        .into())
    }

    async fn read_body(&self, resp: reqwest::Response) -> anyhow::Result<Vec<u8>> {
        let bytes = resp.bytes().await.map_err(|e| self.transport_error(e))?;
        Ok(bytes.to_vec())
    }

    fn decode<T: DeserializeOwned>(&self, body: &[u8]) -> anyhow::Result<T> {
        serde_json::from_slice(body)
            .with_context(|| format!("unexpected answer from {}", self.shown))
    }

    /// GET returning the body bytes (for `--json`, printed as the API sent them).
    pub(crate) async fn get_raw(&self, url: Url, timeout: Duration) -> anyhow::Result<Vec<u8>> {
        let resp = self.send(self.http.get(url), Some(timeout)).await?;
        self.read_body(resp).await
    }

    pub(crate) async fn get_json<T: DeserializeOwned>(&self, url: Url) -> anyhow::Result<T> {
        let body = self.get_raw(url, REQUEST_TIMEOUT).await?;
        self.decode(&body)
    }

    pub(crate) async fn post_raw(&self, url: Url, body: &Value) -> anyhow::Result<Vec<u8>> {
        let resp = self
            .send(self.http.post(url).json(body), Some(REQUEST_TIMEOUT))
            .await?;
        self.read_body(resp).await
    }

    pub(crate) async fn post_json<T: DeserializeOwned>(
        &self,
        url: Url,
        body: &Value,
    ) -> anyhow::Result<T> {
        let raw = self.post_raw(url, body).await?;
        self.decode(&raw)
    }

    /// One page of a job's log. `wait` asks the server to hold the request
    /// until records arrive or the job ends (long poll).
    pub(crate) async fn log_page(
        &self,
        id: i64,
        after: u64,
        limit: u32,
        streams: Option<&str>,
        wait: Option<Duration>,
    ) -> anyhow::Result<LogPage> {
        let mut q = vec![
            ("after_seq", after.to_string()),
            ("limit", limit.to_string()),
        ];
        if let Some(s) = streams {
            q.push(("streams", s.to_string()));
        }
        let timeout = match wait {
            Some(w) => {
                q.push(("wait_ms", w.as_millis().to_string()));
                REQUEST_TIMEOUT + w
            }
            None => REQUEST_TIMEOUT,
        };
        let url = self.url(&format!("/api/v1/jobs/{id}/log"), &q)?;
        let body = self.get_raw(url, timeout).await?;
        self.decode(&body)
    }

    pub(crate) async fn job(&self, id: i64) -> anyhow::Result<JobView> {
        self.get_json(self.url(&format!("/api/v1/jobs/{id}"), &[])?)
            .await
    }
}

/// The request never got an HTTP answer (refused, timed out, reset).
#[derive(Debug)]
pub(crate) struct TransportError {
    message: String,
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TransportError {}

/// A URL fit for messages and reports: any password replaced by `***`.
pub(crate) fn redact_url(s: &str) -> String {
    let Ok(mut url) = Url::parse(s) else {
        return s.to_string();
    };
    let mut changed = false;
    if url.password().is_some() {
        changed = url.set_password(Some("***")).is_ok();
    }
    if url.query_pairs().any(|(k, _)| k == "password") {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(k, v)| {
                let v = if k == "password" {
                    "***".to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        url.query_pairs_mut().clear().extend_pairs(pairs);
        changed = true;
    }
    if changed {
        url.to_string()
    } else {
        s.to_string()
    }
}

// ---------------------------------------------------------------------------
// What the API returns (lenient: unknown fields are ignored, most are optional)

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct JobView {
    pub id: i64,
    #[serde(default)]
    pub name: Option<String>,
    pub state: String,
    #[serde(default)]
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub command: Vec<String>,
    #[serde(default)]
    pub node: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub finished_at: Option<String>,
    #[serde(default)]
    pub duration_ms: Option<f64>,
    #[serde(default)]
    pub log: LogView,
    #[serde(default)]
    pub result: Option<ResultView>,
}

impl JobView {
    pub(crate) fn is_finished(&self) -> bool {
        JobState::parse(&self.state).is_some_and(JobState::is_finished)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct LogView {
    #[serde(default)]
    pub records: u64,
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub truncated: bool,
    #[serde(default)]
    pub streams: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResultView {
    #[serde(default)]
    pub bytes: u64,
}

#[derive(Debug, Deserialize)]
struct JobsPage {
    jobs: Vec<Value>,
    #[serde(default)]
    next_before_id: Option<i64>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct LogPage {
    pub records: Vec<LogRecord>,
    #[serde(default)]
    pub next_after_seq: Option<u64>,
}

/// A record as the API sends it; re-serialised in the API's field order for
/// `logs --json`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub(crate) struct LogRecord {
    pub seq: u64,
    pub ts: String,
    pub stream: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Map<String, Value>>,
}

// ---------------------------------------------------------------------------
// Commands

async fn cmd_run(api: &Api, a: RunArgs) -> anyhow::Result<i32> {
    let env = resolve_kvs("--env", a.env)?;
    let secrets = resolve_kvs("--secret", a.secret)?;
    let mut body = Map::new();
    body.insert("command".into(), json!(a.command));
    if let Some(n) = &a.name {
        body.insert("name".into(), json!(n));
    }
    if !env.is_empty() {
        body.insert("env".into(), json!(env));
    }
    if !secrets.is_empty() {
        body.insert("secrets".into(), json!(secrets));
    }
    if let Some(t) = a.timeout {
        body.insert("timeout_s".into(), json!(t.as_secs_f64()));
    }
    if let Some(c) = &a.cwd {
        body.insert("cwd".into(), json!(c));
    }
    let raw = api
        .post_raw(api.url("/api/v1/jobs", &[])?, &Value::Object(body))
        .await?;
    let job: JobView = api.decode(&raw)?;
    let id = job.id;
    if a.detach {
        let mut out = io::stdout().lock();
        if a.json {
            write_raw_json(&mut out, &raw)?;
        } else {
            writeln!(out, "{id}")?;
        }
        out.flush()?;
        return Ok(0);
    }
    if io::stderr().is_terminal() && !a.json {
        eprintln!("joblog: job {id} submitted");
    }

    let mut printer = Printer::stdio(false, a.json);
    // Installing the handler only now keeps Ctrl-C during submission a
    // plain interrupt; from here on it means "stop watching".
    let outcome = tokio::select! {
        r = follow_log(api, id, 0, None, true, &mut printer) => Some(r),
        _ = tokio::signal::ctrl_c() => None,
    };
    printer.finish()?;
    match outcome {
        None => {
            eprintln!("\njoblog: stopped following; job {id} keeps running; joblog cancel {id} to stop it");
            Ok(130)
        }
        Some(Err(e)) => Err(e),
        Some(Ok(_)) => {
            let job = api.job(id).await?;
            let code = run_exit_code(&job.state, job.exit_code);
            if job.state != JobState::Succeeded.name() {
                match job.exit_code {
                    Some(c) => eprintln!("joblog: job {id} {} (exit code {c})", job.state),
                    None => eprintln!("joblog: job {id} {}", job.state),
                }
            }
            Ok(code)
        }
    }
}

/// `joblog run`'s exit code: the job's own, except that a job which did
/// not succeed never reports 0, and codes a process cannot exit with
/// become 1.
fn run_exit_code(state: &str, exit_code: Option<i64>) -> i32 {
    let succeeded = state == JobState::Succeeded.name();
    match exit_code {
        Some(0) if succeeded => 0,
        Some(c) if (1..=255).contains(&c) => c as i32,
        _ if succeeded => 0,
        _ => 1,
    }
}

fn resolve_kvs(flag: &str, kvs: Vec<KeyValue>) -> anyhow::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for kv in kvs {
        let value = match kv.value {
            Some(v) => v,
            None => match std::env::var(&kv.key) {
                Ok(v) => v,
                Err(_) => {
                    return Err(UsageError(format!(
                        "{flag} {}: no value given and {} is not set in this environment (use {flag} K=V)",
                        kv.key, kv.key
                    ))
                    .into())
                }
            },
        };
        out.insert(kv.key, value);
    }
    Ok(out)
}

async fn cmd_jobs(api: &Api, a: JobsArgs) -> anyhow::Result<i32> {
    let mut jobs: Vec<Value> = Vec::new();
    let mut before: Option<i64> = None;
    let mut next = None;
    let mut single_raw: Option<Vec<u8>> = None;
    let mut first = true;
    while jobs.len() < a.limit as usize {
        let want = (a.limit as usize - jobs.len()).min(joblog_core::MAX_LIST_LIMIT as usize);
        let mut q = vec![("limit", want.to_string())];
        if let Some(s) = a.state {
            q.push(("state", s.name().to_string()));
        }
        if let Some(n) = &a.name {
            q.push(("name", n.clone()));
        }
        if let Some(b) = before {
            q.push(("before_id", b.to_string()));
        }
        let raw = api
            .get_raw(api.url("/api/v1/jobs", &q)?, REQUEST_TIMEOUT)
            .await?;
        let page: JobsPage = api.decode(&raw)?;
        let got = page.jobs.len();
        jobs.extend(page.jobs);
        next = page.next_before_id;
        if first {
            single_raw = Some(raw);
            first = false;
        } else {
            single_raw = None;
        }
        match next {
            Some(b) if got > 0 => before = Some(b),
            _ => break,
        }
    }
    let mut out = io::stdout().lock();
    if a.json {
        match single_raw {
            // One page: exactly what the API said.
            Some(raw) => write_raw_json(&mut out, &raw)?,
            None => {
                serde_json::to_writer(&mut out, &json!({"jobs": jobs, "next_before_id": next}))?;
                writeln!(out)?;
            }
        }
    } else {
        let views: Vec<JobView> = jobs
            .into_iter()
            .map(serde_json::from_value)
            .collect::<Result<_, _>>()
            .with_context(|| format!("unexpected job list from {}", api.shown()))?;
        out.write_all(jobs_table(&views).as_bytes())?;
    }
    out.flush()?;
    Ok(0)
}

async fn cmd_show(api: &Api, a: IdArgs) -> anyhow::Result<i32> {
    let raw = api
        .get_raw(
            api.url(&format!("/api/v1/jobs/{}", a.id), &[])?,
            REQUEST_TIMEOUT,
        )
        .await?;
    let mut out = io::stdout().lock();
    if a.json {
        write_raw_json(&mut out, &raw)?;
    } else {
        let job: JobView = api.decode(&raw)?;
        out.write_all(show_text(&job).as_bytes())?;
    }
    out.flush()?;
    Ok(0)
}

async fn cmd_logs(api: &Api, a: LogsArgs) -> anyhow::Result<i32> {
    let streams = a
        .streams
        .map(|s| s.0.iter().map(|st| st.name()).collect::<Vec<_>>().join(","));
    let mut printer = Printer::stdio(a.timestamps, a.json);
    let r = follow_log(
        api,
        a.id,
        a.after,
        streams.as_deref(),
        a.follow,
        &mut printer,
    )
    .await;
    printer.finish()?;
    r?;
    Ok(0)
}

async fn cmd_result(api: &Api, a: IdArgs) -> anyhow::Result<i32> {
    let raw = api
        .get_raw(
            api.url(&format!("/api/v1/jobs/{}/result", a.id), &[])?,
            Duration::from_secs(600),
        )
        .await?;
    let mut out = io::stdout().lock();
    if a.json {
        write_raw_json(&mut out, &raw)?;
    } else {
        let text = String::from_utf8_lossy(&raw);
        out.write_all(pretty_json(&text).as_bytes())?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(0)
}

async fn cmd_cancel(api: &Api, a: IdArgs) -> anyhow::Result<i32> {
    let raw = api
        .post_raw(
            api.url(&format!("/api/v1/jobs/{}/cancel", a.id), &[])?,
            &json!({}),
        )
        .await?;
    let mut out = io::stdout().lock();
    if a.json {
        write_raw_json(&mut out, &raw)?;
    } else {
        let job: JobView = api.decode(&raw)?;
        if job.is_finished() {
            writeln!(out, "job {}: {}", job.id, job.state)?;
        } else {
            writeln!(out, "job {}: cancel requested ({})", job.id, job.state)?;
        }
    }
    out.flush()?;
    Ok(0)
}

#[derive(Debug, Deserialize)]
struct GroomReport {
    #[serde(default)]
    jobs_deleted: u64,
    #[serde(default)]
    records_deleted: u64,
}

async fn cmd_groom(api: &Api, a: GroomArgs) -> anyhow::Result<i32> {
    let mut body = Map::new();
    if let Some(d) = a.older_than {
        body.insert("older_than_s".into(), json!(d.as_secs()));
    }
    if let Some(k) = a.keep_per_name {
        body.insert("keep_per_name".into(), json!(k));
    }
    let raw = api
        .post_raw(api.url("/api/v1/groom", &[])?, &Value::Object(body))
        .await?;
    let mut out = io::stdout().lock();
    if a.json {
        write_raw_json(&mut out, &raw)?;
    } else {
        let r: GroomReport = api.decode(&raw)?;
        writeln!(
            out,
            "deleted {} jobs and {} records",
            r.jobs_deleted, r.records_deleted
        )?;
    }
    out.flush()?;
    Ok(0)
}

fn write_raw_json(out: &mut impl Write, raw: &[u8]) -> io::Result<()> {
    let trimmed = raw.trim_ascii_end();
    out.write_all(trimmed)?;
    out.write_all(b"\n")
}

/// Prints a job's log from `after`; with `follow`, until the job ends (the
/// server holds each request until there is something new, so this never
/// spins). Returns whether the log is known to be complete.
async fn follow_log<O: Write, E: Write>(
    api: &Api,
    id: i64,
    mut after: u64,
    streams: Option<&str>,
    follow: bool,
    printer: &mut Printer<O, E>,
) -> anyhow::Result<bool> {
    let wait = follow.then_some(Duration::from_millis(FOLLOW_WAIT_MS));
    let mut retry_since: Option<Instant> = None;
    loop {
        let asked = Instant::now();
        let page = match api.log_page(id, after, 10_000, streams, wait).await {
            Ok(p) => {
                retry_since = None;
                p
            }
            // A server restart should not end a long follow; anything the
            // server itself rejects should.
            Err(e) if follow && e.downcast_ref::<TransportError>().is_some() => {
                let since = *retry_since.get_or_insert_with(|| {
                    eprintln!("joblog: {e:#}; retrying");
                    Instant::now()
                });
                if since.elapsed() > Duration::from_secs(60) {
                    return Err(e);
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        for r in &page.records {
            printer.record(r)?;
        }
        printer.flush()?;
        let last = page.records.last().map(|r| r.seq);
        match page.next_after_seq {
            None => return Ok(true),
            Some(next) => {
                if page.records.is_empty() {
                    if !follow {
                        return Ok(false);
                    }
                    // A server that answers at once instead of holding the
                    // request must not turn following into a busy loop.
                    if asked.elapsed() < Duration::from_millis(100) {
                        tokio::time::sleep(Duration::from_millis(250)).await;
                    }
                }
                after = next.max(last.unwrap_or(after)).max(after);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Display

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dest {
    Out,
    Err,
}

/// What a group record means to a viewer (SPEC §3 `::group::`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GroupMark {
    Start,
    End,
}

fn group_mark(fields: Option<&Map<String, Value>>) -> Option<GroupMark> {
    let f = fields?;
    if f.get("endgroup").and_then(Value::as_bool) == Some(true) {
        return Some(GroupMark::End);
    }
    match f.get("group")? {
        Value::Bool(true) => Some(GroupMark::Start),
        Value::Bool(false) => Some(GroupMark::End),
        Value::String(s) => match s.as_str() {
            "start" | "begin" | "open" => Some(GroupMark::Start),
            "end" | "close" | "stop" => Some(GroupMark::End),
            _ => None,
        },
        _ => None,
    }
}

fn is_continued(fields: Option<&Map<String, Value>>) -> bool {
    fields
        .and_then(|f| f.get("continued"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn dest_of(r: &LogRecord) -> Dest {
    if r.stream == Stream::Output.name() {
        Dest::Out
    } else {
        Dest::Err
    }
}

/// The text shown for a record (without its newline), or `None` for records
/// that only structure the log (end of a group).
fn render_record(r: &LogRecord, timestamps: bool, keep_sgr: bool) -> Option<String> {
    let fields = r.fields.as_ref();
    let mut s = String::new();
    if timestamps {
        s.push_str(&escape_display(&r.ts, false));
        s.push(' ');
    }
    match group_mark(fields) {
        Some(GroupMark::End) => return None,
        Some(GroupMark::Start) => {
            s.push_str("▸ ");
            s.push_str(&escape_display(&r.message, keep_sgr));
            return Some(s);
        }
        None => {}
    }
    match Stream::parse(&r.stream) {
        Some(Stream::Output) | Some(Stream::Error) => {}
        Some(Stream::Warning) => s.push_str("warning: "),
        Some(Stream::Information) => s.push_str("info: "),
        Some(Stream::Verbose) => s.push_str("verbose: "),
        Some(Stream::Debug) => s.push_str("debug: "),
        Some(Stream::Progress) => {
            let pct = fields.and_then(|f| f.get("percent")).and_then(|p| match p {
                Value::Number(n) => Some(n.to_string()),
                Value::String(t) => Some(escape_display(t, false).into_owned()),
                _ => None,
            });
            match pct {
                Some(p) => {
                    s.push_str("progress ");
                    s.push_str(&p);
                    s.push_str("%: ");
                }
                None => s.push_str("progress: "),
            }
        }
        None => {
            s.push_str(&escape_display(&r.stream, false));
            s.push_str(": ");
        }
    }
    s.push_str(&escape_display(&r.message, keep_sgr));
    Some(s)
}

/// Writes records to stdout (`output`) and stderr (the rest).
///
/// A record's newline is written only when the next record arrives, so a
/// record marked `continued` (a long line split by the server) is joined to
/// the line before it, as the job wrote it.
struct Printer<O: Write, E: Write> {
    out: O,
    err: E,
    out_tty: bool,
    err_tty: bool,
    timestamps: bool,
    json: bool,
    open_line: Option<Dest>,
    last: Option<Dest>,
}

impl Printer<io::BufWriter<io::Stdout>, io::BufWriter<io::Stderr>> {
    fn stdio(timestamps: bool, json: bool) -> Self {
        Printer {
            out_tty: io::stdout().is_terminal(),
            err_tty: io::stderr().is_terminal(),
            out: io::BufWriter::new(io::stdout()),
            err: io::BufWriter::new(io::stderr()),
            timestamps,
            json,
            open_line: None,
            last: None,
        }
    }
}

impl<O: Write, E: Write> Printer<O, E> {
    fn writer(&mut self, d: Dest) -> &mut dyn Write {
        match d {
            Dest::Out => &mut self.out,
            Dest::Err => &mut self.err,
        }
    }

    /// Switching between stdout and stderr flushes the other one first, so
    /// a terminal shows the lines in the job's order.
    fn switch_to(&mut self, d: Dest) -> io::Result<()> {
        if let Some(prev) = self.last {
            if prev != d {
                self.writer(prev).flush()?;
            }
        }
        self.last = Some(d);
        Ok(())
    }

    fn record(&mut self, r: &LogRecord) -> io::Result<()> {
        if self.json {
            let line = serde_json::to_string(r).map_err(io::Error::other)?;
            self.switch_to(Dest::Out)?;
            return writeln!(self.out, "{line}");
        }
        let d = dest_of(r);
        let keep_sgr = match d {
            Dest::Out => self.out_tty,
            Dest::Err => self.err_tty,
        };
        if is_continued(r.fields.as_ref()) && self.open_line == Some(d) {
            self.switch_to(d)?;
            let text = escape_display(&r.message, keep_sgr);
            return self.writer(d).write_all(text.as_bytes());
        }
        let Some(text) = render_record(r, self.timestamps, keep_sgr) else {
            return Ok(());
        };
        self.close_line()?;
        self.switch_to(d)?;
        self.writer(d).write_all(text.as_bytes())?;
        self.open_line = Some(d);
        Ok(())
    }

    fn close_line(&mut self) -> io::Result<()> {
        if let Some(d) = self.open_line.take() {
            self.switch_to(d)?;
            self.writer(d).write_all(b"\n")?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()?;
        self.err.flush()
    }

    fn finish(&mut self) -> io::Result<()> {
        self.close_line()?;
        self.flush()
    }
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Length of an SGR sequence (`ESC [ 0-9;: m`, colours and styles) at the
/// start of `s`, which begins with ESC.
fn sgr_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.get(1) != Some(&b'[') {
        return None;
    }
    let mut i = 2;
    while i < b.len() && i < 64 {
        match b[i] {
            b'0'..=b'9' | b';' | b':' => i += 1,
            b'm' => return Some(i + 1),
            _ => return None,
        }
    }
    None
}

/// Makes untrusted text safe to print: control characters (except TAB) are
/// shown escaped (`\0`, `\xNN`), as are bidirectional overrides. With
/// `keep_sgr` (a terminal), colour sequences pass through and a reset is
/// appended so a colour cannot leak into the next line; every other escape
/// sequence is shown escaped, since it could rewrite the terminal.
pub(crate) fn escape_display(s: &str, keep_sgr: bool) -> Cow<'_, str> {
    let needs = |c: char| (c.is_control() && c != '\t') || is_bidi_control(c);
    if !s.chars().any(needs) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut used_sgr = false;
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '\u{1b}' && keep_sgr {
            if let Some(n) = sgr_len(rest) {
                out.push_str(&rest[..n]);
                used_sgr = true;
                rest = &rest[n..];
                continue;
            }
        }
        if c == '\0' {
            out.push_str("\\0");
        } else if needs(c) {
            let cp = c as u32;
            if cp <= 0xff {
                out.push_str(&format!("\\x{cp:02x}"));
            } else {
                out.push_str(&format!("\\u{{{cp:x}}}"));
            }
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    if used_sgr {
        out.push_str("\x1b[0m");
    }
    Cow::Owned(out)
}

/// `"28ms"`, `"1.2s"`, `"3m04s"`, `"2h05m"`.
fn format_duration_ms(ms: f64) -> String {
    if !ms.is_finite() || ms < 0.0 {
        return "-".to_string();
    }
    if ms < 10.0 {
        return format!("{ms:.1}ms");
    }
    if ms < 1000.0 {
        return format!("{ms:.0}ms");
    }
    let s = ms / 1000.0;
    if s < 60.0 {
        return format!("{s:.1}s");
    }
    let total = s.round() as u64;
    if total < 3600 {
        return format!("{}m{:02}s", total / 60, total % 60);
    }
    format!("{}h{:02}m", total / 3600, (total % 3600) / 60)
}

/// `2026-11-22T10:15:01.000001Z` → `2026-11-22 10:15:01` (UTC).
fn short_time(ts: Option<&str>) -> String {
    match ts {
        Some(t) if t.len() >= 19 && t.is_char_boundary(19) => t[..19].replacen('T', " ", 1),
        Some(t) => escape_display(t, false).into_owned(),
        None => "-".to_string(),
    }
}

fn truncate_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}

fn jobs_table(jobs: &[JobView]) -> String {
    let header = [
        "ID", "STATE", "NAME", "EXIT", "CREATED", "DURATION", "RECORDS",
    ];
    let rows: Vec<[String; 7]> = jobs
        .iter()
        .map(|j| {
            [
                j.id.to_string(),
                escape_display(&j.state, false).into_owned(),
                j.name
                    .as_deref()
                    .map(|n| truncate_chars(&escape_display(n, false), 40))
                    .unwrap_or_else(|| "-".to_string()),
                j.exit_code
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "-".to_string()),
                short_time(j.created_at.as_deref()),
                j.duration_ms
                    .map(format_duration_ms)
                    .unwrap_or_else(|| "-".to_string()),
                j.log.records.to_string(),
            ]
        })
        .collect();
    let mut widths: [usize; 7] = header.map(str::len);
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    // Numbers read best right-aligned.
    let right = [true, false, false, true, false, true, true];
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = widths[i].saturating_sub(c.chars().count());
            if i > 0 {
                l.push_str("  ");
            }
            if right[i] {
                l.push_str(&" ".repeat(pad));
                l.push_str(c);
            } else {
                l.push_str(c);
                if i + 1 < cells.len() {
                    l.push_str(&" ".repeat(pad));
                }
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&header.map(String::from));
    for r in &rows {
        line(r);
    }
    out
}

/// Quotes an argument the way a POSIX shell would need it.
fn shell_quote(a: &str) -> String {
    let plain = !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if plain {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

fn show_text(j: &JobView) -> String {
    let opt = |v: Option<&str>| {
        v.map(|s| escape_display(s, false).into_owned())
            .unwrap_or_else(|| "-".to_string())
    };
    let mut rows: Vec<(String, String)> = vec![
        ("id".into(), j.id.to_string()),
        ("name".into(), opt(j.name.as_deref())),
        ("state".into(), escape_display(&j.state, false).into_owned()),
        (
            "exit code".into(),
            j.exit_code
                .map(|c| c.to_string())
                .unwrap_or_else(|| "-".into()),
        ),
        (
            "command".into(),
            escape_display(
                &j.command
                    .iter()
                    .map(|a| shell_quote(a))
                    .collect::<Vec<_>>()
                    .join(" "),
                false,
            )
            .into_owned(),
        ),
        ("node".into(), opt(j.node.as_deref())),
        ("created".into(), opt(j.created_at.as_deref())),
        ("started".into(), opt(j.started_at.as_deref())),
        ("finished".into(), opt(j.finished_at.as_deref())),
        (
            "duration".into(),
            j.duration_ms
                .map(|d| format!("{d:.1} ms"))
                .unwrap_or_else(|| "-".into()),
        ),
        ("records".into(), j.log.records.to_string()),
    ];
    // Streams in their canonical order, then any the client does not know.
    let mut streams: Vec<(&str, u64)> = Stream::ALL
        .iter()
        .filter_map(|s| j.log.streams.get(s.name()).map(|n| (s.name(), *n)))
        .collect();
    for (k, n) in &j.log.streams {
        if Stream::parse(k).is_none() {
            streams.push((k.as_str(), *n));
        }
    }
    for (k, n) in streams {
        rows.push((format!("  {}", escape_display(k, false)), n.to_string()));
    }
    rows.push(("log bytes".into(), j.log.bytes.to_string()));
    rows.push((
        "truncated".into(),
        if j.log.truncated { "yes" } else { "no" }.into(),
    ));
    rows.push((
        "result".into(),
        match &j.result {
            Some(r) => format!("{} bytes", r.bytes),
            None => "none".into(),
        },
    ));
    let w = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;
    let mut out = String::new();
    for (k, v) in rows {
        out.push_str(&format!("{:<w$} {v}\n", format!("{k}:")));
    }
    out
}

/// Indents JSON text without parsing it into a map, so key order and number
/// spelling stay exactly as the job wrote them.
fn pretty_json(src: &str) -> String {
    let mut out = String::with_capacity(src.len() * 2);
    let mut depth: usize = 0;
    let mut in_str = false;
    let mut escaped = false;
    let mut chars = src.trim().chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    while let Some(c) = chars.next() {
        if in_str {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                // Skip whitespace to see whether the container is empty.
                while chars.peek().is_some_and(|n| n.is_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('}') | Some(']')) {
                    if let Some(close) = chars.next() {
                        out.push(close);
                    }
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(stream: &str, message: &str, fields: Option<Value>) -> LogRecord {
        LogRecord {
            seq: 1,
            ts: "2026-11-22T10:15:02.123456Z".into(),
            stream: stream.into(),
            message: message.into(),
            fields: fields.and_then(|f| f.as_object().cloned()),
        }
    }

    #[test]
    fn key_values() {
        assert_eq!(
            parse_kv("A=b=c").unwrap(),
            KeyValue {
                key: "A".into(),
                value: Some("b=c".into())
            }
        );
        assert_eq!(parse_kv("A=").unwrap().value, Some(String::new()));
        assert_eq!(parse_kv("HOME").unwrap().value, None);
        assert!(parse_kv("=x").unwrap_err().contains("K=V"));
        assert!(parse_kv("").is_err());
        assert!(parse_kv("A=\0").is_err());
    }

    #[test]
    fn bare_key_takes_the_local_environment() {
        let r = resolve_kvs(
            "--env",
            vec![KeyValue {
                key: "JOBLOG_TEST_SURELY_UNSET_VAR".into(),
                value: None,
            }],
        );
        let e = r.unwrap_err();
        assert!(e.downcast_ref::<UsageError>().is_some());
        assert!(e.to_string().contains("JOBLOG_TEST_SURELY_UNSET_VAR"));
        let ok = resolve_kvs(
            "--env",
            vec![KeyValue {
                key: "A".into(),
                value: Some("1".into()),
            }],
        )
        .unwrap();
        assert_eq!(ok.get("A").map(String::as_str), Some("1"));
    }

    #[test]
    fn states_and_streams() {
        assert!(parse_state("runing").unwrap_err().contains("running"));
        assert_eq!(parse_state("timed_out").unwrap(), JobState::TimedOut);
        assert!(parse_streams("warning,eror").is_err());
        assert!(parse_streams(",").is_err());
    }

    #[test]
    fn escaping() {
        assert_eq!(escape_display("plain\ttext", false), "plain\ttext");
        assert!(matches!(escape_display("plain", false), Cow::Borrowed(_)));
        assert_eq!(escape_display("a\0b", false), "a\\0b");
        assert_eq!(escape_display("a\rb\x07", false), "a\\x0db\\x07");
        assert_eq!(escape_display("\u{85}", false), "\\x85");
        assert_eq!(escape_display("x\u{202e}y", false), "x\\u{202e}y");
        // Not a terminal: no escape sequence survives.
        assert_eq!(
            escape_display("\x1b[31mred\x1b[0m", false),
            "\\x1b[31mred\\x1b[0m"
        );
        // Terminal: colours pass, with a reset appended.
        assert_eq!(
            escape_display("\x1b[1;31mred", true),
            "\x1b[1;31mred\x1b[0m"
        );
        // Terminal: sequences that are not colours are still escaped.
        assert_eq!(
            escape_display("\x1b]0;title\x07", true),
            "\\x1b]0;title\\x07"
        );
        assert_eq!(escape_display("\x1b[2J", true), "\\x1b[2J");
        assert_eq!(escape_display("\x1b", true), "\\x1b");
    }

    #[test]
    fn record_rendering() {
        let r = |s, m, f| render_record(&rec(s, m, f), false, false);
        assert_eq!(r("output", "hello", None).unwrap(), "hello");
        assert_eq!(r("error", "boom", None).unwrap(), "boom");
        assert_eq!(r("warning", "careful", None).unwrap(), "warning: careful");
        assert_eq!(r("information", "fyi", None).unwrap(), "info: fyi");
        assert_eq!(r("debug", "d", None).unwrap(), "debug: d");
        assert_eq!(
            r("progress", "Copying", Some(json!({"percent": 40}))).unwrap(),
            "progress 40%: Copying"
        );
        assert_eq!(r("progress", "Copying", None).unwrap(), "progress: Copying");
        assert_eq!(
            r("information", "Build", Some(json!({"group": "start"}))).unwrap(),
            "▸ Build"
        );
        assert_eq!(r("information", "", Some(json!({"group": "end"}))), None);
        assert_eq!(r("future", "x", None).unwrap(), "future: x");
        assert_eq!(r("output", "nul\0", None).unwrap(), "nul\\0");
        assert_eq!(
            render_record(&rec("warning", "w", None), true, false).unwrap(),
            "2026-11-22T10:15:02.123456Z warning: w"
        );
        assert_eq!(dest_of(&rec("output", "", None)), Dest::Out);
        assert_eq!(dest_of(&rec("warning", "", None)), Dest::Err);
    }

    fn printer(json: bool) -> Printer<Vec<u8>, Vec<u8>> {
        Printer {
            out: Vec::new(),
            err: Vec::new(),
            out_tty: false,
            err_tty: false,
            timestamps: false,
            json,
            open_line: None,
            last: None,
        }
    }

    #[test]
    fn printer_splits_streams_and_joins_continued_lines() {
        let mut p = printer(false);
        p.record(&rec("output", "a", None)).unwrap();
        p.record(&rec("output", "b1", None)).unwrap();
        p.record(&rec("output", "b2", Some(json!({"continued": true}))))
            .unwrap();
        p.record(&rec("error", "e", None)).unwrap();
        p.record(&rec("warning", "w", None)).unwrap();
        p.finish().unwrap();
        assert_eq!(String::from_utf8(p.out).unwrap(), "a\nb1b2\n");
        assert_eq!(String::from_utf8(p.err).unwrap(), "e\nwarning: w\n");
    }

    #[test]
    fn printer_json_lines_keep_api_field_order() {
        let mut p = printer(true);
        p.record(&rec("warning", "w", Some(json!({"file": "a.py"}))))
            .unwrap();
        p.record(&rec("output", "o", None)).unwrap();
        p.finish().unwrap();
        assert_eq!(
            String::from_utf8(p.out).unwrap(),
            "{\"seq\":1,\"ts\":\"2026-11-22T10:15:02.123456Z\",\"stream\":\"warning\",\"message\":\"w\",\"fields\":{\"file\":\"a.py\"}}\n\
             {\"seq\":1,\"ts\":\"2026-11-22T10:15:02.123456Z\",\"stream\":\"output\",\"message\":\"o\"}\n"
        );
        assert!(p.err.is_empty());
    }

    #[test]
    fn exit_codes_of_run() {
        assert_eq!(run_exit_code("succeeded", Some(0)), 0);
        assert_eq!(run_exit_code("failed", Some(3)), 3);
        // Failed for another reason (e.g. an invalid result) after exiting 0.
        assert_eq!(run_exit_code("failed", Some(0)), 1);
        assert_eq!(run_exit_code("failed", None), 1);
        assert_eq!(run_exit_code("cancelled", None), 1);
        assert_eq!(run_exit_code("timed_out", Some(137)), 137);
        assert_eq!(run_exit_code("failed", Some(256)), 1);
        assert_eq!(run_exit_code("failed", Some(-1)), 1);
    }

    #[test]
    fn durations_and_times() {
        assert_eq!(format_duration_ms(0.42), "0.4ms");
        assert_eq!(format_duration_ms(28.0), "28ms");
        assert_eq!(format_duration_ms(1234.0), "1.2s");
        assert_eq!(format_duration_ms(184_000.0), "3m04s");
        assert_eq!(format_duration_ms(7_500_000.0), "2h05m");
        assert_eq!(format_duration_ms(f64::NAN), "-");
        assert_eq!(
            short_time(Some("2026-11-22T10:15:01.000001Z")),
            "2026-11-22 10:15:01"
        );
        assert_eq!(short_time(None), "-");
    }

    fn job(v: Value) -> JobView {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn table_is_aligned() {
        let jobs = vec![
            job(
                json!({"id": 42, "name": "backup", "state": "succeeded", "exit_code": 0,
                "created_at": "2026-11-22T10:15:01.000001Z", "duration_ms": 28.0,
                "log": {"records": 1002}}),
            ),
            job(
                json!({"id": 7, "name": null, "state": "running", "exit_code": null,
                "created_at": "2026-11-22T10:15:01.000001Z", "duration_ms": null}),
            ),
        ];
        let t = jobs_table(&jobs);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "ID  STATE      NAME    EXIT  CREATED              DURATION  RECORDS"
        );
        assert_eq!(
            lines[1],
            "42  succeeded  backup     0  2026-11-22 10:15:01      28ms     1002"
        );
        assert_eq!(
            lines[2],
            " 7  running    -          -  2026-11-22 10:15:01         -        0"
        );
    }

    #[test]
    fn show_lists_stream_counts() {
        let j = job(
            json!({"id": 42, "name": "backup", "state": "succeeded", "exit_code": 0,
            "command": ["sh", "-c", "echo 'hi'"], "node": "host-a",
            "created_at": "2026-11-22T10:15:01.000001Z", "duration_ms": 28.0,
            "log": {"records": 1002, "bytes": 9870, "truncated": false,
                    "streams": {"warning": 1, "output": 1000, "error": 1}},
            "result": {"bytes": 120}}),
        );
        let t = show_text(&j);
        assert!(t.contains("command:   sh -c 'echo '\\''hi'\\'''\n"), "{t}");
        let out = t.find("  output:").unwrap();
        let err = t.find("  error:").unwrap();
        let warn = t.find("  warning:").unwrap();
        assert!(out < err && err < warn, "{t}");
        assert!(t.contains("result:    120 bytes"), "{t}");
        assert!(t.contains("truncated: no"), "{t}");
    }

    #[test]
    fn pretty_json_keeps_order() {
        assert_eq!(
            pretty_json(r#"{"z":1,"a":[1,2],"e":{},"s":"a,b:{\"c\"}"}"#),
            "{\n  \"z\": 1,\n  \"a\": [\n    1,\n    2\n  ],\n  \"e\": {},\n  \"s\": \"a,b:{\\\"c\\\"}\"\n}"
        );
        assert_eq!(pretty_json("42"), "42");
        assert_eq!(pretty_json("[ ]"), "[]");
        // Broken input is shown, not a panic.
        let _ = pretty_json("{{{]]]\"");
    }

    #[test]
    fn urls_are_redacted() {
        assert_eq!(
            redact_url("postgres://joe:secret@db/joblog"),
            "postgres://joe:***@db/joblog"
        );
        assert_eq!(
            redact_url("postgres://db/joblog?user=joe&password=secret"),
            "postgres://db/joblog?user=joe&password=***"
        );
        assert_eq!(redact_url("http://127.0.0.1:7878"), "http://127.0.0.1:7878");
    }

    #[test]
    fn api_urls() {
        let api = Api::new("http://127.0.0.1:7878/", None).unwrap();
        let u = api
            .url("/api/v1/jobs", &[("name", "a b&c".to_string())])
            .unwrap();
        assert_eq!(u.as_str(), "http://127.0.0.1:7878/api/v1/jobs?name=a+b%26c");
        let api = Api::new("http://proxy/joblog", None).unwrap();
        assert_eq!(
            api.url("/healthz", &[]).unwrap().as_str(),
            "http://proxy/joblog/healthz"
        );
        let e = Api::new("127.0.0.1:7878", None).err().unwrap();
        assert!(e.downcast_ref::<UsageError>().is_some());
        let e = Api::new("http://x", Some("bad\ntoken")).err().unwrap();
        assert!(!e.to_string().contains("bad"));
    }
}
