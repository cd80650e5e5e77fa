//! One server per data directory and per SQLite file: an OS lock (`flock`)
//! on a lock file, taken before the store is opened or anything is
//! recovered and held for the life of the process, so a second server is
//! refused instead of marking the first one's running jobs `interrupted`.
//!
//! The data directory's lock is `joblog.lock` in it (it holds the jobs'
//! result files, whatever the database); a SQLite database's is
//! `<file>.lock` beside it, so two servers with different data
//! directories but one database file are refused too. The kernel drops a
//! lock when its process ends, however it ends; the file itself stays.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// The locks a server holds; dropping them (at exit) releases them.
#[derive(Debug)]
pub(super) struct Locks {
    _held: Vec<Flock<File>>,
}

/// What a lock file guards, as a refusal names it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Guarded {
    DataDir(PathBuf),
    Database(PathBuf),
}

impl Guarded {
    fn lock_file(&self) -> PathBuf {
        match self {
            Guarded::DataDir(dir) => dir.join("joblog.lock"),
            Guarded::Database(file) => {
                let mut name = file.as_os_str().to_owned();
                name.push(".lock");
                PathBuf::from(name)
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            Guarded::DataDir(dir) => format!("the data directory {}", dir.display()),
            Guarded::Database(file) => format!("the SQLite database {}", file.display()),
        }
    }

    fn advice(&self) -> &'static str {
        match self {
            Guarded::DataDir(_) => "give this server a --data-dir of its own",
            Guarded::Database(_) => "give this server a --database of its own",
        }
    }
}

/// What needs locking: the data directory, and the SQLite file when the
/// database is one (wherever it is).
fn guarded(data_dir: &Path, sqlite: Option<&Path>) -> Vec<Guarded> {
    let mut out = vec![Guarded::DataDir(data_dir.to_path_buf())];
    out.extend(sqlite.map(|file| Guarded::Database(file.to_path_buf())));
    out
}

/// Locks the data directory (which must exist) and the SQLite file
/// `sqlite`, writing this process's pid and `listen` into each lock file
/// for a refused server to name. Refuses, naming the holder, when another
/// process holds either.
pub(super) fn take(
    data_dir: &Path,
    sqlite: Option<&Path>,
    listen: SocketAddr,
) -> anyhow::Result<Locks> {
    let mut held = Vec::new();
    for what in guarded(data_dir, sqlite) {
        if let Guarded::Database(file) = &what {
            // The store refuses a database whose directory is missing,
            // with its own message; nothing to guard yet.
            if !file.parent().is_some_and(Path::is_dir) {
                continue;
            }
        }
        held.push(lock_one(&what, listen)?);
    }
    Ok(Locks { _held: held })
}

fn lock_one(what: &Guarded, listen: SocketAddr) -> anyhow::Result<Flock<File>> {
    let path = what.lock_file();
    // Not truncated on open: until it holds the lock, this process must
    // not erase the holder's pid.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("cannot open the lock file {}", path.display()))?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(mut lock) => {
            let mark = format!("pid={} listen={listen}\n", std::process::id());
            lock.set_len(0)
                .and_then(|()| lock.rewind())
                .and_then(|()| lock.write_all(mark.as_bytes()))
                .with_context(|| format!("cannot write the lock file {}", path.display()))?;
            Ok(lock)
        }
        Err((mut file, Errno::EWOULDBLOCK)) => bail!(
            "{} is in use by another joblog server ({}); stop that server first, or {} (lock file {})",
            what.describe(),
            holder(&mut file),
            what.advice(),
            path.display()
        ),
        Err((_, errno)) => {
            bail!("cannot lock {}: {}", path.display(), errno.desc())
        }
    }
}

/// The holder as its lock file names it: `pid 1234, listening on
/// 127.0.0.1:7878`. A holder that has just taken the lock may not have
/// written it yet: read again for a moment.
fn holder(file: &mut File) -> String {
    for _ in 0..20 {
        let mut text = String::new();
        if file.rewind().is_ok() && file.read_to_string(&mut text).is_ok() {
            if let Some(named) = describe_mark(&text) {
                return named;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    "pid unknown".to_string()
}

/// `pid=1234 listen=127.0.0.1:7878` → `pid 1234, listening on
/// 127.0.0.1:7878`; `None` without a pid.
fn describe_mark(text: &str) -> Option<String> {
    let field = |name: &str| {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
    };
    let pid: u32 = field("pid")?.parse().ok()?;
    Some(match field("listen") {
        Some(listen) => format!("pid {pid}, listening on {listen}"),
        None => format!("pid {pid}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listen() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 7878))
    }

    /// flock locks belong to an open file, so a second `take` in this
    /// process is refused as a second server would be.
    #[test]
    fn a_data_dir_in_use_is_refused_naming_it_and_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let held = take(dir.path(), None, listen()).unwrap();
        let e = take(dir.path(), None, listen()).unwrap_err().to_string();
        let pid = format!("pid {}, listening on 127.0.0.1:7878", std::process::id());
        assert!(
            e.contains(&dir.path().display().to_string()) && e.contains(&pid),
            "{e}"
        );
        assert!(e.contains("--data-dir"), "{e}");
        drop(held);
        take(dir.path(), None, listen()).expect("free again once the holder is gone");
    }

    /// Two data directories, one SQLite file: the file's own lock refuses
    /// the second; with PostgreSQL only the data directory is locked.
    #[test]
    fn a_sqlite_file_is_locked_wherever_it_is() {
        let (a, b, db) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let file = db.path().join("shared.db");
        let _held = take(a.path(), Some(&file), listen()).unwrap();
        let e = take(b.path(), Some(&file), listen())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("SQLite database {}", file.display())),
            "{e}"
        );
        assert!(e.contains("--database"), "{e}");
        assert!(db.path().join("shared.db.lock").is_file());
        let _b = take(b.path(), None, listen()).expect("PostgreSQL: the data dir alone");
    }

    #[test]
    fn a_lock_file_names_its_holder() {
        assert_eq!(
            describe_mark("pid=42 listen=[::1]:80\n").as_deref(),
            Some("pid 42, listening on [::1]:80")
        );
        assert_eq!(describe_mark("pid=42").as_deref(), Some("pid 42"));
        assert_eq!(describe_mark(""), None);
        assert_eq!(describe_mark("pid=x listen=a"), None);
    }
}
