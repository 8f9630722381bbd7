//! `report.html`: one self-contained page (inline SVG, CSS and script, no
//! network) with the summary tables and charts: latency spectrum; round
//! trips/s, end-to-end, per-leg and per-scenario p50/p99, errors by kind and
//! round trips in flight over time; requests by instance behind a balancer;
//! the target's RSS, descriptors and threads and the soak verdict
//! ([`super::health`]); the capacity curve. Thresholds are drawn
//! on the charts they constrain ([`threshold_lines`]). The inline script
//! lets a click on a legend entry hide its series, records script errors
//! into `#script-errors`, and marks `<body data-ok="1">` when it ran.

use super::format::escape_html as esc;
use super::format::html_prose;
use super::summary::{ErrorGroup, LatencyStats, Summary, ThresholdLimit, group_samples};
use super::svg::{Chart, RefLine, Series, linear_ticks, render as chart, spectrum_chart};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The chart of requests/s by instance, in a run two or more answered.
pub const INSTANCES_CHART: &str = "chart-instances";

/// The charts a full report holds, by `id` (capacity charts only in a
/// capacity run, [`INSTANCES_CHART`] only behind a balancer).
pub const CHART_IDS: [&str; 9] = [
    "chart-spectrum",
    "chart-throughput",
    "chart-latency-e2e",
    "chart-legs-p99",
    "chart-legs-p50",
    "chart-scenarios-p99",
    "chart-scenarios-p50",
    "chart-errors",
    "chart-in-flight",
];

