//! Starting a job's process without copying the server: `clone` with
//! `CLONE_VM | CLONE_VFORK`, then only system calls in the child until
//! `execve`.
//!
//! Why not `fork`: a fork copies the page tables of the whole server (its
//! heap, every thread's stack) only for `execve` to throw the copy away,
//! and costs in proportion to the server's size; with the parent-death
//! signal set between fork and exec, the standard library must fork
//! (`docs/benchmarks.md`, `dispatch`). Here the child borrows the server's
//! memory until it execs, as `posix_spawn` does, and the calling thread
//! waits for that.
//!
//! The safety argument (also in ARCHITECTURE.md):
//! - Everything the child needs (paths, argv, envp, descriptors, ids) is
//!   made by the parent before the clone. The child allocates nothing,
//!   takes no lock, and writes no memory but its own stack, a slot of the
//!   `/bin/sh` argv made for it, and the one error word of [`ChildArgs`],
//!   which the parent reads after the clone returns: with `CLONE_VFORK`
//!   the calling thread is suspended until the child has exec'd or
//!   exited, and no other thread knows the arguments.
//! - Other threads of the server go on running; the child touches none of
//!   their data. It runs on a stack of its own, mapped for it.
//! - No handler of the server runs in the child: every signal is blocked
//!   in the calling thread across the clone, the child resets each caught
//!   signal to its default (ignored ones stay ignored, as `fork` + `exec`
//!   leave them, except SIGPIPE, which Rust's runtime ignores), and only
//!   then unblocks them all, just before `execve`.
//! - Credentials change through raw system calls: libc's `setresuid` and
//!   the like would, in a child that shares the server's memory, take it
//!   for the multi-threaded server and signal its threads.
//! - Nothing in the child can panic: no indexing, no arithmetic that can
//!   overflow, no formatting; a failure is an errno handed back.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::ptr;

use nix::libc;

/// The child's stack. Its frames are small (a few `sigaction`s); the
/// rest is headroom for an unoptimised build.
const CHILD_STACK: usize = 64 * 1024;

/// Where `execvp` looks when `PATH` is not set (glibc's `_CS_PATH`).
const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";

/// Signals are 1 to 64 on Linux.
const NSIG: c_int = 65;

/// A process to start, made ready before the clone.
#[derive(Debug)]
pub(crate) struct Launch {
    /// The paths `execve` is tried with in turn (`execvp`'s search of
    /// `PATH`, the job's own `PATH` when its environment sets one).
    candidates: Vec<CString>,
    argv: Vec<CString>,
    env: Vec<CString>,
    cwd: Option<CString>,
    umask: Option<libc::mode_t>,
    /// Descriptors the job inherits (made close-on-exec by the server).
    inherit: Vec<RawFd>,
    user: Option<Switch>,
}

/// The user a job is switched to.
#[derive(Debug, Clone)]
pub(crate) struct Switch {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
}

