//! Columns as both databases store them, and their conversion to domain
//! types, so that each store only maps its own row type.

use joblog_core::{
    Folders, Given, Job, JobId, JobSpec, JobState, Labels, LogSummary, NodeInfo, Record, Role,
    Stream, StreamCounts, Timestamp, TokenInfo,
};

use crate::db::{Decode, Message, Row, SmallInt};
use crate::{Result, StoreError};

/// The columns of the jobs table every request reads, in this order, as a
/// literal so that constant SQL can be built with `concat!`.
macro_rules! job_columns {
    () => {
        "id, name, state, exit_code, spec, node, created_at, started_at, finished_at, \
         log_records, log_bytes, log_truncated, log_streams, result_bytes, run_after"
    };
}
pub(crate) use job_columns;

/// [`job_columns!`] as a constant, for SQL built at run time.
pub(crate) const JOB_COLUMNS: &str = job_columns!();

/// How many columns [`job_columns!`] names: a statement returning more
/// after them reads those from this position.
pub(crate) const JOB_COLUMN_COUNT: usize = {
    let bytes = JOB_COLUMNS.as_bytes();
    let (mut i, mut n) = (0, 1);
    while i < bytes.len() {
        if bytes[i] == b',' {
            n += 1;
        }
        i += 1;
    }
    n
};

/// A jobs row, as stored.
pub(crate) struct JobRow {
    pub id: JobId,
    pub name: Option<String>,
    pub state: String,
    pub exit_code: Option<i32>,
    pub spec: String,
    pub node: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub log_records: i64,
    pub log_bytes: i64,
    pub log_truncated: bool,
    pub log_streams: String,
    pub result_bytes: Option<i64>,
    pub run_after: Option<i64>,
}

impl JobRow {
    pub fn into_job(self) -> Result<Job> {
        let id = self.id;
        let state = JobState::parse(&self.state)
            .ok_or_else(|| StoreError::Corrupt(format!("job {id} has state {:?}", self.state)))?;
        let spec: JobSpec = serde_json::from_str(&self.spec)
            .map_err(|e| StoreError::Corrupt(format!("job {id} spec: {e}")))?;
        let mut job = Job {
            id,
            name: self.name,
            state,
            exit_code: self.exit_code,
            command: spec.command.clone(),
            command_truncated: false,
            env_truncated: false,
            node: self.node,
            created_at: Timestamp(self.created_at),
            started_at: self.started_at.map(Timestamp),
            finished_at: self.finished_at.map(Timestamp),
            duration_ms: None,
            log: LogSummary {
                records: self.log_records as u64,
                bytes: self.log_bytes as u64,
                truncated: self.log_truncated,
                streams: streams_from_text(&self.log_streams)?,
            },
            result: None,
            given: Given::of(&spec),
            run_after: self.run_after.map(Timestamp),
            waiting_for: None,
            spec,
        };
        job.set_result_bytes(self.result_bytes.map(|b| b as u64));
        Ok(job.with_duration())
    }
}

/// A row of [`job_columns!`].
impl Decode for Job {
    fn decode(row: &impl Row) -> Result<Job> {
        JobRow {
            id: row.get(0)?,
            name: row.get(1)?,
            state: row.get(2)?,
            exit_code: row.get(3)?,
            spec: row.get(4)?,
            node: row.get(5)?,
            created_at: row.get(6)?,
            started_at: row.get(7)?,
            finished_at: row.get(8)?,
            log_records: row.get(9)?,
            log_bytes: row.get(10)?,
            log_truncated: row.get(11)?,
            log_streams: row.get(12)?,
            result_bytes: row.get(13)?,
            run_after: row.get(14)?,
        }
        .into_job()
    }
}

/// The columns of the log every record read takes, in this order.
macro_rules! record_columns {
    () => {
        "seq, ts, stream, message, fields"
    };
}
pub(crate) use record_columns;

/// A row of [`record_columns!`].
impl Decode for Record {
    fn decode(row: &impl Row) -> Result<Record> {
        RecordRow {
            seq: row.get(0)?,
            ts: row.get(1)?,
            stream: row.get::<SmallInt>(2)?.0,
            message: row.get::<Message>(3)?.0.unwrap_or_default(),
            fields: row.get(4)?,
        }
        .into_record()
    }
}

