//! One job's run: reads its pipes, feeds the record path, enforces its
//! timeout, and finishes it after its last record.

use std::path::Path;
use std::time::Duration;

use joblog_core::{Job, JobId, JobState, Record, Stream, Timestamp};
use joblog_pipeline::{Finish, JobShare, OutputParser, ResultText, Source};
use nix::sys::signal::Signal;
use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::metrics::state_label;
use crate::process::{signal_group, spawn};
use crate::result_file::{encode_checked, remove_result_path, result_file_for_another_user};
use crate::{Engine, StopReason};

const READ_CHUNK: usize = 64 * 1024;

/// How a job ended, before its result is looked at.
enum Ending {
    Exited(std::process::ExitStatus),
    Stopped(JobState),
    NotStarted,
}

impl Engine {
    pub(crate) async fn run_job(&self, job: Job, mut stop: watch::Receiver<Option<StopReason>>) {
        let cfg = &self.inner.config;
        let id = job.id;
        if let (Some(s), created) = (job.started_at, job.created_at) {
            self.inner
                .metrics
                .queue_wait
                .observe(created.millis_until(s).max(0.0) / 1000.0);
        }
        let secrets = self.secrets_of(&job).await;
        let masks = secrets.values.values().chain(&cfg.server_secrets).cloned();
        let mut log = OutputParser::new(cfg.log_limits.clone(), masks);
        // Its part of the pipeline's memory: a flood waits at its own.
        let share = self.inner.pipeline.job_share();
        let mut out = Vec::new();
        let result_path = cfg.data_dir.join("results").join(format!("{id}.json"));
        remove_result_path(&result_path);

        let params = crate::job_input::ParamsInput::of(&job, &secrets.values);
        let ending = if let Some(why) = secrets.why_not_started(&job, &cfg.node) {
            log.note(Stream::Error, &why, None, Timestamp::now(), &mut out);
            Ending::NotStarted
        } else if let Err(e) = &params {
            tracing::error!(job = id, error = %e, "cannot make the parameters file of a job");
            log.note(
                Stream::Error,
                &format!("joblog: not started: its parameters could not be given to it ({e})"),
                None,
                Timestamp::now(),
                &mut out,
            );
            Ending::NotStarted
        } else if let Some(cwd) = job.spec.cwd.as_deref().filter(|c| !Path::new(c).is_dir()) {
            // Said plainly: spawning would report the *program* missing.
            log.note(
                Stream::Error,
                &format!("joblog: not started: the working directory {cwd:?} does not exist or is not a directory"),
                None,
                Timestamp::now(),
                &mut out,
            );
            Ending::NotStarted
        } else {
            let params = params.ok().flatten();
            // Under `run_as` the job reaches its result file only through
            // a descriptor it inherits: the results directory is the
            // server's alone.
            let result_file = match &cfg.run_as {
                Some(_) => match result_file_for_another_user(&result_path) {
                    Ok(file) => Some(file),
                    Err(e) => {
                        tracing::error!(job = id, error = %e, "cannot make the result file of a job");
                        None
                    }
                },
                None => None,
            };
            let result = match &result_file {
                Some(file) => {
                    use std::os::fd::AsRawFd;
                    crate::process::ResultPath::Fd(file.as_raw_fd())
                }
                None => crate::process::ResultPath::Path(&result_path),
            };
            // Removed (its file) when dropped, after the run.
            let mut trigger = self.trigger_input(&job).await;
            if let Some(note) = trigger.as_mut().and_then(|t| t.note.take()) {
                log.note(Stream::Error, &note, None, Timestamp::now(), &mut out);
            }
            // A start blocks its thread until the child has exec'd (and
            // waits for the lock while another starts): off the async
            // workers, whose other tasks read running jobs' pipes
            // meanwhile (`crate::process::off_workers`).
            let spawned = crate::process::off_workers(|| {
                // With the pid recorded under the same lock, the orphan
                // sweep never mistakes this process for an orphan.
                let _spawning = self
                    .inner
                    .sweeps
                    .spawning
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                let key = crate::orphans::job_key();
                let spawned = spawn(
                    id,
                    &crate::process::Marks {
                        instance: self.inner.sweeps.orphans.instance(),
                        supervisor: self.inner.sweeps.orphans.supervisor(),
                        job_key: &key,
                    },
                    &job.spec,
                    &secrets.values,
                    &crate::process::Setup {
                        result,
                        trigger: trigger.as_ref(),
                        params: params.as_ref(),
                        umask: cfg.job_umask,
                        run_as: cfg.run_as.as_ref(),
                    },
                );
                if let Ok(child) = &spawned {
                    self.set_started(id, Some(child.id()), key);
                }
                spawned
            });
            // The job has its own copy; the server reads the file by its
            // path once the job has ended.
            drop(result_file);
            drop(params);
            if let Some(t) = &mut trigger {
                t.spawned();
            }
            match spawned {
                Ok(child) => {
                    self.supervise(&job, child, &share, &mut log, &mut stop)
                        .await
                }
                Err(e) => {
                    log.note(
                        Stream::Error,
                        &format!(
                            "joblog: failed to start {:?}: {e}",
                            job.spec.command.first().map_or("", String::as_str)
                        ),
                        None,
                        Timestamp::now(),
                        &mut out,
                    );
                    Ending::NotStarted
                }
            }
        };

        let (mut state, exit_code) = match ending {
            Ending::Exited(status) => match status.code() {
                Some(0) => (JobState::Succeeded, Some(0)),
                Some(c) => (JobState::Failed, Some(c)),
                None => {
                    use std::os::unix::process::ExitStatusExt;
                    let sig = status.signal().unwrap_or(0);
                    log.note(
                        Stream::Error,
                        &format!("joblog: the job was killed by signal {sig}"),
                        None,
                        Timestamp::now(),
                        &mut out,
                    );
                    (JobState::Failed, None)
                }
            },
            Ending::Stopped(state) => (state, None),
            Ending::NotStarted => (JobState::Failed, None),
        };

        // A last line without newline may be the ::set-result::.
        log.end_of_output(Timestamp::now(), &mut out);
        // A result file (large results) wins over ::set-result:: (small).
        // A file's JSON is still unchecked; a ::set-result:: line's was
        // checked as it was read.
        let (result, unchecked) = match self.read_result_file(&result_path).await {
            Ok(Some(body)) => (Some(body), true),
            Ok(None) => match log.take_result() {
                Some(ResultText::Valid(text)) => (Some(text.into_bytes()), false),
                Some(ResultText::Invalid(_)) => {
                    // OutputParser already stored the error record.
                    state = fail(state);
                    (None, false)
                }
                None => (None, false),
            },
            Err(message) => {
                log.note(Stream::Error, &message, None, Timestamp::now(), &mut out);
                state = fail(state);
                (None, false)
            }
        };
        // Masked like the log: a secret must not get out through a result.
        let result = result.map(|body| log.mask_result(body));
        remove_result_path(&result_path);
        let result = match result {
            None => None,
            Some(body) => match encode_checked(id, body, unchecked).await {
                Ok(blob) => Some(blob),
                Err(message) => {
                    log.note(Stream::Error, &message, None, Timestamp::now(), &mut out);
                    state = fail(state);
                    None
                }
            },
        };

        log.finish(Timestamp::now(), &mut out);
        let summary = log.summary();
        if let Err(e) = self.inner.pipeline.append(&share, id, out, summary).await {
            tracing::error!(job = id, error = %e, "could not hand the last records over");
        }
        let unit = tracing::Span::current();
        unit.record("state", state.name());
        if let Some(code) = exit_code {
            unit.record("exit_code", code);
        }
        let ending = Finish {
            state,
            exit_code,
            result,
            summary,
            at: self.inner.clock.now(),
        };
        // Before the end is stored: the transaction that stores it queues
        // the next attempt, which a dispatcher may start at once.
        self.hold_for_retry(&job, state, secrets);
        match self.inner.pipeline.finish(id, ending).await {
            Ok(Some(done)) => {
                if let (Some(s), Some(f)) = (done.started_at, done.finished_at) {
                    self.inner
                        .metrics
                        .run_time
                        .observe(s.millis_until(f).max(0.0) / 1000.0);
                }
            }
            Ok(None) => tracing::warn!(
                job = id,
                state = state.name(),
                "the job had already been ended elsewhere (this node was taken for lapsed); \
                 its log is complete but its final state stays"
            ),
            Err(e) => tracing::error!(job = id, error = %e, "could not record the end of the job"),
        }
        self.inner
            .metrics
            .finished
            .get_or_create(&state_label(state))
            .inc();
    }

