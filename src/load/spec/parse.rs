//! Plan files → [`Plan`]: the TOML schema (`loadtests/*.toml`), defaults,
//! and validation with errors that name file, line and key ([`PlanError`]).

use super::plan::{
    CapacitySpec, DEFAULT_MAX_REQUESTS, DEFAULT_STALL, DEFAULT_TIMEOUT, LoadShape, Plan,
    ScenarioKind, ScenarioSpec, TargetSpec,
};
use super::principals::{self, Principals};
use super::segment::Segment;
use super::shape::{self, Model, Stage};
use super::threshold::{Threshold, ThresholdError};
use crate::client::Mutation;
use crate::protocol::Generation;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
/// Why a plan cannot be used: file, line and key, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: key `{key}`: {message}")]
pub struct PlanError {
    /// The file.
    pub file: String,
    /// 1-based line (0 when unknown).
    pub line: usize,
    /// Dotted key path (`scenarios.tamper.mutation`), or `-` for the file.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    name: Option<String>,
    description: Option<String>,
    duration: Option<toml::Spanned<String>>,
    warmup: Option<toml::Spanned<String>>,
    max_requests: Option<u64>,
    timeout: Option<toml::Spanned<String>>,
    seed: Option<u64>,
    interval: Option<toml::Spanned<String>>,
    stall: Option<toml::Spanned<String>>,
    default_thresholds: Option<bool>,
    #[serde(default)]
    thresholds: Vec<toml::Spanned<RawThreshold>>,
    #[serde(default)]
    target: RawTarget,
    #[serde(default)]
    load: RawLoad,
    #[serde(default)]
    scenarios: BTreeMap<String, toml::Spanned<RawScenario>>,
    capacity: Option<RawCapacity>,
}

/// A threshold as a plan writes it: the expression (with any modifiers,
/// `"p99(e2e) < 50ms; abort_on_fail"`), or k6's object form.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawThreshold {
    Text(String),
    Table(RawThresholdTable),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawThresholdTable {
    threshold: String,
    #[serde(default)]
    abort_on_fail: bool,
    delay_abort_eval: Option<String>,
}

