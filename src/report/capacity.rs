//! Capacity rendering: the step table of one `load --capacity` run (for the
//! terminal and `summary.md`), and the report across instance counts
//! (`report capacity`: `capacity.json` data model, `capacity.md`, the
//! terminal table). The figures are computed in `crate::load`.

use super::format::ms;
use super::summary::CapacitySummary;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// One instance count on the capacity curve.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScalingPoint {
    /// Instances behind the target.
    pub instances: u64,
    /// The report folder it came from.
    pub source: String,
    /// Knee: achieved round trips/s within the SLO.
    pub knee_rps: f64,
    /// How that search ended (`bracketed`, `not_reached`: a lower bound, …).
    pub knee_status: String,
    /// `knee_rps / instances`.
    pub per_instance_rps: f64,
    /// `knee_N / (N × knee_1)` (or relative to the smallest count measured);
    /// `null` with one count.
    pub efficiency: Option<f64>,
    /// Round trips/s each instance added since the previous count.
    pub marginal_gain_rps: Option<f64>,
    /// Shared-store commands per round trip at the knee.
    pub store_cmds_per_rt: Option<f64>,
    /// Target CPU per round trip at the knee (µs).
    pub target_cpu_us_per_rt: Option<f64>,
}

/// The instances a target rate needs, from the measured curve.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Projection {
    /// The rate to size for (round trips/s).
    pub target_rate: f64,
    /// Instances needed; `null` when the curve cannot say.
    pub instances: Option<u64>,
    /// `measured`, `interpolated`, `extrapolated`, `unreachable` (marginal
    /// gain ≤ 0), `cannot_measure` (one instance count) or `none`.
    pub method: String,
    /// The answer lies beyond the largest count measured.
    pub beyond_measured: bool,
    /// The per-instance gain the answer assumes.
    pub gain_used_rps: Option<f64>,
    /// The answer in words.
    pub text: String,
}

/// `capacity.json`: capacity across instance counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScalingReport {
    /// Always 1.
    pub schema: u32,
    /// One point per instance count, ascending.
    pub points: Vec<ScalingPoint>,
    /// The count efficiency is relative to (1 when measured).
    pub efficiency_base: Option<u64>,
    /// Whether two or more counts were measured.
    pub scaling_measured: bool,
    /// For `--target-rate`.
    pub projection: Option<Projection>,
    /// What the data cannot tell.
    pub notes: Vec<String>,
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// The step table's header and rows, shared by the terminal and Markdown.
pub fn step_rows(c: &CapacitySummary) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let mut head = vec![
        "#",
        "kind",
        "offered/s",
        "achieved/s",
        "p50 ms",
        "p99 ms",
        "p99 per sample",
        "errors",
        "samples",
        "verdict",
        "CPU µs/rt",
    ];
    let store = c.store.is_some();
    if store {
        head.push("store cmds/rt");
    }
    let rows = c
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let verdict = if s.verdict.is_empty() {
                if s.within_slo { "within" } else { "breach" }.to_owned()
            } else {
                s.verdict.clone()
            };
            let samples = match s.stable {
                Some(true) => format!("{} stable", s.samples),
                Some(false) => format!("{} unsettled", s.samples),
                None => s.samples.max(1).to_string(),
            };
            let mut r = vec![
                (i + 1).to_string(),
                if s.kind.is_empty() {
                    "coarse".into()
                } else {
                    s.kind.clone()
                },
                format!("{:.0}", s.offered_rps),
                format!("{:.1}", s.achieved_rps),
                ms(s.p50_ms),
                ms(s.p99_ms),
                per_sample(&s.sample_p99_ms),
                format!("{:.2}%", s.error_rate * 100.0),
                samples,
                verdict,
                opt(s.target_cpu_us_per_rt, 1),
            ];
            if store {
                r.push(opt(s.store_cmds_per_rt, 1));
            }
            r
        })
        .collect();
    (head, rows)
}

/// What a step's figures are and when it is within the SLO, under every
/// step table.
pub const STEP_NOTE: &str = "Each step's figures are its worst sample's (highest p50, p99 and \
    error rate, lowest achieved rate); a step is within the SLO when every sample held it \
    (`unstable`: every sample held, but the p99 did not settle within the samples taken).";

/// Each sample's p99 in order (`6.143 / 7.712 / 13.3`), `-` for fewer
/// than two: the spread a step's worst sample hides.
fn per_sample(p99s: &[f64]) -> String {
    if p99s.len() < 2 {
        return "-".into();
    }
    p99s.iter().map(|v| ms(*v)).collect::<Vec<_>>().join(" / ")
}

