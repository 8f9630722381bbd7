//! Was the load the plan offered delivered? An open-model run is judged on
//! the rate it planned, so a run that started far fewer round trips than
//! the schedule asked for says so and never passes: FAILED when the target
//! set the pace (its round trips took so long that the in-flight cap held
//! the arrivals back, while the generator had CPU to spare), INCONCLUSIVE
//! when the generator did (late for want of CPU, its own descriptor cap) or
//! when nothing tells which.
//!
//! The figures are those of the measured window: the arrivals the schedule
//! put in it (this segment's share of them) against the round trips of the
//! window that ran, whatever their outcome (a round trip belongs to the
//! window its slot is in, even when the cap held it past the window's end;
//! one cut off at the end is recorded as a timeout, so every one started
//! is counted).

use crate::load::metrics::generator::{CPU_LIMIT, SlipCounts};
use crate::load::spec::segment::Segment;
use crate::load::spec::shape::{Arrivals, Timeline};
use crate::report::Delivery;
use std::time::Duration;

/// A run that started less than this share of the arrivals its window
/// planned was not delivered (a 10 % margin: an open model a little behind
/// at the window's edges still counts).
pub const DELIVERED_SHARE: f64 = 0.90;

/// The cap held at least this share of the arrivals: the target's round
/// trips, not the generator, set the pace.
pub const HELD_SHARE: f64 = 0.10;

/// Who set the pace of a run that fell short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The target: its round trips filled the in-flight cap.
    Target,
    /// The generator: late for want of CPU, or its own descriptor cap.
    Generator,
    /// Neither shows: the run cannot be judged on its rate.
    Unknown,
}

impl Limit {
    /// The word in `summary.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::Target => "target",
            Limit::Generator => "generator",
            Limit::Unknown => "unknown",
        }
    }
}

/// How many arrivals of `timeline`'s schedule fall in its measured window
/// and belong to `segment`.
pub fn planned_in_window(timeline: &Timeline, segment: Segment) -> u64 {
    let (from, to) = (
        timeline.lead.as_secs_f64(),
        (timeline.lead + timeline.measured).as_secs_f64(),
    );
    Arrivals::new(&timeline.stages)
        .enumerate()
        .take_while(|(_, t)| *t < to)
        .filter(|(k, t)| *t >= from && segment.owns(*k as u64))
        .count() as u64
}

/// What went into a delivery judgement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Facts {
    /// Arrivals the window planned.
    pub planned: u64,
    /// Round trips of the window that ran (any outcome, skipped attempts
    /// included).
    pub ran: u64,
    /// The measured window's length.
    pub window: Duration,
    /// The schedule's slip over the whole run.
    pub slip: Option<SlipCounts>,
    /// The generator's CPU over its threads' time (0–1).
    pub generator_busy: Option<f64>,
    /// Whether the generator's own health found a problem.
    pub generator_unwell: bool,
    /// The in-flight cap.
    pub max_in_flight: usize,
}

