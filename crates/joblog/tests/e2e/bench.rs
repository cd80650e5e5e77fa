//! `joblog bench tail` for real, briefly: every viewer gets every line of
//! the followed job, on SQLite and on a PostgreSQL database that the bench
//! makes and drops itself. The figures are not checked: performance is
//! measured by the bench, never asserted.

use joblog_store::testing::TestDatabase;

use super::BIN;

/// 1 and 3 viewers of a job writing 100 lines in a second, under a psu
/// load of 2-job batches.
const SMALL: &[&str] = &[
    "bench",
    "tail",
    "--runs",
    "1",
    "--viewers",
    "1,3",
    "--rate",
    "100",
    "--duration",
    "1s",
    "--batch-jobs",
    "2",
    "--lines",
    "100",
    "--job-timeout",
    "60s",
];

/// Runs the bench; its report (stdout) once it exited 0, and its pid.
async fn bench_tail(extra: &[&str]) -> (String, u32) {
    let child = tokio::process::Command::new(BIN)
        .args(SMALL)
        .args(extra)
        .env("JOBLOG_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawning joblog bench tail");
    let pid = child.id().expect("the bench's pid");
    let out = child.wait_with_output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "bench tail failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    (stdout, pid)
}

fn assert_every_line_delivered(report: &str) {
    for row in ["| 1 | 1 | 100 / 100 |", "| 1 | 3 | 300 / 300 |"] {
        assert!(report.contains(row), "no {row:?} in\n{report}");
    }
    assert!(!report.contains("Problems"), "{report}");
}

#[tokio::test]
async fn bench_tail_delivers_every_line_to_every_viewer() {
    let (report, _) = bench_tail(&[]).await;
    assert_every_line_delivered(&report);
    assert!(
        report.contains("SQLite in a fresh temporary data directory"),
        "{report}"
    );
}

#[tokio::test]
async fn bench_tail_on_postgres_measures_on_databases_of_its_own_and_drops_them() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let (report, pid) = bench_tail(&["--database", db.url()]).await;
    assert_every_line_delivered(&report);
    assert!(
        report.contains("a fresh database on its server"),
        "{report}"
    );
    let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let left: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_database WHERE datname LIKE $1",
            &[&format!("joblog\\_bench\\_tail\\_{pid}\\_%")],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 0, "the bench left its databases behind");
}

/// `joblog bench oplog` for real, briefly: a row per logging setup and
/// per writer, pace and thread count, every request of the load in the
/// logging server's access log, no event lost by joblog's writer. The
/// bench's own `JOBLOG_LOGGING_SINKS` must not reach its servers (the
/// logging one would write no access log).
#[tokio::test]
async fn bench_oplog_measures_every_setup_and_writer() {
    let out = tokio::process::Command::new(BIN)
        .args([
            "bench",
            "oplog",
            "--runs",
            "1",
            "--duration",
            "1s",
            "--events",
            "2000",
            "--connections",
            "2",
        ])
        .env("JOBLOG_LOG", "warn")
        .env("JOBLOG_LOGGING_SINKS", "[]")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("running joblog bench oplog");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench oplog failed ({}):\n{report}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_rows(&report, &["\n| on | ", "\n| off | "]);
    for writer in ["joblog `OplogLayer`", "tracing-appender `non_blocking`"] {
        for pace in ["back to back", "100 µs apart"] {
            for threads in [1, 2] {
                let row = format!("\n| {writer} | {pace} | {threads} | ");
                assert!(report.contains(&row), "no {row:?} row in\n{report}");
            }
        }
    }
    assert!(report.contains("On / off: **"), "{report}");
    assert!(report.contains("access lines written for"), "{report}");
    assert!(!report.contains("incomplete"), "{report}");
    assert!(
        report.contains("2 keep-alive HTTP/1.1 connections"),
        "{report}"
    );
}