/// A log row, as stored.
pub(crate) struct RecordRow {
    pub seq: i64,
    pub ts: i64,
    pub stream: i64,
    pub message: String,
    pub fields: Option<String>,
}

impl RecordRow {
    pub fn into_record(self) -> Result<Record> {
        let seq = self.seq;
        let stream = Stream::from_code(self.stream).ok_or_else(|| {
            StoreError::Corrupt(format!("record {seq} has stream {}", self.stream))
        })?;
        let fields = match self.fields {
            None => None,
            Some(f) => Some(
                serde_json::from_str(&f)
                    .map_err(|e| StoreError::Corrupt(format!("record {seq} fields: {e}")))?,
            ),
        };
        Ok(Record {
            seq: seq as u64,
            ts: Timestamp(self.ts),
            stream,
            message: self.message,
            fields,
        })
    }
}

/// The `fields` column of a record: its JSON object as text.
pub(crate) fn fields_text(r: &Record) -> Option<String> {
    r.fields
        .as_ref()
        .map(|f| serde_json::Value::Object(f.clone()).to_string())
}

pub(crate) fn streams_to_text(s: &StreamCounts) -> String {
    let parts: Vec<String> = s.0.iter().map(u64::to_string).collect();
    parts.join(",")
}

fn streams_from_text(t: &str) -> Result<StreamCounts> {
    let mut out = StreamCounts::default();
    for (i, p) in t.split(',').enumerate().take(7) {
        out.0[i] = p
            .parse()
            .map_err(|_| StoreError::Corrupt(format!("log_streams {t:?}")))?;
    }
    Ok(out)
}

/// Bit mask of the streams asked for; all bits set = no filter. One mask
/// keeps one statement whatever streams are asked for.
pub(crate) fn stream_mask(streams: &Option<Vec<Stream>>) -> i64 {
    match streams {
        None => 0x7f,
        Some(streams) => streams.iter().fold(0, |m, s| m | (1 << s.code())),
    }
}

/// The columns of the tokens table a listing reads, in this order.
macro_rules! token_columns {
    () => {
        "name, role, created_at, expires_at, last_used_at, folders"
    };
}
pub(crate) use token_columns;

/// A row of [`token_columns!`].
impl Decode for TokenInfo {
    fn decode(row: &impl Row) -> Result<TokenInfo> {
        TokenRow {
            name: row.get(0)?,
            role: row.get(1)?,
            created_at: row.get(2)?,
            expires_at: row.get(3)?,
            last_used_at: row.get(4)?,
            folders: row.get(5)?,
        }
        .into_info()
    }
}

/// A tokens row, as stored (without its hash).
pub(crate) struct TokenRow {
    pub name: String,
    pub role: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
    /// [`folders_text`]'s form.
    pub folders: Option<String>,
}

/// The folders of a token or user as stored: a JSON object of folder →
/// role; `NULL` for every folder.
pub(crate) fn folders_text(folders: Option<&Folders>) -> Option<String> {
    folders.map(|f| serde_json::to_string(f).expect("a map of names to roles is JSON"))
}

/// The folders of `owner` (a token or user) read back.
pub(crate) fn folders_of(owner: &str, text: Option<String>) -> Result<Option<Folders>> {
    text.map(|text| {
        serde_json::from_str(&text)
            .map_err(|e| StoreError::Corrupt(format!("{owner:?} has folders {text:?}: {e}")))
    })
    .transpose()
}

impl TokenRow {
    pub fn into_info(self) -> Result<TokenInfo> {
        let role = Role::parse(&self.role).ok_or_else(|| {
            StoreError::Corrupt(format!("token {:?} has role {:?}", self.name, self.role))
        })?;
        let folders = folders_of(&self.name, self.folders)?;
        Ok(TokenInfo {
            name: self.name,
            role,
            created_at: Timestamp(self.created_at),
            expires_at: self.expires_at.map(Timestamp),
            last_used_at: self.last_used_at.map(Timestamp),
            folders,
        })
    }
}

/// A nodes row with its running jobs counted, as both stores list it
/// (times in micros since the epoch).
pub(crate) struct NodeRow {
    pub name: String,
    pub version: Option<String>,
    pub started_at: i64,
    pub heartbeat_at: i64,
    pub stopped_at: Option<i64>,
    pub running_jobs: i64,
    /// A JSON array of names (`NULL`: registered before they were kept).
    pub secret_names: Option<String>,
    /// `Labels::canonical`'s form.
    pub labels: String,
    pub drain_at: Option<i64>,
    pub presumed_lapsed: bool,
}

