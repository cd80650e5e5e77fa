//! The web UI's files, embedded in the binary (`crates/api/ui/`): the same
//! HTML page for every UI path, which then asks the JSON API for data as the
//! caller's token allows. Serving them needs no token: they hold no data.
//!
//! There is no build step: the files are plain ES modules and CSS, so what
//! is in the repository is what browsers run.

use axum::extract::{Path, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Extension;
use serde::Serialize;

use crate::auth::Identity;
use crate::error::{ApiError, ErrorCode};

/// `(name, content type, body)` of every file under `/ui/`.
const ASSETS: &[(&str, &str, &str)] = &[
    ("app.js", JS, include_str!("../ui/app.js")),
    ("api.js", JS, include_str!("../ui/api.js")),
    ("ansi.js", JS, include_str!("../ui/ansi.js")),
    ("audit.js", JS, include_str!("../ui/audit.js")),
    ("dom.js", JS, include_str!("../ui/dom.js")),
    ("jobs.js", JS, include_str!("../ui/jobs.js")),
    ("live.js", JS, include_str!("../ui/live.js")),
    ("job.js", JS, include_str!("../ui/job.js")),
    ("job-log.js", JS, include_str!("../ui/job-log.js")),
    ("result.js", JS, include_str!("../ui/result.js")),
    ("schedules.js", JS, include_str!("../ui/schedules.js")),
    ("schedule.js", JS, include_str!("../ui/schedule.js")),
    (
        "schedule-form.js",
        JS,
        include_str!("../ui/schedule-form.js"),
    ),
    (
        "schedule-runs.js",
        JS,
        include_str!("../ui/schedule-runs.js"),
    ),
    (
        "result-worker.js",
        JS,
        include_str!("../ui/result-worker.js"),
    ),
    ("sources.js", JS, include_str!("../ui/sources.js")),
    ("submit.js", JS, include_str!("../ui/submit.js")),
    ("viewer.js", JS, include_str!("../ui/viewer.js")),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../ui/style.css"),
    ),
];

const JS: &str = "text/javascript; charset=utf-8";
const INDEX: &str = include_str!("../ui/index.html");

/// The UI's routes. `app()` merges them after the access rules: they are
/// served to anyone, like `/healthz`, and are not part of the JSON API (its
/// OpenAPI document and rules table do not list them).
pub fn router<S: Clone + Send + Sync + 'static>() -> axum::Router<S> {
    axum::Router::new()
        .route("/", get(page))
        .route("/jobs/{id}", get(page))
        .route("/submit", get(page))
        .route("/audit", get(page))
        .route("/schedules", get(page))
        .route("/schedules/{id}", get(page))
        .route("/ui/{file}", get(asset))
}

/// `/`, `/jobs/{id}`, `/submit`, `/audit`, `/schedules`,
/// `/schedules/{id}` and `/schedules/new`: the page, which routes itself.
async fn page(req: Request) -> Response {
    file(&req, "text/html; charset=utf-8", INDEX)
}

/// `/ui/{file}`.
async fn asset(Path(name): Path<String>, req: Request) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, kind, body)) => file(&req, kind, body),
        None => ApiError::new(ErrorCode::NotFound, "no such file of the web UI").into_response(),
    }
}

/// A file with an `ETag` of its content, revalidated on every use
/// (`no-cache`), so a new binary's UI is picked up at once and an unchanged
/// one costs a `304`.
fn file(req: &Request, kind: &'static str, body: &'static str) -> Response {
    let etag = format!("\"{:016x}\"", fnv1a(body.as_bytes()));
    let matches = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut res = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, kind)], body).into_response()
    };
    let headers = res.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, v);
    }
    res
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[derive(Serialize)]
pub struct WhoAmI {
    name: String,
    role: joblog_core::Role,
}

/// `GET /api/v1/whoami`: the caller's name and role, so the UI offers only
/// what the role allows.
pub async fn whoami(Extension(who): Extension<Identity>) -> axum::Json<WhoAmI> {
    axum::Json(WhoAmI {
        name: who.name().to_string(),
        role: who.role,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_the_ui_imports_is_served() {
        let served: Vec<&str> = ASSETS.iter().map(|(n, _, _)| *n).collect();
        for (name, _, body) in ASSETS {
            for line in body.lines() {
                let Some(rest) = line.split(" from \"./").nth(1) else {
                    continue;
                };
                let file = rest.split('"').next().unwrap_or_default();
                assert!(
                    served.contains(&file),
                    "{name} imports {file}, which is not served"
                );
            }
        }
        for needed in ["/ui/app.js", "/ui/style.css"] {
            assert!(INDEX.contains(needed), "index.html does not load {needed}");
        }
        // Workers are started by URL, `new Worker("/ui/…")`, when needed.
        let mut workers = Vec::new();
        for (name, _, body) in ASSETS {
            for rest in body.split("new Worker(\"/ui/").skip(1) {
                let file = rest.split('"').next().unwrap_or_default();
                assert!(
                    served.contains(&file),
                    "{name} starts the worker {file}, which is not served"
                );
                workers.push(file);
            }
        }
        // Every other module is fetched at once with the page, not import
        // by import; a worker is not (the page's own module map is no use
        // to a worker, which fetches it again).
        for (name, kind, _) in ASSETS {
            if *kind == JS && *name != "app.js" {
                let preload = format!("<link rel=\"modulepreload\" href=\"/ui/{name}\">");
                let worker = workers.contains(name);
                assert!(
                    INDEX.contains(&preload) != worker,
                    "index.html must preload {name} if and only if it is not a worker"
                );
            }
        }
    }

    #[test]
    fn the_ui_never_parses_html_from_data() {
        // Job output is text: rows are built with textContent and text
        // nodes. None of these may appear anywhere in the UI's code.
        for (name, _, body) in ASSETS {
            for banned in [
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
                "DOMParser",
                "createContextualFragment",
                "eval(",
                "new Function",
            ] {
                assert!(!body.contains(banned), "{name} uses {banned}");
            }
        }
    }
}
