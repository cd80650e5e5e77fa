//! The two designs of the past beside joblog in `bench psu`, run by the
//! bench itself on the same messages (`crate::baseline::designs`),
//! each in a scratch database of its own: a SQLite file in the bench's
//! temporary directory, or on the `--database` PostgreSQL server a database
//! made and dropped by the bench. At each checkpoint each design is filled
//! to as many messages as joblog's database holds, then timed as joblog is:
//! batches of concurrent jobs writing their lines, and whole-log reads.

use std::path::PathBuf;

use crate::baseline::designs::{Design, Designs};
use crate::scratch::ScratchDatabase;
use anyhow::Context;
use futures_util::future::join_all;

use crate::stats::{database_bytes, median, percentile};
use crate::{is_postgres, BenchArgs};

/// Whole-log reads timed per design and checkpoint, at most.
const MAX_READS: usize = 10;

/// One design's figures at a checkpoint, ms.
#[derive(Debug, Clone)]
pub(super) struct DesignRow {
    pub(super) design: Design,
    pub(super) exec_median: Option<f64>,
    pub(super) exec_p90: Option<f64>,
    pub(super) retr_median: Option<f64>,
    pub(super) retr_p90: Option<f64>,
    pub(super) bytes_per_record: Option<f64>,
}

struct One {
    design: Design,
    designs: Designs,
    url: String,
    /// Its size before the first job: what the empty tables take.
    base: u64,
    /// Jobs it holds: ids 1..=jobs.
    jobs: i64,
    scratch: Option<ScratchDatabase>,
}

pub(super) struct Baselines {
    each: Vec<One>,
    dir: Option<PathBuf>,
}

impl Baselines {
    /// A scratch database per design, on the kind of database joblog is
    /// measured on.
    pub(super) async fn open(args: &BenchArgs) -> anyhow::Result<Baselines> {
        let postgres = args.database.as_deref().filter(|u| is_postgres(u));
        let dir = match postgres {
            Some(_) => None,
            None => Some(crate::scratch_dir("psu-designs")?),
        };
        let mut each = Vec::new();
        for design in Design::ALL {
            let (url, scratch) = match (postgres, &dir) {
                (Some(server), _) => {
                    let db = ScratchDatabase::create(server, "joblog_bench_psu_design")
                        .await
                        .context("cannot make a database for the designs of the past")?;
                    (db.url().to_string(), Some(db))
                }
                (None, Some(dir)) => (
                    format!(
                        "sqlite://{}",
                        dir.join(format!("{}.db", design.key())).display()
                    ),
                    None,
                ),
                (None, None) => unreachable!("a directory is made where there is no PostgreSQL"),
            };
            let designs = Designs::create(&url)
                .await
                .with_context(|| format!("cannot set up {}", design.name()))?;
            let base = database_bytes(&url).await?;
            each.push(One {
                design,
                designs,
                url,
                base,
                jobs: 0,
                scratch,
            });
        }
        Ok(Baselines { each, dir })
    }

    /// Each design filled to `messages`, then `--baseline-batches`
    /// batches of jobs timed, and reads of the newest jobs.
    pub(super) async fn measure(
        &mut self,
        args: &BenchArgs,
        messages: u64,
    ) -> anyhow::Result<Vec<DesignRow>> {
        let lines = args.lines;
        let mut rows = Vec::new();
        for one in &mut self.each {
            let want = (messages / u64::from(lines)) as i64;
            if want > one.jobs {
                one.designs
                    .fill(one.design, one.jobs + 1, (want - one.jobs) as u64, lines)
                    .await
                    .with_context(|| format!("filling {}", one.design.name()))?;
                one.jobs = want;
            }
            let mut exec = Vec::new();
            for _ in 0..args.baseline_batches {
                let ids = (one.jobs + 1)..=(one.jobs + i64::from(args.batch_jobs));
                let runs = ids.map(|id| one.designs.run_job(one.design, id, lines));
                for took in join_all(runs).await {
                    exec.push(
                        took.with_context(|| format!("a job of {}", one.design.name()))?
                            .as_secs_f64()
                            * 1000.0,
                    );
                }
                one.jobs += i64::from(args.batch_jobs);
            }
            let mut reads = Vec::new();
            let newest = (one.jobs - (MAX_READS.min(args.retrievals as usize) as i64)).max(0) + 1;
            for id in newest..=one.jobs {
                let (n, took) = one.designs.read_job(one.design, id).await?;
                anyhow::ensure!(
                    n == lines as usize,
                    "{}: job {id} read back {n} lines, not {lines}",
                    one.design.name()
                );
                reads.push(took.as_secs_f64() * 1000.0);
            }
            let bytes = database_bytes(&one.url).await?.saturating_sub(one.base);
            let records = one.jobs as f64 * f64::from(lines);
            rows.push(DesignRow {
                design: one.design,
                exec_median: median(&exec),
                exec_p90: percentile(&exec, 90.0),
                retr_median: median(&reads),
                retr_p90: percentile(&reads, 90.0),
                bytes_per_record: (records > 0.0).then(|| bytes as f64 / records),
            });
        }
        Ok(rows)
    }

    /// Drops the scratch databases and removes the files.
    pub(super) async fn close(self) {
        for one in self.each {
            drop(one.designs);
            if let Some(db) = one.scratch {
                let name = db.name().to_string();
                if let Err(e) = db.drop_database().await {
                    eprintln!("bench: could not drop database {name}: {e}");
                }
            }
        }
        if let Some(dir) = self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
