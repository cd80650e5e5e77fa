//! `joblog bench ingest`: sustained records per second through the
//! pipeline into the store, beside the raw write limit of the same database
//! measured in the same run by plain client code (docs/benchmarks.md: ≥ 70 %).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::baseline::{self, Batch, Method};
use anyhow::Context;
use joblog_core::{JobId, JobSpec, LogSummary, Record, Stream, Timestamp};
use joblog_pipeline::{Pipeline, PipelineConfig};
use joblog_store::StoreOptions;

use serde_json::json;

use super::chart::{Bar, Chart};
use super::output::Report;
use super::stats::{
    database_bytes, format_count, index_bytes, live_bytes, median, segment_bytes, TextSize,
};
use super::BenchArgs;
use joblog_client::progress::Progress;

/// Records a job hands over at a time (a pipe read of short lines).
const APPEND_RECORDS: usize = 100;

pub async fn run(args: BenchArgs) -> anyhow::Result<Report> {
    let date = super::now_rfc3339();
    let tmp = super::scratch_dir("ingest")?;
    let url = match &args.database {
        Some(url) => url.clone(),
        None => format!("sqlite://{}", tmp.join("joblog.db").display()),
    };
    let outcome = measure(&args, &url, &date).await;
    let _ = std::fs::remove_dir_all(&tmp);
    outcome
}

