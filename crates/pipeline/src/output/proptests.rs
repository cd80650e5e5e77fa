//! Property tests of the parsers of a job's output, the untrusted input
//! joblog reads most: line splitting with idle flushes, workflow commands,
//! masking and the cap. Each property says its invariant above it; each
//! runs a few thousand generated cases (`PROPTEST_CASES` overrides).

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use proptest::prelude::*;

use super::*;

/// Bytes that exercise the parsers: text, newlines, CRs, command starts,
/// multi-byte characters and invalid UTF-8.
fn output_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => "[a-z ]{1,8}".prop_map(String::into_bytes),
        3 => Just(b"\n".to_vec()),
        1 => Just(b"\r\n".to_vec()),
        1 => Just(b"::".to_vec()),
        1 => Just(b"::warning file=a.py,line=3::x".to_vec()),
        1 => Just(b"::group::g".to_vec()),
        1 => Just("é€".as_bytes().to_vec()),
        1 => Just(vec![0xff, 0xc3]),
        1 => Just(vec![0]),
    ];
    proptest::collection::vec(piece, 0..max).prop_map(|p| p.concat())
}

/// One step of feeding a parser: a read of `n` bytes from a pipe, or an
/// idle flush of one.
#[derive(Debug, Clone)]
enum Step {
    Read { stderr: bool, n: usize },
    Flush { stderr: bool },
}

/// Steps with at least one read among them, so that cycling through them
/// always consumes the input.
fn steps() -> impl Strategy<Value = Vec<Step>> {
    let read = || (any::<bool>(), 1usize..40).prop_map(|(stderr, n)| Step::Read { stderr, n });
    let step = prop_oneof![
        4 => read(),
        1 => any::<bool>().prop_map(|stderr| Step::Flush { stderr }),
    ];
    (proptest::collection::vec(step, 0..60), read()).prop_map(|(mut steps, read)| {
        steps.push(read);
        steps
    })
}

fn source(stderr: bool) -> Source {
    if stderr {
        Source::Stderr
    } else {
        Source::Stdout
    }
}

/// Feeds `data` split as `steps` say (cycling through them), each read
/// taking the next bytes of its own pipe's share: stdout gets `data`,
/// stderr gets `err`. Returns every record.
fn feed(log: &mut OutputParser, data: &[u8], err: &[u8], steps: &[Step]) -> Vec<Record> {
    let mut out = Vec::new();
    let mut rest = [data, err];
    let mut i = 0;
    while !rest[0].is_empty() || !rest[1].is_empty() {
        match &steps[i % steps.len()] {
            Step::Read { stderr, n } => {
                let pipe = usize::from(*stderr);
                let take = (*n).min(rest[pipe].len());
                log.push(source(*stderr), &rest[pipe][..take], Timestamp(1), &mut out);
                rest[pipe] = &rest[pipe][take..];
                // A step that found its pipe empty moves the other on.
                if take == 0 {
                    let other = 1 - pipe;
                    let take = (*n).min(rest[other].len());
                    log.push(
                        source(other == 1),
                        &rest[other][..take],
                        Timestamp(1),
                        &mut out,
                    );
                    rest[other] = &rest[other][take..];
                }
            }
            Step::Flush { stderr } => log.flush_partial(source(*stderr), Timestamp(1), &mut out),
        }
        i += 1;
    }
    log.finish(Timestamp(2), &mut out);
    out
}

/// Every record's message and fields, as text.
fn stored_text(records: &[Record]) -> String {
    let mut text = String::new();
    for r in records {
        text.push_str(&r.message);
        if let Some(f) = &r.fields {
            text.push_str(&Value::Object(f.clone()).to_string());
        }
        text.push('\n');
    }
    text
}

