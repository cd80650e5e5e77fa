//! The web UI's files, embedded in the binary (`crates/api/ui/`), and its
//! pages: one HTML shell (`index.html`) for every page path, which then asks
//! the JSON API for data as the caller's token allows. Serving them needs no
//! token: they hold no data.
//!
//! There is no build step: the files are plain ES modules and CSS, so what
//! is in the repository is what browsers run.
//!
//! The pages are declared once, in [`PAGES`]: a path, the module that draws
//! the page and that module's exports. From it follow the page's route,
//! what the shell served at that path names as its page (a `<meta
//! name="joblog-page">` that `app.js` loads the module by) and the
//! `modulepreload` links that fetch every module the page needs at once,
//! rather than import by import: those of `app.js` and of the page's
//! module, followed through their imports. A worker is never preloaded (a
//! worker fetches its modules again).

use std::sync::LazyLock;

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
    ("deliveries.js", JS, include_str!("../ui/deliveries.js")),
    ("dom.js", JS, include_str!("../ui/dom.js")),
    ("jobs.js", JS, include_str!("../ui/jobs.js")),
    ("live.js", JS, include_str!("../ui/live.js")),
    ("nodes.js", JS, include_str!("../ui/nodes.js")),
    ("scheduler.js", JS, include_str!("../ui/scheduler.js")),
    (
        "notifications.js",
        JS,
        include_str!("../ui/notifications.js"),
    ),
    ("job.js", JS, include_str!("../ui/job.js")),
    ("job-log.js", JS, include_str!("../ui/job-log.js")),
    ("params-form.js", JS, include_str!("../ui/params-form.js")),
    ("result.js", JS, include_str!("../ui/result.js")),
    ("schedules.js", JS, include_str!("../ui/schedules.js")),
    ("search.js", JS, include_str!("../ui/search.js")),
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
    ("sessions.js", JS, include_str!("../ui/sessions.js")),
    ("sources.js", JS, include_str!("../ui/sources.js")),
    ("submit.js", JS, include_str!("../ui/submit.js")),
    ("users.js", JS, include_str!("../ui/users.js")),
    ("viewer.js", JS, include_str!("../ui/viewer.js")),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../ui/style.css"),
    ),
];

const JS: &str = "text/javascript; charset=utf-8";
const INDEX: &str = include_str!("../ui/index.html");

/// A page of the UI: the path it is served at (an axum route, whose
/// `{…}` segments are ids, a job's or a schedule's) and the module that
/// draws it, with that module's exports: `show(main, me, params, early)`
/// draws the page; `prefetch(params)`, if the page has one, asks for its
/// data while the UI asks who the caller is, and its answer is `early`.
#[derive(Serialize)]
struct Page {
    path: &'static str,
    module: &'static str,
    show: &'static str,
    prefetch: Option<&'static str>,
}

/// Every page. A page is added here and nowhere else. The first, the job
/// list, is also what a page path whose id is not a number shows, as a
/// mistyped link always has.
const PAGES: &[Page] = &[
    page("/", "jobs.js", "jobsPage"),
    Page {
        prefetch: Some("prefetchJob"),
        ..page("/jobs/{id}", "job.js", "jobPage")
    },
    page("/submit", "submit.js", "submitPage"),
    page("/audit", "audit.js", "auditPage"),
    page("/search", "search.js", "searchPage"),
    page("/schedules", "schedules.js", "schedulesPage"),
    page("/schedules/new", "schedule-form.js", "newSchedulePage"),
    page("/schedules/{id}", "schedule.js", "schedulePage"),
    page("/notifications", "notifications.js", "notificationsPage"),
    page("/nodes", "nodes.js", "nodesPage"),
    page("/users", "users.js", "usersPage"),
];

/// A page without a prefetch.
const fn page(path: &'static str, module: &'static str, show: &'static str) -> Page {
    Page {
        path,
        module,
        show,
        prefetch: None,
    }
}

/// Where in `index.html` the page's `<meta>` and preloads go.
const SLOT: &str = "<!-- page -->";

/// The shell as served for each of [`PAGES`], in its order.
static SHELLS: LazyLock<Vec<String>> = LazyLock::new(|| {
    PAGES
        .iter()
        .map(|p| INDEX.replace(SLOT, &head(p)))
        .collect()
});

/// The page's `<meta>` and a `modulepreload` of each module it needs.
fn head(page: &Page) -> String {
    let json = serde_json::to_string(page).expect("a page is strings, which always serialize");
    let mut head = format!(
        "<meta name=\"joblog-page\" content=\"{}\">",
        attribute(&json)
    );
    for module in preloads(page) {
        head.push_str(&format!(
            "\n<link rel=\"modulepreload\" href=\"/ui/{module}\">"
        ));
    }
    head
}

