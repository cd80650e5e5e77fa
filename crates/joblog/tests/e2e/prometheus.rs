//! `/metrics` and the shipped alert rules checked by Prometheus' own
//! tool: `promtool check metrics` on a real server's scrape (with job,
//! name and schedule series present), `promtool check rules` and
//! `promtool test rules` on packaging/prometheus, and every metric those
//! rules read exported by the server.
//!
//! Without `promtool` (Debian: `apt-get install prometheus`) the tests are
//! skipped with a note, unless `JOBLOG_REQUIRE_PROMTOOL` is set (CI sets
//! it), which makes its absence a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;

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

fn rules_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging/prometheus")
}

/// A server with a finished job and a schedule that has run, and its
/// scrape in the text format.
async fn scrape() -> (tempfile::TempDir, Server, String) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
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
    let text = server
        .http
        .get(format!("{}/metrics", server.url))
        .header("Accept", "text/plain;version=0.0.4")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    (dir, server, text)
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
    let mut read = 0;
    for word in rules.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if word.starts_with("joblog_") {
            read += 1;
            assert!(
                text.contains(&format!("# TYPE {word} ")),
                "alerts.yml reads {word}, which /metrics does not export"
            );
        }
    }
    assert!(read >= 5, "the rules read {read} joblog metrics");
}
