//! What the commands of running joblog as a service print: where a backup
//! went and how large it is, and the server's health.

use std::path::Path;

use super::escape_display;
use crate::wire::HealthView;

pub(super) fn backed_up(path: &Path, bytes: u64) -> String {
    format!(
        "wrote {} ({}, {bytes} bytes)\n",
        escape_display(&path.display().to_string(), false),
        human_size(bytes)
    )
}

/// `ok` or `unavailable`, then why, and the node.
pub(super) fn health(h: &HealthView) -> String {
    let mut line = escape_display(&h.status, false).into_owned();
    if h.store != "ok" {
        line.push_str(&format!("; store {}", escape_display(&h.store, false)));
    }
    if !h.accepting_jobs {
        line.push_str("; not taking jobs");
    }
    line.push_str(&format!(
        " (node {}, {} running)\n",
        escape_display(&h.node, false),
        h.pool_in_use
    ));
    line
}

/// Bytes in binary units with one decimal, for people.
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_shown_in_binary_units() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(12_902_400), "12.3 MiB");
        assert_eq!(human_size(5 << 40), "5.0 TiB");
        assert_eq!(
            backed_up(Path::new("/backups/joblog.db"), 2048),
            "wrote /backups/joblog.db (2.0 KiB, 2048 bytes)\n"
        );
    }

    #[test]
    fn health_says_what_is_wrong() {
        let view = |status: &str, store: &str, accepting: bool| HealthView {
            status: status.into(),
            store: store.into(),
            accepting_jobs: accepting,
            node: "host-a:7878".into(),
            pool_in_use: 3,
        };
        assert_eq!(
            health(&view("ok", "ok", true)),
            "ok (node host-a:7878, 3 running)\n"
        );
        assert_eq!(
            health(&view("unavailable", "unavailable: writes fail", false)),
            "unavailable; store unavailable: writes fail; not taking jobs (node host-a:7878, 3 running)\n"
        );
    }
}
