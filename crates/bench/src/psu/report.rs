//! The Markdown report of `bench psu`: one row per checkpoint, set beside
//! PowerShell Universal's published figures.

use std::fmt::Write as _;
use std::time::Duration;

use crate::baseline::designs::Design;
use serde_json::json;

use super::designs::DesignRow;

use crate::chart::{Chart, Series};
use crate::stats::{fmt_ms, format_count};
use crate::BenchArgs;

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

/// Bytes per record of the storage figure.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bytes {
    /// The database's growth on disk (its file and WAL; PostgreSQL's
    /// database size), free space of deleted rows included.
    pub(super) file: f64,
    /// What its data grew by, free space not counted (sealed logs:
    /// `crate::baseline::live_bytes`).
    pub(super) data: f64,
    /// The sealed segments' blobs alone.
    pub(super) segments: f64,
    /// The logs as plain text, and as `zstd -3` of each job's text.
    pub(super) raw: f64,
    pub(super) zstd: f64,
}

/// The figures measured at one checkpoint.
pub(super) struct Row {
    pub(super) checkpoint: u64,
    pub(super) messages: u64,
    pub(super) storage: Option<Bytes>,
    /// How long the server's sealer took to catch up before the
    /// measurement (`--seal true` on a server of the bench's own).
    pub(super) seal_wait: Option<Duration>,
    /// The designs of the past at the same size.
    pub(super) designs: Vec<DesignRow>,
    pub(super) jobs: u64,
    pub(super) exec_median: Option<f64>,
    pub(super) exec_p90: Option<f64>,
    /// The same scripts run bare by the bench (`floor`).
    pub(super) floor_median: Option<f64>,
    pub(super) floor_p90: Option<f64>,
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
                "floor_median_ms": row.floor_median,
                "floor_p90_ms": row.floor_p90,
                "retrieval_median_ms": row.retr_median,
                "retrieval_p90_ms": row.retr_p90,
                "batch_wall_median_ms": row.batch_median,
                "failed_jobs": row.failed,
                "server_rss_mib": row.memory.map(|m| m.0),
                "server_peak_rss_mib": row.memory.map(|m| m.1),
                "elapsed_s": row.elapsed.as_secs_f64(),
                "psu_sqlite_reference_ms": psu_sqlite_reference(row.checkpoint)
                    .map(|(e, t)| json!({"exec": e, "retrieval": t})),
                "bytes_per_record": row.storage.map(|b| json!({
                    "database": b.file, "data": b.data, "segments": b.segments,
                    "raw_text": b.raw, "zstd_3": b.zstd,
                })),
                "seal_wait_s": row.seal_wait.map(|d| d.as_secs_f64()),
                "designs": row.designs.iter().map(|d| json!({
                    "design": d.design.key(),
                    "name": d.design.name(),
                    "exec_median_ms": d.exec_median,
                    "exec_p90_ms": d.exec_p90,
                    "retrieval_median_ms": d.retr_median,
                    "retrieval_p90_ms": d.retr_p90,
                    "database_bytes_per_record": d.bytes_per_record,
                })).collect::<Vec<_>>(),
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
    let design = |d: Design, exec: bool| Series {
        name: d.name().into(),
        points: r
            .rows
            .iter()
            .filter_map(|row| {
                let x = row.designs.iter().find(|x| x.design == d)?;
                Some((
                    row.checkpoint as f64,
                    if exec { x.exec_median } else { x.retr_median }?,
                ))
            })
            .collect(),
        dashed: false,
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
                    line(
                        "the scripts run bare (floor)",
                        &|row| row.floor_median,
                        true,
                    ),
                    design(Design::RowRewrite, true),
                    design(Design::InsertPerMessage, true),
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
                    design(Design::RowRewrite, false),
                    design(Design::InsertPerMessage, false),
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
    let _ = writeln!(
        s,
        "- Floor: the same {} scripts at once, {} batches, run by the bench itself (`sh -c`, each one's stdout and stderr read from pipes and discarded), from spawn to exit with the pipes read to their end, between joblog's batches at each checkpoint; joblog's cost per job is its execution median minus the floor's",
        a.batch_jobs, a.window_batches
    );
    let _ = writeln!(s, "- Budget: execution ≤ 50 ms, retrieval ≤ 5 ms");
    let _ = writeln!(s, "- Total wall time: {:.1} s", r.total.as_secs_f64());
    if let Some(n) = r.note {
        let _ = writeln!(s, "- Note: {n}");
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "| Messages | Jobs | Execution median (ms) | Floor median (ms) | joblog − floor (ms) | Retrieval median (ms) | PSU SQLite reference exec / retrieval |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|");
    for row in r.rows {
        let reference = psu_sqlite_reference(row.checkpoint)
            .map(|(e, t)| format!("{e} ms / {t} ms"))
            .unwrap_or_else(|| "–".to_string());
        let cost = row.exec_median.zip(row.floor_median).map(|(e, f)| e - f);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            format_count(row.checkpoint),
            row.jobs,
            fmt_ms(row.exec_median),
            fmt_ms(row.floor_median),
            fmt_ms(cost),
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
    designs_table(&mut s, r);
    storage_table(&mut s, r);
    s
}

/// The designs of the past beside joblog, at each checkpoint.
fn designs_table(s: &mut String, r: &PsuReport<'_>) {
    if r.rows.iter().all(|row| row.designs.is_empty()) {
        return;
    }
    let _ = writeln!(
        s,
        "\nThe designs of the past, run by the bench in the same run on the same messages (each in a scratch database of its own, filled to the checkpoint's size, then {} batch(es) of {} concurrent jobs timed, each writing its lines one autocommit statement at a time; retrieval: the newest jobs' whole logs read straight from the database into lines, with no HTTP and no JSON, so the floor of what a server built on the design could answer). Execution / retrieval medians (ms):\n",
        r.args.baseline_batches, r.args.batch_jobs
    );
    let _ = writeln!(
        s,
        "| Messages | joblog | {} | {} | PSU SQLite reference |",
        Design::RowRewrite.name(),
        Design::InsertPerMessage.name()
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|");
    for row in r.rows {
        let pair = |e: Option<f64>, t: Option<f64>| format!("{} / {}", fmt_ms(e), fmt_ms(t));
        let design = |d: Design| {
            row.designs
                .iter()
                .find(|x| x.design == d)
                .map_or("–".to_string(), |x| pair(x.exec_median, x.retr_median))
        };
        let reference = psu_sqlite_reference(row.checkpoint)
            .map_or("–".to_string(), |(e, t)| format!("{e} / {t}"));
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {reference} |",
            format_count(row.checkpoint),
            pair(row.exec_median, row.retr_median),
            design(Design::RowRewrite),
            design(Design::InsertPerMessage),
        );
    }
}

/// Bytes on disk per record, beside the same logs as text and as zstd.
fn storage_table(s: &mut String, r: &PsuReport<'_>) {
    if r.rows.iter().all(|row| row.storage.is_none()) {
        return;
    }
    let sealed = if r.args.seal {
        "logs sealed (the sealer caught up before each measurement)"
    } else {
        "logs kept as rows (`--seal false`)"
    };
    let _ = writeln!(
        s,
        "\nStorage, bytes per record, {sealed}: the database's growth since the server started (after a checkpoint: the file and its WAL, or PostgreSQL's database size, free space of deleted rows included), what its data grew by (free space not counted: SQLite's pages in use; on PostgreSQL the sealed segments' relations), the segments' blobs alone, beside the same logs as plain text and as `zstd -3` of each job's text:\n"
    );
    let _ = writeln!(
        s,
        "| Messages | joblog database | joblog data | sealed segments | raw text | zstd -3 | {} | {} |",
        Design::RowRewrite.name(),
        Design::InsertPerMessage.name()
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|---:|");
    let b = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1}"));
    for row in r.rows {
        let design = |d: Design| {
            b(row
                .designs
                .iter()
                .find(|x| x.design == d)
                .and_then(|x| x.bytes_per_record))
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            format_count(row.checkpoint),
            b(row.storage.map(|x| x.file)),
            b(row.storage.map(|x| x.data)),
            b(row.storage.map(|x| x.segments)),
            b(row.storage.map(|x| x.raw)),
            b(row.storage.map(|x| x.zstd)),
            design(Design::RowRewrite),
            design(Design::InsertPerMessage),
        );
    }
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
