//! Saved jobs' parameters against the real binary: any value the schema
//! accepts reaches the job byte for byte, in its variable and in the file
//! `JOBLOG_PARAMS` names, with no shell between (property test); the CLI
//! types `--param` by the schema; a secret parameter is masked in the log
//! and found nowhere in the data directory (database, WAL, results).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};

use super::{cli, Server};

/// Writes what the job was given where the test reads it: its variable's
/// bytes and the parameters file, copied without any shell reading them.
const COPY_PARAMS: &str = r#"printf '%s' "$JOBLOG_PARAM_TEXT" > "$OUT/$JOBLOG_JOB_ID.var"
cat "$JOBLOG_PARAMS" > "$OUT/$JOBLOG_JOB_ID.json""#;

/// Text that is hard to pass through a shell: quotes, expansions,
/// separators, newlines, any Unicode (NUL aside: no variable holds it).
fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("$HOME".to_string()),
        Just("$(touch /tmp/joblog-pwned)".to_string()),
        Just("`id`".to_string()),
        Just("'\"\\".to_string()),
        Just("; rm -rf /\n".to_string()),
        Just("*?[a]".to_string()),
        Just("\r\n\t".to_string()),
        any::<char>()
            .prop_filter("no NUL", |c| *c != '\0')
            .prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|p| p.concat())
}

#[test]
fn any_value_the_schema_accepts_reaches_the_job_byte_for_byte() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // The job may run as another user (CI runs as root with --run-as).
    std::fs::set_permissions(&out, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let server = rt.block_on(Server::start(dir.path(), &[]));
    let id = rt.block_on(server.create_schedule(json!({
        "name": "copy-params",
        "script": COPY_PARAMS,
        "env": {"OUT": out.display().to_string()},
        "params": {"properties": {
            "text": {"type": "string", "format": "multiline"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"}
        }, "required": ["text"]}
    })));
    let mut runner = TestRunner::new(Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    });
    let values = (hostile_text(), any::<i64>(), -1e12f64..1e12, any::<bool>());
    runner
        .run(&values, |(text, count, ratio, flag)| {
            let given = json!({"text": text, "count": count, "ratio": ratio, "flag": flag});
            let job = rt.block_on(async {
                let job = server.run_with(id, json!({"params": given})).await;
                server.wait_finished(job).await
            });
            prop_assert_eq!(&job["state"], "succeeded", "{}", job);
            let n = job["id"].as_i64().unwrap();
            let var = std::fs::read(out.join(format!("{n}.var"))).unwrap();
            prop_assert_eq!(var, text.as_bytes().to_vec());
            let file: Value =
                serde_json::from_slice(&std::fs::read(out.join(format!("{n}.json"))).unwrap())
                    .unwrap();
            prop_assert_eq!(&file, &given);
            prop_assert_eq!(&job["params"], &given);
            Ok(())
        })
        .unwrap();
    assert!(
        !std::path::Path::new("/tmp/joblog-pwned").exists(),
        "a parameter was run by a shell"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_types_params_and_a_secret_one_is_stored_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let secret = "pw-4f1c9e-never-stored";
    let schema = dir.path().join("restore.json");
    std::fs::write(
        &schema,
        json!({"properties": {
            "env": {"type": "string", "enum": ["prod", "staging"]},
            "count": {"type": "integer", "default": 1, "maximum": 5},
            "password": {"type": "string", "secret": true}
        }, "required": ["env", "password"]})
        .to_string(),
    )
    .unwrap();
    let script = dir.path().join("restore.sh");
    std::fs::write(
        &script,
        "echo \"restore $JOBLOG_PARAM_ENV x$JOBLOG_PARAM_COUNT with $JOBLOG_PARAM_PASSWORD\"\n\
         grep -c password \"$JOBLOG_PARAMS\"\n",
    )
    .unwrap();
    let (code, _, err) = cli(
        &server,
        &[
            "schedule",
            "add",
            "--name",
            "restore-db",
            "--params-schema",
            &schema.display().to_string(),
            "--script",
            &script.display().to_string(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (code, show, err) = cli(&server, &["schedule", "show", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        show.contains("env: string, one of prod, staging, required"),
        "{show}"
    );

    // Typed by the schema: `count=x` is refused before anything is sent.
    let (code, _, err) = cli(
        &server,
        &["schedule", "run", "restore-db", "--param", "count=x"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--param count: \"x\" is not an integer"),
        "{err}"
    );
    // The server names what it refuses.
    let (code, _, err) = cli(
        &server,
        &["schedule", "run", "restore-db", "--param", "env=qa"],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("params.env: \"qa\" is not one of prod, staging"),
        "{err}"
    );

    // The secret from this shell's environment, off the command line.
    let out = std::process::Command::new(super::BIN)
        .args(["--server", &server.url, "schedule", "run", "restore-db"])
        .args([
            "--param",
            "env=staging",
            "--param",
            "count=3",
            "--param",
            "password",
        ])
        .env("password", secret)
        .env_remove("JOBLOG_TOKEN")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job: i64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("the job's id");
    let done = server.wait_finished(job).await;
    assert_eq!(done["state"], "succeeded", "{done}");
    assert_eq!(
        done["params"],
        json!({"env": "staging", "count": 3, "password": null})
    );
    let (_, log, _) = cli(&server, &["logs", &job.to_string()]);
    assert_eq!(log, "restore staging x3 with ***\n1\n", "masked in the log");
    let (_, show, _) = cli(&server, &["show", &job.to_string()]);
    assert!(show.contains("env=staging"), "{show}");
    assert!(show.contains("password (secret, not kept)"), "{show}");

    // Nowhere in the data directory: the database, its WAL, results.
    let mut found = Vec::new();
    for entry in walk(dir.path()) {
        if entry.starts_with(dir.path().join("restore")) {
            continue;
        }
        let bytes = std::fs::read(&entry).unwrap_or_default();
        if bytes.windows(secret.len()).any(|w| w == secret.as_bytes()) {
            found.push(entry);
        }
    }
    assert!(found.is_empty(), "the secret was written to {found:?}");
    assert!(
        walk(dir.path())
            .iter()
            .any(|p| p.ends_with("joblog.db-wal")),
        "the WAL was looked at"
    );
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
