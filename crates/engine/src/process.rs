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
    marks: &Marks<'_>,
    spec: &JobSpec,
    secrets: &BTreeMap<String, String>,
    result_path: &Path,
    umask: Option<u32>,
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
        // Only this job's processes know it: a process of another job
        // that names this job's id is not taken for this job's.
        .env("JOBLOG_JOB_KEY", marks.job_key)
        // Marks the job's processes as this engine's, for `orphans`.
        .env("JOBLOG_INSTANCE", marks.instance)
        // Marks them as this node's on this store, for the sweep at the
        // next start should this server die without stopping them.
        .env("JOBLOG_SUPERVISOR", marks.supervisor)
        .env("JOBLOG_RESULT", result_path);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    die_with_server(&mut cmd, umask);
    cmd.spawn()
}

/// The marks a job's environment carries (see `orphans`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Marks<'a> {
    /// This engine's (`JOBLOG_INSTANCE`).
    pub instance: &'a str,
    /// This node on this store, the same across restarts (`JOBLOG_SUPERVISOR`).
    pub supervisor: &'a str,
    /// This job's own random key (`JOBLOG_JOB_KEY`).
    pub job_key: &'a str,
}

/// Has the kernel kill the job's main process when the server dies,
/// however it dies (`kill -9` too): a job must not run on unsupervised,
/// writing to pipes nobody reads, while the store calls it interrupted.
/// Processes the job started in turn are killed by the next start's sweep
/// (`orphans::kill_leftovers`) or, under systemd, with the service's
/// control group.
///
/// The signal is tied to the thread that forks, not the process: jobs are
/// spawned from the runtime's worker threads, which live as long as the
/// server, never from short-lived blocking threads.
///
/// The same hook gives the job `umask` when set (the server keeps a
/// stricter one for its own files).
#[allow(unsafe_code)]
fn die_with_server(cmd: &mut Command, umask: Option<u32>) {
    let server = nix::unistd::getpid();
    let umask = umask.map(nix::sys::stat::Mode::from_bits_truncate);
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe calls are allowed: prctl(2), getppid(2) and
    // umask(2) are system calls that neither allocate nor take locks.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(mask) = umask {
                nix::sys::stat::umask(mask);
            }
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
            // The server may have died before the line above: then the
            // signal will never come, and the job must not start.
            // (No allocation here: the error is a bare errno.)
            if nix::unistd::getppid() != server {
                return Err(nix::errno::Errno::ESRCH.into());
            }
            Ok(())
        });
    }
}

/// Sends `signal` to the job's process group. Errors (the group is already
/// gone) are expected and ignored.
pub(crate) fn signal_group(pgid: Option<u32>, signal: Signal) {
    if let Some(pgid) = pgid.and_then(|p| i32::try_from(p).ok()) {
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
}
