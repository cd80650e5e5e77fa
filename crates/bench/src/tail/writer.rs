//! `joblog bench tail-writer`: the job `bench tail` follows. It waits for
//! the bench to say its viewers are connected (a file appears), then
//! writes numbered lines at a steady rate, each stamped with the wall
//! clock just before its `write(2)`. One process for the whole job, so
//! the stamp is the write and not a fork (as `sh` + `date` per line would
//! make it).

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context};

use super::lines::{format_line, line_count, wall_ns};

/// How often the start file is looked for.
const POLL: Duration = Duration::from_millis(2);

/// Waits for `start_file` (at most `wait`), then writes `rate` lines a
/// second for `duration` on stdout. Blocking.
pub(crate) fn run(
    rate: u32,
    duration: Duration,
    start_file: &Path,
    wait: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + wait;
    while !start_file.exists() {
        if Instant::now() > deadline {
            bail!(
                "{} did not appear within {}",
                start_file.display(),
                humantime::format_duration(wait)
            );
        }
        std::thread::sleep(POLL);
    }
    let mut out = std::io::stdout().lock();
    write_lines(&mut out, rate, line_count(rate, duration)).context("writing to stdout")
}

/// Line `n` is due `(n - 1) / rate` s after the first: a schedule, not a
/// sleep per line, so the pace does not drift; a line that is late (the
/// pipe was full) is written at once.
fn write_lines(out: &mut impl Write, rate: u32, count: u64) -> std::io::Result<()> {
    let start = Instant::now();
    for n in 1..=count {
        let due = start + Duration::from_secs_f64((n - 1) as f64 / f64::from(rate.max(1)));
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        let line = format_line(n, wall_ns(SystemTime::now()));
        out.write_all(line.as_bytes())?;
        out.flush()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::lines::parse_line;
    use super::*;

    #[test]
    fn lines_are_numbered_in_order_with_rising_stamps() {
        let mut out = Vec::new();
        write_lines(&mut out, 1_000_000, 50).unwrap();
        let text = String::from_utf8(out).unwrap();
        let parsed: Vec<(u64, i128)> = text.lines().map(|l| parse_line(l).unwrap()).collect();
        assert_eq!(parsed.len(), 50);
        for (i, w) in parsed.windows(2).enumerate() {
            assert_eq!(w[0].0, i as u64 + 1);
            assert!(w[1].1 >= w[0].1, "stamps go back at line {}", i + 2);
        }
    }

    #[test]
    fn a_missing_start_file_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let e = run(
            1,
            Duration::from_secs(1),
            &dir.path().join("start"),
            Duration::ZERO,
        )
        .unwrap_err();
        assert!(e.to_string().contains("did not appear"), "{e}");
    }
}
