//! The reads of jobs, results, tokens and nodes that requests and the
//! engine make, written once for both stores (the log's are
//! `crate::log_reads`, the schedules' `crate::schedules::reads`). Each is
//! one index search.

use joblog_core::{Job, JobId, NodeInfo, TokenInfo};

use crate::db::{query_one, query_opt, sql, Conn, Statement};
use crate::rows::{job_columns, token_columns};
use crate::{GroomPolicy, Result};

pub(crate) const SELECT_JOB: Statement = sql!(concat!(
    "SELECT ",
    job_columns!(),
    " FROM jobs WHERE id = $1"
));
pub(crate) const READ_RESULT: Statement = sql!("SELECT body FROM results WHERE job_id = $1");
/// Queued jobs counted up to `$1`: at most that many index entries.
const COUNT_QUEUED: Statement =
    sql!("SELECT count(*) FROM (SELECT 1 FROM jobs WHERE state = 'queued' LIMIT $1) q");
/// Finished jobs past `$1` of their name (or command) and finished before
/// `$2`. Two texts: each database reads a spec's command its own way.
const GROOM_CANDIDATES: Statement = Statement::new(
    "SELECT id FROM (
        SELECT id, finished_at,
               ROW_NUMBER() OVER (
                   PARTITION BY COALESCE('n:' || name, 'c:' || json_extract(spec, '$.command'))
                   ORDER BY id DESC) AS rn
        FROM jobs WHERE state NOT IN ('queued', 'running'))
     WHERE rn > ?1 AND finished_at < ?2 ORDER BY id",
    "SELECT id FROM (
        SELECT id, finished_at,
               ROW_NUMBER() OVER (
                   PARTITION BY COALESCE('n:' || name, 'c:' || (spec::jsonb -> 'command')::text)
                   ORDER BY id DESC) AS rn
        FROM jobs WHERE state NOT IN ('queued', 'running')) ranked
    WHERE rn > $1 AND finished_at < $2 ORDER BY id",
);
pub(crate) const TOKEN_BY_HASH: Statement = sql!(concat!(
    "SELECT ",
    token_columns!(),
    " FROM tokens WHERE hash = $1"
));
const LIST_TOKENS: Statement = sql!(concat!(
    "SELECT ",
    token_columns!(),
    " FROM tokens ORDER BY name"
));
/// Nodes with their running jobs counted. Two texts: PostgreSQL keeps a
/// node's times as `timestamptz` (its clock, across nodes), SQLite as
/// micros.
const LIST_NODES: Statement = Statement::new(
    "SELECT name, version, started_at, heartbeat_at, stopped_at, \
     (SELECT count(*) FROM jobs WHERE state = 'running' AND node = nodes.name), \
     secret_names, labels, drain_at, presumed_lapsed FROM nodes ORDER BY name",
    "SELECT name, version, \
     (extract(epoch FROM started_at) * 1000000)::bigint, \
     (extract(epoch FROM heartbeat_at) * 1000000)::bigint, \
     (extract(epoch FROM stopped_at) * 1000000)::bigint, \
     (SELECT count(*) FROM jobs WHERE state = 'running' AND node = nodes.name), \
     secret_names, labels, drain_at, presumed_lapsed FROM nodes ORDER BY name",
);
const PING: Statement = sql!("SELECT 1");

pub(crate) async fn get_job<C: Conn>(c: &mut C, id: JobId) -> Result<Option<Job>> {
    query_opt(c, &SELECT_JOB, &[id.into()]).await
}

pub(crate) async fn read_result<C: Conn>(c: &mut C, id: JobId) -> Result<Option<Vec<u8>>> {
    Ok(query_opt::<C, (Vec<u8>,)>(c, &READ_RESULT, &[id.into()])
        .await?
        .map(|(body,)| body))
}

pub(crate) async fn count_queued<C: Conn>(c: &mut C, up_to: u64) -> Result<u64> {
    let up_to = i64::try_from(up_to).unwrap_or(i64::MAX);
    Ok(query_one::<C, i64>(c, &COUNT_QUEUED, &[up_to.into()]).await? as u64)
}

pub(crate) async fn groom_candidates<C: Conn>(
    c: &mut C,
    policy: GroomPolicy,
) -> Result<Vec<JobId>> {
    let before = policy.finished_before.unwrap_or(i64::MAX);
    let keep = i64::from(policy.keep_per_name.unwrap_or(0));
    let rows: Vec<(JobId,)> = c
        .query(&GROOM_CANDIDATES, &[keep.into(), before.into()])
        .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

pub(crate) async fn token_by_hash<C: Conn>(c: &mut C, hash: [u8; 32]) -> Result<Option<TokenInfo>> {
    query_opt(c, &TOKEN_BY_HASH, &[hash.to_vec().into()]).await
}

pub(crate) async fn list_tokens<C: Conn>(c: &mut C) -> Result<Vec<TokenInfo>> {
    c.query(&LIST_TOKENS, &[]).await
}

pub(crate) async fn list_nodes<C: Conn>(c: &mut C) -> Result<Vec<NodeInfo>> {
    c.query(&LIST_NODES, &[]).await
}

pub(crate) async fn ping<C: Conn>(c: &mut C) -> Result<()> {
    query_one::<C, i64>(c, &PING, &[]).await.map(drop)
}

/// The newest job's id: where a feed limited to folders starts counting.
const LATEST_JOB: Statement = sql!("SELECT max(id) FROM jobs");

pub(crate) async fn latest_job_id<C: Conn>(c: &mut C) -> Result<Option<JobId>> {
    query_one::<C, Option<JobId>>(c, &LATEST_JOB, &[]).await
}

/// The folder of each of `ids` that exists (`None`: in no folder): one
/// primary-key search per id.
pub(crate) async fn job_folders<C: Conn>(
    c: &mut C,
    ids: &[JobId],
) -> Result<Vec<(JobId, Option<String>)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let d = C::DIALECT;
    let mut sql = crate::db::Sql {
        text: std::borrow::Cow::Borrowed(""),
        params: Vec::new(),
    };
    let list: Vec<String> = ids
        .iter()
        .map(|&id| sql.bind(d, crate::db::Param::Int(id)))
        .collect();
    sql.text = format!(
        "SELECT id, folder FROM jobs WHERE id IN ({})",
        list.join(", ")
    )
    .into();
    c.query_sql(&sql).await
}

/// The ids of jobs in `folders` above `after`, at most `up_to`: one
/// range of `jobs_folder` per folder.
pub(crate) async fn newer_in_folders<C: Conn>(
    c: &mut C,
    folders: &[String],
    after: JobId,
    up_to: u32,
) -> Result<Vec<JobId>> {
    if folders.is_empty() {
        return Ok(Vec::new());
    }
    let d = C::DIALECT;
    let mut sql = crate::db::Sql {
        text: std::borrow::Cow::Borrowed(""),
        params: Vec::new(),
    };
    let after = sql.bind(d, crate::db::Param::Int(after));
    let limit = sql.bind(d, crate::db::Param::Int(i64::from(up_to)));
    let list: Vec<String> = folders
        .iter()
        .map(|f| sql.bind(d, crate::db::Param::Text(f.clone())))
        .collect();
    sql.text = format!(
        "SELECT id FROM jobs WHERE folder IN ({}) AND id > {after} LIMIT {limit}",
        list.join(", ")
    )
    .into();
    let rows: Vec<(JobId,)> = c.query_sql(&sql).await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}
