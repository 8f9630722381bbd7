//! Turns a [`MetricSet`] into a [`Summary`] and evaluates thresholds.

use super::hlog::{E2E, LEG, STATE};
use super::metrics::{MetricSet, is_error_label};
use super::plan::ScenarioSpec;
use super::threshold::{Metric, Threshold};
use crate::report::{
    LatencyStats, OutcomeCounts, SCHEMA_VERSION, ScenarioSummary, Summary, ThresholdResult,
    TimelinePoint,
};
use hdrhistogram::Histogram;

/// Percentiles of the spectrum.
const SPECTRUM: [f64; 12] = [
    0.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 99.999,
];

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Latency statistics of a microsecond histogram.
pub fn latency_stats(h: &Histogram<u64>) -> LatencyStats {
    if h.is_empty() {
        return LatencyStats::default();
    }
    LatencyStats {
        count: h.len(),
        min_ms: ms(h.min()),
        mean_ms: h.mean() / 1000.0,
        p50_ms: ms(h.value_at_percentile(50.0)),
        p90_ms: ms(h.value_at_percentile(90.0)),
        p99_ms: ms(h.value_at_percentile(99.0)),
        p999_ms: ms(h.value_at_percentile(99.9)),
        p9999_ms: ms(h.value_at_percentile(99.99)),
        max_ms: ms(h.max()),
    }
}

/// `[percentile, ms]` pairs for the spectrum plot.
pub fn spectrum(h: &Histogram<u64>) -> Vec<[f64; 2]> {
    if h.is_empty() {
        return Vec::new();
    }
    SPECTRUM
        .iter()
        .map(|&p| [p, ms(h.value_at_percentile(p))])
        .collect()
}

/// The measured value of a threshold (ms, fraction, per second), or `None`
/// when nothing matched (a failing threshold).
pub fn measure(t: &Threshold, set: &MetricSet) -> Option<f64> {
    match &t.metric {
        Metric::Latency {
            percentile,
            selector,
        } => {
            let h = if *selector == super::threshold::LegSelector::E2e {
                set.e2e_all()
            } else {
                set.legs_where(|n| selector.matches_leg(n))
            };
            (!h.is_empty()).then(|| ms(h.value_at_percentile(*percentile)))
        }
        Metric::ErrorRate => {
            let total = set.round_trips();
            (total > 0).then(|| error_count(set) as f64 / total as f64)
        }
        Metric::Rps => {
            let secs = set.elapsed.as_secs_f64();
            (secs > 0.0).then(|| set.round_trips() as f64 / secs)
        }
    }
}

fn error_count(set: &MetricSet) -> u64 {
    set.outcome_counts()
        .iter()
        .filter(|((_, label), _)| is_error_label(label))
        .map(|(_, n)| *n)
        .sum()
}

/// Evaluates every threshold.
pub fn evaluate(thresholds: &[Threshold], set: &MetricSet) -> Vec<ThresholdResult> {
    thresholds
        .iter()
        .map(|t| {
            let actual = measure(t, set);
            ThresholdResult {
                expr: t.expr.clone(),
                actual,
                passed: actual.is_some_and(|v| t.passes(v)),
            }
        })
        .collect()
}

/// Timeline points; a last interval shorter than half the others (the
/// stragglers after the schedule ended) is folded into the one before it,
/// so the plot does not end in a spurious dip or spike.
pub fn timeline_points(intervals: &[super::metrics::IntervalStats]) -> Vec<TimelinePoint> {
    let mut iv: Vec<super::metrics::IntervalStats> = intervals.to_vec();
    if iv.len() >= 2 {
        let nominal = iv[0].len_s;
        let last = iv[iv.len() - 1].clone();
        if last.len_s < nominal / 2.0 {
            iv.pop();
            if let Some(prev) = iv.last_mut() {
                prev.len_s += last.len_s;
                prev.round_trips += last.round_trips;
                prev.requests += last.requests;
                prev.errors += last.errors;
                prev.p99_ms = prev.p99_ms.max(last.p99_ms);
            }
        }
    }
    iv.iter()
        .map(|t| {
            let len = t.len_s.max(1e-9);
            TimelinePoint {
                t_s: t.start_s,
                rps: t.round_trips as f64 / len,
                requests_per_s: t.requests as f64 / len,
                errors: t.errors,
                p50_ms: t.p50_ms,
                p99_ms: t.p99_ms,
            }
        })
        .collect()
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
    /// Why it ended.
    pub ended_by: String,
    /// Why, in words.
    pub end_note: Option<String>,
}

/// Builds the summary (thresholds evaluated; `passed` also requires a
/// normal end).
pub fn build(
    set: &MetricSet,
    info: &RunInfo,
    scenarios: &[ScenarioSpec],
    thresholds: &[Threshold],
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
            c.total += n;
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
    for (name, h) in set.with_prefix(E2E) {
        per_scenario.entry(name.to_owned()).or_default().e2e = latency_stats(h);
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
    let normal_end = matches!(info.ended_by.as_str(), "duration" | "max_requests");
    let passed = normal_end && results.iter().all(|r| r.passed);
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
        ended_by: info.ended_by.clone(),
        end_note: info.end_note.clone(),
        error_rate: if round_trips.total > 0 {
            round_trips.unexpected as f64 / round_trips.total as f64
        } else {
            0.0
        },
        rps: per_s(round_trips.total),
        round_trips,
        requests: set.requests(),
        requests_per_s: per_s(set.requests()),
        errors,
        error_samples: set.samples.clone(),
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{ErrorClass, Leg, LegResult, Outcome, RoundTrip};
    use crate::load::metrics::Recorder;
    use std::time::Duration;

    fn rt(ms: u64, outcome: Outcome) -> RoundTrip {
        let mut r = RoundTrip::new("x");
        for (name, m) in [("tools/call #1", ms), ("tools/call #2 retry", ms * 2)] {
            r.legs.push(Leg {
                name: name.into(),
                status: Some(200),
                to_headers: Duration::from_millis(m),
                total: Duration::from_millis(m),
                server_state: None,
                server_app: None,
                result: LegResult::InputRequired,
            });
        }
        r.outcome = outcome;
        r
    }

    #[test]
    fn a_short_last_interval_is_folded_into_the_previous_one() {
        use crate::load::metrics::IntervalStats;
        let iv = |start_s: f64, len_s: f64, round_trips: u64| IntervalStats {
            start_s,
            len_s,
            round_trips,
            errors: 0,
            requests: round_trips * 2,
            p50_ms: 1.0,
            p99_ms: 2.0,
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
        let th: Vec<Threshold> = [
            "p99(retry) < 5ms",
            "p99(retry) < 1ms",
            "p50(first) <= 1.01ms",
            "error_rate < 0.5%",
            "error_rate <= 1%",
            "p99(no such leg) < 1s",
        ]
        .iter()
        .map(|t| Threshold::parse(t).unwrap())
        .collect();
        let info = RunInfo {
            ended_by: "duration".into(),
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
    }
}
