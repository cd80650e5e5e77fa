use super::command::MAX_ADDED_MASKS;
use super::lines::continued;
use super::*;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::json;

const KIB64: usize = 64 * 1024;

fn t(n: i64) -> Timestamp {
    Timestamp(n)
}

fn parser(secrets: &[&str]) -> OutputParser {
    OutputParser::new(LogLimits::default(), secrets.iter().map(|s| s.to_string()))
}

fn push(log: &mut OutputParser, src: Source, data: impl AsRef<[u8]>) -> Vec<Record> {
    let mut out = Vec::new();
    log.push(src, data.as_ref(), t(1), &mut out);
    out
}

/// Feeds stdout then finishes.
fn run(log: &mut OutputParser, data: impl AsRef<[u8]>) -> Vec<Record> {
    let mut out = push(log, Source::Stdout, data);
    log.finish(t(2), &mut out);
    out
}

fn run_stdout(data: impl AsRef<[u8]>) -> Vec<Record> {
    run(&mut parser(&[]), data)
}

/// (stream, message, fields) of each record, the parts most tests compare.
fn view(records: &[Record]) -> Vec<(Stream, String, Value)> {
    records
        .iter()
        .map(|r| {
            let fields = r.fields.clone().map_or(Value::Null, Value::Object);
            (r.stream, r.message.clone(), fields)
        })
        .collect()
}

fn messages(records: &[Record]) -> Vec<&str> {
    records.iter().map(|r| r.message.as_str()).collect()
}

fn assert_gapless(records: &[Record]) {
    let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
    let expected: Vec<u64> = (1..=records.len() as u64).collect();
    assert_eq!(seqs, expected);
}

/// The text a viewer would reassemble: continued pieces glued to their line.
fn rejoin(records: &[Record]) -> String {
    let mut text = String::new();
    for (n, r) in records.iter().enumerate() {
        let continued = r
            .fields
            .as_ref()
            .is_some_and(|f| f.contains_key("continued"));
        if n > 0 && !continued {
            text.push('\n');
        }
        text.push_str(&r.message);
    }
    text
}

#[test]
fn lines_become_records_of_their_stream_in_order() {
    let mut log = parser(&[]);
    let mut out = Vec::new();
    log.push(Source::Stdout, b"one\ntw", t(1), &mut out);
    log.push(Source::Stderr, b"oops\n", t(2), &mut out);
    log.push(Source::Stdout, b"o\n\n", t(3), &mut out);
    log.finish(t(4), &mut out);
    assert_eq!(
        view(&out),
        vec![
            (Stream::Output, "one".into(), Value::Null),
            (Stream::Error, "oops".into(), Value::Null),
            (Stream::Output, "two".into(), Value::Null),
            (Stream::Output, "".into(), Value::Null),
        ]
    );
    assert_gapless(&out);
    // ts is that of the push that completed the line.
    let ts: Vec<i64> = out.iter().map(|r| r.ts.0).collect();
    assert_eq!(ts, [1, 2, 3, 3]);
    let s = log.summary();
    assert_eq!((s.records, s.bytes, s.truncated), (4, 10, false));
    assert_eq!(s.streams.get(Stream::Output), 3);
    assert_eq!(s.streams.get(Stream::Error), 1);
}

#[test]
fn crlf_is_stripped_but_inner_cr_kept() {
    let out = run_stdout("a\r\nb\rc\r\n\r\nd\r\r\n");
    assert_eq!(messages(&out), ["a", "b\rc", "", "d\r"]);
}

#[test]
fn invalid_utf8_is_replaced_and_controls_kept() {
    let out = run_stdout(b"a\xffb\0c\x1b[31mred\x07\n\xe2\x82\n");
    assert_eq!(messages(&out), ["a\u{FFFD}b\0c\x1b[31mred\x07", "\u{FFFD}"]);
}

#[test]
fn message_commands_map_to_streams() {
    let out = run_stdout(
        "::error::e\n::warning::w\n::notice::n\n::info::i\n::verbose::v\n::debug::d\n::progress::p\n",
    );
    let streams: Vec<Stream> = out.iter().map(|r| r.stream).collect();
    assert_eq!(
        streams,
        [
            Stream::Error,
            Stream::Warning,
            Stream::Information,
            Stream::Information,
            Stream::Verbose,
            Stream::Debug,
            Stream::Progress
        ]
    );
    assert_eq!(messages(&out), ["e", "w", "n", "i", "v", "d", "p"]);
    assert!(out.iter().all(|r| r.fields.is_none()));
}

