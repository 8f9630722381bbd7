//! `load --baseline reports/<run>/summary.json`: this run against an
//! earlier one, leg by leg, so "p99 of `#2 retry` is 30 % worse than last
//! week's run" is said, and fails the run.
//!
//! A leg regresses when its p50 or p99 grew by more than the tolerance
//! (default [`DEFAULT_TOLERANCE_PCT`] %) *and* by more than
//! [`NOISE_FLOOR_MS`] (sub-0.1 ms moves are scheduler noise, not the
//! target). The run's round trips/s regress when they fell by more than
//! the tolerance. Legs only one run has are listed, never judged. Runs of
//! different setups (plan, model, load shape, measured duration, target)
//! are not compared at all: the comparison fails naming what differs.

/// The setup lines two runs must share to be compared: their name, and how
/// each run shows it.
fn setup(s: &Summary) -> Vec<(&'static str, String)> {
    let setting = |k: &str| s.settings.get(k).cloned().unwrap_or_default();
    let target = if s.embedded_target {
        "the embedded reference server".to_owned()
    } else {
        s.target.clone()
    };
    vec![
        ("plan", s.plan.clone()),
        ("model", s.model.clone()),
        ("load shape", setting("load shape")),
        ("measured duration", setting("duration (measured)")),
        ("target", target),
    ]
}

/// What differs between the setups of `now` and `before`, one line each.
pub fn mismatches(now: &Summary, before: &Summary) -> Vec<String> {
    setup(now)
        .into_iter()
        .zip(setup(before))
        .filter(|((_, n), (_, b))| n != b)
        .map(|((what, n), (_, b))| format!("{what}: {b:?} in the baseline, {n:?} now"))
        .collect()
}

use crate::report::{BaselineComparison, BaselineDelta, Summary};

/// Tolerance when `--baseline-tolerance` is not given, in percent.
pub const DEFAULT_TOLERANCE_PCT: f64 = 20.0;

/// Latency growth below this is never a regression, in milliseconds.
pub const NOISE_FLOOR_MS: f64 = 0.1;

/// Reads a baseline: a `summary.json`, or a run folder holding one.
pub fn read(path: &std::path::Path) -> Result<Summary, String> {
    let file = if path.is_dir() {
        path.join("summary.json")
    } else {
        path.to_owned()
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("--baseline {}: {e}", file.display()))?;
    let s: Summary = serde_json::from_str(&text)
        .map_err(|e| format!("--baseline {}: not a summary.json: {e}", file.display()))?;
    if s.schema != crate::report::SCHEMA_VERSION {
        return Err(format!(
            "--baseline {}: schema {} is not supported (expected {})",
            file.display(),
            s.schema,
            crate::report::SCHEMA_VERSION
        ));
    }
    Ok(s)
}

/// Compares `now` with `before`; `file` names the baseline in the result.
pub fn compare(
    now: &Summary,
    before: &Summary,
    file: &str,
    tolerance_pct: f64,
) -> BaselineComparison {
    let grew = |b: f64, n: f64| n > b * (1.0 + tolerance_pct / 100.0) && n - b > NOISE_FLOOR_MS;
    let pct = |b: f64, n: f64| if b > 0.0 { (n - b) * 100.0 / b } else { 0.0 };
    let mut legs = Vec::new();
    let names: std::collections::BTreeSet<&String> =
        now.legs.keys().chain(before.legs.keys()).collect();
    for name in names {
        let (b, n) = (before.legs.get(name), now.legs.get(name));
        let delta = match (b, n) {
            (Some(b), Some(n)) if b.count > 0 && n.count > 0 => BaselineDelta {
                leg: name.clone(),
                p50_ms_before: Some(b.p50_ms),
                p50_ms_now: Some(n.p50_ms),
                p99_ms_before: Some(b.p99_ms),
                p99_ms_now: Some(n.p99_ms),
                p50_delta_pct: Some(pct(b.p50_ms, n.p50_ms)),
                p99_delta_pct: Some(pct(b.p99_ms, n.p99_ms)),
                regressed: grew(b.p50_ms, n.p50_ms) || grew(b.p99_ms, n.p99_ms),
            },
            _ => BaselineDelta {
                leg: name.clone(),
                p50_ms_before: b.map(|s| s.p50_ms),
                p50_ms_now: n.map(|s| s.p50_ms),
                p99_ms_before: b.map(|s| s.p99_ms),
                p99_ms_now: n.map(|s| s.p99_ms),
                ..Default::default()
            },
        };
        legs.push(delta);
    }
    let rps_regressed = before.rps > 0.0 && now.rps < before.rps * (1.0 - tolerance_pct / 100.0);
    let mismatches = mismatches(now, before);
    let passed = mismatches.is_empty() && !rps_regressed && legs.iter().all(|l| !l.regressed);
    BaselineComparison {
        file: file.to_owned(),
        run_id: before.run_id.clone(),
        tolerance_pct,
        rps_before: before.rps,
        rps_now: now.rps,
        rps_delta_pct: pct(before.rps, now.rps),
        rps_regressed,
        legs,
        mismatches,
        passed,
    }
}

