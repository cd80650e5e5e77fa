//! Sizes as people write them in configuration: `536870912`, `512MiB`,
//! `64 KiB`, `1GB`.

const UNITS: [(&str, u64); 9] = [
    ("TiB", 1 << 40),
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("TB", 1_000_000_000_000),
    ("GB", 1_000_000_000),
    ("MB", 1_000_000),
    ("kB", 1_000),
    ("B", 1),
];

/// A number of bytes, with an optional unit (binary `KiB`… or decimal
/// `kB`…, any case); a bare number is bytes.
pub fn parse_byte_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (number, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (t[..i].trim(), t[i..].trim()),
        None => (t, "B"),
    };
    let bad = || format!("{text:?} is not a size (examples: 536870912, 512MiB, 64KiB, 1GB)");
    let multiplier = UNITS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(unit))
        .map(|(_, m)| *m)
        .ok_or_else(bad)?;
    let n: u64 = number.replace('_', "").parse().map_err(|_| bad())?;
    n.checked_mul(multiplier)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// The size in the largest binary unit that divides it (`512MiB`), else
/// in bytes.
pub fn render_byte_size(n: u64) -> String {
    match UNITS[..4]
        .iter()
        .find(|(_, m)| n >= *m && n.is_multiple_of(*m))
    {
        Some((name, m)) => format!("{}{name}", n / m),
        None => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_and_without_units() {
        assert_eq!(parse_byte_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_byte_size(" 64 kib "), Ok(64 << 10));
        assert_eq!(parse_byte_size("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_byte_size("1_000"), Ok(1000));
        assert!(parse_byte_size("12 parsecs")
            .unwrap_err()
            .contains("not a size"));
        assert!(parse_byte_size("99999999999TiB")
            .unwrap_err()
            .contains("too large"));
        assert_eq!(render_byte_size(512 << 20), "512MiB");
        assert_eq!(render_byte_size(1000), "1000");
    }
}