#[test]
fn commands_work_on_stderr_too() {
    let mut log = parser(&[]);
    let mut out = push(&mut log, Source::Stderr, "::warning::careful\nplain\n");
    log.finish(t(2), &mut out);
    assert_eq!(
        view(&out),
        vec![
            (Stream::Warning, "careful".into(), Value::Null),
            (Stream::Error, "plain".into(), Value::Null),
        ]
    );
}

#[test]
fn params_become_fields() {
    let out = run_stdout(
        "::warning file=app.py,line=3,col=-1.5::deprecated call\n::progress percent=40::Copying files\n",
    );
    assert_eq!(
        view(&out),
        vec![
            (
                Stream::Warning,
                "deprecated call".into(),
                json!({"file": "app.py", "line": 3, "col": -1.5})
            ),
            (
                Stream::Progress,
                "Copying files".into(),
                json!({"percent": 40})
            ),
        ]
    );
}

#[test]
fn escapes_in_params_and_message() {
    let out = run_stdout("::error title=a%2Cb%3Ac%25::50%25 done%0Anext%0Dx %3A\n");
    assert_eq!(
        view(&out),
        vec![(
            Stream::Error,
            "50% done\nnext\rx %3A".into(),
            json!({"title": "a,b:c%"})
        )]
    );
}

#[test]
fn groups() {
    let out = run_stdout("::group::Build step\nx\n::endgroup::\n");
    assert_eq!(
        view(&out),
        vec![
            (
                Stream::Information,
                "Build step".into(),
                json!({"group": "start"})
            ),
            (Stream::Output, "x".into(), Value::Null),
            (Stream::Information, "".into(), json!({"group": "end"})),
        ]
    );
}

#[test]
fn unknown_and_malformed_commands_are_ordinary_lines() {
    let input = [
        "::",
        "::::",
        "::warning",
        "::warning no close",
        "::set-output name=x::y",
        "::warning file::x",
        "::stop-commands::",
        " ::warning::indented",
        "text ::error::mid-line",
    ];
    let out = run_stdout(input.join("\n") + "\n");
    assert_eq!(messages(&out), input);
    assert!(out
        .iter()
        .all(|r| r.stream == Stream::Output && r.fields.is_none()));
}

#[test]
fn set_result_valid_is_taken_not_stored() {
    let mut log = parser(&[]);
    let out = run(&mut log, "::set-result:: {\"ok\": [1, 2]} \nafter\n");
    assert_eq!(messages(&out), ["after"]);
    assert_eq!(
        log.take_result(),
        Some(ResultText::Valid("{\"ok\": [1, 2]}".into()))
    );
    assert_eq!(log.take_result(), None);
}

#[test]
fn set_result_invalid_is_an_error_record_without_the_value() {
    let mut log = parser(&[]);
    let out = run(&mut log, "::set-result::{\"token\": s3cr3tvalue}\n");
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].stream, Stream::Error);
    assert!(
        out[0].message.contains("not valid JSON"),
        "{}",
        out[0].message
    );
    assert!(out[0].message.contains("column"), "{}", out[0].message);
    assert!(!out[0].message.contains("s3cr3t"), "{}", out[0].message);
    match log.take_result() {
        Some(ResultText::Invalid(reason)) => assert_eq!(reason, out[0].message),
        other => panic!("{other:?}"),
    }
}

#[test]
fn last_set_result_wins_and_unterminated_one_counts_at_finish() {
    let mut log = parser(&[]);
    let out = run(&mut log, "::set-result::1\n::set-result::[2]");
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(log.take_result(), Some(ResultText::Valid("[2]".into())));
}

