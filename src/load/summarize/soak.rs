//! The soak verdict: from the target's health samples, does memory (RSS)
//! or the descriptor count grow over the steady phase, and is the growth
//! still there after the cool-down? See [`crate::load::spec::soak`] for the
//! rule; [`super::trend`] fits the line.
//!
//! A target that keeps what a finished round trip leaves behind for a
//! known time (the reference server publishes it: state TTL plus
//! retention, 20 min by default) grows until that time has passed, leak or
//! not. Its memory is judged only on the steady phase after that time;
//! when the soak ends before it (plus [`SETTLED_MIN_S`]), growth is
//! `unsettled`, an INCONCLUSIVE verdict, not a leak (a 2-minute soak
//! against a default `serve` read 3 MiB/min and failed). Descriptors are
//! judged on the whole steady phase: records hold none.

use super::trend::{Fit, least_squares};
use crate::load::spec::soak::SoakLimits;
use crate::report::{HealthSample, SoakSummary, Trend};

/// Over this share of the growth still there after the cool-down, it is
/// kept (a leak), percent.
pub const RETAINED_PCT: f64 = 50.0;

/// Growth whose slope over the steady phase's second half is under this
/// share of the limit has levelled off (a filled cache), not a leak.
pub const LEVELLED_SHARE: f64 = 0.5;

/// How much of the steady phase must lie past the target's retention for
/// its memory to be judged there, seconds.
pub const SETTLED_MIN_S: f64 = 120.0;

/// Where the phases lie, in seconds since sampling began.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phases {
    /// The steady phase (the measured window) starts...
    pub steady_from_s: f64,
    /// ... and ends.
    pub steady_to_s: f64,
    /// The cool-down's length (zero: none).
    pub cool_down_s: f64,
    /// How long the target keeps what a round trip leaves (its published
    /// retention), seconds; `None`: unknown.
    pub keeps_for_s: Option<f64>,
}

/// One judged quantity: its name, unit, limits and how a sample holds it.
struct Quantity {
    metric: &'static str,
    unit: &'static str,
    limit: f64,
    floor: f64,
    get: fn(&HealthSample) -> f64,
}

/// Judges `samples`; the summary, and one line per leak for the run's
/// failures.
pub fn judge(
    samples: &[HealthSample],
    phases: Phases,
    limits: &SoakLimits,
) -> (SoakSummary, Vec<String>) {
    const MIB: f64 = 1024.0 * 1024.0;
    let quantities = [
        Quantity {
            metric: "rss",
            unit: "MiB",
            limit: limits.rss_mib_per_min,
            floor: limits.rss_floor_mib,
            get: |s| s.rss_bytes as f64 / MIB,
        },
        Quantity {
            metric: "fds",
            unit: "descriptors",
            limit: limits.fds_per_min,
            floor: limits.fds_floor,
            get: |s| s.fds as f64,
        },
    ];
    let mut trends = Vec::new();
    let mut failures = Vec::new();
    let mut inconclusive = Vec::new();
    for q in &quantities {
        // Memory, against a target that keeps records for a known time:
        // judged from that time into the steady phase on, or not at all.
        let settled_from = phases
            .keeps_for_s
            .filter(|_| q.metric == "rss")
            .map(|k| phases.steady_from_s + k);
        let unsettled = settled_from.is_some_and(|f| f + SETTLED_MIN_S > phases.steady_to_s);
        let judged = match settled_from {
            Some(f) if !unsettled => Phases {
                steady_from_s: f,
                ..phases
            },
            _ => phases,
        };
        if let Some(mut t) = trend(samples, judged, limits.min_r2, q) {
            if unsettled && matches!(t.verdict.as_str(), "leaks" | "noisy" | "returns") {
                t.verdict = "unsettled".into();
                inconclusive.push(unsettled_line(&t, phases));
            } else if t.verdict == "leaks" {
                failures.push(leak_line(&t, judged));
            }
            trends.push(t);
        } else {
            failures.push(format!(
                "soak: {} could not be judged: fewer than 3 samples in the steady phase \
                 (a longer --soak, or a shorter interval)",
                name(q.metric)
            ));
        }
    }
    let summary = SoakSummary {
        steady_s: phases.steady_to_s - phases.steady_from_s,
        cool_down_s: phases.cool_down_s,
        min_r2: limits.min_r2,
        passed: failures.is_empty(),
        keeps_for_s: phases.keeps_for_s,
        inconclusive,
        trends,
    };
    (summary, failures)
}