/// A started process: its pid, a pidfd when the kernel gives one (5.2
/// and later), and the reading ends of its stdout and stderr.
#[derive(Debug)]
pub(crate) struct Started {
    pub pid: libc::pid_t,
    pub pidfd: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

impl Launch {
    /// Prepares `program args…` with exactly the environment `env`.
    pub(crate) fn new<'a>(
        program: &OsStr,
        args: impl IntoIterator<Item = &'a OsStr>,
        env: impl IntoIterator<Item = (&'a OsStr, &'a OsStr)>,
    ) -> io::Result<Launch> {
        let program_bytes = program.as_bytes();
        if program_bytes.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty command"));
        }
        let mut argv = vec![c_string(program_bytes)?];
        for a in args {
            argv.push(c_string(a.as_bytes())?);
        }
        let mut path = None;
        let mut envp = Vec::new();
        for (k, v) in env {
            if k.as_bytes() == b"PATH" {
                path = Some(v.as_bytes());
            }
            let mut kv = Vec::with_capacity(k.len() + v.len() + 2);
            kv.extend_from_slice(k.as_bytes());
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            envp.push(c_string(&kv)?);
        }
        let candidates = candidates(program_bytes, path)
            .into_iter()
            .map(|c| c_string(&c))
            .collect::<io::Result<_>>()?;
        Ok(Launch {
            candidates,
            argv,
            env: envp,
            cwd: None,
            umask: None,
            inherit: Vec::new(),
            user: None,
        })
    }

    pub(crate) fn cwd(&mut self, dir: &OsStr) -> io::Result<&mut Self> {
        self.cwd = Some(c_string(dir.as_bytes())?);
        Ok(self)
    }

    pub(crate) fn umask(&mut self, mask: u32) -> &mut Self {
        self.umask = Some(mask as libc::mode_t);
        self
    }

    pub(crate) fn inherit(&mut self, fd: RawFd) -> &mut Self {
        self.inherit.push(fd);
        self
    }

    pub(crate) fn user(&mut self, user: Switch) -> &mut Self {
        self.user = Some(user);
        self
    }

    /// Starts the process in a process group of its own, stdin from
    /// `/dev/null`, stdout and stderr to new pipes, with the parent-death
    /// signal SIGKILL tied to the calling thread. Returns once the child
    /// has exec'd; an error of any step before (a missing program, a cwd
    /// it may not enter) is this call's error, and no process is left.
    pub(crate) fn start(&self) -> io::Result<Started> {
        let (out_r, out_w) = pipe()?;
        let (err_r, err_w) = pipe()?;
        let null = open_dev_null()?;
        // NULL-terminated arrays of pointers into `self`, which outlives
        // the child's use of them (it has exec'd when `clone` returns).
        let candidates = nul_terminated(&self.candidates);
        let argv = nul_terminated(&self.argv);
        let envp = nul_terminated(&self.env);
        // `/bin/sh FILE args…` for a file the kernel will not run
        // (`ENOEXEC`, a script without `#!`), as `execvp` does; the child
        // puts FILE in slot 1.
        let mut sh_argv: Vec<*const c_char> = Vec::with_capacity(argv.len() + 1);
        sh_argv.push(c"/bin/sh".as_ptr());
        sh_argv.push(ptr::null());
        sh_argv.extend(argv.iter().skip(1));
        let mut inherit = [-1 as RawFd; 4];
        for (slot, fd) in inherit.iter_mut().zip(&self.inherit) {
            *slot = *fd;
        }
        if self.inherit.len() > inherit.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "too many inherited descriptors",
            ));
        }
        let mut args = ChildArgs {
            candidates: candidates.as_ptr(),
            argv: argv.as_ptr(),
            sh_argv: sh_argv.as_mut_ptr(),
            envp: envp.as_ptr(),
            cwd: self.cwd.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
            stdin: null.as_raw_fd(),
            stdout: out_w.as_raw_fd(),
            stderr: err_w.as_raw_fd(),
            umask: self.umask,
            inherit,
            user: self.user.as_ref().map(|u| (u.uid, u.gid)),
            groups: self
                .user
                .as_ref()
                .map_or(ptr::null(), |u| u.groups.as_ptr()),
            ngroups: self.user.as_ref().map_or(0, |u| u.groups.len()),
            server: std::process::id() as libc::pid_t,
            err: 0,
        };
        let stack = Stack::new()?;
        let mut pidfd: c_int = -1;
        let pid;
        let clone_error;
        // SAFETY: see the module's safety argument. `child` only makes
        // system calls on `args`, which lives on this frame until `clone`
        // returns; CLONE_VFORK suspends this thread until then, and
        // `stack` is mapped for the child alone.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut before: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut before);
            pid = libc::clone(
                child,
                stack.top(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD,
                ptr::addr_of_mut!(args).cast::<c_void>(),
                ptr::addr_of_mut!(pidfd),
            );
            clone_error = io::Error::last_os_error();
            libc::pthread_sigmask(libc::SIG_SETMASK, &before, ptr::null_mut());
        }
        drop(stack);
        if pid < 0 {
            return Err(clone_error);
        }
        // SAFETY: the kernel wrote a new descriptor here, or left -1
        // (kernels before 5.2 ignore CLONE_PIDFD).
        let pidfd = (pidfd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(pidfd) });
        // SAFETY: the child wrote it, if at all, before exiting; it is gone.
        let err = unsafe { ptr::read_volatile(ptr::addr_of!(args.err)) };
        if err != 0 {
            // It exited (127) without exec'ing: reap it.
            reap(pid);
            return Err(io::Error::from_raw_os_error(err));
        }
        drop((out_w, err_w, null));
        Ok(Started {
            pid,
            pidfd,
            stdout: out_r,
            stderr: err_r,
        })
    }
}