/// `joblog bench result` for real, briefly: a row per figure, the stored
/// size of a 300 KB result, and the bench checked that the zstd answer
/// decodes to the plain one (it fails otherwise).
#[tokio::test]
async fn bench_result_times_storing_and_reading_back_a_result() {
    let report = bench(&["result", "--runs", "2", "--result-size", "300KB"]).await;
    assert_rows(
        &report,
        &[
            "\n| job exit → result stored | ",
            "\n| read back over HTTP, decoded | ",
            "\n| read back over HTTP, stored zstd (`Accept-Encoding: zstd`) | ",
        ],
    );
    assert!(
        report.contains("2 timed jobs after one warm-up"),
        "{report}"
    );
    let stored: u64 = number_after(&report, "\nStored: ");
    assert!(
        stored > 20 && stored < 300_000 / 3,
        "stored {stored} bytes for 300 KB:\n{report}"
    );
}

/// `joblog bench schedule` for real, briefly: its rows, fires measured
/// (each schedule fires once a minute, so 120 schedules over 3 s make
/// about 6), and none made twice.
#[tokio::test]
async fn bench_schedule_measures_idle_cpu_and_fire_lateness() {
    let report = bench(&["schedule", "--schedules", "120", "--duration", "3s"]).await;
    assert_rows(
        &report,
        &[
            "\n| fire → its `FireDue` (the job's `created_at`), p50 (ms) | ",
            "\n| fire → its `FireDue`, p99 (ms) | ",
            "\n| fire → job queued and committed, p50 / p99, the server's histogram (",
            "\n| server CPU, scheduler idle (120 schedules, none due for 3 s) | ",
        ],
    );
    let measured: u64 = number_after(&report, "for 3 s: ");
    assert!(
        (4..=8).contains(&measured),
        "{measured} fires in 3 s:\n{report}"
    );
    assert!(report.contains(", 0 made twice."), "{report}");
}

/// `joblog bench dispatch` for real, briefly: its rows, and a ratio of
/// joblog's jobs to the machine's fork/exec rate measured in the run.
#[tokio::test]
async fn bench_dispatch_compares_jobs_with_fork_exec() {
    let report = bench(&["dispatch", "--jobs", "40", "--runs", "1"]).await;
    assert_rows(
        &report,
        &[
            "\n| fork/exec of `true`, by the bench (per s) | ",
            "\n| joblog jobs (per s) | ",
            "\n| joblog / fork/exec | ",
            "\n| queue wait (submission → start), p50 / p99 (ms) | ",
            // The server's histogram had reads to count (the bench's).
            "\n| store read-pool checkout, p50 / p99, the server's histogram (",
        ],
    );
    let ratio: f64 = number_after(&report, "\n| joblog / fork/exec | ");
    assert!(ratio > 0.0, "{report}");
}

/// `joblog bench faults` for real, short: 100 power cuts per `sync` mode
/// under the SQLite store. The command fails when a promise breaks; its
/// JSON says, per mode, what docs/durability.md quotes.
#[tokio::test]
async fn bench_faults_cuts_the_power_and_sync_full_loses_nothing_acknowledged() {
    let (report, dir) = bench_out(&["faults", "--cuts", "100"]).await;
    assert!(report.contains("Every promise held"), "{report}");
    let doc = json_file(dir.path(), "faults.json");
    let modes = doc["figures"]["modes"].as_array().expect("figures.modes");
    let mode = |sync: &str| {
        modes
            .iter()
            .find(|m| m["sync"] == sync)
            .unwrap_or_else(|| panic!("no {sync} mode in {doc}"))
    };
    for sync in ["full", "normal"] {
        let m = mode(sync);
        assert_eq!(m["cuts"], 100, "{m}");
        assert_eq!(m["corrupt"], 0, "{m}");
        for promise in [
            "gaps",
            "duplicates",
            "out_of_order",
            "lost_before_sync",
            "duplicate_claims",
        ] {
            assert_eq!(m[promise], 0, "{sync}: {promise}: {m}");
        }
        // The runs did what they are for: claims, sealing, retention.
        assert!(m["run"]["segments_sealed"].as_u64() > Some(0), "{m}");
        assert!(m["run"]["jobs_deleted"].as_u64() > Some(0), "{m}");
        assert!(m["unsynced_writes"]["torn"].as_u64() > Some(0), "{m}");
        // Some cuts came while a log was sealed, some while one was deleted.
        assert!(m["cuts_while_sealing"].as_u64() > Some(0), "{m}");
        assert!(m["cuts_while_deleting"].as_u64() > Some(0), "{m}");
    }
    assert_eq!(mode("full")["lost_acknowledged"], 0);
    assert!(mode("normal")["lost_acknowledged"].is_u64());
    assert!(dir.path().join("faults.svg").is_file());
}