/// The soak a target that keeps records for `keeps_for` needs: its
/// retention, then [`SETTLED_MIN_S`] more of steady load.
pub fn needed(keeps_for: std::time::Duration) -> std::time::Duration {
    keeps_for + std::time::Duration::from_secs_f64(SETTLED_MIN_S)
}

/// Why memory growth could not be judged against the target's retention.
fn unsettled_line(t: &Trend, phases: Phases) -> String {
    let keeps = phases.keeps_for_s.unwrap_or(0.0);
    format!(
        "soak: {} grew {} {}/min over the {:.0} s steady phase, but the target keeps what a \
         finished round trip leaves for {:.0} s (its published state TTL and retention): growth \
         cannot level off before then, leak or not; soak at least {:.0} s, or run the target \
         with a shorter --state-ttl and --retention",
        name(&t.metric),
        fmt(t.slope_per_min),
        t.unit,
        phases.steady_to_s - phases.steady_from_s,
        keeps,
        keeps + SETTLED_MIN_S
    )
}

/// The words for a quantity.
fn name(metric: &str) -> &'static str {
    if metric == "rss" {
        "memory (RSS)"
    } else {
        "open descriptors"
    }
}

/// One quantity's trend; `None` with fewer than 3 samples in the steady phase.
fn trend(samples: &[HealthSample], phases: Phases, min_r2: f64, q: &Quantity) -> Option<Trend> {
    let get = q.get;
    let steady: Vec<(f64, f64)> = samples
        .iter()
        .filter(|s| s.t_s >= phases.steady_from_s && s.t_s <= phases.steady_to_s)
        .map(|s| (s.t_s / 60.0, get(s)))
        .collect();
    let fit = least_squares(&steady)?;
    // The second half alone: a leak keeps its slope to the end; a cache or
    // a retention window that filled has stopped growing by then.
    let half = (phases.steady_from_s + phases.steady_to_s) / 120.0;
    let late = least_squares(
        &steady
            .iter()
            .copied()
            .filter(|(m, _)| *m >= half)
            .collect::<Vec<_>>(),
    );
    let baseline = get(samples.first()?);
    let steady_end = steady.last()?.1;
    let after = (phases.cool_down_s > 0.0)
        .then(|| samples.iter().rev().find(|s| s.t_s > phases.steady_to_s))
        .flatten()
        .map(get);
    let minutes = (phases.steady_to_s - phases.steady_from_s) / 60.0;
    let growth = fit.slope * minutes;
    let grown = steady_end - baseline;
    let retained_pct = after
        .filter(|_| grown > 0.0)
        .map(|a| ((a - baseline) * 100.0 / grown).max(0.0));
    // Growth beyond the limit and the floor, over the whole steady phase or
    // its second half (a leak that began halfway), and whether the line
    // that shows it fits.
    let grows = |f: &Fit, minutes: f64| f.slope > q.limit && f.slope * minutes > q.floor;
    let fits = |f: &Fit| f.r2.is_some_and(|r| r >= min_r2);
    let whole_beyond = grows(&fit, minutes);
    let late_beyond = late.as_ref().is_some_and(|l| grows(l, minutes / 2.0));
    let good_fit = (whole_beyond && fits(&fit)) || (late_beyond && late.as_ref().is_some_and(fits));
    let beyond = whole_beyond || late_beyond;
    let kept = retained_pct.is_none_or(|r| r > RETAINED_PCT);
    let levelled = late.is_some_and(|l| l.slope < q.limit * LEVELLED_SHARE);
    let verdict = if !beyond {
        "flat"
    } else if levelled {
        "levels-off"
    } else if !good_fit {
        "noisy"
    } else if !kept {
        "returns"
    } else {
        "leaks"
    };
    Some(Trend {
        metric: q.metric.into(),
        unit: q.unit.into(),
        baseline,
        steady_end,
        after,
        slope_per_min: fit.slope,
        r2: fit.r2,
        samples: fit.n,
        late_slope_per_min: late.map(|l| l.slope),
        growth,
        limit_per_min: q.limit,
        floor: q.floor,
        retained_pct,
        verdict: verdict.into(),
    })
}

