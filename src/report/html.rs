//! `report.html`: one self-contained page with the summary tables and SVG
//! plots (latency spectrum per leg, throughput and p99 over time, the
//! capacity curve).

use super::summary::{LatencyStats, Summary};
use super::svg::{Series, esc, line_chart, linear_ticks, spectrum_chart};
use std::fmt::Write as _;

fn stats_rows(o: &mut String, rows: &[(&str, &LatencyStats)]) {
    o.push_str("<table><tr><th></th><th>count</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>max ms</th><th>mean ms</th></tr>");
    for (name, s) in rows {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td></tr>",
            esc(name),
            s.count,
            s.p50_ms,
            s.p90_ms,
            s.p99_ms,
            s.p999_ms,
            s.max_ms,
            s.mean_ms
        );
    }
    o.push_str("</table>");
}

/// The spectrum chart of every leg plus `e2e`.
pub fn spectrum_svg(s: &Summary) -> String {
    let series: Vec<(String, Vec<[f64; 2]>)> = s
        .spectrum
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    spectrum_chart("Latency percentile spectrum", &series)
}

/// Throughput and p99 over time, as two charts.
pub fn timeline_svgs(s: &Summary) -> (String, String) {
    let end = s
        .timeline
        .last()
        .map_or(1.0, |p| p.t_s)
        .max(s.duration_s)
        .max(1.0);
    let ticks = linear_ticks(0.0, end, "s");
    let rps = Series {
        name: "round trips/s".into(),
        points: s.timeline.iter().map(|p| (p.t_s, p.rps)).collect(),
    };
    let req = Series {
        name: "requests/s".into(),
        points: s
            .timeline
            .iter()
            .map(|p| (p.t_s, p.requests_per_s))
            .collect(),
    };
    let p99 = Series {
        name: "p99 e2e".into(),
        points: s.timeline.iter().map(|p| (p.t_s, p.p99_ms)).collect(),
    };
    let p50 = Series {
        name: "p50 e2e".into(),
        points: s.timeline.iter().map(|p| (p.t_s, p.p50_ms)).collect(),
    };
    (
        line_chart(
            "Throughput over time",
            "time",
            "per second",
            (0.0, end),
            &ticks,
            &[rps, req],
        ),
        line_chart(
            "Latency over time",
            "time",
            "ms",
            (0.0, end),
            &ticks,
            &[p99, p50],
        ),
    )
}

/// The capacity curve: achieved rate and p99 against the offered rate.
pub fn capacity_svgs(s: &Summary) -> Option<(String, String)> {
    let c = s.capacity.as_ref()?;
    if c.steps.is_empty() {
        return None;
    }
    let hi = c.steps.iter().map(|st| st.offered_rps).fold(1.0, f64::max);
    let ticks = linear_ticks(0.0, hi, "");
    let achieved = Series {
        name: "achieved/s".into(),
        points: c
            .steps
            .iter()
            .map(|st| (st.offered_rps, st.achieved_rps))
            .collect(),
    };
    let ideal = Series {
        name: "offered/s".into(),
        points: vec![(0.0, 0.0), (hi, hi)],
    };
    let p99 = Series {
        name: "p99 e2e".into(),
        points: c
            .steps
            .iter()
            .map(|st| (st.offered_rps, st.p99_ms))
            .collect(),
    };
    Some((
        line_chart(
            "Capacity: achieved vs offered round trips/s",
            "offered round trips/s",
            "achieved round trips/s",
            (0.0, hi),
            &ticks,
            &[achieved, ideal],
        ),
        line_chart(
            "Capacity: p99 vs offered round trips/s",
            "offered round trips/s",
            "p99 (ms)",
            (0.0, hi),
            &ticks,
            &[p99],
        ),
    ))
}

