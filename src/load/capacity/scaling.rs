//! Capacity across instance counts (`elicitkit report capacity`): knees
//! measured by `load --capacity` at 1, 2, … instances become a curve
//! knee(N), from which come the scaling efficiency, the marginal gain of
//! each added instance, and the instances a target rate needs.
//!
//! The projection uses only the measured curve:
//!
//! - a target at or below a measured knee: the smallest measured count that
//!   sustains it, or a count interpolated piecewise-linearly between the two
//!   measured counts around it;
//! - a target above every knee: the last measured count plus what the last
//!   measured marginal gain adds per instance, the gain capped at the last
//!   count's per-instance rate (never more optimistic than measured), and
//!   said to lie beyond the measured range;
//! - a last marginal gain ≤ 0: more instances do not help (the shared store
//!   or the balancer is the limit), so no count is projected;
//! - one instance count: scaling cannot be measured, so nothing is projected
//!   beyond what was measured.

use crate::report::capacity::{Projection, ScalingPoint, ScalingReport};

/// Projections past this many instances are not given as a number.
pub const MAX_PROJECTED: u64 = 100_000;

/// One capacity run as `report capacity` reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Run {
    /// Instances it ran against.
    pub instances: u64,
    /// Where it came from (its report folder).
    pub source: String,
    /// Its knee (achieved round trips/s within the SLO), if it found one.
    pub knee_rps: Option<f64>,
    /// `bracketed`, `not_reached`, `below_start`, `stopped` (or empty:
    /// a report from before the status was written).
    pub knee_status: String,
    /// Shared-store commands per round trip at the knee.
    pub store_cmds_per_rt: Option<f64>,
    /// Target CPU per round trip at the knee (µs).
    pub target_cpu_us_per_rt: Option<f64>,
    /// The generator's host and the target processes found on it.
    pub host: Option<crate::report::HostShare>,
}

/// Builds the scaling report of `runs` (any order), projecting for
/// `target_rate` when given.
pub fn analyse(runs: &[Run], target_rate: Option<f64>) -> ScalingReport {
    let mut notes = Vec::new();
    let mut usable: Vec<&Run> = Vec::new();
    for r in runs {
        match r.knee_rps {
            Some(k) if k > 0.0 => usable.push(r),
            _ => notes.push(format!(
                "{} ({} instances) found no knee ({}): left out of the curve",
                r.source,
                r.instances,
                if r.knee_status.is_empty() {
                    "no step within the SLO"
                } else {
                    &r.knee_status
                }
            )),
        }
    }
    usable.sort_by_key(|r| r.instances);
    // Two runs at one count: keep the lower knee (the conservative one).
    let mut merged: Vec<&Run> = Vec::new();
    for r in usable {
        match merged.last_mut() {
            Some(last) if last.instances == r.instances => {
                notes.push(format!(
                    "{} instances measured twice ({} and {}): the lower knee is used",
                    r.instances, last.source, r.source
                ));
                if r.knee_rps < last.knee_rps {
                    *last = r;
                }
            }
            _ => merged.push(r),
        }
    }
    for r in &merged {
        if r.knee_status == "not_reached" || r.knee_status == "stopped" {
            notes.push(format!(
                "at {} instances the search {}: its knee {:.0}/s is a lower bound",
                r.instances,
                if r.knee_status == "stopped" {
                    "stopped early"
                } else {
                    "never broke the SLO"
                },
                r.knee_rps.unwrap_or(0.0)
            ));
        }
    }
    let curve: Vec<(u64, f64)> = merged
        .iter()
        .map(|r| (r.instances, r.knee_rps.unwrap_or(0.0)))
        .collect();
    let base = curve.first().copied();
    if let Some((n0, _)) = base
        && n0 != 1
        && curve.len() >= 2
    {
        notes.push(format!(
            "no 1-instance run: efficiency is relative to {n0} instances' rate per instance"
        ));
    }
    let points = merged
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (n, k) = curve[i];
            ScalingPoint {
                instances: n,
                source: r.source.clone(),
                knee_rps: k,
                knee_status: r.knee_status.clone(),
                per_instance_rps: k / n.max(1) as f64,
                efficiency: base
                    .filter(|_| curve.len() >= 2)
                    .map(|(n0, k0)| k / (n as f64 * k0 / n0 as f64)),
                marginal_gain_rps: (i > 0).then(|| marginal(curve[i - 1], curve[i])),
                store_cmds_per_rt: r.store_cmds_per_rt,
                target_cpu_us_per_rt: r.target_cpu_us_per_rt,
            }
        })
        .collect();
    let scaling_measured = curve.len() >= 2;
    if !scaling_measured {
        notes.push(match curve.first() {
            Some((n, _)) => format!(
                "only {n} instance(s) measured: scaling cannot be measured from one instance \
                 count; run `load --capacity --instances N` at a second count"
            ),
            None => "no run found a knee: nothing to plan from".into(),
        });
    }
    // Instances that shared the generator's cores: the curve is the host's.
    let shared: Vec<String> = merged
        .iter()
        .filter_map(|r| {
            let h = r.host.as_ref().filter(|h| h.shared())?;
            Some(format!("{} ({} cores)", r.instances, h.cores))
        })
        .collect();
    if !shared.is_empty() {
        notes.push(format!(
            "at {} instances the generator ran on the target's host: those knees measure how \
             one host's cores were shared, not how the target scales (a flat or falling curve \
             there is no verdict on the store or the balancer); run the generator on another \
             machine",
            shared.join(", ")
        ));
    }
    let mut projection = target_rate.map(|t| project(&curve, t));
    if let Some(p) = projection.as_mut().filter(|p| p.method == "unreachable")
        && !shared.is_empty()
    {
        p.text.push_str(
            "; but the generator shared the host with the target, so the cores, not the \
             instances, may be what ran out",
        );
    }
    ScalingReport {
        schema: 1,
        points,
        efficiency_base: base.filter(|_| scaling_measured).map(|b| b.0),
        scaling_measured,
        projection,
        notes,
    }
}

