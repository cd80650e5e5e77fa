//! Starting a job's process in its own process group, and signalling the
//! whole group.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

use joblog_core::{JobId, JobSpec};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

/// Variables of the server's own environment a job must never see, and
/// those joblog sets only for some jobs.
const SERVER_ONLY_ENV: &[&str] = &[
    "JOBLOG_TOKEN",
    "JOBLOG_DATABASE_URL",
    "JOBLOG_TRIGGER_JOB_ID",
    "JOBLOG_TRIGGER_STATE",
    "JOBLOG_TRIGGER_RESULT",
    "JOBLOG_PARAMS",
];

/// How a job's process is set up besides its spec.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Setup<'a> {
    /// Where it writes its result (`JOBLOG_RESULT`).
    pub result: ResultPath<'a>,
    /// The job whose end queued it, when one did (`JOBLOG_TRIGGER_*`).
    pub trigger: Option<&'a crate::trigger_input::TriggerInput>,
    /// The umask it starts with, when not the server's.
    pub umask: Option<u32>,
    /// The user it runs as, when not the server's.
    pub run_as: Option<&'a crate::RunAs>,
    /// Its parameters, when it has any (`JOBLOG_PARAM_*`, `JOBLOG_PARAMS`).
    pub params: Option<&'a crate::job_input::ParamsInput>,
}

/// Where a job writes its result.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ResultPath<'a> {
    /// A path in the server's results directory.
    Path(&'a Path),
    /// An open file the job inherits as this descriptor, named
    /// `/dev/fd/<n>`: under `run_as` the job cannot reach the server's
    /// directories, only the one file made for it.
    Fd(std::os::fd::RawFd),
}

pub(crate) fn spawn(
    id: JobId,
    marks: &Marks<'_>,
    spec: &JobSpec,
    secrets: &BTreeMap<String, String>,
    setup: &Setup<'_>,
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
    if let Some(user) = setup.run_as {
        // Its own, not the server's (which a job could otherwise take
        // for where to write).
        cmd.env("HOME", &user.home)
            .env("USER", &user.name)
            .env("LOGNAME", &user.name);
        if spec.cwd.is_none() {
            let home = if user.home.is_dir() {
                user.home.as_path()
            } else {
                Path::new("/")
            };
            cmd.current_dir(home);
        }
    }
    let result = setup.result.named();
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
        .env("JOBLOG_RESULT", result);
    if let Some(trigger) = setup.trigger {
        cmd.env("JOBLOG_TRIGGER_JOB_ID", trigger.by.job_id.to_string())
            .env("JOBLOG_TRIGGER_STATE", trigger.by.state.name());
        if let Some(path) = trigger.result() {
            cmd.env("JOBLOG_TRIGGER_RESULT", path.named());
        }
    }
    if let Some(params) = setup.params {
        // Set last: a variable of its env or secrets of the same name
        // does not hide a parameter.
        use std::os::fd::AsRawFd;
        cmd.envs(params.env.iter().map(|(k, v)| (k, v))).env(
            "JOBLOG_PARAMS",
            format!("/dev/fd/{}", params.file.as_raw_fd()),
        );
    }
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    prepare_child(&mut cmd, setup);
    cmd.spawn()
}

impl ResultPath<'_> {
    /// The path the job is given.
    fn named(self) -> std::ffi::OsString {
        match self {
            ResultPath::Path(path) => path.as_os_str().to_owned(),
            ResultPath::Fd(fd) => format!("/dev/fd/{fd}").into(),
        }
    }

    fn fd(self) -> Option<std::os::fd::RawFd> {
        match self {
            ResultPath::Fd(fd) => Some(fd),
            ResultPath::Path(_) => None,
        }
    }
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
/// stricter one for its own files), keeps its result file open across
/// exec, and switches it to `run_as`'s user, groups and supplementary
/// groups, with every capability the server had dropped. The
/// parent-death signal is set after the switch, which would clear it.
#[allow(unsafe_code)]
fn prepare_child(cmd: &mut Command, setup: &Setup<'_>) {
    use nix::unistd::{Gid, Uid};
    let server = nix::unistd::getpid();
    let umask = setup.umask.map(nix::sys::stat::Mode::from_bits_truncate);
    // The result file it writes and the triggering job's it reads.
    let inherited = [
        setup.result.fd(),
        setup
            .trigger
            .and_then(|t| t.result())
            .and_then(ResultPath::fd),
        setup.params.map(|p| {
            use std::os::fd::AsRawFd;
            p.file.as_raw_fd()
        }),
    ];
    // Made before the fork: nothing is allocated after it.
    let user = setup.run_as.map(|u| {
        let groups: Vec<Gid> = u.groups.iter().map(|g| Gid::from_raw(*g)).collect();
        (Uid::from_raw(u.uid), Gid::from_raw(u.gid), groups)
    });
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe calls are allowed: umask(2), fcntl(2),
    // setgroups(2), setresgid(2), setresuid(2), prctl(2) and getppid(2)
    // are system calls made straight (the child has one thread, so no
    // credential broadcast), and nothing here allocates or takes a lock.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(mask) = umask {
                nix::sys::stat::umask(mask);
            }
            for fd in inherited.into_iter().flatten() {
                let flags = nix::libc::fcntl(fd, nix::libc::F_GETFD);
                if flags < 0
                    || nix::libc::fcntl(fd, nix::libc::F_SETFD, flags & !nix::libc::FD_CLOEXEC) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some((uid, gid, groups)) = &user {
                nix::unistd::setgroups(groups)?;
                nix::unistd::setresgid(*gid, *gid, *gid)?;
                nix::unistd::setresuid(*uid, *uid, *uid)?;
                // A server given capabilities (not root) keeps them across
                // a switch between two other users: none reach the job.
                if nix::libc::prctl(
                    nix::libc::PR_CAP_AMBIENT,
                    nix::libc::PR_CAP_AMBIENT_CLEAR_ALL,
                    0,
                    0,
                    0,
                ) < 0
                {
                    let e = std::io::Error::last_os_error();
                    // Kernels before 4.3 have no ambient set: nothing to clear.
                    if e.raw_os_error() != Some(nix::libc::EINVAL) {
                        return Err(e);
                    }
                }
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
