//! Turns a [`MetricSet`] into a [`Summary`] and evaluates thresholds;
//! [`baseline`] compares a run with an earlier one (`--baseline`);
//! [`trend`] fits a least-squares line; [`soak`] judges the target's
//! health samples of a soak (does memory or the descriptor count grow?).

pub mod baseline;
pub mod delivery;
pub mod soak;
pub mod trend;

use crate::load::exec::engine::EndReason;
use crate::load::metrics::gaps;
use crate::load::metrics::hlog::{E2E, GAP, INST, LEG, STATE};
use crate::load::metrics::set::{MetricSet, is_error_label};
use crate::load::spec::plan::ScenarioSpec;
use crate::load::spec::threshold::{Metric, Threshold, is_retry_leg};
use crate::report::{
    OutcomeCounts, PointLatency, SCHEMA_VERSION, ScenarioSummary, Summary, ThresholdLimit,
    ThresholdResult, TimelinePoint,
};
use hdrhistogram::Histogram;

/// Percentiles of the spectrum.
const SPECTRUM: [f64; 12] = [
    0.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 99.999,
];

use crate::load::metrics::measure::median_e2e;
pub use crate::load::metrics::measure::{frozen, measure, service_gaps};
pub use crate::load::metrics::set::latency_stats;
use crate::load::metrics::set::us_to_ms;

/// `[percentile, ms]` pairs for the spectrum plot.
pub fn spectrum(h: &Histogram<u64>) -> Vec<[f64; 2]> {
    if h.is_empty() {
        return Vec::new();
    }
    SPECTRUM
        .iter()
        .map(|&p| [p, us_to_ms(h.value_at_percentile(p))])
        .collect()
}

/// Evaluates thresholds, each flagged when it is a plan default.
pub fn evaluate(thresholds: &[(Threshold, bool)], set: &MetricSet) -> Vec<ThresholdResult> {
    thresholds
        .iter()
        .map(|(t, default)| {
            let actual = measure(t, set);
            ThresholdResult {
                expr: t.expr.clone(),
                actual,
                passed: actual.is_some_and(|v| t.passes(v)),
                actual_text: actual.map_or_else(|| "nothing measured".into(), |v| t.value_text(v)),
                default: *default,
                limit: chart_limit(t),
            }
        })
        .collect()
}

/// Where a chart draws a threshold's limit (latency in ms, error rate in
/// percent, rate per second); `None` for counts and skipped rates.
pub fn chart_limit(t: &Threshold) -> Option<ThresholdLimit> {
    let (metric, selector, percentile, value, unit) = match &t.metric {
        Metric::Latency { stat, selector } => {
            ("latency", selector.text(), stat.percentile(), t.limit, "ms")
        }
        Metric::ErrorRate => ("error_rate", String::new(), 0.0, t.limit * 100.0, "%"),
        Metric::Rps => ("rps", String::new(), 0.0, t.limit, "/s"),
        Metric::Ok(_)
        | Metric::SkippedRate(_)
        | Metric::Misrouted
        | Metric::ServiceGaps
        | Metric::FrozenTime => {
            return None;
        }
    };
    Some(ThresholdLimit {
        metric: metric.into(),
        selector,
        percentile,
        value,
        unit: unit.into(),
    })
}

/// Evaluates plain thresholds (a capacity SLO).
pub fn evaluate_plain(thresholds: &[Threshold], set: &MetricSet) -> Vec<ThresholdResult> {
    let flagged: Vec<(Threshold, bool)> = thresholds.iter().map(|t| (t.clone(), false)).collect();
    evaluate(&flagged, set)
}

/// The share of legs (MRTR calls and flow pages) whose transfer gap is a
/// stall ([`crate::client::stall`]), when it makes a pattern: "responses
/// stall in their tail".
pub fn tail_stall(set: &MetricSet) -> Option<String> {
    use crate::client::stall::{ADVICE, STALL_MAX, STALL_MIN, is_pattern};
    let wanted = |n: &str| {
        n == "tools/call #1"
            || is_retry_leg(n)
            || n == "tools/call replay"
            || n.starts_with("flow page")
    };
    let (lo, hi) = (STALL_MIN.as_micros() as u64, STALL_MAX.as_micros() as u64);
    let mut legs = 0u64;
    let mut stalled = 0u64;
    for (name, h) in set.with_prefix(GAP) {
        if wanted(name) {
            legs += h.len();
            stalled += h.count_between(lo, hi);
        }
    }
    (legs >= 20 && is_pattern(stalled, legs)).then(|| {
        format!(
            "{ADVICE} ({stalled} of {legs} replies, {:.0}%, waited {}–{} ms between their \
             headers, first body byte and end)",
            stalled as f64 * 100.0 / legs as f64,
            STALL_MIN.as_millis(),
            STALL_MAX.as_millis()
        )
    })
}