/// What the child reads (and the one word it writes, `err`).
struct ChildArgs {
    candidates: *const *const c_char,
    argv: *const *const c_char,
    sh_argv: *mut *const c_char,
    envp: *const *const c_char,
    cwd: *const c_char,
    stdin: RawFd,
    stdout: RawFd,
    stderr: RawFd,
    umask: Option<libc::mode_t>,
    inherit: [RawFd; 4],
    user: Option<(u32, u32)>,
    groups: *const u32,
    ngroups: usize,
    server: libc::pid_t,
    /// The errno of the step that failed; 0 while none did.
    err: c_int,
}

/// The child: sets itself up, then execs; on failure records the errno
/// and returns, which exits it.
extern "C" fn child(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the parent's `ChildArgs`, alive and untouched by
    // anyone else until this child has exec'd or exited.
    unsafe {
        let args = &mut *arg.cast::<ChildArgs>();
        let err = set_up_and_exec(args);
        ptr::write_volatile(
            ptr::addr_of_mut!(args.err),
            if err == 0 { libc::EINVAL } else { err },
        );
    }
    127
}

/// Only system calls from here: see the module's safety argument.
/// Returns the errno of the step that failed (execve returns only then).
unsafe fn set_up_and_exec(a: &mut ChildArgs) -> c_int {
    // Handlers of the server must not run here: each caught signal back
    // to its default while all are blocked.
    for sig in 1..NSIG {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        let mut old: libc::sigaction = std::mem::zeroed();
        // glibc's own signals (32, 33) answer EINVAL: not ours to touch.
        if libc::sigaction(sig, ptr::null(), &mut old) != 0 {
            continue;
        }
        let keep = old.sa_sigaction == libc::SIG_DFL
            || (old.sa_sigaction == libc::SIG_IGN && sig != libc::SIGPIPE);
        if !keep {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            if libc::sigaction(sig, &dfl, ptr::null_mut()) != 0 {
                return errno();
            }
        }
    }
    for (fd, target) in [(a.stdin, 0), (a.stdout, 1), (a.stderr, 2)] {
        let r = if fd == target {
            clear_cloexec(fd)
        } else {
            libc::dup2(fd, target)
        };
        if r < 0 {
            return errno();
        }
    }
    // Its own group, so that cancel and timeout reach every process the
    // job starts, and a Ctrl-C at the server's terminal reaches none.
    if libc::setpgid(0, 0) < 0 {
        return errno();
    }
    if let Some(mask) = a.umask {
        libc::umask(mask);
    }
    for fd in a.inherit {
        if fd >= 0 && clear_cloexec(fd) < 0 {
            return errno();
        }
    }
    if let Some((uid, gid)) = a.user {
        if libc::syscall(libc::SYS_setgroups, a.ngroups, a.groups) < 0
            || libc::syscall(libc::SYS_setresgid, gid, gid, gid) < 0
            || libc::syscall(libc::SYS_setresuid, uid, uid, uid) < 0
        {
            return errno();
        }
        // A server given capabilities (not root) keeps them across a
        // switch between two other users: none reach the job. Kernels
        // before 4.3 have no ambient set (EINVAL): nothing to clear.
        if libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        ) < 0
            && errno() != libc::EINVAL
        {
            return errno();
        }
    }
    // Entered as the job's user, after the switch: a server that is not
    // root (the packaged unit's) cannot enter the jobs' user's home, and
    // a job must not start where its user may not go.
    if !a.cwd.is_null() && libc::chdir(a.cwd) < 0 {
        return errno();
    }
    // After the switch, which would clear it.
    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) < 0 {
        return errno();
    }
    // The server may have died before the line above: then the signal
    // will never come, and the job must not start.
    if libc::getppid() != a.server {
        return libc::ESRCH;
    }
    let mut none: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut none);
    if libc::sigprocmask(libc::SIG_SETMASK, &none, ptr::null_mut()) < 0 {
        return errno();
    }
    // `execvp`'s search, over paths made by the parent.
    let mut eacces = false;
    let mut candidate = a.candidates;
    while !(*candidate).is_null() {
        libc::execve(*candidate, a.argv, a.envp);
        match errno() {
            libc::ENOEXEC => {
                *a.sh_argv.add(1) = *candidate;
                libc::execve(*a.sh_argv, a.sh_argv.cast_const(), a.envp);
                return errno();
            }
            libc::EACCES => eacces = true,
            libc::ENOENT | libc::ESTALE | libc::ENOTDIR | libc::ENODEV | libc::ETIMEDOUT => {}
            e => return e,
        }
        candidate = candidate.add(1);
    }
    if eacces {
        libc::EACCES
    } else {
        libc::ENOENT
    }
}

