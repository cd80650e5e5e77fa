//! A job's result file: made for a job that runs as another user, read
//! without following links, checked as JSON and encoded off the writer,
//! and removed after the run.

use std::path::Path;

use joblog_core::{JobId, ResultBlob};

use crate::Engine;

impl Engine {
    /// The job's result file: a regular file, never followed through a
    /// link (a job could point it at a file of the server's), up to
    /// `max_result_bytes`. Its JSON is checked by `encode_checked`.
    pub(crate) async fn read_result_file(
        &self,
        path: &std::path::Path,
    ) -> Result<Option<Vec<u8>>, String> {
        let max = self.inner.config.max_result_bytes;
        // One lstat, here: most jobs write no file, and a hop to a
        // blocking thread at every job's end cost more than the call.
        let meta = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(_) => return Ok(None),
        };
        if meta.file_type().is_symlink() {
            return Err("joblog: the result file is a symbolic link; links are not followed, result not stored".into());
        }
        if !meta.is_file() {
            return Err(
                "joblog: the result path is not a regular file (a directory?); result not stored"
                    .into(),
            );
        }
        if meta.len() == 0 {
            return Ok(None);
        }
        if meta.len() > max {
            return Err(format!(
                "joblog: the result file is {} bytes, over the limit of {max} bytes; result not stored",
                meta.len()
            ));
        }
        let body = read_no_follow(path, max)
            .await
            .map_err(|e| format!("joblog: cannot read the result file: {e}"))?;
        Ok(Some(body))
    }
}

/// The result as a blob, made on blocking threads, never on the store's
/// writer (which every running job's records wait for). When `check`,
/// the JSON is checked on one thread while it is compressed on another:
/// the two passes take about as long each (docs/benchmarks.md), so the
/// result is stored sooner; a result that is not JSON is refused and its
/// blob thrown away.
pub(crate) async fn encode_checked(
    job: JobId,
    body: Vec<u8>,
    check: bool,
) -> Result<ResultBlob, String> {
    let internal = |e: tokio::task::JoinError| {
        tracing::error!(job, error = %e, "could not encode the result");
        "joblog: the result could not be stored (an internal error, in the server's error log)"
            .to_string()
    };
    let body = std::sync::Arc::new(body);
    let encoding = {
        let body = body.clone();
        tokio::task::spawn_blocking(move || ResultBlob::encode(&body))
    };
    if check {
        let verdict = tokio::task::spawn_blocking(move || {
            serde_json::from_slice::<serde::de::IgnoredAny>(&body)
                .map_err(|e| format!("joblog: the result file is not valid JSON: {e}"))?;
            joblog_core::result_blob::check_depth(&body)
                .map_err(|e| format!("joblog: the result file is refused: it is {e}"))
        })
        .await
        .map_err(internal)?;
        verdict?;
    }
    encoding.await.map_err(internal)
}

/// Opens with `O_NOFOLLOW`, so a link swapped in after the check above is
/// refused too, and reads at most `max` bytes.
async fn read_no_follow(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(path)?;
        let mut body = Vec::new();
        file.take(max + 1).read_to_end(&mut body)?;
        if body.len() as u64 > max {
            return Err(std::io::Error::other("it grew past the limit while read"));
        }
        Ok(body)
    })
    .await
    .map_err(std::io::Error::other)?
}

/// The result file of a job that runs as another user: made empty by the
/// server in its own directory, writable by others (whom the directory
/// keeps out: only the job, through the descriptor it inherits, reaches
/// it) and readable by the server alone.
pub(crate) fn result_file_for_another_user(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o602)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)?;
    // The umask took `o+w` away.
    file.set_permissions(std::fs::Permissions::from_mode(0o602))?;
    Ok(file)
}

/// Removes whatever a job left at its result path: a file, a link (not
/// what it points to) or a directory tree.
pub(crate) fn remove_result_path(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}
