//! SVG charts for `joblog bench --out`: a line chart (a figure against the
//! database's size, `psu`) and a horizontal bar chart (throughputs beside
//! their references). Written by hand: two plain chart kinds do not need a
//! plotting library, and the output is a small, self-contained file that a
//! Markdown page embeds as an image.

// Text for SVG: the five characters XML gives meaning to, escaped.
use joblog_core::escape_html as esc;
use std::fmt::Write as _;

/// One line of a line chart.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    /// (x, y); points that are not finite (or not positive on a log axis)
    /// are left out.
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed: a reference, not a measurement of this run.
    pub dashed: bool,
}

/// One bar of a bar chart.
#[derive(Debug, Clone)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    /// Drawn in grey: the reference the other bars are set against.
    pub reference: bool,
}

#[derive(Debug, Clone)]
pub enum Chart {
    Lines {
        title: String,
        x_label: String,
        y_label: String,
        series: Vec<Series>,
        /// A log scale on y, for series that differ by orders of magnitude.
        log_y: bool,
    },
    Bars {
        title: String,
        unit: String,
        bars: Vec<Bar>,
    },
}

const WIDTH: f64 = 760.0;
/// Colours that stay apart for the colour-blind (Okabe–Ito).
const PALETTE: [&str; 6] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9",
];
const GREY: &str = "#8a8a8a";
const FONT: &str = "font-family=\"system-ui,sans-serif\" font-size=\"12\"";

impl Chart {
    pub fn to_svg(&self) -> String {
        match self {
            Chart::Lines {
                title,
                x_label,
                y_label,
                series,
                log_y,
            } => lines(title, x_label, y_label, series, *log_y),
            Chart::Bars { title, unit, bars } => bar_chart(title, unit, bars),
        }
    }
}

/// A number as a tick label: 1.5M, 20K, 0.25, 900.
pub fn short(v: f64) -> String {
    let a = v.abs();
    let (n, suffix) = if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "K")
    } else {
        (v, "")
    };
    let text = if n == n.trunc() || n.abs() >= 100.0 {
        format!("{n:.0}")
    } else if (n * 10.0).trunc() == n * 10.0 || n.abs() >= 10.0 {
        format!("{n:.1}")
    } else {
        format!("{n:.2}")
    };
    format!("{text}{suffix}")
}

