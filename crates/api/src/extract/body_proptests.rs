//! Property tests of JSON bodies: arbitrary bytes and JSON values through
//! the real extractor ([`JsonBody`]) into each route's body type and its
//! checks (a job submission's `validate`, a token's name and lifetime,
//! groom's policy). Each property says its invariant above it; each runs a
//! few thousand generated cases (`PROPTEST_CASES` overrides).

use std::collections::BTreeMap;

use axum::body::Body;
use axum::extract::FromRequest;
use axum::http::{header, Request, StatusCode};
use futures_util::FutureExt;
use joblog_core::{JobSpec, NewJobRequest, Role, Timestamp, ValidJob};
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::JsonBody;
use crate::error::{ApiError, ErrorCode};
use crate::handlers::groom::GroomRequest;
use crate::handlers::tokens::CreateToken;

/// The real extractor on a body sent with `content_type`, read through
/// the bound `limits::enforce` puts on it.
fn extract<T: DeserializeOwned>(
    content_type: Option<&str>,
    body: &[u8],
    limit: usize,
) -> Result<T, ApiError> {
    let body = http_body_util::Limited::new(Body::from(body.to_vec()), limit);
    let mut request = Request::post("/x");
    if let Some(ct) = content_type {
        request = request.header(header::CONTENT_TYPE, ct);
    }
    let request = request.body(Body::new(body)).unwrap();
    JsonBody::<T>::from_request(request, &())
        .now_or_never()
        .expect("a body in memory is read at once")
        .map(|JsonBody(t)| t)
}

fn json_body<T: DeserializeOwned>(value: &Value) -> Result<T, ApiError> {
    extract(
        Some("application/json"),
        value.to_string().as_bytes(),
        1 << 20,
    )
}

/// Content types, and whether each is JSON.
const CONTENT_TYPES: [(Option<&str>, bool); 8] = [
    (Some("application/json"), true),
    (Some("Application/JSON; charset=utf-8"), true),
    (Some("application/merge-patch+json"), true),
    (None, false),
    (Some(""), false),
    (Some("text/plain"), false),
    (Some("application/x-www-form-urlencoded"), false),
    (Some("application/jsonp"), false),
];

/// The fields of a job submission.
const JOB_FIELDS: [&str; 8] = [
    "command",
    "script",
    "shell",
    "name",
    "env",
    "secrets",
    "timeout_s",
    "cwd",
];

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop::sample::select(&[0.0, -0.0, -1.0, 1e-9, 30.0, 1e300, 3.2e9][..])
            .prop_map(Value::from),
    ]
}

