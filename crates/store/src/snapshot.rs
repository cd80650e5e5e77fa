//! A snapshot of a whole store: one SQLite database file, already gone from
//! the directory it was made in, so nothing is left behind however its
//! reader ends.

use std::fs::File;

/// A consistent copy of a store as a SQLite database file, open for
/// reading from its start. The file has no name any more (it was removed
/// once made); its space is freed when this is dropped.
#[derive(Debug)]
pub struct Snapshot {
    file: File,
    len: u64,
}

impl Snapshot {
    pub(crate) fn new(file: File, len: u64) -> Snapshot {
        Snapshot { file, len }
    }

    /// Size of the database file in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty (a snapshot never is: a database has at
    /// least its header page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The open file, positioned at its start.
    pub fn into_file(self) -> File {
        self.file
    }
}
