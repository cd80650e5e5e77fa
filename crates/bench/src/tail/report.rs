//! The figures of `bench tail`: each measurement's latencies over all its
//! viewers' lines, and the Markdown report with the medians over runs.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::json;

use super::super::chart::{Bar, Chart};
use super::super::psu::load::LoadFigures;
use super::super::stats::{fmt_ms, median, percentile};
use super::super::BenchArgs;
use super::lines::{line_count, ViewerOutcome};

/// Problems a measurement keeps word for word for the report.
const KEEP_PROBLEMS: usize = 10;

/// One measurement's latencies, every line of every viewer together.
#[derive(Debug, Clone, Default)]
pub(crate) struct Figures {
    pub(crate) viewers: usize,
    /// Lines delivered, all viewers.
    pub(crate) lines: u64,
    /// Lines that should have been: written × viewers.
    pub(crate) expected: u64,
    pub(crate) p50: Option<f64>,
    pub(crate) p90: Option<f64>,
    pub(crate) p99: Option<f64>,
    pub(crate) max: Option<f64>,
    /// Written → the server's `ts` on the record, p99: the part of the
    /// latency before joblog's pipeline and the SSE path.
    pub(crate) to_server_p99: Option<f64>,
    /// The pace the job wrote at, from its own stamps.
    pub(crate) written_per_s: Option<f64>,
    pub(crate) problems: Vec<String>,
    pub(crate) problem_count: u64,
}

impl Figures {
    /// `written` lines per viewer; `job_problem` says how the job ended
    /// if not as it should have.
    pub(super) fn of(
        outcomes: &[ViewerOutcome],
        written: u64,
        job_problem: Option<String>,
    ) -> Figures {
        let all: Vec<f64> = outcomes
            .iter()
            .flat_map(|o| o.latency_ms.iter().copied())
            .collect();
        let to_server: Vec<f64> = outcomes
            .iter()
            .flat_map(|o| o.to_server_ms.iter().copied())
            .collect();
        let mut problems = Vec::new();
        let mut problem_count = 0;
        if let Some(p) = job_problem {
            problems.push(p);
            problem_count += 1;
        }
        for (i, o) in outcomes.iter().enumerate() {
            problem_count += o.problem_count;
            for p in &o.problems {
                if problems.len() < KEEP_PROBLEMS {
                    problems.push(format!("viewer {}: {p}", i + 1));
                }
            }
        }
        Figures {
            viewers: outcomes.len(),
            lines: outcomes.iter().map(|o| o.lines).sum(),
            expected: written * outcomes.len() as u64,
            p50: percentile(&all, 50.0),
            p90: percentile(&all, 90.0),
            p99: percentile(&all, 99.0),
            max: all.iter().copied().reduce(f64::max),
            to_server_p99: percentile(&to_server, 99.0),
            written_per_s: outcomes.iter().find_map(|o| o.written_per_s),
            problems,
            problem_count,
        }
    }

    /// One line for the progress output.
    pub(super) fn summary(&self) -> String {
        let mut s = format!(
            "{} viewer(s): p50 {} ms, p99 {} ms, max {} ms, {} of {} lines delivered",
            self.viewers,
            fmt_ms(self.p50),
            fmt_ms(self.p99),
            fmt_ms(self.max),
            self.lines,
            self.expected
        );
        if self.problem_count > 0 {
            let _ = write!(
                s,
                "; {} problem(s), first: {}",
                self.problem_count,
                self.problems.join("; ")
            );
        }
        s
    }
}

/// One measurement: a run with a number of viewers.
pub(super) struct Measured {
    pub(super) run: u32,
    pub(super) viewers: u32,
    pub(super) figures: Figures,
    pub(super) load: LoadFigures,
}

pub(super) struct TailReport<'a> {
    pub(super) date: &'a str,
    pub(super) command: &'a str,
    pub(super) database: &'a str,
    pub(super) args: &'a BenchArgs,
    pub(super) rows: &'a [Measured],
    pub(super) total: Duration,
    pub(super) note: Option<&'a str>,
}