unsafe fn clear_cloexec(fd: RawFd) -> c_int {
    let flags = libc::fcntl(fd, libc::F_GETFD);
    if flags < 0 {
        return flags;
    }
    libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC)
}

unsafe fn errno() -> c_int {
    *libc::__errno_location()
}

/// `execvp`'s candidates for `program`: itself when it names a path,
/// else each directory of `path` (an empty entry is the cwd).
fn candidates(program: &[u8], path: Option<&[u8]>) -> Vec<Vec<u8>> {
    if program.contains(&b'/') {
        return vec![program.to_vec()];
    }
    path.unwrap_or(DEFAULT_PATH)
        .split(|b| *b == b':')
        .map(|dir| {
            if dir.is_empty() {
                program.to_vec()
            } else {
                let mut full = dir.to_vec();
                if !dir.ends_with(b"/") {
                    full.push(b'/');
                }
                full.extend_from_slice(program);
                full
            }
        })
        .collect()
}

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in provided data",
        )
    })
}

fn nul_terminated(strings: &[CString]) -> Vec<*const c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(ptr::null()))
        .collect()
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?)
}

fn open_dev_null() -> io::Result<OwnedFd> {
    Ok(std::fs::File::open("/dev/null")?.into())
}

/// Waits for a child that has exited already (it failed before exec).
fn reap(pid: libc::pid_t) {
    loop {
        // SAFETY: a plain system call on our own child.
        let r = unsafe { libc::waitpid(pid, ptr::null_mut(), 0) };
        if r >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// The child's stack, mapped for one start.
struct Stack {
    base: *mut c_void,
}

impl Stack {
    fn new() -> io::Result<Stack> {
        // SAFETY: an anonymous private mapping, unmapped in Drop.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                CHILD_STACK,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Stack { base })
    }

    /// Stacks grow down on every architecture joblog builds for.
    fn top(&self) -> *mut c_void {
        // SAFETY: one past the end of the mapping, 16-byte aligned (a page).
        unsafe { self.base.cast::<u8>().add(CHILD_STACK).cast() }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer used (the child
        // has exec'd or exited).
        unsafe {
            libc::munmap(self.base, CHILD_STACK);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;

    fn env() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        std::env::vars_os().collect()
    }

    fn launch(argv: &[&str], env: &[(std::ffi::OsString, std::ffi::OsString)]) -> Launch {
        Launch::new(
            argv[0].as_ref(),
            argv[1..].iter().map(|a| a.as_ref()),
            env.iter().map(|(k, v)| (k.as_os_str(), v.as_os_str())),
        )
        .unwrap()
    }

    /// Runs it to its end: (stdout, raw wait status).
    fn run(launch: &Launch) -> (String, i32) {
        let started = launch.start().unwrap();
        drop(started.stderr);
        let mut out = String::new();
        std::fs::File::from(started.stdout)
            .read_to_string(&mut out)
            .unwrap();
        let mut status = 0;
        // SAFETY: our own child.
        assert_eq!(
            unsafe { libc::waitpid(started.pid, &mut status, 0) },
            started.pid
        );
        (out, status)
    }

    #[test]
    fn the_search_follows_execvp() {
        assert_eq!(candidates(b"./x", Some(b"/bin")), vec![b"./x".to_vec()]);
        assert_eq!(
            candidates(b"sh", Some(b"/a:/b/::/c")),
            vec![
                b"/a/sh".to_vec(),
                b"/b/sh".to_vec(),
                b"sh".to_vec(),
                b"/c/sh".to_vec()
            ]
        );
        assert_eq!(
            candidates(b"sh", None),
            vec![b"/bin/sh".to_vec(), b"/usr/bin/sh".to_vec()]
        );
    }

    #[test]
    fn a_program_that_is_not_there_is_the_starts_error() {
        let e = launch(&["joblog-no-such-program"], &env())
            .start()
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
        // The job's PATH is searched, not the server's.
        let e = launch(
            &["sh", "-c", "true"],
            &[("PATH".into(), "/nonexistent".into())],
        )
        .start()
        .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
        let mut l = launch(&["true"], &env());
        l.cwd("/nonexistent/dir".as_ref()).unwrap();
        assert_eq!(l.start().unwrap_err().kind(), io::ErrorKind::NotFound);
        let nul = Launch::new("a\0b".as_ref(), [], []).unwrap_err();
        assert_eq!(nul.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn a_script_without_an_interpreter_line_runs_under_sh() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("plain");
        std::fs::write(&script, "echo \"ran $1\"\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut path = dir.path().as_os_str().to_owned();
        path.push(":/bin:/usr/bin");
        let (out, status) = run(&launch(&["plain", "x"], &[("PATH".into(), path)]));
        assert_eq!((out.as_str(), status), ("ran x\n", 0));
    }

    #[test]
    fn the_child_starts_clean_in_its_own_group_with_what_it_was_given() {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("given")).unwrap();
        let fd = file.as_raw_fd();
        // Blocked in this thread: a job must not start with it blocked.
        let mut usr1: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: plain calls on a local set, this thread's mask.
        unsafe {
            libc::sigemptyset(&mut usr1);
            libc::sigaddset(&mut usr1, libc::SIGUSR1);
            libc::pthread_sigmask(libc::SIG_BLOCK, &usr1, ptr::null_mut());
        }
        let script = format!(
            "set -e; s=$(cat /proc/$$/stat); set -- ${{s##*)}}; echo \"pgrp=$(( $3 == $$ ))\"; \
             grep -E '^Sig(Blk|Ign)' /proc/$$/status; umask; pwd; \
             test -e /dev/fd/{fd} && echo inherited; echo \"env=$JOBLOG_TEST_VALUE\""
        );
        let mut l = launch(
            &["sh", "-c", &script],
            &[
                ("PATH".into(), "/bin:/usr/bin".into()),
                ("JOBLOG_TEST_VALUE".into(), "a b $c".into()),
            ],
        );
        l.cwd(dir.path().as_os_str())
            .unwrap()
            .umask(0o027)
            .inherit(fd);
        let (out, status) = run(&l);
        // SAFETY: as above.
        unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &usr1, ptr::null_mut()) };
        assert_eq!(status, 0, "{out}");
        let dir = dir.path().canonicalize().unwrap();
        let lines: Vec<&str> = out.lines().collect();
        let ignored = lines[2].strip_prefix("SigIgn:\t").unwrap();
        let ignored = u64::from_str_radix(ignored, 16).unwrap();
        // SIGPIPE (13), which Rust's runtime ignores, is the job's default
        // again (what the server inherited ignored stays so); nothing is
        // blocked.
        assert_eq!(ignored & (1 << (libc::SIGPIPE - 1)), 0, "{out}");
        assert_eq!(
            [lines[0], lines[1], lines[3], lines[4], lines[5], lines[6]],
            [
                "pgrp=1",
                "SigBlk:\t0000000000000000",
                "0027",
                &dir.display().to_string(),
                "inherited",
                "env=a b $c"
            ],
            "{out}"
        );
    }

    /// The working directory is entered with the job's rights: not into
    /// a directory its user may not enter (where root, the server, may),
    /// and into its own one.
    #[test]
    fn the_cwd_is_entered_as_the_jobs_user() {
        // SAFETY: a plain system call.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("note: the_cwd_is_entered_as_the_jobs_user SKIPPED — it needs root (to switch to nobody)");
            return;
        }
        const NOBODY: u32 = 65534;
        let as_nobody = |dir: &std::path::Path| {
            let mut l = launch(&["sh", "-c", "pwd"], &env());
            l.cwd(dir.as_os_str()).unwrap().user(Switch {
                uid: NOBODY,
                gid: NOBODY,
                groups: Vec::new(),
            });
            l
        };
        let closed = tempfile::tempdir().unwrap();
        std::fs::set_permissions(closed.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let e = as_nobody(closed.path()).start().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
        let own = tempfile::tempdir().unwrap();
        std::os::unix::fs::chown(own.path(), Some(NOBODY), Some(NOBODY)).unwrap();
        let (out, status) = run(&as_nobody(own.path()));
        assert_eq!((out.trim(), status), (own.path().to_str().unwrap(), 0));
    }

    #[test]
    fn the_child_dies_with_the_thread_that_started_it() {
        let pid = std::thread::spawn(|| launch(&["sleep", "30"], &env()).start().unwrap().pid)
            .join()
            .unwrap();
        let mut status = 0;
        // SAFETY: our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFSIGNALED(status), "{status:#x}");
        assert_eq!(libc::WTERMSIG(status), libc::SIGKILL);
    }
}
