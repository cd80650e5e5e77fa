//! What a job was given, through the CLI: scripts from a file, `show`
//! listing what was given, `rerun`, and the hint for a command with spaces.

use super::{cli, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_job_is_shown_with_what_it_was_given_and_reruns() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let script = dir.path().join("report.sh");
    std::fs::write(&script, "echo \"report for $STAGE\"\nexit 4\n").unwrap();
    let script = script.display().to_string();
    let (code, out, err) = cli(
        &server,
        &[
            "run",
            "--name",
            "report",
            "--env",
            "STAGE=prod",
            "--cwd",
            "/",
            "--shell",
            "sh",
            "--script",
            &script,
        ],
    );
    assert_eq!(code, 4, "run exits with the job's code: {err}");
    assert_eq!(out, "report for prod\n");
    let (code, jobs, _) = cli(&server, &["jobs", "--json"]);
    assert_eq!(code, 0);
    let jobs: serde_json::Value = serde_json::from_str(&jobs).unwrap();
    let id = jobs["jobs"][0]["id"].as_i64().unwrap().to_string();

    let (code, show, err) = cli(&server, &["show", &id]);
    assert_eq!(code, 0, "{err}");
    for line in ["script in: sh", "cwd:", "env:", "STAGE=prod"] {
        assert!(show.contains(line), "{line:?} missing from:\n{show}");
    }

    // The same job again, followed like run, exiting with its code.
    let (code, out, err) = cli(&server, &["rerun", &id]);
    assert_eq!(code, 4, "{err}");
    assert_eq!(out, "report for prod\n");
    let (_, show, _) = cli(
        &server,
        &[
            "show",
            "--json",
            &(id.parse::<i64>().unwrap() + 1).to_string(),
        ],
    );
    let rerun: serde_json::Value = serde_json::from_str(&show).unwrap();
    assert_eq!(rerun["rerun_of"].to_string(), id);
    assert_eq!(rerun["name"], "report");

    // One argument with spaces is refused, with the way to say it.
    let (code, _, err) = cli(&server, &["run", "--", "echo hi; ls"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("sh -c 'echo hi; ls'"), "{err}");
    let (code, _, err) = cli(&server, &["run", "--script", "/nonexistent/x.sh"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("/nonexistent/x.sh"), "{err}");
}
