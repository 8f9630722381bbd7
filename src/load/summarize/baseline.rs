//! `load --baseline reports/<run>/ [--baseline …]`: this run against
//! earlier runs of the same setup, leg by leg, so "p99 of `#2 retry` is
//! 30 % worse than last week's runs" is said, and fails the run.
//!
//! One baseline run can only be judged with a fixed tolerance (default
//! [`DEFAULT_TOLERANCE_PCT`] %). Several (`--baseline` repeated, or a folder
//! of run folders) give a noise estimate, as a benchmark harness would: for
//! each figure the runs' mean and spread, and the band a new run of the
//! same setup stays inside with 99.5 % confidence (a one-sided Student-t
//! prediction interval, `t · sd · √(1 + 1/k)` for `k` runs). A figure
//! regresses when it moved the bad way by more than the tolerance, the
//! band and (latency) [`NOISE_FLOOR_MS`], whichever is widest: a noisy
//! machine widens the gate instead of flapping it. The error rate is judged
//! by counts (a two-proportion z-test, z > 3.09, and at least 0.1
//! percentage point). Legs only one side has are listed, never judged.
//! Runs of different setups (plan, model, load shape, measured duration,
//! target) are not compared at all: the comparison fails naming what
//! differs.

use crate::report::{BaselineComparison, BaselineDelta, LatencyStats, Summary};
use std::path::{Path, PathBuf};

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

/// Tolerance when `--baseline-tolerance` is not given, in percent.
pub const DEFAULT_TOLERANCE_PCT: f64 = 20.0;

/// Latency growth below this is never a regression, in milliseconds.
pub const NOISE_FLOOR_MS: f64 = 0.1;

/// An error-rate rise below this (a fraction) is never a regression.
const ERROR_RATE_FLOOR: f64 = 0.001;

/// z beyond which an error-rate rise is not chance (one-sided 0.1 %).
const ERROR_RATE_Z: f64 = 3.09;

/// Reads a baseline: a `summary.json`, or a run folder holding one.
pub fn read(path: &Path) -> Result<Summary, String> {
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

/// Reads every baseline run `paths` name: a `summary.json`, a run folder,
/// or a folder of run folders (each sub-folder holding a `summary.json`,
/// in name order).
pub fn read_all(paths: &[PathBuf]) -> Result<Vec<Summary>, String> {
    let mut runs = Vec::new();
    for p in paths {
        if p.is_dir() && !p.join("summary.json").exists() {
            let mut subs: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| format!("--baseline {}: {e}", p.display()))?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|d| d.join("summary.json").is_file())
                .collect();
            if subs.is_empty() {
                return Err(format!(
                    "--baseline {}: neither a run folder (no summary.json) nor a folder of them",
                    p.display()
                ));
            }
            subs.sort();
            for d in subs {
                runs.push(read(&d)?);
            }
        } else {
            runs.push(read(p)?);
        }
    }
    Ok(runs)
}

/// One-sided 99.5 % Student-t quantiles by degrees of freedom (1..=30).
const T_995: [f64; 30] = [
    63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055, 3.012,
    2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797, 2.787, 2.779,
    2.771, 2.763, 2.756, 2.750,
];

/// A figure across the baseline runs: its mean, and how far a new run of
/// the same setup may stray from it by chance (0 for a single run).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Mean over the runs.
    pub mean: f64,
    /// Half-width of the one-sided 99.5 % prediction interval.
    pub band: f64,
}

impl Spread {
    /// The spread of `values` (one per run).
    pub fn of(values: &[f64]) -> Spread {
        let k = values.len();
        if k == 0 {
            return Spread {
                mean: 0.0,
                band: 0.0,
            };
        }
        let mean = values.iter().sum::<f64>() / k as f64;
        if k < 2 {
            return Spread { mean, band: 0.0 };
        }
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (k - 1) as f64;
        let t = T_995.get(k - 2).copied().unwrap_or(2.576);
        Spread {
            mean,
            band: t * var.sqrt() * (1.0 + 1.0 / k as f64).sqrt(),
        }
    }
}

