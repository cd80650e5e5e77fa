//! A started job process as the engine's tasks see it: its output pipes
//! and its exit, awaited through a pidfd (or, on kernels without one, on
//! SIGCHLD), reaped by pid only, never by a wait for any child.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use nix::libc;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::unix::pipe;

use super::launch::Started;

/// A running job's main process. Dropped before it was waited for, it is
/// killed (SIGKILL) and reaped in the background.
#[derive(Debug)]
pub(crate) struct JobProcess {
    pid: libc::pid_t,
    /// Taken only by `Drop`, for the background reaper.
    exit: Option<Exit>,
    status: Option<ExitStatus>,
    pub stdout: Option<pipe::Receiver>,
    pub stderr: Option<pipe::Receiver>,
}

/// How its exit is noticed.
#[derive(Debug)]
enum Exit {
    /// Readable once the process has exited (Linux 5.2 and later).
    Pidfd(AsyncFd<OwnedFd>),
    /// Every SIGCHLD of the server, each followed by a look at this pid.
    Sigchld(tokio::signal::unix::Signal),
}

impl JobProcess {
    /// Takes over a process `Launch::start` made; must be called within
    /// the runtime. On failure the process is killed and reaped.
    pub(crate) fn new(started: Started) -> io::Result<JobProcess> {
        Self::take(started, true)
    }

    /// `new`, with the pidfd left unused when not `pidfd` (as on a kernel
    /// without pidfds).
    fn take(started: Started, use_pidfd: bool) -> io::Result<JobProcess> {
        let Started {
            pid,
            pidfd,
            stdout,
            stderr,
        } = started;
        let taken = (|| {
            let out = pipe::Receiver::from_owned_fd(stdout)?;
            let err = pipe::Receiver::from_owned_fd(stderr)?;
            let pidfd = if use_pidfd {
                pidfd.or_else(|| pidfd_open(pid))
            } else {
                None
            };
            Ok((out, err, Exit::of(pidfd)?))
        })();
        match taken {
            Ok((stdout, stderr, exit)) => Ok(JobProcess {
                pid,
                exit: Some(exit),
                status: None,
                stdout: Some(stdout),
                stderr: Some(stderr),
            }),
            Err(e) => {
                kill_and_reap(pid);
                Err(e)
            }
        }
    }

    pub(crate) fn id(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// Its exit status, once it has exited. Cancel-safe: dropping the
    /// future loses nothing.
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        let exit = self
            .exit
            .as_mut()
            .ok_or_else(|| io::Error::other("the process was handed to the reaper"))?;
        let status = exited(self.pid, exit).await?;
        self.status = Some(status);
        Ok(status)
    }
}

/// Waits for `pid` to exit and reaps it. Nothing is awaited between the
/// reap and the answer, so a future dropped never loses a status.
async fn exited(pid: libc::pid_t, exit: &mut Exit) -> io::Result<ExitStatus> {
    loop {
        if let Some(status) = try_reap(pid)? {
            return Ok(status);
        }
        match exit {
            Exit::Pidfd(fd) => {
                let mut ready = fd.readable().await?;
                // Looked at again above; a spurious wake waits anew.
                ready.clear_ready();
            }
            Exit::Sigchld(signals) => {
                signals.recv().await;
            }
        }
    }
}

impl Exit {
    fn of(pidfd: Option<OwnedFd>) -> io::Result<Exit> {
        Ok(match pidfd {
            // SAFETY: an open descriptor it owns, never replaced.
            Some(fd) => {
                Exit::Pidfd(unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE)? })
            }
            // Made before the first look at the pid: no exit is missed.
            None => Exit::Sigchld(tokio::signal::unix::signal(
                tokio::signal::unix::SignalKind::child(),
            )?),
        })
    }
}

impl Drop for JobProcess {
    fn drop(&mut self) {
        if self.status.is_some() || matches!(try_reap(self.pid), Ok(Some(_)) | Err(_)) {
            return;
        }
        kill(self.pid);
        let pid = self.pid;
        match (self.exit.take(), tokio::runtime::Handle::try_current()) {
            (Some(mut exit), Ok(runtime)) => {
                runtime.spawn(async move {
                    let _ = exited(pid, &mut exit).await;
                });
            }
            _ => kill_and_reap(pid),
        }
    }
}

/// `waitpid(pid, WNOHANG)`: the status once it has exited.
fn try_reap(pid: libc::pid_t) -> io::Result<Option<ExitStatus>> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: a plain system call on our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        match r {
            0 => return Ok(None),
            r if r == pid => return Ok(Some(ExitStatus::from_raw(status))),
            _ => {
                let e = io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EINTR) {
                    return Err(e);
                }
            }
        }
    }
}

fn pidfd_open(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: a plain system call; a non-negative answer is a new
    // descriptor we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: see above.
    Some(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
}

fn kill(pid: libc::pid_t) {
    // Unreaped, so the pid is still this process's.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
}

fn kill_and_reap(pid: libc::pid_t) {
    kill(pid);
    let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn start(script: &str) -> Started {
        let env: Vec<_> = std::env::vars_os().collect();
        super::super::launch::Launch::new(
            "sh".as_ref(),
            ["-c".as_ref(), script.as_ref()],
            env.iter().map(|(k, v)| (k.as_os_str(), v.as_os_str())),
        )
        .unwrap()
        .start()
        .unwrap()
    }

    async fn outputs(process: &mut JobProcess) -> (String, String) {
        let (mut out, mut err) = (String::new(), String::new());
        let (mut o, mut e) = (
            process.stdout.take().unwrap(),
            process.stderr.take().unwrap(),
        );
        o.read_to_string(&mut out).await.unwrap();
        e.read_to_string(&mut err).await.unwrap();
        (out, err)
    }

    #[tokio::test]
    async fn pipes_and_exit_status_through_a_pidfd_or_sigchld() {
        for pidfd in [true, false] {
            let mut p = JobProcess::take(start("echo out; echo err >&2; exit 3"), pidfd).unwrap();
            assert_eq!(matches!(p.exit, Some(Exit::Pidfd(_))), pidfd);
            assert_eq!(outputs(&mut p).await, ("out\n".into(), "err\n".into()));
            assert_eq!(p.wait().await.unwrap().code(), Some(3));
            // Asked again: the same answer, nothing reaped twice.
            assert_eq!(p.wait().await.unwrap().code(), Some(3));
            let mut p = JobProcess::take(start("kill -TERM $$"), pidfd).unwrap();
            assert_eq!(p.wait().await.unwrap().signal(), Some(libc::SIGTERM));
        }
    }

    #[tokio::test]
    async fn a_process_dropped_unawaited_is_killed_and_reaped() {
        let p = JobProcess::new(start("exec sleep 30")).unwrap();
        let stat = format!("/proc/{}/stat", p.id());
        drop(p);
        // Gone from /proc once reaped (a zombie is still listed there).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::path::Path::new(&stat).exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "{stat} is still there"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
}