/// Timeline points; a last interval shorter than half the others (the
/// stragglers after the schedule ended) is folded into the one before it,
/// so the plot does not end in a spurious dip or spike.
pub fn timeline_points(
    intervals: &[crate::load::metrics::set::IntervalStats],
) -> Vec<TimelinePoint> {
    let mut iv: Vec<crate::load::metrics::set::IntervalStats> = intervals.to_vec();
    if iv.len() >= 2 {
        let nominal = iv[0].len_s;
        let last = iv[iv.len() - 1].clone();
        if last.len_s < nominal / 2.0 {
            iv.pop();
            if let Some(prev) = iv.last_mut() {
                prev.len_s += last.len_s;
                prev.round_trips += last.round_trips;
                prev.started += last.started;
                prev.requests += last.requests;
                prev.errors += last.errors;
                prev.p99_ms = prev.p99_ms.max(last.p99_ms);
                prev.in_flight_max = prev.in_flight_max.max(last.in_flight_max);
                for (k, h) in last.metrics {
                    let e = prev.metrics.entry(k).or_default();
                    e.count += h.count;
                    e.p99_ms = e.p99_ms.max(h.p99_ms);
                    if e.p50_ms == 0.0 {
                        e.p50_ms = h.p50_ms;
                    }
                }
            }
        }
    }
    iv.iter()
        .map(|t| {
            let len = t.len_s.max(1e-9);
            TimelinePoint {
                t_s: t.start_s,
                rps: t.round_trips as f64 / len,
                started_per_s: t.started as f64 / len,
                requests_per_s: t.requests as f64 / len,
                errors: t.errors,
                p50_ms: t.p50_ms,
                p99_ms: t.p99_ms,
                in_flight_max: t.in_flight_max,
                errors_by_kind: errors_by_kind(&t.metrics),
                legs: points(&t.metrics, LEG),
                scenarios: points(&t.metrics, E2E),
                instances: points(&t.metrics, INST),
            }
        })
        .collect()
}

/// The interval's histograms under `prefix`, as count, p50 and p99.
fn points(
    metrics: &std::collections::BTreeMap<String, crate::report::LatencyStats>,
    prefix: &str,
) -> std::collections::BTreeMap<String, PointLatency> {
    metrics
        .iter()
        .filter_map(|(k, h)| {
            let name = k.strip_prefix(prefix)?;
            Some((
                name.to_owned(),
                PointLatency {
                    count: h.count,
                    p50_ms: h.p50_ms,
                    p99_ms: h.p99_ms,
                },
            ))
        })
        .collect()
}

/// The interval's unexpected outcomes by class (from its `out:` tags).
fn errors_by_kind(
    metrics: &std::collections::BTreeMap<String, crate::report::LatencyStats>,
) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for (k, h) in metrics {
        if let Some((_, label)) = k
            .strip_prefix(crate::load::metrics::hlog::OUT)
            .and_then(|r| r.rsplit_once(':'))
            && is_error_label(label)
        {
            *out.entry(label.to_owned()).or_insert(0) += h.count;
        }
    }
    out
}

/// Facts about a run that the metrics do not hold.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// Run id.
    pub run_id: String,
    /// Plan name.
    pub plan: String,
    /// Plan file.
    pub plan_file: String,
    /// MCP URL.
    pub target: String,
    /// Embedded target?
    pub embedded_target: bool,
    /// `closed`, `open`, `capacity`, `merged`.
    pub model: String,
    /// Start, Unix seconds.
    pub started_unix: f64,
    /// The warm-up before the measured window.
    pub warmup_s: f64,
    /// Why it ended.
    pub ended_by: EndReason,
    /// Why, in words.
    pub end_note: Option<String>,
}

