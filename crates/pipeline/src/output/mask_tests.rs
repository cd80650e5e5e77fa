//! Regressions of a hostile-input probe's masking findings: encoded forms
//! of a secret, secrets in results, and `::add-mask::` after a partial
//! line.

use super::*;

fn t(n: i64) -> Timestamp {
    Timestamp(n)
}

fn all_text(records: &[Record]) -> String {
    records
        .iter()
        .map(|r| {
            let fields = r
                .fields
                .as_ref()
                .map(|f| Value::Object(f.clone()).to_string())
                .unwrap_or_default();
            format!("{}\t{fields}\n", r.message)
        })
        .collect()
}

const SECRET: &str = "p@ss w/rd\"é!";

/// Every form the probe leaked, and the ones beside them: none may be
/// stored, however the value was written.
#[test]
fn url_json_and_hex_forms_of_a_secret_are_masked() {
    let forms = [
        "p%40ss%20w%2Frd%22%C3%A9%21", // percent-encoded
        "p%40ss+w%2Frd%22%C3%A9%21",   // form-encoded
        "p%40ss%20w%2frd%22%c3%a9%21", // lower-case hex
        r#"p@ss w/rd\"é!"#,            // JSON (serde, Rust, JS)
        r#"p@ss w\/rd\"é!"#,           // JSON with \/ (PHP, some Go)
        r#"p@ss w/rd\"\u00e9!"#,       // JSON, ASCII only (Python)
        "7040737320772f726422c3a921",  // hex
        "7040737320772F726422C3A921",  // HEX
    ];
    let mut log = OutputParser::new(LogLimits::default(), [SECRET.to_string()]);
    let mut out = Vec::new();
    for form in forms {
        log.push(
            Source::Stdout,
            format!("url=https://x/?pw={form}&next=1\n").as_bytes(),
            t(1),
            &mut out,
        );
    }
    log.finish(t(2), &mut out);
    let text = all_text(&out);
    for form in forms {
        assert!(!text.contains(form), "{form} leaked: {text}");
    }
    assert_eq!(text.matches("***").count(), forms.len(), "{text}");
}

/// A short value's hex form is not added: it would hide ordinary numbers.
#[test]
fn short_values_add_no_encoded_forms_that_match_ordinary_text() {
    let mut log = OutputParser::new(LogLimits::default(), ["ab".to_string()]);
    let mut out = Vec::new();
    log.push(Source::Stdout, b"x=ab 6162 ab\n", t(1), &mut out);
    log.finish(t(2), &mut out);
    assert_eq!(out[0].message, "x=*** 6162 ***");
}

/// `printf 'working... '; echo '::add-mask::S'`: the command follows a
/// partial line, in one read, after an idle flush, or cut by one.
#[test]
fn add_mask_after_a_partial_line_is_recognised_however_it_arrives() {
    let value = "S3CRET-VALUE-42";
    let cases: Vec<Vec<Option<&str>>> = vec![
        // Some(bytes) is a read; None an idle flush.
        vec![Some(
            "working... ::add-mask::S3CRET-VALUE-42\nusing S3CRET-VALUE-42\n",
        )],
        vec![
            Some("working... "),
            None,
            Some("::add-mask::S3CRET-VALUE-42\n"),
            Some("using S3CRET-VALUE-42\n"),
        ],
        vec![
            Some("working... ::add-mask::S3CR"),
            None,
            Some("ET-VALUE-42\nusing S3CRET-VALUE-42\n"),
        ],
        vec![
            Some("working... ::add-m"),
            None,
            Some("ask::S3CRET-VALUE-42\nusing S3CRET-VALUE-42\n"),
        ],
        vec![
            Some("::warning::careful ::add-mask::S3CRET-VALUE-42\n"),
            Some("using S3CRET-VALUE-42\n"),
        ],
    ];
    for case in cases {
        let mut log = OutputParser::new(LogLimits::default(), Vec::<String>::new());
        let mut out = Vec::new();
        for step in &case {
            match step {
                Some(bytes) => log.push(Source::Stdout, bytes.as_bytes(), t(1), &mut out),
                None => log.flush_partial(Source::Stdout, t(1), &mut out),
            }
        }
        log.finish(t(2), &mut out);
        let text = all_text(&out);
        for part in ["S3CRET", "VALUE-42", value] {
            assert!(!text.contains(part), "{case:?}: {part} leaked in {text}");
        }
        assert!(text.contains("using ***"), "{case:?}: {text}");
        assert!(
            text.contains("careful") || text.contains("working..."),
            "{text}"
        );
    }
}

/// While `::stop-commands::` is in effect nothing is a command, not even
/// `::add-mask::` (as in GitHub Actions); masks registered before keep
/// working.
#[test]
fn after_stop_commands_earlier_masks_hold_and_add_mask_is_text() {
    let mut log = OutputParser::new(LogLimits::default(), Vec::<String>::new());
    let mut out = Vec::new();
    log.push(
        Source::Stdout,
        b"::add-mask::EARLIER-SECRET\n::stop-commands::tok123\nEARLIER-SECRET\nx ::add-mask::plain\n::tok123::\n",
        t(1),
        &mut out,
    );
    log.finish(t(2), &mut out);
    assert_eq!(
        out.iter().map(|r| r.message.as_str()).collect::<Vec<_>>(),
        ["***", "x ::add-mask::plain"]
    );
}

#[test]
fn results_are_masked_in_keys_strings_and_numbers_and_kept_as_written_otherwise() {
    let mut log = OutputParser::new(
        LogLimits::default(),
        ["hunter2-secret".to_string(), "8675309".to_string()],
    );
    let untouched = br#"{"b": 1,  "a": "plain"}"#.to_vec();
    assert_eq!(
        log.mask_result(untouched.clone()),
        untouched,
        "byte for byte"
    );
    let body = br#"{"token": "hunter2-secret", "hunter2-secret": 1, "url": "x?t=hunter2-secret", "esc": "\u0068unter2-secret", "pin": 8675309, "n": 8675}"#;
    let masked = String::from_utf8(log.mask_result(body.to_vec())).unwrap();
    assert!(
        !masked.contains("hunter2") && !masked.contains("8675309"),
        "{masked}"
    );
    let v: Value = serde_json::from_str(&masked).expect("still JSON");
    assert_eq!(v["token"], "***");
    assert_eq!(v["***"], 1);
    assert_eq!(v["url"], "x?t=***");
    assert_eq!(v["esc"], "***");
    assert_eq!(v["pin"], "***");
    assert_eq!(v["n"], 8675);
    // A mask added by the job counts too.
    let mut out = Vec::new();
    log.push(Source::Stdout, b"::add-mask::later-value\n", t(1), &mut out);
    let masked = log.mask_result(br#"["later-value"]"#.to_vec());
    assert_eq!(masked, br#"["***"]"#.to_vec());
}
