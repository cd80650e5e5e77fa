//! Schedules in the embedded store: their table. Their reads and writes
//! are shared (`crate::schedules`); queueing a job is `jobs.rs`'. One
//! writer, so a due schedule's fires and its moved `next_fire` commit
//! together and no other writer can see them half done.

/// Migration 8: schedules, and what jobs carry for them and for
/// concurrency limits.
pub(super) const MIGRATION: &str = r#"
CREATE TABLE schedules (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT NOT NULL UNIQUE,
    cron          TEXT NOT NULL,
    timezone      TEXT NOT NULL,
    spec          TEXT NOT NULL,
    overlap       TEXT NOT NULL,
    missed        TEXT NOT NULL,
    attempts      INTEGER NOT NULL,
    backoff_s     REAL NOT NULL,
    enabled       INTEGER NOT NULL,
    -- NULL while disabled: the scheduler walks this index only.
    next_fire     INTEGER,
    skipped_fires INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
CREATE INDEX schedules_next_fire ON schedules(next_fire) WHERE next_fire IS NOT NULL;
ALTER TABLE jobs ADD COLUMN schedule_id INTEGER;
ALTER TABLE jobs ADD COLUMN fire_time INTEGER;
ALTER TABLE jobs ADD COLUMN attempt INTEGER;
ALTER TABLE jobs ADD COLUMN concurrency_key TEXT;
ALTER TABLE jobs ADD COLUMN max_concurrent INTEGER;
ALTER TABLE jobs ADD COLUMN run_after INTEGER;
-- Each fire of a schedule is one job per attempt, whatever happens.
CREATE UNIQUE INDEX jobs_fire ON jobs(schedule_id, fire_time, attempt);
CREATE INDEX jobs_schedule ON jobs(schedule_id, id);
CREATE INDEX jobs_schedule_active ON jobs(schedule_id) WHERE state IN ('queued', 'running');
CREATE INDEX jobs_running_key ON jobs(concurrency_key) WHERE state = 'running';
CREATE INDEX jobs_run_after ON jobs(run_after) WHERE state = 'queued' AND run_after IS NOT NULL;
"#;

/// Migration 13: triggers. A schedule runs on `cron` or after another
/// schedule's jobs end (`after_id`, on `after_states`), exactly one of
/// the two; a job's end finds the schedules that run after its own by
/// `schedules_after`. SQLite cannot drop a `NOT NULL`: the table is made
/// again, and its AUTOINCREMENT counter carried over, so that a deleted
/// schedule's id (which its jobs still name) is never given again.
pub(super) const TRIGGERS_MIGRATION: &str = r#"
CREATE TABLE schedules_new (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT NOT NULL UNIQUE,
    cron          TEXT,
    timezone      TEXT NOT NULL,
    spec          TEXT NOT NULL,
    overlap       TEXT NOT NULL,
    missed        TEXT NOT NULL,
    attempts      INTEGER NOT NULL,
    backoff_s     REAL NOT NULL,
    enabled       INTEGER NOT NULL,
    next_fire     INTEGER,
    skipped_fires INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    after_id      INTEGER,
    after_states  TEXT,
    CHECK ((cron IS NULL) <> (after_id IS NULL))
);
INSERT INTO schedules_new (id, name, cron, timezone, spec, overlap, missed, attempts,
    backoff_s, enabled, next_fire, skipped_fires, created_at, updated_at)
SELECT id, name, cron, timezone, spec, overlap, missed, attempts,
    backoff_s, enabled, next_fire, skipped_fires, created_at, updated_at FROM schedules;
DELETE FROM sqlite_sequence WHERE name = 'schedules_new';
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'schedules_new', seq FROM sqlite_sequence WHERE name = 'schedules';
DROP TABLE schedules;
ALTER TABLE schedules_new RENAME TO schedules;
CREATE INDEX schedules_next_fire ON schedules(next_fire) WHERE next_fire IS NOT NULL;
CREATE INDEX schedules_after ON schedules(after_id) WHERE after_id IS NOT NULL;
"#;

/// The migration after folders: saved jobs. A schedule may have neither `cron` nor
/// `after_id` (it runs only when run), never both. SQLite cannot change a
/// `CHECK`: the table is made again as migration 13 made it, its
/// AUTOINCREMENT counter carried over.
pub(super) const SAVED_JOBS_MIGRATION: &str = r#"
CREATE TABLE schedules_new (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT NOT NULL UNIQUE,
    cron          TEXT,
    timezone      TEXT NOT NULL,
    spec          TEXT NOT NULL,
    overlap       TEXT NOT NULL,
    missed        TEXT NOT NULL,
    attempts      INTEGER NOT NULL,
    backoff_s     REAL NOT NULL,
    enabled       INTEGER NOT NULL,
    next_fire     INTEGER,
    skipped_fires INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    after_id      INTEGER,
    after_states  TEXT,
    CHECK (cron IS NULL OR after_id IS NULL)
);
INSERT INTO schedules_new SELECT id, name, cron, timezone, spec, overlap, missed, attempts,
    backoff_s, enabled, next_fire, skipped_fires, created_at, updated_at, after_id, after_states
    FROM schedules;
DELETE FROM sqlite_sequence WHERE name = 'schedules_new';
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'schedules_new', seq FROM sqlite_sequence WHERE name = 'schedules';
DROP TABLE schedules;
ALTER TABLE schedules_new RENAME TO schedules;
CREATE INDEX schedules_next_fire ON schedules(next_fire) WHERE next_fire IS NOT NULL;
CREATE INDEX schedules_after ON schedules(after_id) WHERE after_id IS NOT NULL;
"#;
