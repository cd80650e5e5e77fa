//! `joblog bench faults`: power cuts under the SQLite store, by the
//! thousand (docs/durability.md). For each `sync` mode: a database with a
//! WAL most of the way to its checkpoint is copied, the real pipeline and
//! writer run a load on it through `vfs` (the VFS that cuts the power),
//! the power goes at a write, truncate or sync chosen at random, the
//! files are left as a disk may leave them, and `check` reopens the store
//! and holds it to what was acknowledged (`load`'s ledger); `report` adds
//! the cuts up.
//!
//! Promised, and failing the command when broken: with `sync = full`
//! nothing acknowledged is lost; in both modes the database is never
//! corrupt, each log is one run of seqs with no record twice, what
//! survives is a prefix of the commits, nothing acknowledged before the
//! WAL's last sync is lost, and no acknowledged claim is made again.

mod check;
mod load;
mod report;
mod vfs;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context;
use joblog_core::LogSummary;
use joblog_store::{StoreOptions, SyncMode};

use super::output::Report;
use super::BenchArgs;
use load::{Ledger, Unplugged};
use report::{report, Mode};

/// One run of the power cut at a time in a process: the VFS is global.
static RUNNING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The WAL's size the runs start from, in pages: SQLite checkpoints at
/// 1000 (its default, joblog's), so most runs cross a checkpoint.
const PREFILL_WAL_PAGES: u64 = 700;

pub async fn run(args: BenchArgs) -> anyhow::Result<Report> {
    let date = super::now_rfc3339();
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    use std::sync::atomic::Ordering;
    let cut = vfs::install()?;
    if RUNNING.swap(true, Ordering::SeqCst) {
        anyhow::bail!(
            "another `bench faults` is running in this process (the power cut is one per process)"
        );
    }
    let dir = work_dir();
    let outcome = match &dir {
        Ok(dir) => measure(&args, dir, cut, seed, &date).await,
        Err(e) => Err(anyhow::anyhow!("{e:#}")),
    };
    if let Ok(dir) = dir {
        let _ = std::fs::remove_dir_all(&dir);
    }
    RUNNING.store(false, Ordering::SeqCst);
    outcome
}

/// Where the runs' files go: memory (`/dev/shm`) where there is one,
/// since each run copies a few megabytes and a real sync is never made.
fn work_dir() -> anyhow::Result<PathBuf> {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let dir = base.join(format!(
        "joblog-bench-faults-{}-{stamp}",
        std::process::id()
    ));
    std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

async fn measure(
    args: &BenchArgs,
    dir: &Path,
    cut: &'static vfs::PowerCut,
    seed: u64,
    date: &str,
) -> anyhow::Result<Report> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut modes = Vec::new();
    for (name, sync) in [("full", SyncMode::Full), ("normal", SyncMode::Normal)] {
        if args.sync.as_deref().is_some_and(|only| only != name) {
            continue;
        }
        let started = Instant::now();
        let template = dir.join(format!("template-{name}.db"));
        let template_ledger = prefill(&template, sync).await?;
        let mut mode = Mode {
            sync: name,
            cuts: args.cuts,
            ..Mode::default()
        };
        // A run the power does not cut tells how many events a run has.
        let whole = powered_run(dir, &template, sync, cut, None).await?;
        mode.events_per_run = whole.events;
        mode.commits_per_run = whole.ledger.commits.len() as u64;
        mode.wal_syncs_per_run = whole.wal_syncs;
        let l = &whole.ledger;
        mode.work_per_run = (
            l.commits.iter().map(|c| c.started.len() as u64).sum(),
            l.sealed,
            l.deleted.len() as u64,
        );
        let progress = joblog_client::progress::Progress::new(args.cuts, "cuts");
        for _ in 0..args.cuts {
            let at = rng.u64(1..=mode.events_per_run.max(1));
            let run = powered_run(dir, &template, sync, cut, Some(at)).await?;
            let crash = cut.crash(|n| rng.u64(0..n))?;
            let db = dir.join("joblog.db");
            let _ = std::fs::remove_file(dir.join("joblog.db-shm"));
            let mut ledger = run.ledger;
            // The template's commits first: acknowledged before any run.
            ledger
                .commits
                .splice(0..0, template_ledger.commits.iter().cloned());
            let verdict = check::check(&db, sync, &ledger, run.last_wal_sync).await?;
            if let Some(why) = &verdict.corrupt {
                if mode.corrupt_examples.len() < 3 {
                    mode.corrupt_examples.push(why.clone());
                }
            }
            mode.kept += crash.kept;
            mode.lost += crash.lost;
            mode.torn += crash.torn;
            mode.lagged += ledger.lagged;
            mode.cut_sealing += u64::from(ledger.cut_during.contains(&"sealing"));
            mode.cut_retention += u64::from(ledger.cut_during.contains(&"retention"));
            mode.verdicts.push(verdict);
            progress.inc();
        }
        mode.seconds = started.elapsed().as_secs_f64();
        eprintln!(
            "bench: faults: sync = {name}: {} cuts in {:.0} s",
            mode.cuts, mode.seconds
        );
        modes.push(mode);
    }
    Ok(report(&modes, seed, date))
}

