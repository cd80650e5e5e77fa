//! Which exposition format a scrape gets, and the Prometheus text format
//! made from the registry's OpenMetrics text.
//!
//! The rule is the Prometheus client libraries': OpenMetrics 1.0 when the
//! scraper's `Accept` prefers it (Prometheus itself asks for it first), the
//! text format 0.0.4 otherwise, also when `Accept` is absent. The encoder
//! of `prometheus_client` writes only OpenMetrics, so the text format is a
//! translation of it: a counter's `TYPE` and `HELP` name its `_total`
//! sample, `# UNIT`, `# EOF`, `_created` samples and exemplars go, and
//! types the old format lacks become `untyped`.

use std::fmt::Write;

/// The two formats `/metrics` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    OpenMetrics,
    Text,
}

impl Format {
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// The format an `Accept` header asks for: its media ranges by quality
/// (the first listed wins a tie), the first one either format serves.
pub(crate) fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Text;
    };
    let mut best: Option<(f32, Format)> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let mut q = 1.0_f32;
        let mut version = None;
        for param in parts {
            let Some((key, value)) = param.split_once('=') else {
                continue;
            };
            let value = value.trim().trim_matches('"');
            match key.trim().to_ascii_lowercase().as_str() {
                // A quality that does not parse counts as 0: not wanted.
                "q" => q = value.parse().unwrap_or(0.0),
                "version" => version = Some(value.to_string()),
                _ => {}
            }
        }
        let format = match (media.as_str(), version.as_deref()) {
            ("application/openmetrics-text", None | Some("1.0.0")) => Format::OpenMetrics,
            ("text/plain", None | Some("0.0.4")) | ("text/*" | "*/*", None) => Format::Text,
            _ => continue,
        };
        if q > 0.0 && best.is_none_or(|(b, _)| q > b) {
            best = Some((q, format));
        }
    }
    best.map_or(Format::Text, |(_, f)| f)
}

/// The Prometheus text format 0.0.4 of an OpenMetrics exposition.
pub(crate) fn to_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    // OpenMetrics writes a family's HELP before its TYPE, and the TYPE
    // decides the name the HELP must carry.
    let mut help: Option<(&str, &str)> = None;
    let mut family = Family::default();
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            help = Some(rest.split_once(' ').unwrap_or((rest, "")));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "unknown"));
            family = Family::new(name, kind);
            if let Some((_, text)) = help.take().filter(|(n, _)| *n == name) {
                let _ = writeln!(out, "# HELP {} {}", family.exposed, unescape_quotes(text));
            }
            let _ = writeln!(out, "# TYPE {} {}", family.exposed, family.kind);
        } else if line.starts_with('#') {
            // `# UNIT` and `# EOF`: the text format has neither.
        } else if !line.is_empty() {
            let sample = without_exemplar(line);
            if !family.drops(sample) {
                out.push_str(sample);
                out.push('\n');
            }
        }
    }
    out
}

/// The family the samples being read belong to.
#[derive(Default)]
struct Family {
    /// Its name in OpenMetrics.
    name: String,
    /// The name its `TYPE` and `HELP` lines carry in the text format.
    exposed: String,
    kind: &'static str,
}

impl Family {
    fn new(name: &str, kind: &str) -> Family {
        let (exposed, kind) = match kind {
            "counter" => (format!("{name}_total"), "counter"),
            "gauge" => (name.to_string(), "gauge"),
            "histogram" => (name.to_string(), "histogram"),
            "summary" => (name.to_string(), "summary"),
            // An info metric is a gauge of 1 whose labels say the facts.
            "info" => (format!("{name}_info"), "gauge"),
            _ => (name.to_string(), "untyped"),
        };
        Family {
            name: name.to_string(),
            exposed,
            kind,
        }
    }

    /// Whether a sample has no place in the text format: a counter's or a
    /// histogram's `_created`.
    fn drops(&self, sample: &str) -> bool {
        let end = sample.find([' ', '{']).unwrap_or(sample.len());
        matches!(self.kind, "counter" | "histogram" | "summary")
            && sample[..end].strip_prefix(self.name.as_str()) == Some("_created")
    }
}

