//! The real server's security: tokens and roles through the CLI, and the
//! server's own token kept from its jobs.

use joblog_testkit::{eventually, free_port, PATIENCE};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
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

/// A CA and a certificate for `localhost` it signed, as PEM files in
/// `dir` named `<name>-ca.pem`, `<name>-cert.pem`, `<name>-key.pem`.
fn make_ca_and_cert(dir: &Path, name: &str) -> (PathBuf, PathBuf, PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let paths = (
        dir.join(format!("{name}-ca.pem")),
        dir.join(format!("{name}-cert.pem")),
        dir.join(format!("{name}-key.pem")),
    );
    std::fs::write(&paths.0, ca_cert.pem()).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

/// HTTPS with the server's certificate, the CLI trusting a private CA with
/// `--cacert`, and a renewed certificate taken on SIGHUP without a
/// restart (a bad one is refused and the old one kept).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_a_private_ca_and_a_certificate_reloaded_on_sighup() {
    let dir = tempfile::tempdir().unwrap();
    let (ca1, cert1, key1) = make_ca_and_cert(dir.path(), "one");
    let (ca2, cert2, key2) = make_ca_and_cert(dir.path(), "two");
    let cert = dir.path().join("server-cert.pem");
    let key = dir.path().join("server-key.pem");
    std::fs::copy(&cert1, &cert).unwrap();
    std::fs::copy(&key1, &key).unwrap();
    // Started by hand, not by `Server`: it serves HTTPS, which `Server`'s
    // health wait and client do not speak; the CLI with `--cacert` is the
    // client here.
    let port = free_port();
    let mut child = std::process::Command::new(BIN)
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(dir.path().join("data"))
        .arg("--tls-cert")
        .arg(&cert)
        .arg("--tls-key")
        .arg(&key)
        .env("JOBLOG_LOG", "warn")
        .env_remove("JOBLOG_TOKEN")
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("https://localhost:{port}");
    let jobs = |ca: &Path| {
        let out = std::process::Command::new(BIN)
            .args(["--server", &url, "--cacert"])
            .arg(ca)
            .args(["jobs", "--json"])
            .env_remove("JOBLOG_TOKEN")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    eventually("the TLS server to answer", PATIENCE, || async {
        let (code, err) = jobs(&ca1);
        if code == 0 {
            Ok(())
        } else {
            Err(err)
        }
    })
    .await;
    // Plain HTTP to the TLS port is not served.
    let plain = super::http_client()
        .get(format!("http://127.0.0.1:{port}/healthz"))
        .send()
        .await;
    assert!(plain.is_err() || !plain.unwrap().status().is_success());
    // A CA that did not sign the certificate is not trusted.
    let (code, err) = jobs(&ca2);
    assert_eq!(code, 1, "{err}");
    assert!(err.to_lowercase().contains("certificate"), "{err}");

    // A broken key on SIGHUP: refused, the old certificate stays.
    std::fs::write(&key, "not a key").unwrap();
    nix_kill(child.id(), "HUP");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(jobs(&ca1).0, 0, "the old certificate is still served");

    // Renewed: the new pair is served after SIGHUP, without a restart.
    std::fs::copy(&cert2, &cert).unwrap();
    std::fs::copy(&key2, &key).unwrap();
    nix_kill(child.id(), "HUP");
    eventually("the renewed certificate to be served", PATIENCE, || async {
        let (code, err) = jobs(&ca2);
        if code == 0 {
            Ok(())
        } else {
            Err(err)
        }
    })
    .await;
    assert_eq!(jobs(&ca1).0, 1, "the old certificate is gone");
    nix_kill(child.id(), "TERM");
    assert!(child.wait().unwrap().success());
}

fn nix_kill(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

/// Plain HTTP on a network address works (behind a TLS proxy, say) but
/// says what it risks.
#[test]
fn plain_http_on_a_network_address_is_warned_about() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let admin = write_token_file(dir.path());
    // Started by hand, not by `Server`: it listens on a network address
    // (`Server` takes loopback) and the test reads its stderr line by line.
    let port = free_port();
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            &format!("0.0.0.0:{port}"),
            "--data-dir",
        ])
        .arg(dir.path().join("data"))
        .args(["--token-file", &admin])
        .env("JOBLOG_LOG", "info")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read on a thread: a server that never warns must fail the test, not
    // hang it.
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut warned = None;
    while let Ok(line) = rx.recv_timeout(std::time::Duration::from_secs(30)) {
        if line.contains("clear text") {
            warned = Some(line);
            break;
        }
        assert!(!line.contains("ERROR"), "{line}");
    }
    nix_kill(child.id(), "TERM");
    child.wait().unwrap();
    let line = warned.expect("no warning about plain HTTP");
    assert!(line.contains("WARN") && line.contains("tls_cert"), "{line}");
}
