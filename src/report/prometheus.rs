//! `metrics.prom`: a run's summary in the Prometheus text exposition format
//! (version 0.0.4), for node_exporter's textfile collector, a Pushgateway
//! (`curl --data-binary @metrics.prom …`) or any CI dashboard that reads it.
//!
//! Latencies are seconds (Prometheus' base unit) as `summary` metrics with
//! `quantile` labels; the error rate is in percent, as everywhere else in
//! elicitkit. Every series carries `run_id` and `plan`.

use super::{LatencyStats, Summary};
use std::fmt::Write as _;

/// Renders `summary` as Prometheus text.
pub fn render(summary: &Summary) -> String {
    let mut out = String::new();
    let base = format!(
        "run_id=\"{}\",plan=\"{}\"",
        escape(&summary.run_id),
        escape(&summary.plan)
    );
    let mut family = |name: &str, kind: &str, help: &str, lines: Vec<Line>| {
        let _ = writeln!(out, "# HELP elicitkit_{name} {help}");
        let _ = writeln!(out, "# TYPE elicitkit_{name} {kind}");
        for (suffix, labels, value) in lines {
            let labels = if labels.is_empty() {
                base.clone()
            } else {
                format!("{base},{labels}")
            };
            let _ = writeln!(
                out,
                "elicitkit_{name}{suffix}{{{labels}}} {}",
                number(value)
            );
        }
    };
    let one = |v: f64| vec![("", String::new(), v)];
    let rt = &summary.round_trips;
    family(
        "round_trips",
        "gauge",
        "Round trips of the run, by outcome (skipped attempts are not round trips).",
        [
            ("success", rt.success),
            ("expected_rejection", rt.expected_rejection),
            ("unexpected", rt.unexpected),
            ("skipped", rt.skipped),
        ]
        .iter()
        .map(|(o, n)| ("", format!("outcome=\"{o}\""), *n as f64))
        .collect(),
    );
    family(
        "requests",
        "gauge",
        "HTTP requests sent.",
        one(summary.requests as f64),
    );
    family(
        "round_trips_per_second",
        "gauge",
        "Round trips per second over the measured window.",
        one(summary.rps),
    );
    family(
        "requests_per_second",
        "gauge",
        "HTTP requests per second over the measured window.",
        one(summary.requests_per_s),
    );
    family(
        "error_rate_percent",
        "gauge",
        "Unexpected outcomes per 100 round trips.",
        one(summary.error_rate * 100.0),
    );
    family(
        "errors",
        "gauge",
        "Unexpected outcomes by class.",
        summary
            .errors
            .iter()
            .map(|(class, n)| ("", format!("class=\"{}\"", escape(class)), *n as f64))
            .collect(),
    );
    family(
        "duration_seconds",
        "gauge",
        "Length of the measured window.",
        one(summary.duration_s),
    );
    family(
        "leg_latency_seconds",
        "summary",
        "Latency of each HTTP exchange, by leg (full body time).",
        summary
            .legs
            .iter()
            .flat_map(|(leg, s)| quantiles(&format!("leg=\"{}\"", escape(leg)), s))
            .collect(),
    );
    family(
        "leg_phase_latency_seconds",
        "summary",
        "Where each leg's time went, by phase, from the request's start: connect and tls (legs \
         that opened a connection), headers, first_event (a stream's first SSE event), body.",
        summary
            .phases
            .iter()
            .flat_map(|(leg, phases)| {
                phases
                    .iter()
                    .filter(|(p, _)| p.as_str() != "reused")
                    .flat_map(move |(p, s)| {
                        quantiles(&format!("leg=\"{}\",phase=\"{p}\"", escape(leg)), s)
                    })
            })
            .collect(),
    );
    family(
        "round_trip_latency_seconds",
        "summary",
        "End-to-end latency of whole round trips (open model: from the intended start).",
        quantiles("", &summary.e2e),
    );
    family(
        "scenario_latency_seconds",
        "summary",
        "End-to-end latency by scenario.",
        summary
            .scenarios
            .iter()
            .flat_map(|(name, s)| quantiles(&format!("scenario=\"{}\"", escape(name)), &s.e2e))
            .collect(),
    );
    family(
        "threshold_passed",
        "gauge",
        "1 when the threshold held, 0 when it failed.",
        summary
            .thresholds
            .iter()
            .map(|t| {
                (
                    "",
                    format!("threshold=\"{}\"", escape(&t.expr)),
                    if t.passed { 1.0 } else { 0.0 },
                )
            })
            .collect(),
    );
    let inst = &summary.instances;
    if !inst.answered_by.is_empty() {
        let label = |name: &str| format!("instance=\"{}\"", escape(name));
        family(
            "instance_requests",
            "gauge",
            "HTTP requests each instance answered (elicitkit-instance header, else IP:PORT).",
            inst.answered_by
                .iter()
                .map(|i| ("", label(&i.instance), i.requests as f64))
                .collect(),
        );
        family(
            "instance_errors",
            "gauge",
            "Failed requests by the instance that answered them.",
            inst.answered_by
                .iter()
                .map(|i| ("", label(&i.instance), i.errors as f64))
                .collect(),
        );
        family(
            "instance_latency_seconds",
            "summary",
            "Latency of the legs each instance answered (full body time).",
            inst.answered_by
                .iter()
                .flat_map(|i| quantiles(&label(&i.instance), &i.latency))
                .collect(),
        );
        family(
            "unattributed_requests",
            "gauge",
            "Requests no instance is known for (no reply, or untracked).",
            one(inst.unattributed_requests as f64),
        );
        let same = inst.retries.saturating_sub(inst.cross_instance_retries);
        family(
            "state_retries",
            "gauge",
            "State retries by where they landed: another instance than the issuer (crossed), the issuer (same), or not known (unjudged).",
            [
                ("crossed", inst.cross_instance_retries),
                ("same", same),
                ("unjudged", inst.retries_unattributed),
            ]
            .iter()
            .map(|(v, n)| ("", format!("landed=\"{v}\""), *n as f64))
            .collect(),
        );
    }
    if let Some(cpu) = &summary.generator_cpu {
        family(
            "generator_cpu_seconds",
            "gauge",
            "CPU time (user + system) the load generator spent.",
            one(cpu.cpu_s),
        );
    }
    if let Some(h) = &summary.health
        && let Some(last) = h.samples.last()
    {
        let peak =
            |f: fn(&super::HealthSample) -> u64| h.samples.iter().map(f).max().unwrap_or(0) as f64;
        for (name, help, now, max) in [
            (
                "target_rss_bytes",
                "The target's resident memory: at the end of the run, and the most seen.",
                last.rss_bytes as f64,
                peak(|p| p.rss_bytes),
            ),
            (
                "target_open_fds",
                "The target's open descriptors: at the end of the run, and the most seen.",
                last.fds as f64,
                peak(|p| p.fds),
            ),
            (
                "target_threads",
                "The target's threads: at the end of the run, and the most seen.",
                last.threads as f64,
                peak(|p| p.threads),
            ),
        ] {
            family(
                name,
                "gauge",
                help,
                vec![
                    ("", "at=\"end\"".into(), now),
                    ("", "at=\"peak\"".into(), max),
                ],
            );
        }
        if let Some(soak) = &h.soak {
            let per = |f: fn(&super::Trend) -> f64| -> Vec<Line> {
                soak.trends
                    .iter()
                    .map(|t| ("", format!("metric=\"{}\"", escape(&t.metric)), f(t)))
                    .collect()
            };
            family(
                "soak_slope_per_minute",
                "gauge",
                "Least-squares growth over the soak's steady phase, per minute (rss in MiB, fds in descriptors).",
                per(|t| t.slope_per_min),
            );
            family(
                "soak_r2",
                "gauge",
                "R² of that fit (0 when the value never moved).",
                per(|t| t.r2.unwrap_or(0.0)),
            );
            family(
                "soak_leaks",
                "gauge",
                "1 when the quantity leaks (grew beyond its limit with a good fit and stayed).",
                per(|t| if t.verdict == "leaks" { 1.0 } else { 0.0 }),
            );
        }
    }
    family(
        "passed",
        "gauge",
        "1 when the run passed (every threshold held and it ended by duration or cap).",
        one(if summary.passed { 1.0 } else { 0.0 }),
    );
    out
}

