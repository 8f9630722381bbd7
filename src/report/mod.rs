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
//! | `started_unix`, `duration_s` | number | start (Unix s) and the measured window's length |
//! | `window` | object | `from_unix`, `to_unix` (the measured window), `lead_s` (launch + warm-up before it), `warmup_s`, `before_round_trips`, `after_round_trips` (started outside it: left out of every other figure) |
//! | `ended_by`, `end_note` | string, string? | `duration`, `max_requests`, `target_unreachable`, `target_died`, `interrupted`, `error`; why |
//! | `round_trips` | object | `total`, `success`, `expected_rejection`, `unexpected`, `skipped` |
//! | `requests`, `rps`, `requests_per_s` | number | HTTP requests; round trips/s; requests/s |
//! | `error_rate`, `error_rate_pct` | number | `unexpected / total`, as a fraction and in percent |
//! | `errors` | object | unexpected outcomes by class: `state_rejected`, `state_accepted`, `content_accepted`, `capability_error`, `protocol_violation`, `server_error`, `http_error`, `timeout`, `transport` |
//! | `error_samples` | string[] | first messages |
//! | `error_groups` | object[] | `message`, `count`: identical messages grouped (up to 20 distinct) |
//! | `status_codes` | object | per leg: HTTP status → count (`none`: no response) |
//! | `instances` | object | who answered: `answered_by[]` (`instance`: the `elicitkit-instance` header, else the peer `IP:PORT`; `requests`, `errors`, `latency`, `legs` per leg name: `requests`, `errors`, `latency`), `unattributed_requests` (no reply, or 2025-11-25 session legs), `retries`, `cross_instance_retries` (a retry answered by another instance than the call that issued its state), `retries_unattributed`, `targets` (several `--target` URLs) |
//! | `settings` | object | the run's settings by name (model, shape, duration, warm-up, timeout, …) |
//! | `legs` | object | per leg name (`tools/call #1`, `tools/call #2 retry`, `flow page GET`, …): latency stats (full body time) |
//! | `e2e` | object | latency stats of whole round trips (open model: from the intended send time) |
//! | `scenarios` | object | per scenario: `kind`, `tool`, `weight`, `outcomes`, `errors`, `e2e` |
//! | `phases` | object | per leg, per phase (`connect`, `tls`, `headers`, `first_event`, `body`): latency stats from the request's start (connect and TLS only of legs that opened their connection; `reused`: the count of legs on a kept-alive one); absent when no leg recorded any |
//! | `server_state` | object | per leg: the target's `Server-Timing: state` durations (only nonzero ones) |
//! | `spectrum` | object | per leg and `e2e`: `[[percentile, ms], …]` |
//! | `timeline` | object[] | per interval: `t_s`, `rps` (round trips finished per second), `started_per_s` (begun: the load offered), `requests_per_s`, `errors`, `p50_ms`, `p99_ms`, `in_flight_max`, `errors_by_kind`, `legs` and `scenarios` (each `count`, `p50_ms`, `p99_ms`) |
//! | `thresholds` | object[] | `expr`, `actual` (ms, fraction or per second; null = nothing measured), `passed`, `limit` (`metric`, `selector`, `percentile`, `value`, `unit`: where charts draw it) |
//! | `passed` | bool | every threshold held and the run ended by duration or cap |
//! | `capacity` | object? | `slo`, `steps[]` (`offered_rps`, `achieved_rps`, `p50_ms`, `p99_ms`, `error_rate` (the worst sample's), `within_slo`, `target_cpu_us_per_rt`, `kind` (`coarse`/`bisect`), `samples`, `stable`, `verdict` (`within`/`breach`/`unstable`/`stopped`), `sample_p99_ms[]`, `store_cmds_per_rt`), `knee_rps`, `knee_offered_rps`, `first_bad_rps`, `knee_status` (`bracketed`/`below_start`/`not_reached`/`stopped`), `target_cpu_us_per_rt`, `store`, `store_cmds_per_rt`, `instances`, `target_rate`, `instances_needed` (if scaling were linear: a lower bound), `worst_case_s`, `notes[]`, `host` (`cores`, `local_targets[]`: target processes found on the generator's host) |
//! | `generator_cpu`, `target_cpu` | object? | `cpu_s`, `us_per_request`, `us_per_round_trip` |
//! | `files` | object | report files by role |
//! | `health` | object? | when the target's PID was known (embedded server, `--target-pid`, a 127.0.0.1 listener): `pid`, `source`, `started_unix`, `samples[]` (`t_s` since sampling began, `rss_bytes`, `fds`, `threads`; one per interval from just before the load), `window_from_s`, `window_to_s` (the measured window), `load_end_s`; with `--soak`, `soak` (`steady_s`, `cool_down_s`, `min_r2`, `passed`, `trends[]`: `metric` (`rss`, `fds`), `unit` (`MiB`, `descriptors`), `baseline`, `steady_end`, `after`, `slope_per_min`, `r2` (null: never moved), `samples`, `growth`, `limit_per_min`, `floor`, `retained_pct`, `verdict` (`flat`, `noisy`, `returns`, `leaks`: fails the run)) |
//! | `baseline` | object? | with `--baseline`: `file`, `run_id`, `tolerance_pct`, `rps_before`, `rps_now`, `rps_delta_pct`, `rps_regressed`, `legs[]` (`leg`, `p50_ms_before`, `p50_ms_now`, `p99_ms_before`, `p99_ms_now`, `p50_delta_pct`, `p99_delta_pct`, `regressed`), `passed` |
//!
//! Latency stats objects hold `count`, `min_ms`, `mean_ms`, `p50_ms`,
//! `p90_ms`, `p99_ms`, `p999_ms`, `p9999_ms`, `max_ms`.