/// The failure line of a leaking quantity.
fn leak_line(t: &Trend, phases: Phases) -> String {
    let after = match (t.after, t.retained_pct) {
        (Some(a), Some(r)) => format!(
            "; {:.0}% of it was still there after the {:.0} s cool-down ({} {})",
            r,
            phases.cool_down_s,
            fmt(a),
            t.unit
        ),
        _ => "; there was no cool-down to see it return".into(),
    };
    let late = t
        .late_slope_per_min
        .map(|l| format!(", {} {}/min over its second half", fmt(l), t.unit))
        .unwrap_or_default();
    format!(
        "soak: {} grew {} {}/min (R² {:.2}, +{} {} over the {:.0} s steady phase{late}, from {} at \
         the start), beyond the limit of {} {}/min{after} (a cache or a retention window longer \
         than the soak grows this way too until it is full: soak longer than the target keeps \
         what it keeps)",
        name(&t.metric),
        fmt(t.slope_per_min),
        t.unit,
        t.r2.unwrap_or(0.0),
        fmt(t.growth),
        t.unit,
        phases.steady_to_s - phases.steady_from_s,
        fmt(t.baseline),
        fmt(t.limit_per_min),
        t.unit
    )
}

/// One line per trend, for the run's diagnoses.
pub fn describe(s: &SoakSummary) -> Vec<String> {
    s.trends
        .iter()
        .map(|t| {
            let r2 = t.r2.map_or("flat".into(), |r| format!("R² {r:.2}"));
            let after = t
                .after
                .map(|a| format!(", {} after the cool-down", fmt(a)))
                .unwrap_or_default();
            let late = t
                .late_slope_per_min
                .filter(|_| t.verdict == "levels-off")
                .map(|l| format!(", {} {}/min over the second half", fmt(l), t.unit))
                .unwrap_or_default();
            format!(
                "soak: {}: {} {}/min ({r2}, {} samples), {} → {}{late}{after}: {}",
                name(&t.metric),
                fmt(t.slope_per_min),
                t.unit,
                t.samples,
                fmt(t.baseline),
                fmt(t.steady_end),
                t.verdict
            )
        })
        .collect()
}

