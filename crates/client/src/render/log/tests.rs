//! Records as text and as JSON lines, in each layout.

use serde_json::json;

use super::*;

fn rec(stream: &str, message: &str, fields: Option<Value>) -> LogRecord {
    LogRecord {
        seq: 1,
        ts: "2026-11-22T10:15:02.123456Z".into(),
        stream: stream.into(),
        message: message.into(),
        fields: fields.and_then(|f| f.as_object().cloned()),
    }
}

const PLAIN: Style = Style {
    timestamps: false,
    keep_sgr: false,
    colour: false,
    label_errors: false,
};

#[test]
fn record_rendering() {
    let r = |s, m, f| render_record(&rec(s, m, f), PLAIN);
    assert_eq!(r("output", "hello", None).unwrap(), "hello");
    assert_eq!(r("error", "boom", None).unwrap(), "boom");
    assert_eq!(r("warning", "careful", None).unwrap(), "warning: careful");
    assert_eq!(r("information", "fyi", None).unwrap(), "info: fyi");
    assert_eq!(r("debug", "d", None).unwrap(), "debug: d");
    assert_eq!(
        r("progress", "Copying", Some(json!({"percent": 40}))).unwrap(),
        "progress 40%: Copying"
    );
    assert_eq!(r("progress", "Copying", None).unwrap(), "progress: Copying");
    assert_eq!(
        r("information", "Build", Some(json!({"group": "start"}))).unwrap(),
        "▸ Build"
    );
    assert_eq!(r("information", "", Some(json!({"group": "end"}))), None);
    assert_eq!(r("future", "x", None).unwrap(), "future: x");
    assert_eq!(r("output", "nul\0", None).unwrap(), "nul\\0");
    let stamped = Style {
        timestamps: true,
        ..PLAIN
    };
    assert_eq!(
        render_record(&rec("warning", "w", None), stamped).unwrap(),
        "2026-11-22T10:15:02.123456Z warning: w"
    );
    let labelled = Style {
        label_errors: true,
        ..PLAIN
    };
    assert_eq!(
        render_record(&rec("error", "boom", None), labelled).unwrap(),
        "error: boom"
    );
    assert_eq!(
        render_record(&rec("output", "hello", None), labelled).unwrap(),
        "hello"
    );
}

#[test]
fn labels_are_coloured_only_when_asked() {
    let coloured = Style {
        colour: true,
        label_errors: true,
        ..PLAIN
    };
    let r = |s, m| render_record(&rec(s, m, None), coloured).unwrap();
    assert_eq!(r("error", "boom"), "\x1b[31merror: \x1b[0mboom");
    assert_eq!(r("warning", "w"), "\x1b[33mwarning: \x1b[0mw");
    assert_eq!(r("debug", "d"), "\x1b[2mdebug: \x1b[0md");
    assert_eq!(r("output", "o"), "o");
    assert!(use_colour(true, None));
    assert!(use_colour(true, Some(std::ffi::OsStr::new(""))));
    assert!(!use_colour(true, Some(std::ffi::OsStr::new("1"))));
    assert!(!use_colour(false, None));
}

fn printer(layout: Layout, json: bool) -> Printer<Vec<u8>, Vec<u8>> {
    let style = Style {
        label_errors: layout == Layout::Stdout,
        ..PLAIN
    };
    Printer {
        out: Vec::new(),
        err: Vec::new(),
        layout,
        out_style: style,
        err_style: style,
        json,
        open_line: None,
        last: None,
    }
}

fn mixed_log(p: &mut Printer<Vec<u8>, Vec<u8>>) {
    p.record(&rec("output", "a", None)).unwrap();
    p.record(&rec("output", "b1", None)).unwrap();
    p.record(&rec("output", "b2", Some(json!({"continued": true}))))
        .unwrap();
    p.record(&rec("error", "e", None)).unwrap();
    p.record(&rec("error", "e2", Some(json!({"continued": true}))))
        .unwrap();
    p.record(&rec("warning", "w", None)).unwrap();
    p.finish().unwrap();
}

#[test]
fn logs_print_every_record_on_stdout() {
    let mut p = printer(Layout::Stdout, false);
    mixed_log(&mut p);
    assert_eq!(
        String::from_utf8(p.out).unwrap(),
        "a\nb1b2\nerror: ee2\nwarning: w\n"
    );
    assert!(p.err.is_empty());
}

#[test]
fn run_splits_streams_and_joins_continued_lines() {
    let mut p = printer(Layout::Split, false);
    mixed_log(&mut p);
    assert_eq!(String::from_utf8(p.out).unwrap(), "a\nb1b2\n");
    assert_eq!(String::from_utf8(p.err).unwrap(), "ee2\nwarning: w\n");
}

#[test]
fn printer_json_lines_keep_api_field_order() {
    let mut p = printer(Layout::Split, true);
    p.record(&rec("warning", "w", Some(json!({"file": "a.py"}))))
        .unwrap();
    p.record(&rec("output", "o", None)).unwrap();
    p.finish().unwrap();
    assert_eq!(
        String::from_utf8(p.out).unwrap(),
        "{\"seq\":1,\"ts\":\"2026-11-22T10:15:02.123456Z\",\"stream\":\"warning\",\"message\":\"w\",\"fields\":{\"file\":\"a.py\"}}\n\
         {\"seq\":1,\"ts\":\"2026-11-22T10:15:02.123456Z\",\"stream\":\"output\",\"message\":\"o\"}\n"
    );
    assert!(p.err.is_empty());
}
