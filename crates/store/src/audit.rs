//! The audit trail as both stores keep it: the one place its text fields
//! are cut to [`MAX_AUDIT_FIELD`], its rows turned back into entries, and a
//! listing ([`AuditQuery`]) as SQL that walks one index range in id order.
//!
//! A listing walks the index of its most selective filter — a job's
//! entries, else an actor's, else an action's, else the primary key — and
//! checks the other filters on the rows walked. Without `before` it reads
//! forward from `after`; with it, backward from `before` (the page nearest
//! below it), and the page is turned back to ascending order here.

use std::borrow::Cow;

use joblog_core::{AuditEntry, AuditQuery, NewAudit, Timestamp, MAX_AUDIT_FIELD};

use crate::db::{Conn, Decode, Dialect, Param, Row, Sql};
use crate::{Result, StoreError};

/// The columns a listing reads, in [`AuditRow`]'s order. `detail` is JSON
/// text in both stores (PostgreSQL's `jsonb` would refuse a `\u0000`
/// escape that `text` keeps).
pub(crate) const AUDIT_COLUMNS: &str =
    "id, at, actor, action, job_id, remote, request_id, node, detail";

/// A text field as stored: NUL bytes (which PostgreSQL's text cannot hold)
/// become U+FFFD, then the text is cut to at most [`MAX_AUDIT_FIELD`]
/// bytes, at a char boundary. Both stores store what this gives, so they
/// keep the same text.
pub(crate) fn field(text: &str) -> Cow<'_, str> {
    let text = if text.contains('\0') {
        Cow::Owned(text.replace('\0', "\u{FFFD}"))
    } else {
        Cow::Borrowed(text)
    };
    if text.len() <= MAX_AUDIT_FIELD {
        return text;
    }
    let mut end = MAX_AUDIT_FIELD;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    match text {
        Cow::Borrowed(t) => Cow::Borrowed(&t[..end]),
        Cow::Owned(mut t) => {
            t.truncate(end);
            Cow::Owned(t)
        }
    }
}

/// An entry's columns as they are written, in [`AUDIT_COLUMNS`]'s order
/// without the id.
pub(crate) struct AuditInsert<'a> {
    pub at: i64,
    pub actor: Cow<'a, str>,
    pub action: Cow<'a, str>,
    pub job_id: Option<i64>,
    pub remote: Option<Cow<'a, str>>,
    pub request_id: Option<Cow<'a, str>>,
    pub node: Cow<'a, str>,
    pub detail: String,
}