impl RawThreshold {
    /// The threshold in its one-line form.
    fn text(&self) -> String {
        match self {
            RawThreshold::Text(t) => t.clone(),
            RawThreshold::Table(t) => {
                let mut out = t.threshold.clone();
                if t.abort_on_fail {
                    out.push_str("; abort_on_fail");
                }
                if let Some(d) = &t.delay_abort_eval {
                    out.push_str("; delay_abort_eval=");
                    out.push_str(d);
                }
                out
            }
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTarget {
    url: Option<toml::Spanned<String>>,
    workers: Option<usize>,
    token: Option<String>,
    other_token: Option<String>,
    principals: Option<toml::Spanned<usize>>,
    principal_file: Option<toml::Spanned<String>>,
    cacert: Option<String>,
    insecure: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawLoad {
    users: Option<toml::Spanned<usize>>,
    hatch_rate: Option<f64>,
    rate: Option<toml::Spanned<f64>>,
    ramp: Option<Vec<toml::Spanned<RawStep>>>,
    model: Option<toml::Spanned<String>>,
    stages: Option<toml::Spanned<String>>,
    max_in_flight: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    rate: f64,
    hold: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    kind: Option<String>,
    weight: Option<u32>,
    tool: Option<String>,
    arguments: Option<toml::Value>,
    mutation: Option<String>,
    generation: Option<String>,
    answers: Option<toml::Value>,
    expect_tool_error: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCapacity {
    start_rate: f64,
    step: f64,
    max_rate: f64,
    step_duration: toml::Spanned<String>,
    #[serde(default)]
    slo: Vec<toml::Spanned<String>>,
    target_rate: Option<f64>,
    bisections: Option<u32>,
    resolution_pct: Option<f64>,
    samples: Option<u32>,
    stable_pct: Option<f64>,
    stable_floor: Option<toml::Spanned<String>>,
    host_noise: Option<f64>,
    host_spare: Option<f64>,
}

/// Reads and validates a plan file.
pub fn load_file(path: &Path) -> Result<Plan, PlanError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| PlanError {
        file: file.clone(),
        line: 0,
        key: "-".into(),
        message: format!("cannot read the plan: {e}"),
    })?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plan".into());
    parse_plan(&text, &file, &stem)
}

/// Parses and validates plan text; `file` labels errors, `default_name`
/// names a plan without `name`.
pub fn parse_plan(text: &str, file: &str, default_name: &str) -> Result<Plan, PlanError> {
    let at = |span: Option<std::ops::Range<usize>>, key: &str, message: String| {
        let (line, found) = span.map_or((0, None), |s| locate(text, s.start));
        PlanError {
            file: file.to_owned(),
            line,
            key: if key.is_empty() {
                found.unwrap_or_else(|| "-".into())
            } else {
                key.to_owned()
            },
            message,
        }
    };
    let raw: RawPlan =
        toml::from_str(text).map_err(|e| at(e.span(), "", e.message().trim().to_owned()))?;

    let dur = |v: &Option<toml::Spanned<String>>, key: &str, default: Duration| match v {
        None => Ok(default),
        Some(s) => span_at(s.get_ref(), s.span(), key, &at).and_then(|d| {
            if d.is_zero() {
                Err(at(Some(s.span()), key, "must be greater than zero".into()))
            } else {
                Ok(d)
            }
        }),
    };
    let mut duration = dur(&raw.duration, "duration", Duration::from_secs(10))?;
    let timeout = dur(&raw.timeout, "timeout", DEFAULT_TIMEOUT)?;
    let stall = dur(&raw.stall, "stall", DEFAULT_STALL)?;
    let interval = dur(&raw.interval, "interval", Duration::from_secs(1))?;
    let warmup = match &raw.warmup {
        None => Duration::ZERO,
        Some(s) => span_at(s.get_ref(), s.span(), "warmup", &at)?,
    };

    let thresholds = parse_plan_thresholds(&raw.thresholds, &at)?;

    let url = match &raw.target.url {
        None => None,
        Some(u) if u.get_ref().trim().is_empty() => None,
        Some(u) => {
            let parsed = url::Url::parse(u.get_ref())
                .map_err(|e| at(Some(u.span()), "target.url", format!("not a URL: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(at(
                    Some(u.span()),
                    "target.url",
                    "the URL must be http or https".into(),
                ));
            }
            Some(u.get_ref().clone())
        }
    };
    let t = &raw.target;
    let principals = match (&t.principal_file, &t.principals, &t.token) {
        (Some(f), Some(_), _) | (Some(f), None, Some(_)) => {
            return Err(at(
                Some(f.span()),
                "target.principal_file",
                "give one of `token` (every user is it), `principals = N` or \
                 `principal_file`, not several"
                    .into(),
            ));
        }
        (Some(f), None, None) => {
            // Relative to the plan file, like any path a plan names.
            let p = Path::new(file)
                .parent()
                .unwrap_or(Path::new(""))
                .join(f.get_ref());
            let tokens = principals::read_file(&p)
                .map_err(|e| at(Some(f.span()), "target.principal_file", e.to_string()))?;
            Principals::File {
                path: p.display().to_string(),
                tokens,
            }
        }
        (None, Some(n), Some(_)) => {
            return Err(at(
                Some(n.span()),
                "target.principals",
                "give either `token` (every user is it) or `principals = N`, not both".into(),
            ));
        }
        (None, Some(n), None) => {
            let count = *n.get_ref();
            if !(1..=principals::MAX).contains(&count) {
                return Err(at(
                    Some(n.span()),
                    "target.principals",
                    format!("must be 1 to {}", principals::MAX),
                ));
            }
            Principals::Pool { count }
        }
        (None, None, Some(_)) => Principals::Single,
        (None, None, None) => Principals::PerUser,
    };
    let target = TargetSpec {
        principals,
        url,
        more_urls: Vec::new(),
        workers: raw.target.workers.unwrap_or(1).max(1),
        token: raw.target.token.unwrap_or_else(|| "alice".into()),
        other_token: raw.target.other_token.unwrap_or_else(|| "mallory".into()),
        tls: crate::client::tls::TlsOptions {
            // Relative to the plan file, as `principal_file`.
            cacert: raw
                .target
                .cacert
                .as_ref()
                .map(|c| Path::new(file).parent().unwrap_or(Path::new("")).join(c)),
            insecure: raw.target.insecure.unwrap_or(false),
        },
    };

    let l = &raw.load;
    let fixed_key = [
        l.users.as_ref().map(|u| ("load.users", u.span())),
        l.rate.as_ref().map(|r| ("load.rate", r.span())),
        l.ramp
            .as_ref()
            .and_then(|r| r.first())
            .map(|s| ("load.ramp", s.span())),
    ];
    let given: Vec<_> = fixed_key.iter().flatten().collect();
    if let (Some(_), Some((key, span))) = (&l.stages, given.first()) {
        return Err(at(
            Some(span.clone()),
            key,
            "give either `stages` or a fixed `users` / `rate` / `ramp`, not both".into(),
        ));
    }
    let shape = match (&l.users, &l.rate, &l.ramp) {
        _ if l.stages.is_some() => {
            let (text, span) = l
                .stages
                .as_ref()
                .map(|s| (s.get_ref().as_str(), s.span()))
                .unwrap_or_default();
            let stages = shape::parse_stages(text)
                .map_err(|m| at(Some(span.clone()), "load.stages", m.to_string()))?;
            let model = match &l.model {
                Some(m) => Model::parse(m.get_ref())
                    .map_err(|e| at(Some(m.span()), "load.model", e.to_string()))?,
                None => {
                    return Err(at(
                        Some(span),
                        "load.model",
                        "stages need `model = \"closed\"` (targets are users) or \
                         `model = \"open\"` (targets are round trips/s)"
                            .into(),
                    ));
                }
            };
            if model == Model::Closed {
                shape::check_closed_stages(&stages)
                    .map_err(|m| at(Some(span.clone()), "load.stages", m.to_string()))?;
            }
            LoadShape::Staged { model, stages }
        }
        (Some(u), Some(_), _) | (Some(u), _, Some(_)) => {
            return Err(at(
                Some(u.span()),
                "load.users",
                "give either `users` (closed model) or `rate`/`ramp` (open model), not both".into(),
            ));
        }
        (_, Some(r), Some(_)) => {
            return Err(at(
                Some(r.span()),
                "load.rate",
                "give either `rate` or `ramp`, not both".into(),
            ));
        }
        (_, Some(r), None) => {
            let rate = *r.get_ref();
            if !(rate.is_finite() && rate > 0.0) {
                return Err(at(Some(r.span()), "load.rate", "must be > 0".into()));
            }
            LoadShape::Open { rate }
        }
        (_, None, Some(ramp)) => {
            if ramp.is_empty() {
                return Err(at(None, "load.ramp", "the ramp has no steps".into()));
            }
            // A stepped ramp is stages that jump to each rate and hold it.
            let mut stages = Vec::new();
            for (i, s) in ramp.iter().enumerate() {
                let key = format!("load.ramp[{i}]");
                let step = s.get_ref();
                if !(step.rate.is_finite() && step.rate > 0.0) {
                    return Err(at(Some(s.span()), &key, "rate must be > 0".into()));
                }
                let hold = span_at(&step.hold, s.span(), &key, &at)?;
                stages.push(Stage {
                    duration: Duration::ZERO,
                    target: step.rate,
                });
                stages.push(Stage {
                    duration: hold,
                    target: step.rate,
                });
            }
            LoadShape::Staged {
                model: Model::Open,
                stages,
            }
        }
        (u, None, None) => {
            let users = u.as_ref().map_or(4, |u| *u.get_ref());
            if users == 0 {
                let span = u.as_ref().map(|u| u.span());
                return Err(at(span, "load.users", "must be at least 1".into()));
            }
            LoadShape::Closed {
                users,
                hatch_rate: raw.load.hatch_rate.unwrap_or(users as f64).max(0.1),
            }
        }
    };
    if let LoadShape::Staged { stages, .. } = &shape {
        // The stages are the whole run: the warm-up is their first part.
        let all = shape::total(stages);
        if warmup >= all {
            let span = raw.warmup.as_ref().map(|w| w.span());
            return Err(at(
                span,
                "warmup",
                format!(
                    "the warm-up must be shorter than the stages ({})",
                    humantime::format_duration(all)
                ),
            ));
        }
        duration = all - warmup;
    } else if l.model.is_some() {
        let span = l.model.as_ref().map(|m| m.span());
        return Err(at(
            span,
            "load.model",
            "`model` goes with `stages`; `users` or `rate` already say the model".into(),
        ));
    }

    let mut scenarios = Vec::new();
    for (name, spanned) in &raw.scenarios {
        let span = Some(spanned.span());
        let s = spanned.get_ref();
        let key = format!("scenarios.{name}");
        let kind_text = s.kind.as_deref().unwrap_or(name);
        let kind = ScenarioKind::parse(kind_text).ok_or_else(|| {
            let all: Vec<&str> = ScenarioKind::ALL.iter().map(|k| k.as_str()).collect();
            at(
                span.clone(),
                &format!("{key}.kind"),
                format!(
                    "unknown scenario kind {kind_text:?}; expected one of {}",
                    all.join(", ")
                ),
            )
        })?;
        let (default_tool, default_args) = kind.default_tool();
        let arguments = match &s.arguments {
            None => match default_args {
                Value::Object(m) => m,
                _ => Map::new(),
            },
            Some(v) => match serde_json::to_value(v) {
                Ok(Value::Object(m)) => m,
                _ => {
                    return Err(at(
                        span,
                        &format!("{key}.arguments"),
                        "arguments must be a table".into(),
                    ));
                }
            },
        };
        let mutation = match s.mutation.as_deref() {
            None | Some("flip_char") => Mutation::FlipChar { index: 7 },
            Some("truncate") => Mutation::Truncate { count: 4 },
            Some("extend") => Mutation::Extend {
                suffix: "AAAA".into(),
            },
            Some("replace") => Mutation::Replace {
                with: "garbage".into(),
            },
            Some(other) => {
                return Err(at(
                    span,
                    &format!("{key}.mutation"),
                    format!(
                        "unknown mutation {other:?}; expected flip_char, truncate, extend or replace"
                    ),
                ));
            }
        };
        let generation = match s.generation.as_deref() {
            None if kind == ScenarioKind::LegacyPush => Generation::Legacy,
            None => Generation::Modern,
            Some(g) => g
                .parse::<Generation>()
                .map_err(|e| at(span.clone(), &format!("{key}.generation"), e))?,
        };
        if generation == Generation::Legacy && kind.expects_rejection() {
            return Err(at(
                span,
                &format!("{key}.kind"),
                format!(
                    "{} probes requestState, which 2025-11-25 does not have; use it with \
                     generation = \"2026-07-28\"",
                    kind.as_str()
                ),
            ));
        }
        let answers = match &s.answers {
            None => Map::new(),
            Some(v) => match serde_json::to_value(v) {
                Ok(Value::Object(m)) => m,
                _ => {
                    return Err(at(
                        span,
                        &format!("{key}.answers"),
                        "answers must be a table of field = value, e.g. { confirm = true }".into(),
                    ));
                }
            },
        };
        let weight = s.weight.unwrap_or(1);
        if weight == 0 {
            return Err(at(
                span,
                &format!("{key}.weight"),
                "weight must be at least 1 (remove the scenario instead)".into(),
            ));
        }
        scenarios.push(ScenarioSpec {
            name: name.clone(),
            kind,
            weight,
            tool: s.tool.clone().unwrap_or_else(|| default_tool.to_owned()),
            arguments,
            mutation,
            generation,
            answers,
            expect_tool_error: s.expect_tool_error.unwrap_or(false),
        });
    }
    if scenarios.is_empty() {
        return Err(at(
            None,
            "scenarios",
            "the plan has no scenarios: add at least one [scenarios.<name>] table".into(),
        ));
    }

    let capacity = match &raw.capacity {
        None => None,
        Some(c) => {
            let bad = |k: &str, m: &str| at(None, &format!("capacity.{k}"), m.to_owned());
            if !(c.start_rate.is_finite() && c.start_rate > 0.0) {
                return Err(bad("start_rate", "must be > 0"));
            }
            if !(c.step.is_finite() && c.step > 0.0) {
                return Err(bad("step", "must be > 0"));
            }
            if !(c.max_rate.is_finite() && c.max_rate >= c.start_rate) {
                return Err(bad("max_rate", "must be ≥ start_rate"));
            }
            let (d, at_d) = (c.step_duration.get_ref(), c.step_duration.span());
            let step_duration = span_at(d, at_d, "capacity.step_duration", &at)?;
            let slo = parse_thresholds(&c.slo, "capacity.slo", &at)?;
            if slo.is_empty() {
                return Err(bad(
                    "slo",
                    "a capacity search needs an SLO, e.g. [\"p99(e2e) < 50ms\"]",
                ));
            }
            let mut spec = CapacitySpec::with_defaults(c.start_rate, c.step, c.max_rate, slo);
            spec.step_duration = step_duration;
            spec.target_rate = c.target_rate.filter(|r| r.is_finite() && *r > 0.0);
            if let Some(b) = c.bisections {
                spec.bisections = b;
            }
            if let Some(r) = c.resolution_pct {
                if !(r.is_finite() && r > 0.0 && r < 100.0) {
                    return Err(bad("resolution_pct", "must be a percentage > 0 and < 100"));
                }
                spec.resolution_pct = r;
            }
            if let Some(n) = c.samples {
                if n == 0 {
                    return Err(bad("samples", "must be at least 1"));
                }
                spec.samples = n;
            }
            if let Some(p) = c.stable_pct {
                if !(p.is_finite() && p >= 0.0) {
                    return Err(bad("stable_pct", "must be a percentage ≥ 0"));
                }
                spec.stable_pct = p;
            }
            if let Some(f) = &c.stable_floor {
                spec.stable_floor = span_at(f.get_ref(), f.span(), "capacity.stable_floor", &at)?;
            }
            if let Some(h) = c.host_noise {
                if !(h.is_finite() && h > 0.0) {
                    return Err(bad("host_noise", "must be a number of cores > 0"));
                }
                spec.host_noise_cores = h;
            }
            if let Some(h) = c.host_spare {
                if !(h.is_finite() && h >= 0.0) {
                    return Err(bad(
                        "host_spare",
                        "must be a number of cores ≥ 0 (0: not judged)",
                    ));
                }
                spec.host_spare_cores = h;
            }
            Some(spec)
        }
    };

    Ok(Plan {
        name: raw.name.unwrap_or_else(|| default_name.to_owned()),
        source: file.to_owned(),
        description: raw.description.unwrap_or_default(),
        target,
        duration,
        warmup,
        max_requests: raw.max_requests.unwrap_or(DEFAULT_MAX_REQUESTS).max(1),
        timeout,
        shape,
        max_in_flight: raw.load.max_in_flight.unwrap_or(1024).max(1),
        in_flight_lowered_from: None,
        scenarios,
        thresholds,
        capacity,
        seed: raw.seed.unwrap_or(1),
        interval,
        stall,
        default_thresholds: raw.default_thresholds.unwrap_or(true),
        segment: Segment::WHOLE,
        soak: None,
    })
}

type At<'a> = dyn Fn(Option<std::ops::Range<usize>>, &str, String) -> PlanError + 'a;

fn parse_thresholds(
    items: &[toml::Spanned<String>],
    key: &str,
    at: &At<'_>,
) -> Result<Vec<Threshold>, PlanError> {
    items
        .iter()
        .enumerate()
        .map(|(i, t)| parse_threshold(t.get_ref(), t.span(), key, i, at))
        .collect()
}

/// The plan's `thresholds`: strings or k6-style tables.
fn parse_plan_thresholds(
    items: &[toml::Spanned<RawThreshold>],
    at: &At<'_>,
) -> Result<Vec<Threshold>, PlanError> {
    items
        .iter()
        .enumerate()
        .map(|(i, t)| parse_threshold(&t.get_ref().text(), t.span(), "thresholds", i, at))
        .collect()
}

fn parse_threshold(
    text: &str,
    span: std::ops::Range<usize>,
    key: &str,
    i: usize,
    at: &At<'_>,
) -> Result<Threshold, PlanError> {
    Threshold::parse(text).map_err(|ThresholdError { why, .. }| {
        at(
            Some(span),
            &format!("{key}[{i}]"),
            format!("{text:?}: {why}"),
        )
    })
}

/// The duration `text` at `range` of the plan says (humantime syntax:
/// `10s`, `1m30s`, `250ms`), or the error naming `key`.
fn span_at(
    text: &str,
    range: std::ops::Range<usize>,
    key: &str,
    at: &At<'_>,
) -> Result<Duration, PlanError> {
    humantime::parse_duration(text.trim()).map_err(|e| {
        let why = format!("{text:?} is not a duration ({e}); use e.g. 10s, 1m, 500ms");
        at(Some(range), key, why)
    })
}

/// The 1-based line of a byte offset, and the key written on that line
/// (prefixed with the enclosing `[table]`), when one can be read.
fn locate(text: &str, offset: usize) -> (usize, Option<String>) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line_no = before.matches('\n').count() + 1;
    let line = text.lines().nth(line_no - 1).unwrap_or("");
    let table = text
        .lines()
        .take(line_no)
        .filter_map(|l| {
            let l = l.trim();
            (l.starts_with('[') && !l.starts_with("[[") && l.ends_with(']'))
                .then(|| l.trim_matches(|c| c == '[' || c == ']').trim().to_owned())
        })
        .last();
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_owned())
        .filter(|k| !k.is_empty() && !k.starts_with('#'))
        .map(|k| match &table {
            Some(t) if !line.trim_start().starts_with('[') => format!("{t}.{k}"),
            _ => k,
        });
    (line_no, key.or(table))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "t"
duration = "3s"
thresholds = ["p99(retry) < 50ms", "error_rate < 1%"]

[target]
workers = 2

[load]
users = 3

[scenarios.form-accept]
weight = 3

[scenarios.bad-state]
kind = "tamper"
tool = "deploy"
arguments = { service = "api" }
mutation = "truncate"
"#;

    #[test]
    fn a_good_plan_parses_with_defaults() {
        let p = parse_plan(GOOD, "good.toml", "good").unwrap();
        assert_eq!(p.name, "t");
        assert_eq!(p.duration, Duration::from_secs(3));
        assert_eq!(p.target.url, None);
        assert_eq!(p.target.workers, 2);
        assert_eq!(
            p.shape,
            LoadShape::Closed {
                users: 3,
                hatch_rate: 3.0
            }
        );
        assert_eq!(p.scenarios.len(), 2);
        let tamper = p.scenarios.iter().find(|s| s.name == "bad-state").unwrap();
        assert_eq!(tamper.kind, ScenarioKind::Tamper);
        assert_eq!(tamper.mutation, Mutation::Truncate { count: 4 });
        assert_eq!(tamper.arguments["service"], "api");
        let accept = p
            .scenarios
            .iter()
            .find(|s| s.name == "form-accept")
            .unwrap();
        assert_eq!((accept.tool.as_str(), accept.weight), ("deploy", 3));
        assert_eq!(p.thresholds.len(), 2);
        assert_eq!(p.max_requests, DEFAULT_MAX_REQUESTS);
    }

    #[test]
    fn thresholds_take_k6s_table_form_with_abort_on_fail() {
        let text = GOOD.replace(
            r#"thresholds = ["p99(retry) < 50ms", "error_rate < 1%"]"#,
            r#"thresholds = [
  "p99(retry) < 50ms; abort_on_fail",
  { threshold = "error_rate < 1%", abort_on_fail = true, delay_abort_eval = "10s" },
  { threshold = "avg(e2e) < 5ms" },
]"#,
        );
        let p = parse_plan(&text, "t.toml", "t").unwrap();
        let aborts: Vec<_> = p.thresholds.iter().map(|t| t.abort).collect();
        assert_eq!(
            aborts,
            [Some(Duration::ZERO), Some(Duration::from_secs(10)), None]
        );
        assert_eq!(p.thresholds[1].expr, "error_rate < 1%");
        let bad = text.replace("delay_abort_eval = \"10s\"", "delay_abort_eval = \"later\"");
        let e = parse_plan(&bad, "t.toml", "t").unwrap_err();
        assert!(e.to_string().contains("thresholds[1]"), "{e}");
        assert!(e.to_string().contains("not a duration"), "{e}");
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let bad = GOOD.replace("weight = 3", "weight = \"three\"");
        let e = parse_plan(&bad, "p.toml", "p").unwrap_err();
        assert_eq!(e.file, "p.toml");
        assert_eq!(e.line, 13, "{e}");
        assert_eq!(e.key, "scenarios.form-accept.weight", "{e}");

        let bad = GOOD.replace("error_rate < 1%", "error_rate < lots");
        let e = parse_plan(&bad, "p.toml", "p").unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (4, "thresholds[1]"), "{e}");

