//! Hand-written SVG line charts: the latency percentile spectrum (log-scale
//! x axis at 50, 90, 99, 99.9, 99.99), series over time, the capacity curve.
//! No plotting crate; plain strings.
//!
//! Series are told apart by more than colour: each gets an Okabe–Ito colour
//! (safe for the common colour-vision deficiencies), a dash pattern and a
//! marker ([`style`]), so two equal series still show as two. A latency
//! axis turns logarithmic when the values span more than [`LOG_RATIO`]
//! ([`YAxis::choose`]), so one outlier does not flatten everything below
//! p99. Threshold lines ([`RefLine`]) are drawn across the charts they
//! constrain, inside the axis range.

use super::format::escape_xml;
use std::fmt::Write as _;

const W: f64 = 720.0;
const H: f64 = 300.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 44.0;

/// The Okabe–Ito palette (yellow left out: too faint on white).
pub const OKABE_ITO: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
];
const DASHES: [&str; 4] = ["", "7 3", "2 3", "10 3 2 3"];
const MARKERS: [Marker; 5] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
    Marker::Cross,
];

/// A value range wider than this (max / min) gets a logarithmic y axis.
pub const LOG_RATIO: f64 = 20.0;

/// The shape drawn at a series' points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// ●
    Circle,
    /// ■
    Square,
    /// ▲
    Triangle,
    /// ◆
    Diamond,
    /// ×
    Cross,
}

/// How series `i` is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Stroke colour.
    pub color: &'static str,
    /// `stroke-dasharray` ("" for solid).
    pub dash: &'static str,
    /// Point marker.
    pub marker: Marker,
}

/// The style of series `i`: colour, dash and marker cycle with coprime
/// periods (7, 4, 5), so no two of the first 140 series look alike and
/// neighbours differ in all three.
pub fn style(i: usize) -> Style {
    Style {
        color: OKABE_ITO[i % OKABE_ITO.len()],
        dash: DASHES[i % DASHES.len()],
        marker: MARKERS[i % MARKERS.len()],
    }
}

/// One line of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// Points `(x, y)` in data units.
    pub points: Vec<(f64, f64)>,
}

/// A horizontal reference line (a threshold) at `y`, in data units.
#[derive(Debug, Clone, PartialEq)]
pub struct RefLine {
    /// Its label (the threshold as written).
    pub label: String,
    /// Where it is.
    pub y: f64,
}

/// The y axis of a chart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum YAxis {
    /// From 0 to `top` in ticks of `step`.
    Linear {
        /// Tick step.
        step: f64,
        /// Top of the axis.
        top: f64,
    },
    /// From `lo` to `hi` (powers of ten), logarithmic.
    Log {
        /// Bottom (a power of ten).
        lo: f64,
        /// Top (a power of ten).
        hi: f64,
    },
}

/// Whether values spanning this range call for a log axis: the positive
/// ones differ by more than [`LOG_RATIO`].
pub fn wants_log(values: &[f64]) -> bool {
    let pos = values.iter().copied().filter(|v| v.is_finite() && *v > 0.0);
    let (lo, hi) = pos.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    hi > 0.0 && hi / lo > LOG_RATIO
}

impl YAxis {
    /// The axis for `values` (data and reference lines): logarithmic when
    /// `allow_log` and [`wants_log`], else linear from 0.
    pub fn choose(values: &[f64], allow_log: bool) -> YAxis {
        if allow_log && wants_log(values) {
            let pos = values.iter().copied().filter(|v| v.is_finite() && *v > 0.0);
            let (lo, hi) = pos.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            });
            return YAxis::Log {
                lo: 10f64.powf(lo.log10().floor()),
                hi: 10f64.powf(hi.log10().ceil()),
            };
        }
        let max = values
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let (step, top) = nice_axis(max);
        YAxis::Linear { step, top }
    }

    /// Where `v` sits, from 0 (bottom) to 1 (top); out-of-range values are
    /// clamped to the plot (a little headroom above).
    pub fn frac(&self, v: f64) -> f64 {
        match *self {
            YAxis::Linear { top, .. } => (v / top).clamp(0.0, 1.05),
            YAxis::Log { lo, hi } => {
                if v <= 0.0 {
                    return 0.0;
                }
                ((v.log10() - lo.log10()) / (hi.log10() - lo.log10()).max(1e-9)).clamp(0.0, 1.05)
            }
        }
    }

    /// Tick positions and labels.
    pub fn ticks(&self) -> Vec<(f64, String)> {
        let mut out = Vec::new();
        match *self {
            YAxis::Linear { step, top } => {
                let mut y = 0.0;
                while y <= top + step * 1e-9 && out.len() < 50 {
                    out.push((y, fmt_num(y)));
                    y += step;
                }
            }
            YAxis::Log { lo, hi } => {
                let mut d = lo;
                while d <= hi * 1.000_001 && out.len() < 60 {
                    for m in [1.0, 2.0, 5.0] {
                        let v = d * m;
                        if v <= hi * 1.000_001 {
                            out.push((v, fmt_num(v)));
                        }
                    }
                    d *= 10.0;
                }
            }
        }
        out
    }

    /// Whether the axis is logarithmic.
    pub fn is_log(&self) -> bool {
        matches!(self, YAxis::Log { .. })
    }
}

