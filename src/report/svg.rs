//! Hand-written SVG line charts: the latency percentile spectrum (log-scale
//! x axis at 50, 90, 99, 99.9, 99.99), throughput and p99 over time, and the
//! capacity curve. No plotting crate; plain strings.

use std::fmt::Write as _;

const W: f64 = 720.0;
const H: f64 = 300.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 44.0;
const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22",
];

/// One line of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// Points `(x, y)` in data units.
    pub points: Vec<(f64, f64)>,
}

/// Escapes text for XML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A line chart. `x_ticks` label the x axis at data positions; y ticks are
/// chosen automatically from 0 to the largest y.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    x_range: (f64, f64),
    x_ticks: &[(f64, String)],
    series: &[Series],
) -> String {
    let ymax = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let (ystep, ytop) = nice_axis(ymax);
    let (x0, x1) = if x_range.1 > x_range.0 {
        x_range
    } else {
        (x_range.0, x_range.0 + 1.0)
    };
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let sx = |x: f64| LEFT + (x - x0) / (x1 - x0) * pw;
    let sy = |y: f64| TOP + ph - (y / ytop).clamp(0.0, 1.05) * ph;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(
        s,
        r##"<rect x="0" y="0" width="{W}" height="{H}" fill="#fff"/><text x="{}" y="18" font-size="13" font-weight="bold">{}</text>"##,
        LEFT,
        esc(title)
    );
    // Grid and y ticks.
    let mut y = 0.0;
    while y <= ytop + ystep * 1e-9 {
        let py = sy(y);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            py + 4.0,
            fmt_num(y)
        );
        y += ystep;
    }
    for (x, label) in x_ticks {
        if *x < x0 || *x > x1 {
            continue;
        }
        let px = sx(*x);
        let _ = write!(
            s,
            r##"<line x1="{px:.1}" y1="{TOP}" x2="{px:.1}" y2="{:.1}" stroke="#f0f0f0"/><text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            TOP + ph,
            TOP + ph + 16.0,
            esc(label)
        );
    }
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#999"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"##,
        LEFT + pw / 2.0,
        H - 8.0,
        esc(x_label),
        TOP + ph / 2.0,
        esc(y_label)
    );
    for (i, ser) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        // After the palette runs out, lines repeat its colours dashed.
        let dash = if i >= PALETTE.len() {
            r#" stroke-dasharray="5 3""#
        } else {
            ""
        };
        let pts: Vec<String> = ser
            .points
            .iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
            .collect();
        if pts.len() == 1 {
            let _ = write!(
                s,
                r#"<circle cx="{}" r="3" fill="{color}"/>"#,
                pts[0].replace(',', "\" cy=\"")
            );
        } else if !pts.is_empty() {
            let _ = write!(
                s,
                r#"<polyline fill="none" stroke="{color}" stroke-width="1.8"{dash} points="{}"/>"#,
                pts.join(" ")
            );
        }
        let ly = TOP + 12.0 + i as f64 * 16.0;
        let lx = LEFT + pw + 12.0;
        let _ = write!(
            s,
            r#"<line x1="{lx}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="3"{dash}/><text x="{:.1}" y="{:.1}">{}</text>"#,
            ly - 4.0,
            lx + 16.0,
            ly - 4.0,
            lx + 22.0,
            ly,
            esc(&truncate(&ser.name, 24))
        );
    }
    s.push_str("</svg>");
    s
}

/// The percentile spectrum: x = log10(1 / (1 - p/100)), so 90, 99, 99.9,
/// 99.99 and 99.999 are evenly spaced. `series` points are `[percentile, ms]`.
pub fn spectrum_chart(title: &str, series: &[(String, Vec<[f64; 2]>)]) -> String {
    let lines: Vec<Series> = series
        .iter()
        .map(|(name, pts)| Series {
            name: name.clone(),
            points: pts
                .iter()
                .filter(|p| p[0] < 100.0)
                .map(|p| (spectrum_x(p[0]), p[1]))
                .collect(),
        })
        .collect();
    let ticks: Vec<(f64, String)> = [0.0, 50.0, 90.0, 99.0, 99.9, 99.99, 99.999]
        .iter()
        .map(|&p| (spectrum_x(p), format!("{p}%")))
        .collect();
    line_chart(
        title,
        "percentile (log scale)",
        "latency (ms)",
        (0.0, 5.0),
        &ticks,
        &lines,
    )
}

/// Position of a percentile on the spectrum's x axis.
pub fn spectrum_x(percentile: f64) -> f64 {
    let q = (1.0 - percentile / 100.0).max(1e-6);
    (1.0 / q).log10()
}

/// Evenly spaced x ticks over a range.
pub fn linear_ticks(lo: f64, hi: f64, suffix: &str) -> Vec<(f64, String)> {
    let (step, _) = nice_axis(hi - lo);
    let mut out = Vec::new();
    let mut x = (lo / step).ceil() * step;
    while x <= hi + step * 1e-9 && out.len() < 50 {
        out.push((x, format!("{}{suffix}", fmt_num(x))));
        x += step;
    }
    out
}

/// A tick step and a top value (≥ max) with about five ticks.
fn nice_axis(max: f64) -> (f64, f64) {
    if !(max.is_finite() && max > 0.0) {
        return (1.0, 1.0);
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    (step, (max / step).ceil() * step)
}

fn fmt_num(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        let s = format!("{v:.1}");
        s.trim_end_matches(".0").to_owned()
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spectrum_positions_are_log_spaced() {
        assert!((spectrum_x(90.0) - 1.0).abs() < 1e-9);
        assert!((spectrum_x(99.0) - 2.0).abs() < 1e-9);
        assert!((spectrum_x(99.99) - 4.0).abs() < 1e-6);
        assert_eq!(spectrum_x(0.0), 0.0);
    }

    #[test]
    fn charts_are_well_formed_and_escaped() {
        let svg = spectrum_chart(
            "a <b>",
            &[(
                "tools/call #1".into(),
                vec![[50.0, 1.0], [99.0, 3.5], [100.0, 9.0]],
            )],
        );
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("a &lt;b&gt;"));
        assert!(svg.contains("<polyline"));
        assert!(svg.contains("99.9%"));
        let empty = line_chart("t", "x", "y", (0.0, 0.0), &[], &[]);
        assert!(empty.ends_with("</svg>"));
        assert!(!empty.contains("NaN"));
    }

    #[test]
    fn axes_are_nice() {
        assert_eq!(nice_axis(9.0), (2.0, 10.0));
        assert_eq!(nice_axis(0.0), (1.0, 1.0));
        let t = linear_ticks(0.0, 10.0, "s");
        assert_eq!(t.first().map(|t| t.1.as_str()), Some("0s"));
        assert_eq!(t.last().map(|t| t.1.as_str()), Some("10s"));
    }
}