impl<'a> AuditInsert<'a> {
    pub fn of(e: &'a NewAudit) -> AuditInsert<'a> {
        AuditInsert {
            at: e.at.micros(),
            actor: field(&e.actor),
            action: field(&e.action),
            job_id: e.job_id,
            remote: e.remote.as_deref().map(field),
            request_id: e.request_id.as_deref().map(field),
            node: field(&e.node),
            // A map of JSON values always serializes.
            detail: serde_json::Value::Object(e.detail.clone()).to_string(),
        }
    }
}

/// A row of the audit table, as stored.
pub(crate) struct AuditRow {
    pub id: i64,
    pub at: i64,
    pub actor: String,
    pub action: String,
    pub job_id: Option<i64>,
    pub remote: Option<String>,
    pub request_id: Option<String>,
    pub node: String,
    pub detail: String,
}

impl Decode for AuditRow {
    fn decode(r: &impl Row) -> Result<AuditRow> {
        Ok(AuditRow {
            id: r.get(0)?,
            at: r.get(1)?,
            actor: r.get(2)?,
            action: r.get(3)?,
            job_id: r.get(4)?,
            remote: r.get(5)?,
            request_id: r.get(6)?,
            node: r.get(7)?,
            detail: r.get(8)?,
        })
    }
}

/// The audit trail's entries `q` asks for, oldest first, on either store.
/// A page's text depends on its filters, so it is planned for its values
/// (like a job listing's).
pub(crate) async fn list<C: Conn>(c: &mut C, q: &AuditQuery) -> Result<Vec<AuditEntry>> {
    let (sql, backward) = list_sql(C::DIALECT, q);
    in_order(c.query_sql(&sql).await?, backward)
}

impl AuditRow {
    pub fn into_entry(self) -> Result<AuditEntry> {
        let id = self.id;
        let detail = match serde_json::from_str(&self.detail) {
            Ok(serde_json::Value::Object(map)) => map,
            Ok(other) => {
                return Err(StoreError::Corrupt(format!(
                    "audit entry {id} has a detail that is not an object: {other}"
                )))
            }
            Err(e) => return Err(StoreError::Corrupt(format!("audit entry {id} detail: {e}"))),
        };
        Ok(AuditEntry {
            id: u64::try_from(id)
                .map_err(|_| StoreError::Corrupt(format!("audit entry id {id}")))?,
            entry: NewAudit {
                at: Timestamp(self.at),
                actor: self.actor,
                action: self.action,
                job_id: self.job_id,
                remote: self.remote,
                request_id: self.request_id,
                node: self.node,
                detail,
            },
        })
    }
}

/// A listing's statement, and whether it reads backward (its rows come
/// newest first, to be turned with [`in_order`]).
pub(crate) fn list_sql(d: Dialect, q: &AuditQuery) -> (Sql, bool) {
    let mut sql = Sql {
        text: Cow::Borrowed(""),
        params: Vec::new(),
    };
    let id = |n: u64| Param::Int(i64::try_from(n).unwrap_or(i64::MAX));
    let backward = q.before.is_some();
    // The walk: the most selective filter's index (a job has a handful of
    // entries, an actor many, an action more).
    let (index, walked) = match (&q.job_id, &q.actor, &q.action) {
        (Some(job), _, _) => ("audit_job", Some(("job_id", Param::Int(*job)))),
        (None, Some(actor), _) => ("audit_actor", Some(("actor", Param::Text(actor.clone())))),
        (None, None, Some(action)) => (
            "audit_action",
            Some(("action", Param::Text(action.clone()))),
        ),
        (None, None, None) => ("", None),
    };
    let mut conditions = Vec::new();
    if let Some((column, value)) = walked.clone() {
        let p = sql.bind(d, value);
        conditions.push(format!("{column} = {p}"));
    }
    let after = sql.bind(d, id(q.after));
    let before = sql.bind(d, id(q.before.unwrap_or(u64::MAX)));
    conditions.push(format!("id > {after} AND id < {before}"));
    let checked = [
        ("job_id", q.job_id.map(Param::Int)),
        ("actor", q.actor.clone().map(Param::Text)),
        ("action", q.action.clone().map(Param::Text)),
    ];
    for (column, value) in checked {
        let Some(value) = value else { continue };
        if walked.as_ref().is_some_and(|(c, _)| *c == column) {
            continue;
        }
        let p = sql.bind(d, value);
        conditions.push(format!("{column} = {p}"));
    }
    let limit = sql.bind(d, Param::Int(i64::from(q.limit)));
    // SQLite is told the index: with several filters its planner may
    // otherwise prefer one that needs a sort.
    let hint = match (d, index) {
        (Dialect::Sqlite, "") => " NOT INDEXED".to_string(),
        (Dialect::Sqlite, index) => format!(" INDEXED BY {index}"),
        (Dialect::Postgres, _) => String::new(),
    };
    let order = if backward { "DESC" } else { "ASC" };
    sql.text = Cow::Owned(format!(
        "SELECT {AUDIT_COLUMNS} FROM audit{hint} WHERE {} ORDER BY id {order} LIMIT {limit}",
        conditions.join(" AND ")
    ));
    (sql, backward)
}

/// A listing's rows as entries, oldest first.
pub(crate) fn in_order(rows: Vec<AuditRow>, backward: bool) -> Result<Vec<AuditEntry>> {
    let mut entries = rows
        .into_iter()
        .map(AuditRow::into_entry)
        .collect::<Result<Vec<_>>>()?;
    if backward {
        entries.reverse();
    }
    Ok(entries)
}

/// Every shape of statement a listing runs, for the stores' plan tests:
/// each walk, forward and backward, with the other filters checked.
#[cfg(test)]
pub(crate) fn every_statement(d: Dialect) -> Vec<Sql> {
    let mut out = Vec::new();
    for job_id in [None, Some(7)] {
        for actor in [None, Some("alice".to_string())] {
            for action in [None, Some("job.submitted".to_string())] {
                for before in [None, Some(500)] {
                    let q = AuditQuery {
                        after: 3,
                        before,
                        actor: actor.clone(),
                        action: action.clone(),
                        job_id,
                        limit: 100,
                    };
                    out.push(list_sql(d, &q).0);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_field_is_cut_at_a_char_boundary_and_nul_bytes_are_replaced() {
        assert_eq!(field("token.used"), "token.used");
        let exact = "a".repeat(MAX_AUDIT_FIELD);
        assert_eq!(field(&exact), exact);
        let long = "b".repeat(MAX_AUDIT_FIELD + 50);
        assert_eq!(field(&long).len(), MAX_AUDIT_FIELD);
        // 'é' is two bytes: one that would straddle the cut goes whole.
        let accented = format!("{}é", "c".repeat(MAX_AUDIT_FIELD - 1));
        let cut = field(&accented);
        assert_eq!(cut.len(), MAX_AUDIT_FIELD - 1);
        assert!(cut.chars().all(|c| c == 'c'));
        assert_eq!(field("a\0b"), "a\u{FFFD}b");
        let nuls = "\0".repeat(MAX_AUDIT_FIELD);
        let cut = field(&nuls);
        assert!(cut.len() <= MAX_AUDIT_FIELD);
        assert_eq!(cut.chars().count(), MAX_AUDIT_FIELD / 3);
    }

    #[test]
    fn a_listing_walks_the_most_selective_filter_and_checks_the_others() {
        let q = AuditQuery {
            after: 5,
            before: None,
            actor: Some("alice".into()),
            action: Some("job.cancelled".into()),
            job_id: None,
            limit: 20,
        };
        let (sql, backward) = list_sql(Dialect::Sqlite, &q);
        assert!(!backward);
        assert_eq!(
            sql.text,
            "SELECT id, at, actor, action, job_id, remote, request_id, node, detail \
             FROM audit INDEXED BY audit_actor WHERE actor = ?1 AND id > ?2 AND id < ?3 \
             AND action = ?4 ORDER BY id ASC LIMIT ?5"
        );
        assert_eq!(
            sql.params,
            [
                Param::Text("alice".into()),
                Param::Int(5),
                Param::Int(i64::MAX),
                Param::Text("job.cancelled".into()),
                Param::Int(20)
            ]
        );
        let q = AuditQuery {
            before: Some(u64::MAX),
            job_id: Some(9),
            ..q
        };
        let (sql, backward) = list_sql(Dialect::Postgres, &q);
        assert!(backward);
        assert_eq!(
            sql.text,
            "SELECT id, at, actor, action, job_id, remote, request_id, node, detail \
             FROM audit WHERE job_id = $1 AND id > $2 AND id < $3 AND actor = $4 \
             AND action = $5 ORDER BY id DESC LIMIT $6"
        );
        assert_eq!(
            sql.params[2],
            Param::Int(i64::MAX),
            "clamped to the ids stored"
        );
    }
}