/// One line per regression, for the run's failures list.
pub fn failures(c: &BaselineComparison) -> Vec<String> {
    let mut out = Vec::new();
    if !c.mismatches.is_empty() {
        out.push(format!(
            "baseline {}: a run of another setup, not compared ({}); compare runs of one plan, \
             model, shape, duration and target",
            c.run_id,
            c.mismatches.join("; ")
        ));
    }
    if c.rps_regressed {
        out.push(format!(
            "baseline {}: round trips/s fell {:.1} % ({:.1} → {:.1}/s), beyond the {} % tolerance",
            c.run_id, -c.rps_delta_pct, c.rps_before, c.rps_now, c.tolerance_pct
        ));
    }
    for l in c.legs.iter().filter(|l| l.regressed) {
        out.push(format!(
            "baseline {}: `{}` regressed beyond the {} % tolerance: p50 {:.3} → {:.3} ms ({:+.1} %), p99 {:.3} → {:.3} ms ({:+.1} %)",
            c.run_id,
            l.leg,
            c.tolerance_pct,
            l.p50_ms_before.unwrap_or(0.0),
            l.p50_ms_now.unwrap_or(0.0),
            l.p50_delta_pct.unwrap_or(0.0),
            l.p99_ms_before.unwrap_or(0.0),
            l.p99_ms_now.unwrap_or(0.0),
            l.p99_delta_pct.unwrap_or(0.0),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::LatencyStats;

    fn summary(rps: f64, legs: &[(&str, f64, f64)]) -> Summary {
        let mut s = Summary {
            schema: crate::report::SCHEMA_VERSION,
            run_id: "before".into(),
            rps,
            ..Default::default()
        };
        for (name, p50, p99) in legs {
            s.legs.insert(
                (*name).into(),
                LatencyStats {
                    count: 100,
                    p50_ms: *p50,
                    p99_ms: *p99,
                    ..Default::default()
                },
            );
        }
        s
    }

    #[test]
    fn a_leg_regresses_only_beyond_tolerance_and_noise() {
        let before = summary(
            1000.0,
            &[
                ("#1", 1.0, 4.0),
                ("#2 retry", 1.0, 4.0),
                ("tiny", 0.02, 0.05),
            ],
        );
        // #1: p99 +30 % → regressed; #2: +10 % → fine; tiny: +100 % but
        // 0.05 ms → noise; a new leg is listed, not judged.
        let now = summary(
            950.0,
            &[
                ("#1", 1.0, 5.2),
                ("#2 retry", 1.1, 4.4),
                ("tiny", 0.04, 0.10),
                ("new", 9.0, 9.0),
            ],
        );
        let c = compare(&now, &before, "b.json", 20.0);
        let leg = |n: &str| c.legs.iter().find(|l| l.leg == n).unwrap();
        assert!(leg("#1").regressed);
        assert!((leg("#1").p99_delta_pct.unwrap() - 30.0).abs() < 1e-9);
        assert!(!leg("#2 retry").regressed);
        assert!(!leg("tiny").regressed);
        assert!(!leg("new").regressed && leg("new").p99_ms_before.is_none());
        assert!(!c.rps_regressed, "-5 % is within 20 %");
        assert!(!c.passed);
        let f = failures(&c);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("`#1`") && f[0].contains("+30.0 %"), "{f:?}");
    }

    #[test]
    fn throughput_falling_beyond_tolerance_fails_and_the_same_run_passes() {
        let before = summary(1000.0, &[("#1", 1.0, 4.0)]);
        let c = compare(&summary(700.0, &[("#1", 1.0, 4.0)]), &before, "b", 20.0);
        assert!(c.rps_regressed && !c.passed);
        assert!(failures(&c)[0].contains("fell 30.0 %"));
        let same = compare(&before, &before, "b", 20.0);
        assert!(same.passed && failures(&same).is_empty());
    }

    #[test]
    fn runs_of_another_setup_are_not_compared() {
        let mut before = summary(1000.0, &[("#1", 1.0, 4.0)]);
        before.model = "open".into();
        before.embedded_target = true;
        before.target = "http://127.0.0.1:4000/mcp".into();
        let mut now = before.clone();
        // Another port of the embedded server is the same target.
        now.target = "http://127.0.0.1:5000/mcp".into();
        assert!(compare(&now, &before, "b", 20.0).passed);
        now.model = "closed".into();
        let c = compare(&now, &before, "b", 20.0);
        assert!(!c.passed);
        assert_eq!(
            c.mismatches,
            ["model: \"open\" in the baseline, \"closed\" now"]
        );
        assert!(
            failures(&c)[0].contains("not compared"),
            "{:?}",
            failures(&c)
        );
    }
}