/// A value with three significant decimals at most.
fn fmt(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    /// Samples every second: `rss(t)` MiB and `fds(t)` descriptors.
    fn series(until: u32, rss: impl Fn(f64) -> f64, fds: impl Fn(f64) -> u64) -> Vec<HealthSample> {
        (0..=until)
            .map(|i| {
                let t = f64::from(i);
                HealthSample {
                    t_s: t,
                    rss_bytes: (rss(t) * MIB as f64) as u64,
                    fds: fds(t),
                    threads: 4,
                }
            })
            .collect()
    }

    /// 10 s warm-up, 60 s steady, 30 s cool-down.
    const PHASES: Phases = Phases {
        steady_from_s: 10.0,
        steady_to_s: 70.0,
        cool_down_s: 30.0,
        keeps_for_s: None,
    };

    #[test]
    fn a_steady_server_is_flat_and_passes() {
        // RSS wobbles by 0.3 MiB, descriptors by one.
        let s = series(
            100,
            |t| 20.0 + 0.3 * (t * 1.7).sin(),
            |t| 12 + (t as u64 % 2),
        );
        let (sum, failures) = judge(&s, PHASES, &SoakLimits::default());
        assert!(failures.is_empty(), "{failures:?}");
        assert!(sum.passed);
        assert!(sum.trends.iter().all(|t| t.verdict == "flat"), "{sum:?}");
        assert_eq!(sum.trends[0].samples, 61);
    }

    #[test]
    fn growth_that_stays_after_the_cool_down_is_a_leak() {
        // +10 MiB and +30 descriptors a minute under load, kept after it.
        let load_t = |t: f64| t.min(70.0);
        let s = series(
            100,
            |t| 20.0 + load_t(t) / 6.0,
            |t| 10 + (load_t(t) / 2.0) as u64,
        );
        let (sum, failures) = judge(&s, PHASES, &SoakLimits::default());
        assert!(!sum.passed);
        let rss = &sum.trends[0];
        assert_eq!(rss.verdict, "leaks");
        assert!((rss.slope_per_min - 10.0).abs() < 0.01, "{rss:?}");
        assert!(rss.r2.unwrap() > 0.99);
        assert!((rss.growth - 10.0).abs() < 0.01);
        assert!(rss.retained_pct.unwrap() > 99.0, "{rss:?}");
        assert_eq!(sum.trends[1].verdict, "leaks");
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(
            failures[0].contains("memory (RSS) grew 10 MiB/min")
                && failures[0].contains("beyond the limit of 1 MiB/min")
                && failures[0].contains("still there after the 30 s cool-down"),
            "{}",
            failures[0]
        );
        assert!(
            failures[1].contains("open descriptors grew"),
            "{}",
            failures[1]
        );
    }

    #[test]
    fn growth_given_back_after_the_cool_down_is_not_a_leak() {
        // Descriptors climb with the load and close once it stops.
        let s = series(
            100,
            |_| 20.0,
            |t| if t <= 70.0 { 10 + (t / 2.0) as u64 } else { 11 },
        );
        let (sum, failures) = judge(&s, PHASES, &SoakLimits::default());
        assert!(failures.is_empty(), "{failures:?}");
        assert_eq!(sum.trends[1].verdict, "returns");
        assert!(sum.trends[1].retained_pct.unwrap() < 10.0);
    }

    #[test]
    fn growth_that_levels_off_is_a_filled_cache_and_a_late_leak_is_not() {
        // +20 MiB over the first 20 s of the steady phase, then flat and
        // kept after the cool-down: a cache that filled.
        let filled = |t: f64| 20.0 + (t.clamp(10.0, 30.0) - 10.0);
        let s = series(100, filled, |_| 10);
        let (sum, failures) = judge(&s, PHASES, &SoakLimits::default());
        assert!(failures.is_empty(), "{failures:?}");
        let rss = &sum.trends[0];
        assert_eq!(rss.verdict, "levels-off", "{rss:?}");
        assert!(rss.slope_per_min > 1.0 && rss.growth > 4.0, "{rss:?}");
        assert_eq!(rss.late_slope_per_min, Some(0.0));
        assert!(
            describe(&sum)[0].contains("0 MiB/min over the second half"),
            "{:?}",
            describe(&sum)
        );
        // Growth that starts halfway and keeps going is a leak.
        let late = |t: f64| 20.0 + (t.clamp(40.0, 70.0) - 40.0) / 3.0;
        let s = series(100, late, |_| 10);
        let (sum, failures) = judge(&s, PHASES, &SoakLimits::default());
        let rss = &sum.trends[0];
        assert_eq!(rss.verdict, "leaks", "{rss:?}");
        assert!(rss.late_slope_per_min.unwrap() > 19.0, "{rss:?}");
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(
            failures[0].contains("20 MiB/min over its second half"),
            "{failures:?}"
        );
        // A steady 5 MiB/min leak with a wobbly second half stays a leak.
        let wobbly = |t: f64| 20.0 + t.min(70.0) * 5.0 / 60.0 + 0.5 * (t * 2.3).sin();
        let s = series(100, wobbly, |_| 10);
        let (sum, _) = judge(&s, PHASES, &SoakLimits::default());
        assert_eq!(sum.trends[0].verdict, "leaks", "{:?}", sum.trends[0]);
    }

    /// Records kept for a known time grow memory until that time, leak or
    /// not: a soak shorter than it cannot tell (unsettled, inconclusive);
    /// a longer one judges the part after it.
    #[test]
    fn memory_is_judged_after_the_targets_retention() {
        // Records kept 60 s: +10 MiB/min for the first 60 s of load, flat after.
        let retained = |t: f64| 20.0 + (t.clamp(10.0, 70.0) - 10.0) / 6.0;
        let keeps = |k: f64, to: f64| Phases {
            steady_to_s: to,
            keeps_for_s: Some(k),
            ..PHASES
        };
        // A 60 s soak against a 60 s retention: unsettled, not a leak.
        let s = series(100, retained, |_| 10);
        let (sum, failures) = judge(&s, keeps(60.0, 70.0), &SoakLimits::default());
        assert!(failures.is_empty(), "{failures:?}");
        assert_eq!(sum.trends[0].verdict, "unsettled", "{:?}", sum.trends[0]);
        assert!(
            sum.inconclusive[0].contains("soak at least 180 s"),
            "{:?}",
            sum.inconclusive
        );
        assert_eq!(
            sum.trends[1].verdict, "flat",
            "descriptors are judged as ever"
        );
        // A 5-minute soak: flat after the retention, it passes.
        let s = series(400, retained, |_| 10);
        let (sum, failures) = judge(&s, keeps(60.0, 310.0), &SoakLimits::default());
        assert!(
            failures.is_empty() && sum.inconclusive.is_empty(),
            "{failures:?}"
        );
        assert_eq!(sum.trends[0].verdict, "flat", "{:?}", sum.trends[0]);
        // A leak keeps growing after the retention: it fails.
        let leak = |t: f64| retained(t) + t.clamp(10.0, 310.0) / 12.0;
        let s = series(400, leak, |_| 10);
        let (sum, failures) = judge(&s, keeps(60.0, 310.0), &SoakLimits::default());
        assert_eq!(sum.trends[0].verdict, "leaks", "{:?}", sum.trends[0]);
        assert_eq!(failures.len(), 1, "{failures:?}");
        // A descriptor leak fails a short soak whatever the retention.
        let s = series(100, retained, |t| 10 + (t.min(70.0) / 2.0) as u64);
        let (sum, failures) = judge(&s, keeps(60.0, 70.0), &SoakLimits::default());
        assert_eq!(sum.trends[1].verdict, "leaks");
        assert_eq!(failures.len(), 1, "{failures:?}");
    }

    #[test]
    fn a_poor_fit_or_tiny_growth_does_not_fail() {
        // 10 MiB/min under ±15 MiB of noise: the line explains little of it.
        let jumpy = series(
            100,
            |t| {
                40.0 + t.min(70.0) / 6.0
                    + if (t as u64).is_multiple_of(2) {
                        15.0
                    } else {
                        -15.0
                    }
            },
            |_| 10,
        );
        let (sum, failures) = judge(&jumpy, PHASES, &SoakLimits::default());
        assert!(failures.is_empty(), "{failures:?}");
        assert_eq!(sum.trends[0].verdict, "noisy", "{:?}", sum.trends[0]);
        // A clean 2 MiB/min slope, but only 2 MiB in all: under the floor.
        let small = series(100, |t| 20.0 + t.min(70.0) / 30.0, |_| 10);
        let (sum, failures) = judge(&small, PHASES, &SoakLimits::default());
        assert!(failures.is_empty(), "{failures:?}");
        assert_eq!(sum.trends[0].verdict, "flat");
    }

    #[test]
    fn without_a_cool_down_good_growth_fails_and_too_few_samples_say_so() {
        let s = series(70, |t| 20.0 + t / 6.0, |_| 10);
        let phases = Phases {
            cool_down_s: 0.0,
            ..PHASES
        };
        let (sum, failures) = judge(&s, phases, &SoakLimits::default());
        assert_eq!(sum.trends[0].after, None);
        assert!(failures[0].contains("no cool-down"), "{failures:?}");
        let short = series(11, |_| 20.0, |_| 10);
        let (sum, failures) = judge(&short, PHASES, &SoakLimits::default());
        assert!(!sum.passed && sum.trends.is_empty());
        assert!(failures[0].contains("could not be judged"), "{failures:?}");
    }
}