        let bad = GOOD.replace("users = 3", "users = 3\nspeed = 9");
        let e = parse_plan(&bad, "p.toml", "p").unwrap_err();
        assert_eq!(e.line, 11, "{e}");
        assert!(e.message.contains("speed"), "{e}");

        let bad = GOOD.replace("kind = \"tamper\"", "kind = \"tampr\"");
        let e = parse_plan(&bad, "p.toml", "p").unwrap_err();
        assert_eq!(e.key, "scenarios.bad-state.kind");
        assert!(e.line >= 15, "{e}");

        let bad = GOOD.replace("duration = \"3s\"", "duration = \"soon\"");
        let e = parse_plan(&bad, "p.toml", "p").unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (3, "duration"), "{e}");
        assert!(e.to_string().starts_with("p.toml:3: key `duration`"), "{e}");
    }

    #[test]
    fn open_model_and_conflicts() {
        let p = parse_plan(
            "[load]\nramp = [{rate = 10, hold = \"2s\"}, {rate = 20, hold = \"3s\"}]\n[scenarios.form-accept]\n",
            "r.toml",
            "r",
        )
        .unwrap();
        assert_eq!(p.duration, Duration::from_secs(5));
        let LoadShape::Staged { model, ref stages } = p.shape else {
            panic!("a ramp is stages: {:?}", p.shape)
        };
        assert_eq!(model, Model::Open);
        assert_eq!(shape::format_stages(stages), "0s:10,2s:10,0s:20,3s:20");
        let e = parse_plan(
            "[load]\nusers = 2\nrate = 5\n[scenarios.form-accept]\n",
            "c.toml",
            "c",
        )
        .unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (2, "load.users"), "{e}");
        let e = parse_plan("name = \"x\"\n", "e.toml", "e").unwrap_err();
        assert_eq!(e.key, "scenarios");
    }

    #[test]
    fn stages_need_a_model_and_exclude_fixed_loads() {
        let p = parse_plan(
            "warmup = \"2s\"\n[load]\nmodel = \"open\"\nstages = \"2s:10,6s:10\"\n[scenarios.form-accept]\n",
            "s.toml",
            "s",
        )
        .unwrap();
        assert_eq!(
            p.duration,
            Duration::from_secs(6),
            "stages less the warm-up"
        );
        assert_eq!(p.warmup, Duration::from_secs(2));
        let t = p.timeline();
        assert_eq!((t.lead, t.measured), (p.warmup, p.duration));
        assert_eq!(p.shape.model(), Model::Open);
        assert_eq!(p.shape.peak(), 10.0);
        for (text, key, says) in [
            (
                "[load]\nstages = \"2s:10\"\n",
                "load.model",
                "stages need `model",
            ),
            (
                "[load]\nmodel = \"open\"\nstages = \"2s:10\"\nrate = 5.0\n",
                "load.rate",
                "not both",
            ),
            (
                "[load]\nmodel = \"open\"\nstages = \"2s:x\"\n",
                "load.stages",
                "not a number",
            ),
            (
                "[load]\nmodel = \"open\"\nusers = 2\n",
                "load.model",
                "goes with `stages`",
            ),
            (
                "warmup = \"3s\"\n[load]\nmodel = \"closed\"\nstages = \"2s:4\"\n",
                "warmup",
                "shorter than the stages",
            ),
        ] {
            let e =
                parse_plan(&format!("{text}[scenarios.form-accept]\n"), "e.toml", "e").unwrap_err();
            assert_eq!(e.key, key, "{text}: {e}");
            assert!(e.message.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn a_fixed_closed_plan_measures_its_duration_after_the_launch() {
        let p = parse_plan(
            "duration = \"10s\"\nwarmup = \"1s\"\n[load]\nusers = 4\nhatch_rate = 2.0\n[scenarios.form-accept]\n",
            "c.toml",
            "c",
        )
        .unwrap();
        let t = p.timeline();
        assert_eq!(t.lead, Duration::from_secs(3), "2 s launch, 1 s warm-up");
        assert_eq!(t.measured, Duration::from_secs(10));
    }

    // Plan::split on parsed plans (the segment shares of spec::segment).
    fn seg(i: u32, n: u32) -> Segment {
        Segment::new(i, n).unwrap()
    }

    #[test]
    fn a_closed_plan_splits_users_cap_and_stages() {
        let text =
            "max_requests = 1000\n[load]\nusers = 10\nhatch_rate = 5\n[scenarios.form-accept]\n";
        let whole = parse_plan(text, "p.toml", "p").unwrap();
        let mut users = 0;
        let mut cap = 0;
        for i in 1..=3 {
            let mut p = whole.clone();
            p.split(seg(i, 3)).unwrap();
            assert_eq!(p.segment, seg(i, 3));
            let LoadShape::Closed {
                users: u,
                hatch_rate,
            } = p.shape
            else {
                panic!("closed")
            };
            // The launch lasts as long as the whole's (2 s): windows line up.
            assert!((u as f64 / hatch_rate - 2.0).abs() < 1e-9);
            assert_eq!(p.timeline().lead, whole.timeline().lead);
            users += u;
            cap += p.max_requests;
        }
        assert_eq!((users, cap), (10, 1000));
        // 10 over 11: round(10·6/11) = round(10·5/11) = 5, so 6/11 gets none.
        let e = whole.clone().split(seg(6, 11)).unwrap_err().to_string();
        assert!(e.contains("leave this segment none"), "{e}");

        let mut staged = whole.clone();
        staged.shape = LoadShape::Staged {
            model: Model::Closed,
            stages: shape::parse_stages("2s:5,3s:7,1s:0").unwrap(),
        };
        let mut sums = [0.0; 3];
        for i in 1..=2 {
            let mut p = staged.clone();
            p.split(seg(i, 2)).unwrap();
            let LoadShape::Staged { stages, .. } = &p.shape else {
                panic!("staged")
            };
            for (s, st) in sums.iter_mut().zip(stages) {
                *s += st.target;
            }
        }
        assert_eq!(sums, [5.0, 7.0, 0.0]);
    }

    #[test]
    fn an_open_plan_keeps_the_whole_schedule() {
        let text = "max_requests = 7\n[load]\nrate = 60\n[scenarios.form-accept]\n";
        let whole = parse_plan(text, "p.toml", "p").unwrap();
        let mut p = whole.clone();
        p.split(seg(2, 3)).unwrap();
        assert_eq!(p.shape, whole.shape);
        assert_eq!(p.max_requests, 3, "7 over 3 is 2, 3, 2");
        assert!(p.segment_share().contains("20 round trips/s"));
        // 7 over 8: round(7·5/8) = round(7·4/8) = 4, so 5/8 gets none.
        let e = whole.clone().split(seg(5, 8)).unwrap_err().to_string();
        assert!(e.contains("raise --max-requests to at least 8"), "{e}");
    }

    #[test]
    fn the_target_says_who_the_users_are() {
        use crate::load::spec::principals::Principals;
        let sc = "\n[scenarios.form-accept]\n";
        let who =
            |t: &str| parse_plan(&format!("{t}{sc}"), "w.toml", "w").map(|p| p.target.principals);
        assert_eq!(who("").unwrap(), Principals::PerUser);
        assert_eq!(
            who("[target]\ntoken = \"alice\"\n").unwrap(),
            Principals::Single
        );
        assert_eq!(
            who("[target]\nprincipals = 8\n").unwrap(),
            Principals::Pool { count: 8 }
        );
        let e = who("[target]\ntoken = \"a\"\nprincipals = 8\n").unwrap_err();
        assert_eq!(e.key, "target.principals");
        let e = who("[target]\nprincipals = 0\n").unwrap_err();
        assert!(e.to_string().contains("must be 1 to"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tokens.txt"), "t1\nt2\n").unwrap();
        let plan = dir.path().join("p.toml");
        std::fs::write(
            &plan,
            format!("[target]\nprincipal_file = \"tokens.txt\"\n{sc}"),
        )
        .unwrap();
        match load_file(&plan).unwrap().target.principals {
            Principals::File { tokens, .. } => assert_eq!(tokens, ["t1", "t2"]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_plan_names_how_its_https_target_is_trusted() {
        let sc = "\n[scenarios.form-accept]\n";
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("p.toml");
        std::fs::write(
            &plan,
            format!("[target]\nurl = \"https://127.0.0.1:1/mcp\"\ncacert = \"ca.pem\"\n{sc}"),
        )
        .unwrap();
        let tls = load_file(&plan).unwrap().target.tls;
        // Relative to the plan file, as principal_file is.
        assert_eq!(tls.cacert, Some(dir.path().join("ca.pem")));
        assert!(!tls.insecure);
        std::fs::write(&plan, format!("[target]\ninsecure = true\n{sc}")).unwrap();
        let tls = load_file(&plan).unwrap().target.tls;
        assert!(tls.insecure && tls.cacert.is_none());
        std::fs::write(&plan, format!("[target]\ninsecure = \"yes\"\n{sc}")).unwrap();
        assert!(load_file(&plan).is_err(), "insecure takes a boolean");
    }
}
