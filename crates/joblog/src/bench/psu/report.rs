//! The Markdown report of `bench psu`: one row per checkpoint, set beside
//! PowerShell Universal's published figures.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::json;

use crate::bench::chart::{Chart, Series};
use crate::bench::stats::{fmt_ms, format_count};
use crate::bench::BenchArgs;

/// The published PowerShell Universal figures on SQLite (exec / retrieval, ms).
fn psu_sqlite_reference(messages: u64) -> Option<(u32, u32)> {
    match messages {
        500_000 => Some((600, 10)),
        1_000_000 => Some((900, 17)),
        1_500_000 => Some((900, 19)),
        2_000_000 => Some((900, 19)),
        2_500_000 => Some((900, 16)),
        _ => None,
    }
}

/// The figures measured at one checkpoint.
pub(super) struct Row {
    pub(super) checkpoint: u64,
    pub(super) messages: u64,
    pub(super) jobs: u64,
    pub(super) exec_median: Option<f64>,
    pub(super) exec_p90: Option<f64>,
    pub(super) retr_median: Option<f64>,
    pub(super) retr_p90: Option<f64>,
    pub(super) batch_median: Option<f64>,
    pub(super) failed: u64,
    pub(super) memory: Option<(f64, f64)>,
    pub(super) elapsed: Duration,
}

pub(super) struct PsuReport<'a> {
    pub(super) date: &'a str,
    pub(super) command: &'a str,
    pub(super) database: &'a str,
    pub(super) args: &'a BenchArgs,
    pub(super) rows: &'a [Row],
    pub(super) total: Duration,
    pub(super) note: Option<&'a str>,
}

/// The raw figures for `--out`: one object per checkpoint.
pub(super) fn figures(r: &PsuReport<'_>) -> serde_json::Value {
    let rows: Vec<_> = r
        .rows
        .iter()
        .map(|row| {
            json!({
                "checkpoint": row.checkpoint,
                "messages": row.messages,
                "jobs": row.jobs,
                "exec_median_ms": row.exec_median,
                "exec_p90_ms": row.exec_p90,
                "retrieval_median_ms": row.retr_median,
                "retrieval_p90_ms": row.retr_p90,
                "batch_wall_median_ms": row.batch_median,
                "failed_jobs": row.failed,
                "server_rss_mib": row.memory.map(|m| m.0),
                "server_peak_rss_mib": row.memory.map(|m| m.1),
                "elapsed_s": row.elapsed.as_secs_f64(),
                "psu_sqlite_reference_ms": psu_sqlite_reference(row.checkpoint)
                    .map(|(e, t)| json!({"exec": e, "retrieval": t})),
            })
        })
        .collect();
    json!({
        "store": r.database,
        "batch_jobs": r.args.batch_jobs,
        "lines_per_job": r.args.lines,
        "checkpoints": rows,
        "budget_ms": {"exec": 50, "retrieval": 5},
    })
}

/// Execution and retrieval against the database's size: joblog beside
/// the published reference.
pub(super) fn charts(r: &PsuReport<'_>) -> Vec<(&'static str, Chart)> {
    let line = |name: &str, f: &dyn Fn(&Row) -> Option<f64>, dashed: bool| Series {
        name: name.into(),
        points: r
            .rows
            .iter()
            .filter_map(|row| Some((row.checkpoint as f64, f(row)?)))
            .collect(),
        dashed,
    };
    let reference = |pick: fn((u32, u32)) -> u32| {
        move |row: &Row| psu_sqlite_reference(row.checkpoint).map(|p| f64::from(pick(p)))
    };
    let chart = |title: &str, series: Vec<Series>| Chart::Lines {
        title: title.into(),
        x_label: "messages in the database".into(),
        y_label: "milliseconds, median".into(),
        series,
        log_y: true,
    };
    vec![
        (
            "execution",
            chart(
                "psu: a job's execution (1000 lines) as the log grows",
                vec![
                    line("joblog", &|row| row.exec_median, false),
                    line("PSU on SQLite (published)", &reference(|p| p.0), true),
                ],
            ),
        ),
        (
            "retrieval",
            chart(
                "psu: retrieving a job's whole log as the log grows",
                vec![
                    line("joblog", &|row| row.retr_median, false),
                    line("PSU on SQLite (published)", &reference(|p| p.1), true),
                ],
            ),
        ),
    ]
}

pub(super) fn psu_report(r: &PsuReport<'_>) -> String {
    let a = r.args;
    let mut s = String::new();
    let _ = writeln!(s, "## joblog bench psu\n");
    let _ = writeln!(s, "- Date: {}", r.date);
    let _ = writeln!(s, "- Command: `{}`", r.command);
    let _ = writeln!(s, "- Store: {}", r.database);
    let _ = writeln!(
        s,
        "- Load: batches of {} concurrent `sh` jobs writing {} lines each, next batch as soon as the last one finished",
        a.batch_jobs, a.lines
    );
    let _ = writeln!(
        s,
        "- Execution: server's `duration_ms` of the jobs of the last {} batches; retrieval: wall time of \
         `GET /api/v1/jobs/{{id}}/log?limit=10000` (body read and parsed) for {} recent finished jobs, \
         one at a time on a warm connection, between batches",
        a.window_batches, a.retrievals
    );
    let _ = writeln!(s, "- Budget: execution ≤ 50 ms, retrieval ≤ 5 ms");
    let _ = writeln!(s, "- Total wall time: {:.1} s", r.total.as_secs_f64());
    if let Some(n) = r.note {
        let _ = writeln!(s, "- Note: {n}");
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "| Messages | Jobs | Execution median (ms) | Retrieval median (ms) | PSU SQLite reference exec / retrieval |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|");
    for row in r.rows {
        let reference = psu_sqlite_reference(row.checkpoint)
            .map(|(e, t)| format!("{e} ms / {t} ms"))
            .unwrap_or_else(|| "–".to_string());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            format_count(row.checkpoint),
            row.jobs,
            fmt_ms(row.exec_median),
            fmt_ms(row.retr_median),
            reference
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "| Messages | Messages written | Execution p90 (ms) | Retrieval p90 (ms) | Batch wall median (ms) | Failed jobs | Server RSS / peak (MiB) | Elapsed (s) |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in r.rows {
        let mem = row
            .memory
            .map(|(rss, peak)| format!("{rss:.0} / {peak:.0}"))
            .unwrap_or_else(|| "–".to_string());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {:.0} |",
            format_count(row.checkpoint),
            row.messages,
            fmt_ms(row.exec_p90),
            fmt_ms(row.retr_p90),
            fmt_ms(row.batch_median),
            row.failed,
            mem,
            row.elapsed.as_secs_f64()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references() {
        assert_eq!(psu_sqlite_reference(500_000), Some((600, 10)));
        assert_eq!(psu_sqlite_reference(20_000), None);
    }
}
