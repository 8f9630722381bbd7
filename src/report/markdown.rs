//! `summary.md`: the run summary as Markdown tables.

use super::format::{md_cell, ms};
use super::summary::{LatencyStats, Summary};
use std::fmt::Write as _;

fn stats_row(name: &str, s: &LatencyStats) -> String {
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        md_cell(name),
        s.count,
        ms(s.p50_ms),
        ms(s.p90_ms),
        ms(s.p95_ms),
        ms(s.p99_ms),
        ms(s.p999_ms),
        ms(s.max_ms),
        ms(s.mean_ms)
    )
}

const STATS_HEAD: &str = "| | count | p50 ms | p90 ms | p95 ms | p99 ms | p99.9 ms | max ms | mean ms |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";

/// The "Instances" section: one line for one instance, else a table.
fn instances_md(o: &mut String, s: &Summary) {
    use super::instances::{INSTANCE_COLUMNS, InstancesView, instances_view};
    match instances_view(s) {
        InstancesView::None => {}
        InstancesView::One(line) => {
            let _ = write!(o, "\n## Instances\n\n{line}\n");
        }
        InstancesView::Table(head, rows) => {
            let _ = write!(
                o,
                "\n## Instances\n\n{head}\n\n| {} |\n|---|---:|---:|---:|---:|---:|---|\n",
                INSTANCE_COLUMNS.join(" | ")
            );
            for r in rows {
                let cells: Vec<String> = r.iter().map(|c| md_cell(c)).collect();
                let _ = writeln!(o, "| {} |", cells.join(" | "));
            }
        }
    }
}

