//! Any body as a job submission (`POST /api/v1/jobs`), sent with one of
//! several content types and read within a size bound: through the JSON
//! body extractor and `NewJobRequest::validate`. Nothing panics; the job
//! is valid, or the refusal has one of the codes a body can get, and a
//! refusal by validation names the field.

#![no_main]

use joblog_api::ErrorCode;
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    content_type: u8,
    /// The size bound; none: the default 1 MiB.
    limit: Option<u16>,
    body: Vec<u8>,
}

const CONTENT_TYPES: [Option<&str>; 5] = [
    Some("application/json"),
    Some("application/merge-patch+json; charset=utf-8"),
    None,
    Some("text/plain"),
    Some("application/x-www-form-urlencoded"),
];

const FIELDS: [&str; 8] = [
    "command",
    "script",
    "shell",
    "name",
    "env",
    "secrets",
    "timeout_s",
    "cwd",
];

fuzz_target!(|input: Input| {
    let content_type = CONTENT_TYPES[usize::from(input.content_type) % CONTENT_TYPES.len()];
    let limit = input.limit.map_or(1 << 20, usize::from);
    match joblog_api::fuzzing::submission(content_type, &input.body, limit) {
        Ok(job) => {
            let program = job.spec.command.first().expect("a program");
            assert!(!program.is_empty());
            assert!(job.spec.command.iter().all(|a| !a.contains('\0')));
        }
        Err(e) => {
            let codes = [
                ErrorCode::UnsupportedMediaType,
                ErrorCode::BodyTooLarge,
                ErrorCode::InvalidJson,
                ErrorCode::InvalidRequest,
            ];
            assert!(codes.contains(&e.code), "{e}");
            if e.code == ErrorCode::InvalidRequest {
                let named = FIELDS
                    .iter()
                    .any(|f| e.message.starts_with(&format!("{f}: ")));
                assert!(named, "{e}");
            }
        }
    }
});
