//! What each client command does over the API. A command produces data,
//! never text: one-shot commands return an [`Answer`], and commands that
//! follow a log hand each page to a [`Sink`], so how it looks is decided in
//! `render` alone (the split ripgrep makes between searcher and printer).

use std::collections::BTreeMap;
use std::io::{self, IsTerminal};
use std::time::{Duration, Instant};

use anyhow::Context;
use joblog_core::JobState;
use serde_json::{json, Map, Value};

use super::api::{Api, TransportError, REQUEST_TIMEOUT};
use super::args::{GroomArgs, IdArgs, JobsArgs, KeyValue, LogsArgs, RerunArgs, RunArgs};
use super::render::Pretty;
use super::wire::{
    DeliveryView, GroomReport, HealthView, JobView, JobsPage, LogRecord, NodeList, NodeView,
    RuleView, ScheduleView, SchedulerView, TestSendView, TokenView, UserView,
};
use super::UsageError;

/// How long a follow request asks the server to hold it (the API allows 30 s).
const FOLLOW_WAIT_MS: u64 = 10_000;

/// What a command answered, before it becomes text.
#[derive(Debug)]
pub(super) enum Answer {
    /// `--json`: the API's own bytes, printed as it sent them.
    Raw(Vec<u8>),
    /// JSON the client put together (a job list that took several pages).
    Json(Value),
    /// The id of a job submitted with `--detach`.
    Submitted(i64),
    Jobs(Vec<JobView>),
    Job(JobView),
    /// A job's result document, exactly as the server sent it.
    /// The job as the cancel request left it.
    Cancelled(JobView),
    Groomed(GroomReport),
    /// Finished jobs whose log was not sealed before `seal --all` and
    /// after it, and whether the server seals new ones itself.
    Sealed {
        before: u64,
        after: u64,
        enabled: bool,
    },
    /// A new API token, with its text (shown this once).
    TokenCreated(TokenView),
    Tokens(Vec<TokenView>),
    /// The name of a revoked token.
    Revoked(String),
    Users(Vec<UserView>),
    /// A user as added or changed.
    User(UserView),
    /// The name of a removed user.
    UserRemoved(String),
    Nodes(NodeList),
    /// One node, as a drain or undrain left it.
    Node(NodeView),
    Scheduler(SchedulerView),
    Schedules(Vec<ScheduleView>),
    Schedule(ScheduleView),
    /// The id of a deleted schedule.
    ScheduleDeleted(i64),
    Rules(Vec<RuleView>),
    /// A notification rule; with its latest deliveries for `notify show`.
    Rule {
        rule: RuleView,
        deliveries: Option<Vec<DeliveryView>>,
    },
    /// The id of a deleted notification rule.
    RuleDeleted(i64),
    /// What a rule's test send came to.
    RuleTested {
        id: i64,
        sent: TestSendView,
    },
    /// Where a backup was written, and its size.
    BackedUp {
        path: std::path::PathBuf,
        bytes: u64,
    },
    Health(HealthView),
}

/// Where a command that follows a log hands what it produces.
pub(super) trait Sink {
    /// A one-shot answer given instead of following (`run --detach`).
    fn answer(&mut self, answer: &Answer) -> anyhow::Result<()>;
    /// The next page of records, in log order; shown before the next page
    /// is asked for, so a live log appears as it is written.
    fn records(&mut self, page: &[LogRecord]) -> anyhow::Result<()>;
    /// No more records: ends an open line and flushes.
    fn finish(&mut self) -> anyhow::Result<()>;
}

pub(super) async fn run(api: &Api, a: RunArgs, sink: &mut impl Sink) -> anyhow::Result<i32> {
    let env = resolve_kvs("--env", a.env)?;
    let secrets = resolve_kvs("--secret", a.secret)?;
    let mut body = Map::new();
    match &a.script {
        Some(file) => {
            body.insert("script".into(), json!(read_script(file)?));
            if let Some(shell) = &a.shell {
                body.insert("shell".into(), json!(shell));
            }
        }
        None => {
            check_command(&a.command)?;
            body.insert("command".into(), json!(a.command));
        }
    }
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
    if let Some(k) = &a.concurrency_key {
        body.insert("concurrency_key".into(), json!(k));
    }
    if let Some(m) = a.max_concurrent {
        body.insert("max_concurrent".into(), json!(m));
    }
    if let Some(labels) = &a.on {
        body.insert("node_selector".into(), json!(labels));
    }
    if let Some(folder) = &a.folder {
        body.insert("folder".into(), json!(folder));
    }
    if let Some(file) = &a.params_schema {
        let schema = super::params::read_schema(file)?;
        let params = super::params::typed(Some(&schema), a.param)?;
        body.insert("params_schema".into(), schema);
        body.insert("params".into(), Value::Object(params));
    }
    let url = api.url("/api/v1/jobs", &[])?;
    submit_and_follow(api, url, Value::Object(body), a.detach, a.json, sink).await
}

