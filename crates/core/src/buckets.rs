//! Histogram bucket bounds as people write them: `0.0003`, not the
//! `0.00030000000000000003` that repeated multiplication leaves, which
//! exporters print digit for digit and which no `le` label should carry.

/// `count` bounds from `start`, each `factor` times the one before,
/// rounded to 6 significant digits.
pub fn exponential_buckets(start: f64, factor: f64, count: u16) -> Vec<f64> {
    let mut bounds = Vec::with_capacity(usize::from(count));
    let mut bound = start;
    for _ in 0..count {
        bounds.push(round_significant(bound));
        bound *= factor;
    }
    bounds
}

/// `x` rounded to 6 significant digits, as the nearest `f64` to that
/// decimal (so it prints as written).
fn round_significant(x: f64) -> f64 {
    format!("{x:.5e}").parse().unwrap_or(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_print_as_written() {
        let bounds = exponential_buckets(0.0001, 3.0, 12);
        let printed: Vec<String> = bounds.iter().map(|b| b.to_string()).collect();
        assert_eq!(
            printed,
            [
                "0.0001", "0.0003", "0.0009", "0.0027", "0.0081", "0.0243", "0.0729", "0.2187",
                "0.6561", "1.9683", "5.9049", "17.7147"
            ]
        );
        assert_eq!(
            exponential_buckets(0.0005, 2.0, 4),
            [0.0005, 0.001, 0.002, 0.004]
        );
        assert!(exponential_buckets(1.0, 2.0, 0).is_empty());
    }
}
