//! A log's outline, folded from its rows in seq order. Both stores read the
//! rows with one statement of their own and fold them here, so that they
//! outline a log alike.
//!
//! Only `error`, `warning`, `information` and `progress` rows are read, and
//! of them only `information` and `progress` rows carry their message and
//! fields: a job that writes a million lines on stderr costs the outline a
//! million small rows, not its text.

use joblog_core::{group_title, LogGroup, LogOutline, Stream};
use serde_json::{Map, Value};

use crate::rows::{stream_mask, RecordRow};
use crate::{Result, StoreError};

/// The streams an outline reads, as a mask for the stores' statements.
pub(crate) fn read_mask() -> i64 {
    stream_mask(&Some(vec![
        Stream::Error,
        Stream::Warning,
        Stream::Information,
        Stream::Progress,
    ]))
}

/// The streams whose rows carry their message and fields, as a mask.
pub(crate) fn text_mask() -> i64 {
    stream_mask(&Some(vec![Stream::Information, Stream::Progress]))
}

/// A row of an outline's statement: `message` and `fields` only for the
/// streams of [`text_mask`].
pub(crate) struct OutlineRow {
    pub seq: i64,
    pub ts: i64,
    pub stream: i64,
    pub message: Option<String>,
    pub fields: Option<String>,
}

/// Folds rows, in seq order, into an outline of at most `max_groups`
/// groups.
pub(crate) struct Outliner {
    outline: LogOutline,
    /// The last group listed is still open.
    open: bool,
    max_groups: usize,
}

impl Outliner {
    pub(crate) fn new(max_groups: usize) -> Outliner {
        Outliner {
            outline: LogOutline::default(),
            open: false,
            max_groups,
        }
    }

    pub(crate) fn push(&mut self, row: OutlineRow) -> Result<()> {
        let seq = u64::try_from(row.seq)
            .map_err(|_| StoreError::Corrupt(format!("a record has seq {}", row.seq)))?;
        let stream = Stream::from_code(row.stream).ok_or_else(|| {
            StoreError::Corrupt(format!("record {seq} has stream {}", row.stream))
        })?;
        let o = &mut self.outline;
        let open = if self.open { o.groups.last_mut() } else { None };
        match stream {
            Stream::Error => {
                o.first_error_seq.get_or_insert(seq);
                if let Some(g) = open {
                    g.errors += 1;
                }
            }
            Stream::Warning => {
                o.first_warning_seq.get_or_insert(seq);
                if let Some(g) = open {
                    g.warnings += 1;
                }
            }
            Stream::Information => match group_mark(seq, row.fields.as_deref())? {
                Some(Mark::Start) => {
                    if let Some(g) = open {
                        g.end_seq = Some(seq - 1);
                    }
                    self.open = o.groups.len() < self.max_groups;
                    if self.open {
                        o.groups.push(LogGroup {
                            seq,
                            end_seq: None,
                            title: group_title(row.message.unwrap_or_default()),
                            errors: 0,
                            warnings: 0,
                        });
                    } else {
                        o.groups_truncated = true;
                    }
                }
                Some(Mark::End) => {
                    if let Some(g) = open {
                        g.end_seq = Some(seq);
                    }
                    self.open = false;
                }
                None => {}
            },
            Stream::Progress => {
                let record = RecordRow {
                    seq: row.seq,
                    ts: row.ts,
                    stream: row.stream,
                    message: row.message.unwrap_or_default(),
                    fields: row.fields,
                }
                .into_record()?;
                o.progress = Some(record);
            }
            Stream::Output | Stream::Verbose | Stream::Debug => {}
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> LogOutline {
        self.outline
    }
}

enum Mark {
    Start,
    End,
}

/// What an `information` record's `group` field makes of it.
fn group_mark(seq: u64, fields: Option<&str>) -> Result<Option<Mark>> {
    let Some(fields) = fields else {
        return Ok(None);
    };
    let fields: Map<String, Value> = serde_json::from_str(fields)
        .map_err(|e| StoreError::Corrupt(format!("record {seq} fields: {e}")))?;
    Ok(match fields.get("group").and_then(Value::as_str) {
        Some("start") => Some(Mark::Start),
        Some("end") => Some(Mark::End),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(seq: i64, stream: Stream, message: &str, fields: Option<&str>) -> OutlineRow {
        OutlineRow {
            seq,
            ts: seq * 10,
            stream: i64::from(stream.code()),
            message: Some(message.into()),
            fields: fields.map(str::to_string),
        }
    }

    fn fold(rows: Vec<OutlineRow>, max_groups: usize) -> LogOutline {
        let mut o = Outliner::new(max_groups);
        for r in rows {
            o.push(r).unwrap();
        }
        o.finish()
    }

    const START: Option<&str> = Some(r#"{"group":"start"}"#);
    const END: Option<&str> = Some(r#"{"group":"end"}"#);

    #[test]
    fn groups_end_at_their_end_or_at_the_next_start_and_count_what_they_hold() {
        use Stream::*;
        let o = fold(
            vec![
                row(2, Warning, "w", None),
                row(3, Information, "A", START),
                row(5, Error, "e", None),
                row(6, Information, "B", START),
                row(7, Warning, "w", None),
                row(8, Error, "e", None),
                row(9, Information, "", END),
                row(10, Information, "", END),
                row(11, Error, "outside", None),
                row(12, Information, "plain notice", Some(r#"{"group":3}"#)),
                row(13, Progress, "half", Some(r#"{"percent":50}"#)),
                row(14, Information, "C", START),
                row(15, Progress, "done", None),
            ],
            10,
        );
        let g = |seq, end_seq, title: &str, errors, warnings| LogGroup {
            seq,
            end_seq,
            title: title.into(),
            errors,
            warnings,
        };
        assert_eq!(
            o.groups,
            [
                g(3, Some(5), "A", 1, 0),
                g(6, Some(9), "B", 1, 1),
                g(14, None, "C", 0, 0)
            ]
        );
        assert_eq!((o.first_error_seq, o.first_warning_seq), (Some(5), Some(2)));
        assert!(!o.groups_truncated);
        let progress = o.progress.unwrap();
        assert_eq!((progress.seq, progress.message.as_str()), (15, "done"));
    }

    #[test]
    fn past_the_bound_groups_are_not_listed_and_the_last_listed_ends() {
        let rows = (1..=5)
            .map(|i| row(i * 2, Stream::Information, &format!("g{i}"), START))
            .chain([row(11, Stream::Error, "e", None)])
            .collect();
        let o = fold(rows, 3);
        let spans: Vec<_> = o.groups.iter().map(|g| (g.seq, g.end_seq)).collect();
        assert_eq!(spans, [(2, Some(3)), (4, Some(5)), (6, Some(7))]);
        assert!(o.groups_truncated);
        assert_eq!(o.groups[2].errors, 0, "errors past the bound are nobody's");
        assert_eq!(o.first_error_seq, Some(11));
    }

    #[test]
    fn a_corrupt_row_is_an_error_not_a_guess() {
        let mut o = Outliner::new(10);
        assert!(o.push(row(1, Stream::Information, "x", Some("{"))).is_err());
        let mut bad = row(2, Stream::Error, "x", None);
        bad.stream = 9;
        assert!(o.push(bad).is_err());
    }
}
