//! The server under test: a `joblog serve` child in its own temporary
//! directory and process group, ready once `/healthz` answers, stopped the
//! way an operator would stop it; and the free-port helper the end-to-end
//! tests share.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use tokio::signal::unix::Signal;

use super::BenchArgs;
use joblog_client::Api;

pub(super) struct SpawnedServer {
    child: tokio::process::Child,
    pub(super) url: String,
    /// The URL of its database (the SQLite file in its data directory
    /// unless `--database` was given).
    pub(super) database: String,
    root: PathBuf,
    log_path: PathBuf,
    keep: bool,
}

/// Runs `measure` against a `joblog serve` of the bench's own (the
/// `--database` given, or SQLite in a temporary directory; `flags` added
/// to its command line) and stops the server whatever happened; Ctrl-C
/// ends the measurement as an error. `scenario` names the bench that
/// refuses `--external`.
pub(super) async fn on_own_server<T>(
    args: &BenchArgs,
    scenario: &str,
    flags: &[String],
    measure: impl AsyncFnOnce(&SpawnedServer) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    if args.external {
        bail!(joblog_client::UsageError(format!(
            "bench {scenario} starts its own server: --external does not apply"
        )));
    }
    let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .context("cannot listen for Ctrl-C")?;
    let server = start_server(
        args,
        args.database.as_deref(),
        flags,
        &[],
        None,
        &mut sigint,
    )
    .await?;
    let outcome = tokio::select! {
        r = measure(&server) => r,
        _ = sigint.recv() => Err(anyhow::anyhow!("interrupted")),
    };
    server.stop().await;
    outcome
}

/// A loopback port nothing listens on right now, for a server to be started
/// on. (The tests have the test kit's; a benchmark reports the error.)
fn free_port() -> anyhow::Result<u16> {
    // The port is free when we drop the listener; the tiny race with another
    // process grabbing it is acceptable for a benchmark or a test.
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    Ok(l.local_addr()?.port())
}

fn tail_of(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Starts `joblog serve` on a fresh data directory and `database`
/// (default: SQLite in that directory), with `flags` added to its command
/// line and `env` to its environment (`None`: the variable is removed).
pub(super) async fn start_server(
    args: &BenchArgs,
    database: Option<&str>,
    flags: &[String],
    env: &[(&str, Option<&str>)],
    token: Option<&str>,
    sigint: &mut Signal,
) -> anyhow::Result<SpawnedServer> {
    let exe = std::env::current_exe().context("cannot find the joblog executable")?;
    let root = super::scratch_dir("server")?;
    let data = root.join("data");
    std::fs::create_dir(&data).with_context(|| format!("cannot create {}", data.display()))?;
    let log_path = root.join("server.log");
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("cannot create {}", log_path.display()))?;
    let log2 = log.try_clone()?;
    let port = free_port()?;
    let listen = format!("127.0.0.1:{port}");
    let mut cmd = tokio::process::Command::new(&exe);
    cmd.arg("serve")
        .arg("--listen")
        .arg(&listen)
        .arg("--data-dir")
        .arg(&data);
    if let Some(db) = database {
        cmd.arg("--database").arg(db);
    }
    cmd.args(flags);
    for (name, value) in env {
        match value {
            Some(v) => cmd.env(name, v),
            None => cmd.env_remove(name),
        };
    }
    // A joblog.toml in the caller's directory must not change the server
    // under test.
    // Its own process group: Ctrl-C in the terminal reaches only the bench,
    // which still needs the server to take its final measurement.
    cmd.process_group(0);
    cmd.current_dir(&root)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .kill_on_drop(true);
    let child = cmd
        .spawn()
        .with_context(|| format!("cannot start {} serve", exe.display()))?;
    let mut server = SpawnedServer {
        child,
        url: format!("http://{listen}"),
        database: database.map_or_else(
            || format!("sqlite://{}", data.join("joblog.db").display()),
            str::to_string,
        ),
        root,
        log_path,
        keep: args.keep,
    };
    let ready = tokio::select! {
        r = wait_healthy(&mut server, token) => r,
        _ = sigint.recv() => Err(anyhow::anyhow!("interrupted (Ctrl-C)")),
    };
    if let Err(e) = ready {
        let tail = tail_of(&server.log_path, 20);
        server.stop().await;
        if tail.trim().is_empty() {
            return Err(e);
        }
        bail!("{e:#}\nserver output (last lines):\n{tail}");
    }
    Ok(server)
}

async fn wait_healthy(server: &mut SpawnedServer, token: Option<&str>) -> anyhow::Result<()> {
    let api = Api::new(&server.url, token)?;
    let url = api.url("/healthz", &[])?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = server.child.try_wait()? {
            bail!("the server exited at start ({status})");
        }
        if api
            .get_raw(url.clone(), Duration::from_secs(2))
            .await
            .is_ok()
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the server did not become healthy within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `utime + stime` of a `/proc/PID/stat` line. The command name in
/// parentheses may hold spaces, so fields are counted after its `)`.
fn cpu_time_of(stat: &str) -> Option<Duration> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // After `)`: state is field 3, utime 14, stime 15.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|t| *t > 0)?;
    Some(Duration::from_secs_f64(
        (utime + stime) as f64 / ticks as f64,
    ))
}

impl SpawnedServer {
    /// Graceful stop (SIGTERM, as an operator would), then SIGKILL if it
    /// hangs; removes the temporary directory unless asked to keep it.
    pub(super) async fn stop(mut self) {
        if let Some(pid) = self.child.id() {
            let _ = tokio::process::Command::new("kill")
                .arg("-TERM")
                .arg(pid.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .await;
        }
        match tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await {
            Ok(_) => {}
            Err(_) => {
                eprintln!("bench: server did not stop within 30 s of SIGTERM; killing it");
                let _ = self.child.kill().await;
            }
        }
        if self.keep {
            eprintln!("bench: kept {}", self.root.display());
        } else if let Err(e) = std::fs::remove_dir_all(&self.root) {
            eprintln!("bench: cannot remove {}: {e}", self.root.display());
        }
    }

    /// CPU time the server process has used so far, user and system,
    /// every thread (Linux, from `/proc`; clock-tick resolution).
    pub(super) fn cpu_time(&self) -> Option<Duration> {
        let pid = self.child.id()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        cpu_time_of(&stat)
    }

    /// Resident and peak memory of the server process (Linux), in MiB.
    pub(super) fn memory_mib(&self) -> Option<(f64, f64)> {
        let pid = self.child.id()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let field = |name: &str| -> Option<f64> {
            let line = status.lines().find(|l| l.starts_with(name))?;
            let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb / 1024.0)
        };
        Some((field("VmRSS:")?, field("VmHWM:")?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_counts_fields_after_the_command_name() {
        let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .unwrap()
            .unwrap() as f64;
        // A command name with a space and a `)` of its own.
        let stat = "4242 (tokio (rt) x) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 9 0";
        let t = cpu_time_of(stat).unwrap();
        assert!((t.as_secs_f64() - 300.0 / ticks).abs() < 1e-9, "{t:?}");
        assert_eq!(cpu_time_of("4242 (joblog S 1"), None);
        assert_eq!(cpu_time_of("4242 (joblog) S 1 2"), None);
    }

    #[test]
    fn cpu_time_of_this_process_reads() {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        assert!(cpu_time_of(&stat).is_some(), "{stat}");
    }
}