pub(super) async fn rerun(api: &Api, a: RerunArgs, sink: &mut impl Sink) -> anyhow::Result<i32> {
    let secrets = resolve_kvs("--secret", a.secret)?;
    // The original's parameters' types read each --param's text.
    let params = if a.param.is_empty() {
        Map::new()
    } else {
        let raw = api
            .get_raw(
                api.url(&format!("/api/v1/jobs/{}", a.id), &[])?,
                super::api::REQUEST_TIMEOUT,
            )
            .await?;
        let job: Value = api.decode(&raw)?;
        super::params::typed(job.get("params_schema"), a.param)?
    };
    let url = api.url(&format!("/api/v1/jobs/{}/rerun", a.id), &[])?;
    let body = json!({ "secrets": secrets, "params": params });
    submit_and_follow(api, url, body, a.detach, a.json, sink).await
}

/// The script of `run --script FILE` (`-`: standard input).
pub(super) fn read_script(file: &str) -> anyhow::Result<String> {
    let bytes = if file == "-" {
        let mut buf = Vec::new();
        io::Read::read_to_end(&mut io::stdin(), &mut buf)
            .context("--script -: reading standard input")?;
        buf
    } else {
        std::fs::read(file).with_context(|| format!("--script: cannot read {file}"))?
    };
    String::from_utf8(bytes)
        .map_err(|_| UsageError(format!("--script {file}: not UTF-8 text")).into())
}

/// A command given as one argument with spaces (`joblog run -- "echo hi;
/// ls"`) runs a program of that whole name, which is never what was
/// meant: refused with the way to say it.
pub(super) fn check_command(command: &[String]) -> anyhow::Result<()> {
    if let [only] = command {
        if only.contains(char::is_whitespace) && !only.starts_with('/') {
            let quoted = only.replace('\'', r"'\''");
            return Err(UsageError(format!(
                "{only:?} is one argument with spaces, so it would run a program of that name; \
                 to run it as a shell command: joblog run -- sh -c '{quoted}' (or --script FILE)"
            ))
            .into());
        }
    }
    Ok(())
}

