//! The followed job's lines and what one viewer makes of them: each line
//! carries its number and the wall-clock time it was written, so a viewer
//! tells its latency from the line alone and checks that every line came
//! once and in order.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The first word of every line, so a record the writer did not write is
/// told apart from one that is garbled.
const TAG: &str = "tail";

/// After the stamp: a line as long as a typical log line (~70 bytes).
const FILLER: &str = "the quick brown fox jumps over the lazy dog";

/// Problems a viewer keeps word for word; the rest are only counted.
const KEEP_PROBLEMS: usize = 5;

/// Lines written at `rate` per second for `duration` (at least one).
pub(super) fn line_count(rate: u32, duration: Duration) -> u64 {
    ((f64::from(rate) * duration.as_secs_f64()).round() as u64).max(1)
}

/// Nanoseconds since the Unix epoch: the clock the writer stamps lines
/// with and the viewer reads deliveries by (one machine, one clock).
pub(super) fn wall_ns(t: SystemTime) -> i128 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// Line `n`, written at `written_ns`, with its newline.
pub(super) fn format_line(n: u64, written_ns: i128) -> String {
    format!("{TAG} {n} {written_ns} {FILLER}\n")
}

/// The number and write time of a line [`format_line`] made (as stored:
/// without its newline).
pub(super) fn parse_line(message: &str) -> Option<(u64, i128)> {
    let mut words = message.split(' ');
    if words.next()? != TAG {
        return None;
    }
    let n = words.next()?.parse().ok()?;
    let written = words.next()?.parse().ok()?;
    Some((n, written))
}

/// One delivered line's times, ns since the epoch.
#[derive(Debug, Clone, Copy)]
pub(super) struct Delivery {
    /// The record's `seq`.
    pub(super) seq: u64,
    /// When the job wrote the line (stamped in the line itself).
    pub(super) written: i128,
    /// The record's `ts`: when the server read the line from the pipe.
    pub(super) received: Option<i128>,
    /// When the viewer had parsed the event.
    pub(super) delivered: i128,
}

/// What one viewer saw, checked as it comes.
#[derive(Debug)]
pub(super) struct Tally {
    expected: u64,
    /// The line number that should come next.
    next: u64,
    last_seq: u64,
    /// Written → delivered, ms, one per line that came.
    pub(super) latency_ms: Vec<f64>,
    /// Written → received by the server (the record's `ts`), ms.
    pub(super) to_server_ms: Vec<f64>,
    first_written: Option<i128>,
    last_written: Option<i128>,
    problems: Vec<String>,
    problem_count: u64,
}

impl Tally {
    pub(super) fn new(expected: u64) -> Tally {
        Tally {
            expected,
            next: 1,
            last_seq: 0,
            latency_ms: Vec::with_capacity(expected.min(1 << 20) as usize),
            to_server_ms: Vec::with_capacity(expected.min(1 << 20) as usize),
            first_written: None,
            last_written: None,
            problems: Vec::new(),
            problem_count: 0,
        }
    }

    /// A record event: its message should be line `next`.
    pub(super) fn record(
        &mut self,
        seq: u64,
        message: &str,
        received: Option<i128>,
        delivered: i128,
    ) {
        if seq <= self.last_seq {
            self.problem(format!("record {seq} came after record {}", self.last_seq));
        }
        self.last_seq = self.last_seq.max(seq);
        let Some((n, written)) = parse_line(message) else {
            let shown: String = message.chars().take(80).collect();
            self.problem(format!(
                "record {seq} is not a line of the writer: {shown:?}"
            ));
            return;
        };
        self.line(
            Delivery {
                seq,
                written,
                received,
                delivered,
            },
            n,
        );
    }

    fn line(&mut self, d: Delivery, n: u64) {
        if n < self.next {
            self.problem(format!(
                "line {n} came again (record {}) after line {}",
                d.seq,
                self.next - 1
            ));
            return;
        }
        if n > self.expected {
            self.problem(format!("line {n} is past the {} written", self.expected));
            return;
        }
        if n > self.next {
            self.problem(format!(
                "lines {} to {} missing before line {n}",
                self.next,
                n - 1
            ));
        }
        self.next = n + 1;
        self.latency_ms.push((d.delivered - d.written) as f64 / 1e6);
        if let Some(r) = d.received {
            self.to_server_ms.push((r - d.written) as f64 / 1e6);
        }
        self.first_written.get_or_insert(d.written);
        self.last_written = Some(d.written);
    }

    pub(super) fn problem(&mut self, text: String) {
        self.problem_count += 1;
        if self.problems.len() < KEEP_PROBLEMS {
            self.problems.push(text);
        }
    }