fn stats_rows(o: &mut String, rows: &[(&str, &LatencyStats)]) {
    o.push_str("<table><tr><th></th><th>count</th><th>p50 ms</th><th>p90 ms</th><th>p95 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>max ms</th><th>mean ms</th></tr>");
    for (name, s) in rows {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td></tr>",
            esc(name),
            s.count,
            s.p50_ms,
            s.p90_ms,
            s.p95_ms,
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

/// Which chart a threshold line is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineTarget {
    /// Round trips/s over time: `rps` thresholds.
    Throughput,
    /// End-to-end latency over time, and the capacity latency chart:
    /// latency thresholds on `e2e`.
    EndToEnd,
    /// Per-leg latency at this percentile (50 or 99): latency thresholds on
    /// legs whose percentile is nearer it than the other.
    Legs(u8),
    /// Error rate (%) over time: `error_rate` thresholds.
    ErrorRate,
}

/// The threshold lines a chart gets: each limit on the chart it
/// constrains, labelled with its expression.
pub fn threshold_lines(limits: &[(String, ThresholdLimit)], target: LineTarget) -> Vec<RefLine> {
    limits
        .iter()
        .filter(|(_, l)| match target {
            LineTarget::Throughput => l.metric == "rps",
            LineTarget::ErrorRate => l.metric == "error_rate",
            LineTarget::EndToEnd => l.metric == "latency" && l.selector == "e2e",
            LineTarget::Legs(p) => {
                let near_p99 = l.percentile >= 74.5;
                l.metric == "latency" && l.selector != "e2e" && near_p99 == (p >= 75)
            }
        })
        .map(|(expr, l)| RefLine {
            label: expr.clone(),
            y: l.value,
        })
        .collect()
}

fn limits(s: &Summary) -> Vec<(String, ThresholdLimit)> {
    s.thresholds
        .iter()
        .filter_map(|t| t.limit.clone().map(|l| (t.expr.clone(), l)))
        .collect()
}

fn time_chart(
    s: &Summary,
    id: &str,
    title: &str,
    y: &str,
    series: Vec<Series>,
    refs: Vec<RefLine>,
    log: bool,
) -> String {
    let end = s
        .timeline
        .last()
        .map_or(1.0, |p| p.t_s)
        .max(s.duration_s)
        .max(1.0);
    chart(&Chart {
        id: id.into(),
        title: title.into(),
        x_label: "time in the measured window".into(),
        y_label: y.into(),
        x_range: (0.0, end),
        x_ticks: linear_ticks(0.0, end, "s"),
        series,
        refs,
        allow_log: log,
        bands: s
            .service_gaps
            .iter()
            .map(|g| {
                let label = format!("service gap: {:.1} s with nothing answered", g.length_s);
                (g.from_s, g.from_s + g.length_s, label)
            })
            .collect(),
        x_hover: Some(|t| format!("{t:.1} s")),
    })
}

/// Per-name series over time, picked from each interval by `get`.
fn per_name(
    s: &Summary,
    get: impl Fn(&super::summary::TimelinePoint) -> Vec<(String, f64)>,
) -> Vec<Series> {
    let mut by: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for p in &s.timeline {
        for (name, v) in get(p) {
            by.entry(name).or_default().push((p.t_s, v));
        }
    }
    by.into_iter()
        .map(|(name, points)| Series { name, points })
        .collect()
}

/// Every over-time chart, in page order.
pub fn timeline_svgs(s: &Summary) -> Vec<String> {
    let lim = limits(s);
    let t = |f: fn(&super::summary::TimelinePoint) -> f64| -> Vec<(f64, f64)> {
        s.timeline.iter().map(|p| (p.t_s, f(p))).collect()
    };
    let mut throughput = vec![
        Series {
            name: "round trips/s".into(),
            points: t(|p| p.rps),
        },
        Series {
            name: "requests/s".into(),
            points: t(|p| p.requests_per_s),
        },
    ];
    // The load offered beside the load served (none from merged logs).
    if s.timeline.iter().any(|p| p.started_per_s > 0.0) {
        throughput.insert(
            0,
            Series {
                name: "round trips begun/s".into(),
                points: t(|p| p.started_per_s),
            },
        );
    }
    let mut out = vec![
        time_chart(
            s,
            "chart-throughput",
            "Throughput over time",
            "per second",
            throughput,
            threshold_lines(&lim, LineTarget::Throughput),
            false,
        ),
        time_chart(
            s,
            "chart-latency-e2e",
            "End-to-end latency over time (p50, p99)",
            "ms",
            vec![
                Series {
                    name: "p99 e2e".into(),
                    points: t(|p| p.p99_ms),
                },
                Series {
                    name: "p50 e2e".into(),
                    points: t(|p| p.p50_ms),
                },
            ],
            threshold_lines(&lim, LineTarget::EndToEnd),
            true,
        ),
    ];
    for (pct, id, target) in [
        (99u8, "chart-legs-p99", LineTarget::Legs(99)),
        (50, "chart-legs-p50", LineTarget::Legs(50)),
    ] {
        let series = per_name(s, |p| {
            p.legs
                .iter()
                .map(|(k, v)| (k.clone(), if pct == 99 { v.p99_ms } else { v.p50_ms }))
                .collect()
        });
        out.push(time_chart(
            s,
            id,
            &format!("Per-leg p{pct} over time"),
            "ms",
            series,
            threshold_lines(&lim, target),
            true,
        ));
    }
    for (pct, id) in [(99u8, "chart-scenarios-p99"), (50, "chart-scenarios-p50")] {
        let series = per_name(s, |p| {
            p.scenarios
                .iter()
                .map(|(k, v)| (k.clone(), if pct == 99 { v.p99_ms } else { v.p50_ms }))
                .collect()
        });
        out.push(time_chart(
            s,
            id,
            &format!("Per-scenario end-to-end p{pct} over time"),
            "ms",
            series,
            Vec::new(),
            true,
        ));
    }
    // Errors as a share of the interval's round trips, so the error-rate
    // threshold reads on the same axis.
    let mut errors = vec![Series {
        name: "all kinds".into(),
        points: s
            .timeline
            .iter()
            .map(|p| (p.t_s, pct_of(p.errors, p.rps, s)))
            .collect(),
    }];
    errors.extend(per_name(s, |p| {
        p.errors_by_kind
            .iter()
            .map(|(k, n)| (k.clone(), pct_of(*n, p.rps, s)))
            .collect()
    }));
    out.push(time_chart(
        s,
        "chart-errors",
        "Errors over time by kind (% of round trips)",
        "%",
        errors,
        threshold_lines(&lim, LineTarget::ErrorRate),
        false,
    ));
    out.push(time_chart(
        s,
        "chart-in-flight",
        if s.model == "closed" {
            "Round trips in flight over time (peak per interval; the running users)"
        } else {
            "Round trips in flight over time (peak per interval)"
        },
        "round trips",
        vec![Series {
            name: "in flight".into(),
            points: t(|p| p.in_flight_max as f64),
        }],
        Vec::new(),
        false,
    ));
    // Behind a balancer, each instance's requests over time: a dead,
    // drained or late instance shows as its line leaving or joining.
    let width = interval_width(s);
    let by_instance = per_name(s, |p| {
        p.instances
            .iter()
            .map(|(k, v)| (k.clone(), v.count as f64 / width))
            .collect()
    });
    if by_instance.len() >= 2 {
        out.push(time_chart(
            s,
            INSTANCES_CHART,
            "Requests/s by the instance that answered, over time",
            "requests/s",
            by_instance,
            Vec::new(),
            false,
        ));
    }
    out
}

/// The timeline's interval width in seconds (1 with fewer than two points).
fn interval_width(s: &Summary) -> f64 {
    s.timeline
        .get(1)
        .zip(s.timeline.first())
        .map_or(1.0, |(b, a)| (b.t_s - a.t_s).max(1e-9))
}

/// `n` as a percentage of an interval's round trips (`rps` × its width).
fn pct_of(n: u64, rps: f64, s: &Summary) -> f64 {
    let total = rps * interval_width(s);
    if total > 0.0 {
        n as f64 * 100.0 / total
    } else {
        0.0
    }
}

/// The target's health charts and the soak verdict, when sampled.
fn health_html(o: &mut String, s: &Summary) {
    let Some(h) = &s.health else {
        return;
    };
    let _ = write!(
        o,
        "<h2>Target health</h2><p id=\"health\">Process {} ({}); {}.</p>",
        h.pid,
        esc(&h.source),
        esc(&super::health::phases_text(h))
    );
    if let Some((head, rows)) = super::health::soak_rows(s) {
        let _ = write!(
            o,
            "<p>{}</p><table id=\"soak\"><tr><th>quantity</th><th>before → steady end → after</th><th>slope</th><th>verdict</th></tr>",
            esc(&head)
        );
        for r in rows {
            let class = if r[3] == "LEAKS" { "fail" } else { "pass" };
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{}</td></tr>",
                esc(&r[0]),
                esc(&r[1]),
                esc(&r[2]),
                esc(&r[3])
            );
        }
        o.push_str("</table>");
    }
    for c in super::health::health_svgs(s) {
        o.push_str(&c);
    }
}