async fn measure(args: &BenchArgs, url: &str, date: &str) -> anyhow::Result<Report> {
    let url = url.to_string();
    let options = StoreOptions {
        node: "bench-ingest".into(),
        ..StoreOptions::default()
    };
    let store = joblog_store::open(&url, &options)?;
    let mut registry = prometheus_client::registry::Registry::default();
    let config = PipelineConfig::default();
    let max_batch = config.max_batch_records;
    let (pipeline, writer) = Pipeline::start(store.open_writer()?, config, &mut registry);
    let jobs = args.batch_jobs as usize;
    let total = args.records.max(jobs as u64) as usize;
    let per_job = total / jobs;
    let methods = baseline::methods(&url);
    eprintln!(
        "bench: ingest into {}: {} runs of {} records from {jobs} jobs",
        store.describe(),
        args.runs,
        format_count(total as u64)
    );

    let mut piped = Vec::new();
    let mut raw: Vec<Vec<f64>> = vec![Vec::new(); methods.len()];
    let mut storage = Storage::default();
    let progress = Progress::new(u64::from(args.runs), "runs");
    for run in 1..=args.runs {
        let ids = new_jobs(&pipeline, jobs).await?;
        let before = database_bytes(&url).await?;
        let work: Vec<(JobId, Vec<Vec<Record>>)> = ids
            .iter()
            .map(|id| {
                (
                    *id,
                    records(*id, per_job)
                        .chunks(APPEND_RECORDS)
                        .map(<[Record]>::to_vec)
                        .collect(),
                )
            })
            .collect();
        storage.text(&work)?;
        let live_before = live_bytes(&url).await?;
        let took = through_pipeline(&pipeline, work, ids[0]).await?;
        storage.database += database_bytes(&url).await?.saturating_sub(before);
        storage.records += (per_job * jobs) as u64;
        if args.seal {
            // The run's logs sealed as the server's sealer would, one job
            // at a time, then what their data takes.
            let started = Instant::now();
            let mut sealed = 0;
            for &id in &ids {
                sealed += joblog_engine::seal_job(store.as_ref(), &pipeline, id)
                    .await?
                    .records;
            }
            storage.seal_time += started.elapsed();
            storage.sealed_records += sealed;
            storage.sealed += live_bytes(&url).await?.saturating_sub(live_before);
            storage.segments = segment_bytes(&url).await?;
            storage.indexes = index_bytes(&url).await?;
        }
        let rate = (per_job * jobs) as f64 / took.as_secs_f64();
        progress.keep(format!("bench: run {run}: pipeline {rate:.0} records/s"));
        piped.push(rate);

        for (m, method) in methods.iter().enumerate() {
            // A prepared INSERT per record into PostgreSQL is slow enough
            // that a tenth of the records tells its rate.
            let n = if *method == Method::Insert && methods.len() > 1 {
                (per_job / 10).max(1)
            } else {
                per_job
            };
            let ids = new_jobs(&pipeline, jobs).await?;
            let batches = interleave(&ids, n, max_batch);
            let url = url.clone();
            let method = *method;
            let took = tokio::task::spawn_blocking(move || baseline::write(&url, method, &batches))
                .await
                .context("baseline task")??;
            let rate = (n * jobs) as f64 / took.as_secs_f64();
            progress.keep(format!(
                "bench: run {run}: {} {rate:.0} records/s",
                method.name()
            ));
            raw[m].push(rate);
        }
        progress.inc();
    }
    pipeline.close();
    tokio::task::spawn_blocking(move || writer.join()).await?;

    let pipeline_median = median(&piped).unwrap_or(0.0);
    let (best_method, best) = methods
        .iter()
        .zip(&raw)
        .map(|(m, r)| (*m, median(r).unwrap_or(0.0)))
        .fold(
            (Method::Insert, 0.0),
            |acc, x| if x.1 > acc.1 { x } else { acc },
        );
    let mut out = String::new();
    let _ = writeln!(out, "## joblog bench ingest\n");
    let _ = writeln!(out, "Date: {date}  ");
    let _ = writeln!(out, "Command: `{}`  ", super::command_line());
    let _ = writeln!(
        out,
        "Store: {} · {} records per run from {jobs} concurrent jobs ({APPEND_RECORDS} records per hand-over) · {} runs · medians\n",
        store.describe(),
        format_count((per_job * jobs) as u64),
        args.runs
    );
    let _ = writeln!(out, "| Writer | Records/s (median) | Runs (records/s) |");
    let _ = writeln!(out, "|---|---:|---|");
    let runs = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        out,
        "| joblog pipeline (group commit) | {pipeline_median:.0} | {} |",
        runs(&piped)
    );
    for (m, r) in methods.iter().zip(&raw) {
        let _ = writeln!(
            out,
            "| raw: {} | {:.0} | {} |",
            m.name(),
            median(r).unwrap_or(0.0),
            runs(r)
        );
    }
    let share = if best > 0.0 {
        100.0 * pipeline_median / best
    } else {
        0.0
    };
    let _ = writeln!(
        out,
        "\nPipeline / raw limit ({}): **{share:.0} %** (budget ≥ 70 %).",
        best_method.name()
    );
    let per = |b: u64| b as f64 / storage.records.max(1) as f64;
    let _ = writeln!(
        out,
        "\nStorage, bytes per record (the database's growth over the pipeline's runs, after a checkpoint): **{:.1}** in the database, beside {:.1} as plain text and {:.1} as `zstd -3` of each job's text.",
        per(storage.database),
        per(storage.text.raw),
        per(storage.text.zstd)
    );
    let sealed = (storage.sealed_records > 0).then(|| {
        let n = storage.sealed_records as f64;
        (
            storage.sealed as f64 / n,
            storage.segments as f64 / n,
            storage.indexes as f64 / n,
            n / storage.seal_time.as_secs_f64().max(1e-9),
        )
    });
    if let Some((per_record, segments, indexes, rate)) = sealed {
        let _ = writeln!(
            out,
            "\nSealed through the pipeline, one job at a time: **{per_record:.1}** bytes per record (what the data grew by, free space of the deleted rows not counted: SQLite's pages in use, PostgreSQL's segment relations), {segments:.2} of them the segments' blobs and {indexes:.2} their text indexes ({:.0} % of the blobs); sealing ran at {} records/s.",
            indexes / segments * 100.0,
            format_count(rate as u64)
        );
    }
    let figures = json!({
        "bytes_per_record": {
            "database": per(storage.database),
            "sealed": sealed.map(|s| s.0),
            "sealed_segments": sealed.map(|s| s.1),
            "raw_text": per(storage.text.raw),
            "zstd_3": per(storage.text.zstd),
        },
        "sealing_records_per_s": sealed.map(|s| s.2),
        "store": store.describe(),
        "records_per_run": per_job * jobs,
        "jobs": jobs,
        "pipeline_records_per_s": piped,
        "raw": methods.iter().zip(&raw).map(|(m, r)| json!({
            "method": m.name(),
            "records_per_s": r,
            "median": median(r),
        })).collect::<Vec<_>>(),
        "pipeline_median": pipeline_median,
        "share_of_raw": share / 100.0,
        "budget_share": 0.7,
    });
    let mut bars = vec![Bar {
        label: "joblog pipeline".into(),
        value: pipeline_median,
        reference: false,
    }];
    bars.extend(methods.iter().zip(&raw).map(|(m, r)| Bar {
        label: format!("raw: {}", m.name()),
        value: median(r).unwrap_or(f64::NAN),
        reference: true,
    }));
    let chart = Chart::Bars {
        title: format!(
            "ingest: records per second into {}",
            if super::is_postgres(&url) {
                "PostgreSQL"
            } else {
                "SQLite"
            }
        ),
        unit: "records per second, median of the runs (grey: the raw limit, plain client code)"
            .into(),
        bars,
    };
    Ok(Report::new(out, figures).chart("", chart))
}

