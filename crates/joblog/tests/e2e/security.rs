//! The real server's security: tokens and roles through the CLI, and the
//! server's own token kept from its jobs.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use super::{cli, Server, BIN};

const BOOTSTRAP: &str = "e2e-bootstrap-token-0123456789abcdefghij";

fn write_token_file(dir: &Path) -> String {
    let path = dir.join("admin.token");
    std::fs::write(&path, format!("{BOOTSTRAP}\n")).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_made_listed_and_revoked_with_the_cli_and_roles_hold() {
    let dir = tempfile::tempdir().unwrap();
    let admin = write_token_file(dir.path());
    let server = Server::start(dir.path(), &["--token-file", &admin]).await;

    let (code, out, err) = cli(
        &server,
        &[
            "--token-file",
            &admin,
            "token",
            "create",
            "--name",
            "grafana",
            "--role",
            "viewer",
            "--expires",
            "90d",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let viewer = out.trim().to_string();
    assert!(viewer.starts_with("jl_") && viewer.len() == 46, "{out:?}");
    assert!(err.contains("shown only now"), "{err}");

    let (code, out, err) = cli(&server, &["--token-file", &admin, "token", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("grafana") && out.contains("viewer"), "{out}");
    assert!(
        !out.contains(&viewer),
        "a listing never shows a token: {out}"
    );

    // A viewer reads but cannot run anything.
    let (code, _, err) = cli(&server, &["--token", &viewer, "jobs"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = cli(&server, &["--token", &viewer, "run", "--", "true"]);
    assert_eq!(code, 1);
    assert!(err.contains("needs the operator role"), "{err}");
    // Nor manage tokens.
    let (code, _, err) = cli(&server, &["--token", &viewer, "token", "list"]);
    assert_eq!(code, 1);
    assert!(err.contains("needs the admin role"), "{err}");
    // Without a token: 401, and the hint says how to give one.
    let (code, _, err) = cli(&server, &["jobs"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("needs an API token") && err.contains("--token-file"),
        "{err}"
    );

    let (code, out, err) = cli(
        &server,
        &["--token-file", &admin, "token", "revoke", "grafana"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "revoked token grafana");
    let (code, _, err) = cli(&server, &["--token", &viewer, "jobs"]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown API token"), "{err}");
}

/// The probe's finding: a job printed the server's `JOBLOG_TOKEN` from
/// `/proc/$PPID/environ`, and it was stored in clear. The server now
/// drops its secrets from its environment, is not dumpable (so
/// `/proc/<pid>/environ` is root's alone), and masks its token in every
/// record however a job finds it. Run as an unprivileged user: a job of
/// root's can read anything root can.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_cannot_read_the_servers_token_and_never_stores_it() {
    let dir = tempfile::tempdir().unwrap();
    // The server may run as `nobody`: everything it touches is open to it.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let admin = write_token_file(dir.path());
    std::fs::set_permissions(&admin, std::fs::Permissions::from_mode(0o644)).unwrap();
    // /proc/self belongs to this process's effective user.
    let as_root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    let server = Server::start_with(dir.path(), &[], |cmd| {
        cmd.env("JOBLOG_TOKEN", BOOTSTRAP);
        if as_root {
            // Run the same command as nobody, through setpriv.
            let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
            let mut wrapped = Command::new("setpriv");
            wrapped
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
                .args(args)
                .env("JOBLOG_TOKEN", BOOTSTRAP)
                .env("JOBLOG_LOG", "warn")
                .stdin(std::process::Stdio::null());
            *cmd = wrapped;
        }
    })
    .await;
    let script = r#"echo "env: [$JOBLOG_TOKEN]"
tr '\0' '\n' < /proc/$PPID/environ | grep JOBLOG_TOKEN || echo "environ: unreadable"
echo "file: $(cat "$TOKEN_FILE")""#;
    let (code, out, err) = cli(
        &server,
        &[
            "--token-file",
            &admin,
            "run",
            "--env",
            &format!("TOKEN_FILE={admin}"),
            "--",
            "sh",
            "-c",
            script,
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        !out.contains(BOOTSTRAP) && !err.contains(BOOTSTRAP),
        "{out}{err}"
    );
    assert!(out.contains("env: []"), "{out}");
    assert!(out.contains("environ: unreadable"), "{out}");
    // The file is the server user's to read; its content is masked.
    assert!(out.contains("file: ***"), "{out}");
    let (code, json, _) = cli(&server, &["--token-file", &admin, "logs", "1", "--json"]);
    assert_eq!(code, 0);
    assert!(!json.contains(BOOTSTRAP), "{json}");
}
