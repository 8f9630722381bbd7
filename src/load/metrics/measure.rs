//! What a threshold measures, read off a [`MetricSet`]: the one
//! evaluation the end-of-run verdict ([`crate::load::summarize`]) and an
//! `abort_on_fail` threshold mid-run ([`crate::load::exec::engine`]) share.

use super::gaps;
use super::set::{MetricSet, is_error_label};
use crate::client::ErrorClass;
use crate::load::spec::threshold::{Metric, Threshold};
use std::time::Duration;

/// The measured value of a threshold (ms, fraction, per second, count), or
/// `None` when nothing matched (a failing threshold).
pub fn measure(t: &Threshold, set: &MetricSet) -> Option<f64> {
    match &t.metric {
        Metric::Latency { stat, selector } => {
            use crate::load::spec::threshold::LegSelector;
            let h = match selector {
                LegSelector::E2e => set.e2e_judged(),
                LegSelector::Phase { of, phase } => {
                    set.phases_where(|leg, p| p == phase && of.matches_leg(leg))
                }
                _ => set.legs_where(|n| selector.matches_leg(n)),
            };
            stat.of(&h).map(|us| us / 1000.0)
        }
        Metric::ErrorRate => {
            let total = set.round_trips();
            (total > 0).then(|| error_count(set) as f64 / total as f64)
        }
        Metric::Rps => {
            let secs = set.elapsed.as_secs_f64();
            (secs > 0.0).then(|| set.round_trips() as f64 / secs)
        }
        Metric::Ok(scenario) => Some(
            set.outcome_counts()
                .iter()
                .filter(|((s, l), _)| {
                    s == scenario && matches!(l.as_str(), "success" | "expected_rejection")
                })
                .map(|(_, n)| *n as f64)
                .sum(),
        ),
        Metric::SkippedRate(scenario) => {
            let counts = set.outcome_counts();
            let of = |pred: &dyn Fn(&str) -> bool| -> u64 {
                counts
                    .iter()
                    .filter(|((s, l), _)| s == scenario && pred(l))
                    .map(|(_, n)| *n)
                    .sum()
            };
            let all = of(&|_| true);
            (all > 0).then(|| of(&|l| l == "skipped") as f64 / all as f64)
        }
        Metric::ServiceGaps => set
            .spells
            .as_ref()
            .map(|s| gaps::gaps(s, median_e2e(set)).len() as f64),
        Metric::FrozenTime => frozen(set).map(|f| f.share),
        Metric::Misrouted => Some(
            set.outcome_counts()
                .iter()
                .filter(|((_, l), _)| l == ErrorClass::Misrouted.as_str())
                .map(|(_, n)| *n)
                .sum::<u64>() as f64,
        ),
    }
}

/// The run's median end-to-end latency (zero when nothing finished).
pub fn median_e2e(set: &MetricSet) -> Duration {
    let h = set.e2e_all();
    Duration::from_micros(if h.is_empty() {
        0
    } else {
        h.value_at_percentile(50.0)
    })
}

/// How much of the window the target was frozen (`None` when the spells
/// are not known: a merged report).
pub fn frozen(set: &MetricSet) -> Option<gaps::Frozen> {
    let spells = set.spells.as_ref()?;
    let window = set.window_len.max(set.elapsed);
    let e2e = set.e2e_all();
    let typical = Duration::from_micros(if e2e.is_empty() {
        0
    } else {
        e2e.value_at_percentile(gaps::FROZEN_PERCENTILE)
    });
    Some(gaps::frozen(
        spells,
        &set.pace,
        typical,
        set.pauses.as_deref().unwrap_or_default(),
        window,
    ))
}

/// The run's service gaps, longest first (empty when not known).
pub fn service_gaps(set: &MetricSet) -> Vec<gaps::Spell> {
    set.spells
        .as_ref()
        .map(|s| gaps::gaps(s, median_e2e(set)))
        .unwrap_or_default()
}

fn error_count(set: &MetricSet) -> u64 {
    set.outcome_counts()
        .iter()
        .filter(|((_, label), _)| is_error_label(label))
        .map(|(_, n)| *n)
        .sum()
}