/// The capacity curve: achieved rate, and p50/p99 with the SLO's latency
/// limits, against the offered rate.
pub fn capacity_svgs(s: &Summary) -> Option<(String, String)> {
    let c = s.capacity.as_ref()?;
    if c.steps.is_empty() {
        return None;
    }
    let hi = c.steps.iter().map(|st| st.offered_rps).fold(1.0, f64::max);
    let ticks = linear_ticks(0.0, hi, "");
    // By offered rate: bisection steps come after the coarse ones.
    let pts = |f: fn(&super::summary::CapacityStep) -> f64| -> Vec<(f64, f64)> {
        let mut p: Vec<(f64, f64)> = c.steps.iter().map(|st| (st.offered_rps, f(st))).collect();
        p.sort_by(|a, b| a.0.total_cmp(&b.0));
        p
    };
    let slo: Vec<(String, ThresholdLimit)> = c
        .slo_limits
        .iter()
        .map(|l| {
            let expr = c
                .slo
                .iter()
                .find(|e| l.metric == "latency" && e.contains(&l.selector))
                .cloned()
                .unwrap_or_else(|| format!("{} {}{}", l.metric, l.value, l.unit));
            (expr, l.clone())
        })
        .collect();
    // The knee's bracket shaded on both charts: within at its low end,
    // not within at its high end.
    let bands: Vec<(f64, f64, String)> = match (c.knee_offered_rps, c.first_bad_rps) {
        (Some(good), Some(bad)) if bad > good => vec![(
            good,
            bad,
            format!("the knee lies here: {good:.0}/s within the SLO, {bad:.0}/s not"),
        )],
        _ => Vec::new(),
    };
    let base =
        |id: &str, title: &str, y: &str, series: Vec<Series>, refs: Vec<RefLine>, log: bool| {
            chart(&Chart {
                id: id.into(),
                title: title.into(),
                x_label: "offered round trips/s".into(),
                y_label: y.into(),
                x_range: (0.0, hi),
                x_ticks: ticks.clone(),
                series,
                refs,
                allow_log: log,
                bands: bands.clone(),
                x_hover: Some(|r| format!("{r:.0}/s offered")),
            })
        };
    Some((
        base(
            "chart-capacity-rate",
            "Capacity: achieved vs offered round trips/s",
            "achieved round trips/s",
            vec![
                Series {
                    name: "achieved/s".into(),
                    points: pts(|st| st.achieved_rps),
                },
                Series {
                    name: "offered/s".into(),
                    points: vec![(0.0, 0.0), (hi, hi)],
                },
                Series {
                    name: "knee".into(),
                    points: c.knee_offered_rps.zip(c.knee_rps).into_iter().collect(),
                },
            ],
            Vec::new(),
            false,
        ),
        base(
            "chart-capacity-p99",
            "Capacity: end-to-end p99 and p50 vs offered round trips/s",
            "ms",
            vec![
                Series {
                    name: "p99 e2e".into(),
                    points: pts(|st| st.p99_ms),
                },
                Series {
                    name: "p50 e2e".into(),
                    points: pts(|st| st.p50_ms),
                },
            ],
            threshold_lines(&slo, LineTarget::EndToEnd),
            true,
        ),
    ))
}

