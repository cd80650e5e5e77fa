//! Sealed logs on SQLite: the segments table (`crate::sealed`). The
//! reads and the writer's seal of a slice are shared
//! (`crate::log_reads`, `crate::writes`).

pub(super) const MIGRATION: &str = r#"
-- Sealed logs: a finished job's records in compressed segments (one row
-- per segment, its seqs first_seq..last_seq; streams is a mask of the
-- streams it holds), replacing their rows a slice at a time. A job's
-- segments hold seqs 1..S and its rows the seqs after S.
CREATE TABLE segments (
    job_id    INTEGER NOT NULL,
    last_seq  INTEGER NOT NULL,
    first_seq INTEGER NOT NULL,
    streams   INTEGER NOT NULL,
    data      BLOB NOT NULL,
    PRIMARY KEY (job_id, last_seq)
);
-- When the job's whole log was sealed; finished jobs not sealed yet are
-- found by the partial index.
ALTER TABLE jobs ADD COLUMN sealed_at INTEGER;
CREATE INDEX jobs_unsealed ON jobs(id) WHERE sealed_at IS NULL AND finished_at IS NOT NULL;
"#;

/// Each segment's text index (`joblog_core::search::build_index`), NULL
/// for segments sealed before it existed or too small for one: a search
/// reads those.
pub(super) const INDEX_MIGRATION: &str = "ALTER TABLE segments ADD COLUMN grams BLOB;";
