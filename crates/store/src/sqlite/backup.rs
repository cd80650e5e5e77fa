//! Snapshots of the embedded store while it runs: `VACUUM INTO` a new file
//! beside the database, from a read connection of its own. In WAL mode a
//! reader never blocks the writer, so jobs keep committing while the copy
//! is made; the copy is the database as of the start of its one read
//! transaction. (The WAL cannot be checkpointed past that reader, so it
//! grows for the copy's length and shrinks again afterwards.)

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rusqlite::Connection;

use crate::{Result, Snapshot, StoreError, SyncMode};

/// One snapshot at a time in this process: a second waits rather than
/// doubling the disk space and I/O, and leftovers can be cleared safely.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Between the database's file name and a snapshot's unique part:
/// `joblog.db.backup-<pid>-<n>.tmp`.
const INFIX: &str = ".backup-";
const SUFFIX: &str = ".tmp";

/// A snapshot of the database at `db`, made in its directory (the same
/// file system, so the space it takes is the data directory's).
pub(super) fn snapshot(db: &Path, sync: SyncMode) -> Result<Snapshot> {
    let conn = super::open_conn(db, sync, true, None)?;
    snapshot_from(&conn, db)
}

/// [`snapshot`] through `conn`, a read connection to `db`.
fn snapshot_from(conn: &Connection, db: &Path) -> Result<Snapshot> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = match db.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = db
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| not_utf8(db))?;
    remove_leftovers(dir, name);
    let path = dir.join(format!(
        "{name}{INFIX}{}-{}{SUFFIX}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let text = path.to_str().ok_or_else(|| not_utf8(&path))?.to_string();
    // Made empty first, readable by the server's user only: the copy holds
    // everything the database does. VACUUM INTO fills an empty file.
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| file_error(&path, "cannot create", e))?;
    let name_gone = RemoveOnDrop(path.clone());
    conn.execute("VACUUM INTO ?1", [&text])?;
    let file = File::open(&path).map_err(|e| file_error(&path, "cannot open", e))?;
    let len = file
        .metadata()
        .map_err(|e| file_error(&path, "cannot read the size of", e))?
        .len();
    // The open file stays readable once its name is gone; nothing is left
    // on disk however the snapshot's reader ends.
    drop(name_gone);
    Ok(Snapshot::new(file, len))
}

/// Removes snapshot files an earlier process left (it was killed while
/// making one). Only ever called under [`ONE_AT_A_TIME`].
fn remove_leftovers(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!("{name}{INFIX}");
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(n) = file_name.to_str() else {
            continue;
        };
        if n.starts_with(&prefix) && n.ends_with(SUFFIX) {
            match std::fs::remove_file(entry.path()) {
                Ok(()) => {
                    tracing::info!(file = %entry.path().display(), "removed a snapshot left by an earlier process")
                }
                Err(e) => {
                    tracing::warn!(file = %entry.path().display(), error = %e, "cannot remove a snapshot left by an earlier process")
                }
            }
        }
    }
}

/// Removes a file's name when dropped, on every path out (errors too).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_file(&self.0) {
            tracing::warn!(file = %self.0.display(), error = %e, "cannot remove a snapshot file");
        }
    }
}

fn not_utf8(path: &Path) -> StoreError {
    StoreError::Config(format!(
        "cannot make a snapshot beside {}: SQLite takes its file name as UTF-8 text",
        path.display()
    ))
}

