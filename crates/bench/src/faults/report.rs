//! What `bench faults` reports: each `sync` mode's cuts added up
//! ([`Mode`]), the promises some cut broke, and the table, the JSON
//! (`figures.modes`) and the chart.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::check::Verdict;
use crate::chart::{Bar, Chart};
use crate::output::Report;
use crate::stats::{format_count, percentile};

/// What the cuts of one `sync` mode came to.
#[derive(Debug, Default)]
pub(super) struct Mode {
    pub(super) sync: &'static str,
    pub(super) cuts: u64,
    pub(super) events_per_run: u64,
    /// Of the run the power did not cut: its commits, and its syncs of
    /// the WAL (with `sync = normal`, its checkpoints).
    pub(super) commits_per_run: u64,
    pub(super) wal_syncs_per_run: u64,
    /// And what it did: jobs claimed, segments sealed, jobs deleted.
    pub(super) work_per_run: (u64, u64, u64),
    pub(super) verdicts: Vec<Verdict>,
    pub(super) kept: u64,
    pub(super) lost: u64,
    pub(super) torn: u64,
    pub(super) lagged: u64,
    pub(super) corrupt_examples: Vec<String>,
    /// Cuts that came while a job's log was being sealed, and while one
    /// was being deleted by retention.
    pub(super) cut_sealing: u64,
    pub(super) cut_retention: u64,
    pub(super) seconds: f64,
}

impl Mode {
    fn sum(&self, f: impl Fn(&Verdict) -> u64) -> u64 {
        self.verdicts.iter().map(f).sum()
    }

    fn corrupt(&self) -> u64 {
        self.verdicts.iter().filter(|v| v.corrupt.is_some()).count() as u64
    }

    /// The promises of this mode that some cut broke.
    fn broken(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut say = |n: u64, what: &str| {
            if n > 0 {
                out.push(format!("{n} {what}"));
            }
        };
        if self.sync == "full" {
            say(
                self.sum(|v| v.lost_acknowledged),
                "acknowledged things lost",
            );
        }
        say(self.corrupt(), "cuts left the database corrupt");
        say(self.sum(|v| v.gaps), "logs with a gap");
        say(self.sum(|v| v.duplicates), "records twice");
        say(
            self.sum(|v| v.out_of_order),
            "commits there after a lost one",
        );
        say(
            self.sum(|v| v.lost_before_sync),
            "commits lost that the WAL had synced",
        );
        say(self.sum(|v| v.duplicate_claims), "claims made again");
        out
    }

    fn figures(&self) -> Value {
        let lost: Vec<f64> = self
            .verdicts
            .iter()
            .map(|v| v.lost_commits as f64)
            .collect();
        json!({
            "sync": self.sync,
            "cuts": self.cuts,
            "lost_acknowledged": self.sum(|v| v.lost_acknowledged),
            "corrupt": self.corrupt(),
            "cuts_losing": self.verdicts.iter().filter(|v| v.lost_acknowledged > 0).count(),
            "lost_commits_p50": percentile(&lost, 50.0).unwrap_or(0.0),
            "lost_commits_p99": percentile(&lost, 99.0).unwrap_or(0.0),
            "lost_commits_max": lost.iter().copied().fold(0.0, f64::max),
            "lost_before_sync": self.sum(|v| v.lost_before_sync),
            "out_of_order": self.sum(|v| v.out_of_order),
            "gaps": self.sum(|v| v.gaps),
            "duplicates": self.sum(|v| v.duplicates),
            "duplicate_claims": self.sum(|v| v.duplicate_claims),
            "unsynced_writes": { "kept": self.kept, "lost": self.lost, "torn": self.torn },
            "events_per_run": self.events_per_run,
            "commits_per_run": self.commits_per_run,
            "wal_syncs_per_run": self.wal_syncs_per_run,
            "run": {
                "jobs_claimed": self.work_per_run.0,
                "segments_sealed": self.work_per_run.1,
                "jobs_deleted": self.work_per_run.2,
            },
            "ledger_lagged": self.lagged,
            "cuts_while_sealing": self.cut_sealing,
            "cuts_while_deleting": self.cut_retention,
            "corrupt_examples": self.corrupt_examples,
            "seconds": self.seconds,
        })
    }
}