#[test]
fn secrets_are_masked_in_messages_and_fields() {
    let mut log = parser(&["hunter2", "", "  spaced  "]);
    let out = run(
        &mut log,
        "pw=hunter2!\n::warning file=hunter2.txt,hunter2=1,n=12::x hunter2\nspaced\n",
    );
    assert_eq!(
        view(&out),
        vec![
            (Stream::Output, "pw=***!".into(), Value::Null),
            (
                Stream::Warning,
                "x ***".into(),
                json!({"file": "***.txt", "***": 1, "n": 12})
            ),
            (Stream::Output, "***".into(), Value::Null),
        ]
    );
}

#[test]
fn masked_number_param_stays_masked() {
    let out = run(&mut parser(&["12345"]), "::warning line=12345::x\n");
    assert_eq!(out[0].fields, json!({"line": "***"}).as_object().cloned());
}

#[test]
fn base64_forms_of_secrets_are_masked() {
    let secret = "s3cr3t-Pa55word";
    let mut log = parser(&[secret]);
    let mut lines = vec![
        STANDARD.encode(secret),
        STANDARD.encode(secret).trim_end_matches('=').to_string(),
    ];
    // Offsets 0, 1 and 2 inside longer encoded strings, e.g. HTTP basic auth.
    for prefix in ["", "u", "user:", "ab"] {
        for suffix in ["", "x", "yz"] {
            lines.push(STANDARD.encode(format!("{prefix}{secret}{suffix}")));
        }
    }
    let out = run(&mut log, lines.join("\n") + "\n");
    assert_eq!(out.len(), lines.len());
    for (record, line) in out.iter().zip(&lines) {
        assert!(
            record.message.contains("***"),
            "{line} -> {}",
            record.message
        );
        // Only the few characters that also depend on neighbouring bytes remain.
        assert!(
            record.message.len() <= 3 + 3 + 8 + 3,
            "{line} -> {}",
            record.message
        );
    }
}

#[test]
fn add_mask_applies_to_later_records_only_and_is_not_stored() {
    let mut log = parser(&[]);
    let out = run(
        &mut log,
        "before tok3n\n::add-mask::  tok3n \r\nafter tok3n\n::add-mask::\n::add-mask::   \n",
    );
    assert_eq!(messages(&out), ["before tok3n", "after ***"]);
    let mut out = Vec::new();
    log.note(
        Stream::Error,
        "failed: tok3n",
        json!({"arg": "tok3n"}).as_object().cloned(),
        t(3),
        &mut out,
    );
    assert_eq!(
        view(&out),
        vec![(Stream::Error, "failed: ***".into(), json!({"arg": "***"}))]
    );
    assert_eq!(out[0].seq, 3);
}

#[test]
fn add_mask_value_is_unescaped_and_masks_base64() {
    let out = run_stdout(format!(
        "::add-mask::multi%0Aline\nmulti\nline\n{}\n",
        STANDARD.encode("multi\nline")
    ));
    // A masked value containing a newline cannot appear within one line;
    // its base64 form can.
    assert_eq!(messages(&out), ["multi", "line", "***"]);
}

#[test]
fn multi_line_secret_is_masked_line_by_line() {
    let out = run(
        &mut parser(&["-----BEGIN KEY-----\nAAAAsecretbody\n-----END KEY-----\n"]),
        "AAAAsecretbody\n",
    );
    assert_eq!(messages(&out), ["***"]);
}

#[test]
fn too_many_masks_are_refused_loudly() {
    let mut input = String::new();
    for n in 0..=MAX_ADDED_MASKS {
        input.push_str(&format!("::add-mask::value-{n:05}\n"));
    }
    input.push_str("value-00000 value-01024\n");
    let out = run_stdout(input);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].stream, Stream::Warning);
    assert!(
        out[0].message.contains("at most 1024"),
        "{}",
        out[0].message
    );
    assert!(!out[0].message.contains("value-"));
    assert_eq!(out[1].message, "*** value-01024");
}

#[test]
fn masks_over_the_byte_budget_are_refused_loudly() {
    let mut input = String::new();
    for c in ['a', 'b', 'c', 'd', 'e'] {
        input.push_str(&format!("::add-mask::{}\n", c.to_string().repeat(60_000)));
    }
    input.push_str(&format!("{} {}\n", "a".repeat(60_000), "e".repeat(60_000)));
    let out = run_stdout(input);
    assert_eq!(out[0].stream, Stream::Warning);
    assert!(out[0].message.contains("256 KiB"), "{}", out[0].message);
    assert_eq!(rejoin(&out[1..]), format!("*** {}", "e".repeat(60_000)));
}

