//! The Markdown report of `bench oplog`: requests per second by logging
//! setup with the on/off ratio against its budget, then the caller-side
//! cost per event of joblog's layer beside tracing-appender's.

use std::fmt::Write as _;
use std::time::Duration;

use super::caller::{CallerRound, Pace, Writer};
use super::http::{HttpFigures, Round, SETUPS};
use serde_json::json;

use crate::chart::{Bar, Chart};
use crate::stats::median;

/// Budget and goal of requests/s with logging on, as a share of off.
const BUDGET: f64 = 98.0;
const GOAL: f64 = 99.0;

pub(super) struct OplogReport<'a> {
    pub(super) date: &'a str,
    pub(super) command: &'a str,
    pub(super) duration: Duration,
    pub(super) runs: u32,
    pub(super) connections: u32,
    pub(super) client_threads: u32,
    pub(super) events: u64,
    pub(super) http: &'a HttpFigures,
    /// Timer overhead p50 and p99, ns.
    pub(super) timer: Option<(f64, f64)>,
    pub(super) caller: &'a [CallerRound],
    pub(super) total: Duration,
    pub(super) notes: &'a [String],
}

fn med(values: impl Iterator<Item = f64>) -> Option<f64> {
    median(&values.collect::<Vec<_>>())
}

/// Median requests/s of one setup's rounds.
fn rate(rounds: &[&Round]) -> Option<f64> {
    med(rounds.iter().map(|r| r.sent.per_second()))
}

/// Median µs of CPU per answered request, of the server or the bench.
fn cpu_per_request(rounds: &[&Round], server: bool) -> Option<f64> {
    med(rounds.iter().filter_map(|r| {
        let cpu = if server {
            r.server_cpu?
        } else {
            r.sent.own_cpu
        };
        (r.sent.ok > 0).then(|| cpu.as_secs_f64() * 1e6 / r.sent.ok as f64)
    }))
}

/// The median over rounds of on / off (%), each round's on beside the
/// off loaded next to it: machine noise that drifts over minutes falls on
/// both halves of a pair.
fn paired_share(http: &HttpFigures) -> Option<f64> {
    let of = |setup: usize| {
        http.rounds
            .iter()
            .filter(move |x| x.setup == setup)
            .map(|x| x.sent.per_second())
    };
    med(of(0)
        .zip(of(1))
        .filter(|(_, off)| *off > 0.0)
        .map(|(on, off)| 100.0 * on / off))
}

fn num(v: Option<f64>, decimals: usize) -> String {
    v.map_or("–".into(), |x| format!("{x:.decimals$}"))
}

fn share(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(100.0 * a / b),
        _ => None,
    }
}

pub(super) fn render(r: &OplogReport<'_>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## joblog bench oplog\n");
    let _ = writeln!(s, "- Date: {}", r.date);
    let _ = writeln!(s, "- Command: `{}`", r.command);
    let _ = writeln!(s, "- Total wall time: {:.1} s", r.total.as_secs_f64());
    for n in r.notes {
        let _ = writeln!(s, "- Note: {n}");
    }
    http_section(&mut s, r);
    caller_section(&mut s, r);
    s
}

/// The raw figures for `--out`, and the chart: requests/s by setup.
pub(super) fn figures(r: &OplogReport<'_>) -> (serde_json::Value, Chart) {
    let mut setups = Vec::new();
    let mut bars = Vec::new();
    for (i, setup) in SETUPS.iter().enumerate() {
        let rounds: Vec<&Round> = r.http.rounds.iter().filter(|x| x.setup == i).collect();
        let median_rate = rate(&rounds);
        setups.push(json!({
            "logging": setup.label,
            "requests_per_s": median_rate,
            "rounds_requests_per_s": rounds.iter().map(|x| x.sent.per_second()).collect::<Vec<_>>(),
            "server_cpu_us_per_request": cpu_per_request(&rounds, true),
            "failed_requests": rounds.iter().map(|x| x.sent.failed).sum::<u64>(),
        }));
        bars.push(Bar {
            label: format!("logging {}", setup.label),
            value: median_rate.unwrap_or(f64::NAN),
            reference: i == 0,
        });
    }
    let caller: Vec<_> = r
        .caller
        .iter()
        .map(|c| {
            json!({
                "writer": c.writer.name(),
                "pace": pace_label(c.pace),
                "p50_ns": c.p50,
                "p99_ns": c.p99,
                "p999_ns": c.p999,
            })
        })
        .collect();
    let value = json!({
        "http": setups,
        "timer_overhead_ns": r.timer.map(|(p50, p99)| json!({"p50": p50, "p99": p99})),
        "caller": caller,
        "paired_on_percent_of_off": paired_share(r.http),
        "budget_on_percent_of_off": BUDGET,
    });
    let chart = Chart::Bars {
        title: "oplog: HTTP requests per second, the server's own logging off and on".into(),
        unit: "requests per second, median of the rounds (grey: logging off, the reference)".into(),
        bars,
    };
    (value, chart)
}

