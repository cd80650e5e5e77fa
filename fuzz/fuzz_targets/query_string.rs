//! Any query string — the input's bytes, `&`, `=`, `%` and `+` as they are
//! and every other byte percent-encoded — through the query extractor into
//! the parameters of each route that takes some, checked as its handler
//! checks them. Nothing panics; a refusal is `400 invalid_query` with a
//! message.

#![no_main]

use joblog_api::ErrorCode;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let query: String = data
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || b"&=%+-._~,".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let routes = joblog_api::fuzzing::query(&query).expect("an encoded query fits a URL");
    for route in routes {
        if let Err(e) = route {
            assert_eq!(e.code, ErrorCode::InvalidQuery, "{query}: {e}");
            assert!(!e.message.is_empty(), "{query}");
        }
    }
});