/// The pixel row of `v` on a chart with this axis.
pub fn y_px(axis: &YAxis, v: f64) -> f64 {
    let ph = H - TOP - BOTTOM;
    TOP + ph - axis.frac(v) * ph
}

/// A chart to draw.
#[derive(Debug, Clone, Default)]
pub struct Chart {
    /// The `id` of its `<svg>` (the page and its tests find charts by it).
    pub id: String,
    /// Title.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// X range in data units.
    pub x_range: (f64, f64),
    /// X ticks at data positions.
    pub x_ticks: Vec<(f64, String)>,
    /// The lines.
    pub series: Vec<Series>,
    /// Threshold lines.
    pub refs: Vec<RefLine>,
    /// Whether the y axis may turn logarithmic (latency axes).
    pub allow_log: bool,
    /// Shaded x spans with their labels (service gaps on time charts).
    pub bands: Vec<(f64, f64, String)>,
    /// How a point's x reads in its hover text (`None`: the x label and
    /// the number).
    pub x_hover: Option<fn(f64) -> String>,
}

/// Legend rows that fit beside the plot; with more series the last row
/// names how many more there are (their names in its hover text).
pub const LEGEND_ROWS: usize = ((H - 8.0 - TOP - 12.0) / 16.0) as usize + 1;

/// The least vertical distance between two threshold labels, in pixels.
const LABEL_GAP: f64 = 11.0;

/// A line chart (linear y axis from 0, no threshold lines), for callers
/// that need nothing more.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    x_range: (f64, f64),
    x_ticks: &[(f64, String)],
    series: &[Series],
) -> String {
    render(&Chart {
        id: slug(title),
        title: title.into(),
        x_label: x_label.into(),
        y_label: y_label.into(),
        x_range,
        x_ticks: x_ticks.to_vec(),
        series: series.to_vec(),
        ..Chart::default()
    })
}