/// Submits to `url` (a job, or a rerun) and, unless `detach`, follows the
/// new job's log to its end; returns the exit code `run` exits with.
async fn submit_and_follow(
    api: &Api,
    url: reqwest::Url,
    body: Value,
    detach: bool,
    json: bool,
    sink: &mut impl Sink,
) -> anyhow::Result<i32> {
    let raw = api.post_raw(url, &body).await?;
    let job: JobView = api.decode(&raw)?;
    let id = job.id;
    if detach {
        sink.answer(&if json {
            Answer::Raw(raw)
        } else {
            Answer::Submitted(id)
        })?;
        return Ok(0);
    }
    if io::stderr().is_terminal() && !json {
        eprintln!("joblog: job {id} submitted");
    }

    // Installing the handler only now keeps Ctrl-C during submission a
    // plain interrupt; from here on it means "stop watching".
    let outcome = tokio::select! {
        r = follow_log(api, id, 0, None, true, sink) => Some(r),
        _ = tokio::signal::ctrl_c() => None,
    };
    sink.finish()?;
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

pub(super) fn resolve_kvs(
    flag: &str,
    kvs: Vec<KeyValue>,
) -> anyhow::Result<BTreeMap<String, String>> {
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

pub(super) async fn jobs(api: &Api, a: JobsArgs) -> anyhow::Result<Answer> {
    let mut jobs: Vec<Value> = Vec::new();
    let mut before: Option<i64> = a.before_id;
    let mut next = None;
    let mut single_raw: Option<Vec<u8>> = None;
    let mut first = true;
    while jobs.len() < a.limit as usize {
        let want = (a.limit as usize - jobs.len()).min(joblog_core::MAX_LIST_LIMIT as usize);
        let mut q = vec![("limit", want.to_string())];
        q.extend(a.filters.query());
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
    if a.json {
        return Ok(match single_raw {
            // One page: exactly what the API said.
            Some(raw) => Answer::Raw(raw),
            None => Answer::Json(json!({"jobs": jobs, "next_before_id": next})),
        });
    }
    let views: Vec<JobView> = jobs
        .into_iter()
        .map(serde_json::from_value)
        .collect::<Result<_, _>>()
        .with_context(|| format!("unexpected job list from {}", api.shown()))?;
    Ok(Answer::Jobs(views))
}

pub(super) async fn show(api: &Api, a: IdArgs) -> anyhow::Result<Answer> {
    let raw = api
        .get_raw(
            api.url(&format!("/api/v1/jobs/{}", a.id), &[])?,
            REQUEST_TIMEOUT,
        )
        .await?;
    if a.json {
        return Ok(Answer::Raw(raw));
    }
    Ok(Answer::Job(api.decode(&raw)?))
}

pub(super) async fn logs(api: &Api, a: LogsArgs, sink: &mut impl Sink) -> anyhow::Result<i32> {
    let streams = a
        .streams
        .map(|s| s.0.iter().map(|st| st.name()).collect::<Vec<_>>().join(","));
    let r = follow_log(api, a.id, a.after, streams.as_deref(), a.follow, sink).await;
    sink.finish()?;
    r?;
    Ok(0)
}

/// Streams the result to stdout as it arrives: indented (keys in the
/// job's order), or with `--json` byte for byte as the job set it. A
/// 32 MB result never sits whole in memory.
pub(super) async fn result(api: &Api, a: IdArgs) -> anyhow::Result<i32> {
    use std::io::Write;
    let url = api.url(&format!("/api/v1/jobs/{}/result", a.id), &[])?;
    let mut resp = api.get_streaming(url).await?;
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout());
    let mut pretty = (!a.json).then(Pretty::default);
    let mut indented = Vec::new();
    let mut last = b'\n';
    while let Some(piece) = api.next_chunk(&mut resp).await? {
        // Indented 4 KiB at a time: what one piece becomes is bounded
        // (render::pretty's MAX_INDENT), whatever the piece's size.
        for part in piece.chunks(4096) {
            let shown: &[u8] = match &mut pretty {
                Some(p) => {
                    indented.clear();
                    p.feed(part, &mut indented);
                    &indented
                }
                None => part,
            };
            if let Some(&b) = shown.last() {
                last = b;
            }
            out.write_all(shown)?;
        }
    }
    if last != b'\n' {
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(0)
}

pub(super) async fn cancel(api: &Api, a: IdArgs) -> anyhow::Result<Answer> {
    let raw = api
        .post_raw(
            api.url(&format!("/api/v1/jobs/{}/cancel", a.id), &[])?,
            &json!({}),
        )
        .await?;
    if a.json {
        return Ok(Answer::Raw(raw));
    }
    Ok(Answer::Cancelled(api.decode(&raw)?))
}

pub(super) async fn groom(api: &Api, a: GroomArgs) -> anyhow::Result<Answer> {
    let mut body = Map::new();
    if let Some(d) = a.older_than {
        body.insert("older_than_s".into(), json!(d.as_secs()));
    }
    if let Some(k) = a.keep_per_name {
        body.insert("keep_per_name".into(), json!(k));
    }
    if a.dry_run {
        body.insert("dry_run".into(), json!(true));
    }
    let raw = api
        .post_raw(api.url("/api/v1/groom", &[])?, &Value::Object(body))
        .await?;
    if a.json {
        return Ok(Answer::Raw(raw));
    }
    Ok(Answer::Groomed(api.decode(&raw)?))
}

/// Hands a job's log from `after` to `sink`; with `follow`, until the job
/// ends (the server holds each request until there is something new, so
/// this never spins). Returns whether the log is known to be complete.
async fn follow_log(
    api: &Api,
    id: i64,
    mut after: u64,
    streams: Option<&str>,
    follow: bool,
    sink: &mut impl Sink,
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
        sink.records(&page.records)?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