    /// The stream is over (`end` seen or not): every line should be in.
    pub(super) fn finish(mut self) -> ViewerOutcome {
        let got = self.next - 1;
        if got < self.expected {
            self.problem(format!("got lines up to {got} of {}", self.expected));
        }
        let written_per_s = match (self.first_written, self.last_written) {
            (Some(a), Some(b)) if b > a && self.latency_ms.len() > 1 => {
                Some((self.latency_ms.len() - 1) as f64 / ((b - a) as f64 / 1e9))
            }
            _ => None,
        };
        ViewerOutcome {
            lines: self.latency_ms.len() as u64,
            latency_ms: self.latency_ms,
            to_server_ms: self.to_server_ms,
            written_per_s,
            problems: self.problems,
            problem_count: self.problem_count,
        }
    }
}

/// One viewer's figures and what was wrong with its stream.
#[derive(Debug)]
pub(super) struct ViewerOutcome {
    /// Lines delivered in order (a line after a gap counts).
    pub(super) lines: u64,
    pub(super) latency_ms: Vec<f64>,
    pub(super) to_server_ms: Vec<f64>,
    /// The pace the lines were written at, from their own stamps.
    pub(super) written_per_s: Option<f64>,
    /// The first few, word for word.
    pub(super) problems: Vec<String>,
    pub(super) problem_count: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i128 = 1_000_000;

    #[test]
    fn lines_carry_their_number_and_write_time() {
        let line = format_line(17, 1_795_342_502_123_456_789);
        assert!(line.ends_with('\n'));
        assert!((60..=80).contains(&line.len()), "{line:?}");
        assert_eq!(
            parse_line(line.trim_end()),
            Some((17, 1_795_342_502_123_456_789))
        );
        assert_eq!(parse_line("tail x 1"), None);
        assert_eq!(parse_line("tail 1"), None);
        assert_eq!(parse_line("message 1 of job 7"), None);
        assert_eq!(parse_line(""), None);
        assert_eq!(line_count(200, Duration::from_secs(10)), 2000);
        assert_eq!(line_count(3, Duration::from_millis(500)), 2);
        assert_eq!(line_count(1, Duration::from_millis(1)), 1);
        let t = UNIX_EPOCH + Duration::from_nanos(1_500);
        assert_eq!(wall_ns(t), 1_500);
        assert_eq!(wall_ns(UNIX_EPOCH - Duration::from_nanos(7)), -7);
    }

    fn msg(n: u64, written: i128) -> String {
        format_line(n, written).trim_end().to_string()
    }

    #[test]
    fn latency_is_delivered_minus_written() {
        let mut t = Tally::new(3);
        // Lines written 5 ms apart, each delivered 2, 3 and 40 ms later.
        for (n, lat) in [(1u64, 2), (2, 3), (3, 40)] {
            let w = 1_000 * MS + i128::from(n) * 5 * MS;
            t.record(n, &msg(n, w), Some(w + MS), w + lat * MS);
        }
        let o = t.finish();
        assert_eq!(o.problem_count, 0, "{:?}", o.problems);
        assert_eq!(o.lines, 3);
        assert_eq!(o.latency_ms, vec![2.0, 3.0, 40.0]);
        assert_eq!(o.to_server_ms, vec![1.0, 1.0, 1.0]);
        // 2 intervals in 10 ms.
        assert!((o.written_per_s.unwrap() - 200.0).abs() < 1e-9);
    }

    #[test]
    fn gaps_repeats_disorder_and_strangers_are_reported() {
        let mut t = Tally::new(5);
        t.record(1, &msg(1, 0), None, MS);
        t.record(2, &msg(3, 0), None, MS); // line 2 missing
        t.record(3, &msg(3, 0), None, MS); // line 3 again
        t.record(3, &msg(4, 0), None, MS); // seq did not advance
        t.record(5, "boom", None, MS); // not a line of the writer
        t.record(6, &msg(9, 0), None, MS); // past the count
        let o = t.finish();
        assert_eq!(o.lines, 3, "lines 1, 3 and 4 were measured");
        assert_eq!(o.problem_count, 6, "{:?}", o.problems);
        assert_eq!(o.problems.len(), KEEP_PROBLEMS);
        let all = o.problems.join("\n");
        for needle in [
            "lines 2 to 2 missing before line 3",
            "line 3 came again",
            "record 3 came after record 3",
            "record 5 is not a line of the writer: \"boom\"",
            "line 9 is past the 5 written",
        ] {
            assert!(all.contains(needle), "{needle:?} not in\n{all}");
        }
    }

    #[test]
    fn a_stream_that_stops_early_is_short() {
        let mut t = Tally::new(4);
        t.record(1, &msg(1, 0), None, MS);
        t.record(2, &msg(2, 0), None, MS);
        let o = t.finish();
        assert_eq!(o.lines, 2);
        assert_eq!(o.problems, vec!["got lines up to 2 of 4".to_string()]);
        assert_eq!(o.written_per_s, None, "no time between the stamps");
    }
}
