//! Load plans: the TOML files in `loadtests/`.
//!
//! A plan names its target (omitted = the embedded reference server), the
//! scenario mix with tools and arguments (so foreign servers work), the load
//! shape (closed: `users`; open: `rate` or a stepped `ramp`), the bounds
//! (`duration`, `max_requests`, `timeout`), thresholds and, for capacity
//! runs, the rate steps and the SLO. `loadtests/README.md` documents every
//! key. A bad plan is reported with file, line and key.

use super::shape::{self, Model, Stage, Timeline};
use super::threshold::{Threshold, ThresholdError};
use crate::client::Mutation;
use crate::protocol::Generation;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::time::Duration;

/// Default hard cap on HTTP requests per run.
pub const DEFAULT_MAX_REQUESTS: u64 = 1_000_000;

/// Default per-request timeout: short, so a stalled target shows as
/// timeouts within the run instead of one slow round trip per user.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// Default stall window: a run in which no round trip got an answer for
/// this long ends as `stalled` (a failure).
pub const DEFAULT_STALL: Duration = Duration::from_secs(5);

/// What a scenario does (its answer policy and generation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScenarioKind {
    /// Accept a form with valid content; expect a complete result.
    FormAccept,
    /// Decline; expect a complete (tool) result.
    FormDecline,
    /// Cancel; expect a complete (tool) result.
    FormCancel,
    /// Accept every round of a multi-round tool.
    MultiRound,
    /// URL mode: consent, complete the flow page, retry.
    UrlFlow,
    /// Corrupt the echoed state: every round trip is an expected rejection.
    Tamper,
    /// Finish the flow, then replay the last retry: an expected rejection.
    Replay,
    /// The 2025-11-25 push flow over SSE, accepting.
    LegacyPush,
    /// A plain tool call that is expected to complete without eliciting (a
    /// floor to compare with, or a tool that needs no input).
    Call,
}

impl ScenarioKind {
    /// Every kind.
    pub const ALL: [ScenarioKind; 9] = [
        ScenarioKind::FormAccept,
        ScenarioKind::FormDecline,
        ScenarioKind::FormCancel,
        ScenarioKind::MultiRound,
        ScenarioKind::UrlFlow,
        ScenarioKind::Tamper,
        ScenarioKind::Replay,
        ScenarioKind::LegacyPush,
        ScenarioKind::Call,
    ];

    /// The plan spelling (`form-accept`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ScenarioKind::FormAccept => "form-accept",
            ScenarioKind::FormDecline => "form-decline",
            ScenarioKind::FormCancel => "form-cancel",
            ScenarioKind::MultiRound => "multi-round",
            ScenarioKind::UrlFlow => "url-flow",
            ScenarioKind::Tamper => "tamper",
            ScenarioKind::Replay => "replay",
            ScenarioKind::LegacyPush => "legacy-push",
            ScenarioKind::Call => "call",
        }
    }

    /// Parses the plan spelling.
    pub fn parse(s: &str) -> Option<ScenarioKind> {
        ScenarioKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether a correct server answers this scenario's round trips with a
    /// rejection (tamper, replay) rather than a success.
    pub fn expects_rejection(self) -> bool {
        matches!(self, ScenarioKind::Tamper | ScenarioKind::Replay)
    }

    /// The reference server's tool and arguments for this kind.
    pub fn default_tool(self) -> (&'static str, Value) {
        match self {
            ScenarioKind::MultiRound => {
                ("book_trip", serde_json::json!({"from": "AMS", "to": "LIS"}))
            }
            ScenarioKind::UrlFlow => ("connect_billing", serde_json::json!({})),
            // Its completion is single-use (a confirmed delete_file is too,
            // but an unconfirmed one may legitimately complete twice).
            ScenarioKind::Replay => ("connect_billing", serde_json::json!({})),
            ScenarioKind::Call => ("stats", serde_json::json!({})),
            _ => ("deploy", serde_json::json!({"service": "web"})),
        }
    }
}