fn text() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => prop::sample::select(&["", "sh", "a b", "/tmp", "rel", "ci-1", "viewer", "admin", "root"][..])
            .prop_map(Value::from),
        1 => any::<String>().prop_map(Value::from),
    ]
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        number(),
        text(),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map(any::<String>(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A value for `field`: mostly of its type, sometimes anything.
fn field(name: &'static str) -> BoxedStrategy<(&'static str, Value)> {
    let typed = match name {
        "command" => prop::collection::vec(text(), 0..4)
            .prop_map(Value::from)
            .boxed(),
        "env" | "secrets" => prop::collection::btree_map("[A-Z=]{0,3}", text(), 0..3)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
            .boxed(),
        "timeout_s" | "expires_s" | "older_than_s" | "keep_per_name" => number().boxed(),
        "role" => prop::sample::select(&["viewer", "operator", "admin", "root"][..])
            .prop_map(Value::from)
            .boxed(),
        _ => text().boxed(),
    };
    prop_oneof![9 => typed, 1 => any_json()]
        .prop_map(move |v| (name, v))
        .boxed()
}

/// An object shaped like one of the bodies (some of its fields, mostly of
/// their types), sometimes with an unknown field.
fn body_object() -> impl Strategy<Value = Value> {
    let shape = |fields: &'static [&'static str], p: f64| {
        fields
            .iter()
            .map(|f| prop::option::weighted(p, field(f)))
            .collect::<Vec<_>>()
    };
    // Mostly one of `command` and `script`, as a submission must have.
    let program = prop_oneof![
        4 => shape(&["command"], 0.99),
        2 => shape(&["script", "shell"], 0.9),
        1 => shape(&["command", "script", "shell"], 0.5),
    ];
    (
        prop_oneof![
            (program, shape(&JOB_FIELDS[3..], 0.4)).prop_map(|(a, b)| [a, b].concat()),
            shape(&["name", "role", "expires_s"], 0.8),
            shape(&["older_than_s", "keep_per_name"], 0.6),
        ],
        prop::option::weighted(0.1, "[a-z_]{1,8}"),
    )
        .prop_map(|(fields, unknown)| {
            let mut o: serde_json::Map<String, Value> = fields
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
            if let Some(u) = unknown {
                o.insert(u, Value::Null);
            }
            Value::Object(o)
        })
}

/// Bytes a client might send: JSON of the right shape or not, JSON cut
/// short or with junk spliced in, or anything.
fn body_bytes() -> impl Strategy<Value = Vec<u8>> {
    let json =
        prop_oneof![4 => body_object(), 1 => any_json()].prop_map(|v| v.to_string().into_bytes());
    prop_oneof![
        6 => json.clone(),
        1 => (json, any::<prop::sample::Index>(), prop::collection::vec(any::<u8>(), 0..4))
            .prop_map(|(mut b, at, junk)| {
                let at = at.index(b.len() + 1);
                b.splice(at..at, junk);
                b
            }),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ]
}

/// An error of the extractor: a stable code, its status, a message.
fn check_extract_error(e: &ApiError, json: bool, too_large: bool) -> Result<(), TestCaseError> {
    let expected = if !json {
        ErrorCode::UnsupportedMediaType
    } else if too_large {
        ErrorCode::BodyTooLarge
    } else {
        ErrorCode::InvalidJson
    };
    prop_assert_eq!(e.code, expected, "{}", e.message);
    let status = [
        StatusCode::BAD_REQUEST,
        StatusCode::PAYLOAD_TOO_LARGE,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
    ];
    prop_assert!(status.contains(&e.code.status()));
    if e.code == ErrorCode::InvalidJson {
        prop_assert!(e.message.starts_with("request body: "), "{}", e.message);
    }
    Ok(())
}

/// A refusal by a body's own checks: `400 invalid_request`, the message
/// starting with one of `fields`.
fn check_refusal(e: &ApiError, fields: &[&str]) -> Result<(), TestCaseError> {
    prop_assert_eq!(e.code, ErrorCode::InvalidRequest);
    prop_assert!(
        fields.iter().any(|f| e.message.starts_with(f)),
        "{:?} names none of {:?}",
        e.message,
        fields
    );
    Ok(())
}

/// Text without NUL (which no argument, variable or path can hold).
fn no_nul() -> impl Strategy<Value = String> {
    any::<String>().prop_map(|s| s.replace('\0', ""))
}

fn env_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    let key = "[^=\\x00]+";
    prop::collection::btree_map(key, no_nul(), 0..4)
}

/// A submission that `validate` accepts: a command (first argument not
/// empty) or a script with a shell, a name of 1 to 200 characters
/// without control characters, variables, secrets, a timeout up to 366
/// days, an absolute cwd; any Unicode otherwise.
fn valid_submission() -> impl Strategy<Value = NewJobRequest> {
    let program = prop_oneof![
        ("[^\\x00]+", prop::collection::vec(no_nul(), 0..4),).prop_map(|(first, rest)| (
            Some([vec![first], rest].concat()),
            None,
            None
        )),
        (no_nul(), prop::option::of("[^\\x00\\s]+")).prop_map(|(script, shell)| (
            None,
            Some(script),
            shell
        )),
    ];
    (
        program,
        prop::option::of("[^\\p{Cc}]{1,200}"),
        env_map(),
        env_map().prop_map(|m| {
            m.into_iter()
                .map(|(k, v)| (k, format!("s3cr3t{v}")))
                .collect()
        }),
        prop::option::of(prop_oneof![
            1e-9f64..=366.0 * 86400.0,
            (1u32..=366 * 86400).prop_map(f64::from),
        ]),
        prop::option::of(no_nul().prop_map(|p| format!("/{p}"))),
    )
        .prop_map(
            |((command, script, shell), name, env, secrets, timeout_s, cwd)| NewJobRequest {
                command,
                script,
                shell,
                name,
                env,
                secrets,
                timeout_s,
                cwd,
                concurrency_key: None,
                max_concurrent: None,
                node_selector: None,
                folder: None,
                params_schema: None,
                params: None,
                rerun_of: None,
            },
        )
}