/// Compares `now` with the baseline runs `before` (at least one); `file`
/// names the baseline in the result.
pub fn compare(
    now: &Summary,
    before: &[Summary],
    file: &str,
    tolerance_pct: f64,
) -> BaselineComparison {
    let tol = tolerance_pct / 100.0;
    let pct = |b: f64, n: f64| if b > 0.0 { (n - b) * 100.0 / b } else { 0.0 };
    let mut legs = Vec::new();
    let names: std::collections::BTreeSet<&String> = before
        .iter()
        .flat_map(|b| b.legs.keys())
        .chain(now.legs.keys())
        .collect();
    let mut all: Vec<(String, Vec<&LatencyStats>, Option<&LatencyStats>)> = names
        .into_iter()
        .map(|name| {
            let b = before
                .iter()
                .filter_map(|s| s.legs.get(name))
                .filter(|l| l.count > 0)
                .collect();
            (name.clone(), b, now.legs.get(name).filter(|l| l.count > 0))
        })
        .collect();
    all.push((
        "end to end".into(),
        before
            .iter()
            .map(|s| &s.e2e)
            .filter(|l| l.count > 0)
            .collect(),
        Some(&now.e2e).filter(|l| l.count > 0),
    ));
    for (name, b, n) in all {
        let p50 = Spread::of(&b.iter().map(|l| l.p50_ms).collect::<Vec<_>>());
        let p99 = Spread::of(&b.iter().map(|l| l.p99_ms).collect::<Vec<_>>());
        let allowed = |s: Spread| (s.mean * tol).max(s.band).max(NOISE_FLOOR_MS);
        let (p50_allowed, p99_allowed) = (allowed(p50), allowed(p99));
        let delta = match n {
            Some(n) if !b.is_empty() => BaselineDelta {
                leg: name,
                p50_ms_before: Some(p50.mean),
                p50_ms_now: Some(n.p50_ms),
                p99_ms_before: Some(p99.mean),
                p99_ms_now: Some(n.p99_ms),
                p50_delta_pct: Some(pct(p50.mean, n.p50_ms)),
                p99_delta_pct: Some(pct(p99.mean, n.p99_ms)),
                p50_allowed_ms: Some(p50_allowed),
                p99_allowed_ms: Some(p99_allowed),
                regressed: n.p50_ms - p50.mean > p50_allowed || n.p99_ms - p99.mean > p99_allowed,
            },
            _ => BaselineDelta {
                leg: name,
                p50_ms_before: (!b.is_empty()).then_some(p50.mean),
                p50_ms_now: n.map(|s| s.p50_ms),
                p99_ms_before: (!b.is_empty()).then_some(p99.mean),
                p99_ms_now: n.map(|s| s.p99_ms),
                ..Default::default()
            },
        };
        legs.push(delta);
    }
    let rps = Spread::of(&before.iter().map(|s| s.rps).collect::<Vec<_>>());
    let rps_allowed = (rps.mean * tol).max(rps.band);
    let rps_regressed = rps.mean > 0.0 && rps.mean - now.rps > rps_allowed;
    let (err_before, err_now, err_regressed) = error_rates(now, before);
    let mut mismatches: Vec<String> = Vec::new();
    for b in before {
        for m in self::mismatches(now, b) {
            let line = if before.len() > 1 {
                format!("{m} (run {})", b.run_id)
            } else {
                m
            };
            mismatches.push(line);
        }
    }
    let passed = mismatches.is_empty()
        && !rps_regressed
        && !err_regressed
        && legs.iter().all(|l| !l.regressed);
    let runs: Vec<String> = before.iter().map(|b| b.run_id.clone()).collect();
    let noise = if before.len() > 1 {
        format!(
            "{} runs: each figure may move by the tolerance or by its 99.5 % noise band over \
             these runs, whichever is wider",
            before.len()
        )
    } else {
        "one run: no noise estimate, the tolerance alone (give --baseline 3 or more runs of \
         the setup to judge against their spread)"
            .to_owned()
    };
    BaselineComparison {
        file: file.to_owned(),
        run_id: runs.join(", "),
        tolerance_pct,
        rps_before: rps.mean,
        rps_now: now.rps,
        rps_delta_pct: pct(rps.mean, now.rps),
        rps_regressed,
        rps_allowed_pct: if rps.mean > 0.0 {
            rps_allowed * 100.0 / rps.mean
        } else {
            0.0
        },
        legs,
        runs,
        noise,
        error_rate_before: err_before,
        error_rate_now: err_now,
        error_rate_regressed: err_regressed,
        mismatches,
        passed,
    }
}