/// Ticks at 1, 2 or 5 × 10^k covering `0..=max`, about five of them.
fn linear_ticks(max: f64) -> Vec<f64> {
    if !(max.is_finite() && max > 0.0) {
        return vec![0.0, 1.0];
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let n = (max / step).ceil() as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

/// Ticks at the powers of ten covering `min..=max` (both positive).
fn log_ticks(min: f64, max: f64) -> Vec<f64> {
    let lo = min.log10().floor() as i32;
    let hi = (max.log10().ceil() as i32).max(lo + 1);
    (lo..=hi).map(|k| 10f64.powi(k)).collect()
}

fn open(out: &mut String, height: f64, title: &str) {
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {height}\" width=\"{WIDTH}\" height=\"{height}\" {FONT}>"
    );
    let _ = writeln!(
        out,
        "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"600\">{}</text>",
        WIDTH / 2.0,
        esc(title)
    );
}

fn lines(title: &str, x_label: &str, y_label: &str, series: &[Series], log_y: bool) -> String {
    let keep = |&(x, y): &(f64, f64)| x.is_finite() && y.is_finite() && (!log_y || y > 0.0);
    let points: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| s.points.iter().copied().filter(keep).collect())
        .collect();
    let all = || points.iter().flatten();
    let x_max = all().map(|p| p.0).fold(0.0, f64::max);
    let y_max = all().map(|p| p.1).fold(0.0, f64::max);
    let y_min = all().map(|p| p.1).fold(f64::INFINITY, f64::min);
    // Nothing to draw: a linear axis (a log one has no 0).
    let log_y = log_y && y_min.is_finite();
    let x_ticks = linear_ticks(x_max);
    let y_ticks = if log_y {
        log_ticks(y_min, y_max)
    } else {
        linear_ticks(y_max)
    };
    let legend_rows = series.len().div_ceil(3) as f64;
    let height = 380.0 + 18.0 * legend_rows;
    let (left, right, top, bottom) = (70.0, WIDTH - 20.0, 40.0, 320.0);
    let x_end = *x_ticks.last().unwrap_or(&1.0);
    let x_of = |x: f64| left + (right - left) * x / x_end;
    let (y0, y1) = (y_ticks[0], *y_ticks.last().unwrap_or(&1.0));
    let y_of = |y: f64| {
        let f = if log_y {
            (y.log10() - y0.log10()) / (y1.log10() - y0.log10())
        } else {
            (y - y0) / (y1 - y0)
        };
        bottom - (bottom - top) * f
    };

    let mut out = String::new();
    open(&mut out, height, title);
    for t in &y_ticks {
        let y = y_of(*t);
        let _ = writeln!(
            out,
            "<line x1=\"{left}\" x2=\"{right}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#e4e4e4\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 6.0,
            y + 4.0,
            short(*t)
        );
    }
    for t in &x_ticks {
        let x = x_of(*t);
        let _ = writeln!(
            out,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{bottom}\" y2=\"{}\" stroke=\"#444\"/><text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            bottom + 5.0,
            bottom + 19.0,
            short(*t)
        );
    }
    let _ = writeln!(
        out,
        "<line x1=\"{left}\" x2=\"{right}\" y1=\"{bottom}\" y2=\"{bottom}\" stroke=\"#444\"/><line x1=\"{left}\" x2=\"{left}\" y1=\"{top}\" y2=\"{bottom}\" stroke=\"#444\"/>"
    );
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
        (left + right) / 2.0,
        bottom + 38.0,
        esc(x_label)
    );
    let _ = writeln!(
        out,
        "<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">{}{}</text>",
        (top + bottom) / 2.0,
        esc(y_label),
        if log_y { " (log scale)" } else { "" }
    );
    for (i, (s, pts)) in series.iter().zip(&points).enumerate() {
        let colour = if s.dashed {
            GREY
        } else {
            PALETTE[i % PALETTE.len()]
        };
        let dash = if s.dashed {
            " stroke-dasharray=\"6 4\""
        } else {
            ""
        };
        let path: Vec<String> = pts
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", x_of(x), y_of(y)))
            .collect();
        let _ = writeln!(
            out,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"{dash} points=\"{}\"/>",
            path.join(" ")
        );
        for &(x, y) in pts {
            let _ = writeln!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"><title>{}: {}</title></circle>",
                x_of(x),
                y_of(y),
                esc(&s.name),
                short(y)
            );
        }
        let lx = left + (i % 3) as f64 * 225.0;
        let ly = bottom + 62.0 + (i / 3) as f64 * 18.0;
        let _ = writeln!(
            out,
            "<line x1=\"{lx}\" x2=\"{}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{colour}\" stroke-width=\"2\"{dash}/><text x=\"{}\" y=\"{}\">{}</text>",
            lx + 22.0,
            lx + 28.0,
            ly + 4.0,
            esc(&s.name)
        );
    }
    out.push_str("</svg>\n");
    out
}

