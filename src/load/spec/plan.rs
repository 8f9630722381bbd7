//! Load plans: the TOML files in `loadtests/`.
//!
//! A plan names its target (omitted = the embedded reference server), the
//! scenario mix with tools and arguments (so foreign servers work), the load
//! shape (closed: `users`; open: `rate` or a stepped `ramp`), the bounds
//! (`duration`, `max_requests`, `timeout`), thresholds and, for capacity
//! runs, the rate steps and the SLO. `loadtests/README.md` documents every
//! key; [`super::parse`] reads them.

use super::principals::Principals;
use super::segment::{Segment, SegmentError};
pub use super::shape::LoadShape;
use super::shape::{self, Model, Stage, Timeline};
use super::threshold::Threshold;
use crate::client::Mutation;
use crate::protocol::Generation;
use serde_json::{Map, Value};
use std::fmt;
use std::time::Duration;

/// Default hard cap on HTTP requests per run.
pub const DEFAULT_MAX_REQUESTS: u64 = 1_000_000;

/// Default per-request timeout: short, so a stalled target shows as
/// timeouts within the run instead of one slow round trip per user.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// Default stall window: a run in which no round trip got an answer for
/// this long ends as `stalled` (a failure).
pub const DEFAULT_STALL: Duration = Duration::from_secs(5);

/// The default thresholds in words (see [`Plan::all_thresholds`]); a plan
/// `plan` writes lists them, and adds no other.
pub const DEFAULT_THRESHOLDS: &str = "error_rate < 1%, misrouted < 1, service_gaps < 1, \
frozen_time < 20%, and per scenario ok(S) > 0 and skipped_rate(S) < 50%";

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
    /// Bearer token of the principal with [`Principals::Single`] (and of
    /// the preflight).
    pub token: String,
    /// Bearer token of another principal (cross-principal probes); a
    /// user whose own token it is takes another (see
    /// [`super::principals::other_for`]).
    pub other_token: String,
    /// Who the virtual users are.
    pub principals: Principals,
    /// How an `https` target's certificate is checked (`cacert`,
    /// `insecure`; the flags of the same names win).
    pub tls: crate::client::tls::TlsOptions,
}

/// Capacity search default: number of halvings after the coarse steps.
pub const DEFAULT_BISECTIONS: u32 = 4;
/// Default bracket width (percent of the first bad rate) that ends the bisection.
pub const DEFAULT_RESOLUTION_PCT: f64 = 5.0;
/// Default most samples per step (1: one sample, stability not checked).
pub const DEFAULT_SAMPLES: u32 = 3;
/// Default: two consecutive p99s within this many percent are stable.
pub const DEFAULT_STABLE_PCT: f64 = 20.0;
/// Default absolute tolerance between two p99s (below it, noise).
pub const DEFAULT_STABLE_FLOOR: Duration = Duration::from_millis(1);

/// The host's other work may vary by this many cores over a capacity
/// search's samples before it is inconclusive.
pub const DEFAULT_HOST_NOISE_CORES: f64 = 0.5;

/// The host's other work must leave a capacity search this many cores in
/// every sample (four searches on a 2-core host whose other work took
/// 1.4-1.86 cores found knees of 594, 1,938 and 2,500/s).
pub const DEFAULT_HOST_SPARE_CORES: f64 = 0.5;

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
    /// The host's other work may vary by this many cores over the search's
    /// samples; more makes it inconclusive (the spare CPU the target got,
    /// and so the knee, moved with it).
    pub host_noise_cores: f64,
    /// The least CPU (cores) the host's other work must leave the
    /// generator and the target in every sample; less makes the search
    /// inconclusive (the knee would be the host's leftovers). 0: not judged.
    pub host_spare_cores: f64,
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
    /// (`load::capacity`).
    pub fn with_defaults(start_rate: f64, step: f64, max_rate: f64, slo: Vec<Threshold>) -> Self {
        CapacitySpec {
            start_rate,
            step,
            max_rate,
            step_duration: Duration::from_secs(3),
            slo,
            target_rate: None,
            bisections: DEFAULT_BISECTIONS,
            resolution_pct: DEFAULT_RESOLUTION_PCT,
            samples: DEFAULT_SAMPLES,
            stable_pct: DEFAULT_STABLE_PCT,
            stable_floor: DEFAULT_STABLE_FLOOR,
            host_noise_cores: DEFAULT_HOST_NOISE_CORES,
            host_spare_cores: DEFAULT_HOST_SPARE_CORES,
        }
    }

    /// The search's settings in one line (the report's settings table).
    pub fn describe(&self) -> String {
        format!(
            "{}/s to {}/s in steps of {}/s, {} each; then up to {} halvings to {} % of the rate; \
             up to {} samples a step, stable when consecutive p99s agree within {} % or {}; \
             the knee measured again at the end; inconclusive when the host's other work varies \
             by more than {} cores or leaves the run less than {} cores",
            self.start_rate,
            self.max_rate,
            self.step,
            humantime::format_duration(self.step_duration),
            self.bisections,
            self.resolution_pct,
            self.samples,
            self.stable_pct,
            humantime::format_duration(self.stable_floor),
            self.host_noise_cores,
            self.host_spare_cores
        )
    }
}