fn file_error(path: &Path, what: &str, e: std::io::Error) -> StoreError {
    let text = format!("{what} the snapshot file {}: {e}", path.display());
    if e.kind() == std::io::ErrorKind::StorageFull {
        StoreError::Unavailable(text)
    } else {
        StoreError::Database(text)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::sync::{Arc, Mutex};

    use joblog_core::{JobQuery, JobSpec};

    use super::*;
    use crate::sqlite::{open_conn, SqliteStore};
    use crate::{Outcome, Store, StoreOptions, StoreWriter, WriteOp};

    fn insert(name: &str) -> WriteOp {
        WriteOp::InsertJob {
            name: Some(name.into()),
            spec: Box::new(JobSpec {
                command: vec!["true".into()],
                ..JobSpec::default()
            }),
        }
    }

    fn names(store: &SqliteStore) -> Vec<String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let jobs = rt
            .block_on(store.list_jobs(JobQuery {
                limit: 50,
                ..JobQuery::default()
            }))
            .unwrap();
        jobs.into_iter().filter_map(|j| j.name).collect()
    }

    /// Writes the snapshot out as a database file of its own.
    fn save(snapshot: Snapshot, path: &Path) {
        let mut bytes = Vec::new();
        snapshot.into_file().read_to_end(&mut bytes).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    /// The writer commits in the middle of a snapshot (from SQLite's
    /// progress callback, while the snapshot's read transaction is open):
    /// it is not blocked, which with the writer's 5 s busy timeout would
    /// fail its commit, and the snapshot is the database as it was when
    /// the copy began.
    #[test]
    fn the_writer_commits_during_a_snapshot_and_the_snapshot_is_as_of_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("joblog.db");
        let store = SqliteStore::open(&db, &StoreOptions::default()).unwrap();
        let mut writer = store.open_writer().unwrap();
        writer.apply(&[insert("before")]).unwrap();

        let mut conn = open_conn(&db, SyncMode::Normal, true, None).unwrap();
        let pending: Arc<Mutex<Option<Box<dyn StoreWriter>>>> = Arc::new(Mutex::new(Some(writer)));
        let outcome: Arc<Mutex<Option<Result<Vec<Outcome>>>>> = Arc::default();
        let (w, o) = (pending.clone(), outcome.clone());
        conn.progress_handler(
            50,
            Some(move || {
                if let Some(mut writer) = w.lock().unwrap().take() {
                    *o.lock().unwrap() = Some(writer.apply(&[insert("during")]));
                }
                false
            }),
        )
        .unwrap();
        let snapshot = snapshot_from(&conn, &db).unwrap();
        conn.progress_handler(0, None::<fn() -> bool>).unwrap();

        match outcome.lock().unwrap().take() {
            Some(Ok(outcomes)) => assert!(matches!(outcomes[..], [Outcome::Job(_)])),
            Some(Err(e)) => panic!("the writer was held up by the snapshot: {e}"),
            None => panic!("the snapshot ran no statement to write during"),
        }
        assert!(!snapshot.is_empty());
        let copy = dir.path().join("copy.db");
        save(snapshot, &copy);
        let copied = SqliteStore::open(&copy, &StoreOptions::default()).unwrap();
        assert_eq!(names(&copied), ["before"]);
        assert_eq!(names(&store), ["during", "before"]);
    }

    #[test]
    fn a_snapshot_leaves_no_file_behind_and_clears_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("joblog.db");
        let store = SqliteStore::open(&db, &StoreOptions::default()).unwrap();
        store.open_writer().unwrap().apply(&[insert("a")]).unwrap();
        let leftover = dir.path().join("joblog.db.backup-1-0.tmp");
        std::fs::write(&leftover, b"half a copy").unwrap();
        let other = dir.path().join("other.db.backup-1-0.tmp");
        std::fs::write(&other, b"not ours").unwrap();

        let snapshot = snapshot(&db, SyncMode::Normal).unwrap();
        let mut files: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(
            files,
            [
                "joblog.db",
                "joblog.db-shm",
                "joblog.db-wal",
                "other.db.backup-1-0.tmp"
            ]
        );
        let copy = dir.path().join("copy.db");
        save(snapshot, &copy);
        let copied = SqliteStore::open(&copy, &StoreOptions::default()).unwrap();
        assert_eq!(names(&copied), ["a"]);
    }
}
