//! What the server creates is its user's alone, whatever the umask it was
//! started with: the data directory, the database and its WAL, results,
//! logs, snapshots. Jobs get the umask back, so what they create is as
//! the operator expects. A data directory or database already there and
//! open to others is warned about at start (it is not changed: the
//! operator may mean it).

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use nix::sys::stat::{umask, Mode};

/// Sets the server's umask to `077` and returns the one it had, for jobs.
pub(super) fn private_umask() -> u32 {
    let before = umask(Mode::from_bits_truncate(0o077));
    before.bits()
}

/// Creates the data directory `0700` (its parents as the umask says).
pub(super) fn create_data_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Warns about each of `paths` that exists and that other users (its
/// group, or everyone) may read or enter.
pub(super) fn warn_if_open(paths: &[&Path]) {
    for path in paths {
        if let Some(mode) = open_mode(path) {
            tracing::warn!(
                path = %path.display(),
                mode = format!("{mode:04o}"),
                "{} is open to other users (mode {mode:04o}): they can read jobs' environments and output; `chmod go= {}` makes it the server's alone",
                path.display(),
                path.display()
            );
        }
    }
}

/// The permission bits of `path` when its group or others have any.
fn open_mode(path: &Path) -> Option<u32> {
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o7777;
    (mode & 0o077 != 0).then_some(mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_modes_open_to_others_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("joblog.db");
        std::fs::write(&file, b"").unwrap();
        for (mode, open) in [(0o600, None), (0o644, Some(0o644)), (0o640, Some(0o640))] {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(open_mode(&file), open, "{mode:o}");
        }
        assert_eq!(open_mode(&dir.path().join("missing")), None);
    }
}