/// Judges an open-model run's delivery.
pub fn judge(f: &Facts) -> Delivery {
    let secs = f.window.as_secs_f64().max(1e-9);
    let offered_rps = f.planned as f64 / secs;
    let achieved_rps = f.ran as f64 / secs;
    let delivered = if f.planned > 0 {
        f.ran as f64 / f.planned as f64
    } else {
        1.0
    };
    let held_share = f
        .slip
        .filter(|s| s.arrivals > 0)
        .map(|s| s.held as f64 / s.arrivals as f64);
    let short = f.planned > 0 && delivered < DELIVERED_SHARE;
    let cpu_spare = f.generator_busy.is_none_or(|b| b < CPU_LIMIT);
    let limited_by = short.then(|| {
        if f.generator_unwell {
            Limit::Generator
        } else if held_share.is_some_and(|h| h >= HELD_SHARE) && cpu_spare {
            Limit::Target
        } else {
            Limit::Unknown
        }
    });
    let reason = limited_by.map(|by| {
        let head = format!(
            "the plan offered {offered_rps:.0} round trips/s and {achieved_rps:.0}/s ran ({}, \
             {} of {} arrivals)",
            pct(delivered * 100.0),
            f.ran,
            f.planned,
        );
        match by {
            Limit::Target => format!(
                "{head}: the target was the limit: its round trips filled the in-flight cap \
                 ({}) and held back {:.0}% of the arrivals while the generator had CPU to spare \
                 ({}); the rate it sustains is below the rate offered",
                f.max_in_flight,
                held_share.unwrap_or(0.0) * 100.0,
                f.generator_busy.map_or_else(
                    || "not measured".into(),
                    |b| format!("{:.0}% busy", b * 100.0)
                ),
            ),
            Limit::Generator => format!(
                "{head}: the generator was the limit (see its health), so the target was never \
                 offered the plan's rate"
            ),
            Limit::Unknown => format!(
                "{head}, and neither a full in-flight cap nor the generator's health says why, \
                 so the run cannot be judged at the rate it planned"
            ),
        }
    });
    Delivery {
        offered_rps,
        achieved_rps,
        delivered_pct: delivered * 100.0,
        held_pct: held_share.map(|h| h * 100.0),
        limited_by: limited_by.map(|l| l.as_str().to_owned()),
        reason,
    }
}

/// A share in percent, with a decimal below 10 % (0.2 %, not 0 %).
pub fn pct(p: f64) -> String {
    if p < 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::spec::shape::Model;

    fn facts(planned: u64, ran: u64, held: u64, busy: f64, unwell: bool) -> Facts {
        Facts {
            planned,
            ran,
            window: Duration::from_secs(5),
            slip: Some(SlipCounts {
                arrivals: planned,
                held,
                ..Default::default()
            }),
            generator_busy: Some(busy),
            generator_unwell: unwell,
            max_in_flight: 2048,
        }
    }

    #[test]
    fn a_window_counts_its_own_arrivals_and_a_segment_its_share() {
        let t = Timeline::fixed(
            Model::Open,
            100.0,
            1.0,
            Duration::from_secs(2),
            Duration::from_secs(5),
        );
        assert_eq!(planned_in_window(&t, Segment::WHOLE), 500);
        let half = Segment::new(1, 2).unwrap();
        assert_eq!(planned_in_window(&t, half), 250);
    }

    #[test]
    fn a_rate_delivered_within_the_margin_is_not_short() {
        let d = judge(&facts(1000, 950, 0, 0.3, false));
        assert_eq!(d.limited_by, None);
        assert!(d.reason.is_none());
        assert!((d.offered_rps - 200.0).abs() < 1e-9);
        assert!((d.delivered_pct - 95.0).abs() < 1e-9);
    }

    #[test]
    fn a_full_cap_with_cpu_to_spare_is_the_target() {
        // The 200,000/s run of issue 45: 2,451/s started, the cap held nearly all.
        let d = judge(&facts(1_000_000, 12_255, 998_976, 0.4, false));
        assert_eq!(d.limited_by.as_deref(), Some("target"));
        let r = d.reason.unwrap();
        assert!(
            r.contains("offered 200000 round trips/s and 2451/s ran (1.2%"),
            "{r}"
        );
        assert!(r.contains("the target was the limit"), "{r}");
    }

    #[test]
    fn the_generators_shortfall_or_none_shown_is_not_the_targets() {
        let d = judge(&facts(1000, 500, 900, 0.99, false));
        assert_eq!(d.limited_by.as_deref(), Some("unknown"), "a saturated CPU");
        let d = judge(&facts(1000, 500, 900, 0.3, true));
        assert_eq!(d.limited_by.as_deref(), Some("generator"));
        let d = judge(&facts(1000, 500, 10, 0.3, false));
        assert_eq!(d.limited_by.as_deref(), Some("unknown"), "the cap held few");
    }
}
