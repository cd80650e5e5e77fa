//! `/metrics`, the shipped alert rules and the Grafana dashboard checked
//! by Prometheus' own tool: `promtool check metrics` on a real server's
//! scrape (with job, name, schedule and notification series present),
//! `promtool check rules` and `promtool test rules` on
//! packaging/prometheus, and every metric those rules read exported by
//! the server; and every query of the dashboard,
//! packaging/grafana/joblog.json, valid PromQL (`promtool check rules`,
//! as recording rules), reading exported series only, counters and
//! histograms through `rate`, with a panel for each topic it promises.
//!
//! Without `promtool` (Debian: `apt-get install prometheus`) the tests are
//! skipped with a note, unless `JOBLOG_REQUIRE_PROMTOOL` is set (CI sets
//! it), which makes its absence a failure.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use joblog_testkit::receiver::Receiver;
use joblog_testkit::{eventually, PATIENCE};
use serde_json::{json, Value};

use super::Server;

fn promtool(test: &str) -> bool {
    let found = Command::new("promtool")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("JOBLOG_REQUIRE_PROMTOOL").is_none(),
            "promtool required (JOBLOG_REQUIRE_PROMTOOL) but not found"
        );
        eprintln!("note: {test} SKIPPED — promtool not found (Debian: apt-get install prometheus)");
    }
    found
}

fn packaging() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging")
}

fn rules_dir() -> PathBuf {
    packaging().join("prometheus")
}

/// A server with a finished job, a schedule whose run failed and a
/// notification of that failure tried, and its scrape in the text format:
/// the families that are empty until something happens have series too.
async fn scrape() -> (tempfile::TempDir, Server, String) {
    let dir = tempfile::tempdir().unwrap();
    let receiver = Receiver::start().await;
    // The receiver is on loopback.
    let server = Server::start(dir.path(), &["--notify-allow-private-targets", "true"]).await;
    let rule = server
        .http
        .post(format!("{}/api/v1/notifications", server.url))
        .json(&json!({"name": "failures", "when": {"states": ["failed"]},
                      "webhook": {"url": receiver.url("/hook")}}))
        .send()
        .await
        .unwrap();
    assert_eq!(rule.status(), 201, "creating a notification rule");
    let id = server
        .submit(json!({"name": "backup", "script": "echo ok"}))
        .await;
    server.wait_finished(id).await;
    let schedule = server
        .create_schedule(json!({"name": "nightly", "cron": "30 2 * * *", "script": "exit 1"}))
        .await;
    let run: serde_json::Value = server
        .http
        .post(format!("{}/api/v1/schedules/{schedule}/run", server.url))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    server.wait_finished(run["id"].as_i64().unwrap()).await;
    // A try is counted once its outcome is recorded, after it was sent.
    let text = eventually("a notification try in /metrics", PATIENCE, || async {
        let text = server
            .http
            .get(format!("{}/metrics", server.url))
            .header("Accept", "text/plain;version=0.0.4")
            .send()
            .await
            .map_err(|e| e.to_string())?
            .text()
            .await
            .map_err(|e| e.to_string())?;
        if text.contains("joblog_notifications_total{") {
            Ok(text)
        } else {
            Err("no joblog_notifications_total series".to_string())
        }
    })
    .await;
    (dir, server, text)
}

/// The names a scrape in the text format exports, each with its family's
/// type: every family's `TYPE` name (a family with no series yet has
/// only that) and every sample's name, so a histogram's `_bucket`, `_sum`
/// and `_count` series are there as such.
fn exported(scrape: &str) -> HashMap<&str, &str> {
    let mut names = HashMap::new();
    let mut kind = "untyped";
    for line in scrape.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, k) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            kind = k;
            names.insert(name, k);
        } else if !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['{', ' ']).next().unwrap_or(line);
            names.insert(name, kind);
        }
    }
    names
}

/// The joblog metric names a text (rules, a query) reads, with where.
fn joblog_names(text: &str) -> Vec<(usize, &str)> {
    let mut names = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
        match (c.is_ascii_alphanumeric() || c == '_', start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                if text[s..i].starts_with("joblog_") {
                    names.push((s, &text[s..i]));
                }
                start = None;
            }
            _ => {}
        }
    }
    names
}

