//! Starting a job's process in its own process group, and signalling the
//! whole group.

mod child;
mod launch;

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::AsRawFd;
use std::path::Path;

use joblog_core::{JobId, JobSpec};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

pub(crate) use child::JobProcess;
use launch::{Launch, Switch};

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

/// Runs `f`, which blocks its thread briefly (a process start), telling a
/// multi-threaded runtime so that the worker's other tasks move to
/// another thread meanwhile; on a current-thread runtime (tests), just
/// runs it.
pub(crate) fn off_workers<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Starts the job's main process (see `launch` for how, and why not
/// `fork`). Must be called within the runtime.
pub(crate) fn spawn(
    id: JobId,
    marks: &Marks<'_>,
    spec: &JobSpec,
    secrets: &BTreeMap<String, String>,
    setup: &Setup<'_>,
) -> std::io::Result<JobProcess> {
    let (program, args) = spec
        .command
        .split_first()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command"))?;
    let env = environment(id, marks, spec, secrets, setup);
    let mut launch = Launch::new(
        program.as_ref(),
        args.iter().map(|a| a.as_ref()),
        env.iter().map(|(k, v)| (k.as_os_str(), v.as_os_str())),
    )?;
    let mut cwd = spec.cwd.as_deref().map(Path::new);
    if let Some(user) = setup.run_as {
        // Its own, not the server's (which a job could otherwise take
        // for where to write).
        if cwd.is_none() {
            cwd = Some(if user.home.is_dir() {
                user.home.as_path()
            } else {
                Path::new("/")
            });
        }
        launch.user(Switch {
            uid: user.uid,
            gid: user.gid,
            groups: user.groups.clone(),
        });
    }
    if let Some(dir) = cwd {
        launch.cwd(dir.as_os_str())?;
    }
    if let Some(mask) = setup.umask {
        launch.umask(mask);
    }
    // The result file it writes, the triggering job's it reads, and its
    // parameters.
    for fd in [
        setup.result.fd(),
        setup
            .trigger
            .and_then(|t| t.result())
            .and_then(ResultPath::fd),
        setup.params.map(|p| p.file.as_raw_fd()),
    ]
    .into_iter()
    .flatten()
    {
        launch.inherit(fd);
    }
    JobProcess::new(launch.start()?)
}

/// The job's environment: the server's, without what is the server's
/// alone, then (later ones win) `run_as`'s user, the job's `env`, its
/// secrets, joblog's own variables, and its parameters.
fn environment(
    id: JobId,
    marks: &Marks<'_>,
    spec: &JobSpec,
    secrets: &BTreeMap<String, String>,
    setup: &Setup<'_>,
) -> BTreeMap<OsString, OsString> {
    let mut env: BTreeMap<OsString, OsString> = std::env::vars_os()
        .filter(|(k, _)| !SERVER_ONLY_ENV.iter().any(|s| k == s))
        .collect();
    let mut set = |k: &str, v: &OsStr| {
        env.insert(k.into(), v.to_owned());
    };
    if let Some(user) = setup.run_as {
        set("HOME", user.home.as_os_str());
        set("USER", user.name.as_ref());
        set("LOGNAME", user.name.as_ref());
    }
    for (k, v) in spec.env.iter().chain(secrets) {
        set(k, v.as_ref());
    }
    set("JOBLOG_JOB_ID", id.to_string().as_ref());
    // Only this job's processes know it: a process of another job that
    // names this job's id is not taken for this job's.
    set("JOBLOG_JOB_KEY", marks.job_key.as_ref());
    // Marks the job's processes as this engine's, for `orphans`.
    set("JOBLOG_INSTANCE", marks.instance.as_ref());
    // Marks them as this node's on this store, for the sweep at the next
    // start should this server die without stopping them.
    set("JOBLOG_SUPERVISOR", marks.supervisor.as_ref());
    set("JOBLOG_RESULT", &setup.result.named());
    if let Some(trigger) = setup.trigger {
        set(
            "JOBLOG_TRIGGER_JOB_ID",
            trigger.by.job_id.to_string().as_ref(),
        );
        set("JOBLOG_TRIGGER_STATE", trigger.by.state.name().as_ref());
        if let Some(path) = trigger.result() {
            set("JOBLOG_TRIGGER_RESULT", &path.named());
        }
    }
    if let Some(params) = setup.params {
        // Set last: a variable of its env or secrets of the same name
        // does not hide a parameter.
        for (k, v) in &params.env {
            set(k, v.as_ref());
        }
        set(
            "JOBLOG_PARAMS",
            format!("/dev/fd/{}", params.file.as_raw_fd()).as_ref(),
        );
    }
    env
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

/// Sends `signal` to the job's process group. Errors (the group is already
/// gone) are expected and ignored.
pub(crate) fn signal_group(pgid: Option<u32>, signal: Signal) {
    if let Some(pgid) = pgid.and_then(|p| i32::try_from(p).ok()) {
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
}
