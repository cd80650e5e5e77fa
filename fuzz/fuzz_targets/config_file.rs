//! Any text as `joblog.toml`, with a `token` or `database` line written
//! into it: read, typed and checked as `joblog serve` does. Nothing
//! panics; an error says where (file, line, column) or which setting, and
//! never shows the secret.

#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    before: String,
    secret: String,
    /// How the secret is written: quoted several ways, or bare.
    form: u8,
    after: String,
}

/// Starts every secret, so that any part of one shown is found.
const MARK: &str = "S3CR3T-";

fuzz_target!(|input: Input| {
    let secret = format!("{MARK}{}", input.secret);
    let value = match input.form % 4 {
        0 => format!("\"{secret}\""),
        1 => format!("'{secret}'"),
        2 => format!("\"\"\"{secret}\"\"\""),
        _ => secret,
    };
    let key = if input.form & 4 == 0 {
        "token"
    } else {
        "database"
    };
    let text = format!("{}\n{key} = {value}\n{}", input.before, input.after);
    if let Err(e) = joblog::fuzzing::config_file(&text) {
        assert!(!e.is_empty());
        let elsewhere = input.before.contains(MARK) || input.after.contains(MARK);
        assert!(elsewhere || !e.contains(MARK), "the secret in {e:?}");
    }
});
