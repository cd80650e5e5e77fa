//! `joblog bench result`: a job that writes a large JSON result (4 MB by
//! default) to `$JOBLOG_RESULT`, run again and again on a server of the
//! bench's own: from the job's exit to its result stored (retrievable),
//! and the result read back over HTTP, decoded and as the stored zstd;
//! with the storage ratio.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use joblog_core::{parse_time_bound, Timestamp};
use reqwest::header::{ACCEPT_ENCODING, CONTENT_ENCODING};

use super::chart::{Bar, Chart};
use super::output::Report;
use super::psu::run_job;
use super::server::on_own_server;
use super::stats::{fmt_ms, median, percentile};
use super::{scratch_dir, BenchArgs};
use joblog_client::Api;

/// The blob's header: stored bytes = the zstd answer's length + this.
const BLOB_HEADER: u64 = 20;

/// Budgets of docs/benchmarks.md, ms: stored, read back.
const BUDGET: (f64, f64) = (20.0, 10.0);
const GOAL: (f64, f64) = (10.0, 5.0);

/// One job's figures, ms.
#[derive(serde::Serialize)]
struct Run {
    stored: f64,
    read: f64,
    read_zstd: f64,
}

pub(super) async fn run(args: BenchArgs) -> anyhow::Result<Report> {
    let date = super::now_rfc3339();
    let dir = scratch_dir("result")?;
    let document = document(args.result_size);
    let doc_path = dir.join("result.json");
    std::fs::write(&doc_path, &document)
        .with_context(|| format!("cannot write {}", doc_path.display()))?;
    // The job copies a ready document: what is timed is joblog's part.
    let script = format!(
        "cat '{}' > \"$JOBLOG_RESULT\"; echo written",
        doc_path.display()
    );
    let outcome = on_own_server(&args, "result", &[], async |server| {
        measure(&args, &server.url, &script, document.len() as u64).await
    })
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    let (runs, stored_bytes) = outcome?;
    Ok(report(
        &args,
        &date,
        &super::command_line(),
        &runs,
        document.len() as u64,
        stored_bytes,
    ))
}