pub mod capacity;
pub mod format;
pub mod health;
pub mod html;
pub mod instances;
pub mod markdown;
pub mod phases;
pub mod prometheus;
pub mod summary;
pub mod svg;

pub use summary::{
    BaselineComparison, BaselineDelta, CapacityStep, CapacitySummary, CpuUsage, Delivery,
    ErrorGroup, FrozenTime, GeneratorHealth, HealthSample, HealthSummary, HostShare,
    InstanceLegSummary, InstanceSummary, InstancesSummary, LatencyStats, OutcomeCounts,
    PointLatency, SCHEMA_VERSION, ScenarioSummary, ServiceGap, SoakSummary, Summary,
    ThresholdLimit, ThresholdResult, TimelinePoint, Trend, WindowSummary, add_error_sample,
    group_samples,
};

use std::path::Path;

/// The baseline comparison as text rows, shared by the terminal, Markdown
/// and HTML: a heading line, then `[leg, p50 change, p99 change, verdict]`
/// per leg (the first two rows are round trips/s and the error rate).
pub fn baseline_rows(c: &BaselineComparison) -> (String, Vec<[String; 4]>) {
    let head = if c.mismatches.is_empty() {
        let noise = if c.noise.is_empty() {
            String::new()
        } else {
            format!("; {}", c.noise)
        };
        format!(
            "baseline {} (run {}), tolerance {} %{noise}",
            c.file, c.run_id, c.tolerance_pct
        )
    } else {
        format!(
            "baseline {} (run {}) is of another setup and NOT COMPARED: {}",
            c.file,
            c.run_id,
            c.mismatches.join("; ")
        )
    };
    let detects = |p: Option<f64>| {
        p.map_or_else(
            || "noise unknown".to_owned(),
            |p| format!("detects {p:.0} %"),
        )
    };
    let change =
        |b: Option<f64>, n: Option<f64>, d: Option<f64>, det: Option<f64>, unit: &str| match (b, n)
        {
            (Some(b), Some(n)) if d.is_some() => format!(
                "{b:.3} → {n:.3}{unit} ({:+.1} %, {})",
                d.unwrap_or(0.0),
                detects(det)
            ),
            (Some(b), Some(n)) => format!("{b:.3} / {n:.3}{unit}"),
            (None, Some(n)) => format!("new: {n:.3}{unit}"),
            (Some(b), None) => format!("gone (was {b:.3}{unit})"),
            (None, None) => "-".into(),
        };
    let word = |regressed: bool| if regressed { "REGRESSED" } else { "ok" }.to_owned();
    let mut rows = vec![[
        "round trips/s".to_owned(),
        format!(
            "{:.1} → {:.1} ({:+.1} %, {})",
            c.rps_before,
            c.rps_now,
            c.rps_delta_pct,
            detects(c.rps_detectable_pct)
        ),
        String::new(),
        word(c.rps_regressed),
    ]];
    if let (Some(b), Some(n)) = (c.target_cpu_us_before, c.target_cpu_us_now) {
        rows.push([
            "target CPU/round trip".to_owned(),
            format!(
                "{b:.1} → {n:.1} µs ({:+.1} %, {})",
                c.target_cpu_delta_pct.unwrap_or(0.0),
                detects(c.target_cpu_detectable_pct)
            ),
            String::new(),
            word(c.target_cpu_regressed),
        ]);
    }
    if let (Some(b), Some(n)) = (c.host_other_cores_before, c.host_other_cores_now) {
        rows.push([
            "host, other work".to_owned(),
            format!("{b:.2} → {n:.2} cores"),
            String::new(),
            if c.host_busier { "BUSIER" } else { "ok" }.to_owned(),
        ]);
    }
    rows.push([
        "error rate".to_owned(),
        format!(
            "{:.3} % → {:.3} %",
            c.error_rate_before * 100.0,
            c.error_rate_now * 100.0
        ),
        String::new(),
        word(c.error_rate_regressed),
    ]);
    for l in &c.legs {
        let judged = l.p50_delta_pct.is_some();
        rows.push([
            l.leg.clone(),
            format!(
                "p50 {}",
                change(
                    l.p50_ms_before,
                    l.p50_ms_now,
                    l.p50_delta_pct,
                    l.p50_detectable_pct,
                    " ms"
                )
            ),
            format!(
                "p99 {}",
                change(
                    l.p99_ms_before,
                    l.p99_ms_now,
                    l.p99_delta_pct,
                    l.p99_detectable_pct,
                    " ms"
                )
            ),
            match (judged, l.regressed, l.resolvable) {
                (_, true, _) => "REGRESSED",
                (true, false, true) => "ok",
                (true, false, false) => "too noisy to judge",
                (false, false, _) => "not compared",
            }
            .to_owned(),
        ]);
    }
    (head, rows)
}