fn bar_chart(title: &str, unit: &str, bars: &[Bar]) -> String {
    let row = 28.0;
    // Room for the longest label (about 6.6 px a character at 12 px).
    let longest = bars
        .iter()
        .map(|b| b.label.chars().count())
        .max()
        .unwrap_or(0);
    let left = (longest as f64 * 6.6 + 16.0).clamp(120.0, 420.0);
    let (right, top) = (WIDTH - 90.0, 44.0);
    let height = top + row * bars.len().max(1) as f64 + 40.0;
    let max = bars
        .iter()
        .map(|b| b.value)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let scale = if max > 0.0 { (right - left) / max } else { 0.0 };
    let mut out = String::new();
    open(&mut out, height, title);
    for (i, b) in bars.iter().enumerate() {
        let y = top + row * i as f64;
        let value = if b.value.is_finite() {
            b.value.max(0.0)
        } else {
            0.0
        };
        let colour = if b.reference { GREY } else { PALETTE[0] };
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><rect x=\"{left}\" y=\"{}\" width=\"{:.1}\" height=\"{}\" fill=\"{colour}\"/><text x=\"{:.1}\" y=\"{}\">{}</text>",
            left - 8.0,
            y + 17.0,
            esc(&b.label),
            y + 4.0,
            value * scale,
            row - 8.0,
            left + value * scale + 6.0,
            y + 17.0,
            short(value)
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{left}\" y=\"{}\">{}</text>",
        height - 14.0,
        esc(unit)
    );
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels() {
        assert_eq!(short(2_500_000.0), "2.5M");
        assert_eq!(short(20_000.0), "20K");
        assert_eq!(short(900.0), "900");
        assert_eq!(short(0.25), "0.25");
        assert_eq!(short(12.5), "12.5");
        assert_eq!(short(379.96), "380");
        assert_eq!(short(2679.4), "2.68K");
    }

    #[test]
    fn linear_ticks_cover_the_maximum_in_round_steps() {
        assert_eq!(linear_ticks(2.5e6), vec![0.0, 5e5, 1e6, 1.5e6, 2e6, 2.5e6]);
        assert_eq!(linear_ticks(36.0), vec![0.0, 10.0, 20.0, 30.0, 40.0]);
        assert_eq!(linear_ticks(0.0), vec![0.0, 1.0]);
        assert_eq!(linear_ticks(f64::NAN), vec![0.0, 1.0]);
    }

    #[test]
    fn log_ticks_are_powers_of_ten() {
        assert_eq!(log_ticks(2.4, 900.0), vec![1.0, 10.0, 100.0, 1000.0]);
        assert_eq!(log_ticks(10.0, 10.0), vec![10.0, 100.0]);
    }

    #[test]
    fn a_line_chart_has_one_line_and_legend_entry_per_series_and_escapes_names() {
        let chart = Chart::Lines {
            title: "exec <ms>".into(),
            x_label: "messages".into(),
            y_label: "ms".into(),
            series: vec![
                Series {
                    name: "joblog".into(),
                    points: vec![(5e5, 26.0), (1e6, 32.0), (1.5e6, f64::NAN)],
                    dashed: false,
                },
                Series {
                    name: "a & b".into(),
                    points: vec![(5e5, 600.0), (1e6, 0.0)],
                    dashed: true,
                },
            ],
            log_y: true,
        };
        let svg = chart.to_svg();
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        // NaN left out; 0 cannot be drawn on a log axis.
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains("exec &lt;ms&gt;") && svg.contains("a &amp; b"));
        assert!(svg.contains("stroke-dasharray") && svg.contains("(log scale)"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    #[test]
    fn bars_are_as_long_as_their_values() {
        let svg = Chart::Bars {
            title: "t".into(),
            unit: "jobs/s".into(),
            bars: vec![
                Bar {
                    label: "fork/exec".into(),
                    value: 2000.0,
                    reference: true,
                },
                Bar {
                    label: "joblog".into(),
                    value: 1000.0,
                    reference: false,
                },
            ],
        }
        .to_svg();
        let widths: Vec<f64> = svg
            .match_indices("width=\"")
            .skip(2) // the svg element's and the background's
            .map(|(i, _)| {
                let rest = &svg[i + 7..];
                rest[..rest.find('"').unwrap()].parse().unwrap()
            })
            .collect();
        assert_eq!(widths.len(), 2);
        assert!((widths[0] / widths[1] - 2.0).abs() < 1e-6, "{widths:?}");
        assert!(svg.contains(GREY) && svg.contains("2K"));
        // Labels end left of the bars, with room for the longest.
        assert!(
            svg.contains("<text x=\"112\" y=\"61\" text-anchor=\"end\">fork/exec</text>"),
            "{svg}"
        );
    }

    #[test]
    fn empty_charts_render() {
        let svg = Chart::Bars {
            title: "none".into(),
            unit: "".into(),
            bars: vec![],
        }
        .to_svg();
        assert!(svg.ends_with("</svg>\n"));
        let svg = Chart::Lines {
            title: "none".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![],
            log_y: true,
        }
        .to_svg();
        assert!(svg.ends_with("</svg>\n") && !svg.contains("NaN"));
    }
}
