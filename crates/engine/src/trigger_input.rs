//! What a triggered run is given of the job whose end queued it (its
//! schedule runs `after` that job's): `JOBLOG_TRIGGER_JOB_ID`,
//! `JOBLOG_TRIGGER_STATE` and, when that job stored a result,
//! `JOBLOG_TRIGGER_RESULT`, the path of a file holding it. The server
//! writes the file in its results directory before the run and removes
//! it after; a job that runs as another user reads it through a
//! descriptor it inherits, as it writes its own result.

use std::path::PathBuf;

use joblog_core::schedule::TriggeredBy;
use joblog_core::Job;

use crate::process::ResultPath;
use crate::result_file::remove_result_path;
use crate::Engine;

/// The triggering job of a run, and its result as a file.
#[derive(Debug)]
pub(crate) struct TriggerInput {
    pub by: TriggeredBy,
    /// The file holding its result (none when it stored none).
    path: Option<PathBuf>,
    /// Under `run_as`: that file open for reading, for the job to inherit.
    file: Option<std::fs::File>,
    /// Why its result is not given, for the run's log.
    pub note: Option<String>,
}

impl TriggerInput {
    /// Where the run finds the result (`JOBLOG_TRIGGER_RESULT`).
    pub fn result(&self) -> Option<ResultPath<'_>> {
        use std::os::fd::AsRawFd;
        match (&self.file, &self.path) {
            (Some(file), _) => Some(ResultPath::Fd(file.as_raw_fd())),
            (None, Some(path)) => Some(ResultPath::Path(path)),
            (None, None) => None,
        }
    }

    /// Closes the server's copy of the descriptor once the run has its own.
    pub fn spawned(&mut self) {
        self.file = None;
    }
}

impl Drop for TriggerInput {
    fn drop(&mut self) {
        if let Some(path) = &self.path {
            remove_result_path(path);
        }
    }
}

impl Engine {
    /// The trigger of `job`, when a job's end queued it, with that job's
    /// result written for it.
    pub(crate) async fn trigger_input(&self, job: &Job) -> Option<TriggerInput> {
        let by = job.spec.schedule.and_then(|run| run.trigger)?;
        let mut input = TriggerInput {
            by,
            path: None,
            file: None,
            note: None,
        };
        let blob = match self.inner.store.read_result(by.job_id).await {
            Ok(Some(blob)) => blob,
            Ok(None) => return Some(input),
            Err(e) => {
                tracing::error!(job = job.id, trigger = by.job_id, error = %e, "cannot read the triggering job's result");
                input.note = Some(format!(
                    "joblog: the result of job {}, which triggered this run, could not be read (the server's error log says why); JOBLOG_TRIGGER_RESULT is not set",
                    by.job_id
                ));
                return Some(input);
            }
        };
        let path = self
            .inner
            .config
            .data_dir
            .join("results")
            .join(format!("{}.trigger.json", job.id));
        let reopen = self.inner.config.run_as.is_some();
        let written = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || write_result(&path, &blob, reopen)).await
        };
        match written {
            Ok(Ok(file)) => {
                input.path = Some(path);
                input.file = file;
            }
            Ok(Err(e)) => {
                remove_result_path(&path);
                tracing::error!(job = job.id, trigger = by.job_id, error = %e, "cannot write the triggering job's result for its run");
                input.note = Some(format!(
                    "joblog: the result of job {}, which triggered this run, could not be written for it (the server's error log says why); JOBLOG_TRIGGER_RESULT is not set",
                    by.job_id
                ));
            }
            Err(e) => {
                tracing::error!(job = job.id, error = %e, "writing the triggering job's result panicked");
                input.note = Some(
                    "joblog: the triggering job's result could not be written for this run (an internal error, in the server's error log); JOBLOG_TRIGGER_RESULT is not set"
                        .to_owned(),
                );
            }
        }
        Some(input)
    }
}

/// Writes the JSON of `blob` to a new file at `path`, readable by the
/// server alone (never through a link left there); with `reopen`, the
/// file opened again for reading, for a job of another user to inherit,
/// and readable by others.
fn write_result(
    path: &std::path::Path,
    blob: &[u8],
    reopen: bool,
) -> std::io::Result<Option<std::fs::File>> {
    use std::os::unix::fs::OpenOptionsExt;
    remove_result_path(path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)?;
    joblog_core::result_blob::decode_to(blob, &mut file).map_err(std::io::Error::other)?;
    if !reopen {
        return Ok(None);
    }
    // Opening `/dev/fd/N` opens the file again, by its mode: readable by
    // others, whom the results directory keeps out but for this
    // descriptor (as the result file a job writes is writable by them).
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o604))?;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)
        .map(Some)
}