/// The raw figures for `--out`, and the chart: p99 by viewer count.
pub(super) fn figures(r: &TailReport<'_>) -> (serde_json::Value, Chart) {
    let rows: Vec<_> = r
        .rows
        .iter()
        .map(|m| {
            let f = &m.figures;
            json!({
                "run": m.run,
                "viewers": m.viewers,
                "lines_delivered": f.lines,
                "lines_expected": f.expected,
                "p50_ms": f.p50, "p90_ms": f.p90, "p99_ms": f.p99, "max_ms": f.max,
                "to_server_p99_ms": f.to_server_p99,
                "problems": f.problem_count,
                "load_jobs": m.load.jobs,
                "load_exec_median_ms": m.load.exec_median,
            })
        })
        .collect();
    let mut bars = Vec::new();
    for &v in &r.args.viewers.0 {
        let p99: Vec<f64> = r
            .rows
            .iter()
            .filter(|m| m.viewers == v)
            .filter_map(|m| m.figures.p99)
            .collect();
        if let Some(p) = median(&p99) {
            bars.push(Bar {
                label: format!("{v} viewer(s), p99"),
                value: p,
                reference: false,
            });
        }
    }
    bars.push(Bar {
        label: "budget: p99".into(),
        value: BUDGET_P99_MS,
        reference: true,
    });
    let chart = Chart::Bars {
        title: "tail: a line written → delivered to live-tail viewers, under the psu load".into(),
        unit: "milliseconds, median of the runs (grey: the budget)".into(),
        bars,
    };
    (
        json!({ "measurements": rows, "budget_p99_ms": BUDGET_P99_MS }),
        chart,
    )
}

/// Budget of docs/benchmarks.md: p99, ms.
const BUDGET_P99_MS: f64 = 100.0;

