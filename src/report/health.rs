//! The target's health in the report: RSS, open descriptors and threads
//! over time (one SVG chart each, with the soak's least-squares line over
//! the steady phase), and the soak verdict as table rows shared by
//! Markdown and HTML.

use super::summary::{HealthSummary, Summary, Trend};
use super::svg::{Chart, Series, linear_ticks, render};

/// The health charts' ids, in page order.
pub const HEALTH_CHARTS: [&str; 3] = [
    "chart-health-rss",
    "chart-health-fds",
    "chart-health-threads",
];

const MIB: f64 = 1024.0 * 1024.0;

/// The phases in words, for the charts' x axis and the page.
pub fn phases_text(h: &HealthSummary) -> String {
    let mut t = format!(
        "seconds since sampling began; measured window {:.0}–{:.0} s",
        h.window_from_s, h.window_to_s
    );
    if let Some(s) = &h.soak
        && s.cool_down_s > 0.0
    {
        t.push_str(&format!(
            ", cool-down (no load) from {:.0} s for {:.0} s",
            h.load_end_s, s.cool_down_s
        ));
    }
    t
}

/// The least-squares line of `metric` over the steady phase, in the
/// chart's unit, when the soak judged it.
fn fit_line(h: &HealthSummary, metric: &str) -> Option<Series> {
    let t: &Trend = h
        .soak
        .as_ref()?
        .trends
        .iter()
        .find(|t| t.metric == metric)?;
    // The trend holds the slope per minute and the values at the ends;
    // draw the line through the steady end with that slope.
    let (x0, x1) = (h.window_from_s, h.window_to_s);
    let y1 = t.steady_end;
    let y0 = y1 - t.slope_per_min * (x1 - x0) / 60.0;
    Some(Series {
        name: format!(
            "fit: {:+.3}/min, R² {}",
            t.slope_per_min,
            t.r2.map_or("-".into(), |r| format!("{r:.2}"))
        ),
        points: vec![(x0, y0), (x1, y1)],
    })
}

/// The three health charts; none without samples.
pub fn health_svgs(s: &Summary) -> Vec<String> {
    let Some(h) = &s.health else {
        return Vec::new();
    };
    if h.samples.is_empty() {
        return Vec::new();
    }
    let end = h.samples.last().map_or(1.0, |p| p.t_s).max(1.0);
    let x_label = phases_text(h);
    let chart =
        |id: &str, title: &str, y: &str, metric: &str, get: fn(&super::HealthSample) -> f64| {
            let mut series = vec![Series {
                name: y.to_owned(),
                points: h.samples.iter().map(|p| (p.t_s, get(p))).collect(),
            }];
            series.extend(fit_line(h, metric));
            render(&Chart {
                id: id.into(),
                title: title.into(),
                x_label: x_label.clone(),
                y_label: y.into(),
                x_range: (0.0, end),
                x_ticks: linear_ticks(0.0, end, "s"),
                series,
                ..Chart::default()
            })
        };
    vec![
        chart(
            HEALTH_CHARTS[0],
            "Target memory (RSS) over time",
            "MiB",
            "rss",
            |p| p.rss_bytes as f64 / MIB,
        ),
        chart(
            HEALTH_CHARTS[1],
            "Target open descriptors over time",
            "descriptors",
            "fds",
            |p| p.fds as f64,
        ),
        chart(
            HEALTH_CHARTS[2],
            "Target threads over time",
            "threads",
            "threads",
            |p| p.threads as f64,
        ),
    ]
}

/// The soak verdict as rows: a heading, then per quantity `[quantity,
/// baseline → steady end → after, slope/min (R²), verdict]`.
pub fn soak_rows(s: &Summary) -> Option<(String, Vec<[String; 4]>)> {
    let h = s.health.as_ref()?;
    let soak = h.soak.as_ref()?;
    let head = format!(
        "soak: {:.0} s steady, {:.0} s cool-down; process {} ({}); growth counts with R² ≥ {}",
        soak.steady_s, soak.cool_down_s, h.pid, h.source, soak.min_r2
    );
    let rows = soak
        .trends
        .iter()
        .map(|t| {
            let after = t.after.map_or("-".into(), |a| format!("{a:.2}"));
            let kept = t
                .retained_pct
                .map_or(String::new(), |r| format!(" ({r:.0}% kept)"));
            [
                format!("{} ({})", t.metric, t.unit),
                format!("{:.2} → {:.2} → {after}{kept}", t.baseline, t.steady_end),
                format!(
                    "{:+.3}/min (R² {}; limit {}/min, floor {})",
                    t.slope_per_min,
                    t.r2.map_or("-".into(), |r| format!("{r:.2}")),
                    t.limit_per_min,
                    t.floor
                ),
                t.verdict.to_uppercase(),
            ]
        })
        .collect();
    Some((head, rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{HealthSample, SoakSummary};

    fn summary() -> Summary {
        let samples = (0..20u8)
            .map(|i| HealthSample {
                t_s: f64::from(i),
                rss_bytes: (10 + u64::from(i)) * 1024 * 1024,
                fds: 9,
                threads: 3,
            })
            .collect();
        Summary {
            health: Some(HealthSummary {
                pid: 42,
                source: "embedded server".into(),
                samples,
                window_from_s: 2.0,
                window_to_s: 14.0,
                load_end_s: 14.0,
                soak: Some(SoakSummary {
                    steady_s: 12.0,
                    cool_down_s: 5.0,
                    min_r2: 0.8,
                    passed: false,
                    keeps_for_s: None,
                    inconclusive: Vec::new(),
                    trends: vec![Trend {
                        metric: "rss".into(),
                        unit: "MiB".into(),
                        baseline: 10.0,
                        steady_end: 24.0,
                        after: Some(29.0),
                        slope_per_min: 60.0,
                        r2: Some(1.0),
                        verdict: "leaks".into(),
                        ..Default::default()
                    }],
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn three_charts_and_the_fit_line_on_the_judged_one() {
        let svgs = health_svgs(&summary());
        assert_eq!(svgs.len(), 3);
        for (svg, id) in svgs.iter().zip(HEALTH_CHARTS) {
            assert!(svg.contains(&format!("id=\"{id}\"")), "{id}");
        }
        assert!(svgs[0].contains("fit: +60.000/min, R² 1.00"), "{}", svgs[0]);
        assert!(!svgs[1].contains("fit:"), "no fds trend in this summary");
        assert!(svgs[0].contains("cool-down (no load) from 14 s"));
        assert!(health_svgs(&Summary::default()).is_empty());
    }

    #[test]
    fn soak_rows_say_the_verdict() {
        let (head, rows) = soak_rows(&summary()).unwrap();
        assert!(head.contains("process 42 (embedded server)"), "{head}");
        assert_eq!(rows[0][0], "rss (MiB)");
        assert!(
            rows[0][1].contains("10.00 → 24.00 → 29.00"),
            "{:?}",
            rows[0]
        );
        assert_eq!(rows[0][3], "LEAKS");
    }
}
