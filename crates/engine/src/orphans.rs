//! Processes that left their job behind: a daemon that double-forks and
//! calls `setsid` leaves the job's process group, so killing the group does
//! not reach it. The server is made a child subreaper: such a process,
//! once its parent is gone, becomes a child of the server instead of init,
//! where a sweep finds it by the marks every job's environment carries
//! (`JOBLOG_INSTANCE`, this engine's, `JOBLOG_JOB_ID` and `JOBLOG_JOB_KEY`,
//! 128 random bits made for each job) and kills it once its job is no
//! longer running. The key makes the claim: a daemon of one job that
//! names another running job's id (ids are no secret) without that job's
//! key is killed with its own job.
//!
//! A server that dies without stopping its jobs (`kill -9`, a crash) has
//! the kernel kill each job's main process (`process::die_with_server`);
//! what those had started is found at the next start of the same node on
//! the same store by a second mark, `JOBLOG_SUPERVISOR`, and killed
//! ([`Sweeper::kill_leftovers`]).
//!
//! An orphan that exits before a sweep sees it alive (the shell's
//! `(cmd &)`, a helper killed with its group) can no longer be told by its
//! marks: a zombie's environment is gone. Where the process is the
//! engine's alone (`EngineConfig::reap_all_children`, which `joblog serve`
//! sets), every zombie child but a job's main process is reaped, at each
//! SIGCHLD; otherwise (tests, with several engines and children of their
//! own in one process) only those seen marked.
//!
//! Invariants: only children of this process that carry this engine's mark
//! are killed, so other engines in the same process (tests) and anything
//! else it started are left alone; a running job's processes are never
//! touched, nor a job's main process (their jobs' tasks wait for those); zombies are
//! reaped by pid, never with a wait for any child, which would steal a
//! main process's exit status from its job's task.

use std::collections::{HashMap, HashSet};

use joblog_core::JobId;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;

/// Makes this process the reaper of its orphaned descendants. Linux only;
/// elsewhere (or if refused) escaped daemons are not tracked, and the
/// server says so.
pub(crate) fn become_subreaper() {
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        tracing::warn!(error = %e, "cannot become a child subreaper: daemons that escape their job's process group will not be stopped");
    }
}

/// A child of this process, as `/proc` describes it.
#[derive(Debug, PartialEq, Eq)]
struct Child {
    pid: i32,
    zombie: bool,
}

/// Finds and ends the processes of this engine's jobs that outlived them.
#[derive(Debug)]
pub(crate) struct Sweeper {
    /// This engine's mark, `JOBLOG_INSTANCE` in its jobs' environment.
    instance: String,
    /// This node's mark on its store, `JOBLOG_SUPERVISOR`: the same for
    /// every process of the node, before and after a restart.
    supervisor: String,
    /// Children seen carrying the mark: once they die, theirs to reap.
    marked: std::sync::Mutex<HashSet<i32>>,
}