pub(super) fn render(r: &TailReport<'_>) -> String {
    let a = r.args;
    let lines = line_count(a.rate, a.duration);
    let mut s = String::new();
    let _ = writeln!(s, "## joblog bench tail\n");
    let _ = writeln!(s, "- Date: {}", r.date);
    let _ = writeln!(s, "- Command: `{}`", r.command);
    let _ = writeln!(s, "- Store: {}", r.database);
    let _ = writeln!(
        s,
        "- Followed job: `joblog bench tail-writer`, {lines} lines at {} lines/s, each stamped with the wall clock just before its write",
        a.rate
    );
    let _ = writeln!(
        s,
        "- Viewers: HTTP/1.1 connections of the bench to `GET /api/v1/jobs/{{id}}/log/events`, all connected before the first line; \
         latency = the viewer has parsed the line's event − the line's stamp (one machine, one clock), every line of every viewer"
    );
    let _ = writeln!(
        s,
        "- Load: the psu load on the same server, from before the first line to after the last: batches of {} concurrent `sh` jobs \
         writing {} lines each, back to back",
        a.batch_jobs, a.lines
    );
    let _ = writeln!(s, "- Budget: p99 ≤ 100 ms (goal ≤ 20 ms)");
    let _ = writeln!(s, "- Total wall time: {:.1} s", r.total.as_secs_f64());
    if let Some(n) = r.note {
        let _ = writeln!(s, "- Note: {n}");
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "| Viewers | Runs | p50 (ms) | p99 (ms) | max (ms) | Runs with problems |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|");
    for &v in &a.viewers.0 {
        let rows: Vec<&Measured> = r.rows.iter().filter(|m| m.viewers == v).collect();
        if rows.is_empty() {
            continue;
        }
        let med = |f: fn(&Figures) -> Option<f64>| {
            let v: Vec<f64> = rows.iter().filter_map(|m| f(&m.figures)).collect();
            fmt_ms(median(&v))
        };
        let _ = writeln!(
            s,
            "| {v} | {} | {} | {} | {} | {} |",
            rows.len(),
            med(|f| f.p50),
            med(|f| f.p99),
            med(|f| f.max),
            rows.iter().filter(|m| m.figures.problem_count > 0).count()
        );
    }
    let _ = writeln!(
        s,
        "\nMedians over the runs of each run's figures. Each run:\n"
    );
    let _ = writeln!(
        s,
        "| Run | Viewers | Lines delivered | p50 (ms) | p90 (ms) | p99 (ms) | max (ms) | To the server p99 (ms) | Written (lines/s) | psu jobs (failed) | psu execution median (ms) | psu batch wall median (ms) |"
    );
    let _ = writeln!(
        s,
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for m in r.rows {
        let f = &m.figures;
        let _ = writeln!(
            s,
            "| {} | {} | {} / {} | {} | {} | {} | {} | {} | {} | {} ({}) | {} | {} |",
            m.run,
            m.viewers,
            f.lines,
            f.expected,
            fmt_ms(f.p50),
            fmt_ms(f.p90),
            fmt_ms(f.p99),
            fmt_ms(f.max),
            fmt_ms(f.to_server_p99),
            f.written_per_s
                .map_or("–".to_string(), |r| format!("{r:.0}")),
            m.load.jobs,
            m.load.failed,
            fmt_ms(m.load.exec_median),
            fmt_ms(m.load.batch_median),
        );
    }
    let troubled: Vec<&Measured> = r
        .rows
        .iter()
        .filter(|m| m.figures.problem_count > 0)
        .collect();
    if !troubled.is_empty() {
        let _ = writeln!(s, "\n**Problems** (the first of each run):\n");
        for m in troubled {
            let _ = writeln!(
                s,
                "- run {}, {} viewer(s), {} problem(s): {}",
                m.run,
                m.viewers,
                m.figures.problem_count,
                m.figures.problems.join("; ")
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::super::lines::{format_line, Tally};
    use super::*;

    /// A viewer that saw lines 1..=n, line k delivered `lat(k)` ms late.
    fn viewer(n: u64, lat: impl Fn(u64) -> i128) -> ViewerOutcome {
        let mut t = Tally::new(n);
        for k in 1..=n {
            let w = i128::from(k) * 5_000_000;
            let line = format_line(k, w);
            t.record(k, line.trim_end(), Some(w), w + lat(k) * 1_000_000);
        }
        t.finish()
    }

    #[test]
    fn percentiles_pool_every_line_of_every_viewer() {
        // 100 lines × 2 viewers: 198 at 1 ms, one at 50 ms, one at 300 ms.
        let a = viewer(100, |k| if k == 7 { 50 } else { 1 });
        let b = viewer(100, |k| if k == 100 { 300 } else { 1 });
        let f = Figures::of(&[a, b], 100, None);
        assert_eq!((f.viewers, f.lines, f.expected), (2, 200, 200));
        assert_eq!(f.p50, Some(1.0));
        assert_eq!(f.max, Some(300.0));
        // Rank 0.99 × 199 = 197.01: between the last 1 ms and the 50 ms.
        assert!((f.p99.unwrap() - 1.49).abs() < 1e-9, "{:?}", f.p99);
        assert_eq!(f.to_server_p99, Some(0.0));
        assert_eq!(f.problem_count, 0);
        assert!(f.summary().contains("200 of 200 lines"), "{}", f.summary());
    }

    #[test]
    fn problems_name_their_viewer_and_the_job() {
        let ok = viewer(3, |_| 1);
        let also_ok = viewer(3, |_| 1);
        let mut t = Tally::new(3);
        t.record(1, "tail 1 0 x", None, 0);
        let f = Figures::of(
            &[ok, also_ok, t.finish()],
            3,
            Some("job 9 ended failed with 1 records, 3 expected".into()),
        );
        assert_eq!(f.problem_count, 2);
        assert_eq!(
            f.problems,
            [
                "job 9 ended failed with 1 records, 3 expected",
                "viewer 3: got lines up to 1 of 3"
            ]
        );
        assert!(f.summary().contains("2 problem(s)"));
    }

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        bench: BenchArgs,
    }

    #[test]
    fn the_report_has_medians_per_viewer_count_and_a_row_per_run() {
        let args = Cmd::try_parse_from(["bench", "tail"]).unwrap().bench;
        let m = |run, viewers, p99: f64, problems| Measured {
            run,
            viewers,
            figures: Figures {
                viewers: viewers as usize,
                p50: Some(2.0),
                p99: Some(p99),
                max: Some(p99 * 2.0),
                problem_count: problems,
                problems: vec!["viewer 1: got lines up to 1 of 2000".into(); problems as usize],
                ..Figures::default()
            },
            load: LoadFigures::default(),
        };
        let rows = [
            m(1, 1, 10.0, 0),
            m(1, 100, 30.0, 0),
            m(2, 1, 12.0, 0),
            m(2, 100, 50.0, 1),
            m(3, 1, 14.0, 0),
        ];
        let text = render(&TailReport {
            date: "2026-11-24T00:00:00Z",
            command: "joblog bench tail",
            database: "SQLite",
            args: &args,
            rows: &rows,
            total: Duration::from_secs(3),
            note: None,
        });
        assert!(text.contains("| 1 | 3 | 2.0 | 12.0 | 24.0 | 0 |"), "{text}");
        assert!(
            text.contains("| 100 | 2 | 2.0 | 40.0 | 80.0 | 1 |"),
            "{text}"
        );
        assert_eq!(text.matches("\n| 2 | 100 |").count(), 1, "{text}");
        assert!(
            text.contains("- run 2, 100 viewer(s), 1 problem(s): viewer 1: got lines"),
            "{text}"
        );
        assert!(text.contains("2000 lines at 200 lines/s"), "{text}");
    }
}