/// Builds the summary (thresholds evaluated; `passed` also requires a
/// normal end), with the reasons it failed and what the measurements say.
pub fn build(
    set: &MetricSet,
    info: &RunInfo,
    scenarios: &[ScenarioSpec],
    thresholds: &[(Threshold, bool)],
) -> Summary {
    let secs = set.elapsed.as_secs_f64();
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let counts = set.outcome_counts();
    let mut round_trips = OutcomeCounts::default();
    let mut errors = std::collections::BTreeMap::new();
    let mut per_scenario: std::collections::BTreeMap<String, ScenarioSummary> = scenarios
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                ScenarioSummary {
                    kind: s.kind.as_str().to_owned(),
                    tool: s.tool.clone(),
                    weight: s.weight,
                    ..Default::default()
                },
            )
        })
        .collect();
    for ((scenario, label), n) in &counts {
        let sc = per_scenario.entry(scenario.clone()).or_default();
        for c in [&mut round_trips, &mut sc.outcomes] {
            if label != "skipped" {
                c.total += n;
            }
            match label.as_str() {
                "success" => c.success += n,
                "expected_rejection" => c.expected_rejection += n,
                "skipped" => c.skipped += n,
                _ => c.unexpected += n,
            }
        }
        if is_error_label(label) {
            *errors.entry(label.clone()).or_insert(0) += n;
            *sc.errors.entry(label.clone()).or_insert(0) += n;
        }
    }
    let closed = info.model == crate::load::spec::shape::Model::Closed.as_str();
    for (name, h) in set.with_prefix(E2E) {
        let sc = per_scenario.entry(name.to_owned()).or_default();
        sc.e2e = latency_stats(h);
        if closed {
            sc.e2e_corrected = Some(latency_stats(&set.e2e_judged_of(name)));
        }
    }
    let mut spectra = std::collections::BTreeMap::new();
    let legs = set
        .with_prefix(LEG)
        .map(|(n, h)| {
            spectra.insert(n.to_owned(), spectrum(h));
            (n.to_owned(), latency_stats(h))
        })
        .collect();
    let e2e_all = set.e2e_all();
    spectra.insert("e2e".to_owned(), spectrum(&e2e_all));
    let timeline = timeline_points(&set.timeline);
    let results = evaluate(thresholds, set);
    let normal_end = info.ended_by.is_normal();
    let passed = normal_end && results.iter().all(|r| r.passed);
    let mut failures = Vec::new();
    if !normal_end {
        failures.push(format!(
            "the run ended by {}{}",
            info.ended_by.as_str(),
            info.end_note
                .as_ref()
                .map(|n| format!(": {n}"))
                .unwrap_or_default()
        ));
    }
    for (r, (t, _)) in results.iter().zip(thresholds) {
        if r.passed {
            continue;
        }
        let why = match &t.metric {
            Metric::Ok(sc) => {
                let first = set
                    .samples
                    .iter()
                    .find(|g| g.message.starts_with(&format!("{sc}: ")))
                    .map(|g| g.message.clone())
                    .or_else(|| {
                        set.skip_reasons
                            .get(sc)
                            .map(|w| format!("{sc}: skipped: {w}"))
                    });
                format!(
                    "scenario {sc} had no round trip that went the expected way{}",
                    first.map(|f| format!(" (first: {f})")).unwrap_or_default()
                )
            }
            Metric::SkippedRate(sc) if r.actual.is_none() => {
                format!("scenario {sc}: no attempt measured, so its skipped rate is unknown")
            }
            Metric::ServiceGaps if r.actual.is_some() => {
                let found = service_gaps(set);
                let more = match found.len() {
                    0 | 1 => String::new(),
                    n => format!(" (and {} more)", n - 1),
                };
                format!(
                    "threshold `{}` failed: {}{more}",
                    r.expr,
                    found
                        .first()
                        .map_or_else(|| "-".into(), |g| crate::report::gap_text(&g.report()))
                )
            }
            Metric::FrozenTime if r.actual.is_some() => {
                let f = frozen(set).unwrap_or_default();
                format!(
                    "threshold `{}` failed: the target was frozen {} of the window: {} spells \
                     of up to {:.1} s ({:.1} s in all) with round trips waiting and none answered",
                    r.expr, r.actual_text, f.spells, f.longest_s, f.frozen_s
                )
            }
            Metric::SkippedRate(sc) => format!(
                "scenario {sc}: {} of its attempts were skipped: {}",
                r.actual_text,
                set.skip_reasons.get(sc).map_or("-", String::as_str)
            ),
            _ => format!("threshold `{}` failed: actual {}", r.expr, r.actual_text),
        };
        failures.push(why);
    }
    let e2e_corrected = closed.then(|| latency_stats(&set.e2e_judged()));
    let mut diagnoses: Vec<String> = tail_stall(set).into_iter().collect();
    diagnoses.extend(omission(set, &e2e_all, e2e_corrected.as_ref()));
    diagnoses.extend(collapses(&timeline));
    diagnoses.extend(budget_full(&set.samples));
    let error_fraction = if round_trips.total > 0 {
        round_trips.unexpected as f64 / round_trips.total as f64
    } else {
        0.0
    };
    Summary {
        schema: SCHEMA_VERSION,
        run_id: info.run_id.clone(),
        plan: info.plan.clone(),
        plan_file: info.plan_file.clone(),
        target: info.target.clone(),
        embedded_target: info.embedded_target,
        model: info.model.clone(),
        started_unix: info.started_unix,
        duration_s: secs,
        window: crate::report::WindowSummary {
            from_unix: set.window.from_unix,
            to_unix: set.window.from_unix + secs,
            lead_s: set.window.lead.as_secs_f64(),
            warmup_s: info.warmup_s,
            before_round_trips: set.window.before.0,
            after_round_trips: set.window.after.0,
        },
        ended_by: info.ended_by.as_str().into(),
        end_note: info.end_note.clone(),
        error_rate: error_fraction,
        error_rate_pct: error_fraction * 100.0,
        rps: per_s(round_trips.total),
        round_trips,
        requests: set.requests(),
        requests_per_s: per_s(set.requests()),
        errors,
        error_samples: set.samples.iter().map(|g| g.message.clone()).collect(),
        error_groups: set.samples.clone(),
        status_codes: set.status_codes.clone(),
        instances: set.instances.clone(),
        settings: Default::default(),
        legs,
        e2e: latency_stats(&e2e_all),
        scenarios: per_scenario,
        server_state: set
            .with_prefix(STATE)
            .map(|(n, h)| (n.to_owned(), latency_stats(h)))
            .collect(),
        spectrum: spectra,
        timeline,
        thresholds: results,
        passed,
        capacity: None,
        generator_cpu: None,
        target_cpu: None,
        files: Default::default(),
        failures,
        baseline: None,
        diagnoses,
        phases: crate::load::metrics::phases::by_leg(
            set.with_prefix(crate::load::metrics::phases::PHASE),
        )
        .into_iter()
        .map(|(leg, m)| {
            let m = m.into_iter().map(|(p, h)| (p.to_owned(), latency_stats(h)));
            (leg.to_owned(), m.collect())
        })
        .collect(),
        gaps: set
            .with_prefix(GAP)
            .map(|(n, h)| (n.to_owned(), latency_stats(h)))
            .collect(),
        discovery: Vec::new(),
        verdict: if passed { "passed" } else { "failed" }.into(),
        generator_health: None,
        service_gaps: service_gaps(set).iter().map(gaps::Spell::report).collect(),
        service_gap_floor_ms: set
            .spells
            .is_some()
            .then(|| gaps::floor(median_e2e(set)).as_secs_f64() * 1000.0),
        health: None,
        delivery: None,
        e2e_corrected,
        backfilled: set.backfilled(),
        host_other_cores: None,
        frozen: frozen(set).map(|f| crate::report::FrozenTime {
            share_pct: f.share * 100.0,
            frozen_s: f.frozen_s,
            spells: f.spells,
            longest_s: f.longest_s,
            generator_paused_s: f.paused_s,
        }),
    }
}