/// Things wrong with a submission, each as the fields it sets, with the
/// field that must be named.
fn faults() -> Vec<(&'static str, Value)> {
    let program = |command: Value, script: Value, shell: Value| json!({"command": command, "script": script, "shell": shell});
    vec![
        ("command", program(json!([]), Value::Null, Value::Null)),
        (
            "command",
            program(json!(["", "x"]), Value::Null, Value::Null),
        ),
        (
            "command",
            program(json!(["sh", "a\0b"]), Value::Null, Value::Null),
        ),
        (
            "command",
            program(json!(["true"]), json!("true"), Value::Null),
        ),
        ("command", program(Value::Null, Value::Null, Value::Null)),
        (
            "shell",
            program(json!(["true"]), Value::Null, json!("bash")),
        ),
        ("shell", program(Value::Null, json!("true"), json!("ba sh"))),
        ("name", json!({"name": ""})),
        ("name", json!({"name": "a\u{85}b"})),
        ("name", json!({"name": "n".repeat(201)})),
        ("env", json!({"env": {"A=B": "1"}})),
        ("env", json!({"env": {"A": "1\0"}})),
        ("secrets", json!({"secrets": {"": "s3cr3t"}})),
        ("secrets", json!({"secrets": {"TOKEN": "s3cr3t\0"}})),
        ("concurrency_key", json!({"concurrency_key": ""})),
        ("concurrency_key", json!({"concurrency_key": "schedule:1"})),
        ("max_concurrent", json!({"max_concurrent": 2})),
        (
            "max_concurrent",
            json!({"concurrency_key": "db", "max_concurrent": 0}),
        ),
        ("timeout_s", json!({"timeout_s": -1})),
        ("timeout_s", json!({"timeout_s": 0})),
        ("timeout_s", json!({"timeout_s": 367 * 86400})),
        ("cwd", json!({"cwd": "relative/dir"})),
        ("cwd", json!({"cwd": ""})),
        ("node_selector", json!({"node_selector": {"role": "d b"}})),
        ("node_selector", json!({"node_selector": {"": "db"}})),
    ]
}