    /// Reads the job's output until its process has exited and its pipes
    /// are closed, stopping it on timeout, cancel or shutdown.
    async fn supervise(
        &self,
        job: &Job,
        mut child: crate::process::JobProcess,
        share: &JobShare,
        log: &mut OutputParser,
        stop: &mut watch::Receiver<Option<StopReason>>,
    ) -> Ending {
        let cfg = &self.inner.config;
        let pgid = Some(child.id());
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let mut buf_out = vec![0u8; READ_CHUNK];
        let mut buf_err = vec![0u8; READ_CHUNK];
        let mut out = Vec::new();
        let far = Instant::now() + Duration::from_secs(86400 * 365);
        let timeout_at = job
            .spec
            .timeout_s
            .map(|t| Instant::now() + Duration::from_secs_f64(t))
            .unwrap_or(far);
        let mut stopped: Option<JobState> = None;
        let mut kill_at = far;
        let mut drain_until = far;
        let mut status = None;
        let mut idle_at = far;
        // A partial line is shown once its pipe has been quiet this long.
        let mut last_data = Instant::now();

        while stdout.is_some() || stderr.is_some() || status.is_none() {
            // Reads come first: output already waiting in a pipe is read
            // before any timer may decide the pipe was idle.
            tokio::select! {
                biased;
                r = read_some(&mut stdout, &mut buf_out) => {
                    match r {
                        Some(n) => {
                            last_data = Instant::now();
                            log.push(Source::Stdout, &buf_out[..n], Timestamp::now(), &mut out);
                        }
                        None => {
                            stdout = None;
                            log.flush_partial(Source::Stdout, Timestamp::now(), &mut out);
                        }
                    }
                }
                r = read_some(&mut stderr, &mut buf_err) => {
                    match r {
                        Some(n) => {
                            last_data = Instant::now();
                            log.push(Source::Stderr, &buf_err[..n], Timestamp::now(), &mut out);
                        }
                        None => {
                            stderr = None;
                            log.flush_partial(Source::Stderr, Timestamp::now(), &mut out);
                        }
                    }
                }
                st = child.wait(), if status.is_none() => {
                    status = Some(st);
                    drain_until = Instant::now() + cfg.drain_after_exit;
                }
                _ = tokio::time::sleep_until(idle_at), if idle_at < far => {
                    let now = Timestamp::now();
                    log.flush_partial(Source::Stdout, now, &mut out);
                    log.flush_partial(Source::Stderr, now, &mut out);
                    // OutputParser may hold a partial back (it could be a
                    // workflow command): look again after another delay,
                    // not in a busy loop.
                    last_data = Instant::now();
                }
                _ = tokio::time::sleep_until(timeout_at), if stopped.is_none() && timeout_at < far => {
                    let t = job.spec.timeout_s.unwrap_or_default();
                    log.note(Stream::Error, &format!("joblog: timed out after {t}s; stopping the job"), None, Timestamp::now(), &mut out);
                    stopped = Some(JobState::TimedOut);
                    signal_group(pgid, Signal::SIGTERM);
                    kill_at = Instant::now() + cfg.kill_grace;
                }
                r = stop.changed(), if stopped.is_none() => {
                    let reason = if r.is_ok() { *stop.borrow() } else { Some(StopReason::Shutdown) };
                    if let Some(reason) = reason {
                        let (state, why) = stopped_by(reason);
                        log.note(Stream::Error, &format!("joblog: {why}; stopping the job"), None, Timestamp::now(), &mut out);
                        stopped = Some(state);
                        signal_group(pgid, Signal::SIGTERM);
                        kill_at = Instant::now() + cfg.kill_grace;
                    }
                }
                _ = tokio::time::sleep_until(kill_at), if kill_at < far => {
                    signal_group(pgid, Signal::SIGKILL);
                    kill_at = far;
                }
                _ = tokio::time::sleep_until(drain_until), if drain_until < far => {
                    // The main process is gone but something it started
                    // still holds the pipes: end it with the job.
                    signal_group(pgid, Signal::SIGKILL);
                    drain_until = far;
                    let now = Timestamp::now();
                    stdout = None;
                    stderr = None;
                    log.flush_partial(Source::Stdout, now, &mut out);
                    log.flush_partial(Source::Stderr, now, &mut out);
                }
            }
            idle_at = if log.has_partial(Source::Stdout) || log.has_partial(Source::Stderr) {
                last_data + cfg.idle_flush
            } else {
                far
            };
            if !out.is_empty() {
                // Waits only while the writer is behind: then the pipes are
                // not read and the job blocks on its own writes.
                self.hand_over(job.id, share, &mut out, log).await;
                // Time spent waiting for the writer is not the pipe's idleness.
                last_data = Instant::now();
            }
        }
        // Asked to stop while this task waited on the writer: the engine
        // signalled the group itself, and the job ended of it.
        if stopped.is_none() {
            if let Some(reason) = *stop.borrow() {
                let (state, why) = stopped_by(reason);
                log.note(
                    Stream::Error,
                    &format!("joblog: {why}; the job was stopped"),
                    None,
                    Timestamp::now(),
                    &mut out,
                );
                stopped = Some(state);
            }
        }
        self.hand_over(job.id, share, &mut out, log).await;
        // Whatever else is left of the group goes with the job.
        signal_group(pgid, Signal::SIGKILL);
        match (stopped, status) {
            (Some(state), _) => Ending::Stopped(state),
            (None, Some(Ok(st))) => Ending::Exited(st),
            (None, _) => Ending::Stopped(JobState::Failed),
        }
    }