/// The error messages grouped with their counts: the run's groups, or
/// (a summary without them) its samples grouped.
pub fn error_groups(s: &Summary) -> Vec<ErrorGroup> {
    if s.error_groups.is_empty() {
        group_samples(&s.error_samples)
    } else {
        s.error_groups.clone()
    }
}

const SCRIPT: &str = r#"
window.onerror = function (msg, src, line) {
  var ul = document.getElementById('script-errors');
  if (ul) { var li = document.createElement('li'); li.textContent = msg + ' (line ' + line + ')'; ul.appendChild(li); }
};
(function () {
  var charts = document.querySelectorAll('svg.chart');
  charts.forEach(function (svg) {
    svg.querySelectorAll('g.legend').forEach(function (item) {
      item.style.cursor = 'pointer';
      item.addEventListener('click', function () {
        var g = svg.querySelector('g.series[data-series="' + item.dataset.series + '"]');
        if (!g) { return; }
        var hidden = g.style.display === 'none';
        g.style.display = hidden ? '' : 'none';
        item.style.opacity = hidden ? '1' : '0.35';
      });
    });
  });
  document.body.dataset.charts = String(charts.length);
  document.body.dataset.ok = '1';
})();
"#;

/// The capacity section (`#capacity`), first after the headline of a
/// capacity run: the knee in words, the step table with each sample's
/// p99, then both charts with the knee marked and its bracket shaded.
fn capacity_html(o: &mut String, s: &Summary) {
    let (Some(c), Some((rate, p99))) = (&s.capacity, capacity_svgs(s)) else {
        return;
    };
    let _ = write!(
        o,
        "<h2>Capacity</h2><p id=\"capacity-knee\"><code>{}</code>: {}</p><table id=\"capacity-steps\"><tr>",
        esc(&c.slo.join(", ")),
        html_prose(&super::capacity::knee_text(c))
    );
    let (head, rows) = super::capacity::step_rows(c);
    for h in head {
        let _ = write!(o, "<th>{}</th>", esc(h));
    }
    o.push_str("</tr>");
    for (r, step) in rows.iter().zip(&c.steps) {
        let class = if step.within_slo { "pass" } else { "fail" };
        let _ = write!(o, "<tr class=\"{class}\">");
        for cell in r {
            let _ = write!(o, "<td>{}</td>", esc(cell));
        }
        o.push_str("</tr>");
    }
    let _ = write!(
        o,
        "</table><p>{}</p>",
        html_prose(super::capacity::STEP_NOTE)
    );
    o.push_str(&rate);
    o.push_str(&p99);
    for n in &c.notes {
        let _ = write!(o, "<p class=\"note\">{}</p>", html_prose(n));
    }
}

