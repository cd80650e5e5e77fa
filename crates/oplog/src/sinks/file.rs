//! A log file: lines appended in one write per batch, rotated by size
//! and/or by UTC day, reopened on SIGHUP so logrotate can move it away.
//! What becomes of rotated files (names, compression, keep) is
//! [`super::rotation`]'s, and runs on a short-lived thread so the next
//! batch does not wait for it.
//!
//! Durability: a batch is handed to the kernel by its `write` (a process
//! crash loses nothing written); nothing is fsynced per batch, which would
//! cost a disk flush per batch. A file is fsynced when it is rotated, so a
//! rotated file is whole on disk before it is renamed and compressed.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use joblog_core::Timestamp;

use super::clock::{timestamp_of, utc_day, Clock};
use super::rotation::{self, Naming, Rotation};
use crate::entry::Entry;
use crate::format::{write_line, Format};
use crate::sink::Sink;

/// A file sink. See the module documentation.
pub struct FileSink {
    path: PathBuf,
    naming: Naming,
    rotation: Rotation,
    format: Format,
    clock: Arc<dyn Clock>,
    /// `None` after a failure: the next write opens the path again.
    file: Option<File>,
    /// Only a regular file is rotated: `/dev/stderr` or a FIFO given as
    /// a path must never be renamed.
    rotatable: bool,
    /// Whether the path may be something other than a regular file
    /// (`special_file`); refused otherwise.
    special: bool,
    /// Bytes in the current file.
    size: u64,
    /// The UTC day the current file was started on.
    day: i64,
    /// The time in the last rotated name, so the next is always later
    /// even when the clock stands still or steps back.
    last_rotated: Option<Timestamp>,
    buf: Vec<u8>,
    tidy: Option<JoinHandle<io::Result<()>>>,
    tidy_pending: bool,
}

impl FileSink {
    /// Opens `path` for appending, creating it (mode 0640) and its
    /// directory (0750) if need be. A path that is not a regular file is
    /// refused unless `special`.
    pub fn open(
        path: PathBuf,
        rotation: Rotation,
        special: bool,
        format: Format,
        clock: Arc<dyn Clock>,
    ) -> io::Result<FileSink> {
        let naming = Naming::of(&path).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("log file {}: not a file name in UTF-8", path.display()),
            )
        })?;
        let mut sink = FileSink {
            path,
            naming,
            rotation,
            format,
            clock,
            file: None,
            rotatable: false,
            special,
            size: 0,
            day: 0,
            last_rotated: None,
            buf: Vec::with_capacity(64 * 1024),
            tidy: None,
            tidy_pending: false,
        };
        sink.open_file(true)?;
        Ok(sink)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits for the tidying of rotated files (compression, deletion
    /// beyond `keep`) to finish, and does any still due: before the
    /// server stops, and in tests.
    pub fn settle(&mut self) -> io::Result<()> {
        let running = match self.tidy.take() {
            Some(handle) => joined(handle),
            None => Ok(()),
        };
        let pending = if std::mem::take(&mut self.tidy_pending) {
            rotation::tidy(&self.naming, self.rotation.keep, self.rotation.compress)
        } else {
            Ok(())
        };
        running.and(pending)
    }

    fn error(&self, what: &str, e: io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!("log file {}: {what}: {e}", self.path.display()),
        )
    }

    /// Opens the path; `first` when the sink is new, so a file left from
    /// an earlier day is dated by its last change.
    fn open_file(&mut self, first: bool) -> io::Result<()> {
        self.file = None;
        DirBuilder::new()
            .recursive(true)
            .mode(0o750)
            .create(self.naming.dir())
            .map_err(|e| self.error("cannot create its directory", e))?;
        // Looked at before opening: opening a device can itself do
        // something, and opening a FIFO with no reader would wait for one.
        if let Ok(meta) = fs::metadata(&self.path) {
            self.refuse_special(&meta)?;
        }
        // Never waits to open (a FIFO with no reader fails with ENXIO), and
        // a special file allowed stays non-blocking, so a full FIFO is a
        // failed write (entries counted as lost), never a stuck thread.
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o640)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(&self.path)
            .map_err(|e| self.error("cannot open", e))?;
        let meta = file
            .metadata()
            .map_err(|e| self.error("cannot read its metadata", e))?;
        // Again on what was opened: the path may have changed in between.
        self.refuse_special(&meta)?;
        let today = utc_day(self.clock.now());
        self.day = if meta.len() == 0 {
            today
        } else if first {
            meta.modified()
                .ok()
                .map(|t| utc_day(timestamp_of(t)))
                .unwrap_or(today)
        } else {
            // The same file, reopened: it keeps the day it began on.
            self.day
        };
        self.rotatable = meta.is_file();
        self.size = meta.len();
        self.file = Some(file);
        Ok(())
    }

    fn refuse_special(&self, meta: &fs::Metadata) -> io::Result<()> {
        if meta.is_file() || self.special {
            return Ok(());
        }
        let kind = meta.file_type();
        use std::os::unix::fs::FileTypeExt;
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "log file {}: is {what}; set `special_file = true` on the sink to write to it",
                self.path.display()
            ),
        ))
    }

    /// Writes `buf[..n]`; on failure the file is dropped, so the next
    /// write starts from a fresh open (and a fresh size).
    fn write_out(&mut self, n: usize) -> io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        let result = match self.file.as_mut() {
            Some(file) => file.write_all(&self.buf[..n]),
            None => Err(io::Error::new(io::ErrorKind::NotConnected, "not open")),
        };
        match result {
            Ok(()) => {
                self.size += n as u64;
                Ok(())
            }
            Err(e) => {
                self.file = None;
                Err(self.error("cannot write", e))
            }
        }
    }

    /// Closes the current file (fsynced), renames it to its rotated name
    /// and starts a new one at the path.
    fn rotate(&mut self) -> io::Result<()> {
        if let Some(file) = self.file.take() {
            file.sync_all()
                .map_err(|e| self.error("cannot sync before rotating", e))?;
        }
        let now = self.clock.now();
        let mut at = match self.last_rotated {
            Some(last) if last.0 >= now.0 => Timestamp(last.0 + 1),
            _ => now,
        };
        while self.naming.taken(at) {
            at = Timestamp(at.0 + 1);
        }
        let rotated = self.naming.rotated(at);
        match fs::rename(&self.path, &rotated) {
            Ok(()) => {}
            // Moved away already (logrotate, before its SIGHUP came):
            // there is nothing left to rename.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(self.error(&format!("cannot rename it to {}", rotated.display()), e))
            }
        }
        self.last_rotated = Some(at);
        self.tidy_pending = true;
        self.open_file(false)?;
        self.start_tidy();
        Ok(())
    }

    /// Starts the tidy a rotation asked for, unless the last one is still
    /// running (then the next write or flush starts it: one at a time, so
    /// a tidy never takes another's `.tmp` for a crash's leftover).
    fn start_tidy(&mut self) {
        if self.tidy.as_ref().is_some_and(|h| !h.is_finished()) {
            return;
        }
        if let Some(handle) = self.tidy.take() {
            if let Err(e) = joined(handle) {
                report_tidy(&e);
            }
        }
        if !std::mem::take(&mut self.tidy_pending) {
            return;
        }
        let (naming, keep, compress) = (
            self.naming.clone(),
            self.rotation.keep,
            self.rotation.compress,
        );
        let spawned = std::thread::Builder::new()
            .name("joblog-log-tidy".into())
            .spawn(move || rotation::tidy(&naming, keep, compress));
        match spawned {
            Ok(handle) => self.tidy = Some(handle),
            // No thread to be had: tidy here rather than never.
            Err(_) => {
                if let Err(e) = rotation::tidy(&self.naming, keep, compress) {
                    report_tidy(&e);
                }
            }
        }
    }
}

