//! The property tests' settings, one for every suite: how many cases, and
//! no regression files.

use proptest::prelude::ProptestConfig;

/// `default_cases` generated cases (each suite keeps its own count: a slow
/// property runs fewer), or `PROPTEST_CASES` for a longer run. No failure
/// persistence: a failing case is printed in full by the failure itself,
/// and a test run leaves no `proptest-regressions` files in the source
/// tree.
pub fn proptest_config(default_cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(default_cases),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

#[cfg(test)]
mod tests {
    use super::proptest_config;

    #[test]
    fn the_case_count_is_proptest_cases_or_the_suites_default() {
        // Read, never set: the variable is the process's, shared by every
        // test running beside this one.
        let wanted = std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(7);
        let config = proptest_config(7);
        assert_eq!(config.cases, wanted);
        assert!(config.failure_persistence.is_none());
    }
}