fn http_section(s: &mut String, r: &OplogReport<'_>) {
    let h = r.http;
    let _ = writeln!(s, "\n### HTTP requests/s, logging on and off\n");
    let _ = writeln!(
        s,
        "- Servers: one `joblog serve` per setup, each on SQLite in its own temporary data directory, all running through the whole bench"
    );
    let _ = writeln!(
        s,
        "- Load: `GET /api/v1/jobs/{{id}}` of one finished job, {} keep-alive HTTP/1.1 connections (reqwest) on a runtime of {} thread(s) in the bench process, one request at a time per connection",
        r.connections, r.client_threads
    );
    let _ = writeln!(
        s,
        "- Rounds: {} per setup, {:.1} s each, the setups in turn (each round starting one further along), after a warm-up of each",
        r.runs,
        r.duration.as_secs_f64()
    );
    for setup in &SETUPS {
        let _ = writeln!(s, "- Logging {}: {}", setup.label, setup.how);
    }
    let _ = writeln!(
        s,
        "- CPU per request: the server's user + system time (`/proc`) and the bench process's (`getrusage`) over a round, per answered request"
    );
    let _ = writeln!(
        s,
        "- Budget: on ≥ {BUDGET:.0} % of off (goal ≥ {GOAL:.0} %)"
    );
    if let Some(why) = &h.stopped {
        let _ = writeln!(s, "- Stopped early: {why}");
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "| Logging | Requests/s (median) | Rounds (requests/s) | Server CPU per request (µs) | Bench CPU per request (µs) | Failed requests |"
    );
    let _ = writeln!(s, "|---|---:|---|---:|---:|---:|");
    let mut rates = Vec::new();
    let mut cpus = Vec::new();
    for (i, setup) in SETUPS.iter().enumerate() {
        let rounds: Vec<&Round> = h.rounds.iter().filter(|x| x.setup == i).collect();
        let each = rounds
            .iter()
            .map(|x| format!("{:.0}", x.sent.per_second()))
            .collect::<Vec<_>>()
            .join(", ");
        let failed: u64 = rounds.iter().map(|x| x.sent.failed).sum();
        rates.push(rate(&rounds));
        cpus.push(cpu_per_request(&rounds, true));
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            setup.label,
            num(rate(&rounds), 0),
            if each.is_empty() { "–".into() } else { each },
            num(cpu_per_request(&rounds, true), 1),
            num(cpu_per_request(&rounds, false), 1),
            failed
        );
    }
    let _ = writeln!(s);
    match share(rates[0], rates[1]) {
        Some(p) => {
            let verdict = if p >= GOAL {
                "within budget and goal"
            } else if p >= BUDGET {
                "within budget, not the goal"
            } else {
                "**over budget**"
            };
            let _ = writeln!(
                s,
                "On / off: **{p:.1} %** ({verdict}; budget ≥ {BUDGET:.0} %, goal ≥ {GOAL:.0} %)."
            );
            if let Some(paired) = paired_share(h) {
                let _ = writeln!(
                    s,
                    "On / off, the median of the rounds' pairs (each round's on beside the off loaded next to it): {paired:.1} %."
                );
            }
        }
        None => {
            let _ = writeln!(s, "On / off: – (not measured).");
        }
    }
    if let (Some(on), Some(off)) = (cpus[0], cpus[1]) {
        let _ = writeln!(
            s,
            "Server CPU per request, on − off: {:+.1} µs ({:+.1} %).",
            on - off,
            100.0 * (on - off) / off
        );
    }
    if let Some(a) = h.access {
        let c = a.counters;
        let _ = writeln!(
            s,
            "Logging on, its own counters at the end: {} access lines written for {} requests of the load (the rest are the bench's own calls); {} dropped, {} lost{}.",
            c.written,
            a.requests,
            c.dropped,
            c.lost,
            if a.complete() { "" } else { " — **incomplete**" }
        );
    }
}

