//! Turns what the commands produced into text: a one-shot [`Answer`] on
//! stdout, a log through [`Printer`]. Nothing here talks to the server.

mod job;
mod log;
mod node;
mod notify;
mod pretty;
mod schedule;
mod service;
mod times;
mod token;

pub use times::{choose as choose_times, Times};

use std::io::{self, Write};

pub(crate) use job::full_time;
pub(crate) use joblog_core::escape_display;
pub(super) use log::{Layout, Printer};
pub(super) use pretty::Pretty;

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
        Answer::Sealed {
            before,
            after,
            enabled,
        } => {
            writeln!(
                out,
                "sealed the logs of {} jobs; {after} finished jobs not sealed",
                before.saturating_sub(*after)
            )?;
            if !enabled {
                writeln!(
                    out,
                    "(log.seal is off on that server: jobs that finish from now on stay unsealed)"
                )?;
            }
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
            let expires = t.expires_at.as_deref().map_or_else(
                || "never expires".to_string(),
                |e| format!("expires {}", job::full_time(e)),
            );
            eprintln!(
                "joblog: token {:?} ({}, {expires}) is shown only now; keep it secret",
                escape_display(&t.name, false),
                escape_display(&t.role, false)
            );
        }
        Answer::Tokens(tokens) => out.write_all(token::tokens_table(tokens).as_bytes())?,
        Answer::Revoked(name) => writeln!(out, "revoked token {}", escape_display(name, false))?,
        Answer::Users(users) => out.write_all(token::users_table(users).as_bytes())?,
        Answer::User(u) => out.write_all(token::users_table(std::slice::from_ref(u)).as_bytes())?,
        Answer::UserRemoved(name) => writeln!(out, "removed user {}", escape_display(name, false))?,
        Answer::Nodes(list) => out.write_all(node::nodes_table(list).as_bytes())?,
        Answer::Node(n) => out.write_all(node::node_line(n).as_bytes())?,
        Answer::Scheduler(s) => out.write_all(node::scheduler_line(s).as_bytes())?,
        Answer::Schedules(list) => out.write_all(schedule::schedules_table(list).as_bytes())?,
        Answer::Schedule(s) => out.write_all(schedule::show_text(s).as_bytes())?,
        Answer::ScheduleDeleted(id) => writeln!(out, "deleted schedule {id}")?,
        Answer::Rules(list) => out.write_all(notify::rules_table(list).as_bytes())?,
        Answer::Rule { rule, deliveries } => {
            out.write_all(notify::show_text(rule, deliveries.as_deref()).as_bytes())?
        }
        Answer::RuleDeleted(id) => writeln!(out, "deleted notification rule {id}")?,
        Answer::RuleTested { id, sent } => out.write_all(notify::tested(*id, sent).as_bytes())?,
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