#[test]
fn stop_commands_suspends_interpretation() {
    let mut log = parser(&[]);
    let out = run(
        &mut log,
        "::stop-commands::tok\n::warning::not a warning\n::add-mask::visible\n::set-result::{}\n::tok:: \n::tok::\n::warning::real\nvisible\n",
    );
    assert_eq!(
        view(&out),
        vec![
            (
                Stream::Output,
                "::warning::not a warning".into(),
                Value::Null
            ),
            (Stream::Output, "::add-mask::visible".into(), Value::Null),
            (Stream::Output, "::set-result::{}".into(), Value::Null),
            (Stream::Output, "::tok:: ".into(), Value::Null),
            (Stream::Warning, "real".into(), Value::Null),
            (Stream::Output, "visible".into(), Value::Null),
        ]
    );
    assert_eq!(log.take_result(), None);
}

#[test]
fn partial_line_is_flushed_and_continued() {
    let mut log = parser(&[]);
    let mut out = push(&mut log, Source::Stdout, "working...");
    assert!(out.is_empty());
    assert!(log.has_partial(Source::Stdout));
    log.flush_partial(Source::Stdout, t(5), &mut out);
    assert!(!log.has_partial(Source::Stdout));
    out.extend(push(&mut log, Source::Stdout, " done\r\nnext"));
    log.flush_partial(Source::Stdout, t(6), &mut out);
    out.extend(push(&mut log, Source::Stdout, "\n"));
    log.finish(t(9), &mut out);
    assert_eq!(
        view(&out),
        vec![
            (Stream::Output, "working...".into(), Value::Null),
            (Stream::Output, " done".into(), json!({"continued": true})),
            (Stream::Output, "next".into(), Value::Null),
        ]
    );
    assert_eq!(out[0].ts, t(5));
    assert_gapless(&out);
}

#[test]
fn flush_holds_back_cr_incomplete_utf8_and_mask_prefixes() {
    let mut log = parser(&["hunter2"]);
    let mut out = push(&mut log, Source::Stdout, b"a\r");
    log.flush_partial(Source::Stdout, t(1), &mut out);
    out.extend(push(&mut log, Source::Stdout, b"\nb\xc3"));
    log.flush_partial(Source::Stdout, t(1), &mut out);
    out.extend(push(&mut log, Source::Stdout, b"\xa9 pw: hun"));
    log.flush_partial(Source::Stdout, t(1), &mut out);
    out.extend(push(&mut log, Source::Stdout, b"ter2 ok\n"));
    assert_eq!(
        view(&out),
        vec![
            (Stream::Output, "a".into(), Value::Null),
            (Stream::Output, "b".into(), Value::Null),
            (Stream::Output, "é pw: ".into(), json!({"continued": true})),
            (Stream::Output, "*** ok".into(), json!({"continued": true})),
        ]
    );
}

#[test]
fn command_like_partial_is_not_flushed() {
    let mut log = parser(&[]);
    let mut out = Vec::new();
    for piece in [":", ":add-", "mask::", "s3cret"] {
        out.extend(push(&mut log, Source::Stdout, piece));
        log.flush_partial(Source::Stdout, t(1), &mut out);
        assert!(out.is_empty(), "flushed after {piece:?}: {out:?}");
    }
    out.extend(push(&mut log, Source::Stdout, "\nmy s3cret\n:x"));
    log.flush_partial(Source::Stdout, t(1), &mut out);
    assert_eq!(messages(&out), ["my ***", ":x"]);
}

#[test]
fn long_lines_are_split_with_continued_pieces() {
    let line = "x".repeat(KIB64 * 2 + 10);
    let out = run_stdout(format!("{line}\nshort\n"));
    let lens: Vec<usize> = out.iter().map(|r| r.message.len()).collect();
    assert_eq!(lens, [KIB64, KIB64, 10, 5]);
    assert_eq!(out[0].fields, None);
    assert_eq!(out[1].fields, Some(continued()));
    assert_eq!(out[2].fields, Some(continued()));
    assert_eq!(out[3].fields, None);
}