fn slug(s: &str) -> String {
    let mut out = String::from("chart-");
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

fn marker_svg(m: Marker, x: f64, y: f64, color: &str) -> String {
    match m {
        Marker::Circle => format!(r#"<circle cx="{x:.1}" cy="{y:.1}" r="2.6" fill="{color}"/>"#),
        Marker::Square => format!(
            r#"<rect x="{:.1}" y="{:.1}" width="5" height="5" fill="{color}"/>"#,
            x - 2.5,
            y - 2.5
        ),
        Marker::Triangle => format!(
            r#"<path d="M{x:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}Z" fill="{color}"/>"#,
            y - 3.2,
            x + 3.0,
            y + 2.4,
            x - 3.0,
            y + 2.4
        ),
        Marker::Diamond => format!(
            r#"<path d="M{x:.1} {:.1}L{:.1} {y:.1}L{x:.1} {:.1}L{:.1} {y:.1}Z" fill="{color}"/>"#,
            y - 3.4,
            x + 3.4,
            y + 3.4,
            x - 3.4
        ),
        Marker::Cross => format!(
            r#"<path d="M{:.1} {:.1}L{:.1} {:.1}M{:.1} {:.1}L{:.1} {:.1}" stroke="{color}" stroke-width="1.6"/>"#,
            x - 3.0,
            y - 3.0,
            x + 3.0,
            y + 3.0,
            x - 3.0,
            y + 3.0,
            x + 3.0,
            y - 3.0
        ),
    }
}

/// Draws a chart as one `<svg>` element.
pub fn render(c: &Chart) -> String {
    let mut values: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect();
    values.extend(c.refs.iter().map(|r| r.y));
    let axis = YAxis::choose(&values, c.allow_log);
    let (x0, x1) = if c.x_range.1 > c.x_range.0 {
        c.x_range
    } else {
        (c.x_range.0, c.x_range.0 + 1.0)
    };
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let sx = |x: f64| LEFT + (x - x0) / (x1 - x0) * pw;
    let sy = |y: f64| y_px(&axis, y);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" id="{}" class="chart" data-log="{}" viewBox="0 0 {W} {H}" width="{W}" height="{H}" font-family="sans-serif" font-size="11" role="img" aria-label="{}">"#,
        escape_xml(&c.id),
        axis.is_log(),
        escape_xml(&c.title)
    );
    let _ = write!(
        s,
        r##"<title>{}</title><rect x="0" y="0" width="{W}" height="{H}" fill="#fff"/><text x="{}" y="18" font-size="13" font-weight="bold">{}</text>"##,
        escape_xml(&c.title),
        LEFT,
        escape_xml(&c.title)
    );
    for (y, label) in axis.ticks() {
        let py = sy(y);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            py + 4.0,
            escape_xml(&label)
        );
    }
    for (x, label) in &c.x_ticks {
        if *x < x0 || *x > x1 {
            continue;
        }
        let px = sx(*x);
        let _ = write!(
            s,
            r##"<line x1="{px:.1}" y1="{TOP}" x2="{px:.1}" y2="{:.1}" stroke="#f0f0f0"/><text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            TOP + ph,
            TOP + ph + 16.0,
            escape_xml(label)
        );
    }
    let y_label = if axis.is_log() {
        format!("{} (log scale)", c.y_label)
    } else {
        c.y_label.clone()
    };
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#999"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"##,
        LEFT + pw / 2.0,
        H - 8.0,
        escape_xml(&c.x_label),
        TOP + ph / 2.0,
        escape_xml(&y_label)
    );
    for (a, b, label) in &c.bands {
        let (pa, pb) = (sx(a.max(x0)), sx(b.min(x1)));
        if pb > pa {
            let _ = write!(
                s,
                r##"<g class="band"><title>{}</title><rect x="{pa:.1}" y="{TOP}" width="{:.1}" height="{ph}" fill="#D55E00" fill-opacity="0.15"/></g>"##,
                escape_xml(label),
                pb - pa
            );
        }
    }
    // Threshold labels top to bottom, each at least LABEL_GAP below the
    // one above it, so close thresholds do not print over each other.
    let mut refs: Vec<(&RefLine, f64)> = c.refs.iter().map(|r| (r, sy(r.y))).collect();
    refs.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut last_label = f64::NEG_INFINITY;
    for (r, py) in refs {
        let label_y = (py - 3.0).max(last_label + LABEL_GAP);
        last_label = label_y;
        let _ = write!(
            s,
            r##"<g class="threshold" data-value="{}"><line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#000" stroke-width="1.4" stroke-dasharray="1 3"/><text x="{:.1}" y="{:.1}" text-anchor="end" font-size="10">{}</text></g>"##,
            r.y,
            LEFT + pw,
            LEFT + pw - 4.0,
            label_y,
            escape_xml(&truncate(&r.label, 48))
        );
    }
    for (i, ser) in c.series.iter().enumerate() {
        let st = style(i);
        let dash = if st.dash.is_empty() {
            String::new()
        } else {
            format!(r#" stroke-dasharray="{}""#, st.dash)
        };
        let pts: Vec<(f64, f64)> = ser
            .points
            .iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .map(|&(x, y)| (sx(x), sy(y)))
            .collect();
        let _ = write!(s, r#"<g class="series" data-series="{i}">"#);
        if pts.len() > 1 {
            let line: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
            let _ = write!(
                s,
                r#"<polyline fill="none" stroke="{}" stroke-width="1.8"{dash} points="{}"/>"#,
                st.color,
                line.join(" ")
            );
        }
        // Markers on at most ~40 points, offset per series so equal
        // series do not stack theirs; each tells its values on hover.
        let every = pts.len().div_ceil(40).max(1);
        let data = ser
            .points
            .iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite());
        for (k, ((x, y), (dx, dy))) in pts.iter().zip(data).enumerate() {
            if (k + i) % every == 0 {
                let at = c
                    .x_hover
                    .map_or_else(|| format!("{} {}", c.x_label, fmt_num(*dx)), |f| f(*dx));
                let _ = write!(
                    s,
                    r#"<g class="point"><title>{}: {} {} at {}</title>{}</g>"#,
                    escape_xml(&ser.name),
                    fmt_num(*dy),
                    escape_xml(&c.y_label),
                    escape_xml(&at),
                    marker_svg(st.marker, *x, *y, st.color)
                );
            }
        }
        s.push_str("</g>");
        if i + 1 >= LEGEND_ROWS && c.series.len() > LEGEND_ROWS {
            if i + 1 == LEGEND_ROWS {
                let hidden: Vec<String> = c.series[i..].iter().map(|h| h.name.clone()).collect();
                let _ = write!(
                    s,
                    r#"<g class="legend-more"><title>{}</title><text x="{:.1}" y="{:.1}">+{} more (hover)</text></g>"#,
                    escape_xml(&hidden.join("\n")),
                    LEFT + pw + 12.0,
                    TOP + 12.0 + i as f64 * 16.0,
                    hidden.len()
                );
            }
            continue;
        }
        let ly = TOP + 12.0 + i as f64 * 16.0;
        let lx = LEFT + pw + 12.0;
        let _ = write!(
            s,
            r#"<g class="legend" data-series="{i}"><line x1="{lx}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="2.5"{dash}/>{}<text x="{:.1}" y="{:.1}">{}</text></g>"#,
            ly - 4.0,
            lx + 20.0,
            ly - 4.0,
            st.color,
            marker_svg(st.marker, lx + 10.0, ly - 4.0, st.color),
            lx + 26.0,
            ly,
            escape_xml(&truncate(&ser.name, 26))
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
    render(&Chart {
        id: "chart-spectrum".into(),
        title: title.into(),
        x_label: "percentile (log scale)".into(),
        y_label: "latency (ms)".into(),
        x_range: (0.0, 5.0),
        x_ticks: ticks,
        series: lines,
        allow_log: true,
        x_hover: Some(|x| {
            let p = format!("{:.3}", 100.0 * (1.0 - 10f64.powf(-x)));
            format!("p{}", p.trim_end_matches('0').trim_end_matches('.'))
        }),
        ..Chart::default()
    })
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

    /// The number in the first `ATTR="…"` after the first `after` in `s`.
    fn attr(s: &str, after: &str, attr: &str) -> f64 {
        let rest = s.split(after).nth(1).expect(after);
        let v = rest.split(&format!(r#"{attr}=""#)).nth(1).expect(attr);
        v.split('"').next().unwrap().parse().unwrap()
    }

    #[test]
    fn many_series_keep_their_legend_inside_the_chart_and_points_tell_their_values() {
        let series: Vec<Series> = (0..26)
            .map(|i| Series {
                name: format!("scenario-{i}"),
                points: vec![(0.0, 1.0 + i as f64), (10.0, 2.0 + i as f64)],
            })
            .collect();
        let svg = line_chart(
            "rates",
            "time (s)",
            "round trips/s",
            (0.0, 10.0),
            &[],
            &series,
        );
        assert_eq!(svg.matches(r#"<g class="legend""#).count(), LEGEND_ROWS - 1);
        assert!(svg.contains(&format!("+{} more (hover)", 26 - (LEGEND_ROWS - 1))));
        assert!(svg.contains("scenario-25</title>") || svg.contains("\nscenario-25"));
        // Every legend row sits inside the chart's height.
        for row in svg.split(r#"<g class="legend"#).skip(1) {
            let y = attr(row, "<text ", "y");
            assert!(y <= H - 8.0, "legend row at y {y}");
        }
        assert!(
            svg.contains("<title>scenario-3: 4 round trips/s at time (s) 0</title>"),
            "{svg}"
        );
        let spectrum = spectrum_chart("latency", &[("e2e".into(), vec![[99.9, 7.5]])]);
        assert!(
            spectrum.contains("<title>e2e: 7.5 latency (ms) at p99.9</title>"),
            "{spectrum}"
        );
    }

    #[test]
    fn close_thresholds_keep_their_labels_apart() {
        let chart = Chart {
            series: vec![Series {
                name: "p99".into(),
                points: vec![(0.0, 10.0), (1.0, 80.0)],
            }],
            refs: vec![
                RefLine {
                    y: 50.0,
                    label: "p99(first) < 50ms".into(),
                },
                RefLine {
                    y: 50.5,
                    label: "p99(retry) < 50.5ms".into(),
                },
            ],
            x_range: (0.0, 1.0),
            ..Chart::default()
        };
        let svg = render(&chart);
        let ys: Vec<f64> = svg
            .split(r#"<g class="threshold""#)
            .skip(1)
            .map(|g| attr(g, "<text ", "y"))
            .collect();
        assert_eq!(ys.len(), 2);
        assert!((ys[0] - ys[1]).abs() >= LABEL_GAP, "labels at {ys:?}");
    }

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
        assert!(svg.contains(r#"id="chart-spectrum""#));
        let empty = line_chart("t", "x", "y", (0.0, 0.0), &[], &[]);
        assert!(empty.ends_with("</svg>"));
        assert!(!empty.contains("NaN"));
    }

    #[test]
    fn styles_are_colour_blind_safe_and_never_repeat_early() {
        let styles: Vec<Style> = (0..140).map(style).collect();
        for (i, a) in styles.iter().enumerate() {
            assert!(OKABE_ITO.contains(&a.color));
            for b in &styles[i + 1..] {
                assert_ne!(a, b, "two series look alike");
            }
        }
        for w in styles.windows(2) {
            assert_ne!(w[0].color, w[1].color);
            assert_ne!(w[0].dash, w[1].dash);
            assert_ne!(w[0].marker, w[1].marker);
        }
        // The old red/green pair is gone.
        assert!(!OKABE_ITO.contains(&"#d62728") && !OKABE_ITO.contains(&"#2ca02c"));
    }

    #[test]
    fn a_wide_range_gets_a_log_axis() {
        assert!(!wants_log(&[1.0, 2.0, 19.0]));
        assert!(wants_log(&[1.0, 2.0, 21.0]));
        assert!(!wants_log(&[0.0, 0.0, 5.0]), "zeros do not count");
        assert!(!wants_log(&[]));
        let a = YAxis::choose(&[0.8, 3.0, 250.0], true);
        assert_eq!(
            a,
            YAxis::Log {
                lo: 0.1,
                hi: 1000.0
            }
        );
        assert!((a.frac(10.0) - 0.5).abs() < 1e-9, "log-spaced");
        assert_eq!(a.frac(0.0), 0.0);
        assert!(
            !YAxis::choose(&[0.8, 250.0], false).is_log(),
            "only where allowed"
        );
        let ticks: Vec<String> = a.ticks().into_iter().map(|t| t.1).collect();
        assert!(ticks.contains(&"1".to_owned()) && ticks.contains(&"500".to_owned()));
    }

    #[test]
    fn threshold_lines_sit_at_their_value_inside_the_plot() {
        let a = YAxis::choose(&[2.0, 4.0, 10.0], false);
        assert_eq!(
            a,
            YAxis::Linear {
                step: 2.0,
                top: 10.0
            }
        );
        let (top, bottom) = (TOP, H - BOTTOM);
        assert!((y_px(&a, 5.0) - (top + bottom) / 2.0).abs() < 1e-9);
        assert!((y_px(&a, 0.0) - bottom).abs() < 1e-9);
        let svg = render(&Chart {
            id: "c".into(),
            series: vec![Series {
                name: "p99".into(),
                points: vec![(0.0, 1.0), (1.0, 2.0)],
            }],
            refs: vec![RefLine {
                label: "p99(e2e) < 50ms".into(),
                y: 50.0,
            }],
            x_range: (0.0, 1.0),
            allow_log: true,
            ..Chart::default()
        });
        // The limit is part of the axis range: the axis turns log to show
        // it and the data both.
        assert!(svg.contains(r#"data-log="true""#), "{svg}");
        let y = attr(&svg, r#"class="threshold""#, "y1");
        let want = y_px(&YAxis::Log { lo: 1.0, hi: 100.0 }, 50.0);
        assert!((y - want).abs() < 0.1, "{y} vs {want}");
        assert!(y > TOP && y < H - BOTTOM);
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
