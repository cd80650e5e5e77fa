//! A job's output through `OutputParser`: any bytes on both pipes, cut
//! into reads of any size with idle flushes between them. Nothing panics,
//! seq is gapless from 1, and the secret given at construction is in no
//! record (message or fields).

#![no_main]

use joblog_core::{Record, Timestamp};
use joblog_pipeline::{LogLimits, OutputParser, Source};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    /// Picks the secret's characters: 6 to 16 letters, digits and `@/+`
    /// (a `*` could be rebuilt by the `***` that masks it).
    secret: Vec<u8>,
    line_max: u8,
    steps: Vec<Step>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

#[derive(Debug, Arbitrary)]
enum Step {
    Read { stderr: bool, len: u8 },
    Flush { stderr: bool },
}

const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@/+";

fn source(stderr: bool) -> Source {
    if stderr {
        Source::Stderr
    } else {
        Source::Stdout
    }
}

fuzz_target!(|input: Input| {
    let secret: String = input
        .secret
        .iter()
        .take(16)
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect();
    if secret.len() < 6 {
        return;
    }
    // A value is masked across a long line's cuts when it fits one piece.
    let limits = LogLimits {
        line_max: usize::from(input.line_max).max(secret.len() + 12),
        ..LogLimits::default()
    };
    let mut parser = OutputParser::new(limits, [secret.clone()]);
    let mut out: Vec<Record> = Vec::new();
    let mut rest = [&input.stdout[..], &input.stderr[..]];
    for step in &input.steps {
        match *step {
            Step::Read { stderr, len } => {
                let pipe = &mut rest[usize::from(stderr)];
                let take = usize::from(len).max(1).min(pipe.len());
                parser.push(source(stderr), &pipe[..take], Timestamp(1), &mut out);
                *pipe = &pipe[take..];
            }
            Step::Flush { stderr } => parser.flush_partial(source(stderr), Timestamp(1), &mut out),
        }
    }
    for (i, pipe) in rest.iter().enumerate() {
        parser.push(source(i == 1), pipe, Timestamp(2), &mut out);
    }
    parser.finish(Timestamp(3), &mut out);

    for (i, r) in out.iter().enumerate() {
        assert_eq!(r.seq, i as u64 + 1, "seq must be gapless from 1");
        assert!(!r.message.contains(&secret), "secret in {r:?}");
        if let Some(fields) = &r.fields {
            let json = serde_json::Value::Object(fields.clone()).to_string();
            assert!(!json.contains(&secret), "secret in {r:?}");
        }
    }
});
