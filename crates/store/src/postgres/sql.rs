//! The statements the read pool and the writer run again and again (each
//! connection prepares one once, keyed by its text), and the decoding of
//! the rows they return. The decoders read columns by position: they
//! follow the order of `job_columns!` and of the `SELECT` lists here.

use joblog_core::{Job, Timestamp};
use tokio_postgres::Row;

use crate::db::Decode;
use crate::rows::job_columns;
use crate::Result;

pub(super) fn jobs_from_rows(rows: &[Row]) -> Result<Vec<Job>> {
    rows.iter().map(Job::decode).collect()
}

/// A row of `victim_columns!`: the job, its node, that node's heartbeat.
pub(super) fn victim_from_row(row: &Row) -> Result<(Job, Option<String>, Option<Timestamp>)> {
    Ok((
        Job::decode(row)?,
        row.try_get(15)?,
        row.try_get::<_, Option<i64>>(16)?.map(Timestamp),
    ))
}

// What requests read, on the read pool (and the writer, re-deriving a
// batch). Job listings are built per query by `crate::listing`.

// What the writer runs inside its batch transactions.
/// A job's columns, then the node it depended on and that node's last
/// heartbeat (micros), for the interruption record.
macro_rules! victim_columns {
    () => {
        concat!(
            job_columns!(),
            ", COALESCE(node, pinned_node), \
             (SELECT (extract(epoch FROM heartbeat_at) * 1000000)::bigint FROM nodes \
              WHERE nodes.name = COALESCE(jobs.node, jobs.pinned_node))"
        )
    };
}
/// Running jobs of node `$1`, locked until they are ended.
pub(super) const VICTIMS_OF_NODE: &str = concat!(
    "SELECT ",
    victim_columns!(),
    " FROM jobs WHERE state = 'running' AND node = $1 ORDER BY id FOR UPDATE"
);
/// Running jobs of every node, and queued ones too if `$1`.
pub(super) const VICTIMS_ALL: &str = concat!(
    "SELECT ",
    victim_columns!(),
    " FROM jobs WHERE state IN ('running', 'queued') AND ($1 OR state = 'running') \
     ORDER BY id FOR UPDATE"
);
/// Running jobs of nodes other than `$1` silent for longer than `$2`
/// seconds, or of nodes no longer registered at all; and queued jobs whose
/// secrets died with such a node.
pub(super) const VICTIMS_LAPSED: &str = concat!(
    "SELECT ",
    victim_columns!(),
    " FROM jobs \
     WHERE ((state = 'running' AND node <> $1 AND node NOT IN (
                SELECT name FROM nodes WHERE heartbeat_at >= now() - make_interval(secs => $2)))
         OR (state = 'queued' AND pinned_node <> $1 AND pinned_node NOT IN (
                SELECT name FROM nodes WHERE heartbeat_at >= now() - make_interval(secs => $2)))) \
     ORDER BY id FOR UPDATE"
);
pub(super) const INTERRUPT_IDS: &str =
    "UPDATE jobs SET state = 'interrupted', finished_at = $2 WHERE id = ANY($1)";
pub(super) const HEARTBEAT: &str =
    "INSERT INTO nodes (name, heartbeat_at, started_at) VALUES ($1, now(), now()) \
     ON CONFLICT (name) DO UPDATE SET heartbeat_at = now(), presumed_lapsed = false";
pub(super) const REGISTER_NODE: &str =
    "INSERT INTO nodes (name, heartbeat_at, started_at, version, secret_names, labels) \
     VALUES ($1, now(), now(), $2, $3, $4) \
     ON CONFLICT (name) DO UPDATE SET heartbeat_at = now(), started_at = now(), \
     version = $2, stopped_at = NULL, secret_names = $3, labels = $4, presumed_lapsed = false";
pub(super) const NODE_STOPPED: &str =
    "UPDATE nodes SET stopped_at = now(), heartbeat_at = now() WHERE name = $1";
/// Nodes silent for a week are forgotten (listed until then as lapsed or
/// stopped).
pub(super) const FORGET_LAPSED: &str =
    "DELETE FROM nodes WHERE name <> $1 AND heartbeat_at < now() - interval '7 days'";
macro_rules! mark_batch {
    () => {
        "INSERT INTO nodes (name, heartbeat_at, started_at, last_batch) \
         VALUES ($1, now(), now(), $2) ON CONFLICT (name) DO UPDATE SET last_batch = EXCLUDED.last_batch"
    };
}
pub(super) const MARK_BATCH: &str = mark_batch!();
/// [`MARK_BATCH`] and the NOTIFY of what the batch committed (`$3`,
/// `$4`), in one round trip.
pub(super) const MARK_BATCH_AND_NOTIFY: &str = concat!(
    "WITH marked AS (",
    mark_batch!(),
    ") SELECT pg_notify($3, $4)"
);
pub(super) const SAVE_SUMMARIES: &str =
    "UPDATE jobs SET log_records = u.records, log_bytes = u.bytes, \
     log_truncated = u.truncated, log_streams = u.streams \
     FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::boolean[], $5::text[]) \
        AS u(id, records, bytes, truncated, streams) \
     WHERE jobs.id = u.id";
pub(super) const COPY_LOG: &str =
    "COPY log (job_id, seq, ts, stream, message, fields) FROM STDIN (FORMAT binary)";

#[cfg(test)]
mod tests;
