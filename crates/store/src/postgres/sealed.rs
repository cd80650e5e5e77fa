//! Sealed logs on PostgreSQL: the segments table (partitioned like the
//! log; `crate::sealed`), and what a retried batch checks of a seal. The
//! reads and the writer's seal of a slice are shared (`crate::log_reads`,
//! `crate::writes`); reads run each in one `REPEATABLE READ`
//! transaction whose first statement reads `segments`, so a read always
//! locks `segments` before `log`: the order partition creation and drops
//! keep (`partitions.rs`), or a read and the writer could deadlock.

pub(super) const MIGRATION: &str = r#"
-- Sealed logs: a finished job's records in compressed segments (one row
-- per segment, its seqs first_seq..last_seq; streams is a mask of the
-- streams it holds), replacing their rows a slice at a time. A job's
-- segments hold seqs 1..S and its rows the seqs after S. Partitioned as
-- the log is (segments_p<N> beside log_p<N>), dropped with it.
CREATE TABLE segments (
    job_id    bigint NOT NULL,
    last_seq  bigint NOT NULL,
    first_seq bigint NOT NULL,
    streams   bigint NOT NULL,
    data      bytea NOT NULL,
    PRIMARY KEY (job_id, last_seq)
) PARTITION BY RANGE (job_id);
DO $$
DECLARE
    p bigint;
BEGIN
    FOR p IN SELECT substr(c.relname, 6)::bigint FROM pg_inherits i
             JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'log'::regclass AND c.relname ~ '^log_p[0-9]+$'
    LOOP
        EXECUTE format('CREATE TABLE IF NOT EXISTS segments_p%s PARTITION OF segments '
                       'FOR VALUES FROM (%s) TO (%s)', p, p * 10000, (p + 1) * 10000);
    END LOOP;
END $$;
-- When the job's whole log was sealed; finished jobs not sealed yet are
-- found by the partial index.
ALTER TABLE jobs ADD COLUMN sealed_at bigint;
CREATE INDEX jobs_unsealed ON jobs (id) WHERE sealed_at IS NULL AND finished_at IS NOT NULL;
"#;

/// Each segment's text index (`joblog_core::search::build_index`), NULL
/// for segments sealed before it existed or too small for one: a search
/// reads those. Added to the partitioned table, so to every partition.
pub(super) const INDEX_MIGRATION: &str = "ALTER TABLE segments ADD COLUMN grams bytea;";

/// Whether a committed batch's slice is in: its segment is there.
pub(super) const SEGMENT_EXISTS: &str =
    "SELECT count(*) FROM segments WHERE job_id = $1 AND last_seq = $2";
/// Whether a committed batch's mark is in.
pub(super) const IS_SEALED: &str =
    "SELECT count(*) FROM jobs WHERE id = $1 AND sealed_at IS NOT NULL";