/// The error rates (the baseline runs pooled, and now) and whether the
/// rise is beyond chance and the floor.
fn error_rates(now: &Summary, before: &[Summary]) -> (f64, f64, bool) {
    let (bu, bt) = before.iter().fold((0u64, 0u64), |(u, t), s| {
        (u + s.round_trips.unexpected, t + s.round_trips.total)
    });
    let (nu, nt) = (now.round_trips.unexpected, now.round_trips.total);
    let rate = |u: u64, t: u64| if t > 0 { u as f64 / t as f64 } else { 0.0 };
    let (pb, pn) = (rate(bu, bt), rate(nu, nt));
    if bt == 0 || nt == 0 {
        return (pb, pn, false);
    }
    let pooled = rate(bu + nu, bt + nt);
    let se = (pooled * (1.0 - pooled) * (1.0 / bt as f64 + 1.0 / nt as f64)).sqrt();
    let beyond_chance = if se > 0.0 {
        (pn - pb) / se > ERROR_RATE_Z
    } else {
        pn > pb
    };
    (pb, pn, beyond_chance && pn - pb >= ERROR_RATE_FLOOR)
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
            "baseline {}: round trips/s fell {:.1} % ({:.1} → {:.1}/s), beyond the {:.1} % allowed \
             ({} % tolerance, or the noise band when wider)",
            c.run_id, -c.rps_delta_pct, c.rps_before, c.rps_now, c.rps_allowed_pct, c.tolerance_pct
        ));
    }
    if c.error_rate_regressed {
        out.push(format!(
            "baseline {}: the error rate rose from {:.3} % to {:.3} %, beyond chance",
            c.run_id,
            c.error_rate_before * 100.0,
            c.error_rate_now * 100.0
        ));
    }
    for l in c.legs.iter().filter(|l| l.regressed) {
        out.push(format!(
            "baseline {}: `{}` regressed beyond what is allowed ({} % tolerance, the noise band or \
             0.1 ms, whichever is wider): p50 {:.3} → {:.3} ms ({:+.1} %, +{:.3} allowed), p99 \
             {:.3} → {:.3} ms ({:+.1} %, +{:.3} allowed)",
            c.run_id,
            l.leg,
            c.tolerance_pct,
            l.p50_ms_before.unwrap_or(0.0),
            l.p50_ms_now.unwrap_or(0.0),
            l.p50_delta_pct.unwrap_or(0.0),
            l.p50_allowed_ms.unwrap_or(0.0),
            l.p99_ms_before.unwrap_or(0.0),
            l.p99_ms_now.unwrap_or(0.0),
            l.p99_delta_pct.unwrap_or(0.0),
            l.p99_allowed_ms.unwrap_or(0.0),
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
        let c = compare(&now, std::slice::from_ref(&before), "b.json", 20.0);
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
        let c = compare(
            &summary(700.0, &[("#1", 1.0, 4.0)]),
            std::slice::from_ref(&before),
            "b",
            20.0,
        );
        assert!(c.rps_regressed && !c.passed);
        assert!(failures(&c)[0].contains("fell 30.0 %"));
        let same = compare(&before, std::slice::from_ref(&before), "b", 20.0);
        assert!(same.passed && failures(&same).is_empty());
    }

    #[test]
    fn several_runs_widen_the_gate_by_their_spread_and_no_further() {
        let run = |rps: f64, p99: f64| summary(rps, &[("#1", 1.0, p99)]);
        // A noisy machine: three runs 1000 ± 200/s, p99 4 ± 1 ms. A 30 %
        // slower rerun is within their spread.
        let noisy = [run(1000.0, 4.0), run(800.0, 3.0), run(1200.0, 5.0)];
        let c = compare(&run(700.0, 5.5), &noisy, "dir", 20.0);
        assert!(c.passed, "{:?}", failures(&c));
        assert!(c.rps_allowed_pct > 30.0, "{}", c.rps_allowed_pct);
        assert_eq!(c.runs.len(), 3);
        assert!(c.noise.starts_with("3 runs"), "{}", c.noise);
        // A quiet one: the tolerance is the gate again.
        let quiet = [run(1000.0, 4.0), run(1010.0, 4.05), run(990.0, 3.95)];
        let c = compare(&run(700.0, 5.5), &quiet, "dir", 20.0);
        assert!(c.rps_regressed && !c.passed);
        assert!(
            (c.rps_allowed_pct - 20.0).abs() < 1e-9,
            "{}",
            c.rps_allowed_pct
        );
        let leg = &c.legs[0];
        assert!(leg.regressed, "{leg:?}");
        assert!((leg.p99_allowed_ms.unwrap() - 0.8).abs() < 1e-9, "{leg:?}");
        assert!(compare(&run(990.0, 4.1), &quiet, "dir", 20.0).passed);
    }

    #[test]
    fn the_spread_of_one_run_or_equal_runs_is_nothing() {
        assert_eq!(Spread::of(&[5.0]).band, 0.0);
        assert_eq!(Spread::of(&[5.0, 5.0, 5.0]).band, 0.0);
        let s = Spread::of(&[9.0, 11.0]);
        assert_eq!(s.mean, 10.0);
        // sd √2, t(1) 63.657, √1.5.
        assert!((s.band - 63.657 * 2f64.sqrt() * 1.5f64.sqrt()).abs() < 1e-9);
    }

    #[test]
    fn the_error_rate_is_judged_by_its_counts() {
        let with = |unexpected: u64, total: u64| {
            let mut s = summary(1000.0, &[]);
            s.round_trips.unexpected = unexpected;
            s.round_trips.total = total;
            s
        };
        let judge = |now: Summary, before: Summary| {
            compare(&now, std::slice::from_ref(&before), "b", 20.0).error_rate_regressed
        };
        assert!(judge(with(50, 10_000), with(0, 10_000)), "0 → 0.5 %");
        assert!(
            !judge(with(1, 10_000), with(0, 10_000)),
            "0.01 %: below the floor"
        );
        assert!(
            !judge(with(12, 1_000), with(10, 1_000)),
            "1.0 → 1.2 %: chance"
        );
        let c = compare(&with(50, 10_000), &[with(0, 10_000)], "b", 20.0);
        assert!(failures(&c).iter().any(|f| f.contains("error rate rose")));
    }

    #[test]
    fn a_folder_of_runs_is_every_run_in_it() {
        let dir = tempfile::tempdir().unwrap();
        for (name, rps) in [("b-2", 900.0), ("a-1", 1000.0)] {
            let mut s = summary(rps, &[]);
            s.run_id = name.into();
            let d = dir.path().join(name);
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("summary.json"), serde_json::to_string(&s).unwrap()).unwrap();
        }
        let runs = read_all(&[dir.path().to_owned()]).unwrap();
        let ids: Vec<&str> = runs.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(ids, ["a-1", "b-2"]);
        let one = read_all(&[dir.path().join("a-1")]).unwrap();
        assert_eq!(one.len(), 1);
        let empty = tempfile::tempdir().unwrap();
        let e = read_all(&[empty.path().to_owned()]).unwrap_err();
        assert!(e.contains("nor a folder of them"), "{e}");
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
        assert!(compare(&now, std::slice::from_ref(&before), "b", 20.0).passed);
        now.model = "closed".into();
        let c = compare(&now, std::slice::from_ref(&before), "b", 20.0);
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