impl fmt::Display for ScenarioKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One scenario of the mix.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioSpec {
    /// The table name (`[scenarios.<name>]`), a metric label.
    pub name: String,
    /// What it does.
    pub kind: ScenarioKind,
    /// Relative weight (≥ 1).
    pub weight: u32,
    /// Tool to call.
    pub tool: String,
    /// Its arguments.
    pub arguments: Map<String, Value>,
    /// The state corruption (tamper only).
    pub mutation: Mutation,
    /// The protocol generation it speaks (`legacy-push` implies 2025-11-25).
    pub generation: Generation,
    /// Answers pinned by form field name, laid over generated content.
    pub answers: Map<String, Value>,
    /// An `isError` tool result counts as the expected path.
    pub expect_tool_error: bool,
}

impl ScenarioSpec {
    /// Whether its round trips go through the 2025-11-25 session client.
    pub fn is_legacy(&self) -> bool {
        self.generation == Generation::Legacy || self.kind == ScenarioKind::LegacyPush
    }
}

/// Closed (Goose users) or open (arrival rate) model, fixed or staged.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadShape {
    /// `users` Goose users, each running round trips back to back.
    Closed {
        /// Number of users.
        users: usize,
        /// Users started per second.
        hatch_rate: f64,
    },
    /// Round trips start at a constant rate, whatever the target's speed.
    Open {
        /// Round trips started per second.
        rate: f64,
    },
    /// Stages ramping the users (closed) or the rate (open); they are the
    /// whole run (`stages = "10s:50,30s:50,10s:0"`, `--stage`, or a `ramp`).
    Staged {
        /// What the targets count.
        model: Model,
        /// The stages, in order.
        stages: Vec<Stage>,
    },
}

impl LoadShape {
    /// The model the shape runs in.
    pub fn model(&self) -> Model {
        match self {
            LoadShape::Closed { .. } => Model::Closed,
            LoadShape::Open { .. } => Model::Open,
            LoadShape::Staged { model, .. } => *model,
        }
    }

    /// The highest rate (open) or user count (closed) the shape reaches.
    pub fn peak(&self) -> f64 {
        match self {
            LoadShape::Closed { users, .. } => *users as f64,
            LoadShape::Open { rate } => *rate,
            LoadShape::Staged { stages, .. } => shape::peak(stages),
        }
    }

    /// The shape in words, for the report's settings.
    pub fn describe(&self) -> String {
        match self {
            LoadShape::Closed { users, hatch_rate } => {
                format!("{users} users, launched at {hatch_rate} per second")
            }
            LoadShape::Open { rate } => format!("{rate} round trips/s"),
            LoadShape::Staged { model, stages } => format!(
                "stages {} ({})",
                shape::format_stages(stages),
                match model {
                    Model::Closed => "users",
                    Model::Open => "round trips/s",
                }
            ),
        }
    }
}

/// Where the load goes.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSpec {
    /// The MCP endpoint URL; `None` starts the embedded reference server.
    pub url: Option<String>,
    /// More endpoints of the same service (`--target A,B`): round trips
    /// start round robin over `url` and these, and each retry goes to the
    /// next one. Empty for one target.
    pub more_urls: Vec<String>,
    /// Worker threads of the embedded server.
    pub workers: usize,
    /// Bearer token of the principal.
    pub token: String,
    /// Bearer token of another principal (cross-principal probes).
    pub other_token: String,
}

/// A capacity search: step the open-model rate until the SLO breaks.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacitySpec {
    /// First offered rate (round trips/s).
    pub start_rate: f64,
    /// Added per step.
    pub step: f64,
    /// Highest rate tried.
    pub max_rate: f64,
    /// Length of each step.
    pub step_duration: Duration,
    /// The SLO each step is judged against.
    pub slo: Vec<Threshold>,
    /// Rate to size for (instances needed = ceil(target / knee)).
    pub target_rate: Option<f64>,
    /// Most halvings between the last good and the first bad rate.
    pub bisections: u32,
    /// The bisection ends when the bracket is narrower than this percentage
    /// of the first bad rate.
    pub resolution_pct: f64,
    /// Most samples per step (1: no stability check).
    pub samples: u32,
    /// Two consecutive samples' p99s within this many percent are stable.
    pub stable_pct: f64,
    /// ... or within this much (noise floor).
    pub stable_floor: Duration,
}

