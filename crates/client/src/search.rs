//! `joblog search`: every job's log searched through `GET /api/v1/search`,
//! a page at a time, each line printed as soon as its page comes (a search
//! of years of logs shows its first hits at once). A person reads a job's
//! heading and then its lines; `--json` prints each hit as the API's one
//! JSON object per line. Exits 0 when something was found, 1 when not,
//! and so 2 when it failed (as `grep` does).

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use crate::api::{Api, REQUEST_TIMEOUT};
use crate::args::SearchArgs;
use crate::render::escape_display;

#[derive(Debug, Deserialize, Serialize)]
struct Hit {
    job_id: i64,
    job_name: Option<String>,
    seq: u64,
    ts: String,
    stream: String,
    message: String,
}

#[derive(Debug, Deserialize)]
struct Page {
    hits: Vec<Hit>,
    jobs_matched: Option<u64>,
    next_cursor: Option<String>,
}

/// The query of `a`, without the page's own parameters.
fn query(a: &SearchArgs) -> Vec<(&'static str, String)> {
    let mut q = vec![("q", a.text.clone())];
    if a.regex {
        q.push(("regex", "true".into()));
    }
    q.extend(a.filters.query());
    if let Some(s) = &a.streams {
        let names: Vec<&str> = s.0.iter().map(|st| st.name()).collect();
        q.push(("streams", names.join(",")));
    }
    q
}

/// Prints hits for a person: a heading when the job changes, then each
/// line with its seq, time and stream.
struct Lines<W: Write> {
    out: W,
    json: bool,
    job: Option<i64>,
}

impl<W: Write> Lines<W> {
    fn hit(&mut self, h: &Hit) -> anyhow::Result<()> {
        if self.json {
            serde_json::to_writer(&mut self.out, h)?;
            writeln!(self.out)?;
            return Ok(());
        }
        if self.job != Some(h.job_id) {
            if self.job.is_some() {
                writeln!(self.out)?;
            }
            let name = h.job_name.as_deref().unwrap_or("(no name)");
            writeln!(self.out, "job {} {}", h.job_id, escape_display(name, false))?;
            self.job = Some(h.job_id);
        }
        let ts = crate::render::full_time(&h.ts);
        writeln!(
            self.out,
            "{:>8}  {ts}  {:<11}  {}",
            h.seq,
            h.stream,
            escape_display(&h.message, false)
        )?;
        Ok(())
    }
}

pub(crate) async fn run(api: &Api, a: SearchArgs) -> anyhow::Result<i32> {
    let base = query(&a);
    let mut lines = Lines {
        out: io::BufWriter::new(io::stdout().lock()),
        json: a.json,
        job: None,
    };
    let mut found: u64 = 0;
    let mut jobs: Vec<i64> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut jobs_matched;
    loop {
        let want = (u64::from(a.limit) - found).min(joblog_core::search::MAX_SEARCH_LIMIT.into());
        let mut q = base.clone();
        q.push(("limit", want.to_string()));
        if let Some(c) = &cursor {
            q.push(("cursor", c.clone()));
        }
        let raw = api
            .get_raw(api.url("/api/v1/search", &q)?, REQUEST_TIMEOUT)
            .await?;
        let page: Page = api.decode(&raw)?;
        for h in &page.hits {
            lines.hit(h)?;
            if jobs.last() != Some(&h.job_id) {
                jobs.push(h.job_id);
            }
        }
        if !page.hits.is_empty() {
            lines.out.flush()?;
        }
        found += page.hits.len() as u64;
        jobs_matched = page.jobs_matched;
        cursor = page.next_cursor;
        if cursor.is_none() || found >= u64::from(a.limit) {
            break;
        }
    }
    lines.out.flush()?;
    drop(lines);
    if !a.json {
        let mut err = io::stderr().lock();
        match (&cursor, jobs_matched) {
            (None, Some(n)) => writeln!(err, "{found} lines in {n} jobs")?,
            (None, None) => writeln!(err, "{found} lines in {} jobs", jobs.len())?,
            (Some(_), _) => writeln!(
                err,
                "{found} lines in {} jobs; more may follow (raise --limit)",
                jobs.len()
            )?,
        }
    }
    Ok(if found > 0 { 0 } else { 1 })
}

/// A search that failed exits 2: 1 says that nothing was found. A reader
/// that closed the output early is no failure.
pub(crate) fn failed(e: anyhow::Error) -> anyhow::Result<i32> {
    let closed = e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    });
    if closed {
        return Ok(0);
    }
    eprintln!("joblog: {e:#}");
    Ok(2)
}