/// A warm-up job, then `--runs` timed ones; the stored size of the last.
async fn measure(
    args: &BenchArgs,
    url: &str,
    script: &str,
    raw_len: u64,
) -> anyhow::Result<(Vec<Run>, u64)> {
    let api = Api::new(url, None)?;
    // Its own client: no Accept-Encoding of its own (reqwest adds none
    // without its decoders), so each request says what it takes.
    let http = reqwest::Client::builder()
        .build()
        .context("cannot set up the bench's HTTP client")?;
    let mut runs = Vec::new();
    let mut stored_bytes = 0;
    for i in 0..=args.runs {
        let job = run_job(&api, script, args.job_timeout).await?;
        if job.state != "succeeded" {
            bail!("job {} ended {}, not succeeded", job.id, job.state);
        }
        let bytes = job.result.as_ref().map_or(0, |r| r.bytes);
        if bytes != raw_len {
            bail!(
                "job {} has a result of {bytes} bytes, not {raw_len}",
                job.id
            );
        }
        // The job's last line ("written") is stamped when the server reads
        // it, as the job exits; `finished_at` is the commit of its end,
        // result included: from then on the result can be read.
        let page = api.log_page(job.id, 0, 10, None, None).await?;
        let exit = page
            .records
            .last()
            .map(|r| timestamp(&r.ts))
            .transpose()?
            .context("the job has no record")?;
        let finished = timestamp(job.finished_at.as_deref().unwrap_or_default())?;
        let result_url = api.url(&format!("/api/v1/jobs/{}/result", job.id), &[])?;
        let t = Instant::now();
        let plain = http
            .get(result_url.clone())
            .send()
            .await?
            .error_for_status()?;
        let plain = plain.bytes().await?;
        let read = t.elapsed();
        if plain.len() as u64 != raw_len {
            bail!("read back {} bytes of {raw_len}", plain.len());
        }
        let t = Instant::now();
        let packed = http
            .get(result_url)
            .header(ACCEPT_ENCODING, "zstd")
            .send()
            .await?
            .error_for_status()?;
        let encoding = packed.headers().get(CONTENT_ENCODING).cloned();
        let packed = packed.bytes().await?;
        let read_zstd = t.elapsed();
        if encoding.as_ref().and_then(|v| v.to_str().ok()) != Some("zstd") {
            bail!("the result was not sent as stored zstd ({encoding:?})");
        }
        if i == 0 {
            // The warm-up's answers are checked, not timed.
            let decoded = zstd::stream::decode_all(&packed[..])?;
            if decoded != plain {
                bail!("the zstd answer does not decode to the plain one");
            }
            continue;
        }
        stored_bytes = packed.len() as u64 + BLOB_HEADER;
        runs.push(Run {
            stored: exit.millis_until(finished),
            read: ms(read),
            read_zstd: ms(read_zstd),
        });
    }
    Ok((runs, stored_bytes))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn timestamp(text: &str) -> anyhow::Result<Timestamp> {
    parse_time_bound(text, Timestamp(0)).map_err(|e| anyhow::anyhow!("a job's time: {e}"))
}

/// About `len` bytes of JSON as a report job writes: an array of
/// records with repeated keys, host names, numbers and flags.
fn document(len: u64) -> Vec<u8> {
    let len = len as usize;
    let mut out = Vec::with_capacity(len + 256);
    out.push(b'[');
    let mut i: u64 = 0;
    while out.len() + 160 < len || i == 0 {
        if i > 0 {
            out.push(b',');
        }
        let record = format!(
            r#"{{"id":{i},"host":"web-{:03}.example.net","ok":{},"latency_ms":{},"bytes":{},"tags":["deploy","ü","{}"]}}"#,
            i % 997,
            !i.is_multiple_of(7),
            (i % 1000) as f64 / 8.0,
            i.wrapping_mul(2_654_435_761) % 1_000_000,
            i
        );
        out.extend_from_slice(record.as_bytes());
        i += 1;
    }
    out.push(b']');
    out
}

fn report(
    args: &BenchArgs,
    date: &str,
    command: &str,
    runs: &[Run],
    raw: u64,
    stored: u64,
) -> Report {
    let col = |f: fn(&Run) -> f64| runs.iter().map(f).collect::<Vec<f64>>();
    let stored_ms = col(|r| r.stored);
    let read = col(|r| r.read);
    let read_zstd = col(|r| r.read_zstd);
    let store = args.store_name();
    let mut out = String::new();
    let _ = writeln!(out, "## joblog bench result\n");
    let _ = writeln!(out, "Date: {date}  ");
    let _ = writeln!(out, "Command: `{command}`  ");
    let _ = writeln!(
        out,
        "Store: {store}. A job copies a {raw}-byte JSON document into `$JOBLOG_RESULT`; {} timed jobs after one warm-up.\n",
        runs.len()
    );
    let _ = writeln!(
        out,
        "| Figure | median (ms) | p90 (ms) | max (ms) | budget (goal) |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---|");
    let row = |out: &mut String, name: &str, v: &[f64], (budget, goal): (f64, f64)| {
        let met = median(v).is_some_and(|m| m <= budget);
        let b = format!(
            "≤ {budget} ({goal}){}",
            if met { "" } else { " **missed**" }
        );
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {b} |",
            fmt_ms(median(v)),
            fmt_ms(percentile(v, 90.0)),
            fmt_ms(percentile(v, 100.0))
        );
    };
    row(
        &mut out,
        "job exit → result stored",
        &stored_ms,
        (BUDGET.0, GOAL.0),
    );
    row(
        &mut out,
        "read back over HTTP, decoded",
        &read,
        (BUDGET.1, GOAL.1),
    );
    row(
        &mut out,
        "read back over HTTP, stored zstd (`Accept-Encoding: zstd`)",
        &read_zstd,
        (BUDGET.1, GOAL.1),
    );
    let _ = writeln!(
        out,
        "\nStored: {stored} bytes for {raw} bytes of JSON ({:.1}× smaller).",
        raw as f64 / stored.max(1) as f64
    );
    let figures = serde_json::json!({
        "store": store,
        "result_bytes": raw,
        "stored_bytes": stored,
        "runs_ms": runs,
        "median_ms": {
            "stored": median(&stored_ms),
            "read": median(&read),
            "read_zstd": median(&read_zstd),
        },
        "budget_ms": { "stored": BUDGET.0, "read": BUDGET.1 },
    });
    let bar = |label: &str, value: Option<f64>, reference: bool| Bar {
        label: label.into(),
        value: value.unwrap_or(f64::NAN),
        reference,
    };
    let chart = Chart::Bars {
        title: format!(
            "result: a {:.1} MB result, medians ({store})",
            raw as f64 / 1e6
        ),
        unit: "milliseconds (grey: budgets)".into(),
        bars: vec![
            bar("exit → result stored", median(&stored_ms), false),
            bar("budget: stored", Some(BUDGET.0), true),
            bar("read back, decoded", median(&read), false),
            bar("read back, stored zstd", median(&read_zstd), false),
            bar("budget: read back", Some(BUDGET.1), true),
        ],
    };
    Report::new(out, figures).chart("", chart)
}
