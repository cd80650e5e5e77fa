//! The web UI in a real browser: each scenario of `tests/ui/*.mjs` (Node
//! with playwright-core driving Debian's headless chromium) runs against a
//! real `joblog serve` of its own (the audit scenario's with entries
//! written into its database beforehand). Screenshots land in
//! `target/ui-screenshots/`.
//!
//! Without chromium, Node or `tests/ui/node_modules` (`npm ci` there) the
//! scenarios are skipped with a note, unless `JOBLOG_REQUIRE_BROWSER` is
//! set (CI sets it), which makes a missing piece a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use joblog_testkit::receiver::Receiver;

use super::Server;

const TOKEN: &str = "e2e-ui-token-0123456789abcdefghijklmnop";

/// One browser at a time: the scenarios measure lines appearing within a
/// second, which two chromiums on two cores would only blur.
static BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn ui_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui")
}

fn chromium() -> PathBuf {
    std::env::var_os("JOBLOG_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

/// What is missing to run the scenarios, if anything.
fn missing() -> Option<String> {
    if !chromium().exists() {
        return Some(format!(
            "{} not found (apt-get install chromium, or set JOBLOG_CHROMIUM)",
            chromium().display()
        ));
    }
    if Command::new("node").arg("--version").output().is_err() {
        return Some("node not found".into());
    }
    if !ui_dir().join("node_modules/playwright-core").exists()
        || !ui_dir().join("node_modules/@axe-core/playwright").exists()
    {
        return Some(format!("run `npm ci` in {}", ui_dir().display()));
    }
    None
}

/// Runs `tests/ui/<name>.mjs` against `server`; its output is the test's.
async fn scenario(name: &str, server: &Server, token: Option<&str>) {
    scenario_with(name, server, token, &[]).await;
}

/// [`scenario`], the script's environment holding `env` too. Whether it
/// ran (it is skipped when a piece is missing).
async fn scenario_with(
    name: &str,
    server: &Server,
    token: Option<&str>,
    env: &[(&str, &str)],
) -> bool {
    if let Some(what) = missing() {
        assert!(
            std::env::var_os("JOBLOG_REQUIRE_BROWSER").is_none(),
            "browser tests required (JOBLOG_REQUIRE_BROWSER) but {what}"
        );
        eprintln!("note: browser test {name} SKIPPED — {what}");
        return false;
    }
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .join("ui-screenshots");
    let mut node = tokio::process::Command::new("node");
    node.arg(ui_dir().join(format!("{name}.mjs")))
        .env("JOBLOG_URL", &server.url)
        .env("JOBLOG_SCREENSHOTS", &shots)
        .env("JOBLOG_CHROMIUM", chromium())
        .kill_on_drop(true);
    if let Some(t) = token {
        node.env("JOBLOG_TOKEN", t);
    }
    node.envs(env.iter().copied());
    let out = node.output().await.expect("running node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(
        out.status.success(),
        "browser scenario {name} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    true
}

async fn run(name: &str) {
    let _one = BROWSER.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--max-concurrency", "4"]).await;
    scenario(name, &server, None).await;
}

/// [`run`] on a server that needs a token: the scenario has it (as
/// `JOBLOG_TOKEN`), the page does not until it is given or someone signs in.
async fn run_with_token(name: &str) {
    let _one = BROWSER.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--token", TOKEN]).await;
    scenario(name, &server, Some(TOKEN)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_output_renders_as_inert_text() {
    run("hostile").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_list_and_a_running_jobs_page_update_live() {
    run("live").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_viewers_tools_work_on_a_100k_line_log() {
    run("log").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_million_line_log_opens_reaches_its_end_with_few_rows_in_the_dom() {
    run("million").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_32_mb_result_opens_as_a_tree_a_page_of_rows_at_a_time() {
    run("result").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_submit_page_makes_a_job_and_never_shows_its_secret() {
    run("submit").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_schedules_pages_make_list_run_disable_edit_and_delete_a_schedule() {
    run("schedules").await;
}

/// A saved job with parameters: Run opens a form made from its schema,
/// hostile descriptions and choices shown as text, a refusal beside its
/// field, and Rerun asks for the secret again.
#[tokio::test(flavor = "multi_thread")]
async fn a_saved_job_asks_its_parameters_in_a_form_made_from_its_schema() {
    run("params").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_page_passes_axe_in_both_schemes_and_does_not_shift_on_a_phone() {
    run("a11y").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_time_says_its_zone_and_one_setting_switches_local_and_utc() {
    run("times").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn wrap_shows_the_selected_long_line_in_full_and_rows_keep_their_height() {
    run("wrap").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_search_page_finds_lines_in_every_log_links_them_and_stops_when_asked() {
    run("search").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_jobs_log_downloads_as_plain_text_and_as_json_lines() {
    run("download").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_paused_scheduler_shows_a_banner_on_every_page_until_resumed() {
    run("scheduler").await;
}

/// Node labels in the UI. A first server, `gpu-1` (`role=gpu`, one slot),
/// stops with a job asking for `role=gpu` still queued behind another;
/// the server under test, `db-1` (`role=db,os=linux`, a secret), opens the
/// same data directory, so the Nodes page has two nodes (one stopped) and
/// the job waits for a node that no up node is. The scenario then drains
/// and undrains `db-1` from the page.
#[tokio::test(flavor = "multi_thread")]
async fn the_nodes_page_shows_labels_and_a_job_where_it_runs_or_why_it_waits() {
    let _one = BROWSER.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let mut gpu = Server::start(
        dir.path(),
        &[
            "--node",
            "gpu-1",
            "--node-labels",
            "role=gpu",
            "--max-concurrency",
            "1",
            "--grace-period",
            "1s",
        ],
    )
    .await;
    let hog = gpu
        .submit(json!({"name": "hog", "command": ["sleep", "600"]}))
        .await;
    gpu.wait_until(hog, "running", |j| j.state == "running")
        .await;
    let train = gpu
        .submit(json!({
            "name": "train",
            "command": ["echo", "trained"],
            "node_selector": {"role": "gpu"},
        }))
        .await;
    gpu.signal("TERM");
    gpu.wait_exit();
    drop(gpu);
    let server = Server::start_with(
        dir.path(),
        &[
            "--node",
            "db-1",
            "--node-labels",
            "role=db,os=linux",
            "--max-concurrency",
            "4",
        ],
        |c| {
            c.env("JOBLOG_SECRET_DB_PASSWORD", "not-shown-42");
        },
    )
    .await;
    let waiting = server.job(train).await;
    assert_eq!(waiting["state"], "queued", "{waiting}");
    assert_eq!(
        waiting["waiting_for"], "no up node has labels role=gpu",
        "{waiting}"
    );
    let train = train.to_string();
    scenario_with(
        "nodes",
        &server,
        None,
        &[("JOBLOG_WAITING_JOB", train.as_str())],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_token_the_ui_asks_for_it_before_showing_anything() {
    run_with_token("token").await;
}

/// Signing in with a name and password: the scenario makes its user with
/// the bootstrap token, signs in, opens a second tab, makes a job by cookie
/// (with the session's CSRF token, refused without it) and signs out.
#[tokio::test(flavor = "multi_thread")]
async fn a_user_signs_in_with_a_password_and_a_second_tab_shares_the_session_until_signed_out() {
    run_with_token("signin").await;
}

/// The Users page: an admin made with the bootstrap token signs in, then
/// adds, changes, disables, resets and deletes a user and ends sessions
/// through the page.
/// Through a real OpenID provider (`tests/e2e/sso.rs` starts it): the
/// button, the provider's login, back where one started, signed in; and
/// the page a person with no role sees.
#[tokio::test(flavor = "multi_thread")]
async fn a_person_signs_in_through_the_openid_provider_and_one_without_a_role_is_told() {
    let _one = BROWSER.lock().await;
    let port = joblog_testkit::free_port();
    let redirect = super::sso::callback_of(port);
    let Some(provider) = super::sso::Provider::start(&redirect, &[]).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = super::sso::joblog(port, dir.path(), &provider, &[]).await;
    scenario_with(
        "sso",
        &server,
        Some(super::sso::BOOTSTRAP),
        &[("JOBLOG_OIDC_ISSUER", provider.issuer.as_str())],
    )
    .await;
}

/// A person limited to a folder: the scenario makes her and a job in her
/// folder and one in another with the bootstrap token; she sees, follows
/// and submits in hers only, and the other's job is not found.
#[tokio::test(flavor = "multi_thread")]
async fn a_person_limited_to_a_folder_sees_and_submits_only_there() {
    run_with_token("folders").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_admin_adds_changes_disables_resets_and_deletes_a_user_on_the_users_page() {
    run_with_token("users").await;
}

/// The server does not write the audit trail yet, so the scenario's
/// entries are written into the data directory's database through the
/// store before the server opens it: 60 plain ones (more than a page)
/// about jobs 1 to 3, and hostile ones whose actor, action, request id and
/// detail are HTML.
fn prefill_audit(data_dir: &Path) {
    use joblog_core::{NewAudit, Timestamp};
    use joblog_store::{Outcome, StoreOptions, WriteOp};

    let url = format!("sqlite://{}", data_dir.join("joblog.db").display());
    let store = joblog_store::open(&url, &StoreOptions::default()).expect("opening the store");
    let mut writer = store.open_writer().expect("its writer");
    let start = Timestamp::now().micros() - 3_600_000_000;
    let entry = |n: i64, actor: &str, action: &str, job_id: Option<i64>, detail: Value| {
        let Value::Object(detail) = detail else {
            panic!("a detail is an object")
        };
        NewAudit {
            at: Timestamp(start + n * 1_000_000),
            actor: actor.into(),
            action: action.into(),
            job_id,
            remote: Some(format!("192.0.2.{}:5{n:04}", n % 250)),
            request_id: Some(format!("req-{n:04}")),
            node: "e2e-node".into(),
            detail,
        }
    };
    let actors = ["ci-deploy", "ops-alice", "system"];
    let actions = ["job.submitted", "job.cancelled", "token.used"];
    let mut entries: Vec<NewAudit> = (0..60)
        .map(|n| {
            let i = n as usize;
            entry(
                n,
                actors[i % 3],
                actions[(i / 3) % 3],
                Some(1 + n % 3),
                json!({"name": format!("nightly-{n}"), "n": n}),
            )
        })
        .collect();
    let hostile = "<img src=x onerror=\"window.__pwned=1\">";
    entries.push(entry(
        60,
        hostile,
        "<b>job.cancelled</b>",
        Some(2),
        json!({"html": hostile, "script": "<script>window.__pwned=2</script>"}),
    ));
    entries.push(NewAudit {
        request_id: Some(hostile.into()),
        remote: None,
        ..entry(61, "ops-alice", "config.changed", None, json!({}))
    });
    let outcomes = writer
        .apply(&[WriteOp::Audit(entries)])
        .expect("writing the audit entries");
    assert_eq!(outcomes, [Outcome::Done]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_audit_page_shows_the_trail_as_text_to_admins_only() {
    let _one = BROWSER.lock().await;
    let dir = tempfile::tempdir().unwrap();
    prefill_audit(dir.path());
    let server = Server::start(dir.path(), &["--max-concurrency", "4"]).await;
    scenario("audit", &server, None).await;
}

/// The Notifications page against a real receiver on loopback (the server
/// may send there): the scenario makes its rules through the page's form,
/// sends tests and fails a job; the receiver must then hold what the page
/// said was delivered: the tests, and the failed job's notification, once.
#[tokio::test(flavor = "multi_thread")]
async fn the_notifications_page_makes_tests_lists_and_deletes_rules_and_a_job_shows_what_was_sent()
{
    let _one = BROWSER.lock().await;
    let receiver = Receiver::start().await;
    let hook = receiver.url("/hook");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        dir.path(),
        &[
            "--max-concurrency",
            "4",
            "--notify-allow-private-targets",
            "true",
        ],
    )
    .await;
    let env = [("JOBLOG_RECEIVER", hook.as_str())];
    if !scenario_with("notifications", &server, None, &env).await {
        return;
    }
    let got = receiver.received();
    assert!(got.iter().all(|r| r.method == "POST" && r.path == "/hook"));
    let events: Vec<(String, Value)> = got
        .iter()
        .map(|r| {
            let body = r.json();
            (body["event"].as_str().unwrap_or_default().to_owned(), body)
        })
        .collect();
    let tests: Vec<&Value> = events
        .iter()
        .filter(|(e, _)| e == "test")
        .map(|(_, b)| b)
        .collect();
    assert_eq!(tests.len(), 2, "the two tests sent to it: {events:?}");
    assert_eq!(
        tests[1]["job"]["name"], "notify-fail",
        "the second, of the failed job"
    );
    let ended: Vec<&Value> = events
        .iter()
        .filter(|(e, _)| e == "job.finished")
        .map(|(_, b)| b)
        .collect();
    assert_eq!(ended.len(), 1, "the failed job's end, once: {events:?}");
    assert_eq!(ended[0]["job"]["name"], "notify-fail");
    assert_eq!(ended[0]["job"]["state"], "failed");
    assert_eq!(ended[0]["job"]["exit_code"], 3);
    assert_eq!(ended[0]["first_error"]["message"], "it broke");
}