/// Round trips/s each instance added between two measured counts.
pub fn marginal(a: (u64, f64), b: (u64, f64)) -> f64 {
    (b.1 - a.1) / (b.0.saturating_sub(a.0)).max(1) as f64
}

/// The instances `target` needs on the measured curve `(instances, knee)`,
/// sorted by instances.
pub fn project(curve: &[(u64, f64)], target: f64) -> Projection {
    let mk =
        |instances: Option<u64>, method: &str, beyond: bool, gain: Option<f64>, text| Projection {
            target_rate: target,
            instances,
            method: method.into(),
            beyond_measured: beyond,
            gain_used_rps: gain,
            text,
        };
    // A measured count that sustains the target, when one does.
    if let Some(i) = curve.iter().position(|&(_, k)| k >= target) {
        let (n, k) = curve[i];
        if i == 0 {
            let fewer = if n > 1 {
                " (fewer were not measured)"
            } else {
                ""
            };
            return mk(
                Some(n),
                "measured",
                false,
                None,
                format!("measured: {n} instance(s) sustain {k:.0}/s ≥ {target:.0}/s{fewer}"),
            );
        }
        let (n0, k0) = curve[i - 1];
        let g = marginal((n0, k0), (n, k));
        let est = (n0 as f64 + (target - k0) / g).ceil() as u64;
        let est = est.clamp(n0 + 1, n);
        if est == n {
            return mk(
                Some(n),
                "measured",
                false,
                None,
                format!(
                    "measured: {n} instances sustain {k:.0}/s ≥ {target:.0}/s; {n0} sustain only {k0:.0}/s"
                ),
            );
        }
        return mk(
            Some(est),
            "interpolated",
            false,
            Some(g),
            format!(
                "interpolated between the measured {n0} ({k0:.0}/s) and {n} instances ({k:.0}/s): \
                 {est} instances, not measured"
            ),
        );
    }
    let Some(&(n, k)) = curve.last() else {
        return mk(
            None,
            "none",
            false,
            None,
            "no knee measured: nothing to project from".into(),
        );
    };
    if curve.len() < 2 {
        return mk(
            None,
            "cannot_measure",
            true,
            None,
            format!(
                "{target:.0}/s is above the only knee measured ({k:.0}/s at {n} instance(s)); \
                 with one instance count, scaling is not measured, so no count is projected"
            ),
        );
    }
    let last_gain = marginal(curve[curve.len() - 2], (n, k));
    if last_gain <= 0.0 {
        return mk(
            None,
            "unreachable",
            true,
            Some(last_gain),
            format!(
                "{target:.0}/s is above every measured knee, and the last measured instance added \
                 {last_gain:.0}/s: more instances do not help (look at the shared store or the \
                 balancer)"
            ),
        );
    }
    let gain = last_gain.min(k / n as f64);
    let more = ((target - k) / gain).ceil();
    if !more.is_finite() || more > (MAX_PROJECTED - n) as f64 {
        return mk(
            None,
            "extrapolated",
            true,
            Some(gain),
            format!(
                "beyond the measured range: at {gain:.0}/s per added instance, {target:.0}/s needs \
                 more than {MAX_PROJECTED} instances"
            ),
        );
    }
    let est = n + more as u64;
    mk(
        Some(est),
        "extrapolated",
        true,
        Some(gain),
        format!(
            "beyond the measured range (up to {n} instances, {k:.0}/s): {est} instances, \
             extrapolated at {gain:.0}/s per added instance (the last measured marginal gain{}); \
             an estimate, not a measurement",
            if gain < last_gain {
                ", capped at the per-instance rate"
            } else {
                ""
            }
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(n: u64, knee: f64) -> Run {
        Run {
            instances: n,
            source: format!("r{n}"),
            knee_rps: Some(knee),
            knee_status: "bracketed".into(),
            ..Default::default()
        }
    }

    #[test]
    fn runs_that_shared_the_generators_host_are_named_instead_of_the_store() {
        let local = |n: u64, knee: f64| Run {
            host: Some(crate::report::HostShare {
                cores: 2,
                local_targets: vec!["PID 42 (listener of 127.0.0.1:8080)".into()],
            }),
            ..run(n, knee)
        };
        let r = analyse(&[local(1, 1000.0), local(2, 990.0)], Some(5000.0));
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("at 1 (2 cores), 2 (2 cores) instances the generator ran")),
            "{:?}",
            r.notes
        );
        let p = r.projection.unwrap();
        assert_eq!(p.method, "unreachable");
        assert!(
            p.text.contains("the cores, not the instances"),
            "{}",
            p.text
        );
        // A remote target (no local process found): the store is suspected.
        let remote = |n: u64, knee: f64| Run {
            host: Some(crate::report::HostShare {
                cores: 2,
                local_targets: vec![],
            }),
            ..run(n, knee)
        };
        let r = analyse(&[remote(1, 1000.0), remote(2, 990.0)], Some(5000.0));
        assert!(!r.notes.iter().any(|n| n.contains("generator ran")));
        assert!(!r.projection.unwrap().text.contains("the cores"));
    }

    #[test]
    fn efficiency_and_marginal_gain() {
        let r = analyse(&[run(2, 1600.0), run(1, 1000.0), run(3, 1900.0)], None);
        assert!(r.scaling_measured);
        let n: Vec<u64> = r.points.iter().map(|p| p.instances).collect();
        assert_eq!(n, [1, 2, 3]);
        let eff: Vec<f64> = r.points.iter().map(|p| p.efficiency.unwrap()).collect();
        assert!((eff[0] - 1.0).abs() < 1e-9);
        assert!((eff[1] - 0.8).abs() < 1e-9);
        assert!((eff[2] - 1900.0 / 3000.0).abs() < 1e-9);
        assert_eq!(r.points[0].marginal_gain_rps, None);
        assert_eq!(r.points[1].marginal_gain_rps, Some(600.0));
        assert_eq!(r.points[2].marginal_gain_rps, Some(300.0));
    }

    #[test]
    fn projection_within_the_measured_range() {
        let c = [(1, 1000.0), (2, 1600.0), (4, 2400.0)];
        let p = project(&c, 900.0);
        assert_eq!((p.instances, p.method.as_str()), (Some(1), "measured"));
        assert!(!p.beyond_measured);
        let p = project(&c, 1600.0);
        assert_eq!((p.instances, p.method.as_str()), (Some(2), "measured"));
        // 1600 + 400/instance: 2000 needs 3 (interpolated, not measured).
        let p = project(&c, 2000.0);
        assert_eq!((p.instances, p.method.as_str()), (Some(3), "interpolated"));
        let p = project(&c, 2001.0);
        assert_eq!((p.instances, p.method.as_str()), (Some(4), "measured"));
    }

    #[test]
    fn projection_beyond_the_range_uses_the_last_marginal_gain() {
        let c = [(1, 1000.0), (2, 1600.0)];
        // 600/s per added instance: 4000 needs 2 + ceil(2400/600) = 6.
        let p = project(&c, 4000.0);
        assert_eq!((p.instances, p.method.as_str()), (Some(6), "extrapolated"));
        assert!(p.beyond_measured);
        assert_eq!(p.gain_used_rps, Some(600.0));
        assert!(p.text.contains("beyond the measured range"), "{}", p.text);
        // Linear through the first point would say ceil(4000/1000) = 4: the
        // curve's answer is never that optimistic here.
        assert!(p.instances.unwrap() > 4);
    }

    #[test]
    fn a_superlinear_gain_is_capped_at_the_measured_per_instance_rate() {
        // The second instance added 1200/s, more than the 1100/s per
        // instance measured at 2: extrapolate at 1100.
        let c = [(1, 1000.0), (2, 2200.0)];
        let p = project(&c, 5500.0);
        assert_eq!(p.gain_used_rps, Some(1100.0));
        assert_eq!(p.instances, Some(2 + 3));
    }

    #[test]
    fn no_scaling_means_no_projection() {
        let c = [(1, 1000.0), (2, 990.0)];
        let p = project(&c, 1500.0);
        assert_eq!((p.instances, p.method.as_str()), (None, "unreachable"));
        assert!(p.text.contains("more instances do not help"), "{}", p.text);
        let c = [(1, 1000.0), (2, 1000.0)];
        assert_eq!(project(&c, 1500.0).instances, None);
        // Tiny positive gain: too many to state as a number.
        let c = [(1, 1000.0), (2, 1000.5)];
        let p = project(&c, 1e6);
        assert_eq!(p.instances, None);
        assert!(p.text.contains("more than"), "{}", p.text);
    }

    #[test]
    fn a_single_instance_count_cannot_measure_scaling() {
        let r = analyse(&[run(1, 1000.0)], Some(5000.0));
        assert!(!r.scaling_measured);
        assert_eq!(r.points[0].efficiency, None);
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("scaling cannot be measured"))
        );
        let p = r.projection.unwrap();
        assert_eq!((p.instances, p.method.as_str()), (None, "cannot_measure"));
        // A target the one measured count meets is still a measured fact.
        let p = project(&[(2, 1000.0)], 800.0);
        assert_eq!((p.instances, p.method.as_str()), (Some(2), "measured"));
    }

    #[test]
    fn runs_without_a_knee_and_duplicates_are_noted() {
        let mut none = run(3, 0.0);
        none.knee_rps = None;
        none.knee_status = "below_start".into();
        let mut dup = run(1, 900.0);
        dup.source = "again".into();
        let mut lower_bound = run(2, 1500.0);
        lower_bound.knee_status = "not_reached".into();
        let r = analyse(&[run(1, 1000.0), dup, lower_bound, none], None);
        assert_eq!(r.points.len(), 2);
        assert_eq!(r.points[0].knee_rps, 900.0, "the lower of two knees");
        assert!(r.notes.iter().any(|n| n.contains("below_start")));
        assert!(r.notes.iter().any(|n| n.contains("lower bound")));
        assert!(r.notes.iter().any(|n| n.contains("measured twice")));
    }
}