#[test]
fn line_just_over_the_limit_is_split_even_with_masks() {
    // With masks the buffer keeps a margin past line_max; a line ending
    // inside that margin must still be split.
    for extra in [1, 5, 20] {
        let line = "x".repeat(KIB64 + extra);
        let out = run(&mut parser(&["a-long-secret-value"]), format!("{line}\n"));
        let lens: Vec<usize> = out.iter().map(|r| r.message.len()).collect();
        assert_eq!(lens, [KIB64, extra]);
    }
}

#[test]
fn long_command_line_keeps_its_stream_for_continuations() {
    let out = run_stdout(format!("::warning::{}\n", "w".repeat(KIB64)));
    assert_eq!(out.len(), 2);
    assert!(out.iter().all(|r| r.stream == Stream::Warning));
    assert_eq!(out[1].fields, Some(continued()));
    assert_eq!(out[0].message.len() + out[1].message.len(), KIB64);
}

#[test]
fn overlong_add_mask_is_never_stored() {
    let value = "v".repeat(KIB64 + 100);
    let out = run_stdout(format!("::add-mask::{value}\nafter\n"));
    assert_eq!(out.len(), 2, "{:?}", messages(&out));
    assert_eq!(out[0].stream, Stream::Warning);
    assert!(!out[0].message.contains("vvvv"));
    assert_eq!(out[1].message, "after");
}

#[test]
fn overlong_set_result_is_refused_clearly() {
    let mut log = parser(&[]);
    let out = run(
        &mut log,
        format!("::set-result::[\"{}\"]\nafter\n", "r".repeat(KIB64)),
    );
    assert_eq!(messages(&out)[1], "after");
    assert!(
        out[0].message.contains("JOBLOG_RESULT"),
        "{}",
        out[0].message
    );
    assert!(matches!(log.take_result(), Some(ResultText::Invalid(_))));
}

#[test]
fn split_never_cuts_a_utf8_character() {
    // 3-byte characters: 65536 is not a multiple of 3.
    let line = "€".repeat(30_000);
    let out = run_stdout(format!("{line}\n"));
    assert!(out.len() > 1);
    assert!(out.iter().all(|r| !r.message.contains('\u{FFFD}')));
    assert!(out.iter().all(|r| r.message.len() <= KIB64));
    assert_eq!(rejoin(&out), line);
}

#[test]
fn secret_straddling_the_split_is_masked() {
    let secret = "hunter2-secret";
    for offset in KIB64 - secret.len() - 1..=KIB64 + 1 {
        let line = format!("{}{secret}{}", "a".repeat(offset), "b".repeat(100));
        for chunk in [line.len() + 1, 8192, 1000] {
            let mut log = parser(&[secret]);
            let mut out = Vec::new();
            for piece in format!("{line}\n").as_bytes().chunks(chunk) {
                log.push(Source::Stdout, piece, t(1), &mut out);
            }
            log.finish(t(2), &mut out);
            assert!(out.len() >= 2, "offset {offset}");
            assert!(out.iter().all(|r| r.message.len() <= KIB64));
            assert_eq!(
                rejoin(&out),
                format!("{}***{}", "a".repeat(offset), "b".repeat(100)),
                "offset {offset}, chunk {chunk}"
            );
        }
    }
}

#[test]
fn streaming_a_huge_line_keeps_the_buffer_small() {
    let mut log = parser(&["some-secret"]);
    let bound = KIB64 + 64;
    let piece = vec![b'z'; 8192];
    let total = 20 * 1024 * 1024;
    let mut records = 0;
    let mut out = Vec::new();
    for _ in 0..total / piece.len() {
        log.push(Source::Stdout, &piece, t(1), &mut out);
        assert!(log.buffered_bytes() <= bound, "{}", log.buffered_bytes());
        records += out.len();
        assert!(out.iter().all(|r| r.message.len() == KIB64));
        out.clear();
    }
    log.finish(t(2), &mut out);
    records += out.len();
    assert_eq!(records, total / KIB64);
    assert_eq!(log.buffered_bytes(), 0);

    // One 20 MB read is not copied whole either.
    let mut log = parser(&[]);
    let data = vec![b'z'; total];
    log.push(Source::Stdout, &data, t(1), &mut out);
    assert!(log.buffered_bytes() <= bound);
}