/// How a round's events were spaced, for its row.
pub(super) fn pace_label(pace: Pace) -> String {
    match pace.pause {
        None => "back to back".into(),
        Some(p) => format!("{} µs apart", p.as_micros()),
    }
}

fn caller_section(s: &mut String, r: &OplogReport<'_>) {
    let _ = writeln!(s, "\n### Caller-side cost of one event\n");
    let Some((t50, t99)) = r.timer else {
        let _ = writeln!(s, "Not measured.");
        return;
    };
    let _ = writeln!(
        s,
        "- The event: `tracing::info!(job_id = i, actor = \"ci\", bytes = 4096u64, ok = true, \"request handled\")`, outside any span, on threads whose default subscriber is the writer's"
    );
    let _ = writeln!(
        s,
        "- Each call timed on its own with `Instant::now()` around it; the timer alone takes p50 {t50:.0} ns, p99 {t99:.0} ns, and {t50:.0} ns is subtracted from every figure"
    );
    let _ = writeln!(
        s,
        "- Back to back: {} timed events per producing thread per round, one after the other, so a writer that cannot keep up makes the caller wait (joblog, `block`) or drops (tracing-appender, once its 128,000 lines are queued); spaced: a tenth as many, each followed by a sleep of the pause given (a server logs between other work: the writer's thread is often asleep when an event comes and must be woken)",
        r.events
    );
    let _ = writeln!(
        s,
        "- Each thread logs 1000 events first, not timed; {} round(s) of each writer at each pace, the writers alternating which goes first; medians over the rounds",
        r.runs
    );
    let _ = writeln!(
        s,
        "- {}: an `Oplog` with one JSON-lines file sink (no rotation) in a temporary directory, its default queues (router 16,384 units, sink 8,192 lines) and policy (`block`)",
        Writer::Joblog.name()
    );
    let _ = writeln!(
        s,
        "- {}: `tracing_appender::non_blocking(rolling::never(dir, file))` under `tracing_subscriber::fmt::layer().json()`, its defaults (lossy, 128,000 lines)",
        Writer::Appender.name()
    );
    let _ = writeln!(
        s,
        "- Lost: events logged − lines in the file once the writer was flushed (in brackets, what the writer itself counted as dropped)"
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "| Writer | Events | Producing threads | p50 (ns) | p99 (ns) | p99.9 (ns) | Events/s per thread | Events logged | Lost |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut keys: Vec<(Pace, Writer)> = Vec::new();
    for c in r.caller {
        if !keys.contains(&(c.pace, c.writer)) {
            keys.push((c.pace, c.writer));
        }
    }
    for (pace, writer) in keys {
        let rounds: Vec<&CallerRound> = r
            .caller
            .iter()
            .filter(|c| c.pace == pace && c.writer == writer)
            .collect();
        let net =
            |f: fn(&CallerRound) -> f64| num(med(rounds.iter().map(|c| (f(c) - t50).max(0.0))), 0);
        let logged: u64 = rounds.iter().map(|c| c.logged).sum();
        let lost: u64 = rounds
            .iter()
            .map(|c| c.logged.saturating_sub(c.written))
            .sum();
        let dropped: u64 = rounds.iter().map(|c| c.dropped).sum();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {logged} | {lost} ({dropped}) |",
            writer.name(),
            pace_label(pace),
            pace.threads,
            net(|c| c.p50),
            net(|c| c.p99),
            net(|c| c.p999),
            num(med(rounds.iter().map(|c| c.per_thread_rate)), 0),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::http::AccessCheck;
    use super::super::load::Sent;
    use super::super::scrape::LogCounters;
    use super::*;

    fn round(setup: usize, ok: u64, server_ms: u64) -> Round {
        Round {
            setup,
            sent: Sent {
                ok,
                failed: 0,
                first_error: None,
                elapsed: Duration::from_secs(1),
                own_cpu: Duration::from_millis(ok / 100),
            },
            server_cpu: Some(Duration::from_millis(server_ms)),
        }
    }

    fn caller(writer: Writer, threads: usize, p50: f64, lost: u64) -> CallerRound {
        CallerRound {
            writer,
            pace: Pace {
                threads,
                events: 100_000,
                pause: (threads == 3).then_some(Duration::from_micros(100)),
            },
            p50,
            p99: p50 * 10.0,
            p999: p50 * 100.0,
            per_thread_rate: 1e6,
            logged: 101_000,
            written: 101_000 - lost,
            dropped: lost,
        }
    }

    fn report(http: &HttpFigures, caller: &[CallerRound]) -> String {
        render(&OplogReport {
            date: "2026-11-24T00:00:00Z",
            command: "joblog bench oplog",
            duration: Duration::from_secs(10),
            runs: 3,
            connections: 8,
            client_threads: 1,
            events: 100_000,
            http,
            timer: Some((20.0, 40.0)),
            caller,
            total: Duration::from_secs(90),
            notes: &[],
        })
    }

    #[test]
    fn medians_ratio_and_counters_make_the_http_table() {
        let http = HttpFigures {
            rounds: vec![
                round(0, 9900, 900),
                round(1, 10_000, 800),
                round(1, 10_200, 800),
                round(0, 9700, 900),
                round(0, 9800, 900),
                round(1, 9900, 800),
            ],
            access: Some(AccessCheck {
                requests: 29_400,
                counters: LogCounters {
                    written: 29_410,
                    dropped: 0,
                    lost: 0,
                    queued: 0,
                },
            }),
            stopped: None,
            interrupted: false,
        };
        let text = report(&http, &[]);
        assert!(
            text.contains("| on | 9800 | 9900, 9700, 9800 | 91.8 | 10.0 | 0 |"),
            "{text}"
        );
        assert!(
            text.contains("| off | 10000 | 10000, 10200, 9900 | 80.0 |"),
            "{text}"
        );
        assert!(
            text.contains("the median of the rounds' pairs (each round's on beside the off loaded next to it): 99.0 %."),
            "{text}"
        );
        assert!(
            text.contains("On / off: **98.0 %** (within budget, not the goal"),
            "{text}"
        );
        assert!(
            text.contains("29410 access lines written for 29400 requests"),
            "{text}"
        );
        assert!(!text.contains("incomplete"), "{text}");
        assert!(text.contains("8 keep-alive HTTP/1.1 connections"), "{text}");
        assert!(text.contains("1 thread(s)"), "{text}");
    }

    #[test]
    fn a_missed_budget_and_an_incomplete_log_are_said() {
        let http = HttpFigures {
            rounds: vec![round(0, 9000, 900), round(1, 10_000, 800)],
            access: Some(AccessCheck {
                requests: 20_000,
                counters: LogCounters {
                    written: 19_000,
                    dropped: 1000,
                    lost: 0,
                    queued: 0,
                },
            }),
            stopped: Some("interrupted (Ctrl-C)".into()),
            interrupted: true,
        };
        let text = report(&http, &[]);
        assert!(text.contains("**90.0 %** (**over budget**"), "{text}");
        assert!(text.contains("— **incomplete**"), "{text}");
        assert!(text.contains("Stopped early: interrupted"), "{text}");
    }

    #[test]
    fn a_setup_without_rounds_shows_dashes_and_no_ratio() {
        let http = HttpFigures {
            rounds: vec![round(0, 9000, 900)],
            ..HttpFigures::default()
        };
        let text = report(&http, &[]);
        assert!(text.contains("| off | – | – | – | – | 0 |"), "{text}");
        assert!(text.contains("On / off: – (not measured)."), "{text}");
        assert!(!text.contains("Server CPU per request, on − off"), "{text}");
    }

    #[test]
    fn the_caller_table_has_a_row_per_writer_and_thread_count_net_of_the_timer() {
        let rounds = [
            caller(Writer::Joblog, 1, 120.0, 0),
            caller(Writer::Appender, 1, 520.0, 0),
            caller(Writer::Joblog, 1, 140.0, 0),
            caller(Writer::Appender, 1, 500.0, 0),
            caller(Writer::Joblog, 2, 200.0, 0),
            caller(Writer::Appender, 2, 600.0, 3),
            caller(Writer::Joblog, 3, 300.0, 0),
        ];
        let text = report(&HttpFigures::default(), &rounds);
        assert!(
            text.contains(
                "| joblog `OplogLayer` | back to back | 1 | 110 | 1280 | 12980 | 1000000 | 202000 | 0 (0) |"
            ),
            "{text}"
        );
        assert!(
            text.contains("| tracing-appender `non_blocking` | back to back | 1 | 490 | 5080 |"),
            "{text}"
        );
        assert!(
            text.contains("| tracing-appender `non_blocking` | back to back | 2 | 580 | 5980 | 59980 | 1000000 | 101000 | 3 (3) |"),
            "{text}"
        );
        assert!(
            text.contains("p50 20 ns, p99 40 ns, and 20 ns is subtracted"),
            "{text}"
        );
        assert!(
            text.contains("| joblog `OplogLayer` | 100 µs apart | 3 | 280 |"),
            "{text}"
        );
    }
}