fn kv_table(o: &mut String, id: &str, rows: &[(String, String)]) {
    let _ = write!(o, "<table id=\"{id}\">");
    for (k, v) in rows {
        let _ = write!(o, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    }
    o.push_str("</table>");
}

/// The "Instances" section: one line for one instance, else a table
/// (`#instances`).
fn instances_html(o: &mut String, s: &Summary) {
    use super::instances::{INSTANCE_COLUMNS, InstancesView, instances_view};
    match instances_view(s) {
        InstancesView::None => {}
        InstancesView::One(line) => {
            let _ = write!(
                o,
                "<h2>Instances</h2><p id=\"instances\">{}</p>",
                esc(&line)
            );
        }
        InstancesView::Table(head, rows) => {
            let _ = write!(
                o,
                "<h2>Instances</h2><p>{}</p><table id=\"instances\"><tr>",
                esc(&head)
            );
            for c in INSTANCE_COLUMNS {
                let _ = write!(o, "<th>{}</th>", esc(c));
            }
            o.push_str("</tr>");
            for r in rows {
                o.push_str("<tr>");
                for c in &r {
                    let _ = write!(o, "<td>{}</td>", esc(c));
                }
                o.push_str("</tr>");
            }
            o.push_str("</table>");
        }
    }
}

/// Renders `report.html`.
pub fn render(s: &Summary) -> String {
    let mut o = String::new();
    let verdict = s.verdict_word();
    let _ = write!(
        o,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>elicitkit load: {}</title><style>body{{font-family:sans-serif;margin:24px;max-width:1800px}}table{{border-collapse:collapse;margin:8px 0}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}td:first-child,th:first-child{{text-align:left}}.fail{{color:#D55E00;font-weight:bold}}.pass{{color:#0072B2}}svg{{display:block;margin:12px 0}}svg.chart{{display:inline-block;vertical-align:top;width:100%;max-width:720px;height:auto;margin:12px 16px 12px 0}}@media (min-width:1200px){{svg.chart{{width:calc(50% - 16px);max-width:none}}}}th{{background:#f4f4f4}}</style></head><body><ul id=\"script-errors\"></ul>",
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
    if let Some(w) = super::window_text(s) {
        let _ = write!(o, "<p id=\"window\">{}.</p>", esc(&w));
    }
    if let Some(d) = &s.delivery {
        let _ = write!(
            o,
            "<p id=\"delivery\">Offered {:.1} round trips/s, achieved {:.1}/s ({:.1}% of the \
             plan){}.</p>",
            d.offered_rps,
            d.achieved_rps,
            d.delivered_pct,
            d.limited_by.as_deref().map_or(String::new(), |by| format!(
                ": short, limited by the {}",
                esc(by)
            ))
        );
    }
    if let Some(f) = s.frozen.as_ref().filter(|f| f.spells > 0) {
        let _ = write!(
            o,
            "<p id=\"frozen\">Frozen {:.1}% of the window: {} spells of up to {:.2} s with round \
             trips waiting and none answered.</p>",
            f.share_pct, f.spells, f.longest_s
        );
    }
    capacity_html(&mut o, s);
    let gaps: Vec<String> = s.service_gaps.iter().map(super::gap_text).collect();
    let unwell = s
        .generator_health
        .as_ref()
        .map_or(&[][..], |g| &g.problems[..]);
    for (title, items) in [
        ("Why it failed", &s.failures[..]),
        ("Why it is inconclusive", unwell),
        ("Service gaps", &gaps[..]),
        ("Diagnoses", &s.diagnoses[..]),
    ] {
        if items.is_empty() {
            continue;
        }
        let _ = write!(o, "<h2>{title}</h2><ul>");
        for i in items {
            let _ = write!(o, "<li>{}</li>", html_prose(i));
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
    if let Some(c) = &s.e2e_corrected {
        rows.push(("end to end, corrected", c));
    }
    stats_rows(&mut o, &rows);
    if s.e2e_corrected.is_some() {
        let _ = write!(
            o,
            "<p id=\"corrected\"><em>Corrected</em>: closed model, with the {} round trips \
             stalled users would have started at their own pace backfilled (coordinated \
             omission); thresholds on <code>e2e</code> judge this row.</p>",
            s.backfilled
        );
    }
    let phases = super::phases::rows(s);
    if !phases.is_empty() {
        o.push_str("<h3>Where the time goes</h3><table><tr><th>leg</th>");
        for h in super::phases::HEADS {
            let _ = write!(o, "<th>{h} ms</th>");
        }
        o.push_str("<th>connections</th></tr>");
        for r in &phases {
            let _ = write!(o, "<tr><td>{}</td>", esc(&r.leg));
            for c in &r.cells {
                let _ = write!(o, "<td>{}</td>", esc(c));
            }
            let _ = write!(o, "<td>{}</td></tr>", esc(&r.connections));
        }
        let _ = write!(o, "</table><p>{}</p>", esc(super::phases::NOTE));
    }
    instances_html(&mut o, s);
    o.push_str("<h2>Over time</h2>");
    for c in timeline_svgs(s) {
        o.push_str(&c);
    }
    health_html(&mut o, s);
    o.push_str("<h2>Scenarios</h2><table><tr><th>scenario</th><th>kind</th><th>round trips</th><th>success</th><th>expected rejections</th><th>unexpected</th><th>skipped</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th></tr>");
    for (name, sc) in &s.scenarios {
        let c = &sc.outcomes;
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td></tr>",
            esc(name),
            esc(&sc.kind),
            c.total,
            c.success,
            c.expected_rejection,
            c.unexpected,
            c.skipped,
            sc.e2e.p50_ms,
            sc.e2e.p95_ms,
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
        o.push_str("</table>");
    }
    let groups = error_groups(s);
    if !groups.is_empty() {
        o.push_str("<h3>Error samples</h3><table id=\"error-samples\"><tr><th>message</th><th>count</th></tr>");
        for g in &groups {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>×{}</td></tr>",
                esc(&g.message),
                g.count
            );
        }
        o.push_str("</table>");
    }
    o.push_str("<h2>Status codes</h2>");
    if s.status_codes.is_empty() {
        o.push_str("<p id=\"status-codes\">Not recorded (a merged report: interval logs hold no status codes).</p>");
    } else {
        let codes: std::collections::BTreeSet<&String> =
            s.status_codes.values().flat_map(|m| m.keys()).collect();
        o.push_str("<table id=\"status-codes\"><tr><th>leg</th>");
        for c in &codes {
            let _ = write!(o, "<th>{}</th>", esc(c));
        }
        o.push_str("</tr>");
        for (leg, m) in &s.status_codes {
            let _ = write!(o, "<tr><td>{}</td>", esc(leg));
            for c in &codes {
                let _ = write!(o, "<td>{}</td>", m.get(*c).copied().unwrap_or(0));
            }
            o.push_str("</tr>");
        }
        o.push_str("</table>");
    }
    o.push_str("<h2>CPU</h2>");
    let mut cpu_rows = Vec::new();
    for (who, c) in [
        ("generator (this process)", &s.generator_cpu),
        ("target (embedded server, --cpu-pid)", &s.target_cpu),
    ] {
        if let Some(c) = c {
            cpu_rows.push((
                who.to_owned(),
                format!(
                    "{:.2} s user+sys ({:.0}% of one core over the measured window); {} µs/request; {} µs/round trip",
                    c.cpu_s,
                    c.cpu_s * 100.0 / s.duration_s.max(1e-9),
                    c.us_per_request.map_or("-".into(), |v| format!("{v:.1}")),
                    c.us_per_round_trip.map_or("-".into(), |v| format!("{v:.1}"))
                ),
            ));
        }
    }
    if cpu_rows.is_empty() {
        o.push_str("<p id=\"cpu\">Not measured.</p>");
    } else {
        kv_table(&mut o, "cpu", &cpu_rows);
        o.push_str("<p>CPU covers the whole run (start-up and warm-up included), per request of everything sent.</p>");
    }
    o.push_str("<h2>Settings</h2>");
    let rows: Vec<(String, String)> = s
        .settings
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    kv_table(&mut o, "settings", &rows);
    let _ = writeln!(o, "<script>{SCRIPT}</script></body></html>");
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
            11,
            "spectrum, 8 over time, 2 capacity"
        );
        for id in CHART_IDS
            .iter()
            .chain(&["chart-capacity-rate", "chart-capacity-p99"])
        {
            assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
        }
        assert!(html.contains("document.body.dataset.ok"));
        // Offline: nothing is fetched (the SVG namespace URI is a name).
        for fetch in ["src=", "href=", "url(", "@import"] {
            assert!(!html.contains(fetch), "{fetch} in an offline page");
        }
        assert!(html.contains("PASSED"));
        assert!(
            !html.contains(INSTANCES_CHART),
            "one instance or none: no chart"
        );
    }

    #[test]
    fn the_load_offered_is_drawn_only_when_starts_were_counted() {
        let point = |t_s: f64, started_per_s: f64| TimelinePoint {
            t_s,
            rps: 10.0,
            started_per_s,
            ..Default::default()
        };
        let mut s = Summary {
            timeline: vec![point(0.0, 0.0), point(1.0, 0.0)],
            ..Default::default()
        };
        assert!(!timeline_svgs(&s)[0].contains("round trips begun/s"));
        s.timeline = vec![point(0.0, 30.0), point(1.0, 90.0)];
        assert!(timeline_svgs(&s)[0].contains("round trips begun/s"));
    }

    #[test]
    fn two_instances_get_a_requests_by_instance_chart() {
        use crate::report::summary::PointLatency;
        let mut s = Summary::default();
        for (t, a, b) in [(0.0, 40, 60), (1.0, 50, 0)] {
            let mut p = TimelinePoint {
                t_s: t,
                ..Default::default()
            };
            for (name, count) in [("i0", a), ("i1", b)] {
                if count > 0 {
                    let pt = PointLatency {
                        count,
                        ..Default::default()
                    };
                    p.instances.insert(name.into(), pt);
                }
            }
            s.timeline.push(p);
        }
        let svgs = timeline_svgs(&s);
        let chart = svgs
            .iter()
            .find(|c| c.contains(INSTANCES_CHART))
            .expect("an instances chart");
        assert!(chart.contains("i0") && chart.contains("i1"), "{chart}");
        s.timeline.iter_mut().for_each(|p| {
            p.instances.remove("i1");
        });
        let svgs = timeline_svgs(&s);
        assert!(!svgs.iter().any(|c| c.contains(INSTANCES_CHART)));
    }

    fn limit(metric: &str, selector: &str, percentile: f64, value: f64) -> ThresholdLimit {
        ThresholdLimit {
            metric: metric.into(),
            selector: selector.into(),
            percentile,
            value,
            unit: String::new(),
        }
    }

    #[test]
    fn thresholds_go_on_the_charts_they_constrain() {
        let lim = vec![
            (
                "p99(e2e) < 50ms".to_owned(),
                limit("latency", "e2e", 99.0, 50.0),
            ),
            (
                "p99(retry) < 20ms".to_owned(),
                limit("latency", "retry", 99.0, 20.0),
            ),
            (
                "p50(first) < 5ms".to_owned(),
                limit("latency", "first", 50.0, 5.0),
            ),
            (
                "error_rate < 1%".to_owned(),
                limit("error_rate", "", 0.0, 1.0),
            ),
            ("rps > 100".to_owned(), limit("rps", "", 0.0, 100.0)),
        ];
        let on = |t| -> Vec<String> {
            threshold_lines(&lim, t)
                .into_iter()
                .map(|r| r.label)
                .collect()
        };
        assert_eq!(on(LineTarget::EndToEnd), ["p99(e2e) < 50ms"]);
        assert_eq!(on(LineTarget::Legs(99)), ["p99(retry) < 20ms"]);
        assert_eq!(on(LineTarget::Legs(50)), ["p50(first) < 5ms"]);
        assert_eq!(on(LineTarget::ErrorRate), ["error_rate < 1%"]);
        assert_eq!(on(LineTarget::Throughput), ["rps > 100"]);
        assert_eq!(threshold_lines(&lim, LineTarget::Throughput)[0].y, 100.0);
    }

    #[test]
    fn identical_error_samples_are_one_row_with_a_count() {
        let mut s = Summary {
            error_samples: vec!["a: timeout: slow".to_owned(); 20],
            ..Default::default()
        };
        s.error_samples.push("b: http_error: 500".into());
        let g = error_groups(&s);
        assert_eq!(g.len(), 2);
        assert_eq!(
            (g[0].message.as_str(), g[0].count),
            ("a: timeout: slow", 20)
        );
        assert_eq!(g[1].count, 1);
        s.errors.insert("timeout".into(), 20);
        let html = render(&s);
        assert!(html.contains("×20") && html.contains("×1<"), "grouped rows");
        assert_eq!(html.matches("a: timeout: slow").count(), 1);
    }
}