/// Renders `summary.md`.
pub fn render(s: &Summary) -> String {
    let mut o = String::new();
    let verdict = s.verdict_word();
    let _ = writeln!(o, "# elicitkit load: {} ({verdict})\n", s.plan);
    let _ = writeln!(o, "- run: `{}`, model: {}", s.run_id, s.model);
    let _ = writeln!(
        o,
        "- target: {}{}",
        s.target,
        if s.embedded_target {
            " (embedded reference server)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        o,
        "- duration: {:.1} s, ended by: {}{}",
        s.duration_s,
        s.ended_by,
        s.end_note
            .as_ref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default()
    );
    if let Some(w) = super::window_text(s) {
        let _ = writeln!(o, "- {w}");
    }
    if let Some(p) = s.settings.get("principals") {
        let _ = writeln!(o, "- principals: {p}");
    }
    let r = &s.round_trips;
    let _ = writeln!(
        o,
        "- round trips: {} ({:.1}/s): {} success, {} expected rejections, {} unexpected; {} attempts skipped (not round trips)",
        r.total, s.rps, r.success, r.expected_rejection, r.unexpected, r.skipped
    );
    let _ = writeln!(
        o,
        "- requests: {} ({:.1}/s), error rate {:.4}%",
        s.requests,
        s.requests_per_s,
        s.error_rate * 100.0
    );
    if let Some(d) = &s.delivery {
        let _ = writeln!(
            o,
            "- offered {:.1} round trips/s, achieved {:.1}/s ({:.1}% of the plan){}",
            d.offered_rps,
            d.achieved_rps,
            d.delivered_pct,
            d.limited_by
                .as_deref()
                .map_or(String::new(), |by| format!(": short, limited by the {by}"))
        );
    }
    if let Some(f) = s.frozen.as_ref().filter(|f| f.spells > 0) {
        let _ = writeln!(
            o,
            "- frozen {:.1}% of the window: {} spells of up to {:.2} s with round trips waiting \
             and none answered",
            f.share_pct, f.spells, f.longest_s
        );
    }
    if let Some(c) = &s.generator_cpu {
        let _ = writeln!(
            o,
            "- generator CPU: {:.2} s ({} µs/request)",
            c.cpu_s,
            c.us_per_request.map_or("-".into(), |v| format!("{v:.1}"))
        );
    }
    if let Some(c) = &s.target_cpu {
        let _ = writeln!(
            o,
            "- target CPU: {:.2} s ({} µs/round trip)",
            c.cpu_s,
            c.us_per_round_trip
                .map_or("-".into(), |v| format!("{v:.1}"))
        );
    }
    if !s.failures.is_empty() {
        o.push_str("\n## Why it failed\n\n");
        for f in &s.failures {
            let _ = writeln!(o, "- {f}");
        }
    }
    if let Some(g) = s
        .generator_health
        .as_ref()
        .filter(|g| !g.problems.is_empty())
    {
        o.push_str("\n## Why it is inconclusive\n\n");
        for p in &g.problems {
            let _ = writeln!(o, "- {p}");
        }
    }
    if !s.service_gaps.is_empty() {
        o.push_str("\n## Service gaps\n\n");
        for g in &s.service_gaps {
            let _ = writeln!(o, "- {}", super::gap_text(g));
        }
    }
    if let Some(c) = &s.baseline {
        let (head, rows) = super::baseline_rows(c);
        let _ = write!(
            o,
            "\n## Baseline\n\n{head}\n\n| leg | p50 | p99 | result |\n|---|---|---|---|\n"
        );
        for r in rows {
            let _ = writeln!(o, "| `{}` | {} | {} | {} |", r[0], r[1], r[2], r[3]);
        }
    }
    if let Some((head, rows)) = super::health::soak_rows(s) {
        let _ = write!(
            o,
            "\n## Soak\n\n{head}\n\n| quantity | before → steady end → after | slope | verdict |\n|---|---|---|---|\n"
        );
        for r in rows {
            let _ = writeln!(o, "| {} | {} | {} | {} |", r[0], r[1], r[2], r[3]);
        }
    }
    if let Some(h) = &s.health
        && let (Some(first), Some(last)) = (h.samples.first(), h.samples.last())
    {
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        let _ = write!(
            o,
            "\n## Target health\n\nProcess {} ({}), {} samples: RSS {:.1} → {:.1} MiB, open \
             descriptors {} → {}, threads {} → {}.\n",
            h.pid,
            h.source,
            h.samples.len(),
            mib(first.rss_bytes),
            mib(last.rss_bytes),
            first.fds,
            last.fds,
            first.threads,
            last.threads
        );
    }
    if !s.diagnoses.is_empty() {
        o.push_str("\n## Diagnoses\n\n");
        for d in &s.diagnoses {
            let _ = writeln!(o, "- {d}");
        }
    }
    if !s.thresholds.is_empty() {
        o.push_str("\n## Thresholds\n\n| threshold | actual | result |\n|---|---:|---|\n");
        for t in &s.thresholds {
            let actual = if t.actual_text.is_empty() {
                t.actual.map_or("n/a".into(), |v| format!("{v:.4}"))
            } else {
                t.actual_text.clone()
            };
            let _ = writeln!(
                o,
                "| `{}`{} | {} | {} |",
                t.expr,
                if t.default { " (default)" } else { "" },
                actual,
                if t.passed { "pass" } else { "**FAIL**" }
            );
        }
    }
    o.push_str("\n## Latency per leg\n\n");
    o.push_str(STATS_HEAD);
    for (name, st) in &s.legs {
        o.push_str(&stats_row(name, st));
    }
    o.push_str(&stats_row("end to end", &s.e2e));
    if let Some(c) = &s.e2e_corrected {
        o.push_str(&stats_row("end to end, corrected", c));
        let _ = writeln!(
            o,
            "\n*Corrected*: closed model, with the {} round trips stalled users would have \
             started at their own pace backfilled (coordinated omission); thresholds on `e2e` \
             judge this row.",
            s.backfilled
        );
    }
    let phases = super::phases::rows(s);
    if !phases.is_empty() {
        let h = super::phases::HEADS;
        let _ = write!(
            o,
            "\n## Where the time goes\n\n| leg | {} | {} | {} | {} | {} | connections |\n\
             |---|---:|---:|---:|---:|---:|---|\n",
            h[0], h[1], h[2], h[3], h[4]
        );
        for r in &phases {
            let c = &r.cells;
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {} |",
                super::format::md_cell(&r.leg),
                c[0],
                c[1],
                c[2],
                c[3],
                c[4],
                r.connections
            );
        }
        let _ = writeln!(o, "\n{}", super::phases::NOTE);
    }
    instances_md(&mut o, s);
    o.push_str("\n## Scenarios\n\n| scenario | kind | round trips | success | expected rejections | unexpected | skipped | p50 ms | p95 ms | p99 ms |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (name, sc) in &s.scenarios {
        let c = &sc.outcomes;
        let _ = writeln!(
            o,
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            sc.kind,
            c.total,
            c.success,
            c.expected_rejection,
            c.unexpected,
            c.skipped,
            ms(sc.e2e.p50_ms),
            ms(sc.e2e.p95_ms),
            ms(sc.e2e.p99_ms)
        );
    }
    if !s.server_state.is_empty() {
        o.push_str("\n## Target `Server-Timing: state` (requestState verification)\n\n");
        o.push_str(STATS_HEAD);
        for (name, st) in &s.server_state {
            o.push_str(&stats_row(name, st));
        }
    }
    if !s.errors.is_empty() {
        o.push_str("\n## Errors\n\n| class | count |\n|---|---:|\n");
        for (class, n) in &s.errors {
            let _ = writeln!(o, "| {class} | {n} |");
        }
        if !s.error_samples.is_empty() {
            o.push_str("\nFirst messages:\n\n");
            for m in &s.error_samples {
                let _ = writeln!(o, "- {}", m.replace('\n', " "));
            }
        }
    }
    if let Some(c) = &s.capacity {
        o.push_str("\n## Capacity\n\n");
        o.push_str(&super::capacity::steps_markdown(c));
    }
    if !s.files.is_empty() {
        o.push_str("\n## Files\n\n");
        for (role, f) in &s.files {
            let _ = writeln!(o, "- {role}: `{f}`");
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::summary::ThresholdResult;

    #[test]
    fn renders_verdict_thresholds_and_legs() {
        let mut s = Summary {
            plan: "smoke".into(),
            passed: false,
            ..Default::default()
        };
        s.legs.insert(
            "tools/call #1".into(),
            LatencyStats {
                count: 3,
                p99_ms: 1.25,
                ..Default::default()
            },
        );
        s.thresholds.push(ThresholdResult {
            expr: "p99(first) < 1ms".into(),
            actual: Some(1.25),
            passed: false,
            ..Default::default()
        });
        let md = render(&s);
        assert!(md.contains("(FAILED)"));
        assert!(md.contains("| tools/call #1 | 3 |"));
        assert!(md.contains("**FAIL**"));
    }
}