impl Sweeper {
    /// `node` and `store` (its description, without secrets) make the
    /// supervisor mark; `node` is empty where the store has one node at a
    /// time.
    pub fn new(node: &str, store: &str) -> Sweeper {
        use std::hash::{BuildHasher, Hasher};
        // Seeded afresh for each `RandomState`: enough to tell engines
        // apart, not a secret.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        Sweeper {
            instance: format!("{:016x}", h.finish()),
            supervisor: supervisor_mark(node, store),
            marked: std::sync::Mutex::new(HashSet::new()),
        }
    }

    /// The value of `JOBLOG_INSTANCE` for this engine's jobs.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// The value of `JOBLOG_SUPERVISOR` for this node's jobs.
    pub fn supervisor(&self) -> &str {
        &self.supervisor
    }

    /// Kills every process on this machine left by an earlier server of
    /// this node on this store (its supervisor mark with another instance
    /// mark), wherever it was reparented. Called at start, before any job
    /// of this engine runs. Returns the pids it killed.
    pub fn kill_leftovers(&self) -> Vec<i32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let me = std::process::id() as i32;
        let mut killed = Vec::new();
        for pid in entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()) {
            if pid == me {
                continue;
            }
            // Another user's processes are unreadable, and not ours.
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            if is_leftover(&environ, &self.supervisor, &self.instance)
                && kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok()
            {
                killed.push(pid);
            }
        }
        killed
    }

    /// Kills every marked child of this process that is not a job's main
    /// process and whose job is not running, and reaps the marked ones
    /// that died. Returns how many it killed.
    ///
    /// `running` gives the running jobs (with their keys) and their main
    /// processes' pids. It
    /// is asked after the children are read, and must answer under the
    /// same lock a job's spawn and the recording of its pid are made
    /// under: then a main process seen here is always known as one, and is
    /// never reaped here (its job's task waits for it).
    ///
    /// With `reap_all`, every zombie child but a main process is reaped,
    /// marked or not (see the module documentation).
    pub fn sweep(
        &self,
        reap_all: bool,
        running: impl FnOnce() -> (HashMap<JobId, String>, HashSet<u32>),
    ) -> usize {
        let me = std::process::id() as i32;
        let mut marked = self.marked.lock().unwrap_or_else(|p| p.into_inner());
        let children = children_of(me);
        let seen: Vec<(i32, bool, Option<Mark>)> = children
            .iter()
            .map(|c| {
                let job = (!c.zombie).then(|| job_of(c.pid, &self.instance)).flatten();
                (c.pid, c.zombie, job)
            })
            .collect();
        let (jobs, main_pids) = running();
        let mut killed = 0;
        for (pid, zombie, job) in seen {
            if main_pids.contains(&(pid as u32)) {
                continue;
            }
            if zombie {
                if marked.remove(&pid) || reap_all {
                    let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
                }
                continue;
            }
            let Some((job, key)) = job else { continue };
            marked.insert(pid);
            if jobs.get(&job).is_some_and(|k| k.as_bytes() == key) {
                continue;
            }
            if kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() {
                killed += 1;
                tracing::warn!(pid, job, "killed a process that outlived its job");
            }
        }
        // Forget pids that are gone (reaped, or no longer ours).
        let alive: HashSet<i32> = children.iter().map(|c| c.pid).collect();
        marked.retain(|p| alive.contains(p));
        killed
    }
}

/// The children of `parent`: the pids its threads' `children` files list
/// (a file per thread of the server, however many processes the machine
/// runs: a sweep follows every job's end), each checked in its own
/// `/proc/<pid>/stat`. A kernel without those files (no
/// `CONFIG_PROC_CHILDREN`) has every process's `stat` read instead.
fn children_of(parent: i32) -> Vec<Child> {
    let listed = listed_children(parent);
    let candidates: Box<dyn Iterator<Item = i32>> = match listed {
        Some(pids) => Box::new(pids.into_iter()),
        None => {
            let Ok(entries) = std::fs::read_dir("/proc") else {
                return Vec::new();
            };
            Box::new(entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()))
        }
    };
    candidates
        .filter_map(|pid| {
            // Read again: a listed child may have been reaped (and its
            // pid reused) since.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (state, ppid) = parse_stat(&stat)?;
            (ppid == parent).then_some(Child {
                pid,
                zombie: state == 'Z',
            })
        })
        .collect()
}

/// The pids in `/proc/<parent>/task/<tid>/children` of each of its
/// threads (zombies included: they stay their parent's until reaped), or
/// `None` where the kernel has no such files.
fn listed_children(parent: i32) -> Option<Vec<i32>> {
    let tasks = std::fs::read_dir(format!("/proc/{parent}/task")).ok()?;
    let mut pids = Vec::new();
    for task in tasks.flatten() {
        let path = task.path().join("children");
        match std::fs::read_to_string(&path) {
            Ok(text) => pids.extend(
                text.split_ascii_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            ),
            // The thread ended since the directory was read.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && task.path().exists() => {
                return None
            }
            Err(_) => {}
        }
    }
    pids.sort_unstable();
    pids.dedup();
    Some(pids)
}

/// `(state, ppid)` of a `/proc/<pid>/stat` line. The command name may hold
/// spaces and parentheses, so the fields are read after its last `)`.
fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// The job a process claims to be of, and the key it shows for it.
type Mark = (JobId, Vec<u8>);

/// A new job's key: 128 random bits, as hex.
pub(crate) fn job_key() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness to be had (never seen): keyed hashes of the time
        // and a counter are still no job id a process could guess.
        use std::hash::{BuildHasher, Hasher};
        for half in bytes.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            half.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The job a process claims to be of and the key it carries, if it
/// carries `instance`'s mark, from its environment (as it was when it was
/// executed).
fn job_of(pid: i32, instance: &str) -> Option<Mark> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    mark_in(&environ, instance)
}