/// Closed model: when the round trips stalled users held back change the
/// picture (the corrected p99 at least twice the raw one), say so: the
/// users waited on the target, and a client at a fixed rate would have
/// seen the corrected figure.
fn omission(
    set: &MetricSet,
    raw: &Histogram<u64>,
    corrected: Option<&crate::report::LatencyStats>,
) -> Option<String> {
    let c = corrected?;
    let at = |p: f64| us_to_ms(raw.value_at_percentile(p));
    let (p50, p99) = (at(50.0), at(99.0));
    let moved = |fixed: f64, raw: f64| fixed >= 2.0 * raw && fixed - raw >= 1.0;
    (set.backfilled() > 0 && (moved(c.p50_ms, p50) || moved(c.p99_ms, p99))).then(|| {
        format!(
            "users waited on a stalled target: {} round trips they would have started at their \
             own pace were held back (coordinated omission); end to end, corrected p50 {:.1} ms \
             and p99 {:.1} ms against {:.1} ms and {:.1} ms as measured (the thresholds on e2e \
             judge the corrected figures)",
            set.backfilled(),
            c.p50_ms,
            c.p99_ms,
            p50,
            p99
        )
    })
}

/// Throughput that collapsed and recovered: intervals (not the first or
/// the last, which the run's edges cut) that completed under a quarter
/// of the median interval while round trips were in flight, with a later
/// one back above half of it.
/// What the reference server says when its memory store is at its
/// budget (a 503; see `serve --store-memory-budget`).
pub const STORE_FULL: &str = "store is full (--store-memory-budget)";

