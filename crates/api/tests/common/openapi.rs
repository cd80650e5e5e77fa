//! Every response the API tests see through [`super::send`], held to
//! `openapi.json`: its status must be listed for the operation, its media
//! type listed for that status, and a JSON body valid against the listed
//! schema (JSON Schema 2020-12, as OpenAPI 3.1 has it, formats checked).
//! So the document cannot drift from what the server answers: a new
//! status, a field that can be null, a bound the server does not keep
//! fails the test that first sees it. Paths the document does not have
//! (the UI's pages, the 404 and 405 fallbacks) are not checked.
//!
//! With `JOBLOG_OPENAPI_REPORT=FILE` every mismatch is appended to FILE
//! instead of failing its test: one run lists all of them, for whoever
//! brings the document up to date.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use axum::http::{Method, StatusCode};
use serde_json::Value;

static DOC: LazyLock<Value> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../../src/openapi.json")).expect("openapi.json is JSON")
});

/// Validators by the JSON pointer of their schema: compiling one reads the
/// whole document.
static VALIDATORS: LazyLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> =
    LazyLock::new(Mutex::default);

/// Fails the test (or, with `JOBLOG_OPENAPI_REPORT`, notes it there).
macro_rules! mismatch {
    ($($arg:tt)*) => {{
        let said = format!($($arg)*);
        match std::env::var_os("JOBLOG_OPENAPI_REPORT") {
            Some(file) => {
                use std::io::Write as _;
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(file)
                    .expect("the report file");
                writeln!(f, "{said}").expect("writing the report");
                return;
            }
            None => panic!("{said}"),
        }
    }};
}

/// Panics, saying what differs, when a response is not what the
/// document says `method path` answers.
pub fn check(
    method: &Method,
    path: &str,
    status: StatusCode,
    content_type: Option<&str>,
    body: &[u8],
) {
    let Some((template, op_pointer)) = operation(method, path) else {
        return;
    };
    let op = DOC.pointer(&op_pointer).expect("the operation");
    let code = status.as_str();
    let where_ = format!("{method} {path} ({template}) answered {status}");
    let (mut pointer, mut response) = match op["responses"].get(code) {
        Some(r) => (format!("{op_pointer}/responses/{code}"), r),
        None => mismatch!("{where_}, which openapi.json does not list"),
    };
    if let Some(reference) = response.get("$ref").and_then(Value::as_str) {
        pointer = reference.trim_start_matches('#').to_string();
        response = DOC.pointer(&pointer).expect("a response $ref resolves");
    }
    if body.is_empty() {
        return;
    }
    let Some(content) = response.get("content") else {
        mismatch!("{where_} with a body, where openapi.json lists none");
    };
    let media = content_type
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if content.get(&media).is_none() {
        let listed: Vec<&String> = content
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        mismatch!("{where_} as {media:?}; openapi.json lists {listed:?}");
    }
    if media != "application/json" {
        return;
    }
    let instance: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => mismatch!("{where_} with a body that is not JSON ({e})"),
    };
    let schema = format!("#{pointer}/content/{}/schema", escape(&media));
    let validator = validator(&schema);
    let errors: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| format!("  at {}: {e}", e.instance_path()))
        .collect();
    if !errors.is_empty() {
        mismatch!(
            "{where_}; the body does not match openapi.json's schema {schema}:\n{}\nbody: {instance}",
            errors.join("\n")
        );
    }
}

/// The document's operation for `method path`: its path template and the
/// JSON pointer of the operation. A literal segment beats a parameter.
fn operation(method: &Method, path: &str) -> Option<(String, String)> {
    let paths = DOC["paths"].as_object()?;
    let method = method.as_str().to_ascii_lowercase();
    let mut best: Option<(usize, &String)> = None;
    for (template, item) in paths {
        let prefix = match item["servers"][0]["url"].as_str() {
            Some("/") => "",
            _ => "/api/v1",
        };
        let Some(rest) = path.strip_prefix(prefix) else {
            continue;
        };
        let (ours, theirs): (Vec<&str>, Vec<&str>) =
            (rest.split('/').collect(), template.split('/').collect());
        if ours.len() != theirs.len() || item.get(&method).is_none() {
            continue;
        }
        let mut literal = 0;
        let matches = ours.iter().zip(&theirs).all(|(o, t)| {
            if t.starts_with('{') {
                !o.is_empty()
            } else {
                literal += 1;
                o == t
            }
        });
        if matches && best.is_none_or(|(l, _)| literal > l) {
            best = Some((literal, template));
        }
    }
    let (_, template) = best?;
    Some((
        template.clone(),
        format!("/paths/{}/{method}", escape(template)),
    ))
}

/// A JSON pointer's escaping of one key.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn validator(pointer: &str) -> Arc<jsonschema::Validator> {
    let mut cache = VALIDATORS.lock().unwrap();
    if let Some(v) = cache.get(pointer) {
        return v.clone();
    }
    // The whole document is the schema's resource, so that `$ref`s to
    // `#/components/schemas/…` resolve; its root only refers to the one
    // schema wanted (the document's other keys are no keywords).
    let mut root = DOC.clone();
    // A URI fragment: the braces of path templates percent-encoded.
    let fragment = pointer
        .replace('%', "%25")
        .replace('{', "%7B")
        .replace('}', "%7D");
    root["$ref"] = Value::from(fragment);
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&root)
        .unwrap_or_else(|e| panic!("openapi.json's schema {pointer} does not compile: {e}"));
    let validator = Arc::new(validator);
    cache.insert(pointer.to_string(), validator.clone());
    validator
}
