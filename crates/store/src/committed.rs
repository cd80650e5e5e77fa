//! What one commit made durable ([`Committed`]), as followers of live
//! logs, idle dispatchers and other nodes (in NOTIFY payloads) learn it.

use joblog_core::JobId;

use crate::{Outcome, WriteOp};

/// What one commit made durable, for followers of live logs and idle
/// dispatchers. Produced by the local writer and, with a shared store, by
/// the store's listener for commits of other nodes.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Committed {
    /// Jobs whose log grew, with their last committed seq.
    #[serde(default, rename = "a", skip_serializing_if = "Vec::is_empty")]
    pub appended: Vec<(JobId, u64)>,
    /// Jobs that reached a final state in this commit.
    #[serde(default, rename = "f", skip_serializing_if = "Vec::is_empty")]
    pub finished: Vec<JobId>,
    /// Jobs claimed by a node in this commit (they started running).
    /// Added after the others: a peer that predates it ignores the key,
    /// and an empty list is not sent at all.
    #[serde(default, rename = "s", skip_serializing_if = "Vec::is_empty")]
    pub started: Vec<JobId>,
    /// Jobs queued by this commit.
    #[serde(default, rename = "q", skip_serializing_if = "is_zero")]
    pub queued: u32,
    /// Running jobs whose cancellation was asked on another node.
    #[serde(default, rename = "c", skip_serializing_if = "Vec::is_empty")]
    pub cancel: Vec<JobId>,
    /// Anything may have changed (commits were missed, e.g. while the
    /// listener reconnected): re-read whatever is followed.
    #[serde(default, rename = "r", skip_serializing_if = "std::ops::Not::not")]
    pub reset: bool,
    /// An API token was revoked: whoever holds a stream open on a token
    /// checks it again. Added after the others (a peer that predates it
    /// ignores the key).
    #[serde(default, rename = "t", skip_serializing_if = "std::ops::Not::not")]
    pub tokens_revoked: bool,
    /// A node was asked to drain or to take jobs again, or the scheduler
    /// paused or resumed: dispatchers and schedulers look again. Added
    /// after the others (a peer that predates it ignores the key).
    #[serde(default, rename = "k", skip_serializing_if = "std::ops::Not::not")]
    pub controls: bool,
    /// A session ended (signed out, revoked, its user disabled, deleted
    /// or given a new password): whoever holds a stream open on a session
    /// checks it again. Added after the others (a peer that predates it
    /// ignores the key).
    #[serde(default, rename = "e", skip_serializing_if = "std::ops::Not::not")]
    pub sessions_ended: bool,
    /// A job ended with a log left to seal (one that wrote nothing is
    /// sealed by its end), or a queued job was cancelled: the sealer
    /// looks. Added after the others (a peer that predates it never sets
    /// it; each node seals the jobs it ended, and the sealer's periodic
    /// look finds the rest).
    #[serde(default, rename = "z", skip_serializing_if = "std::ops::Not::not")]
    pub to_seal: bool,
    /// A notification delivery was queued (or may have been: a writer
    /// that cannot tell sets it at every end): senders look at the
    /// outbox. Added after the others (a peer that predates it never sets
    /// it; its own sender looks after each of its ends, and every sender
    /// looks at least every 30 s).
    #[serde(default, rename = "n", skip_serializing_if = "std::ops::Not::not")]
    pub deliveries: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Committed {
    /// Notes what a committed op changed.
    pub fn add(&mut self, op: &WriteOp, outcome: &Outcome) {
        match (op, outcome) {
            (WriteOp::Append { job, records, .. }, _) => {
                if let Some(last) = records.last() {
                    match self.appended.iter_mut().find(|(j, _)| j == job) {
                        Some(slot) => slot.1 = last.seq,
                        None => self.appended.push((*job, last.seq)),
                    }
                }
            }
            (WriteOp::InsertJob { .. }, _) => self.queued += 1,
            (WriteOp::FireDue { .. }, Outcome::Fired(fired)) => {
                self.queued += fired.jobs.len() as u32
            }
            (WriteOp::FireDue { .. }, _) => {}
            // Each node's scheduler reads the schedules when it wakes.
            (WriteOp::SaveSchedule { .. } | WriteOp::DeleteSchedule { .. }, _) => {}
            // Each node's sender reads the outbox when it wakes; rules are
            // read when a job ends.
            (
                WriteOp::SaveRule { .. }
                | WriteOp::DeleteRule { .. }
                | WriteOp::ClaimDeliveries { .. }
                | WriteOp::DeliveryTried { .. },
                _,
            ) => {}
            (WriteOp::Finish { job, summary, .. }, _) => {
                self.finished.push(*job);
                self.to_seal |= summary.records > 0;
            }
            (WriteOp::CancelQueued { job }, Outcome::MaybeJob(Some(_))) => {
                self.finished.push(*job);
                self.to_seal = true;
            }
            (WriteOp::CancelQueued { .. }, _) => {}
            (WriteOp::RequestCancel { job }, _) => self.cancel.push(*job),
            (WriteOp::RevokeToken { .. }, Outcome::Count(n)) => self.tokens_revoked |= *n > 0,
            (WriteOp::Account(op), Outcome::Count(n)) => {
                self.sessions_ended |= op.ended_sessions(*n)
            }
            // Users, sign-ins and a session's use: each request looks its
            // session up.
            (WriteOp::Account(_), _) => {}
            // A job list shows a job start; the job's own followers learn
            // it from its records.
            (WriteOp::ClaimNext { .. }, Outcome::Claimed(Some(job))) => self.started.push(job.id),
            // Jobs of a lapsed or restarted node were ended in bulk.
            (WriteOp::Interrupt { .. } | WriteOp::Heartbeat { .. }, Outcome::Interrupted(jobs)) => {
                self.reset |= !jobs.is_empty()
            }
            (WriteOp::Interrupt { .. } | WriteOp::Heartbeat { .. }, _) => {}
            (WriteOp::SetDrain { .. } | WriteOp::SetPaused { .. }, _) => self.controls = true,
            (WriteOp::RegisterNode { paused, .. }, _) => self.controls |= *paused,
            // Nobody follows nodes: `joblog nodes` reads them when asked.
            (WriteOp::NodeStopped { .. }, _) => {}
            // Nobody follows a claim that found nothing, deletions (only
            // finished jobs are deleted) or new tokens (each request looks
            // its token up).
            // The audit trail is read when asked (`GET /api/v1/audit`).
            // Sealing changes how a log is kept, not what it says.
            (
                WriteOp::SealSlice(_)
                | WriteOp::MarkSealed { .. }
                | WriteOp::ClaimNext { .. }
                | WriteOp::Audit(_)
                | WriteOp::DeleteAudit { .. }
                | WriteOp::DeleteLogChunk { .. }
                | WriteOp::DeleteJob { .. }
                | WriteOp::DropLogPartitions { .. }
                | WriteOp::CreateToken(_)
                | WriteOp::RevokeToken { .. }
                | WriteOp::TouchToken { .. },
                _,
            ) => {}
        }
    }

    /// Whether a follower of `job` should look again.
    pub fn touches(&self, job: JobId) -> bool {
        self.touches_after(job, 0)
    }

    /// Whether a follower of `job` that has read up to seq `after` should
    /// look again: the job ended, or records past `after` came. (A client
    /// waiting only for the end passes a seq beyond any log and is not
    /// woken by every commit of the job.)
    pub fn touches_after(&self, job: JobId, after: u64) -> bool {
        self.reset
            || self.finished.contains(&job)
            || self.appended.iter().any(|(j, s)| *j == job && *s > after)
    }

    pub fn is_empty(&self) -> bool {
        self == &Committed::default()
    }
}