/// A rate without trailing zeros (`20`, `6.667`).
fn fmt_rate(r: f64) -> String {
    let s = format!("{r:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
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
    /// The plan's own `max_in_flight` when the generator's descriptor limit
    /// lowered it: arrivals that cap holds are then the generator's
    /// shortfall, not the target's doing ([`crate::load::metrics::generator`]).
    pub in_flight_lowered_from: Option<usize>,
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
    pub segment: Segment,
    /// A soak (`--soak`): the cool-down after the measured window and the
    /// growth limits; `None` for any other run.
    pub soak: Option<super::soak::SoakSpec>,
}

impl Plan {
    /// The most connections the plan's round trips may hold open at once:
    /// two per round trip in flight, at most (a 2025-11-25 call and its GET
    /// stream).
    pub fn max_connections(&self) -> usize {
        self.max_in_flight.saturating_mul(2)
    }

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
    /// default rather than written in the plan ([`DEFAULT_THRESHOLDS`], the
    /// same whether the plan was written or discovered): `error_rate < 1%` (unless
    /// the plan sets its own error rate), `misrouted < 1` (no reply meant
    /// for another round trip, unless the plan sets its own limit),
    /// `service_gaps < 1` (no spell with round trips in flight and none
    /// answered, see [`crate::load::metrics::gaps`]), `frozen_time < 20%`
    /// (short freezes that add up: no more than a fifth of the window
    /// with round trips waiting and none answered), and per
    /// scenario `ok(S) > 0` (no
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
        add("misrouted < 1".into());
        add("service_gaps < 1".into());
        add("frozen_time < 20%".into());
        for s in &self.scenarios {
            add(format!("ok({}) > 0", s.name));
            add(format!("skipped_rate({}) < 50%", s.name));
        }
        out
    }

    /// Checks every threshold's names against the plan (a usage error).
    pub fn validate_thresholds(&self) -> Result<(), super::threshold::ThresholdError> {
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

    /// Makes this plan `seg`'s share of itself (see [`super::segment`]).
    /// `Err` says why the plan cannot be split this way.
    pub fn split(&mut self, seg: Segment) -> Result<(), SegmentError> {
        let (plan, this) = (self, seg);
        plan.segment = seg;
        if seg.is_whole() {
            return Ok(());
        }
        // Segments draw from the whole run's principals.
        plan.target.principals = plan
            .target
            .principals
            .fixed(&plan.shape, plan.max_in_flight);
        let cap = this.share(plan.max_requests);
        if cap == 0 {
            return Err(SegmentError::CapTooSmall {
                segment: this,
                cap: plan.max_requests,
            });
        }
        plan.max_requests = cap;
        match &mut plan.shape {
            LoadShape::Closed { users, hatch_rate } => {
                let mine = this.share(*users as u64) as usize;
                if mine == 0 {
                    return Err(SegmentError::NoUsers {
                        segment: this,
                        users: *users,
                    });
                }
                // Same launch length as the whole: the windows line up.
                *hatch_rate = *hatch_rate * mine as f64 / *users as f64;
                *users = mine;
            }
            LoadShape::Staged {
                model: Model::Closed,
                stages,
            } => {
                let mine: Vec<Stage> = stages
                    .iter()
                    .map(|s| Stage {
                        duration: s.duration,
                        target: this.share(s.target.max(0.0).round() as u64) as f64,
                    })
                    .collect();
                if mine.iter().all(|s| s.target <= 0.0) {
                    return Err(SegmentError::NoStageUsers { segment: this });
                }
                *stages = mine;
            }
            // The open model keeps the whole schedule and takes every N-th
            // arrival of it (open.rs).
            LoadShape::Open { .. } | LoadShape::Staged { .. } => {}
        }
        Ok(())
    }

    /// This plan's segment share in words, for the report's settings.
    pub fn segment_share(&self) -> String {
        let (plan, this) = (self, self.segment);
        match plan.shape.model() {
            Model::Open => format!(
                "segment {this}: every {}th arrival of the whole schedule from arrival {} \
                 (1/{} of its rate, {} round trips/s at its peak)",
                this.count,
                this.index,
                this.count,
                fmt_rate(plan.shape.peak() / f64::from(this.count.max(1)))
            ),
            Model::Closed => format!("segment {this}: {}", plan.shape.describe()),
        }
    }
}
