//! Any text through the workflow command parser, line by line, and through
//! a whole `OutputParser`. Nothing panics; a line taken for a command
//! starts with `::` and its name and ends with its message, and names
//! every parameter; undoing escapes never makes text longer.

#![no_main]

use joblog_core::Timestamp;
use joblog_pipeline::{fuzzing, LogLimits, OutputParser, Source};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for line in text.split('\n') {
        if let Some(command) = fuzzing::parse_command(line) {
            assert!(line.starts_with(&format!("::{}", command.name)), "{line:?}");
            assert!(line.ends_with(&command.message), "{line:?}");
            assert!(
                command.params.iter().all(|(k, _)| !k.is_empty()),
                "{line:?}"
            );
        }
        for param in [false, true] {
            assert!(
                fuzzing::unescape(line, param).len() <= line.len(),
                "{line:?}"
            );
        }
    }
    let mut parser = OutputParser::new(LogLimits::default(), Vec::<String>::new());
    let mut out = Vec::new();
    parser.push(Source::Stdout, data, Timestamp(1), &mut out);
    parser.finish(Timestamp(2), &mut out);
});
