//! An operator's daily questions through the real CLI: "what failed since
//! yesterday?" in one `joblog jobs` command, and `joblog logs` printing
//! every record on stdout, so `| grep` and `> file` see them all.

use serde_json::{json, Value};

use super::{cli, Server};

/// The ids of a `joblog jobs` table, top to bottom, after checking its
/// header.
fn table_ids(out: &str) -> Vec<i64> {
    let mut lines = out.lines();
    let header = lines.next().unwrap_or_default();
    assert!(
        header
            .split_whitespace()
            .eq(["ID", "STATE", "NAME", "NODE", "EXIT", "CREATED", "DURATION", "RECORDS"]),
        "{out}"
    );
    lines
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect()
}

/// `joblog jobs ARGS` as a table, expecting success.
fn jobs(server: &Server, args: &[&str]) -> (Vec<i64>, String) {
    let mut all = vec!["jobs"];
    all.extend_from_slice(args);
    let (code, out, err) = cli(server, &all);
    assert_eq!(code, 0, "joblog {all:?}: {err}");
    (table_ids(&out), out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_answers_what_failed_since_yesterday_in_one_command() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--node", "e2e-node"]).await;
    let run = |body: Value| {
        let server = &server;
        async move {
            let id = server.submit(body).await;
            server.wait_finished(id).await;
            id
        }
    };
    let db_1 = run(json!({"name": "backup-db", "script": "exit 1"})).await;
    let files = run(json!({"name": "backup-files", "script": "true"})).await;
    let report = run(json!({"name": "report", "script": "sleep 30", "timeout_s": 0.3})).await;
    let db_2 = run(json!({"name": "backup-db", "script": "echo dumped; exit 2"})).await;
    assert_eq!(server.job(report).await["state"], "timed_out");

    let (ids, table) = jobs(&server, &["--since", "24h", "--state", "failed,timed_out"]);
    assert_eq!(ids, [db_2, report, db_1]);
    for line in table.lines().skip(1) {
        assert!(line.contains(" e2e-node "), "the NODE column: {table}");
    }
    let (code, out, err) = cli(
        &server,
        &[
            "jobs",
            "--since",
            "24h",
            "--state",
            "failed,timed_out",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let listed: Value = serde_json::from_str(&out).unwrap();
    let json_ids: Vec<i64> = listed["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_i64().unwrap())
        .collect();
    assert_eq!(json_ids, [db_2, report, db_1]);

    assert_eq!(jobs(&server, &["--name", "backup*"]).0, [db_2, files, db_1]);
    assert_eq!(
        jobs(&server, &["--name", "backup*", "--state", "failed"]).0,
        [db_2, db_1]
    );
    assert_eq!(jobs(&server, &["--name", "*-files"]).0, [files]);
    assert_eq!(
        jobs(&server, &["--node", "e2e-node"]).0,
        [db_2, report, files, db_1]
    );
    assert!(jobs(&server, &["--node", "elsewhere"]).0.is_empty());
    assert!(jobs(&server, &["--until", "2000-01-01"]).0.is_empty());
    let files_created = server.job(files).await["created_at"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        jobs(&server, &["--since", &files_created]).0,
        [db_2, report, files]
    );
    assert_eq!(jobs(&server, &["--until", &files_created]).0, [db_1]);
    // Reading on from an earlier listing.
    let report_id = report.to_string();
    assert_eq!(
        jobs(&server, &["--before-id", &report_id, "--limit", "1"]).0,
        [files]
    );

    // Bad values are bad usage, caught before any request, and say why.
    let (code, _, err) = cli(&server, &["jobs", "--state", "failed,bogus"]);
    assert_eq!(code, 2);
    assert!(err.contains("bogus") && err.contains("timed_out"), "{err}");
    let (code, _, err) = cli(&server, &["jobs", "--since", "yesterday"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("24h") && err.contains("2026-11-22T10:00:00Z"),
        "{err}"
    );
    // What only the server can judge comes back as its error.
    let (code, _, err) = cli(&server, &["jobs", "--since", "1h", "--until", "2h"]);
    assert_eq!(code, 1);
    assert!(err.contains("since") && err.contains("until"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_prints_every_record_on_stdout_and_nothing_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let id = server
        .submit(json!({"script": "echo out; echo err >&2; echo '::warning::careful'"}))
        .await;
    server.wait_finished(id).await;
    let id = id.to_string();

    // Lines of the two pipes may interleave either way: compare sorted.
    let sorted = |out: &str| {
        let mut lines: Vec<String> = out.lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    for follow in [&[][..], &["-f"][..]] {
        let mut args = vec!["logs", id.as_str()];
        args.extend_from_slice(follow);
        let (code, out, err) = cli(&server, &args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert_eq!(
            sorted(&out),
            ["error: err", "out", "warning: careful"],
            "{args:?}"
        );
        assert_eq!(err, "", "{args:?}: stderr is for joblog's own messages");
    }

    let (code, out, err) = cli(&server, &["logs", &id, "--streams", "warning"]);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (0, "warning: careful\n", "")
    );
    let (code, out, err) = cli(&server, &["logs", &id, "--streams", "error,warning"]);
    assert_eq!(code, 0);
    assert_eq!(sorted(&out), ["error: err", "warning: careful"]);
    assert_eq!(err, "");

    let (code, out, err) = cli(&server, &["logs", &id, "--json"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let mut streams: Vec<String> = out
        .lines()
        .map(|l| {
            let record: Value = serde_json::from_str(l).unwrap();
            record["stream"].as_str().unwrap().to_string()
        })
        .collect();
    streams.sort();
    assert_eq!(streams, ["error", "output", "warning"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_finds_which_job_printed_a_line_sealed_or_not() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let run = |body: Value| {
        let server = &server;
        async move {
            let id = server.submit(body).await;
            server.wait_finished(id).await;
            id
        }
    };
    let old =
        run(json!({"name": "backup-db", "script": "echo start; echo 'tar: disk full' >&2"})).await;
    let (code, _, err) = cli(&server, &["seal", "--all"]);
    assert_eq!(code, 0, "{err}");
    let web =
        run(json!({"name": "backup-web", "script": "printf 'DISK FULL \\033[31mred\\n'"})).await;
    run(json!({"name": "report", "script": "echo 'disk full? no'"})).await;

    // Newest job first, a heading per job, control characters escaped.
    let (code, out, err) = cli(&server, &["search", "disk full", "--name", "backup*"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("job {web} backup-web"), "{out}");
    assert!(lines[1].trim_start().starts_with("1  "), "{out}");
    assert!(
        lines[1].ends_with("output       DISK FULL \\x1b[31mred"),
        "{out}"
    );
    assert_eq!(lines[2], "");
    assert_eq!(lines[3], format!("job {old} backup-db"));
    assert!(lines[4].contains("  error        tar: disk full"), "{out}");
    assert_eq!(lines.len(), 5, "{out}");
    assert_eq!(err.trim(), "2 lines in 2 jobs");

    // JSON, one hit per line; a regular expression; the limit.
    let (code, out, _) = cli(&server, &["search", "disk +full\\?", "--regex", "--json"]);
    assert_eq!(code, 0);
    let hits: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(hits.len(), 1, "{out}");
    assert_eq!(hits[0]["job_name"], "report");
    assert_eq!(hits[0]["message"], "disk full? no");
    let (code, out, err) = cli(&server, &["search", "full", "--limit", "1"]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(err.contains("more may follow"), "{err}");

    // As grep: 1 when nothing is found, 2 when the search fails.
    let (code, out, err) = cli(&server, &["search", "nowhere to be found"]);
    assert_eq!(
        (code, out.as_str(), err.trim()),
        (1, "", "0 lines in 0 jobs")
    );
    let (code, _, err) = cli(&server, &["search", "(unclosed", "--regex"]);
    assert_eq!(code, 2);
    assert!(err.contains("q: not a valid regular expression"), "{err}");
}
