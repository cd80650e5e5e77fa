//! After a cut: the store reopened as a server would open it, and held to
//! what the pipeline acknowledged before the power went ([`Verdict`]).

use std::collections::HashMap;
use std::path::Path;

use joblog_core::{JobId, JobState, Labels, Timestamp};
use joblog_store::{page_is_full, Store, StoreOptions, SyncMode};

use super::load::{message, Ledger, NODE};

/// What one cut did to the store.
#[derive(Debug, Default, Clone)]
pub struct Verdict {
    /// Why the database is damaged: it does not open, `integrity_check`
    /// fails, a log cannot be read or reads other text than was written.
    pub corrupt: Option<String>,
    /// Acknowledged things not there: records, job ends, claims, queued
    /// jobs, or a deleted job back.
    pub lost_acknowledged: u64,
    /// Acknowledged commits lost, from the first lost one to the last
    /// commit (what a reader would call "the last N commits").
    pub lost_commits: u64,
    /// Of those, the ones acknowledged before the WAL's last sync (or
    /// before the run): on disk whatever `sync` says, so never lost.
    pub lost_before_sync: u64,
    /// Commits there after one that is not: the survivors are not a
    /// prefix of what was committed.
    pub out_of_order: u64,
    /// Jobs whose log has a hole or starts late (deleted by retention:
    /// whose remaining log is not one run of seqs ending at its last).
    pub gaps: u64,
    /// Records read twice (a row and a sealed segment, say).
    pub duplicates: u64,
    /// Jobs whose claim was acknowledged and that a node claims again
    /// after the restart.
    pub duplicate_claims: u64,
}

/// A job as the reopened store has it.
struct Found {
    state: JobState,
    /// Seqs of its log, in the order read.
    seqs: Vec<u64>,
}

/// Reopens the store at `path` and checks it against `ledger`;
/// `last_wal_sync` is the cut's event of the WAL's last sync.
pub async fn check(
    path: &Path,
    sync: SyncMode,
    ledger: &Ledger,
    last_wal_sync: u64,
) -> anyhow::Result<Verdict> {
    let mut v = Verdict::default();
    let integrity = {
        let path = path.to_path_buf();
        tokio::task::spawn_blocking(move || integrity_check(&path)).await?
    };
    if let Err(why) = integrity {
        v.corrupt = Some(why);
        return Ok(v);
    }
    let options = StoreOptions {
        sync,
        node: NODE.into(),
        ..StoreOptions::default()
    };
    let url = format!("sqlite://{}", path.display());
    let store = match joblog_store::open(&url, &options) {
        Ok(s) => s,
        Err(e) => {
            v.corrupt = Some(format!("the store does not open: {e}"));
            return Ok(v);
        }
    };
    let found = match read_jobs(store.as_ref(), &mut v).await {
        Ok(f) => f,
        Err(e) => {
            v.corrupt = Some(format!("a read failed: {e}"));
            return Ok(v);
        }
    };
    judge_logs(&found, ledger, &mut v);
    judge_commits(&found, ledger, last_wal_sync, &mut v);
    for id in &ledger.inserted {
        if !found.contains_key(id) && !ledger.retention.contains(id) {
            v.lost_acknowledged += 1;
        }
    }
    for id in &ledger.deleted {
        if found.contains_key(id) {
            v.lost_acknowledged += 1;
        }
    }
    v.duplicate_claims = claim_again(store, ledger).await?;
    Ok(v)
}