/// The modules `app.js` and `page` need, each once: theirs and those they
/// import, and so on.
fn preloads(page: &Page) -> Vec<&'static str> {
    let mut found = Vec::new();
    let mut next = vec!["app.js", page.module];
    let mut at = 0;
    while at < next.len() {
        let name = next[at];
        at += 1;
        if found.contains(&name) {
            continue;
        }
        found.push(name);
        if let Some((_, _, body)) = find(name) {
            next.extend(imports(body));
        }
    }
    // `app.js` is the shell's own script.
    found.retain(|n| *n != "app.js");
    found
}

/// The modules `body` imports (`… from "./x.js"`, the one form the UI uses).
fn imports(body: &'static str) -> impl Iterator<Item = &'static str> {
    body.lines().filter_map(|line| {
        let rest = line.split(" from \"./").nth(1)?;
        rest.split('"').next()
    })
}

/// `text` as the value of a double-quoted HTML attribute.
fn attribute(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The UI's routes: one per page, and its files. `app()` merges them after
/// the access rules: they are served to anyone, like `/healthz`, and are
/// not part of the JSON API (its OpenAPI document and rules table do not
/// list them).
pub fn router<S: Clone + Send + Sync + 'static>() -> axum::Router<S> {
    PAGES
        .iter()
        .enumerate()
        .fold(axum::Router::new(), |router, (i, page)| {
            router.route(page.path, get(move |req: Request| shell(i, req)))
        })
        .route("/ui/{file}", get(asset))
}

/// The shell of `PAGES[i]`, which draws the page; of the job list if an id
/// in the path is not a number.
async fn shell(i: usize, req: Request) -> Response {
    let i = if ids_are_numbers(PAGES[i].path, req.uri().path()) {
        i
    } else {
        0
    };
    file(&req, "text/html; charset=utf-8", &SHELLS[i])
}

/// Whether each `{…}` segment of `pattern` is digits in `path`, as sent:
/// `app.js` reads the ids from the URL as the browser keeps it, where
/// `%31` is no number.
fn ids_are_numbers(pattern: &str, path: &str) -> bool {
    pattern.split('/').zip(path.split('/')).all(|(p, s)| {
        !p.starts_with('{') || (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// `/ui/{file}`.
async fn asset(Path(name): Path<String>, req: Request) -> Response {
    match find(&name) {
        Some((_, kind, body)) => file(&req, kind, body),
        None => ApiError::new(ErrorCode::NotFound, "no such file of the web UI").into_response(),
    }
}

fn find(name: &str) -> Option<&'static (&'static str, &'static str, &'static str)> {
    ASSETS.iter().find(|(n, _, _)| *n == name)
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
    /// The folders the caller is limited to, with the role in each;
    /// absent: every folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    folders: Option<joblog_core::Folders>,
    /// `session`, `token`, `bootstrap` or `anonymous`.
    via: &'static str,
    /// A session's CSRF token, which its changes carry (a new tab learns
    /// it here, by the cookie).
    #[serde(skip_serializing_if = "Option::is_none")]
    csrf_token: Option<String>,
}

/// `GET /api/v1/whoami`: the caller's name and role, so the UI offers only
/// what the role allows, and how they were known.
pub async fn whoami(Extension(who): Extension<Identity>) -> axum::Json<WhoAmI> {
    axum::Json(WhoAmI {
        name: who.name().to_string(),
        role: who.role(),
        folders: who.scope.folders.clone(),
        via: who.via(),
        csrf_token: who.session().map(|(_, csrf)| csrf.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use axum::body::Body;
    use tower::ServiceExt;

    /// The workers the UI starts by URL, `new Worker("/ui/…")`.
    fn workers() -> Vec<&'static str> {
        let mut workers = Vec::new();
        for (_, _, body) in ASSETS {
            for rest in body.split("new Worker(\"/ui/").skip(1) {
                workers.push(rest.split('"').next().unwrap_or_default());
            }
        }
        workers
    }

    #[test]
    fn every_module_the_ui_imports_is_served_and_every_file_served_is_used() {
        let served: Vec<&str> = ASSETS.iter().map(|(n, _, _)| *n).collect();
        for (name, _, body) in ASSETS {
            for file in imports(body) {
                assert!(
                    served.contains(&file),
                    "{name} imports {file}, which is not served"
                );
            }
        }
        for file in workers() {
            assert!(served.contains(&file), "the worker {file} is not served");
        }
        for needed in ["/ui/app.js", "/ui/style.css", SLOT] {
            assert!(INDEX.contains(needed), "index.html has no {needed}");
        }
        // Every other file is preloaded by a page that needs it, but a
        // worker (the page's own module map is no use to a worker, which
        // fetches its modules again).
        let preloaded: Vec<&str> = PAGES.iter().flat_map(preloads).collect();
        for name in served {
            let worker = workers().contains(&name);
            if name == "app.js" || name == "style.css" {
                continue;
            }
            assert!(
                preloaded.contains(&name) != worker,
                "{name} must be preloaded by a page if and only if it is not a worker"
            );
        }
    }

    #[test]
    fn each_page_is_declared_once_and_its_module_draws_it() {
        assert_eq!(PAGES[0].path, "/", "the first page is the job list");
        for (i, page) in PAGES.iter().enumerate() {
            let path = page.path;
            assert!(
                PAGES[..i].iter().all(|p| p.path != path),
                "{path} is declared twice"
            );
            // app.js turns the path into a pattern of the URL.
            assert!(
                path.starts_with('/')
                    && path
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || "/-{}".contains(c)),
                "{path}: a path is lower-case words and {{ids}}"
            );
            let Some((_, _, body)) = find(page.module) else {
                panic!("{path}: its module {} is not served", page.module);
            };
            for export in std::iter::once(page.show).chain(page.prefetch) {
                assert!(
                    [
                        format!("export function {export}("),
                        format!("export async function {export}(")
                    ]
                    .iter()
                    .any(|e| body.contains(e.as_str())),
                    "{path}: {} exports no function {export}",
                    page.module
                );
            }
            // A page is loaded by its entry here, never by app.js itself.
            let (_, _, app) = find("app.js").unwrap();
            let module = page.module;
            assert!(
                !imports(app).any(|m| m == module),
                "app.js imports {module}"
            );
        }
        // Routes that overlap make axum panic here.
        let _ = router::<()>();
    }

    async fn get(path: &str, etag: Option<&str>) -> Response {
        let mut req = Request::get(path);
        if let Some(etag) = etag {
            req = req.header(header::IF_NONE_MATCH, etag);
        }
        router::<()>()
            .oneshot(req.body(Body::empty()).unwrap())
            .await
            .unwrap()
    }

    async fn shell_of(path: &str) -> String {
        let res = get(path, None).await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        let body = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .unwrap();
        String::from_utf8(body.to_vec()).unwrap()
    }

    fn names(shell: &str, module: &str) -> bool {
        shell.contains(&format!("&quot;module&quot;:&quot;{module}&quot;"))
    }

    #[tokio::test]
    async fn each_page_path_serves_the_shell_naming_its_page_and_preloading_what_it_needs() {
        let job = shell_of("/jobs/42").await;
        assert!(names(&job, "job.js"), "{job}");
        for needed in [
            "api.js",
            "deliveries.js",
            "dom.js",
            "job.js",
            "job-log.js",
            "viewer.js",
        ] {
            let preload = format!("<link rel=\"modulepreload\" href=\"/ui/{needed}\">");
            assert!(job.contains(&preload), "the job page preloads {needed}");
        }
        assert!(!job.contains(SLOT) && !job.contains("/ui/result-worker.js"));
        let list = shell_of("/").await;
        assert!(names(&list, "jobs.js") && !list.contains("/ui/viewer.js"));
        // `/schedules/new` is its own page, not a schedule whose id is "new".
        assert!(names(&shell_of("/schedules/new").await, "schedule-form.js"));
        assert!(names(&shell_of("/schedules/7").await, "schedule.js"));
        let nodes = shell_of("/nodes").await;
        assert!(names(&nodes, "nodes.js"), "{nodes}");
        assert!(nodes.contains("<link rel=\"modulepreload\" href=\"/ui/live.js\">"));
        // The users (admins) and everyone's own sessions: one page.
        let users = shell_of("/users").await;
        assert!(names(&users, "users.js"), "{users}");
        for needed in ["users.js", "sessions.js"] {
            let preload = format!("<link rel=\"modulepreload\" href=\"/ui/{needed}\">");
            assert!(users.contains(&preload), "the users page preloads {needed}");
        }
        let rules = shell_of("/notifications").await;
        assert!(names(&rules, "notifications.js"), "{rules}");
        assert!(rules.contains("<link rel=\"modulepreload\" href=\"/ui/deliveries.js\">"));
        // The shell's own parts are on every page: the scheduler's banner
        // (a status region) and the module that fills it.
        for page in PAGES {
            let shell = shell_of(&page.path.replace("{id}", "7")).await;
            assert!(
                shell.contains(
                    "<div id=\"scheduler-banner\" class=\"banner\" role=\"status\"></div>"
                ),
                "{}",
                page.path
            );
            assert!(
                shell.contains("<link rel=\"modulepreload\" href=\"/ui/scheduler.js\">"),
                "{} preloads scheduler.js",
                page.path
            );
        }
        for odd in ["/jobs/abc", "/schedules/%31", "/jobs/-1"] {
            assert_eq!(shell_of(odd).await, list, "{odd} shows the list");
        }
    }

    #[tokio::test]
    async fn a_page_or_file_is_revalidated_each_time_and_costs_a_304_when_unchanged() {
        for path in ["/audit", "/ui/live.js"] {
            let res = get(path, None).await;
            assert_eq!(res.headers()[header::CACHE_CONTROL], "no-cache");
            let etag = res.headers()[header::ETAG].to_str().unwrap().to_string();
            let again = get(path, Some(&etag)).await;
            assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
            let other = get(path, Some("\"0\"")).await;
            assert_eq!(other.status(), StatusCode::OK, "{path}");
        }
        // Each page's shell is its own, so its tag is too.
        let tag = |res: Response| res.headers()[header::ETAG].clone();
        assert_ne!(tag(get("/", None).await), tag(get("/audit", None).await));
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