/// One sample: name suffix (`_sum`, `_count` or none), labels, value.
type Line = (&'static str, String, f64);

/// The lines of one latency series of a `summary` family: quantiles (the
/// maximum as quantile 1), `_sum` and `_count`.
fn quantiles(labels: &str, s: &LatencyStats) -> Vec<Line> {
    let sep = if labels.is_empty() { "" } else { "," };
    let mut v: Vec<Line> = [
        ("0.5", s.p50_ms),
        ("0.9", s.p90_ms),
        ("0.99", s.p99_ms),
        ("0.999", s.p999_ms),
        ("1", s.max_ms),
    ]
    .iter()
    .map(|(q, ms)| ("", format!("{labels}{sep}quantile=\"{q}\""), ms / 1000.0))
    .collect();
    v.push((
        "_sum",
        labels.to_owned(),
        s.mean_ms * s.count as f64 / 1000.0,
    ));
    v.push(("_count", labels.to_owned(), s.count as f64));
    v
}

/// Escapes a label value (backslash, double quote, newline).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A sample value: integers without a fraction, NaN/inf spelled the
/// Prometheus way.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{OutcomeCounts, ThresholdResult};

    /// Checks the exposition format line by line: every sample belongs to
    /// a family announced by `# TYPE`, names and labels are well formed and
    /// values parse.
    fn check_format(text: &str) -> Vec<(String, String, f64)> {
        let name_ok = |n: &str| {
            !n.is_empty()
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
                && !n.starts_with(|c: char| c.is_ascii_digit())
        };
        let mut families = Vec::new();
        let mut samples = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
                assert!(
                    name_ok(name) && ["gauge", "summary"].contains(&kind),
                    "{line}"
                );
                families.push(name.to_owned());
                continue;
            }
            if line.starts_with("# HELP ") {
                continue;
            }
            let (series, value) = line.rsplit_once(' ').expect("series value");
            let (name, labels) = series.split_once('{').expect("labels");
            assert!(name_ok(name), "{line}");
            let family = families.last().expect("a TYPE before samples");
            assert!(
                name == family
                    || name == format!("{family}_sum")
                    || name == format!("{family}_count"),
                "{name} outside {family}"
            );
            let labels = labels.strip_suffix('}').expect("closing brace");
            // Label values: quoted, escapes only \\ \" \n.
            let mut chars = labels.chars().peekable();
            let mut in_value = false;
            while let Some(c) = chars.next() {
                match (in_value, c) {
                    (false, '"') => in_value = true,
                    (true, '\\') => {
                        assert!(matches!(chars.next(), Some('\\' | '"' | 'n')), "{line}")
                    }
                    (true, '"') => in_value = false,
                    (true, '\n') => panic!("raw newline in {line}"),
                    _ => {}
                }
            }
            assert!(!in_value, "unterminated label value: {line}");
            let v: f64 = match value {
                "NaN" => f64::NAN,
                "+Inf" => f64::INFINITY,
                v => v.parse().unwrap_or_else(|_| panic!("value in {line}")),
            };
            samples.push((name.to_owned(), labels.to_owned(), v));
        }
        samples
    }

    /// `s` rendered and format-checked, and a lookup of the value of the
    /// first sample named `name` whose labels contain `has` (panics when
    /// there is none).
    fn rendered(s: &Summary) -> (String, impl Fn(&str, &str) -> f64) {
        let text = render(s);
        let samples = check_format(&text);
        let shown = text.clone();
        let get = move |name: &str, has: &str| {
            samples
                .iter()
                .find(|(n, l, _)| n == name && l.contains(has))
                .unwrap_or_else(|| panic!("{name} {has} in\n{shown}"))
                .2
        };
        (text, get)
    }

    #[test]
    fn summary_renders_as_valid_exposition_text_with_its_numbers() {
        let mut s = Summary {
            run_id: "r\"1".into(),
            plan: "p\\lan\nx".into(),
            requests: 40,
            rps: 12.5,
            error_rate: 0.025,
            passed: false,
            round_trips: OutcomeCounts {
                total: 40,
                success: 39,
                unexpected: 1,
                ..Default::default()
            },
            ..Default::default()
        };
        s.legs.insert(
            "tools/call #2 retry".into(),
            LatencyStats {
                count: 39,
                mean_ms: 2.0,
                p50_ms: 1.5,
                p99_ms: 9.0,
                max_ms: 12.0,
                ..Default::default()
            },
        );
        s.thresholds.push(ThresholdResult {
            expr: "p99(tools/call #2 retry) < 5ms".into(),
            passed: false,
            ..Default::default()
        });
        let (text, get) = rendered(&s);
        assert_eq!(get("elicitkit_error_rate_percent", ""), 2.5);
        assert_eq!(get("elicitkit_round_trips", "outcome=\"unexpected\""), 1.0);
        assert_eq!(
            get("elicitkit_leg_latency_seconds", "quantile=\"0.99\""),
            0.009
        );
        assert_eq!(get("elicitkit_leg_latency_seconds_count", "retry"), 39.0);
        assert!((get("elicitkit_leg_latency_seconds_sum", "retry") - 0.078).abs() < 1e-12);
        assert_eq!(get("elicitkit_threshold_passed", "< 5ms"), 0.0);
        assert_eq!(get("elicitkit_passed", ""), 0.0);
        assert!(text.contains(r#"run_id="r\"1",plan="p\\lan\nx""#), "{text}");
    }

    #[test]
    fn target_health_and_the_soak_render_as_gauges() {
        use crate::report::{HealthSample, HealthSummary, SoakSummary, Trend};
        let sample = |rss_bytes, fds| HealthSample {
            rss_bytes,
            fds,
            threads: 2,
            ..Default::default()
        };
        let s = Summary {
            health: Some(HealthSummary {
                samples: vec![sample(100, 10), sample(300, 12), sample(200, 11)],
                soak: Some(SoakSummary {
                    trends: vec![Trend {
                        metric: "rss".into(),
                        slope_per_min: 2.5,
                        r2: Some(0.9),
                        verdict: "leaks".into(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let (_, get) = rendered(&s);
        assert_eq!(get("elicitkit_target_rss_bytes", "at=\"end\""), 200.0);
        assert_eq!(get("elicitkit_target_rss_bytes", "at=\"peak\""), 300.0);
        assert_eq!(get("elicitkit_target_open_fds", "at=\"peak\""), 12.0);
        assert_eq!(get("elicitkit_target_threads", "at=\"end\""), 2.0);
        assert_eq!(
            get("elicitkit_soak_slope_per_minute", "metric=\"rss\""),
            2.5
        );
        assert_eq!(get("elicitkit_soak_r2", "rss"), 0.9);
        assert_eq!(get("elicitkit_soak_leaks", "rss"), 1.0);
        assert!(!render(&Summary::default()).contains("target_rss"));
    }

    #[test]
    fn instances_render_per_instance_series_and_retry_landings() {
        let mut s = Summary::default();
        assert!(
            !render(&s).contains("instance_requests"),
            "no instances, no series"
        );
        let inst = |name: &str, requests: u64, errors: u64| crate::report::InstanceSummary {
            instance: name.into(),
            requests,
            errors,
            latency: LatencyStats {
                count: requests,
                p99_ms: 7.0,
                ..Default::default()
            },
            legs: Default::default(),
        };
        s.instances.answered_by = vec![inst("10.0.0.1:80", 30, 1), inst("b\"x", 20, 0)];
        s.instances.retries = 10;
        s.instances.cross_instance_retries = 6;
        s.instances.retries_unattributed = 2;
        s.instances.unattributed_requests = 3;
        let (_, get) = rendered(&s);
        assert_eq!(get("elicitkit_instance_requests", "10.0.0.1:80"), 30.0);
        assert_eq!(get("elicitkit_instance_errors", "10.0.0.1:80"), 1.0);
        assert_eq!(
            get("elicitkit_instance_requests", r#"instance="b\"x""#),
            20.0
        );
        assert_eq!(
            get("elicitkit_instance_latency_seconds", "quantile=\"0.99\""),
            0.007
        );
        assert_eq!(get("elicitkit_instance_latency_seconds_count", "b"), 20.0);
        assert_eq!(get("elicitkit_unattributed_requests", ""), 3.0);
        assert_eq!(get("elicitkit_state_retries", "crossed"), 6.0);
        assert_eq!(get("elicitkit_state_retries", "same"), 4.0);
        assert_eq!(get("elicitkit_state_retries", "unjudged"), 2.0);
    }
}