fn run_promtool(args: &[&str], stdin: Option<&str>) -> String {
    use std::io::Write;
    let mut child = Command::new("promtool")
        .args(args)
        .current_dir(rules_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running promtool");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?} failed:\n{said}");
    said
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_passes_promtool_check_metrics() {
    if !promtool("a_scrape_passes_promtool_check_metrics") {
        return;
    }
    let (_dir, _server, text) = scrape().await;
    for family in [
        "joblog_jobs_finished_total",
        "joblog_job_last_success_timestamp_seconds",
        "joblog_schedule_last_failure_timestamp_seconds",
        "joblog_job_queue_wait_seconds",
        "joblog_notifications_total",
    ] {
        assert!(
            text.contains(&format!("# TYPE {family} ")),
            "no {family} in\n{text}"
        );
    }
    let said = run_promtool(&["check", "metrics"], Some(&text));
    assert!(said.trim().is_empty(), "promtool found problems:\n{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_alert_rules_pass_promtool_and_read_exported_metrics() {
    if !promtool("the_alert_rules_pass_promtool_and_read_exported_metrics") {
        return;
    }
    run_promtool(&["check", "rules", "alerts.yml"], None);
    let said = run_promtool(&["test", "rules", "alerts.test.yml"], None);
    assert!(said.contains("SUCCESS"), "{said}");
    // A rule reading a metric the server does not export would never
    // fire: every name the rules read is in a real scrape.
    let rules = std::fs::read_to_string(rules_dir().join("alerts.yml")).unwrap();
    let (_dir, _server, text) = scrape().await;
    let exported = exported(&text);
    let read = joblog_names(&rules);
    for (_, name) in &read {
        assert!(
            exported.contains_key(name),
            "alerts.yml reads {name}, which /metrics does not export"
        );
    }
    assert!(
        read.len() >= 5,
        "the rules read {} joblog metrics",
        read.len()
    );
}

/// What the dashboard is for (docs/production.md): for each topic, a
/// series some panel must read.
const TOPICS: [(&str, &str); 14] = [
    ("jobs by state", "joblog_jobs_finished_total"),
    ("jobs queued", "joblog_jobs_queued"),
    ("failures by name", "joblog_job_finished"),
    (
        "failures by schedule",
        "joblog_schedule_last_failure_timestamp_seconds",
    ),
    ("queue wait", "joblog_job_queue_wait_seconds_bucket"),
    ("jobs no node can take", "joblog_jobs_waiting_for_node"),
    ("dispatch rate", "joblog_job_queue_wait_seconds_count"),
    ("pipeline backlog", "joblog_pipeline_pending_bytes"),
    ("pipeline budget", "joblog_pipeline_budget_bytes"),
    ("live-tail viewers", "joblog_live_viewers"),
    ("ingest", "joblog_log_records_written_total"),
    ("commit latency", "joblog_store_commit_seconds_bucket"),
    ("sealing lag", "joblog_seal_lag_seconds"),
    (
        "notification outbox",
        "joblog_notification_outbox_oldest_seconds",
    ),
];

/// Every panel of a dashboard's `panels`, those inside rows too (a
/// collapsed row holds its panels).
fn panels(list: &Value) -> Vec<&Value> {
    let mut all = Vec::new();
    for panel in list.as_array().expect("`panels` is a list") {
        all.push(panel);
        if let Some(inner) = panel.get("panels") {
            all.extend(panels(inner));
        }
    }
    all
}

/// A Grafana query with its variables given values promtool can read:
/// the intervals a duration, the node selection every node.
fn concrete(expr: &str) -> String {
    let mut out = String::new();
    let mut rest = expr;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        // `${name}`, `${name:format}` or `$name`.
        let (name, len) = match after.strip_prefix('{') {
            Some(braced) => {
                let end = braced
                    .find('}')
                    .unwrap_or_else(|| panic!("unclosed ${{ in {expr}"));
                (braced[..end].split(':').next().unwrap_or(""), end + 2)
            }
            None => {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], end)
            }
        };
        out.push_str(match name {
            "__rate_interval" | "__interval" | "__range" => "5m",
            "instance" => ".*",
            _ => panic!("{expr} uses ${name}, which `concrete` gives no value"),
        });
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

/// The function whose call encloses byte `at` of a PromQL expression
/// (`rate` in `sum(rate(x[5m]))`), or "" for none or an aggregation
/// with its grouping before its parenthesis (`sum by (le) (x)`).
fn enclosing_call(expr: &str, at: usize) -> &str {
    let mut depth = 0;
    let mut quoted = false;
    for (i, c) in expr[..at].char_indices().rev() {
        match c {
            '"' => quoted = !quoted,
            _ if quoted => {}
            ')' => depth += 1,
            '(' if depth > 0 => depth -= 1,
            '(' => {
                let before = expr[..i].trim_end();
                return before
                    .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("");
            }
            _ => {}
        }
    }
    ""
}

/// The series a panel's query reads, each checked: exported, and a
/// counter's or histogram's read through `rate` (its value alone is only
/// a count since the start), a gauge's never (its rate means nothing).
fn series_read<'a>(title: &str, expr: &'a str, exported: &HashMap<&str, &str>) -> Vec<&'a str> {
    let names = joblog_names(expr);
    assert!(
        !names.is_empty(),
        "panel {title}: {expr} reads no joblog metric"
    );
    for &(at, name) in &names {
        let kind = exported.get(name).unwrap_or_else(|| {
            panic!("panel {title} reads {name}, which /metrics does not export")
        });
        let call = enclosing_call(expr, at);
        let rated = matches!(call, "rate" | "irate" | "increase");
        match *kind {
            "counter" | "histogram" => assert!(
                rated,
                "panel {title}: {kind} {name} is read outside rate(): {expr}"
            ),
            _ => assert!(!rated, "panel {title}: {call}() of {kind} {name}: {expr}"),
        }
        if name.ends_with("_bucket") {
            assert!(
                expr.contains("histogram_quantile("),
                "panel {title}: buckets without histogram_quantile: {expr}"
            );
        }
    }
    names.into_iter().map(|(_, name)| name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grafana_dashboard_reads_exported_metrics_in_valid_promql() {
    if !promtool("the_grafana_dashboard_reads_exported_metrics_in_valid_promql") {
        return;
    }
    let path = packaging().join("grafana/joblog.json");
    let board: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(board["uid"], "joblog");
    assert_eq!(board["title"], "joblog");
    // It imports into any Grafana: the Prometheus data source is chosen
    // by a variable, not named by a uid of the Grafana it was made in.
    let variables = board["templating"]["list"].as_array().unwrap();
    assert!(
        variables.iter().any(|v| v["name"] == "datasource"
            && v["type"] == "datasource"
            && v["query"] == "prometheus"),
        "no `datasource` variable of Prometheus data sources"
    );

    let (_dir, _server, text) = scrape().await;
    let exported = exported(&text);
    for v in variables {
        for (_, name) in joblog_names(v["definition"].as_str().unwrap_or("")) {
            assert!(
                exported.contains_key(name),
                "variable {} reads {name}, which /metrics does not export",
                v["name"]
            );
        }
    }

    let mut rules = String::from("groups:\n  - name: grafana\n    rules:\n");
    let mut read = HashSet::new();
    let mut queries = 0;
    for panel in panels(&board["panels"]) {
        let title = panel["title"].as_str().unwrap_or("(untitled)");
        if panel["type"] == "row" {
            continue;
        }
        assert_eq!(
            panel["datasource"]["uid"], "${datasource}",
            "panel {title}: its data source is not the variable"
        );
        assert!(
            panel["fieldConfig"]["defaults"]["unit"].is_string(),
            "panel {title} has no unit"
        );
        let targets = panel["targets"].as_array().map_or(&[][..], Vec::as_slice);
        assert!(!targets.is_empty(), "panel {title} has no query");
        for target in targets {
            let expr = target["expr"]
                .as_str()
                .filter(|e| !e.trim().is_empty())
                .unwrap_or_else(|| panic!("panel {title}: a target without `expr`"));
            read.extend(series_read(title, expr, &exported));
            let expr = serde_json::to_string(&concrete(expr)).unwrap();
            writeln!(
                rules,
                "      - record: grafana:query_{queries}\n        expr: {expr}"
            )
            .unwrap();
            queries += 1;
        }
    }
    // Each query as a recording rule (a JSON string is a YAML one):
    // promtool parses it as Prometheus would.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("grafana-queries.yml");
    std::fs::write(&file, rules).unwrap();
    let said = run_promtool(&["check", "rules", file.to_str().unwrap()], None);
    assert!(said.contains(&format!("{queries} rules found")), "{said}");

    for (topic, name) in TOPICS {
        assert!(
            read.contains(name),
            "no panel shows {topic} (it would read {name})"
        );
    }
}