/// What a run left to check.
struct Run {
    ledger: Ledger,
    events: u64,
    last_wal_sync: u64,
    wal_syncs: u64,
}

/// The template's files copied to `dir/joblog.db`, the load run on them
/// through the power-cut VFS until it is done or the power goes (at
/// event `at`; after the load if it has not), and everything closed.
async fn powered_run(
    dir: &Path,
    template: &Path,
    sync: SyncMode,
    cut: &'static vfs::PowerCut,
    at: Option<u64>,
) -> anyhow::Result<Run> {
    let db = dir.join("joblog.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(with_suffix(&db, suffix));
    }
    std::fs::copy(template, &db)?;
    std::fs::copy(with_suffix(template, "-wal"), with_suffix(&db, "-wal"))?;
    cut.arm(at);
    let options = StoreOptions {
        sync,
        node: load::NODE.into(),
        vfs: Some(vfs::NAME.into()),
        ..StoreOptions::default()
    };
    let opened = joblog_store::open(&format!("sqlite://{}", db.display()), &options)
        .and_then(|store| Ok((store.open_writer()?, store)));
    let (inner, store) = match opened {
        Ok(o) => o,
        // The power went while the store was opening: nothing ran.
        Err(_) if cut.is_dead() => {
            return Ok(Run {
                ledger: Ledger::default(),
                events: cut.events(),
                last_wal_sync: cut.last_wal_sync(),
                wal_syncs: cut.wal_syncs(),
            })
        }
        Err(e) => return Err(e.into()),
    };
    let (pipeline, thread) = load::start(Box::new(Unplugged { inner, cut }));
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let follower = load::follow(&pipeline, ledger.clone(), cut);
    load::run(store.clone(), &pipeline, &ledger).await;
    let events = cut.events();
    cut.cut();
    load::stop(pipeline, thread).await?;
    drop(store);
    follower.await?;
    let ledger = Arc::try_unwrap(ledger)
        .map_err(|_| anyhow::anyhow!("the ledger is still shared"))?
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    Ok(Run {
        ledger,
        events,
        last_wal_sync: cut.last_wal_sync(),
        wal_syncs: cut.wal_syncs(),
    })
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The database each run starts from: one finished job whose log fills
/// the WAL to about [`PREFILL_WAL_PAGES`], copied (database and WAL) while
/// the store is open, so that the WAL is not checkpointed away at the
/// close. Returns the commits it holds, as acknowledged before any run.
async fn prefill(template: &Path, sync: SyncMode) -> anyhow::Result<Ledger> {
    let work = template.with_extension("work.db");
    let url = format!("sqlite://{}", work.display());
    let options = StoreOptions {
        sync,
        node: load::NODE.into(),
        ..StoreOptions::default()
    };
    let store = joblog_store::open(&url, &options)?;
    let (pipeline, thread) = load::start(store.open_writer()?);
    let id = pipeline
        .insert_job(Some("prefill".into()), load::true_job())
        .await?
        .id;
    let share = pipeline.job_share();
    let mut summary = LogSummary::default();
    let wal = with_suffix(&work, "-wal");
    while std::fs::metadata(&wal).map_or(0, |m| m.len()) < PREFILL_WAL_PAGES * 4096 {
        let records = load::records(id, summary.records + 1, 50, &mut summary);
        pipeline.append(&share, id, records, summary).await?;
        // Committed once this is: ops are applied in order.
        pipeline.delete_log_chunk(0, 0).await?;
    }
    pipeline.finish(id, load::succeeded(summary)).await?;
    std::fs::copy(&work, template)?;
    std::fs::copy(&wal, with_suffix(template, "-wal"))?;
    load::stop(pipeline, thread).await?;
    drop(store);
    let ledger = Ledger {
        commits: vec![load::Commit {
            at_event: 0,
            appended: vec![(id, summary.records)],
            finished: vec![id],
            started: Vec::new(),
        }],
        inserted: vec![id],
        ..Ledger::default()
    };
    Ok(ledger)
}