impl Default for CapacitySpec {
    /// The one set of capacity defaults (`load --capacity` without a plan
    /// section): 200 round trips/s up to 20,000 in steps of 200, no SLO yet.
    fn default() -> Self {
        CapacitySpec::with_defaults(200.0, 200.0, 20_000.0, Vec::new())
    }
}

impl CapacitySpec {
    /// A search from `start_rate` to `max_rate` in steps of `step`, 3 s a
    /// step, with the default bisection and stability settings
    /// ([`super::capacity`]).
    pub fn with_defaults(start_rate: f64, step: f64, max_rate: f64, slo: Vec<Threshold>) -> Self {
        use super::capacity as c;
        CapacitySpec {
            start_rate,
            step,
            max_rate,
            step_duration: Duration::from_secs(3),
            slo,
            target_rate: None,
            bisections: c::DEFAULT_BISECTIONS,
            resolution_pct: c::DEFAULT_RESOLUTION_PCT,
            samples: c::DEFAULT_SAMPLES,
            stable_pct: c::DEFAULT_STABLE_PCT,
            stable_floor: c::DEFAULT_STABLE_FLOOR,
        }
    }
}

/// A validated plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Plan name (file stem unless `name` is set).
    pub name: String,
    /// Where it was read from.
    pub source: String,
    /// One-line description.
    pub description: String,
    /// The target.
    pub target: TargetSpec,
    /// The measured window: how long the results cover (the users' launch
    /// and the warm-up come before it; with stages, their total less the
    /// warm-up).
    pub duration: Duration,
    /// Load run before the measured window and left out of the results.
    pub warmup: Duration,
    /// Hard cap on HTTP requests.
    pub max_requests: u64,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Load model.
    pub shape: LoadShape,
    /// Most round trips in flight at once (open model).
    pub max_in_flight: usize,
    /// The mix.
    pub scenarios: Vec<ScenarioSpec>,
    /// Pass/fail thresholds.
    pub thresholds: Vec<Threshold>,
    /// Capacity search settings, when present.
    pub capacity: Option<CapacitySpec>,
    /// Seed for generated content.
    pub seed: u64,
    /// Width of one interval in the HDR interval logs and timelines.
    pub interval: Duration,
    /// No round trip answered for this long ends the run as stalled.
    pub stall: Duration,
    /// Whether the default thresholds apply (`default_thresholds = false`
    /// opts out in writing).
    pub default_thresholds: bool,
    /// This process's share of a distributed run (`--segment I/N`; the
    /// whole run, `1/1`, unless set): see [`super::segment`].
    pub segment: super::segment::Segment,
}

impl Plan {
    /// What the run drives and which part of it is measured.
    pub fn timeline(&self) -> Timeline {
        match &self.shape {
            LoadShape::Closed { users, hatch_rate } => Timeline::fixed(
                Model::Closed,
                *users as f64,
                *hatch_rate,
                self.warmup,
                self.duration,
            ),
            LoadShape::Open { rate } => {
                Timeline::fixed(Model::Open, *rate, 1.0, self.warmup, self.duration)
            }
            LoadShape::Staged { model, stages } => Timeline {
                model: *model,
                stages: stages.clone(),
                lead: self.warmup,
                warmup: self.warmup,
                measured: shape::total(stages).saturating_sub(self.warmup),
            },
        }
    }