#[cfg(test)]
mod tests {
    use joblog_core::{Job, JobSpec, JobState, LogSummary, Timestamp};

    use super::*;

    #[test]
    fn a_commit_touches_followers_behind_it_or_of_an_ended_job() {
        let c = Committed {
            appended: vec![(7, 120)],
            finished: vec![9],
            ..Committed::default()
        };
        assert!(c.touches(7));
        assert!(c.touches_after(7, 119));
        assert!(!c.touches_after(7, 120), "nothing past what was read");
        assert!(!c.touches_after(8, 0), "another job");
        assert!(c.touches_after(9, u64::MAX), "the job ended");
        let reset = Committed {
            reset: true,
            ..Committed::default()
        };
        assert!(reset.touches_after(1, u64::MAX));
    }

    fn running(id: JobId) -> Job {
        Job {
            id,
            name: None,
            state: JobState::Running,
            exit_code: None,
            command: vec!["true".into()],
            command_truncated: false,
            env_truncated: false,
            run_after: None,
            waiting_for: None,
            node: Some("a".into()),
            created_at: Timestamp(0),
            started_at: Some(Timestamp(1)),
            finished_at: None,
            duration_ms: None,
            log: LogSummary::default(),
            result: None,
            given: joblog_core::Given::default(),
            spec: JobSpec::default(),
        }
    }