#[test]
fn cap_keeps_head_marker_and_tail() {
    let limits = LogLimits {
        max_records: 100,
        tail_records: 10,
        ..LogLimits::default()
    };
    let mut log = OutputParser::new(limits, Vec::new());
    let mut out = Vec::new();
    for n in 1..=1000 {
        log.push(
            Source::Stdout,
            format!("line {n}\n").as_bytes(),
            t(n),
            &mut out,
        );
    }
    assert_eq!(out.len(), 90);
    assert!(log.summary().truncated);
    log.finish(t(2000), &mut out);
    assert_eq!(out.len(), 101);
    assert_gapless(&out);
    assert_eq!(out[89].message, "line 90");
    let marker = &out[90];
    assert_eq!(marker.stream, Stream::Warning);
    let dropped_bytes: usize = (91..=990).map(|n| format!("line {n}").len()).sum();
    assert_eq!(
        marker.fields,
        json!({"truncated": true, "dropped_records": 900, "dropped_bytes": dropped_bytes})
            .as_object()
            .cloned()
    );
    assert_eq!(
        marker.message,
        "joblog dropped 900 records (7.0 KiB) over the log cap (100 records or 512 MiB); the last 10 records follow"
    );
    assert_eq!(marker.ts, t(991));
    let tail: Vec<String> = (991..=1000).map(|n| format!("line {n}")).collect();
    assert_eq!(messages(&out[91..]), tail);
    let s = log.summary();
    assert_eq!((s.records, s.truncated), (101, true));
    assert_eq!(s.streams.get(Stream::Warning), 1);
}

#[test]
fn cap_by_bytes_keeps_a_bounded_tail() {
    let limits = LogLimits {
        max_bytes: 1000,
        tail_bytes: 100,
        ..LogLimits::default()
    };
    let mut log = OutputParser::new(limits, Vec::new());
    let line = format!("{}\n", "x".repeat(9));
    let out = run(&mut log, line.repeat(500));
    // 100 lines fill the 900-byte head, 11 lines the 100-byte tail.
    assert_eq!(out.len(), 100 + 1 + 11);
    assert_eq!(
        out[100].fields.as_ref().unwrap()["dropped_records"],
        json!(389)
    );
    assert_gapless(&out);
}

#[test]
fn a_record_that_fits_the_head_never_overtakes_the_tail() {
    let limits = LogLimits {
        max_bytes: 1000,
        tail_bytes: 100,
        ..LogLimits::default()
    };
    let mut log = OutputParser::new(limits, Vec::new());
    let input = format!("{}{}\nx\n", "123456789\n".repeat(94), "y".repeat(60));
    // 846 bytes in the head; the long line does not fit in its 900, "x" would.
    let out = run(&mut log, input);
    assert_eq!(out.len(), 96);
    assert_eq!(messages(&out[94..]), [&"y".repeat(60), "x"]);
    assert_gapless(&out);
}

#[test]
fn tail_is_emitted_unmarked_when_nothing_was_dropped() {
    let limits = LogLimits {
        max_records: 100,
        tail_records: 10,
        ..LogLimits::default()
    };
    let mut log = OutputParser::new(limits, Vec::new());
    let mut out = Vec::new();
    for n in 1..=95 {
        log.push(Source::Stdout, format!("{n}\n").as_bytes(), t(n), &mut out);
    }
    assert_eq!(out.len(), 90);
    log.finish(t(100), &mut out);
    assert_eq!(out.len(), 95);
    assert_gapless(&out);
    assert_eq!(out[94].message, "95");
    assert_eq!(out[94].ts, t(95));
    assert!(!log.summary().truncated);
}

