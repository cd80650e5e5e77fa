//! What becomes of running jobs when their server dies: their processes go
//! with it (or at its next start), and their log says what happened.

use std::path::Path;

use joblog_testkit::{eventually_blocking, PATIENCE};
use serde_json::json;

use super::{cli, Server};

/// Whether `pid` is a live process (a zombie is dead: nobody may reap it
/// in a container without an init).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat[stat.rfind(')').unwrap_or(0) + 1..]
            .split_whitespace()
            .next();
        state != Some("Z")
    })
}

fn wait_gone(pid: i32, what: &str) {
    eventually_blocking(&format!("{what} (pid {pid}) to end"), PATIENCE, || {
        (!alive(pid)).then_some(())
    })
}

fn read_pid(path: &Path) -> i32 {
    eventually_blocking(
        &format!("{} to be written", path.display()),
        PATIENCE,
        || {
            std::fs::read_to_string(path)
                .ok()
                .and_then(|t| t.trim().parse().ok())
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_servers_jobs_die_with_it_and_their_log_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), &[]).await;
    let (main, child) = (dir.path().join("main.pid"), dir.path().join("child.pid"));
    let id = server
        .submit(json!({
            "name": "orphan-maker",
            "script": format!(
                "sleep 300 & echo $! > {}; echo $$ > {}; echo started; wait",
                child.display(),
                main.display()
            ),
        }))
        .await;
    let (main, child) = (read_pid(&main), read_pid(&child));
    server
        .wait_until(id, "its first line", |j| j.log.records >= 1)
        .await;
    // Heartbeats come every third of the timeout (10 s by default); one
    // was written at start.
    server.signal("KILL");
    server.wait_exit();

    // The kernel kills the job's main process with its server.
    wait_gone(main, "the job's main process after its server was killed");
    drop(server);

    // What the job started is found and killed at the next start.
    let server = Server::start(dir.path(), &[]).await;
    wait_gone(child, "the job's child after the server started again");
    let job = server.job(id).await;
    assert_eq!(job["state"], "interrupted", "{job}");
    assert_eq!(job["log"]["streams"]["error"], 1, "{job}");
    let log = server.log_page(id, 0, 10).await;
    let why = log.last().unwrap();
    assert_eq!(why["stream"], "error");
    assert_eq!(why["fields"]["reason"], "node_restarted");
    let node = why["fields"]["node"].as_str().unwrap().to_string();
    assert!(why["fields"]["last_heartbeat"].is_string(), "{why}");
    let message = why["message"].as_str().unwrap();
    assert!(
        message.contains(&node) && message.contains("killed or crashed"),
        "{message}"
    );

    // `joblog nodes` lists the new server up (marked as the one that
    // answered) and, since it came back on another port and so under
    // another name, the dead one as stopped heartbeating.
    let (code, out, _) = cli(&server, &["nodes", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let this = v["this_node"].as_str().unwrap().to_string();
    let state_of = |name: &str| {
        v["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name)
            .map(|n| n["state"].clone())
    };
    assert_eq!(state_of(&this), Some(json!("up")), "{v}");
    if this != node {
        // Silent since the kill; `lapsed` once the timeout (30 s) is past.
        assert!(state_of(&node).is_some(), "{v}");
    }
    let (code, out, err) = cli(&server, &["nodes"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("NAME"), "{out}");
    let row = out
        .lines()
        .find(|l| l.starts_with(&format!("{this} *")))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        row.contains(" up ") && row.contains(env!("CARGO_PKG_VERSION")),
        "{row}"
    );
}