/// The storage figure: what the pipeline's runs added to the database,
/// beside the same records as text (a line each) and as `zstd -3` of
/// each job's text.
#[derive(Default)]
struct Storage {
    records: u64,
    database: u64,
    text: TextSize,
    /// With `--seal`: the records sealed, how long it took, and what the
    /// data grew by over the runs once sealed.
    sealed_records: u64,
    seal_time: Duration,
    sealed: u64,
    /// The sealed segments' blobs alone, all runs.
    segments: u64,
    /// Their text indexes, all runs.
    indexes: u64,
}

impl Storage {
    fn text(&mut self, work: &[(JobId, Vec<Vec<Record>>)]) -> anyhow::Result<()> {
        for (_, chunks) in work {
            let mut text = String::new();
            for r in chunks.iter().flatten() {
                text.push_str(&r.message);
                text.push('\n');
            }
            self.text.add_job(&text)?;
        }
        Ok(())
    }
}

async fn new_jobs(pipeline: &Pipeline, n: usize) -> anyhow::Result<Vec<JobId>> {
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let spec = JobSpec {
            command: vec!["true".into()],
            ..JobSpec::default()
        };
        let job = pipeline
            .insert_job(Some("bench-ingest".into()), spec)
            .await?;
        ids.push(job.id);
    }
    Ok(ids)
}

/// The records job `id` "prints": short lines, as most jobs write.
fn records(id: JobId, n: usize) -> Vec<Record> {
    let ts = Timestamp::now().micros();
    (1..=n as u64)
        .map(|seq| Record {
            seq,
            ts: Timestamp(ts + seq as i64),
            stream: Stream::Output,
            message: format!(
                "message {seq} of job {id}: the quick brown fox jumps over the lazy dog"
            ),
            fields: None,
        })
        .collect()
}

/// Hands every job's records to the pipeline from a task per job, as the
/// engine does, and returns the time until the last one is committed.
async fn through_pipeline(
    pipeline: &Pipeline,
    work: Vec<(JobId, Vec<Vec<Record>>)>,
    any_job: JobId,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (id, chunks) in work {
        let pipeline = pipeline.clone();
        tasks.push(tokio::spawn(async move {
            let mut summary = LogSummary::default();
            let share = pipeline.job_share();
            for chunk in chunks {
                for r in &chunk {
                    summary.records += 1;
                    summary.bytes += r.message.len() as u64;
                    summary.streams.add(r.stream, 1);
                }
                pipeline.append(&share, id, chunk, summary).await?;
            }
            Ok::<_, joblog_pipeline::PipelineError>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    // Ops are applied in order: once this one is committed, so is every
    // record handed over before it.
    pipeline.delete_log_chunk(any_job, 0).await?;
    Ok(started.elapsed())
}

/// The jobs' records in transactions of up to `max_batch`, the jobs'
/// hand-overs interleaved as the pipeline sees them.
fn interleave(ids: &[JobId], per_job: usize, max_batch: usize) -> Vec<Batch> {
    let all: Vec<Vec<Record>> = ids.iter().map(|id| records(*id, per_job)).collect();
    let mut batches = Vec::new();
    let mut batch: Batch = Vec::new();
    let mut in_batch = 0;
    for start in (0..per_job).step_by(APPEND_RECORDS) {
        for (id, recs) in ids.iter().zip(&all) {
            let end = (start + APPEND_RECORDS).min(per_job);
            batch.push((*id, recs[start..end].to_vec()));
            in_batch += end - start;
            if in_batch >= max_batch {
                batches.push(std::mem::take(&mut batch));
                in_batch = 0;
            }
        }
    }
    if !batch.is_empty() {
        batches.push(batch);
    }
    batches
}