fn joined(handle: JoinHandle<io::Result<()>>) -> io::Result<()> {
    handle
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("tidying rotated logs panicked")))
}

/// A failed tidy loses no line (the rotated file stays, uncompressed or
/// not yet deleted, and the next rotation tries again), so it is a
/// warning, not a failed write.
fn report_tidy(e: &io::Error) {
    tracing::warn!(error = %e, "tidying rotated log files failed");
}

impl Sink for FileSink {
    fn write(&mut self, batch: &[Arc<Entry>]) -> io::Result<()> {
        self.start_tidy();
        if self.file.is_none() {
            self.open_file(false)?;
        }
        let today = utc_day(self.clock.now());
        if self.rotation.daily && self.rotatable && today != self.day {
            if self.size > 0 {
                self.rotate()?;
            } else {
                // An empty file belongs to the day of its first line.
                self.day = today;
            }
        }
        let max = self.rotation.max_bytes.filter(|_| self.rotatable);
        self.buf.clear();
        for entry in batch {
            let start = self.buf.len();
            write_line(entry, self.format, &mut self.buf);
            let Some(max) = max else { continue };
            let before = self.size + start as u64;
            if before > 0 && before + (self.buf.len() - start) as u64 > max {
                // This line starts the next file; a line is never split.
                self.write_out(start)?;
                self.rotate()?;
                self.buf.drain(..start);
            }
        }
        self.write_out(self.buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        // `write` has handed every batch to the kernel already.
        self.start_tidy();
        Ok(())
    }

    fn reopen(&mut self) -> io::Result<()> {
        self.start_tidy();
        self.open_file(false)
    }

    fn describe(&self) -> String {
        format!("file {}", self.path.display())
    }
}

impl Drop for FileSink {
    /// Lets a compression under way finish, so a clean stop leaves no
    /// `.tmp` behind.
    fn drop(&mut self) {
        if let Err(e) = self.settle() {
            report_tidy(&e);
        }
    }
}

#[cfg(test)]
mod tests;
