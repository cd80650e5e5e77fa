//! Turns what the commands produced into text: a one-shot [`Answer`] on
//! stdout, a log through [`Printer`]. Nothing here talks to the server.

mod job;
mod log;
mod node;
mod service;
mod token;

use std::io::{self, Write};

pub(crate) use joblog_core::escape_display;
pub(super) use log::{Layout, Printer};

use super::commands::Answer;

/// Prints a command's answer on stdout.
pub(super) fn print(answer: &Answer) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    write_answer(&mut out, answer)?;
    out.flush()?;
    Ok(())
}

fn write_answer(out: &mut impl Write, answer: &Answer) -> anyhow::Result<()> {
    match answer {
        Answer::Raw(raw) => write_raw_json(out, raw)?,
        Answer::Json(v) => {
            serde_json::to_writer(&mut *out, v)?;
            writeln!(out)?;
        }
        Answer::Submitted(id) => writeln!(out, "{id}")?,
        Answer::Jobs(jobs) => out.write_all(job::jobs_table(jobs).as_bytes())?,
        Answer::Job(j) => out.write_all(job::show_text(j).as_bytes())?,
        Answer::JobResult(raw) => {
            let text = String::from_utf8_lossy(raw);
            out.write_all(pretty_json(&text).as_bytes())?;
            out.write_all(b"\n")?;
        }
        Answer::Cancelled(j) => {
            if j.is_finished() {
                writeln!(out, "job {}: {}", j.id, j.state)?;
            } else {
                writeln!(out, "job {}: cancel requested ({})", j.id, j.state)?;
            }
        }
        Answer::Groomed(r) if r.dry_run => {
            if !r.jobs.is_empty() {
                out.write_all(job::jobs_table(&r.jobs).as_bytes())?;
            }
            let more = r.jobs_deleted.saturating_sub(r.jobs.len() as u64);
            if more > 0 {
                writeln!(out, "… and {more} more")?;
            }
            writeln!(
                out,
                "dry run: would delete {} jobs and {} records",
                r.jobs_deleted, r.records_deleted
            )?
        }
        Answer::Groomed(r) => writeln!(
            out,
            "deleted {} jobs and {} records",
            r.jobs_deleted, r.records_deleted
        )?,
        Answer::TokenCreated(t) => {
            // The token alone on stdout (`> token-file` keeps just it);
            // what it is, on stderr.
            writeln!(out, "{}", t.token.as_deref().unwrap_or_default())?;
            let expires = t
                .expires_at
                .as_deref()
                .map_or_else(|| "never expires".to_string(), |e| format!("expires {e}"));
            eprintln!(
                "joblog: token {:?} ({}, {expires}) is shown only now; keep it secret",
                escape_display(&t.name, false),
                escape_display(&t.role, false)
            );
        }
        Answer::Tokens(tokens) => out.write_all(token::tokens_table(tokens).as_bytes())?,
        Answer::Revoked(name) => writeln!(out, "revoked token {}", escape_display(name, false))?,
        Answer::Nodes(list) => out.write_all(node::nodes_table(list).as_bytes())?,
        Answer::BackedUp { path, bytes } => {
            out.write_all(service::backed_up(path, *bytes).as_bytes())?
        }
        Answer::Health(h) => out.write_all(service::health(h).as_bytes())?,
    }
    Ok(())
}

fn write_raw_json(out: &mut impl Write, raw: &[u8]) -> io::Result<()> {
    let trimmed = raw.trim_ascii_end();
    out.write_all(trimmed)?;
    out.write_all(b"\n")
}

/// Indents JSON text without parsing it into a map, so key order and number
/// spelling stay exactly as the job wrote them.
fn pretty_json(src: &str) -> String {
    let mut out = String::with_capacity(src.len() * 2);
    let mut depth: usize = 0;
    let mut in_str = false;
    let mut escaped = false;
    let mut chars = src.trim().chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    while let Some(c) = chars.next() {
        if in_str {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                // Skip whitespace to see whether the container is empty.
                while chars.peek().is_some_and(|n| n.is_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('}') | Some(']')) {
                    if let Some(close) = chars.next() {
                        out.push(close);
                    }
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_json_keeps_order() {
        assert_eq!(
            pretty_json(r#"{"z":1,"a":[1,2],"e":{},"s":"a,b:{\"c\"}"}"#),
            "{\n  \"z\": 1,\n  \"a\": [\n    1,\n    2\n  ],\n  \"e\": {},\n  \"s\": \"a,b:{\\\"c\\\"}\"\n}"
        );
        assert_eq!(pretty_json("42"), "42");
        assert_eq!(pretty_json("[ ]"), "[]");
        // Broken input is shown, not a panic.
        let _ = pretty_json("{{{]]]\"");
    }
}