    #[test]
    fn a_claim_that_found_a_job_is_a_start() {
        let claim = WriteOp::ClaimNext {
            labels: Default::default(),
            node: "a".into(),
            at: Timestamp(0),
        };
        let mut c = Committed::default();
        c.add(&claim, &Outcome::Claimed(None));
        assert!(c.is_empty(), "nothing was claimed: {c:?}");
        c.add(&claim, &Outcome::Claimed(Some(running(4))));
        c.add(&claim, &Outcome::Claimed(Some(running(5))));
        assert_eq!(c.started, [4, 5]);
        assert!(!c.touches(4), "a tail of job 4 learns it from its records");
    }

    /// The sealer is woken by an end that left a log to seal, not by one
    /// that wrote nothing (its end sealed it); a cancelled queued job is
    /// sealed by the sealer, so it wakes it too.
    #[test]
    fn only_an_end_with_records_or_a_cancelled_queued_job_is_to_seal() {
        let finish = |records: u64| WriteOp::Finish {
            job: 4,
            state: JobState::Succeeded,
            exit_code: Some(0),
            result: None,
            summary: LogSummary {
                records,
                ..LogSummary::default()
            },
            at: Timestamp(2),
        };
        let mut c = Committed::default();
        c.add(&finish(0), &Outcome::MaybeJob(None));
        assert_eq!(c.finished, [4]);
        assert!(!c.to_seal, "a job that wrote nothing: {c:?}");
        c.add(&finish(3), &Outcome::MaybeJob(None));
        assert!(c.to_seal, "a job with 3 records: {c:?}");
        let mut c = Committed::default();
        c.add(&WriteOp::CancelQueued { job: 5 }, &Outcome::MaybeJob(None));
        assert!(c.is_empty(), "nothing was cancelled: {c:?}");
        c.add(
            &WriteOp::CancelQueued { job: 5 },
            &Outcome::MaybeJob(Some(running(5))),
        );
        assert!(c.to_seal && c.finished == [5], "{c:?}");
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, r#"{"f":[5],"z":true}"#);
    }

    /// `Committed` crosses nodes in NOTIFY payloads, so nodes of two
    /// versions read each other: `s` is left out when empty, and a peer
    /// that has no `started` (below: the struct as it was) reads a notice
    /// that has it.
    #[test]
    fn started_crosses_nodes_and_older_peers_still_read_it() {
        #[derive(Debug, PartialEq, serde::Deserialize)]
        struct Before {
            #[serde(default, rename = "a")]
            appended: Vec<(JobId, u64)>,
            #[serde(default, rename = "f")]
            finished: Vec<JobId>,
            #[serde(default, rename = "q")]
            queued: u32,
        }
        let c = Committed {
            started: vec![3, 8],
            finished: vec![2],
            queued: 1,
            ..Committed::default()
        };
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, r#"{"f":[2],"s":[3,8],"q":1}"#);
        assert_eq!(serde_json::from_str::<Committed>(&json).unwrap(), c);
        let old: Before = serde_json::from_str(&json).unwrap();
        assert_eq!(
            old,
            Before {
                appended: vec![],
                finished: vec![2],
                queued: 1
            }
        );
        // And what an older peer sends reads as no start.
        let from_old: Committed = serde_json::from_str(r#"{"q":2}"#).unwrap();
        assert!(from_old.started.is_empty());
        let none = Committed {
            queued: 1,
            ..Committed::default()
        };
        assert_eq!(serde_json::to_string(&none).unwrap(), r#"{"q":1}"#);
    }

    /// A delivery queued crosses nodes as `n`, left out when none was; a
    /// notice of an older peer reads as none.
    #[test]
    fn a_queued_delivery_crosses_nodes_as_n() {
        let c = Committed {
            finished: vec![4],
            deliveries: true,
            ..Committed::default()
        };
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, r#"{"f":[4],"n":true}"#);
        assert_eq!(serde_json::from_str::<Committed>(&json).unwrap(), c);
        let from_old: Committed = serde_json::from_str(r#"{"f":[4]}"#).unwrap();
        assert!(!from_old.deliveries);
    }
}
