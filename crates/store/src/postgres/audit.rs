//! The audit trail in the shared store (its table is in `schema.rs`):
//! a batch's entries inserted at its end with one `unnest` of arrays,
//! under an advisory lock held to the commit so that ids follow commit
//! order across nodes (a reader paging by `after` then misses none).
//! Listings are `crate::audit`'s.

use joblog_core::NewAudit;
use tokio_postgres::{Client, Statement};

use crate::audit::AuditInsert;
use crate::Result;

/// Advisory lock key (arbitrary, fixed): batches that write audit entries
/// commit one at a time, across nodes.
const AUDIT_LOCK: i64 = 0x6a6f_626c_6f67_0002;

/// Taken last in a batch, after every row lock its other ops took, so a
/// batch holding it waits on nothing but its commit (no deadlock).
pub(super) const LOCK_AUDIT: &str = "SELECT pg_advisory_xact_lock($1)";

pub(super) const INSERT_AUDIT: &str =
    "INSERT INTO audit (at, actor, action, job_id, remote, request_id, node, detail) \
     SELECT at, actor, action, job_id, remote, request_id, node, detail \
     FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], \
                 $7::text[], $8::text[]) WITH ORDINALITY \
          AS u(at, actor, action, job_id, remote, request_id, node, detail, n) \
     ORDER BY n";

/// Inserts `entries` in order; `lock` and `insert` are [`LOCK_AUDIT`] and
/// [`INSERT_AUDIT`] as prepared on the writer's connection.
pub(super) async fn append(
    tx: &Client,
    lock: &Statement,
    insert: &Statement,
    entries: &[&NewAudit],
) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    tx.execute(lock, &[&AUDIT_LOCK]).await?;
    let rows: Vec<AuditInsert> = entries.iter().map(|e| AuditInsert::of(e)).collect();
    let at: Vec<i64> = rows.iter().map(|r| r.at).collect();
    let actor: Vec<&str> = rows.iter().map(|r| r.actor.as_ref()).collect();
    let action: Vec<&str> = rows.iter().map(|r| r.action.as_ref()).collect();
    let job_id: Vec<Option<i64>> = rows.iter().map(|r| r.job_id).collect();
    let remote: Vec<Option<&str>> = rows.iter().map(|r| r.remote.as_deref()).collect();
    let request_id: Vec<Option<&str>> = rows.iter().map(|r| r.request_id.as_deref()).collect();
    let node: Vec<&str> = rows.iter().map(|r| r.node.as_ref()).collect();
    let detail: Vec<&str> = rows.iter().map(|r| r.detail.as_str()).collect();
    tx.execute(
        insert,
        &[
            &at,
            &actor,
            &action,
            &job_id,
            &remote,
            &request_id,
            &node,
            &detail,
        ],
    )
    .await?;
    Ok(())
}