fn integrity_check(path: &Path) -> Result<(), String> {
    let c = rusqlite::Connection::open(path).map_err(|e| format!("does not open: {e}"))?;
    let mut st = c
        .prepare("PRAGMA integrity_check")
        .map_err(|e| format!("integrity_check: {e}"))?;
    let rows: Vec<String> = st
        .query_map([], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .map_err(|e| format!("integrity_check: {e}"))?;
    match rows.as_slice() {
        [ok] if ok == "ok" => Ok(()),
        other => Err(format!("integrity_check: {}", other.join("; "))),
    }
}

/// Every job the store has, with its log's seqs; a record whose text is
/// not what was written makes the store corrupt.
async fn read_jobs(store: &dyn Store, v: &mut Verdict) -> anyhow::Result<HashMap<JobId, Found>> {
    let mut found = HashMap::new();
    let last = store.latest_job_id().await?.unwrap_or(0);
    for id in 1..=last {
        let Some(job) = store.get_job(id).await? else {
            continue;
        };
        let mut seqs = Vec::new();
        let mut after = 0;
        loop {
            let page = store.read_log(id, after, 1000, None).await?;
            for r in &page {
                if r.message != message(id, r.seq) {
                    v.corrupt.get_or_insert_with(|| {
                        format!("job {id} record {} reads {:?}", r.seq, r.message)
                    });
                }
                seqs.push(r.seq);
            }
            match page.last() {
                Some(r) if page_is_full(&page, 1000) => after = r.seq,
                _ => break,
            }
        }
        found.insert(
            id,
            Found {
                state: job.state,
                seqs,
            },
        );
    }
    Ok(found)
}

/// Each log one run of seqs: from 1, or (retention deleting it, lowest
/// seqs first) from wherever it had got to.
fn judge_logs(found: &HashMap<JobId, Found>, ledger: &Ledger, v: &mut Verdict) {
    for (id, job) in found {
        let mut gap = false;
        for w in job.seqs.windows(2) {
            if w[1] == w[0] {
                v.duplicates += 1;
            } else if w[1] != w[0] + 1 {
                gap = true;
            }
        }
        if job.seqs.first().is_some_and(|&s| s != 1) && !ledger.retention.contains(id) {
            gap = true;
        }
        v.gaps += u64::from(gap);
    }
}

/// Each acknowledged commit there or not, and what that adds up to.
fn judge_commits(
    found: &HashMap<JobId, Found>,
    ledger: &Ledger,
    last_wal_sync: u64,
    v: &mut Verdict,
) {
    // What a commit made, there (Some(true)), not (Some(false)), or not
    // for the checks to tell (None: everything in it was since deleted).
    let there = |c: &super::load::Commit, lost: &mut u64| -> Option<bool> {
        let mut seen = None;
        let mut note = |ok: bool, lost: &mut u64| {
            if !ok {
                *lost += 1;
            }
            seen = Some(seen.unwrap_or(true) && ok);
        };
        for (id, seq) in &c.appended {
            if ledger.retention.contains(id) {
                continue;
            }
            let last = found
                .get(id)
                .and_then(|j| j.seqs.last())
                .copied()
                .unwrap_or(0);
            note(last >= *seq, lost);
        }
        for id in &c.finished {
            match found.get(id) {
                Some(j) => note(j.state.is_finished(), lost),
                None if ledger.retention.contains(id) => {}
                None => note(false, lost),
            }
        }
        for id in &c.started {
            match found.get(id) {
                Some(j) => note(j.state != JobState::Queued, lost),
                None if ledger.retention.contains(id) => {}
                None => note(false, lost),
            }
        }
        seen
    };
    let mut first_lost = None;
    for (i, c) in ledger.commits.iter().enumerate() {
        match (there(c, &mut v.lost_acknowledged), first_lost) {
            (Some(false), None) => first_lost = Some(i),
            (Some(true), Some(_)) => v.out_of_order += 1,
            _ => {}
        }
        if first_lost.is_some() && c.at_event <= last_wal_sync {
            v.lost_before_sync += 1;
        }
    }
    if let Some(i) = first_lost {
        v.lost_commits = (ledger.commits.len() - i) as u64;
    }
}

/// A node starting on the reopened store: its jobs left running are
/// interrupted, then it claims what is queued. Returns how many of those
/// had had a claim acknowledged before the cut.
async fn claim_again(store: std::sync::Arc<dyn Store>, ledger: &Ledger) -> anyhow::Result<u64> {
    let started: std::collections::HashSet<JobId> = ledger
        .commits
        .iter()
        .flat_map(|c| c.started.iter().copied())
        .collect();
    let (pipeline, writer) = super::load::start(store.open_writer()?);
    let claimed = async {
        pipeline.interrupt(Some(NODE.into()), false).await?;
        let mut again = 0;
        while let Some(job) = pipeline
            .claim_next(NODE.into(), Labels::default(), Timestamp::now())
            .await?
        {
            again += u64::from(started.contains(&job.id));
        }
        Ok::<_, anyhow::Error>(again)
    }
    .await;
    super::load::stop(pipeline, writer).await?;
    claimed
}

#[cfg(test)]
mod tests {
    use super::super::load::Commit;
    use super::*;

    fn job(state: JobState, last: u64) -> Found {
        Found {
            state,
            seqs: (1..=last).collect(),
        }
    }

    fn commit(
        appended: &[(JobId, u64)],
        finished: &[JobId],
        started: &[JobId],
        at_event: u64,
    ) -> Commit {
        Commit {
            at_event,
            appended: appended.to_vec(),
            finished: finished.to_vec(),
            started: started.to_vec(),
        }
    }

    #[test]
    fn the_commits_lost_are_counted_from_the_first_one_and_a_survivor_after_it_is_out_of_order() {
        let found = HashMap::from([
            (1, job(JobState::Running, 10)),
            (2, job(JobState::Queued, 0)),
        ]);
        let ledger = Ledger {
            commits: vec![
                commit(&[], &[], &[1], 5),
                commit(&[(1, 10)], &[], &[], 9),
                // Lost: its seqs are not there, its claim is not.
                commit(&[(1, 20)], &[], &[2], 20),
                // Lost: the job is not finished.
                commit(&[], &[1], &[], 30),
            ],
            ..Ledger::default()
        };
        let mut v = Verdict::default();
        judge_commits(&found, &ledger, 12, &mut v);
        assert_eq!(
            (
                v.lost_commits,
                v.lost_acknowledged,
                v.out_of_order,
                v.lost_before_sync
            ),
            (2, 3, 0, 0)
        );
        // The WAL synced after the third: losing it breaks a promise.
        let mut v = Verdict::default();
        judge_commits(&found, &ledger, 25, &mut v);
        assert_eq!(v.lost_before_sync, 1);
        // A commit there after a lost one: not a prefix.
        let mut ledger = ledger;
        ledger.commits.push(commit(&[(1, 10)], &[], &[], 40));
        let mut v = Verdict::default();
        judge_commits(&found, &ledger, 12, &mut v);
        assert_eq!((v.lost_commits, v.out_of_order), (3, 1));
    }

    #[test]
    fn a_log_with_a_hole_a_late_start_or_a_record_twice_is_found() {
        let mut found = HashMap::from([
            (
                1,
                Found {
                    state: JobState::Succeeded,
                    seqs: vec![1, 2, 4],
                },
            ),
            (
                2,
                Found {
                    state: JobState::Succeeded,
                    seqs: vec![3, 4],
                },
            ),
            (
                3,
                Found {
                    state: JobState::Succeeded,
                    seqs: vec![1, 2, 2, 3],
                },
            ),
            (
                4,
                Found {
                    state: JobState::Succeeded,
                    seqs: vec![5, 6],
                },
            ),
        ]);
        let ledger = Ledger {
            retention: [4].into(),
            ..Ledger::default()
        };
        let mut v = Verdict::default();
        judge_logs(&found, &ledger, &mut v);
        // Job 4's log was being deleted from its start: not a gap.
        assert_eq!((v.gaps, v.duplicates), (2, 1));
        found.clear();
        let mut v = Verdict::default();
        judge_logs(&found, &ledger, &mut v);
        assert_eq!((v.gaps, v.duplicates), (0, 0));
    }
}