/// Whether a process's environment marks it as a job's of `supervisor`
/// started by another engine than `instance`.
fn is_leftover(environ: &[u8], supervisor: &str, instance: &str) -> bool {
    let mut same_node = false;
    let mut same_engine = false;
    for var in environ.split(|b| *b == 0) {
        if let Some(v) = var.strip_prefix(b"JOBLOG_SUPERVISOR=") {
            same_node = v == supervisor.as_bytes();
        } else if let Some(v) = var.strip_prefix(b"JOBLOG_INSTANCE=") {
            same_engine = v == instance.as_bytes();
        }
    }
    same_node && !same_engine
}

/// FNV-1a of the node's name and store: stable across restarts and
/// versions (std's hashers promise neither), and naming neither.
fn supervisor_mark(node: &str, store: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in node.bytes().chain([0]).chain(store.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn mark_in(environ: &[u8], instance: &str) -> Option<Mark> {
    let mut ours = false;
    let mut job = None;
    let mut key = Vec::new();
    for var in environ.split(|b| *b == 0) {
        if let Some(v) = var.strip_prefix(b"JOBLOG_INSTANCE=") {
            ours = v == instance.as_bytes();
        } else if let Some(v) = var.strip_prefix(b"JOBLOG_JOB_ID=") {
            job = std::str::from_utf8(v).ok().and_then(|v| v.parse().ok());
        } else if let Some(v) = var.strip_prefix(b"JOBLOG_JOB_KEY=") {
            key = v.to_vec();
        }
    }
    job.filter(|_| ours).map(|job| (job, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job_id_in(environ: &[u8], instance: &str) -> Option<JobId> {
        mark_in(environ, instance).map(|(job, _)| job)
    }

    #[test]
    fn the_children_files_name_the_children_a_scan_of_proc_finds() {
        let me = std::process::id() as i32;
        let mut kids: Vec<std::process::Child> = (0..3)
            .map(|_| {
                std::process::Command::new("sleep")
                    .arg("30")
                    .spawn()
                    .unwrap()
            })
            .collect();
        // One exits and stays a zombie until reaped: it is still a child.
        let mut done = std::process::Command::new("true").spawn().unwrap();
        let done_pid = done.id() as i32;
        std::thread::sleep(std::time::Duration::from_millis(200));
        let listed = listed_children(me).expect("this kernel lists children");
        for k in &kids {
            assert!(listed.contains(&(k.id() as i32)), "{listed:?}");
        }
        let found = children_of(me);
        assert!(
            found.contains(&Child {
                pid: done_pid,
                zombie: true
            }),
            "{found:?}"
        );
        let scanned: Vec<i32> = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|s| parse_stat(&s))
                    .is_some_and(|(_, ppid)| ppid == me)
            })
            .collect();
        for pid in [done_pid]
            .into_iter()
            .chain(kids.iter().map(|k| k.id() as i32))
        {
            assert!(scanned.contains(&pid) && found.iter().any(|c| c.pid == pid));
        }
        for k in &mut kids {
            k.kill().unwrap();
            k.wait().unwrap();
        }
        done.wait().unwrap();
    }

    #[test]
    fn stat_lines_are_read_after_the_command_name() {
        assert_eq!(parse_stat("42 (sh) S 7 42 42 0"), Some(('S', 7)));
        assert_eq!(parse_stat("43 (a) b) (c) Z 9 1"), Some(('Z', 9)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn the_job_id_is_read_only_with_this_engines_mark() {
        let env = b"A=1\0JOBLOG_JOB_ID=17\0JOBLOG_INSTANCE=ab\0B=2\0";
        assert_eq!(job_id_in(env, "ab"), Some(17));
        assert_eq!(job_id_in(env, "cd"), None, "another engine's");
        assert_eq!(job_id_in(b"JOBLOG_JOB_ID=17\0", "ab"), None, "unmarked");
        assert_eq!(
            job_id_in(b"JOBLOG_INSTANCE=ab\0JOBLOG_JOB_ID=x\0", "ab"),
            None
        );
        assert_eq!(job_id_in(b"", "ab"), None);
        assert_ne!(
            Sweeper::new("n", "s").instance(),
            Sweeper::new("n", "s").instance()
        );
    }

    #[test]
    fn leftovers_are_the_same_nodes_jobs_of_another_engine() {
        let mark = supervisor_mark("node-a", "sqlite:///d/joblog.db");
        assert_eq!(mark, supervisor_mark("node-a", "sqlite:///d/joblog.db"));
        assert_ne!(mark, supervisor_mark("node-b", "sqlite:///d/joblog.db"));
        assert_ne!(mark, supervisor_mark("node-a", "sqlite:///e/joblog.db"));
        let env = |s: &str, i: &str| format!("A=1\0JOBLOG_SUPERVISOR={s}\0JOBLOG_INSTANCE={i}\0");
        assert!(is_leftover(env(&mark, "old").as_bytes(), &mark, "new"));
        assert!(
            !is_leftover(env(&mark, "new").as_bytes(), &mark, "new"),
            "this engine's own"
        );
        assert!(
            !is_leftover(env("other", "old").as_bytes(), &mark, "new"),
            "another node's"
        );
        assert!(!is_leftover(b"A=1\0", &mark, "new"), "unmarked");
    }

    /// A process left by an earlier engine of the same node is killed at
    /// start; one of another node is not.
    #[test]
    fn an_earlier_engines_leftover_is_killed() {
        let old = Sweeper::new("n", "sqlite:///leftover-test.db");
        let new = Sweeper::new("n", "sqlite:///leftover-test.db");
        let elsewhere = Sweeper::new("m", "sqlite:///leftover-test.db");
        let start = |s: &Sweeper| {
            std::process::Command::new("sleep")
                .arg("30")
                .env("JOBLOG_INSTANCE", s.instance())
                .env("JOBLOG_SUPERVISOR", s.supervisor())
                .spawn()
                .unwrap()
        };
        let mut left = start(&old);
        let mut other = start(&elsewhere);
        // `spawn` returns once the child has begun its exec, which may be
        // before the kernel has set up its environment (`/proc/<pid>/environ`
        // reads empty until then). Leftovers at a real start are older.
        for child in [&left, &other] {
            let path = format!("/proc/{}/environ", child.id());
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !std::fs::read(&path)
                .is_ok_and(|e| e.windows(18).any(|w| w == b"JOBLOG_SUPERVISOR="))
            {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{path} never showed the mark"
                );
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let killed = new.kill_leftovers();
        assert_eq!(killed, vec![left.id() as i32]);
        assert!(!left.wait().unwrap().success());
        assert_eq!(
            other.try_wait().unwrap(),
            None,
            "another node's: left running"
        );
        other.kill().unwrap();
        other.wait().unwrap();
    }

    /// A marked child whose job is not running is killed and then reaped;
    /// an unmarked one is left alone; one that names a running job without
    /// its key (a daemon of another job forging the id) is killed.
    #[test]
    fn a_marked_child_of_an_ended_job_is_killed_and_reaped() {
        let sweeper = Sweeper::new("n", "s");
        let key = job_key();
        assert_eq!(key.len(), 32);
        assert_ne!(key, job_key());
        let mut marked = std::process::Command::new("sleep")
            .arg("30")
            .env("JOBLOG_INSTANCE", sweeper.instance())
            .env("JOBLOG_JOB_ID", "7")
            .env("JOBLOG_JOB_KEY", &key)
            .spawn()
            .unwrap();
        let mut forged = std::process::Command::new("sleep")
            .arg("30")
            .env("JOBLOG_INSTANCE", sweeper.instance())
            .env("JOBLOG_JOB_ID", "7")
            .env("JOBLOG_JOB_KEY", "0".repeat(32))
            .spawn()
            .unwrap();
        for child in [&marked, &forged] {
            let path = format!("/proc/{}/environ", child.id());
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !std::fs::read(&path)
                .is_ok_and(|e| e.windows(15).any(|w| w == b"JOBLOG_JOB_KEY="))
            {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{path} never showed the key"
                );
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .env("JOBLOG_JOB_ID", "7")
            .spawn()
            .unwrap();
        let none = || (HashMap::new(), HashSet::new());
        assert_eq!(
            sweeper.sweep(false, || (
                HashMap::from([(7, key.clone())]),
                HashSet::new()
            )),
            1,
            "job 7 runs: its own process stays, the forger goes"
        );
        assert!(!forged.wait().unwrap().success());
        // Job 7's main process is never touched, even once job 7 ended
        // (tokio reaps it).
        let main = HashSet::from([marked.id()]);
        assert_eq!(sweeper.sweep(false, || (HashMap::new(), main.clone())), 0);
        assert_eq!(sweeper.sweep(false, none), 1);
        // Killed; the test reaps it itself here (the sweeper would at its
        // next round).
        let status = marked.wait().unwrap();
        assert!(!status.success());
        assert_eq!(other.try_wait().unwrap(), None, "unmarked: left running");
        other.kill().unwrap();
        other.wait().unwrap();
    }
}