    /// Every threshold the run is judged by, each flagged when it is a
    /// default rather than written in the plan: `error_rate < 1%` (unless
    /// the plan sets its own error rate), and per scenario `ok(S) > 0` (no
    /// scenario without a success) and `skipped_rate(S) < 50%` (a scenario
    /// that mostly cannot apply its policy says so).
    pub fn all_thresholds(&self) -> Vec<(Threshold, bool)> {
        let mut out: Vec<(Threshold, bool)> =
            self.thresholds.iter().map(|t| (t.clone(), false)).collect();
        if !self.default_thresholds {
            return out;
        }
        let mut add = |expr: String| {
            if let Ok(t) = Threshold::parse(&expr)
                && !out.iter().any(|(o, _)| o.metric == t.metric)
            {
                out.push((t, true));
            }
        };
        add("error_rate < 1%".into());
        for s in &self.scenarios {
            add(format!("ok({}) > 0", s.name));
            add(format!("skipped_rate({}) < 50%", s.name));
        }
        out
    }

    /// Checks every threshold's names against the plan (a usage error).
    pub fn validate_thresholds(&self) -> Result<(), String> {
        let names: Vec<&str> = self.scenarios.iter().map(|s| s.name.as_str()).collect();
        for t in &self.thresholds {
            t.validate(&names)?;
        }
        if let Some(c) = &self.capacity {
            for t in &c.slo {
                t.validate(&names)?;
            }
        }
        Ok(())
    }
}

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
    thresholds: Vec<toml::Spanned<String>>,
    #[serde(default)]
    target: RawTarget,
    #[serde(default)]
    load: RawLoad,
    #[serde(default)]
    scenarios: BTreeMap<String, toml::Spanned<RawScenario>>,
    capacity: Option<RawCapacity>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTarget {
    url: Option<toml::Spanned<String>>,
    workers: Option<usize>,
    token: Option<String>,
    other_token: Option<String>,
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
        Some(s) => parse_span(s.get_ref())
            .map_err(|m| at(Some(s.span()), key, m))
            .and_then(|d| {
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
        Some(s) => parse_span(s.get_ref()).map_err(|m| at(Some(s.span()), "warmup", m))?,
    };

    let thresholds = parse_thresholds(&raw.thresholds, "thresholds", &at)?;

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
    let target = TargetSpec {
        url,
        more_urls: Vec::new(),
        workers: raw.target.workers.unwrap_or(1).max(1),
        token: raw.target.token.unwrap_or_else(|| "alice".into()),
        other_token: raw.target.other_token.unwrap_or_else(|| "mallory".into()),
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
            let stages =
                shape::parse_stages(text).map_err(|m| at(Some(span.clone()), "load.stages", m))?;
            let model = match &l.model {
                Some(m) => {
                    Model::parse(m.get_ref()).map_err(|e| at(Some(m.span()), "load.model", e))?
                }
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
                super::closed::check_closed_stages(&stages)
                    .map_err(|m| at(Some(span.clone()), "load.stages", m))?;
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
                let hold = parse_span(&step.hold).map_err(|m| at(Some(s.span()), &key, m))?;
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
            let step_duration = parse_span(c.step_duration.get_ref())
                .map_err(|m| at(Some(c.step_duration.span()), "capacity.step_duration", m))?;
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
                spec.stable_floor = parse_span(f.get_ref())
                    .map_err(|m| at(Some(f.span()), "capacity.stable_floor", m))?;
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
        scenarios,
        thresholds,
        capacity,
        seed: raw.seed.unwrap_or(1),
        interval,
        stall,
        default_thresholds: raw.default_thresholds.unwrap_or(true),
        segment: super::segment::Segment::WHOLE,
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
        .map(|(i, t)| {
            Threshold::parse(t.get_ref()).map_err(|ThresholdError { why, .. }| {
                at(
                    Some(t.span()),
                    &format!("{key}[{i}]"),
                    format!("{:?}: {why}", t.get_ref()),
                )
            })
        })
        .collect()
}

/// Parses `10s`, `1m30s`, `250ms` (humantime syntax).
pub fn parse_span(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim())
        .map_err(|e| format!("{text:?} is not a duration ({e}); use e.g. 10s, 1m, 500ms"))
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
}