    /// Hands the records in `out` to the pipeline, with the job's counters.
    async fn hand_over(
        &self,
        job: JobId,
        share: &JobShare,
        out: &mut Vec<Record>,
        log: &OutputParser,
    ) {
        if out.is_empty() {
            return;
        }
        let records = std::mem::take(out);
        if let Err(e) = self
            .inner
            .pipeline
            .append(share, job, records, log.summary())
            .await
        {
            tracing::error!(job, error = %e, "log pipeline closed under a running job");
        }
    }
}

/// Whether the node secret `name` may be given to the schedule
/// `schedule`: one of the patterns (`*`, `?`) listed for it matches.
pub(crate) fn secret_allowed(
    scopes: &std::collections::BTreeMap<String, Vec<String>>,
    name: &str,
    schedule: &str,
) -> bool {
    scopes.get(name).is_some_and(|patterns| {
        patterns
            .iter()
            .any(|p| joblog_core::NameFilter::parse(p).matches(schedule))
    })
}

/// The state a stopped job ends in, and the words its log says it with.
fn stopped_by(reason: StopReason) -> (JobState, &'static str) {
    match reason {
        StopReason::Cancel => (JobState::Cancelled, "cancelled"),
        StopReason::Shutdown => (JobState::Interrupted, "interrupted: the server is stopping"),
    }
}

fn fail(state: JobState) -> JobState {
    if state == JobState::Succeeded {
        JobState::Failed
    } else {
        state
    }
}

/// Reads from a pipe that may already be closed (then never resolves).
async fn read_some<R: AsyncReadExt + Unpin>(pipe: &mut Option<R>, buf: &mut [u8]) -> Option<usize> {
    match pipe {
        Some(p) => match p.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}