pub(super) fn report(modes: &[Mode], seed: u64, date: &str) -> Report {
    let mut out = String::new();
    let _ = writeln!(out, "## joblog bench faults\n");
    let _ = writeln!(out, "Date: {date}  ");
    let _ = writeln!(out, "Command: `{}`  ", crate::command_line());
    let _ = writeln!(out, "Seed: {seed}\n");
    let _ = writeln!(
        out,
        "Power cut at a random write, truncate or sync of the SQLite store (the real pipeline and writer under load: \
         jobs queued, claimed, logging, ended, sealed, deleted by retention); each write not yet synced then kept, \
         lost or torn by 512-byte sectors; the store reopened and checked.\n"
    );
    let _ = writeln!(
        out,
        "| | {} |",
        modes
            .iter()
            .map(|m| format!("`sync = {}`", m.sync))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(out, "|---|{}", "---:|".repeat(modes.len()));
    let row = |out: &mut String, label: &str, f: &dyn Fn(&Mode) -> String| {
        let cells: Vec<String> = modes.iter().map(f).collect();
        let _ = writeln!(out, "| {label} | {} |", cells.join(" | "));
    };
    row(&mut out, "power cuts", &|m| format_count(m.cuts));
    row(
        &mut out,
        "of which while a log was sealed / deleted by retention",
        &|m| {
            format!(
                "{} / {}",
                format_count(m.cut_sealing),
                format_count(m.cut_retention)
            )
        },
    );
    row(
        &mut out,
        "acknowledged things lost (records, ends, claims, jobs)",
        &|m| format_count(m.sum(|v| v.lost_acknowledged)),
    );
    row(&mut out, "cuts that lost something acknowledged", &|m| {
        format_count(
            m.verdicts
                .iter()
                .filter(|v| v.lost_acknowledged > 0)
                .count() as u64,
        )
    });
    row(
        &mut out,
        "acknowledged commits lost, p50 / p99 / max (the last N)",
        &|m| {
            let lost: Vec<f64> = m.verdicts.iter().map(|v| v.lost_commits as f64).collect();
            format!(
                "{:.0} / {:.0} / {:.0}",
                percentile(&lost, 50.0).unwrap_or(0.0),
                percentile(&lost, 99.0).unwrap_or(0.0),
                lost.iter().copied().fold(0.0, f64::max)
            )
        },
    );
    row(&mut out, "commits lost that the WAL had synced", &|m| {
        format_count(m.sum(|v| v.lost_before_sync))
    });
    row(
        &mut out,
        "corrupt databases (`integrity_check`, unreadable logs)",
        &|m| format_count(m.corrupt()),
    );
    row(&mut out, "logs with a gap / records twice", &|m| {
        format!("{} / {}", m.sum(|v| v.gaps), m.sum(|v| v.duplicates))
    });
    row(&mut out, "commits there after a lost one", &|m| {
        format_count(m.sum(|v| v.out_of_order))
    });
    row(&mut out, "claims made again after the restart", &|m| {
        format_count(m.sum(|v| v.duplicate_claims))
    });
    row(
        &mut out,
        "unsynced writes at the cuts: kept / lost / torn",
        &|m| {
            format!(
                "{} / {} / {}",
                format_count(m.kept),
                format_count(m.lost),
                format_count(m.torn)
            )
        },
    );
    row(
        &mut out,
        "a whole run: writes, truncates and syncs / commits / WAL syncs",
        &|m| {
            format!(
                "{} / {} / {}",
                format_count(m.events_per_run),
                format_count(m.commits_per_run),
                format_count(m.wal_syncs_per_run)
            )
        },
    );
    row(
        &mut out,
        "a whole run: jobs claimed / segments sealed / jobs deleted",
        &|m| {
            let (c, s, d) = m.work_per_run;
            format!("{c} / {s} / {d}")
        },
    );
    row(&mut out, "wall time (s)", &|m| format!("{:.0}", m.seconds));
    let mut failed = false;
    for m in modes {
        let broken = m.broken();
        if !broken.is_empty() {
            failed = true;
            let _ = writeln!(
                out,
                "\n**`sync = {}` broke its promise**: {}.",
                m.sync,
                broken.join(", ")
            );
        }
        for e in &m.corrupt_examples {
            let _ = writeln!(out, "\n- `sync = {}`, corrupt: {e}", m.sync);
        }
    }
    if !failed {
        let _ = writeln!(
            out,
            "\nEvery promise held: with `sync = full` nothing acknowledged was lost; in both modes no database was corrupt, \
             every log was one run of seqs, what survived was a prefix of the commits, and no claim was made twice."
        );
    }
    let figures = json!({
        "seed": seed,
        "modes": modes.iter().map(Mode::figures).collect::<Vec<_>>(),
    });
    let bars = modes
        .iter()
        .map(|m| Bar {
            label: format!("sync = {}", m.sync),
            value: m
                .verdicts
                .iter()
                .filter(|v| v.lost_acknowledged > 0)
                .count() as f64
                * 100.0
                / m.cuts.max(1) as f64,
            reference: m.sync == "full",
        })
        .collect();
    let chart = Chart::Bars {
        title: "Power cuts that lost something acknowledged".into(),
        unit: "% of cuts".into(),
        bars,
    };
    let mut report = Report::new(out, figures).chart("", chart);
    report.failed = failed;
    report
}