/// Round trips the target refused because its store was at its memory
/// budget: the budget, not the CPU, limited them.
pub fn budget_refusals(groups: &[crate::report::summary::ErrorGroup]) -> u64 {
    groups
        .iter()
        .filter(|g| g.message.contains(STORE_FULL))
        .map(|g| g.count)
        .sum()
}

/// The diagnosis when the target's memory budget refused round trips.
fn budget_full(groups: &[crate::report::summary::ErrorGroup]) -> Option<String> {
    let n = budget_refusals(groups);
    (n > 0).then(|| {
        format!(
            "{n} round trips were refused because the target's store was full: its memory budget \
             (--store-memory-budget), not its CPU, limited them; its /stats `memory` shows what \
             it holds by kind, and serve's start line what the budget sustains"
        )
    })
}

fn collapses(timeline: &[TimelinePoint]) -> Option<String> {
    if timeline.len() < 4 {
        return None;
    }
    let inner = &timeline[1..timeline.len() - 1];
    let mut rates: Vec<f64> = inner.iter().map(|p| p.rps).collect();
    rates.sort_by(f64::total_cmp);
    let median = rates[rates.len() / 2];
    if median <= 0.0 {
        return None;
    }
    let low: Vec<usize> = inner
        .iter()
        .enumerate()
        .filter(|(_, p)| p.rps < median / 4.0 && p.in_flight_max > 0)
        .map(|(i, _)| i)
        .collect();
    let recovered = low
        .first()
        .is_some_and(|&i| inner[i..].iter().any(|p| p.rps > median / 2.0));
    (low.len() >= 2 && recovered).then(|| {
        format!(
            "throughput collapsed and recovered: {} of {} intervals completed under a quarter of \
             the median {:.0} round trips/s while round trips were in flight",
            low.len(),
            inner.len(),
            median
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{ErrorClass, Leg, LegResult, Outcome, RoundTrip};
    use crate::load::metrics::recorder::Recorder;
    use std::time::Duration;

    fn rt(ms: u64, outcome: Outcome) -> RoundTrip {
        let mut r = RoundTrip::new("x");
        for (name, m) in [("tools/call #1", ms), ("tools/call #2 retry", ms * 2)] {
            r.legs.push(Leg {
                name: name.into(),
                status: Some(200),
                to_headers: Duration::from_millis(m),
                to_first_byte: Duration::from_millis(m),
                total: Duration::from_millis(m),
                server_state: None,
                server_app: None,
                connection: Default::default(),
                to_first_event: None,
                result: LegResult::InputRequired,
            });
        }
        r.outcome = outcome;
        r
    }

    #[test]
    fn a_short_last_interval_is_folded_into_the_previous_one() {
        use crate::load::metrics::set::IntervalStats;
        let iv = |start_s: f64, len_s: f64, round_trips: u64| IntervalStats {
            start_s,
            len_s,
            round_trips,
            started: round_trips,
            errors: 0,
            requests: round_trips * 2,
            p50_ms: 1.0,
            p99_ms: 2.0,
            in_flight_max: 1,
            e2e_bands: Default::default(),
            metrics: Default::default(),
        };
        let pts = timeline_points(&[iv(0.0, 1.0, 100), iv(1.0, 1.0, 100), iv(2.0, 0.01, 3)]);
        assert_eq!(pts.len(), 2);
        assert!((pts[1].rps - 103.0 / 1.01).abs() < 1e-9);
        let pts = timeline_points(&[iv(0.0, 1.0, 100), iv(1.0, 0.8, 80)]);
        assert_eq!(pts.len(), 2);
        assert!((pts[1].rps - 100.0).abs() < 1e-9);
    }

    #[test]
    fn thresholds_pass_and_fail_on_measured_values() {
        let rec = Recorder::new(Duration::from_secs(1), &[]).unwrap();
        for _ in 0..99 {
            rec.record("a", &rt(1, Outcome::Success), Duration::from_millis(3), 0);
        }
        rec.record(
            "a",
            &rt(1, Outcome::unexpected(ErrorClass::HttpError, "500")),
            Duration::from_millis(3),
            0,
        );
        let (set, _, _) = rec.finish();
        let th: Vec<(Threshold, bool)> = [
            "p99(retry) < 5ms",
            "p99(retry) < 1ms",
            "p50(first) <= 1.01ms",
            "error_rate < 0.5%",
            "error_rate <= 1%",
            "p99(no such leg) < 1s",
        ]
        .iter()
        .map(|t| (Threshold::parse(t).unwrap(), false))
        .collect();
        let info = RunInfo {
            ended_by: EndReason::Duration,
            ..Default::default()
        };
        let s = build(&set, &info, &[], &th);
        let verdicts: Vec<bool> = s.thresholds.iter().map(|t| t.passed).collect();
        assert_eq!(verdicts, [true, false, true, false, true, false]);
        assert!(!s.passed);
        assert_eq!(s.round_trips.total, 100);
        assert_eq!(s.round_trips.unexpected, 1);
        assert_eq!(s.errors["http_error"], 1);
        assert!((s.error_rate - 0.01).abs() < 1e-12);
        assert_eq!(s.legs["tools/call #1"].count, 100);
        assert!(s.spectrum.contains_key("e2e"));
        assert!(s.thresholds[5].actual.is_none());
        assert_eq!(s.thresholds[1].actual_text, "2.000ms");
        assert!(
            s.failures.iter().any(|f| f.contains("p99(retry) < 1ms")),
            "{:?}",
            s.failures
        );
    }

    #[test]
    fn skipped_attempts_are_not_round_trips_and_fail_their_scenario() {
        let rec = Recorder::new(Duration::from_secs(1), &[]).unwrap();
        for _ in 0..3 {
            rec.record("t", &rt(1, Outcome::Success), Duration::from_millis(3), 0);
        }
        for _ in 0..7 {
            let skip = Outcome::Skipped("the server gave no requestState to tamper with".into());
            rec.record("t", &rt(1, skip), Duration::from_millis(3), 0);
        }
        let (set, _, _) = rec.finish();
        let th: Vec<(Threshold, bool)> = ["ok(t) > 0", "skipped_rate(t) < 50%", "error_rate < 1%"]
            .iter()
            .map(|t| (Threshold::parse(t).unwrap(), true))
            .collect();
        let info = RunInfo {
            ended_by: EndReason::Duration,
            ..Default::default()
        };
        let s = build(&set, &info, &[], &th);
        assert_eq!(s.round_trips.total, 3);
        assert_eq!(s.round_trips.skipped, 7);
        assert_eq!(s.error_rate, 0.0);
        let verdicts: Vec<bool> = s.thresholds.iter().map(|t| t.passed).collect();
        assert_eq!(verdicts, [true, false, true]);
        assert!(!s.passed);
        assert!(
            s.failures[0].contains("70.00%") && s.failures[0].contains("no requestState"),
            "{:?}",
            s.failures
        );
    }

    #[test]
    fn tail_stalls_are_diagnosed_only_when_they_recur() {
        let stalled = |gap_ms: u64| {
            let mut r = RoundTrip::new("x");
            r.legs.push(Leg {
                name: "tools/call #1".into(),
                status: Some(200),
                to_headers: Duration::from_millis(1),
                to_first_byte: Duration::from_millis(2),
                total: Duration::from_millis(2 + gap_ms),
                server_state: None,
                server_app: None,
                connection: Default::default(),
                to_first_event: None,
                result: LegResult::Complete { is_error: false },
            });
            r.outcome = Outcome::Success;
            r
        };
        let rec = Recorder::new(Duration::from_secs(1), &[]).unwrap();
        for i in 0..100 {
            let gap = if i % 4 == 0 { 40 } else { 0 };
            rec.record("a", &stalled(gap), Duration::from_millis(3), 0);
        }
        let (set, _, _) = rec.finish();
        let d = tail_stall(&set).expect("a quarter of the legs stall");
        assert!(d.contains("TCP_NODELAY") && d.contains("25 of 100"), "{d}");
        let rec = Recorder::new(Duration::from_secs(1), &[]).unwrap();
        for i in 0..100 {
            let gap = if i == 0 { 40 } else { 1 };
            rec.record("a", &stalled(gap), Duration::from_millis(3), 0);
        }
        assert_eq!(
            tail_stall(&rec.finish().0),
            None,
            "one slow leg is no pattern"
        );
    }
}
