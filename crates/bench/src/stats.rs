//! The figures of a bench: message counts as people write them (`0.5M`,
//! `20K`) and the medians and percentiles that summarise many timings.

/// `500K`, `0.5M`, `2.5m`, `20000`: a message count.
pub(super) fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
        Some('m' | 'M') => (&t[..t.len() - 1], 1e6),
        _ => (t, 1.0),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a count (examples: 20K, 0.5M, 1000000)"))?;
    let v = (n * mult).round();
    if !(1.0..=1e12).contains(&v) {
        return Err(format!("{s:?}: must be between 1 and 1e12"));
    }
    Ok(v as u64)
}

/// `500000` → `0.5M`, `20000` → `20K`, `1234` → `1234`.
pub(super) fn format_count(n: u64) -> String {
    if n >= 100_000 && n / 100_000 * 100_000 == n {
        let m = n as f64 / 1e6;
        let s = format!("{m:.1}");
        return format!("{}M", s.trim_end_matches(".0"));
    }
    if n >= 1000 && n / 1000 * 1000 == n {
        return format!("{}K", n / 1000);
    }
    n.to_string()
}

/// Linear interpolation between closest ranks (the median of an even
/// count is the mean of the middle two). `None` for no data.
pub(super) fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = (p / 100.0).clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    Some(v[lo] + (v[hi] - v[lo]) * frac)
}

pub(super) fn median(values: &[f64]) -> Option<f64> {
    percentile(values, 50.0)
}

pub(super) fn fmt_ms(v: Option<f64>) -> String {
    match v {
        Some(x) if x >= 100.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.1}"),
        None => "–".to_string(),
    }
}

/// The bytes on disk of the database at `url`, after a checkpoint (see
/// `crate::baseline::database_bytes`).
pub(super) async fn database_bytes(url: &str) -> anyhow::Result<u64> {
    blocking_size(url, crate::baseline::database_bytes).await
}

/// What the data of the database at `url` takes, free space not counted
/// (see `crate::baseline::live_bytes`): the figure for sealed logs.
pub(super) async fn live_bytes(url: &str) -> anyhow::Result<u64> {
    blocking_size(url, crate::baseline::live_bytes).await
}

/// The bytes of the sealed segments' blobs alone (see
/// `crate::baseline::segment_bytes`).
pub(super) async fn segment_bytes(url: &str) -> anyhow::Result<u64> {
    blocking_size(url, crate::baseline::segment_bytes).await
}

/// The sealed segments' text indexes (`crate::baseline::index_bytes`).
pub(super) async fn index_bytes(url: &str) -> anyhow::Result<u64> {
    blocking_size(url, crate::baseline::index_bytes).await
}

async fn blocking_size(
    url: &str,
    size: fn(&str) -> joblog_store::Result<u64>,
) -> anyhow::Result<u64> {
    use anyhow::Context;
    let url = url.to_string();
    tokio::task::spawn_blocking(move || size(&url))
        .await
        .context("measuring the database")?
        .context("measuring the database")
}

/// The storage figure's references: logs as plain text, and as `zstd -3`
/// of each job's text (what a runner keeping a compressed file per job
/// would store).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct TextSize {
    pub(super) raw: u64,
    pub(super) zstd: u64,
}

impl TextSize {
    /// Counts one job's whole log.
    pub(super) fn add_job(&mut self, text: &str) -> anyhow::Result<()> {
        self.raw += text.len() as u64;
        self.zstd += zstd::bulk::compress(text.as_bytes(), 3)
            .map_err(|e| anyhow::anyhow!("zstd: {e}"))?
            .len() as u64;
        Ok(())
    }
}

/// The upper bounds (ms) of the histogram buckets holding the median and
/// the 99th percentile, and the count: `None` without observations.
pub(super) fn bucket_p50_p99(metrics: &str, name: &str) -> Option<(f64, f64, u64)> {
    let mut buckets: Vec<(f64, f64)> = super::oplog::scrape::series(metrics, name)
        .into_iter()
        .filter_map(|(labels, count)| {
            let le = labels.split(',').find_map(|l| l.strip_prefix("le=\""))?;
            let le = le.trim_end_matches('"');
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((bound, count))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let at = |share: f64| {
        buckets
            .iter()
            .find(|(_, n)| *n >= total * share)
            .map(|b| b.0 * 1e3)
    };
    Some((at(0.5)?, at(0.99)?, total as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_size_counts_the_text_and_its_zstd() {
        let mut t = TextSize::default();
        let text: String = (1..=1000)
            .map(|i| format!("message {i} of job 7\n"))
            .collect();
        t.add_job(&text).unwrap();
        t.add_job("").unwrap();
        assert_eq!(t.raw, text.len() as u64);
        let alone = zstd::bulk::compress(text.as_bytes(), 3).unwrap().len() as u64;
        assert!(
            t.zstd > alone && t.zstd < alone + 20 && t.zstd < t.raw / 5,
            "{t:?}"
        );
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("0.5M").unwrap(), 500_000);
        assert_eq!(parse_count("20K").unwrap(), 20_000);
        assert_eq!(parse_count("2.5m").unwrap(), 2_500_000);
        assert_eq!(parse_count("1500").unwrap(), 1500);
        assert!(parse_count("0").is_err());
        assert!(parse_count("-1K").is_err());
        assert!(parse_count("M").is_err());
        assert!(parse_count("lots").unwrap_err().contains("lots"));
        assert!(parse_count("1e30").is_err());
    }

    #[test]
    fn count_labels() {
        assert_eq!(format_count(500_000), "0.5M");
        assert_eq!(format_count(1_000_000), "1M");
        assert_eq!(format_count(2_500_000), "2.5M");
        assert_eq!(format_count(20_000), "20K");
        assert_eq!(format_count(1234), "1234");
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN, 2.0]), Some(2.0));
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert!((percentile(&v, 90.0).unwrap() - 9.1).abs() < 1e-9);
        assert_eq!(percentile(&v, 100.0), Some(10.0));
    }
}
