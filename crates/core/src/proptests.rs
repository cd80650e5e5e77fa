//! Every parser of text a client or an operator writes, fed arbitrary
//! Unicode (multi-byte characters where a byte index would cut one, control
//! and format characters, empty and huge strings): none panics, and each
//! refusal says what was wrong. A `joblog.toml` entry ending in `é` once
//! made the server exit 101.

use proptest::prelude::*;

use crate::schedule::{CronExpr, Zone};
use crate::{
    escape_display, parse_byte_size, parse_duration, parse_time_bound, validate_token_name,
    NameFilter, Timestamp,
};

/// Text people type, and text they do not: ASCII cron-ish pieces mixed
/// with any character at all.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[0-9*/,\\- a-zA-Zé✓\u{202e}\u{0}]{0,40}",
        prop::collection::vec(
            prop_oneof![
                Just("é".to_string()),
                Just("*".to_string()),
                Just("/".to_string()),
                Just(" ".to_string()),
                "[0-9]{1,3}",
                any::<char>().prop_map(String::from),
            ],
            0..12
        )
        .prop_map(|parts| parts.concat()),
    ]
}

proptest! {
    #![proptest_config(joblog_testkit::proptest_config(2000))]

    #[test]
    fn cron_and_zones_read_or_refuse_any_text(t in text()) {
        if let Err(e) = CronExpr::parse(&t) {
            prop_assert_eq!(e.field, "cron");
        }
        if let Err(e) = Zone::parse(&t) {
            prop_assert_eq!(e.field, "timezone");
        }
    }

    #[test]
    fn durations_sizes_and_time_bounds_read_or_refuse_any_text(t in text()) {
        let _ = parse_duration(&t);
        let _ = parse_byte_size(&t);
        let _ = parse_time_bound(&t, Timestamp(1_700_000_000_000_000));
    }

    #[test]
    fn names_patterns_and_escapes_take_any_text(t in text(), name in text()) {
        let _ = validate_token_name(&t);
        let _ = NameFilter::parse(&t).matches(&name);
        let shown = escape_display(&t, false);
        prop_assert!(!shown.chars().any(|c| c.is_control() && c != '\t'), "{:?}", shown);
        let _ = escape_display(&t, true);
    }
}
