//! What every sink is to the writer that drives it: a place batches of
//! entries are written to, flushed, and reopened (on SIGHUP, after a
//! failure). A sink runs on its own thread and may block there.

use std::io;
use std::sync::Arc;

use super::entry::Entry;

/// A destination of log entries: a file, stdout/stderr, syslog, the
/// database.
pub trait Sink: Send + 'static {
    /// Writes the entries in order. An error means none or some of them
    /// were written; the writer counts it and tries again later (after
    /// [`Sink::reopen`]).
    fn write(&mut self, batch: &[Arc<Entry>]) -> io::Result<()>;

    /// Hands what was written to the operating system (or the database):
    /// called after each batch and before the server stops.
    fn flush(&mut self) -> io::Result<()>;

    /// Closes and opens the destination again: after logrotate moved a
    /// file (SIGHUP), or after a failure.
    fn reopen(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// For error messages and metrics: `file /var/log/joblog/access.log`.
    fn describe(&self) -> String;
}