proptest! {
    #![proptest_config(joblog_testkit::proptest_config(2000))]

    /// Any bytes with any content type, read within any size bound: each
    /// body type is read, or refused with `415 unsupported_media_type`
    /// (not JSON), `413 body_too_large` (over the bound) or `400
    /// invalid_json`; a body read is then accepted or refused by its own
    /// checks with `400 invalid_request` naming a field. Nothing panics.
    #[test]
    fn any_body_is_read_or_refused_with_a_stable_code(
        (content_type, json) in prop_oneof![
            3 => prop::sample::select(&CONTENT_TYPES[..3]),
            1 => prop::sample::select(&CONTENT_TYPES[..]),
        ],
        body in body_bytes(),
        limit in prop_oneof![1 => 0usize..64, 4 => Just(1 << 20)],
    ) {
        let too_large = body.len() > limit;
        let now = Timestamp(1_700_000_000_000_000);
        match extract::<NewJobRequest>(content_type, &body, limit) {
            Ok(req) => {
                if let Err(e) = req.validate() {
                    let e = ApiError::new(ErrorCode::InvalidRequest, e.to_string());
                    check_refusal(&e, &JOB_FIELDS)?;
                }
            }
            Err(e) => check_extract_error(&e, json, too_large)?,
        }
        match extract::<CreateToken>(content_type, &body, limit) {
            Ok(req) => if let Err(e) = req.expiry(now) {
                check_refusal(&e, &["name: ", "expires_s: "])?;
            },
            Err(e) => check_extract_error(&e, json, too_large)?,
        }
        match extract::<GroomRequest>(content_type, &body, limit) {
            Ok(req) => if let Err(e) = req.policy(now) {
                check_refusal(&e, &["older_than_s: ", "give older_than_s"])?;
            },
            Err(e) => check_extract_error(&e, json, too_large)?,
        }
    }

    /// Any JSON value that is not an object (an array above all: serde
    /// reads a struct from one) is refused as `400 invalid_json`, for
    /// every body type.
    #[test]
    fn a_body_that_is_not_a_json_object_is_refused(
        value in any_json().prop_map(|v| match v {
            // An object becomes the array of its values: never an object.
            Value::Object(m) => Value::Array(m.into_iter().map(|(_, v)| v).collect()),
            other => other,
        }),
    ) {
        for e in [
            json_body::<NewJobRequest>(&value).err(),
            json_body::<CreateToken>(&value).err(),
            json_body::<GroomRequest>(&value).err(),
            json_body::<joblog_oplog::LoggingConfig>(&value).err(),
        ] {
            let e = e.expect("not an object, yet read");
            prop_assert_eq!(e.code, ErrorCode::InvalidJson, "{}", e.message);
        }
        let array = json!([["true"]]);
        let e = json_body::<NewJobRequest>(&array).expect_err("an array read as a job");
        prop_assert!(e.message.contains("must be a JSON object"), "{}", e.message);
    }

    /// A valid submission sent as JSON is read back exactly and validates
    /// to exactly what was sent (a script becomes `<shell> -c <script>`).
    #[test]
    fn a_valid_submission_round_trips_and_validates(req in valid_submission()) {
        let sent = serde_json::to_value(&req).unwrap();
        let read: NewJobRequest = json_body(&sent)
            .map_err(|e| TestCaseError::fail(format!("{sent}: {e}")))?;
        prop_assert_eq!(serde_json::to_value(&read).unwrap(), sent);
        let valid = read.validate().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (command, shell) = match (req.command, req.script) {
            (Some(command), None) => (command, None),
            (None, Some(script)) => {
                let shell = req.shell.unwrap_or_else(|| "sh".into());
                (vec![shell.clone(), "-c".into(), script], Some(shell))
            }
            _ => unreachable!(),
        };
        prop_assert_eq!(valid, ValidJob {
            name: req.name,
            spec: JobSpec {
                command,
                env: req.env,
                timeout_s: req.timeout_s,
                cwd: req.cwd,
                secret_names: req.secrets.keys().cloned().collect(),
                shell,
                rerun_of: None,
                schedule: None,
                concurrency: None,
                node_selector: Default::default(),
                folder: None,
                ..JobSpec::default()
            },
            secrets: req.secrets,
        });
    }

    /// A valid submission with one thing wrong, sent as JSON, is refused,
    /// the error naming that field first and never quoting a secret.
    #[test]
    fn an_invalid_submission_is_refused_naming_its_field(
        req in valid_submission(),
        (field, fault) in prop::sample::select(faults()),
    ) {
        let mut body = serde_json::to_value(&req).unwrap();
        for (k, v) in fault.as_object().unwrap() {
            body[k] = v.clone();
        }
        let read: NewJobRequest = json_body(&body)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let e = read.validate().expect_err("a fault must be refused");
        prop_assert_eq!(&e.field, field);
        let message = e.to_string();
        prop_assert!(message.starts_with(&format!("{field}: ")), "{}", message);
        prop_assert!(!message.contains("s3cr3t"), "{}", message);
    }

    /// A token request is read back exactly; it is accepted iff its name
    /// is 1 to 64 of `A-Za-z0-9._-` and its lifetime is absent or above 0
    /// and at most 100 years, expiring that long after its creation; else
    /// refused naming `name` (checked first) or `expires_s`.
    #[test]
    fn a_token_request_is_accepted_or_refused_naming_its_field(
        name in prop_oneof!["[A-Za-z0-9._-]{1,64}", any::<String>()],
        role in prop::sample::select(&Role::ALL[..]),
        expires_s in prop::option::of(prop_oneof![
            1e-6f64..=3.1536e9,
            any::<f64>().prop_filter("JSON has no NaN or infinity", |f| f.is_finite()),
        ]),
        created in 0i64..4_000_000_000_000_000,
    ) {
        let mut body = json!({"name": name, "role": role});
        if let Some(s) = expires_s {
            body["expires_s"] = json!(s);
        }
        let req: CreateToken = json_body(&body).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!((&req.name, req.role, req.expires_s), (&name, role, expires_s));
        let name_ok = joblog_core::validate_token_name(&name).is_ok();
        let expires_ok = expires_s.is_none_or(|s| s > 0.0 && s <= 100.0 * 365.0 * 86400.0);
        match req.expiry(Timestamp(created)) {
            Ok(at) => {
                prop_assert!(name_ok && expires_ok);
                let expected = expires_s.map(|s| Timestamp(created + (s * 1e6) as i64));
                prop_assert_eq!(at, expected);
            }
            Err(e) => {
                prop_assert!(!(name_ok && expires_ok));
                check_refusal(&e, &[if name_ok { "expires_s: " } else { "name: " }])?;
            }
        }
    }
}
