//! How a job listing ([`JobQuery`]) becomes SQL, the same for both stores,
//! so that a page is index searches merged in id order, never a scan of the
//! table nor a sort of everything that matches:
//!
//! 1. A creation window (`since`) is first turned into the ids it spans,
//!    by one range of `jobs_created` (its entries only, as many as jobs
//!    created in the window, never the rows); every walk below stays
//!    inside those ids. The window is still checked row by row, so ids
//!    need not follow creation times (several nodes' clocks) for the
//!    answer to be exact.
//! 2. A name pattern with a literal prefix (`backup*`) is first turned into
//!    the names it matches, by one seek of the name index per distinct
//!    name under the prefix, at most [`MAX_NAME_ARMS`] of them.
//! 3. The page walks, newest first, one index range per exact name, or per
//!    state, or the node's, or per folder (a listing limited to folders),
//!    or else the primary key; the database merges the walks by id and
//!    stops at the limit. Every other filter is checked on the rows walked.
//!
//! A pattern that starts with a wildcard, or whose prefix covers more
//! names than that, is checked on the rows walked like the other filters.

use std::borrow::Cow;

use joblog_core::{Job, JobQuery, JobState, NameFilter};

use crate::db::{Conn, Decode};
pub(crate) use crate::db::{Dialect, Param, Sql};
use crate::rows::JOB_COLUMNS;

mod names;

pub(crate) use names::NameScan;
use names::{like_pattern, sqlite_glob};

/// Most names a pattern's prefix may cover for the page to walk one index
/// range per name.
pub(crate) const MAX_NAME_ARMS: usize = 32;

/// The page of jobs `q` asks for, on either store: the window's ids
/// first, then the names a pattern matches, then the page (see above).
pub(crate) async fn list<C: Conn>(c: &mut C, q: &JobQuery) -> crate::Result<Vec<Job>> {
    select(c, q, JOB_COLUMNS).await
}

/// The page of `q` as [`list`] reads it, of some columns only (a search
/// needs a job's id and name, not its spec).
pub(crate) async fn select<C: Conn, T: Decode>(
    c: &mut C,
    q: &JobQuery,
    columns: &str,
) -> crate::Result<Vec<T>> {
    let d = C::DIALECT;
    let span = match window_sql(d, q) {
        None => None,
        Some(sql) => match c.query_sql(&sql).await?.first() {
            Some(&(Some(first), Some(last))) => Some(IdSpan { first, last }),
            // No job was created in the window.
            _ => return Ok(Vec::new()),
        },
    };
    let names = match NameScan::new(q) {
        None => None,
        Some(mut scan) => {
            while let Some(sql) = scan.next_sql(d) {
                let rows: Vec<(Option<String>,)> = c.query_sql(&sql).await?;
                scan.found(rows.into_iter().next().and_then(|(name,)| name));
            }
            scan.names()
        }
    };
    match page_sql(d, q, names.as_deref(), span, columns) {
        Some(sql) => c.query_sql(&sql).await,
        None => Ok(Vec::new()),
    }
}

/// The lowest and highest id of the jobs created in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdSpan {
    pub first: i64,
    pub last: i64,
}

/// The statement answering one row `(min(id), max(id))` (both NULL when no
/// job was created in the window), or `None` without `since`: a window
/// open to the past would be found by reading most of the index.
pub(crate) fn window_sql(d: Dialect, q: &JobQuery) -> Option<Sql> {
    let since = q.created_since?;
    let until = q.created_until.map_or(i64::MAX, |t| t.micros());
    Some(Sql {
        text: Cow::Borrowed(match d {
            Dialect::Sqlite => {
                "SELECT min(id), max(id) FROM jobs WHERE created_at >= ?1 AND created_at < ?2"
            }
            Dialect::Postgres => {
                "SELECT min(id), max(id) FROM jobs WHERE created_at >= $1 AND created_at < $2"
            }
        }),
        params: vec![Param::Int(since.micros()), Param::Int(until)],
    })
}

