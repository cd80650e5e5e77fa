//! `joblog backup FILE`: a consistent copy of the server's SQLite database
//! (`GET /api/v1/backup`), written to FILE atomically — into a temporary
//! file beside it, synced, then put in place — so FILE is either the whole
//! copy or untouched. Like every command, it produces an [`Answer`] and
//! prints nothing.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::api::Api;
use super::args::BackupArgs;
use super::commands::Answer;

/// What every SQLite database file begins with.
const SQLITE_HEADER: &[u8] = b"SQLite format 3\0";

pub(super) async fn run(api: &Api, a: BackupArgs) -> anyhow::Result<Answer> {
    let dest = a.file;
    // Refused before the server copies a database for nothing; checked
    // again, atomically, when the copy is put in place.
    if !a.force && dest.symlink_metadata().is_ok() {
        bail!("{} exists; give --force to replace it", dest.display());
    }
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = dest
        .file_name()
        .with_context(|| format!("{} names no file", dest.display()))?;
    let partial = Partial::create(dir.join(format!(
        ".{}.partial-{}",
        name.to_string_lossy(),
        std::process::id()
    )))?;

    let mut resp = api.get_streaming(api.url("/api/v1/backup", &[])?).await?;
    let expected = resp.content_length();
    let mut file = &partial.file;
    let mut written: u64 = 0;
    let mut head = Vec::with_capacity(SQLITE_HEADER.len());
    while let Some(chunk) = api.next_chunk(&mut resp).await? {
        if head.len() < SQLITE_HEADER.len() {
            let take = (SQLITE_HEADER.len() - head.len()).min(chunk.len());
            head.extend_from_slice(&chunk[..take]);
        }
        file.write_all(&chunk)
            .with_context(|| format!("writing {}", partial.path.display()))?;
        written += chunk.len() as u64;
    }
    if let Some(n) = expected.filter(|n| *n != written) {
        bail!(
            "the server sent {written} bytes of a {n}-byte database; {} is left as it was",
            dest.display()
        );
    }
    if head != SQLITE_HEADER {
        bail!(
            "the server's answer is not a SQLite database; {} is left as it was",
            dest.display()
        );
    }
    file.sync_all()
        .with_context(|| format!("syncing {}", partial.path.display()))?;
    partial.install(&dest, a.force)?;
    // The new name is durable once the directory is.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(Answer::BackedUp {
        path: dest,
        bytes: written,
    })
}

/// The temporary file the copy is written to, removed unless installed.
struct Partial {
    path: PathBuf,
    file: File,
    installed: bool,
}

impl Partial {
    fn create(path: PathBuf) -> anyhow::Result<Partial> {
        // Readable by this user only: the copy holds every job's log.
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok(Partial {
            path,
            file,
            installed: false,
        })
    }

    /// Gives the file its name: replacing `dest` with `force`, else only if
    /// `dest` still does not exist (a hard link fails on an existing name,
    /// where a rename would replace it).
    fn install(mut self, dest: &Path, force: bool) -> anyhow::Result<()> {
        let exists = || anyhow::anyhow!("{} exists; give --force to replace it", dest.display());
        if force {
            std::fs::rename(&self.path, dest)
                .with_context(|| format!("cannot write {}", dest.display()))?;
        } else {
            match std::fs::hard_link(&self.path, dest) {
                Ok(()) => {
                    let _ = std::fs::remove_file(&self.path);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(exists()),
                // A file system without hard links: the check made at the
                // start is the one there is.
                Err(_) if dest.symlink_metadata().is_err() => {
                    std::fs::rename(&self.path, dest)
                        .with_context(|| format!("cannot write {}", dest.display()))?;
                }
                Err(_) => return Err(exists()),
            }
        }
        self.installed = true;
        Ok(())
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if !self.installed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