/// A sample line without its exemplar (` # {…} value`), which follows the
/// label set; a `#` inside a quoted label value is not one.
fn without_exemplar(line: &str) -> &str {
    let name_end = line.find(['{', ' ']).unwrap_or(line.len());
    let mut after_labels = name_end;
    if line[name_end..].starts_with('{') {
        let mut in_quotes = false;
        let mut escaped = false;
        for (i, c) in line[name_end..].char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = in_quotes,
                '"' => in_quotes = !in_quotes,
                '}' if !in_quotes => {
                    after_labels = name_end + i + 1;
                    break;
                }
                _ => {}
            }
        }
    }
    match line[after_labels..].find(" # ") {
        Some(at) => &line[..after_labels + at],
        None => line,
    }
}

/// A `HELP` text in the text format, which escapes only `\` and line
/// breaks, where OpenMetrics also escapes `"`.
fn unescape_quotes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('"') => out.push('"'),
            Some(next) => {
                out.push('\\');
                out.push(next);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROMETHEUS: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

    #[test]
    fn accept_chooses_the_format_as_client_libraries_do() {
        assert_eq!(negotiate(Some(PROMETHEUS)), Format::OpenMetrics);
        assert_eq!(negotiate(None), Format::Text);
        assert_eq!(negotiate(Some("*/*")), Format::Text);
        assert_eq!(
            negotiate(Some("text/plain;version=0.0.4")),
            Format::Text,
            "what promtool and older scrapers send"
        );
        assert_eq!(
            negotiate(Some(
                "text/plain;version=0.0.4;q=0.9, application/openmetrics-text"
            )),
            Format::OpenMetrics
        );
        assert_eq!(
            negotiate(Some("application/openmetrics-text;q=0.2, text/plain;q=0.5")),
            Format::Text
        );
        assert_eq!(
            negotiate(Some("application/openmetrics-text; version=9.9")),
            Format::Text,
            "an unknown version is not served"
        );
        assert_eq!(
            negotiate(Some("application/openmetrics-text;q=0")),
            Format::Text
        );
        assert_eq!(
            negotiate(Some("APPLICATION/OpenMetrics-Text")),
            Format::OpenMetrics
        );
        assert_eq!(negotiate(Some(";;,q=,=")), Format::Text);
    }

    #[test]
    fn openmetrics_becomes_the_text_format() {
        let om = "# HELP joblog_jobs_submitted Jobs \"submitted\".\n\
                  # TYPE joblog_jobs_submitted counter\n\
                  joblog_jobs_submitted_total 3\n\
                  joblog_jobs_submitted_created 1.7e9\n\
                  # HELP joblog_wait_seconds Wait.\n\
                  # TYPE joblog_wait_seconds histogram\n\
                  # UNIT joblog_wait_seconds seconds\n\
                  joblog_wait_seconds_sum 1.5\n\
                  joblog_wait_seconds_count 2\n\
                  joblog_wait_seconds_bucket{le=\"0.001\"} 1 # {trace_id=\"a\"} 0.0005\n\
                  joblog_wait_seconds_bucket{le=\"+Inf\"} 2\n\
                  # HELP joblog_build Build.\n\
                  # TYPE joblog_build info\n\
                  joblog_build_info{version=\"1 # 2\",quote=\"\\\"}\"} 1\n\
                  # TYPE joblog_odd unknown\n\
                  joblog_odd 1\n\
                  # EOF\n";
        let text = to_text(om);
        assert_eq!(
            text,
            "# HELP joblog_jobs_submitted_total Jobs \"submitted\".\n\
             # TYPE joblog_jobs_submitted_total counter\n\
             joblog_jobs_submitted_total 3\n\
             # HELP joblog_wait_seconds Wait.\n\
             # TYPE joblog_wait_seconds histogram\n\
             joblog_wait_seconds_sum 1.5\n\
             joblog_wait_seconds_count 2\n\
             joblog_wait_seconds_bucket{le=\"0.001\"} 1\n\
             joblog_wait_seconds_bucket{le=\"+Inf\"} 2\n\
             # HELP joblog_build_info Build.\n\
             # TYPE joblog_build_info gauge\n\
             joblog_build_info{version=\"1 # 2\",quote=\"\\\"}\"} 1\n\
             # TYPE joblog_odd untyped\n\
             joblog_odd 1\n"
        );
    }

    #[test]
    fn help_keeps_backslashes_and_line_breaks_escaped() {
        assert_eq!(unescape_quotes(r#"a \"b\" \\ \n c\"#), r#"a "b" \\ \n c\"#);
    }
}