/// The knee in words: where it lies, how sure, and what it costs.
pub fn knee_text(c: &CapacitySummary) -> String {
    let knee = c.knee_rps.map_or("none".into(), |v| format!("{v:.1}"));
    let at = c.knee_offered_rps.map_or(String::new(), |o| {
        format!(" (achieved at {o:.0}/s offered)")
    });
    let lies = match (c.knee_status.as_str(), c.knee_offered_rps, c.first_bad_rps) {
        ("bracketed", Some(g), Some(b)) => format!(
            "; the knee lies between {g:.0}/s (within) and {b:.0}/s (not within), a bracket of {:.1} %",
            (b - g) / b * 100.0
        ),
        ("below_start", _, Some(b)) if c.steps.first().is_some_and(|s| s.error_rate >= 0.99) => {
            format!(
                "; every round trip of the first step ({b:.0}/s) failed: errors, not load (a lower \
                 start_rate will not help; see the errors)"
            )
        }
        ("below_start", _, Some(b)) => format!(
            "; the first step ({b:.0}/s) already broke the SLO: the knee is below it (lower start_rate)"
        ),
        ("not_reached", Some(g), _) => format!(
            "; the highest rate tried ({g:.0}/s) held: the knee is at least that (raise max_rate)"
        ),
        ("stopped", _, _) => "; the search stopped before it ended: a lower bound at best".into(),
        ("inconclusive", _, _) => format!(
            "; INCONCLUSIVE, the knee is not known: {}",
            c.inconclusive
                .as_deref()
                .unwrap_or("a step could not be judged")
        ),
        _ => String::new(),
    };
    let mut o = format!("Knee: {knee} round trips/s within the SLO{at}{lies}.");
    let _ = write!(
        o,
        " Target CPU at the knee: {} µs/round trip.",
        opt(c.target_cpu_us_per_rt, 1)
    );
    if let Some(s) = &c.store {
        let _ = write!(
            o,
            " Store ({s}) at the knee: {} commands/round trip.",
            opt(c.store_cmds_per_rt, 1)
        );
    }
    if let Some(n) = c.instances {
        let _ = write!(o, " Measured against {n} instance(s).");
    }
    if let (Some(t), Some(n)) = (c.target_rate, c.instances_needed) {
        let _ = write!(
            o,
            " For {t:.0}/s: at least {n} instances if scaling were linear (it is not measured \
             here: `elicitkit report capacity` measures it from runs at several instance counts)."
        );
    }
    o
}

/// The capacity section of `summary.md`.
pub fn steps_markdown(c: &CapacitySummary) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "SLO: `{}`\n", c.slo.join("`, `"));
    let (head, rows) = step_rows(c);
    let _ = writeln!(o, "| {} |", head.join(" | "));
    let _ = writeln!(
        o,
        "|{}",
        head.iter()
            .map(|h| if matches!(*h, "kind" | "verdict" | "samples") {
                "---|"
            } else {
                "---:|"
            })
            .collect::<String>()
    );
    for r in rows {
        let _ = writeln!(o, "| {} |", r.join(" | "));
    }
    let _ = writeln!(o, "\n{STEP_NOTE}\n");
    let _ = writeln!(o, "{}", knee_text(c));
    if c.worst_case_s > 0.0 {
        let _ = writeln!(
            o,
            "\nThe search was bounded to {:.0} s (every step taking every sample).",
            c.worst_case_s
        );
    }
    for n in &c.notes {
        let _ = writeln!(o, "\n- {n}");
    }
    o
}

/// The step table for the terminal, one line each (header first).
pub fn steps_text(c: &CapacitySummary) -> Vec<String> {
    let (head, rows) = step_rows(c);
    let mut all: Vec<Vec<String>> = vec![head.iter().map(|h| h.to_string()).collect()];
    all.extend(rows);
    let widths: Vec<usize> = (0..all[0].len())
        .map(|i| all.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    all.iter()
        .map(|r| {
            r.iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:>w$}"))
                .collect::<Vec<_>>()
                .join("  ")
        })
        .collect()
}

fn scaling_rows(r: &ScalingReport) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let head = vec![
        "instances",
        "knee/s",
        "per instance/s",
        "efficiency",
        "marginal gain/s",
        "store cmds/rt",
        "CPU µs/rt",
        "search",
    ];
    let rows = r
        .points
        .iter()
        .map(|p| {
            vec![
                p.instances.to_string(),
                format!("{:.0}", p.knee_rps),
                format!("{:.0}", p.per_instance_rps),
                p.efficiency
                    .map_or("-".into(), |e| format!("{:.0} %", e * 100.0)),
                opt(p.marginal_gain_rps, 0),
                opt(p.store_cmds_per_rt, 1),
                opt(p.target_cpu_us_per_rt, 1),
                if p.knee_status.is_empty() {
                    "-".into()
                } else {
                    p.knee_status.clone()
                },
            ]
        })
        .collect();
    (head, rows)
}

