//! What every scenario hands back, and how the harness shows and keeps it:
//! the Markdown printed on stdout and, with `--out DIR`, the same Markdown,
//! the raw figures as JSON and the charts as SVG, one set of files per
//! scenario.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::{json, Value};

use super::chart::Chart;

/// A scenario's results.
#[derive(Debug)]
pub struct Report {
    /// The table(s), with the date and command, as printed.
    pub markdown: String,
    /// The raw figures, as measured (each scenario's own shape).
    pub figures: Value,
    /// Charts, each with the file-name suffix it is written under
    /// (`""` → `<scenario>.svg`, `"retrieval"` → `<scenario>-retrieval.svg`).
    pub charts: Vec<(&'static str, Chart)>,
    /// The scenario stopped on an error after measuring part of it: the
    /// part is reported, and the command exits non-zero.
    pub failed: bool,
}

impl Report {
    pub fn new(markdown: String, figures: Value) -> Report {
        Report {
            markdown,
            figures,
            charts: Vec::new(),
            failed: false,
        }
    }

    pub fn chart(mut self, suffix: &'static str, chart: Chart) -> Report {
        self.charts.push((suffix, chart));
        self
    }
}

/// Where and by what the figures were measured, for the JSON file.
#[derive(Debug, Clone)]
pub struct Meta {
    pub date: String,
    pub command: String,
}

/// The build that measured: version and the commit it was built from.
pub fn build() -> String {
    format!(
        "joblog {} ({})",
        env!("CARGO_PKG_VERSION"),
        env!("JOBLOG_BUILD_COMMIT")
    )
}

/// This machine, as far as a reader comparing figures needs it.
fn machine() -> Value {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let memory_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
            line.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .map(|kib| (kib / 1024.0 / 1024.0 * 10.0).round() / 10.0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_string());
    json!({ "cores": cores, "memory_gib": memory_gib, "kernel": kernel })
}

/// Writes `<scenario>.md`, `<scenario>.json` and its charts into `dir`
/// (made if missing); returns the files written.
pub fn write(
    dir: &Path,
    scenario: &str,
    meta: &Meta,
    report: &Report,
) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    let mut put = |name: String, body: &str| -> anyhow::Result<()> {
        let path = dir.join(name);
        std::fs::write(&path, body).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
        Ok(())
    };
    let mut markdown = report.markdown.clone();
    let charts: Vec<String> = report
        .charts
        .iter()
        .map(|(suffix, _)| svg_name(scenario, suffix))
        .collect();
    markdown.push_str(&format!("\nBuild: {}\n", build()));
    for name in &charts {
        markdown.push_str(&format!("\n![{name}]({name})\n"));
    }
    put(format!("{scenario}.md"), &markdown)?;
    let document = json!({
        "scenario": scenario,
        "date": meta.date,
        "command": meta.command,
        "build": build(),
        "machine": machine(),
        "failed": report.failed,
        "figures": report.figures,
        "charts": charts,
    });
    put(
        format!("{scenario}.json"),
        &(serde_json::to_string_pretty(&document)? + "\n"),
    )?;
    for (name, (_, chart)) in charts.iter().zip(&report.charts) {
        put(name.clone(), &chart.to_svg())?;
    }
    Ok(written)
}

fn svg_name(scenario: &str, suffix: &str) -> String {
    if suffix.is_empty() {
        format!("{scenario}.svg")
    } else {
        format!("{scenario}-{suffix}.svg")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::Bar;

    #[test]
    fn writes_markdown_json_and_each_chart() {
        let dir = std::env::temp_dir().join(format!("joblog-report-test-{}", std::process::id()));
        let bars = |t: &str| Chart::Bars {
            title: t.into(),
            unit: "/s".into(),
            bars: vec![Bar {
                label: "x".into(),
                value: 1.0,
                reference: false,
            }],
        };
        let report = Report::new("| a |\n".into(), json!({"rate": 5}))
            .chart("", bars("one"))
            .chart("second", bars("two"));
        let meta = Meta {
            date: "2026-11-24T10:00:00Z".into(),
            command: "joblog bench x".into(),
        };
        let files = write(&dir.join("out"), "x", &meta, &report).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["x.md", "x.json", "x.svg", "x-second.svg"]);
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&files[1]).unwrap()).unwrap();
        assert_eq!(doc["figures"]["rate"], 5);
        assert_eq!(doc["command"], "joblog bench x");
        assert_eq!(doc["charts"][1], "x-second.svg");
        assert!(doc["build"].as_str().unwrap().starts_with("joblog "));
        let md = std::fs::read_to_string(&files[0]).unwrap();
        assert!(md.contains("![x-second.svg](x-second.svg)"), "{md}");
        assert!(std::fs::read_to_string(&files[3])
            .unwrap()
            .contains(">two<"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