impl NodeRow {
    pub fn into_info(self) -> Result<NodeInfo> {
        let running_jobs = u64::try_from(self.running_jobs).map_err(|_| {
            StoreError::Corrupt(format!(
                "node {:?} counts {} running jobs",
                self.name, self.running_jobs
            ))
        })?;
        let secret_names = match &self.secret_names {
            None => Vec::new(),
            Some(text) => serde_json::from_str(text).map_err(|e| {
                StoreError::Corrupt(format!(
                    "node {:?} has secret names {text:?}: {e}",
                    self.name
                ))
            })?,
        };
        let labels = Labels::parse(&self.labels).map_err(|e| {
            StoreError::Corrupt(format!(
                "node {:?} has labels {:?}: {e}",
                self.name, self.labels
            ))
        })?;
        Ok(NodeInfo {
            labels,
            drain_at: self.drain_at.map(Timestamp),
            presumed_lapsed: self.presumed_lapsed,
            name: self.name,
            version: self.version,
            started_at: Timestamp(self.started_at),
            heartbeat_at: Timestamp(self.heartbeat_at),
            stopped_at: self.stopped_at.map(Timestamp),
            running_jobs,
            secret_names,
        })
    }
}

/// A row of a node listing: name, version, started, heartbeat and
/// stopped (micros), running jobs, secret names, labels, drain asked
/// (micros), presumed lapsed.
impl Decode for NodeInfo {
    fn decode(row: &impl Row) -> Result<NodeInfo> {
        NodeRow {
            name: row.get(0)?,
            version: row.get(1)?,
            started_at: row.get(2)?,
            heartbeat_at: row.get(3)?,
            stopped_at: row.get(4)?,
            running_jobs: row.get(5)?,
            secret_names: row.get(6)?,
            labels: row.get(7)?,
            drain_at: row.get(8)?,
            presumed_lapsed: row.get(9)?,
        }
        .into_info()
    }
}

/// The names of the secrets a node holds, as the nodes table keeps them
/// (a JSON array; read back by [`NodeRow::into_info`]).
pub(crate) fn secret_names_text(names: &[String]) -> String {
    serde_json::Value::from(names.to_vec()).to_string()
}

/// A row of [`crate::FINISHED_BY_NAME`].
impl Decode for crate::FinishedByName {
    fn decode(row: &impl Row) -> Result<Self> {
        let name: Option<String> = row.get(0)?;
        let state: String = row.get(1)?;
        finished_by_name(name, &state, row.get(2)?, row.get(3)?)
    }
}

fn finished_by_name(
    name: Option<String>,
    state: &str,
    jobs: i64,
    last_finished: Option<i64>,
) -> Result<crate::FinishedByName> {
    Ok(crate::FinishedByName {
        state: JobState::parse(state)
            .ok_or_else(|| StoreError::Corrupt(format!("jobs of {name:?} have state {state:?}")))?,
        name,
        jobs: jobs as u64,
        last_finished: Timestamp(last_finished.unwrap_or(0)),
    })
}

/// A row of [`crate::FINISHED_BY_SCHEDULE`].
impl Decode for crate::FinishedBySchedule {
    fn decode(row: &impl Row) -> Result<Self> {
        let state: String = row.get(1)?;
        finished_by_schedule(row.get(0)?, &state, row.get(2)?)
    }
}

fn finished_by_schedule(
    schedule_id: i64,
    state: &str,
    last_finished: Option<i64>,
) -> Result<crate::FinishedBySchedule> {
    Ok(crate::FinishedBySchedule {
        state: JobState::parse(state).ok_or_else(|| {
            StoreError::Corrupt(format!(
                "jobs of schedule {schedule_id} have state {state:?}"
            ))
        })?,
        schedule_id,
        last_finished: Timestamp(last_finished.unwrap_or(0)),
    })
}

#[cfg(test)]
mod tests {
    /// [`Job`]'s decoder reads columns 0 to 14: statements that return
    /// more after a job read them from [`super::JOB_COLUMN_COUNT`].
    #[test]
    fn job_column_count_is_what_the_decoder_reads() {
        assert_eq!(super::JOB_COLUMN_COUNT, 15);
    }
}