/// `capacity.md`.
pub fn scaling_markdown(r: &ScalingReport) -> String {
    let mut o = String::from("# elicitkit capacity across instance counts\n\n");
    let (head, rows) = scaling_rows(r);
    let _ = writeln!(o, "| {} |", head.join(" | "));
    let _ = writeln!(o, "|{}", "---:|".repeat(head.len()));
    for row in rows {
        let _ = writeln!(o, "| {} |", row.join(" | "));
    }
    let base = r
        .efficiency_base
        .map_or("-".into(), |b| format!("{b} instance(s)"));
    let _ = writeln!(
        o,
        "\nEfficiency = knee(N) / (N × knee per instance at {base}); marginal gain = what each \
         instance added since the previous count measured. Sources:\n"
    );
    for p in &r.points {
        let _ = writeln!(o, "- {} instance(s): `{}`", p.instances, p.source);
    }
    if let Some(p) = &r.projection {
        let _ = writeln!(
            o,
            "\n## Instances for {:.0} round trips/s\n\n**{}** ({}{}): {}.",
            p.target_rate,
            p.instances
                .map_or("not projected".into(), |n| n.to_string()),
            p.method,
            if p.beyond_measured {
                ", beyond the measured range"
            } else {
                ""
            },
            p.text
        );
    }
    if !r.notes.is_empty() {
        o.push_str("\n## Notes\n\n");
        for n in &r.notes {
            let _ = writeln!(o, "- {n}");
        }
    }
    o
}

/// The terminal table of `report capacity`.
pub fn scaling_text(r: &ScalingReport) -> Vec<String> {
    let (head, rows) = scaling_rows(r);
    let mut all: Vec<Vec<String>> = vec![head.iter().map(|h| h.to_string()).collect()];
    all.extend(rows);
    let widths: Vec<usize> = (0..head.len())
        .map(|i| all.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out: Vec<String> = all
        .iter()
        .map(|r| {
            r.iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:>w$}"))
                .collect::<Vec<_>>()
                .join("  ")
        })
        .collect();
    if let Some(p) = &r.projection {
        out.push(format!(
            "instances for {:.0}/s: {} — {}",
            p.target_rate,
            p.instances
                .map_or("not projected".into(), |n| n.to_string()),
            p.text
        ));
    }
    for n in &r.notes {
        out.push(format!("note: {n}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::summary::CapacityStep;

    /// A first step whose every round trip failed is not a knee below the
    /// start: "lower start_rate" was the advice for a target that refused
    /// everything.
    #[test]
    fn a_first_step_of_errors_is_not_advised_a_lower_rate() {
        let step = |error_rate: f64| CapacityStep {
            offered_rps: 500.0,
            error_rate,
            verdict: "breach".into(),
            ..Default::default()
        };
        let mut c = CapacitySummary {
            knee_status: "below_start".into(),
            first_bad_rps: Some(500.0),
            steps: vec![step(1.0)],
            ..Default::default()
        };
        let t = knee_text(&c);
        assert!(
            t.contains("errors, not load") && !t.contains("lower start_rate)"),
            "{t}"
        );
        c.steps = vec![step(0.02)];
        assert!(knee_text(&c).contains("(lower start_rate)"));
    }

    #[test]
    fn the_step_table_shows_kind_samples_and_verdict() {
        let c = CapacitySummary {
            slo: vec!["p99(e2e) < 10ms".into()],
            steps: vec![
                CapacityStep {
                    offered_rps: 100.0,
                    achieved_rps: 99.5,
                    kind: "coarse".into(),
                    samples: 2,
                    stable: Some(true),
                    verdict: "within".into(),
                    within_slo: true,
                    ..Default::default()
                },
                CapacityStep {
                    offered_rps: 150.0,
                    kind: "bisect".into(),
                    samples: 3,
                    stable: Some(false),
                    verdict: "unstable".into(),
                    sample_p99_ms: vec![6.143, 7.712, 13.3],
                    ..Default::default()
                },
            ],
            knee_rps: Some(99.5),
            knee_offered_rps: Some(100.0),
            first_bad_rps: Some(150.0),
            knee_status: "bracketed".into(),
            ..Default::default()
        };
        let md = steps_markdown(&c);
        assert!(md.contains("| 1 | coarse | 100 | 99.5 |"), "{md}");
        assert!(md.contains("| 6.143 / 7.712 / 13.3 |"), "{md}");
        assert!(md.contains("| 3 unsettled | unstable |"), "{md}");
        assert!(md.contains("between 100/s (within) and 150/s"), "{md}");
        let text = steps_text(&c);
        assert_eq!(text.len(), 3);
        assert!(text[2].contains("bisect") && text[2].contains("unstable"));
    }
}
