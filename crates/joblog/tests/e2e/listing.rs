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
