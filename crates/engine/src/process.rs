//! Starting a job's process in its own process group, and signalling the
//! whole group.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

use joblog_core::{JobId, JobSpec};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

/// Variables of the server's own environment a job must never see.
const SERVER_ONLY_ENV: &[&str] = &["JOBLOG_TOKEN", "JOBLOG_DATABASE_URL"];

pub(crate) fn spawn(
    id: JobId,
    instance: &str,
    spec: &JobSpec,
    secrets: &BTreeMap<String, String>,
    result_path: &Path,
) -> std::io::Result<Child> {
    let (program, args) = spec
        .command
        .split_first()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command"))?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so that cancel and timeout reach every process the
        // job started, and a Ctrl-C at the server's terminal reaches none.
        .process_group(0)
        .kill_on_drop(true);
    for k in SERVER_ONLY_ENV {
        cmd.env_remove(k);
    }
    cmd.envs(&spec.env)
        .envs(secrets)
        .env("JOBLOG_JOB_ID", id.to_string())
        // Marks the job's processes as this engine's, for `orphans`.
        .env("JOBLOG_INSTANCE", instance)
        .env("JOBLOG_RESULT", result_path);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    cmd.spawn()
}

/// Sends `signal` to the job's process group. Errors (the group is already
/// gone) are expected and ignored.
pub(crate) fn signal_group(pgid: Option<u32>, signal: Signal) {
    if let Some(pgid) = pgid.and_then(|p| i32::try_from(p).ok()) {
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
}