/// A service gap in words, shared by the verdict, the terminal, Markdown
/// and HTML.
pub fn gap_text(g: &ServiceGap) -> String {
    format!(
        "service gap: no round trip was answered for {:.1} s while some were in flight \
         (from {:.1} s to {:.1} s of the measured window)",
        g.length_s,
        g.from_s,
        g.from_s + g.length_s
    )
}

/// What the measured window left out, in words, shared by the terminal,
/// Markdown and HTML (`None` when nothing was: no launch, no warm-up, no
/// round trip outside the window).
pub fn window_text(s: &Summary) -> Option<String> {
    let w = &s.window;
    if w.lead_s <= 0.0 && w.before_round_trips == 0 && w.after_round_trips == 0 {
        return None;
    }
    let launch = (w.lead_s - w.warmup_s).max(0.0);
    let mut before = vec![format!("warm-up {:.1} s", w.warmup_s)];
    if launch > 0.0 {
        before.push(format!("users' launch {launch:.1} s"));
    }
    Some(format!(
        "measured window {:.1} s; left out of every figure: {} before it ({} round trips), {} round trips started after it",
        s.duration_s,
        before.join(" + "),
        w.before_round_trips,
        w.after_round_trips
    ))
}

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

/// The first unused report folder for run `id` under `root`: `root/id`,
/// else `root/id-2`, `root/id-3`, … (nothing is created). Returns the path
/// and its name. Earlier runs are never overwritten.
pub fn fresh_run_dir(root: &std::path::Path, id: &str) -> (std::path::PathBuf, String) {
    let mut n = 1;
    loop {
        let name = if n == 1 {
            id.to_owned()
        } else {
            format!("{id}-{n}")
        };
        let dir = root.join(&name);
        if !dir.exists() {
            return (dir, name);
        }
        n += 1;
    }
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