/// What one walk of the page follows.
#[derive(Debug, Clone, Copy)]
enum Walk<'a> {
    Name(&'a str),
    State(JobState),
    Node(&'a str),
    Schedule(i64),
    Folder(&'a str),
    Id,
}

/// The page of `q`, of `columns`: `names` are the names its pattern
/// matched (from [`NameScan`]), `span` the ids its window covers (from
/// [`window_sql`]). `None` when nothing can match (a pattern that matched
/// no name).
pub(crate) fn page_sql(
    d: Dialect,
    q: &JobQuery,
    names: Option<&[String]>,
    span: Option<IdSpan>,
    columns: &str,
) -> Option<Sql> {
    let mut sql = Sql {
        text: Cow::Borrowed(""),
        params: Vec::new(),
    };
    // Every state is no filter at all.
    let states: &[JobState] = if q.states.len() >= JobState::ALL.len() {
        &[]
    } else {
        &q.states
    };
    let mut walks: Vec<Walk> = Vec::new();
    let mut glob_checked = None;
    // A schedule's runs are one range of `jobs_schedule`: the names are
    // then checked on its rows.
    let mut names_checked: Option<Vec<&str>> = None;
    match (&q.name, names) {
        (Some(NameFilter::Exact(name)), _) => walks.push(Walk::Name(name)),
        (Some(NameFilter::Glob(_)), Some(names)) => {
            if names.is_empty() {
                return None;
            }
            walks.extend(names.iter().map(|n| Walk::Name(n)));
        }
        (Some(NameFilter::Glob(glob)), None) => glob_checked = Some(glob),
        (None, _) => {}
    }
    if let Some(schedule) = q.schedule_id {
        let names: Vec<&str> = walks
            .drain(..)
            .filter_map(|w| match w {
                Walk::Name(n) => Some(n),
                _ => None,
            })
            .collect();
        if !names.is_empty() {
            names_checked = Some(names);
        }
        walks.push(Walk::Schedule(schedule));
    }
    let folders = q.folders.as_deref();
    if folders.is_some_and(|f| f.is_empty()) {
        return None;
    }
    if walks.is_empty() {
        match (states, &q.node, folders) {
            ([_, ..], _, _) => walks.extend(states.iter().map(|&s| Walk::State(s))),
            ([], Some(node), _) => walks.push(Walk::Node(node)),
            ([], None, Some(folders)) => walks.extend(folders.iter().map(|f| Walk::Folder(f))),
            ([], None, None) => walks.push(Walk::Id),
        }
    }
    let by_state = matches!(walks[0], Walk::State(_));
    let by_node = matches!(walks[0], Walk::Node(_));
    let by_folder = matches!(walks[0], Walk::Folder(_));

    // What every walk checks besides its key, bound once.
    let before = sql.bind(d, Param::Int(q.before_id.unwrap_or(i64::MAX)));
    let limit = sql.bind(d, Param::Int(i64::from(q.limit)));
    let mut checks = format!("id < {before}");
    if let Some(span) = span {
        let first = sql.bind(d, Param::Int(span.first));
        let last = sql.bind(d, Param::Int(span.last));
        checks.push_str(&format!(" AND id >= {first} AND id <= {last}"));
    }
    if !by_state && !states.is_empty() {
        // State names are joblog's own words, never user text.
        let list: Vec<String> = states.iter().map(|s| format!("'{}'", s.name())).collect();
        checks.push_str(&format!(" AND state IN ({})", list.join(", ")));
    }
    if let Some(glob) = glob_checked {
        let pattern = match d {
            Dialect::Sqlite => sql.bind(d, Param::Text(sqlite_glob(glob))),
            Dialect::Postgres => sql.bind(d, Param::Text(like_pattern(glob))),
        };
        checks.push_str(&match d {
            Dialect::Sqlite => format!(" AND name GLOB {pattern}"),
            Dialect::Postgres => format!(" AND name LIKE {pattern} ESCAPE '\\'"),
        });
    }
    if let Some(names) = names_checked {
        let list: Vec<String> = names
            .iter()
            .map(|n| sql.bind(d, Param::Text((*n).to_owned())))
            .collect();
        checks.push_str(&format!(" AND name IN ({})", list.join(", ")));
    }
    if let (false, Some(node)) = (by_node, &q.node) {
        let node = sql.bind(d, Param::Text(node.clone()));
        checks.push_str(&format!(" AND node = {node}"));
    }
    if let (false, Some(folders)) = (by_folder, folders) {
        let list: Vec<String> = folders
            .iter()
            .map(|f| sql.bind(d, Param::Text(f.clone())))
            .collect();
        checks.push_str(&format!(" AND folder IN ({})", list.join(", ")));
    }
    if let Some(since) = q.created_since {
        let since = sql.bind(d, Param::Int(since.micros()));
        checks.push_str(&format!(" AND created_at >= {since}"));
    }
    if let Some(until) = q.created_until {
        let until = sql.bind(d, Param::Int(until.micros()));
        checks.push_str(&format!(" AND created_at < {until}"));
    }
    let arms: Vec<String> = walks
        .iter()
        .map(|walk| {
            // SQLite is told the index: with several filters its planner
            // may otherwise prefer one that needs a sort.
            let (index, key) = match *walk {
                Walk::Name(name) => ("INDEXED BY jobs_name", {
                    let p = sql.bind(d, Param::Text(name.to_string()));
                    format!("name = {p} AND ")
                }),
                Walk::State(state) => (
                    "INDEXED BY jobs_state",
                    format!("state = '{}' AND ", state.name()),
                ),
                Walk::Node(node) => ("INDEXED BY jobs_node", {
                    let p = sql.bind(d, Param::Text(node.to_string()));
                    format!("node = {p} AND ")
                }),
                Walk::Schedule(id) => ("INDEXED BY jobs_schedule", {
                    let p = sql.bind(d, Param::Int(id));
                    format!("schedule_id = {p} AND ")
                }),
                Walk::Folder(folder) => ("INDEXED BY jobs_folder", {
                    let p = sql.bind(d, Param::Text(folder.to_string()));
                    format!("folder = {p} AND ")
                }),
                Walk::Id => ("NOT INDEXED", String::new()),
            };
            let index = match d {
                Dialect::Sqlite => format!(" {index}"),
                Dialect::Postgres => String::new(),
            };
            format!("SELECT {columns} FROM jobs{index} WHERE {key}{checks}")
        })
        .collect();
    let order = format!("ORDER BY id DESC LIMIT {limit}");
    let text = match (d, arms.as_slice()) {
        (_, [one]) => format!("{one} {order}"),
        // SQLite merges the walks of a compound SELECT by its ORDER BY.
        (Dialect::Sqlite, _) => format!("{} {order}", arms.join(" UNION ALL ")),
        // PostgreSQL merges them (Merge Append) only when each is ordered.
        (Dialect::Postgres, _) => {
            let arms: Vec<String> = arms.iter().map(|a| format!("({a} {order})")).collect();
            format!("{} {order}", arms.join(" UNION ALL "))
        }
    };
    sql.text = Cow::Owned(text);
    Some(sql)
}

#[cfg(test)]
pub(crate) mod tests;