/// A deterministic mix of the input that tends to break line splitters.
fn tricky_input(seed: u64, len: usize) -> Vec<u8> {
    const TOKENS: [&[u8]; 22] = [
        b"\n",
        b"\r\n",
        b"\r",
        b":",
        b"::",
        b"::warning a=1,b=x%2C::w",
        b"::add-mask::sec",
        b"::stop-commands::T",
        b"::T::",
        b"::group::g",
        b"::set-result::{\"a\":1}",
        b"::set-result::nope",
        b"topsecret",
        b"dG9wc2VjcmV0",
        b"hello ",
        b"\xc3\xa9",
        b"\xe2\x82\xac",
        b"\xff",
        b"\0",
        b"%0A",
        b"0123456789abcdefghijklmnopqrstuvwxyz",
        b"=,",
    ];
    let mut state = seed;
    let mut data = Vec::new();
    while data.len() < len {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        data.extend_from_slice(TOKENS[(state >> 33) as usize % TOKENS.len()]);
    }
    data
}

fn small_limits() -> LogLimits {
    LogLimits {
        line_max: 16,
        ..LogLimits::default()
    }
}

fn feed_in_chunks(
    data: &[u8],
    sizes: impl Fn(usize) -> usize,
) -> (Vec<Record>, Option<ResultText>) {
    let mut log = OutputParser::new(small_limits(), vec!["topsecret".to_string()]);
    let mut out = Vec::new();
    let mut rest = data;
    let mut n = 0;
    while !rest.is_empty() {
        let size = sizes(n).clamp(1, rest.len());
        log.push(Source::Stdout, &rest[..size], t(n as i64), &mut out);
        rest = &rest[size..];
        n += 1;
    }
    log.finish(t(0), &mut out);
    for r in &mut out {
        r.ts = t(0);
    }
    (out, log.take_result())
}

#[test]
fn chunking_does_not_change_the_records() {
    for seed in 0..20 {
        let data = tricky_input(seed, 3000);
        let whole = feed_in_chunks(&data, |_| usize::MAX);
        assert!(whole.0.len() > 50);
        assert_gapless(&whole.0);
        let bytewise = feed_in_chunks(&data, |_| 1);
        assert_eq!(whole, bytewise, "seed {seed}, byte by byte");
        let uneven = feed_in_chunks(&data, |n| (n * 7919) % 23);
        assert_eq!(whole, uneven, "seed {seed}, uneven chunks");
    }
}

#[test]
fn flushes_at_any_point_never_leak_a_secret_or_break_seq() {
    for seed in 0..20 {
        let data = tricky_input(seed, 3000);
        for every in [1, 2, 5, 13] {
            let mut log = OutputParser::new(small_limits(), vec!["topsecret".to_string()]);
            let mut out = Vec::new();
            for (n, piece) in data.chunks(3).enumerate() {
                let src = if n % 50 < 25 {
                    Source::Stdout
                } else {
                    Source::Stderr
                };
                log.push(src, piece, t(1), &mut out);
                if n % every == 0 {
                    log.flush_partial(src, t(1), &mut out);
                    log.flush_partial(Source::Stdout, t(1), &mut out);
                }
                // line_max plus the longest masked form (hex: 2 bytes a
                // byte of the secret) per pipe.
                assert!(log.buffered_bytes() <= 2 * (16 + 2 * "topsecret".len()));
            }
            log.finish(t(2), &mut out);
            assert_gapless(&out);
            for src in [Stream::Output, Stream::Error] {
                let mine: Vec<Record> = out.iter().filter(|r| r.stream == src).cloned().collect();
                let text = rejoin(&mine);
                assert!(!text.contains("topsecret"), "seed {seed}: {text}");
                assert!(!text.contains("dG9wc2VjcmV0"), "seed {seed}: {text}");
            }
        }
    }
}

#[test]
fn degenerate_inputs_do_not_panic() {
    let limits = LogLimits {
        max_records: 0,
        max_bytes: 0,
        tail_records: 5,
        tail_bytes: 5,
        line_max: 0,
    };
    let mut log = OutputParser::new(limits, vec![String::new(), "é".to_string()]);
    let mut out = Vec::new();
    for data in [
        &b""[..],
        b"::",
        b"\n",
        b"\xe2\x82",
        b"::add-mask::\n",
        b"\xff\xfe\n",
    ] {
        log.push(Source::Stdout, data, t(1), &mut out);
        log.flush_partial(Source::Stdout, t(1), &mut out);
    }
    log.finish(t(2), &mut out);
    log.finish(t(3), &mut out);
    assert_gapless(&out);
    assert!(log.summary().truncated);
}
