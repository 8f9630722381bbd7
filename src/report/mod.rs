//! Rendering of run results: `summary.json`, `summary.md` and `report.html`
//! (with hand-written SVG plots). This module only renders the data handed
//! to it; `crate::load` measures.
//!
//! # `summary.json`, schema 1
//!
//! A JSON object ([`Summary`]); times are milliseconds (`*_ms`) or seconds
//! (`*_s`), rates per second. New fields may be added within schema 1;
//! renaming or removing one bumps `schema`.
//!
//! | field | type | meaning |
//! |---|---|---|
//! | `schema` | int | `1` |
//! | `run_id` | string | the report folder name, `<plan>-<unix time>` |
//! | `plan`, `plan_file` | string | plan name and file |
//! | `target`, `embedded_target` | string, bool | MCP URL; whether it was the embedded server |
//! | `model` | string | `closed` (Goose users), `open` (arrival rate), `capacity`, `merged` |
//! | `started_unix`, `duration_s` | number | start (Unix s) and length |
//! | `ended_by`, `end_note` | string, string? | `duration`, `max_requests`, `target_unreachable`, `target_died`, `interrupted`, `error`; why |
//! | `round_trips` | object | `total`, `success`, `expected_rejection`, `unexpected`, `skipped` |
//! | `requests`, `rps`, `requests_per_s` | number | HTTP requests; round trips/s; requests/s |
//! | `error_rate`, `error_rate_pct` | number | `unexpected / total`, as a fraction and in percent |
//! | `errors` | object | unexpected outcomes by class: `state_rejected`, `state_accepted`, `content_accepted`, `capability_error`, `protocol_violation`, `server_error`, `http_error`, `timeout`, `transport` |
//! | `error_samples` | string[] | first messages |
//! | `legs` | object | per leg name (`tools/call #1`, `tools/call #2 retry`, `flow page GET`, …): latency stats (full body time) |
//! | `e2e` | object | latency stats of whole round trips (open model: from the intended send time) |
//! | `scenarios` | object | per scenario: `kind`, `tool`, `weight`, `outcomes`, `errors`, `e2e` |
//! | `server_state` | object | per leg: the target's `Server-Timing: state` durations (only nonzero ones) |
//! | `spectrum` | object | per leg and `e2e`: `[[percentile, ms], …]` |
//! | `timeline` | object[] | per interval: `t_s`, `rps`, `requests_per_s`, `errors`, `p50_ms`, `p99_ms` |
//! | `thresholds` | object[] | `expr`, `actual` (ms, fraction or per second; null = nothing measured), `passed` |
//! | `passed` | bool | every threshold held and the run ended by duration or cap |
//! | `capacity` | object? | `slo`, `steps[]` (`offered_rps`, `achieved_rps`, `p50_ms`, `p99_ms`, `error_rate`, `within_slo`, `target_cpu_us_per_rt`), `knee_rps`, `target_cpu_us_per_rt`, `target_rate`, `instances_needed` |
//! | `generator_cpu`, `target_cpu` | object? | `cpu_s`, `us_per_request`, `us_per_round_trip` |
//! | `files` | object | report files by role |
//!
//! Latency stats objects hold `count`, `min_ms`, `mean_ms`, `p50_ms`,
//! `p90_ms`, `p99_ms`, `p999_ms`, `p9999_ms`, `max_ms`.

pub mod html;
pub mod markdown;
pub mod prometheus;
pub mod summary;
pub mod svg;

pub use summary::{
    CapacityStep, CapacitySummary, CpuUsage, LatencyStats, OutcomeCounts, SCHEMA_VERSION,
    ScenarioSummary, Summary, ThresholdResult, TimelinePoint,
};

use std::path::Path;

/// Writes `summary.json`, `summary.md`, `report.html` and `metrics.prom`
/// into `dir`.
pub fn write_all(dir: &Path, summary: &Summary) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_string_pretty(summary).map_err(std::io::Error::other)?;
    std::fs::write(dir.join("summary.json"), json + "\n")?;
    std::fs::write(dir.join("summary.md"), markdown::render(summary))?;
    std::fs::write(dir.join("report.html"), html::render(summary))?;
    std::fs::write(dir.join("metrics.prom"), prometheus::render(summary))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_json_round_trips_with_schema() {
        let s = Summary {
            schema: SCHEMA_VERSION,
            run_id: "r".into(),
            ..Default::default()
        };
        let dir = tempfile::tempdir().unwrap();
        write_all(dir.path(), &s).unwrap();
        let text = std::fs::read_to_string(dir.path().join("summary.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["schema"], 1);
        let back: Summary = serde_json::from_str(&text).unwrap();
        assert_eq!(back, s);
        assert!(dir.path().join("report.html").exists());
        assert!(dir.path().join("summary.md").exists());
        assert!(dir.path().join("metrics.prom").exists());
    }
}
