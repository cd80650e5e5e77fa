//! Typed views of the API's answers, read the way a client reads them: a
//! field a test reads is named once, here, and an answer without it (or
//! with it of another type) fails where it is read, instead of comparing
//! `value["field"]`'s `null` with what was expected. A view holds what the
//! tests read, not every field: the OpenAPI document (checked on every
//! answer of the API tests) is the whole contract. The error body is the
//! exception: its view admits nothing else, as the one error shape says.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

/// Reads `json` as the view `T`; panics showing the JSON when it is not.
#[track_caller]
pub fn view<T: DeserializeOwned>(json: &Value) -> T {
    T::deserialize(json).unwrap_or_else(|e| {
        panic!(
            "not a {}: {e}: {json}",
            std::any::type_name::<T>()
                .rsplit("::")
                .next()
                .unwrap_or("view")
        )
    })
}

/// A job (`GET /api/v1/jobs/{id}`, an item of a listing).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Job {
    pub id: i64,
    pub name: Option<String>,
    /// `queued`, `running`, `succeeded`, `failed`, `cancelled`,
    /// `timed_out` or `interrupted`.
    pub state: String,
    pub exit_code: Option<i32>,
    pub node: Option<String>,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub log: LogSummary,
    /// A schedule's run: its schedule, the fire it runs for (none: run
    /// now) and its attempt at it.
    pub schedule_id: Option<i64>,
    pub fire_time: Option<String>,
    pub attempt: Option<u32>,
}

impl Job {
    /// Whether the job has ended, whichever way.
    pub fn is_finished(&self) -> bool {
        !matches!(self.state.as_str(), "queued" | "running")
    }
}

/// A job's log counters.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LogSummary {
    pub records: u64,
    pub bytes: u64,
    pub truncated: bool,
    /// Records per stream.
    pub streams: BTreeMap<String, u64>,
}

/// A page of jobs (`GET /api/v1/jobs`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct JobList {
    pub jobs: Vec<Job>,
}

/// A page of a job's log (`GET /api/v1/jobs/{id}/log`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LogPage {
    pub records: Vec<Record>,
    /// `after_seq` of the next page; none once the job has ended and no
    /// record follows.
    pub next_after_seq: Option<u64>,
}

/// One record of a job's log, as a page or an event stream gives it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Record {
    pub seq: u64,
    pub ts: String,
    /// `output`, `error`, `warning`, …
    pub stream: String,
    pub message: String,
    /// What a record carries besides its text (`continued`, a truncation's
    /// counts, an interruption's reason); none on most records.
    pub fields: Option<Map<String, Value>>,
}

/// The one error shape of every answer that is not a success:
/// `{"error": {"code", "message"}}` and nothing else.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorDetail {
    /// Stable, for programs (`job_not_found`).
    pub code: String,
    /// For people; names what was wrong.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{view, ErrorBody, Job, LogPage};

    fn job_json() -> serde_json::Value {
        json!({
            "id": 7, "name": null, "state": "running", "exit_code": null,
            "command": ["sh", "-c", "true"], "node": "a",
            "created_at": "2026-11-22T10:15:02.123456Z",
            "started_at": "2026-11-22T10:15:02.223456Z", "finished_at": null,
            "duration_ms": null,
            "log": {"records": 3, "bytes": 12, "truncated": false, "streams": {"output": 3}},
            "result": null, "cwd": null, "timeout_s": null, "env": {}, "secret_names": []
        })
    }

    #[test]
    fn a_job_is_read_with_the_fields_tests_use_and_others_ignored() {
        let job: Job = view(&job_json());
        assert_eq!((job.id, job.state.as_str()), (7, "running"));
        assert_eq!(job.log.records, 3);
        assert_eq!(job.log.streams["output"], 3);
        assert_eq!((job.schedule_id, job.attempt), (None, None));
        assert!(!job.is_finished());
    }

    #[test]
    #[should_panic(expected = "not a Job: missing field `state`")]
    fn a_job_without_a_field_tests_read_is_refused_where_it_is_read() {
        let mut json = job_json();
        json.as_object_mut().unwrap().remove("state");
        view::<Job>(&json);
    }

    #[test]
    fn a_log_page_reads_its_records_and_where_to_go_on() {
        let page: LogPage = view(&json!({
            "records": [
                {"seq": 1, "ts": "2026-11-22T10:15:02.123456Z", "stream": "output", "message": "a"},
                {"seq": 2, "ts": "2026-11-22T10:15:02.123457Z", "stream": "warning",
                 "message": "b", "fields": {"truncated": true}}
            ],
            "next_after_seq": null
        }));
        assert_eq!(page.records[0].fields, None);
        assert_eq!(page.records[1].fields.as_ref().unwrap()["truncated"], true);
        assert_eq!(page.next_after_seq, None);
    }

    #[test]
    fn an_error_body_admits_only_its_code_and_message() {
        let body: ErrorBody = view(&json!({"error": {"code": "c", "message": "m"}}));
        assert_eq!(
            (body.error.code.as_str(), body.error.message.as_str()),
            ("c", "m")
        );
        for extra in [
            json!({"error": {"code": "c", "message": "m"}, "detail": 1}),
            json!({"error": {"code": "c", "message": "m", "hint": "h"}}),
        ] {
            assert!(serde_json::from_value::<ErrorBody>(extra).is_err());
        }
    }
}
