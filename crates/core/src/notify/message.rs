//! What a notification says — the job, its first error, its last problems
//! and output lines, a link to its page — and that document written in
//! each format: the JSON document itself, Slack blocks, a Teams Adaptive
//! Card, and an e-mail's subject, text and HTML. Job output is untrusted:
//! each format escapes it as its receiver needs (HTML entities, Slack's
//! `&<>`, Markdown for Teams), and no record is longer than
//! [`MAX_MESSAGE`] characters in a notification.

use serde::Serialize;

use super::{Format, Rule, RuleId};
use crate::schedule::ScheduleId;
use crate::{escape_html, Job, JobId, JobState, Record, Stream, Timestamp};

/// The last error and warning records a notification carries.
pub const NOTICE_PROBLEMS: usize = 20;
/// The last output lines a notification carries.
pub const NOTICE_TAIL: usize = 10;
/// Longest record text in a notification, in characters (the rest is
/// cut, with `…`).
const MAX_MESSAGE: usize = 1000;
/// The version of the JSON document; fields are only added within one.
const VERSION: u32 = 1;

/// A notification, as the `json` format sends it (docs/notifications.md).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Notice {
    pub version: u32,
    /// `job.finished`, or `test` for a rule's test send.
    pub event: &'static str,
    /// The same on every retry of one notification (`null` on a test).
    pub delivery_id: Option<i64>,
    pub rule: NoticeRule,
    pub job: NoticeJob,
    /// The job's first error record.
    pub first_error: Option<NoticeRecord>,
    /// Its last error and warning records, oldest first.
    pub problems: Vec<NoticeRecord>,
    /// Its last output lines, oldest first.
    pub output_tail: Vec<NoticeRecord>,
    /// The job's page, at its first error (`http.public_url`; `null`
    /// when that is not set).
    pub url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoticeRule {
    pub id: RuleId,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoticeJob {
    pub id: JobId,
    pub name: Option<String>,
    pub schedule_id: Option<ScheduleId>,
    pub node: Option<String>,
    pub state: JobState,
    pub exit_code: Option<i32>,
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
    pub duration_ms: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoticeRecord {
    pub seq: u64,
    pub ts: Timestamp,
    pub stream: Stream,
    pub message: String,
}

impl NoticeRecord {
    pub fn of(r: &Record) -> NoticeRecord {
        let message = if r.message.chars().count() > MAX_MESSAGE {
            let mut cut: String = r.message.chars().take(MAX_MESSAGE).collect();
            cut.push('…');
            cut
        } else {
            r.message.clone()
        };
        NoticeRecord {
            seq: r.seq,
            ts: r.ts,
            stream: r.stream,
            message,
        }
    }
}

/// A body ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

/// An e-mail's parts.
#[derive(Debug, Clone, PartialEq)]
pub struct Mail {
    pub subject: String,
    pub text: String,
    pub html: String,
}

impl Notice {
    /// The notice of `job`'s end by `rule`. `first_error`, `problems` and
    /// `tail` are the job's records as stored (masked), in seq order.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        rule: &Rule,
        job: &Job,
        first_error: Option<&Record>,
        problems: &[Record],
        tail: &[Record],
        public_url: Option<&str>,
        delivery_id: Option<i64>,
    ) -> Notice {
        // An example job (a test send with no job to tell of) has no page.
        let url = public_url.filter(|_| job.id > 0).map(|base| {
            let base = base.trim_end_matches('/');
            match first_error {
                Some(r) => format!("{base}/jobs/{}#seq-{}", job.id, r.seq),
                None => format!("{base}/jobs/{}", job.id),
            }
        });
        let last = |records: &[Record], n: usize| -> Vec<NoticeRecord> {
            records[records.len().saturating_sub(n)..]
                .iter()
                .map(NoticeRecord::of)
                .collect()
        };
        Notice {
            version: VERSION,
            event: if delivery_id.is_some() {
                "job.finished"
            } else {
                "test"
            },
            delivery_id,
            rule: NoticeRule {
                id: rule.id,
                name: rule.name.clone(),
            },
            job: NoticeJob {
                id: job.id,
                name: job.name.clone(),
                schedule_id: job.given.schedule_id,
                node: job.node.clone(),
                state: job.state,
                exit_code: job.exit_code,
                started_at: job.started_at,
                finished_at: job.finished_at,
                duration_ms: job.duration_ms,
            },
            first_error: first_error.map(NoticeRecord::of),
            problems: last(problems, NOTICE_PROBLEMS),
            output_tail: last(tail, NOTICE_TAIL),
            url,
        }
    }

    /// One line saying what happened: `backup-db (job 42) failed with
    /// exit code 3 on node a`.
    pub fn headline(&self) -> String {
        let j = &self.job;
        let mut line = match &j.name {
            Some(name) => format!("{name} (job {})", j.id),
            None => format!("job {}", j.id),
        };
        line.push(' ');
        line.push_str(match j.state {
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Cancelled => "was cancelled",
            JobState::TimedOut => "timed out",
            JobState::Interrupted => "was interrupted",
            JobState::Queued => "is queued",
            JobState::Running => "is running",
        });
        if let (JobState::Failed, Some(code)) = (j.state, j.exit_code) {
            line.push_str(&format!(" with exit code {code}"));
        }
        if let Some(node) = &j.node {
            line.push_str(&format!(" on node {node}"));
        }
        if self.event == "test" {
            line.insert_str(0, "[test] ");
        }
        line
    }

    /// `(label, value)` of the job's facts, in the order every format
    /// shows them.
    fn facts(&self) -> Vec<(&'static str, String)> {
        let j = &self.job;
        let mut facts = vec![
            ("Job", j.id.to_string()),
            ("State", j.state.name().to_owned()),
        ];
        if let Some(name) = &j.name {
            facts.push(("Name", name.clone()));
        }
        if let Some(code) = j.exit_code {
            facts.push(("Exit code", code.to_string()));
        }
        if let Some(id) = j.schedule_id {
            facts.push(("Schedule", id.to_string()));
        }
        if let Some(node) = &j.node {
            facts.push(("Node", node.clone()));
        }
        if let Some(t) = j.started_at {
            facts.push(("Started", t.to_rfc3339()));
        }
        if let Some(t) = j.finished_at {
            facts.push(("Finished", t.to_rfc3339()));
        }
        if let Some(ms) = j.duration_ms {
            facts.push(("Duration", format!("{:.1} s", ms / 1000.0)));
        }
        facts.push(("Rule", self.rule.name.clone()));
        facts
    }

    /// The body of a web hook in `format`.
    pub fn render(&self, format: Format) -> Rendered {
        let value = match format {
            Format::Json => serde_json::to_value(self).unwrap_or_default(),
            Format::Slack => self.slack(),
            Format::Teams => self.teams(),
        };
        Rendered {
            content_type: "application/json",
            body: value.to_string().into_bytes(),
        }
    }

    fn sections(&self) -> Vec<(&'static str, Vec<&NoticeRecord>)> {
        let mut parts = Vec::new();
        if let Some(first) = &self.first_error {
            parts.push(("First error", vec![first]));
        }
        if !self.problems.is_empty() {
            parts.push(("Last errors and warnings", self.problems.iter().collect()));
        }
        if !self.output_tail.is_empty() {
            parts.push(("Last output", self.output_tail.iter().collect()));
        }
        parts
    }

    fn slack(&self) -> serde_json::Value {
        let headline = slack_escape(&self.headline());
        let title = match &self.url {
            Some(url) => format!("*<{}|{headline}>*", slack_escape(url)),
            None => format!("*{headline}*"),
        };
        let mut blocks = vec![serde_json::json!({
            "type": "section", "text": {"type": "mrkdwn", "text": title}
        })];
        let fields: Vec<serde_json::Value> = self
            .facts()
            .into_iter()
            .take(10) // Slack's most fields in a section
            .map(|(label, value)| {
                serde_json::json!({"type": "mrkdwn", "text": format!("*{label}*\n{}", slack_escape(&value))})
            })
            .collect();
        blocks.push(serde_json::json!({"type": "section", "fields": fields}));
        for (label, records) in self.sections() {
            // Slack's longest section text is 3000 characters.
            let lines = lines_of(&records, 2800);
            let text = format!(
                "*{label}*\n```{}```",
                slack_escape(&lines).replace("```", "'''")
            );
            blocks.push(serde_json::json!({
                "type": "section", "text": {"type": "mrkdwn", "text": text}
            }));
        }
        serde_json::json!({"text": self.headline(), "blocks": blocks})
    }

    fn teams(&self) -> serde_json::Value {
        let mut body = vec![
            serde_json::json!({
                "type": "TextBlock", "size": "Medium", "weight": "Bolder", "wrap": true,
                "text": markdown_escape(&self.headline())
            }),
            serde_json::json!({
                "type": "FactSet",
                "facts": self.facts().into_iter().map(|(title, value)| {
                    serde_json::json!({"title": title, "value": markdown_escape(&value)})
                }).collect::<Vec<_>>()
            }),
        ];
        for (label, records) in self.sections() {
            body.push(serde_json::json!({
                "type": "TextBlock", "weight": "Bolder", "wrap": true, "text": label
            }));
            body.push(serde_json::json!({
                "type": "TextBlock", "fontType": "Monospace", "wrap": true,
                "text": markdown_escape(&lines_of(&records, 8000))
            }));
        }
        let mut card = serde_json::json!({
            "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
            "type": "AdaptiveCard", "version": "1.4", "body": body
        });
        if let Some(url) = &self.url {
            card["actions"] = serde_json::json!([
                {"type": "Action.OpenUrl", "title": "Open the job", "url": url}
            ]);
        }
        serde_json::json!({
            "type": "message",
            "attachments": [{
                "contentType": "application/vnd.microsoft.card.adaptive",
                "contentUrl": null,
                "content": card
            }]
        })
    }

    /// The e-mail of this notice: the same content as text and as HTML
    /// (every value escaped).
    pub fn mail(&self) -> Mail {
        let headline = self.headline();
        let mut text = format!("{headline}\n\n");
        let mut html = format!(
            "<!DOCTYPE html><html><body style=\"font-family: sans-serif\"><h2>{}</h2>",
            escape_html(&headline)
        );
        if let Some(url) = &self.url {
            text.push_str(&format!("{url}\n\n"));
            html.push_str(&format!("<p><a href=\"{0}\">{0}</a></p>", escape_html(url)));
        }
        html.push_str("<table>");
        for (label, value) in self.facts() {
            text.push_str(&format!("{label:<10} {value}\n"));
            html.push_str(&format!(
                "<tr><th align=\"left\">{label}</th><td>{}</td></tr>",
                escape_html(&value)
            ));
        }
        html.push_str("</table>");
        for (label, records) in self.sections() {
            let lines = lines_of(&records, usize::MAX);
            text.push_str(&format!("\n{label}:\n{lines}\n"));
            html.push_str(&format!(
                "<h3>{label}</h3><pre>{}</pre>",
                escape_html(&lines)
            ));
        }
        html.push_str("</body></html>");
        Mail {
            subject: format!("[joblog] {headline}"),
            text,
            html,
        }
    }
}

/// Records as lines (`[seq] message`), cut to about `max` characters,
/// keeping the last lines (the end of a log says most).
fn lines_of(records: &[&NoticeRecord], max: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut total = 0usize;
    for r in records.iter().rev() {
        let line = format!("[{}] {}", r.seq, r.message);
        let n = line.chars().count() + 1;
        if total + n > max && !lines.is_empty() {
            break;
        }
        total += n;
        lines.push(if n > max {
            line.chars().take(max.saturating_sub(1)).collect()
        } else {
            line
        });
    }
    lines.reverse();
    lines.join("\n")
}

fn slack_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Markdown taken literally (Teams renders a TextBlock's text as
/// Markdown): emphasis, code, links and HTML anywhere, and what starts a
/// heading or a list at the start of a line.
fn markdown_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for line in s.split_inclusive('\n') {
        let start = line.trim_start();
        let list = start.starts_with(['-', '+', '#'])
            || start
                .split_once('.')
                .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if list {
            out.push_str(&line[..line.len() - start.len()]);
            out.push('\\');
            out.push_str(&escape_inline(start));
        } else {
            out.push_str(&escape_inline(line));
        }
    }
    out
}

fn escape_inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\`*_[]~<>".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::markdown_escape;

    #[test]
    fn markdown_is_escaped_only_where_it_would_format() {
        assert_eq!(
            markdown_escape("- a *b*\n  2. c_d\nx-y 1.5 [l](u)"),
            "\\- a \\*b\\*\n  \\2. c\\_d\nx-y 1.5 \\[l\\](u)"
        );
    }
}