/// The text of one stream as a viewer would rejoin it: `continued` pieces
/// glued to the record before them.
fn rejoined(records: &[Record], stream: Stream) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for r in records.iter().filter(|r| r.stream == stream) {
        let continued = r
            .fields
            .as_ref()
            .is_some_and(|f| f.get("continued") == Some(&Value::Bool(true)));
        match lines.last_mut() {
            Some(last) if continued => last.push_str(&r.message),
            _ => lines.push(r.message.clone()),
        }
    }
    lines
}

fn small(line_max: usize) -> LogLimits {
    LogLimits {
        line_max,
        ..LogLimits::default()
    }
}

proptest! {
    #![proptest_config(joblog_testkit::proptest_config(2000))]

    /// Any bytes, any chunking, any idle flushes: no panic, seq gapless
    /// from 1, every record within `line_max` bytes of input (a replaced
    /// invalid byte may take 3), and the buffered bytes bounded.
    #[test]
    fn any_output_any_chunking_gives_gapless_bounded_records(
        out_bytes in output_bytes(60),
        err_bytes in output_bytes(20),
        steps in steps(),
        line_max in 4usize..64,
    ) {
        let mut log = OutputParser::new(small(line_max), Vec::<String>::new());
        let records = feed(&mut log, &out_bytes, &err_bytes, &steps);
        let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
        prop_assert_eq!(seqs, (1..=records.len() as u64).collect::<Vec<_>>());
        for r in &records {
            prop_assert!(r.message.len() <= 3 * line_max + 3, "{} bytes > {}", r.message.len(), line_max);
        }
        prop_assert_eq!(log.buffered_bytes(), 0);
    }

    /// Plain text lines (no commands, no CRs) come back exactly as
    /// written, whatever the chunking and flushes: pieces of a long or
    /// flushed line carry `continued` and rejoin to the line.
    #[test]
    fn plain_lines_rejoin_to_what_was_written(
        lines in proptest::collection::vec("[a-zé ]{0,40}", 1..20),
        steps in steps(),
        line_max in 4usize..64,
    ) {
        let data = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
        let mut log = OutputParser::new(small(line_max), Vec::<String>::new());
        let records = feed(&mut log, data.as_bytes(), b"", &steps);
        prop_assert_eq!(rejoined(&records, Stream::Output), lines);
    }

    /// No line makes the command parser panic; a well-formed warning
    /// becomes a `warning` record with its fields, its message unescaped.
    #[test]
    fn command_lines_never_panic_and_well_formed_ones_round_trip(
        junk in "::[a-z-]{0,12}( [a-z]{1,4}=[^:,\n]{0,6}(,[a-z]{1,4}=[^:,\n]{0,6}){0,2})?(::)?[^\n]{0,20}",
        file in "[a-z]{1,8}\\.py",
        line in 1u32..100_000,
        message in "[a-zA-Z0-9 ]{0,30}",
    ) {
        let _ = super::command::parse(&junk);
        let mut log = OutputParser::new(LogLimits::default(), Vec::<String>::new());
        let mut out = Vec::new();
        log.push(Source::Stdout, format!("{junk}\n").as_bytes(), Timestamp(1), &mut out);
        log.push(
            Source::Stdout,
            format!("::warning file={file},line={line}::{message}\n").as_bytes(),
            Timestamp(1),
            &mut out,
        );
        log.finish(Timestamp(2), &mut out);
        let last = out.last().expect("the warning's record");
        prop_assert_eq!(last.stream, Stream::Warning);
        prop_assert_eq!(&last.message, &message);
        let fields = last.fields.as_ref().expect("fields");
        prop_assert_eq!(&fields["file"], &Value::String(file));
        prop_assert_eq!(&fields["line"], &Value::from(line));
    }

    /// A masked value — given as a secret or added with `::add-mask::`
    /// before its use, even after a partial line — never appears in any
    /// record, in any of its forms (plain, base64, URL-encoded, hex),
    /// however the output is chunked, flushed and interleaved, and also
    /// when `::stop-commands::` is in effect when it is printed.
    #[test]
    fn a_masked_value_never_appears_in_any_record(
        secret in "[A-Za-z0-9@/+][A-Za-z0-9@/+ ]{4,14}[A-Za-z0-9@/+]",
        as_secret in any::<bool>(),
        prefix in "[a-z .]{0,10}",
        filler in output_bytes(12),
        stop in any::<bool>(),
        steps in steps(),
        line_max in 8usize..64,
    ) {
        // The promise holds for an `::add-mask::` whose command and value
        // fit in one line piece (docs/records.md); a longer value is masked
        // only in its first part, with a warning.
        let line_max = line_max.max("::add-mask::".len() + secret.len());
        let url: String = secret
            .bytes()
            .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
            .collect();
        let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
        let forms = [secret.clone(), STANDARD.encode(&secret), url, hex];
        let mut data = Vec::new();
        if !as_secret {
            data.extend_from_slice(format!("{prefix}::add-mask::{secret}\n").as_bytes());
        }
        if stop {
            data.extend_from_slice(b"::stop-commands::tok\n");
        }
        data.extend_from_slice(&filler);
        for form in &forms {
            data.extend_from_slice(format!("\nx{form}y {form}\n{form}").as_bytes());
            data.extend_from_slice(&filler);
        }
        let err = format!("{}\n", forms[0]);
        let secrets = if as_secret { vec![secret.clone()] } else { Vec::new() };
        let mut log = OutputParser::new(small(line_max), secrets);
        // Stderr only once stdout has registered the mask (a pipe of its
        // own may run ahead of an `::add-mask::` on the other).
        let mut records = feed(&mut log, &data, b"", &steps);
        let mut more = Vec::new();
        log.push(Source::Stderr, err.as_bytes(), Timestamp(3), &mut more);
        log.finish(Timestamp(4), &mut more);
        records.extend(more);
        let text = stored_text(&records);
        for form in &forms {
            prop_assert!(!text.contains(form.as_str()), "{:?} leaked:\n{}", form, text);
        }
    }

    /// The cap keeps the first records, one marker counting exactly what
    /// it dropped, and the last `tail` records; `truncated` is set iff
    /// something was dropped; seq stays gapless.
    #[test]
    fn the_cap_keeps_head_marker_and_tail_and_counts_the_rest(
        n in 0usize..300,
        max_records in 1u64..60,
        tail in 0usize..60,
    ) {
        let limits = LogLimits {
            max_records,
            tail_records: tail.min(max_records as usize),
            ..LogLimits::default()
        };
        let tail = limits.tail_records;
        let data: String = (1..=n).map(|i| format!("line {i}\n")).collect();
        let mut log = OutputParser::new(limits, Vec::<String>::new());
        let mut out = Vec::new();
        log.push(Source::Stdout, data.as_bytes(), Timestamp(1), &mut out);
        log.finish(Timestamp(2), &mut out);
        let seqs: Vec<u64> = out.iter().map(|r| r.seq).collect();
        prop_assert_eq!(seqs, (1..=out.len() as u64).collect::<Vec<_>>());
        let summary = log.summary();
        if n as u64 <= max_records {
            prop_assert_eq!(out.len(), n);
            prop_assert!(!summary.truncated);
        } else {
            let head = max_records as usize - tail;
            prop_assert_eq!(out.len(), head + 1 + tail);
            prop_assert!(summary.truncated);
            let marker = &out[head];
            let fields = marker.fields.as_ref().expect("marker fields");
            prop_assert_eq!(&fields["dropped_records"], &Value::from(n as u64 - max_records));
            let expected: Vec<String> = (1..=head)
                .chain(n - tail + 1..=n)
                .map(|i| format!("line {i}"))
                .collect();
            let kept: Vec<String> = out
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != head)
                .map(|(_, r)| r.message.clone())
                .collect();
            prop_assert_eq!(kept, expected);
        }
    }
}