/// Renders `report.html`.
pub fn render(s: &Summary) -> String {
    let mut o = String::new();
    let verdict = if s.passed { "PASSED" } else { "FAILED" };
    let _ = write!(
        o,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>elicitkit load: {}</title><style>body{{font-family:sans-serif;margin:24px;max-width:1000px}}table{{border-collapse:collapse;margin:8px 0}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}td:first-child,th:first-child{{text-align:left}}.fail{{color:#b00;font-weight:bold}}.pass{{color:#070}}svg{{display:block;margin:12px 0}}</style></head><body>",
        esc(&s.plan)
    );
    let _ = write!(
        o,
        "<h1>elicitkit load: {} <span class=\"{}\">{verdict}</span></h1>",
        esc(&s.plan),
        if s.passed { "pass" } else { "fail" }
    );
    let r = &s.round_trips;
    let _ = write!(
        o,
        "<p>Run <code>{}</code> ({} model) against <code>{}</code>{}; {:.1} s, ended by {}{}.</p><p>{} round trips ({:.1}/s): {} success, {} expected rejections, {} unexpected, {} skipped. {} requests ({:.1}/s). Error rate {:.4}%.</p>",
        esc(&s.run_id),
        esc(&s.model),
        esc(&s.target),
        if s.embedded_target { " (embedded)" } else { "" },
        s.duration_s,
        esc(&s.ended_by),
        s.end_note
            .as_ref()
            .map(|n| format!(": {}", esc(n)))
            .unwrap_or_default(),
        r.total,
        s.rps,
        r.success,
        r.expected_rejection,
        r.unexpected,
        r.skipped,
        s.requests,
        s.requests_per_s,
        s.error_rate * 100.0
    );
    for (title, items) in [("Why it failed", &s.failures), ("Diagnoses", &s.diagnoses)] {
        if items.is_empty() {
            continue;
        }
        let _ = write!(o, "<h2>{title}</h2><ul>");
        for i in items {
            let _ = write!(o, "<li>{}</li>", esc(i));
        }
        o.push_str("</ul>");
    }
    if let Some(c) = &s.baseline {
        let (head, rows) = super::baseline_rows(c);
        let _ = write!(
            o,
            "<h2>Baseline</h2><p>{}</p><table><tr><th>leg</th><th>p50</th><th>p99</th><th>result</th></tr>",
            esc(&head)
        );
        for r in rows {
            let class = if r[3] == "REGRESSED" { "fail" } else { "pass" };
            let _ = write!(
                o,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td class=\"{class}\">{}</td></tr>",
                esc(&r[0]),
                esc(&r[1]),
                esc(&r[2]),
                esc(&r[3])
            );
        }
        o.push_str("</table>");
    }
    if !s.thresholds.is_empty() {
        o.push_str(
            "<h2>Thresholds</h2><table><tr><th>threshold</th><th>actual</th><th>result</th></tr>",
        );
        for t in &s.thresholds {
            let actual = if t.actual_text.is_empty() {
                t.actual.map_or("n/a".into(), |v| format!("{v:.4}"))
            } else {
                t.actual_text.clone()
            };
            let _ = write!(
                o,
                "<tr><td><code>{}</code>{}</td><td>{}</td><td class=\"{}\">{}</td></tr>",
                esc(&t.expr),
                if t.default { " (default)" } else { "" },
                esc(&actual),
                if t.passed { "pass" } else { "fail" },
                if t.passed { "pass" } else { "FAIL" }
            );
        }
        o.push_str("</table>");
    }
    o.push_str("<h2>Latency</h2>");
    o.push_str(&spectrum_svg(s));
    let mut rows: Vec<(&str, &LatencyStats)> =
        s.legs.iter().map(|(k, v)| (k.as_str(), v)).collect();
    rows.push(("end to end", &s.e2e));
    stats_rows(&mut o, &rows);
    o.push_str("<h2>Over time</h2>");
    let (tp, lat) = timeline_svgs(s);
    o.push_str(&tp);
    o.push_str(&lat);
    o.push_str("<h2>Scenarios</h2><table><tr><th>scenario</th><th>kind</th><th>round trips</th><th>success</th><th>expected rejections</th><th>unexpected</th><th>skipped</th><th>p50 ms</th><th>p99 ms</th></tr>");
    for (name, sc) in &s.scenarios {
        let c = &sc.outcomes;
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td></tr>",
            esc(name),
            esc(&sc.kind),
            c.total,
            c.success,
            c.expected_rejection,
            c.unexpected,
            c.skipped,
            sc.e2e.p50_ms,
            sc.e2e.p99_ms
        );
    }
    o.push_str("</table>");
    if !s.server_state.is_empty() {
        o.push_str("<h2>Target <code>Server-Timing: state</code></h2>");
        let rows: Vec<(&str, &LatencyStats)> = s
            .server_state
            .iter()
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        stats_rows(&mut o, &rows);
    }
    if !s.errors.is_empty() {
        o.push_str("<h2>Errors</h2><table><tr><th>class</th><th>count</th></tr>");
        for (c, n) in &s.errors {
            let _ = write!(o, "<tr><td>{}</td><td>{n}</td></tr>", esc(c));
        }
        o.push_str("</table><ul>");
        for m in &s.error_samples {
            let _ = write!(o, "<li>{}</li>", esc(m));
        }
        o.push_str("</ul>");
    }
    if let Some((a, b)) = capacity_svgs(s) {
        o.push_str("<h2>Capacity</h2>");
        o.push_str(&a);
        o.push_str(&b);
        if let Some(c) = &s.capacity {
            let _ = write!(
                o,
                "<p>Knee: {} round trips/s within <code>{}</code>; target CPU at the knee {} µs/round trip; instances for {}: {}.</p>",
                c.knee_rps.map_or("none".into(), |v| format!("{v:.1}")),
                esc(&c.slo.join(", ")),
                c.target_cpu_us_per_rt
                    .map_or("n/a".into(), |v| format!("{v:.1}")),
                c.target_rate.map_or("-".into(), |v| format!("{v:.0}/s")),
                c.instances_needed.map_or("n/a".into(), |v| v.to_string())
            );
        }
    }
    o.push_str("</body></html>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::summary::{CapacityStep, CapacitySummary, TimelinePoint};

    #[test]
    fn renders_all_plots() {
        let mut s = Summary {
            plan: "p<1>".into(),
            passed: true,
            ..Default::default()
        };
        s.spectrum
            .insert("e2e".into(), vec![[50.0, 1.0], [99.0, 2.0]]);
        s.timeline.push(TimelinePoint {
            t_s: 0.0,
            rps: 10.0,
            ..Default::default()
        });
        s.timeline.push(TimelinePoint {
            t_s: 1.0,
            rps: 12.0,
            ..Default::default()
        });
        s.capacity = Some(CapacitySummary {
            steps: vec![CapacityStep {
                offered_rps: 100.0,
                achieved_rps: 99.0,
                ..Default::default()
            }],
            ..Default::default()
        });
        let html = render(&s);
        assert!(html.contains("p&lt;1&gt;"));
        assert_eq!(
            html.matches("<svg").count(),
            5,
            "spectrum, 2 timeline, 2 capacity"
        );
        assert!(html.contains("PASSED"));
    }
}