/// Every row of `rows` (each a row's start) is in the report.
fn assert_rows(report: &str, rows: &[&str]) {
    for row in rows {
        assert!(report.contains(row), "no {row:?} row in\n{report}");
    }
}

/// The number that follows `marker` in the report, up to the next space.
fn number_after<T: std::str::FromStr>(report: &str, marker: &str) -> T {
    report
        .split(marker)
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {marker:?} in\n{report}"))
}

/// Runs `joblog bench ARGS` to success; its report (stdout).
async fn bench(args: &[&str]) -> String {
    let out = tokio::process::Command::new(BIN)
        .arg("bench")
        .args(args)
        .env("JOBLOG_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("running joblog bench");
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "bench {args:?} failed ({}):\n{report}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    report
}

/// Runs `joblog bench ARGS --out DIR` to success; its report and DIR.
async fn bench_out(args: &[&str]) -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().expect("a UTF-8 temporary directory");
    let mut all = args.to_vec();
    all.extend(["--out", path]);
    (bench(&all).await, dir)
}

fn json_file(dir: &std::path::Path, name: &str) -> serde_json::Value {
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

/// `joblog bench flood` for real, small: every line of the flooding job
/// stored (the cap raised), the other job's every line delivered, and the
/// files `--out` promises.
#[tokio::test]
async fn bench_flood_stores_every_line_and_writes_its_files() {
    let (report, dir) = bench_out(&[
        "flood",
        "--flood-size",
        "4MiB",
        "--duration",
        "1s",
        "--rate",
        "100",
    ])
    .await;
    let doc = json_file(dir.path(), "flood.json");
    assert_eq!(doc["scenario"], "flood", "{doc}");
    assert_eq!(doc["failed"], false, "{doc}");
    let f = &doc["figures"];
    // 80-byte lines; `head -c` cuts the last one short.
    assert_eq!(f["job"]["records"], (4u64 << 20).div_ceil(80), "{f}");
    assert_eq!(
        f["job"]["bytes"].as_u64().unwrap() + (4 << 20) / 80,
        4 << 20,
        "{f}"
    );
    assert_eq!(f["job"]["truncated"], false, "{f}");
    assert_eq!(f["other_job"]["lines_delivered"], 100, "{f}");
    assert!(f["records_per_s"].as_f64().unwrap() > 0.0, "{f}");
    assert!(f["peak_rss_mib"].as_f64().unwrap() > 0.0, "{f}");
    let md = std::fs::read_to_string(dir.path().join("flood.md")).unwrap();
    assert!(md.starts_with(report.trim_end()), "{md}\n---\n{report}");
    assert!(md.contains("![flood.svg](flood.svg)"), "{md}");
    let svg = std::fs::read_to_string(dir.path().join("flood.svg")).unwrap();
    assert!(
        svg.starts_with("<svg ") && svg.contains("budget: p99"),
        "{svg}"
    );
}

/// `joblog bench psu --out`: a JSON object per checkpoint with joblog's
/// figures, both designs of the past and the storage figure, and the two
/// line charts with a line for each and one for the published figures.
async fn bench_psu_writes_its_figures_and_charts(database: Option<&str>) -> serde_json::Value {
    let mut args = vec![
        "psu",
        "--messages",
        "400,800",
        "--lines",
        "100",
        "--batch-jobs",
        "2",
        "--window-batches",
        "1",
        "--retrievals",
        "2",
        "--baseline-batches",
        "1",
        // Logs kept as rows: sealed as they end, 100-line logs can fit in
        // the pages earlier ones freed, and the database then does not
        // grow at all (a CI run read 0 bytes a record).
        "--seal",
        "false",
    ];
    if let Some(db) = database {
        args.extend(["--database", db]);
    }
    let (report, dir) = bench_out(&args).await;
    assert!(
        report.contains("| autocommit INSERT per message |"),
        "{report}"
    );
    let doc = json_file(dir.path(), "psu.json");
    let rows = doc["figures"]["checkpoints"].as_array().unwrap();
    let at: Vec<u64> = rows
        .iter()
        .map(|r| r["checkpoint"].as_u64().unwrap())
        .collect();
    assert_eq!(at, [400, 800], "{doc}");
    for r in rows {
        assert!(r["exec_median_ms"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["floor_median_ms"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["retrieval_median_ms"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["failed_jobs"], 0, "{r}");
        let designs = r["designs"].as_array().unwrap();
        let keys: Vec<&str> = designs
            .iter()
            .map(|d| d["design"].as_str().unwrap())
            .collect();
        assert_eq!(keys, ["row_rewrite", "insert_per_message"], "{r}");
        for d in designs {
            assert!(d["exec_median_ms"].as_f64().unwrap() > 0.0, "{d}");
            assert!(d["retrieval_median_ms"].as_f64().is_some(), "{d}");
            assert!(
                d["database_bytes_per_record"].as_f64().unwrap() > 0.0,
                "{d}"
            );
        }
        // "message N of job J": about 20 bytes a line; zstd finds the rest.
        let b = &r["bytes_per_record"];
        let (db, raw, zstd) = (
            b["database"].as_f64().unwrap(),
            b["raw_text"].as_f64().unwrap(),
            b["zstd_3"].as_f64().unwrap(),
        );
        assert!((18.0..24.0).contains(&raw), "{b}");
        assert!(zstd > 0.0 && zstd < raw && db > 0.0, "{b}");
    }
    assert_eq!(
        doc["charts"],
        serde_json::json!(["psu-execution.svg", "psu-retrieval.svg"])
    );
    assert!(
        report.contains("| Floor median (ms) | joblog − floor (ms) |"),
        "{report}"
    );
    // Execution has the floor's line besides joblog's, the two designs'
    // and the published reference.
    for (name, lines) in [("psu-execution.svg", 5), ("psu-retrieval.svg", 4)] {
        let svg = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert_eq!(svg.matches("<polyline").count(), lines, "{name}: {svg}");
        assert!(
            svg.contains(">joblog<") && svg.contains(">one row rewritten per message<"),
            "{name}"
        );
    }
    doc
}

#[tokio::test]
async fn bench_psu_on_sqlite_writes_its_figures_and_charts() {
    let doc = bench_psu_writes_its_figures_and_charts(None).await;
    assert_eq!(
        doc["figures"]["store"],
        "SQLite in a temporary data directory"
    );
}

/// On PostgreSQL the designs of the past get databases of their own on
/// the same server, dropped at the end.
#[tokio::test]
async fn bench_psu_on_postgres_measures_the_designs_on_databases_of_its_own() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    bench_psu_writes_its_figures_and_charts(Some(db.url())).await;
    let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let left: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_database WHERE datname LIKE 'joblog\\_bench\\_psu\\_design\\_%'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 0, "the bench left its databases behind");
}
