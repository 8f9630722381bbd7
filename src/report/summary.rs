//! The `summary.json` data model (schema 1). See the module docs of
//! [`crate::report`] for the field-by-field description.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema version written in `summary.json`.
pub const SCHEMA_VERSION: u32 = 1;

/// Latency statistics of one histogram, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    /// Samples.
    pub count: u64,
    /// Smallest value.
    pub min_ms: f64,
    /// Mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 95th percentile (absent from reports written before it was kept).
    #[serde(default)]
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// 99.99th percentile.
    pub p9999_ms: f64,
    /// Largest value.
    pub max_ms: f64,
}

/// Round-trip counts by outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OutcomeCounts {
    /// All round trips (skipped attempts are counted apart: they are not
    /// round trips).
    pub total: u64,
    /// Ended as the policy expects a correct server to end them.
    pub success: u64,
    /// Refused as expected (tamper, replay).
    pub expected_rejection: u64,
    /// Unexpected outcomes (the error taxonomy counts these).
    pub unexpected: u64,
    /// Attempts whose policy could not be applied (not in `total`).
    pub skipped: u64,
}

/// One scenario's results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSummary {
    /// Scenario kind (`form-accept`, `tamper`, …); empty in merged reports.
    pub kind: String,
    /// Tool it calls; empty in merged reports.
    pub tool: String,
    /// Weight in the mix.
    pub weight: u32,
    /// Outcome counts.
    pub outcomes: OutcomeCounts,
    /// Errors by class.
    pub errors: BTreeMap<String, u64>,
    /// End-to-end latency.
    pub e2e: LatencyStats,
    /// Closed model: end-to-end latency with the round trips stalled users
    /// held back (coordinated omission corrected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_corrected: Option<LatencyStats>,
}

/// One histogram's count, p50 and p99 in one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PointLatency {
    /// Samples in the interval.
    pub count: u64,
    /// Median (ms).
    pub p50_ms: f64,
    /// 99th percentile (ms).
    pub p99_ms: f64,
}

/// A threshold's limit where a chart can draw it: `metric` is `latency`
/// (`selector` `e2e`, `first`, `retry` or a leg name; `percentile`; value
/// in ms), `error_rate` (value in percent) or `rps` (per second).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThresholdLimit {
    /// `latency`, `error_rate` or `rps`.
    pub metric: String,
    /// Which legs (latency only).
    pub selector: String,
    /// The percentile (latency only).
    pub percentile: f64,
    /// The limit in the chart's unit.
    pub value: f64,
    /// `ms`, `%` or `/s`.
    pub unit: String,
}

/// An unexpected-outcome message and how often it was seen.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorGroup {
    /// The message (`scenario: class: detail`).
    pub message: String,
    /// Times seen.
    pub count: u64,
}

/// Counts `message` in `groups`: one more for a message already there, a
/// new group (while fewer than `cap`) for a new one; first seen first.
pub fn add_error_sample(groups: &mut Vec<ErrorGroup>, message: &str, cap: usize) {
    if let Some(g) = groups.iter_mut().find(|g| g.message == message) {
        g.count += 1;
    } else if groups.len() < cap {
        groups.push(ErrorGroup {
            message: message.to_owned(),
            count: 1,
        });
    }
}

/// Groups a list of messages (identical ones become one group with a count).
pub fn group_samples(samples: &[String]) -> Vec<ErrorGroup> {
    let mut groups = Vec::new();
    for m in samples {
        add_error_sample(&mut groups, m, usize::MAX);
    }
    groups
}

/// One interval of the timeline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// Seconds since the run started.
    pub t_s: f64,
    /// Round trips finished per second in the interval.
    pub rps: f64,
    /// Round trips begun per second in the interval: the load offered (0
    /// from merged `.hlog` files).
    #[serde(default)]
    pub started_per_s: f64,
    /// HTTP requests finished per second.
    pub requests_per_s: f64,
    /// Unexpected outcomes in the interval.
    pub errors: u64,
    /// End-to-end p50 (ms).
    pub p50_ms: f64,
    /// End-to-end p99 (ms).
    pub p99_ms: f64,
    /// Most round trips in flight at once during the interval.
    #[serde(default)]
    pub in_flight_max: u64,
    /// Unexpected outcomes by class.
    #[serde(default)]
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Per leg.
    #[serde(default)]
    pub legs: BTreeMap<String, PointLatency>,
    /// Per scenario, end to end.
    #[serde(default)]
    pub scenarios: BTreeMap<String, PointLatency>,
    /// Per instance that answered (all its legs).
    #[serde(default)]
    pub instances: BTreeMap<String, PointLatency>,
}

/// A threshold and its verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThresholdResult {
    /// As written in the plan.
    pub expr: String,
    /// The measured value, in the threshold's unit (ms, fraction, per second);
    /// `null` when there was nothing to measure (which fails).
    pub actual: Option<f64>,
    /// Whether it held.
    pub passed: bool,
    /// The measured value with its unit (`12.300ms`, `0.41%`), or why
    /// nothing was measured.
    #[serde(default)]
    pub actual_text: String,
    /// Added by elicitkit (the plan's default thresholds), not written in
    /// the plan.
    #[serde(default)]
    pub default: bool,
    /// Its limit, for the charts it constrains (none for `ok`, `skipped_rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<ThresholdLimit>,
}

/// One step of a capacity search.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CapacityStep {
    /// Offered rate (round trips/s).
    pub offered_rps: f64,
    /// Achieved rate (round trips/s).
    pub achieved_rps: f64,
    /// End-to-end p50 (ms), from the intended start.
    pub p50_ms: f64,
    /// End-to-end p99 (ms), from the intended start.
    pub p99_ms: f64,
    /// Unexpected outcomes / round trips.
    pub error_rate: f64,
    /// Whether the SLO held.
    pub within_slo: bool,
    /// Target CPU time per round trip (µs), when the target is local.
    pub target_cpu_us_per_rt: Option<f64>,
    /// `coarse` (a fixed step) or `bisect` (a midpoint of the bracket).
    #[serde(default)]
    pub kind: String,
    /// Samples taken at this rate (the figures above are the worst sample's).
    #[serde(default)]
    pub samples: u32,
    /// Whether two consecutive samples' p99 agreed (`null`: not checked).
    #[serde(default)]
    pub stable: Option<bool>,
    /// `within`, `breach`, `unstable` (every sample held, but the p99 never
    /// settled: within, with a note) or `stopped`.
    #[serde(default)]
    pub verdict: String,
    /// Each sample's end-to-end p99 (ms), in order.
    #[serde(default)]
    pub sample_p99_ms: Vec<f64>,
    /// Shared-store (Redis) commands per round trip, with `--store-stats`.
    #[serde(default)]
    pub store_cmds_per_rt: Option<f64>,
}

/// The result of `load --capacity`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CapacitySummary {
    /// The SLO expressions.
    pub slo: Vec<String>,
    /// Every step, in order.
    pub steps: Vec<CapacityStep>,
    /// Highest achieved round trips/s of a step within the SLO (the knee).
    pub knee_rps: Option<f64>,
    /// Target CPU per round trip at the knee (µs), when local.
    pub target_cpu_us_per_rt: Option<f64>,
    /// Rate to size for.
    pub target_rate: Option<f64>,
    /// Instances needed for `target_rate` at the knee: ceil(target / knee).
    pub instances_needed: Option<u64>,
    /// The SLO's limits, for the capacity charts.
    #[serde(default)]
    pub slo_limits: Vec<ThresholdLimit>,
    /// Highest offered rate within the SLO (the bracket's low end).
    #[serde(default)]
    pub knee_offered_rps: Option<f64>,
    /// Lowest offered rate that was not (the bracket's high end).
    #[serde(default)]
    pub first_bad_rps: Option<f64>,
    /// `bracketed`, `below_start` (the first step broke), `not_reached`
    /// (the highest rate held: the knee is at least that) or `stopped`.
    #[serde(default)]
    pub knee_status: String,
    /// Instances behind the target (`load --instances`), for `report capacity`.
    #[serde(default)]
    pub instances: Option<u64>,
    /// The Redis read for commands per round trip (password redacted).
    #[serde(default)]
    pub store: Option<String>,
    /// Shared-store commands per round trip at the knee.
    #[serde(default)]
    pub store_cmds_per_rt: Option<f64>,
    /// The search's longest possible duration, stated before it started (s).
    #[serde(default)]
    pub worst_case_s: f64,
    /// Why the knee cannot be told (`knee_status` `inconclusive`): a step's
    /// samples disagreed with no majority, or the generator could not
    /// offer its rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<String>,
    /// The least and most cores the host spent on other work in a sample
    /// (a spread over 0.5 cores makes the search inconclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_other_cores: Option<[f64; 2]>,
    /// What the search could not measure.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The generator's host and the target processes found running on it
    /// (`null`: from before this was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostShare>,
}

/// Whether the load generator shared its host's cores with the target.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostShare {
    /// Cores available to the generator (its CPU affinity and quota).
    pub cores: u64,
    /// Target processes on the same host, each as `PID (how it was found)`:
    /// the embedded server, a `--cpu-pid`, the listener of a 127.0.0.1
    /// target. Empty: none found (a remote target, or not ours to see).
    pub local_targets: Vec<String>,
}

impl HostShare {
    /// Whether a target process ran on the generator's host.
    pub fn shared(&self) -> bool {
        !self.local_targets.is_empty()
    }

    /// The note for a run whose target shared the generator's cores, if it did.
    pub fn shared_note(&self) -> Option<String> {
        self.shared().then(|| {
            format!(
                "the generator and the target ({}) shared one host of {} cores: the knee is what \
                 the target got of them, not a limit of the target, its store or a balancer; run \
                 the generator on another machine to measure the target alone",
                self.local_targets.join(", "),
                self.cores
            )
        })
    }
}

/// The measured window: the results cover the round trips that started in
/// it; those started before it (the users' launch, the warm-up) or after it
/// are only counted here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowSummary {
    /// Window start, Unix seconds.
    pub from_unix: f64,
    /// Window end, Unix seconds (`from_unix + duration_s`).
    pub to_unix: f64,
    /// Unmeasured time from the first round trip to the window (launch +
    /// warm-up), seconds.
    pub lead_s: f64,
    /// The warm-up part of it, seconds.
    pub warmup_s: f64,
    /// Round trips started before the window (left out).
    pub before_round_trips: u64,
    /// Round trips started after it (left out).
    pub after_round_trips: u64,
}

/// CPU time spent by a process during the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUsage {
    /// User + system CPU seconds.
    pub cpu_s: f64,
    /// Microseconds of CPU per HTTP request.
    pub us_per_request: Option<f64>,
    /// Microseconds of CPU per round trip.
    pub us_per_round_trip: Option<f64>,
}

/// `summary.json`, schema 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Always [`SCHEMA_VERSION`].
    pub schema: u32,
    /// Run id (the report folder name).
    pub run_id: String,
    /// Plan name.
    pub plan: String,
    /// Plan file.
    pub plan_file: String,
    /// MCP endpoint URL.
    pub target: String,
    /// Whether the target was the embedded reference server.
    pub embedded_target: bool,
    /// `closed` (Goose users), `open` (arrival rate), `capacity` or `merged`.
    pub model: String,
    /// Start, Unix seconds.
    pub started_unix: f64,
    /// Length of the measured window in seconds.
    pub duration_s: f64,
    /// The measured window and what was left out of it.
    #[serde(default)]
    pub window: WindowSummary,
    /// Why the run ended: `duration`, `max_requests`, `target_unreachable`,
    /// `target_died`, `interrupted`, `error`.
    pub ended_by: String,
    /// A one-line explanation when the run did not end by duration.
    pub end_note: Option<String>,
    /// Round trips by outcome.
    pub round_trips: OutcomeCounts,
    /// HTTP requests sent (all legs).
    pub requests: u64,
    /// Round trips per second.
    pub rps: f64,
    /// Requests per second.
    pub requests_per_s: f64,
    /// Unexpected round trips / all round trips (0 when none ran).
    pub error_rate: f64,
    /// The same in percent.
    #[serde(default)]
    pub error_rate_pct: f64,
    /// Unexpected outcomes by class (`state_rejected`, `capability_error`,
    /// `protocol_violation`, `http_error`, `timeout`, `transport`, …).
    pub errors: BTreeMap<String, u64>,
    /// First unexpected-outcome messages.
    pub error_samples: Vec<String>,
    /// Unexpected-outcome messages with how often each was seen (up to 20
    /// distinct ones, first seen first).
    #[serde(default)]
    pub error_groups: Vec<ErrorGroup>,
    /// HTTP status codes by leg (`none`: no response).
    #[serde(default)]
    pub status_codes: BTreeMap<String, BTreeMap<String, u64>>,
    /// Which instances answered, and the retries that crossed them (empty
    /// in reports merged from `.hlog` files, which do not keep instances).
    #[serde(default)]
    pub instances: InstancesSummary,
    /// The run's settings, by name (model, shape, duration, warm-up, …).
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// Per-leg latency (full body time), by leg name.
    pub legs: BTreeMap<String, LatencyStats>,
    /// End-to-end latency of all round trips.
    pub e2e: LatencyStats,
    /// Per scenario.
    pub scenarios: BTreeMap<String, ScenarioSummary>,
    /// The target's `Server-Timing` `state` durations, by leg (absent when the
    /// target sends none).
    pub server_state: BTreeMap<String, LatencyStats>,
    /// Percentile spectrum per leg and for `e2e`: `[percentile, ms]` pairs.
    pub spectrum: BTreeMap<String, Vec<[f64; 2]>>,
    /// One point per interval.
    pub timeline: Vec<TimelinePoint>,
    /// Threshold verdicts.
    pub thresholds: Vec<ThresholdResult>,
    /// True when every threshold held and the run ended normally.
    pub passed: bool,
    /// Capacity search results, for `--capacity` runs.
    pub capacity: Option<CapacitySummary>,
    /// The load generator's own CPU.
    pub generator_cpu: Option<CpuUsage>,
    /// The target's CPU (embedded target only).
    pub target_cpu: Option<CpuUsage>,
    /// Files of the report folder, by role (`summary_json`, `goose_json`, …).
    pub files: BTreeMap<String, String>,
    /// Why the run failed, one line each (thresholds, stalls, skipped
    /// scenarios, an abnormal end); empty when it passed.
    #[serde(default)]
    pub failures: Vec<String>,
    /// Advice read off the measurements (e.g. replies stalling in their
    /// tail: TCP_NODELAY off).
    #[serde(default)]
    pub diagnoses: Vec<String>,
    /// Per leg: the longer of headers → first body byte and first byte →
    /// end of body.
    #[serde(default)]
    pub gaps: BTreeMap<String, LatencyStats>,
    /// Per leg, where its time went, by phase: `connect` and `tls` (legs
    /// that opened their connection; `reused`: the count of those that
    /// did not), `headers` (to the response headers), `first_event` (to the
    /// first SSE event of a stream reply) and `body` (after the headers).
    /// See [`crate::load::metrics::phases`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub phases: BTreeMap<String, BTreeMap<String, LatencyStats>>,
    /// What discovery called before the run, when the plan came from it.
    #[serde(default)]
    pub discovery: Vec<String>,
    /// The verdict: `passed`, `failed`, `inconclusive` (the generator
    /// could not back it: see `generator_health`) or `interrupted`; empty in
    /// reports written before it existed (read `passed`).
    #[serde(default)]
    pub verdict: String,
    /// The load generator's health: schedule slip and its own CPU, and why
    /// the verdict is inconclusive when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_health: Option<GeneratorHealth>,
    /// Service gaps: spells with round trips in flight and none answered,
    /// at least `service_gap_floor_ms` long, longest first.
    #[serde(default)]
    pub service_gaps: Vec<ServiceGap>,
    /// From what length a quiet spell counts as a service gap (the larger
    /// of 2 s and 20× the median end-to-end latency); absent when the
    /// run's spells are not known (a merged report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_gap_floor_ms: Option<f64>,
    /// The comparison with `--baseline`, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineComparison>,
    /// The target process's health over time, when its PID was known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthSummary>,
    /// Open model: the rate the plan offered against what was started and
    /// ended, and who set the pace when it fell short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    /// Closed model: end-to-end latency corrected for coordinated omission
    /// (the round trips each stalled user would have started at its own
    /// pacing, backfilled); the end-to-end thresholds judge this figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_corrected: Option<LatencyStats>,
    /// Round trips backfilled into `e2e_corrected`.
    #[serde(default)]
    pub backfilled: u64,
    /// Cores the host spent on other processes than the generator and the
    /// measured target during the load: a baseline comparison tells a
    /// busier host from a slower target by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_other_cores: Option<f64>,
    /// How much of the window the target was frozen (absent when the
    /// spells are not known: a merged report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frozen: Option<FrozenTime>,
}

/// The time the target spent frozen: quiet spells with round trips
/// waiting and none answered, however short each (see
/// `crate::load::metrics::gaps::frozen`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FrozenTime {
    /// Frozen time over the window, percent.
    pub share_pct: f64,
    /// Frozen time, seconds.
    pub frozen_s: f64,
    /// Spells that counted.
    pub spells: usize,
    /// The longest, seconds.
    pub longest_s: f64,
    /// Time the generator itself was paused within them (left out), seconds.
    pub generator_paused_s: f64,
}

/// Whether an open-model run delivered the rate its plan offered (see
/// `crate::load::summarize::delivery`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    /// Round trips/s the schedule put in the measured window.
    pub offered_rps: f64,
    /// Round trips/s of the window that ran (any outcome).
    pub achieved_rps: f64,
    /// Achieved over offered, percent.
    pub delivered_pct: f64,
    /// Arrivals the in-flight cap held back, percent of all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_pct: Option<f64>,
    /// When short of the offered rate by more than the margin: `target`,
    /// `generator` or `unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<String>,
    /// The shortfall in words, offered against achieved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One reading of the target process (`/proc/PID`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HealthSample {
    /// Seconds since sampling began (just before the load).
    pub t_s: f64,
    /// Resident memory, bytes.
    pub rss_bytes: u64,
    /// Open file descriptors.
    pub fds: u64,
    /// Threads.
    pub threads: u64,
}

/// The target's health over the run: one sample per report interval from
/// just before the load to the end (of the cool-down, in a soak).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HealthSummary {
    /// The process sampled.
    pub pid: u32,
    /// How its PID was known: `embedded server`, `--target-pid`, or
    /// `listener of 127.0.0.1:PORT`.
    pub source: String,
    /// When sampling began, Unix seconds.
    pub started_unix: f64,
    /// The samples, in order.
    pub samples: Vec<HealthSample>,
    /// The measured window (the steady phase), seconds since sampling began.
    pub window_from_s: f64,
    /// Its end.
    pub window_to_s: f64,
    /// When the load stopped (the cool-down began), seconds since sampling began.
    pub load_end_s: f64,
    /// Whether the process still ran when the load ended (a run cut short
    /// by timeouts against a live target may be the generator's doing).
    #[serde(default)]
    pub alive_at_end: bool,
    /// The soak verdict (`load --soak`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<SoakSummary>,
}

/// What a soak found: does memory or the descriptor count grow under a
/// steady load, and does it return after the cool-down?
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SoakSummary {
    /// The steady phase (the measured window), seconds.
    pub steady_s: f64,
    /// The cool-down with no load after it, seconds.
    pub cool_down_s: f64,
    /// The least R² a growth must fit with to count.
    pub min_r2: f64,
    /// One per judged quantity (`rss`, `fds`).
    pub trends: Vec<Trend>,
    /// No quantity leaks.
    pub passed: bool,
    /// How long the target keeps what a finished round trip leaves, as it
    /// publishes it (seconds; `null`: unknown). Memory is judged after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keeps_for_s: Option<f64>,
    /// Why a quantity could not be judged (memory growth the target's
    /// retention had no time to level off): an INCONCLUSIVE verdict.
    #[serde(default)]
    pub inconclusive: Vec<String>,
}

/// One quantity's trend over the steady phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// `rss` or `fds`.
    pub metric: String,
    /// `MiB` or `descriptors`: the unit of every value below.
    pub unit: String,
    /// Before the load.
    pub baseline: f64,
    /// At the end of the steady phase.
    pub steady_end: f64,
    /// At the end of the cool-down (`null`: no cool-down).
    pub after: Option<f64>,
    /// Least-squares slope over the steady phase, per minute.
    pub slope_per_min: f64,
    /// Its coefficient of determination (`null`: the value never moved).
    pub r2: Option<f64>,
    /// Samples the fit used.
    pub samples: usize,
    /// Least-squares slope over the steady phase's second half, per minute
    /// (`null`: fewer than 3 samples there): growth that has stopped by
    /// then was a cache or a retention window filling, not a leak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_slope_per_min: Option<f64>,
    /// The slope times the steady phase: the growth the fit says.
    pub growth: f64,
    /// A slope above this (with `r2 >= min_r2`) is growth...
    pub limit_per_min: f64,
    /// ... when the growth is also above this (noise floor).
    pub floor: f64,
    /// Share of the steady-phase growth still there after the cool-down,
    /// percent (`null`: no growth, or no cool-down).
    pub retained_pct: Option<f64>,
    /// `flat`, `levels-off` (grew, then stopped: the second half's slope
    /// under half the limit), `noisy` (beyond the limit, poor fit),
    /// `returns` (grew, and gave back over half after the cool-down),
    /// `unsettled` (memory grew within the target's published retention:
    /// inconclusive) or `leaks` (fails the run).
    pub verdict: String,
}

/// Whether the load generator kept up (see
/// `crate::load::metrics::generator`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorHealth {
    /// Open model: arrivals started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<u64>,
    /// Open model: of those, late and never held by the in-flight cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_arrivals: Option<u64>,
    /// Open model: of those, held back a while by the in-flight cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_by_in_flight_cap: Option<u64>,
    /// Open model: the largest slip of an arrival the cap did not hold, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_slip_ms: Option<f64>,
    /// The generator's CPU over its threads' time, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_busy_pct: Option<f64>,
    /// Its worker threads.
    #[serde(default)]
    pub threads: usize,
    /// Why it cannot back the verdict (empty: it can).
    #[serde(default)]
    pub problems: Vec<String>,
}

/// A spell in which round trips were in flight and none was answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ServiceGap {
    /// Start, seconds from the measured window's start.
    pub from_s: f64,
    /// Length, seconds.
    pub length_s: f64,
}

impl Summary {
    /// The verdict in capitals for headings: `PASSED`, `FAILED`,
    /// `INCONCLUSIVE`, `INTERRUPTED` (from `passed` in older reports).
    pub fn verdict_word(&self) -> String {
        match self.verdict.as_str() {
            "" if self.passed => "PASSED".into(),
            "" => "FAILED".into(),
            v => v.to_ascii_uppercase(),
        }
    }
}

/// Who answered the legs of a run: per instance (the `elicitkit-instance`
/// response header, else the peer `IP:PORT`), and the retries that crossed
/// instances.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InstancesSummary {
    /// Per instance, busiest first.
    #[serde(default)]
    pub answered_by: Vec<InstanceSummary>,
    /// Measured requests no instance is known for (no reply: timeouts and
    /// failed connections; 2025-11-25 session legs, not tracked). With the
    /// instances' requests, every measured request.
    #[serde(default)]
    pub unattributed_requests: u64,
    /// `tools/call` retries (carrying `inputResponses` / `requestState`)
    /// whose leg and the leg that issued their state both have a known
    /// instance.
    #[serde(default)]
    pub retries: u64,
    /// Of those, answered by another instance than the one that issued the
    /// state.
    #[serde(default)]
    pub cross_instance_retries: u64,
    /// Retries where either side's instance is unknown (or in the `(other)`
    /// bucket past 64 distinct instances): not judged.
    #[serde(default)]
    pub retries_unattributed: u64,
    /// The `--target` URLs the round trips were spread over (round robin,
    /// each retry to the next URL); empty for one target.
    #[serde(default)]
    pub targets: Vec<String>,
}

/// One instance's share of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InstanceSummary {
    /// Its name: the `elicitkit-instance` header, else `IP:PORT`.
    pub instance: String,
    /// Requests it answered.
    pub requests: u64,
    /// Of those, failed (the leg that revealed an unexpected outcome).
    pub errors: u64,
    /// Latency of all its legs (full body time).
    pub latency: LatencyStats,
    /// Per leg name.
    #[serde(default)]
    pub legs: BTreeMap<String, InstanceLegSummary>,
}

/// One leg name on one instance.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InstanceLegSummary {
    /// Requests.
    pub requests: u64,
    /// Failed ones.
    pub errors: u64,
    /// Latency (full body time).
    pub latency: LatencyStats,
}

/// This run against a baseline run (`load --baseline`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BaselineComparison {
    /// The baseline's file.
    pub file: String,
    /// The baseline's run id.
    pub run_id: String,
    /// This invocation's runs judged against it (`--repeat`): their ids.
    #[serde(default)]
    pub now_runs: Vec<String>,
    /// How much worse a figure may get, in percent, before a change beyond
    /// chance fails.
    pub tolerance_pct: f64,
    /// Round trips/s: baseline and now (geometric means over each side's
    /// runs), change in percent.
    pub rps_before: f64,
    pub rps_now: f64,
    pub rps_delta_pct: f64,
    /// Round trips/s fell beyond chance and beyond the tolerance.
    pub rps_regressed: bool,
    /// The smallest fall in round trips/s these runs can detect, percent
    /// (`null`: too few runs to measure their noise).
    #[serde(default)]
    pub rps_detectable_pct: Option<f64>,
    /// Every leg either run has (and `end to end`).
    pub legs: Vec<BaselineDelta>,
    /// Every baseline run's id (several runs give the noise estimate).
    #[serde(default)]
    pub runs: Vec<String>,
    /// How the noise was estimated, in words.
    #[serde(default)]
    pub noise: String,
    /// Unexpected outcomes ÷ round trips: the baseline runs pooled, and now.
    #[serde(default)]
    pub error_rate_before: f64,
    #[serde(default)]
    pub error_rate_now: f64,
    /// The error rate rose beyond chance (a two-proportion z-test) and by
    /// at least 0.1 percentage point.
    #[serde(default)]
    pub error_rate_regressed: bool,
    /// What differs between the two runs' setups (plan, model, load
    /// shape, measured duration, target): numbers from different setups
    /// are not compared, and the comparison fails saying why.
    #[serde(default)]
    pub mismatches: Vec<String>,
    /// The target's CPU per round trip (µs; embedded server or
    /// `--cpu-pid`): baseline and now, change, detectable change, and
    /// whether it rose beyond chance and the tolerance (a costlier target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cpu_us_before: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cpu_us_now: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cpu_delta_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cpu_detectable_pct: Option<f64>,
    #[serde(default)]
    pub target_cpu_regressed: bool,
    /// Cores the host spent on other work, each side's mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_other_cores_before: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_other_cores_now: Option<f64>,
    /// The host ran notably more other work than for the baseline.
    #[serde(default)]
    pub host_busier: bool,
    /// Why the gate cannot tell: a headline figure (round trips/s,
    /// end-to-end p50 or p99) whose smallest detectable change is wider
    /// than the change the gate must catch ("add runs"). Non-empty with
    /// nothing regressed makes the run INCONCLUSIVE.
    #[serde(default)]
    pub inconclusive: Vec<String>,
    /// The setups match, and no figure regressed.
    pub passed: bool,
}

/// One leg in both runs (`None` where a run lacks it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BaselineDelta {
    pub leg: String,
    pub p50_ms_before: Option<f64>,
    pub p50_ms_now: Option<f64>,
    pub p99_ms_before: Option<f64>,
    pub p99_ms_now: Option<f64>,
    /// Change in percent (positive = slower).
    pub p50_delta_pct: Option<f64>,
    pub p99_delta_pct: Option<f64>,
    /// The smallest rise each can detect with these runs, percent (`null`:
    /// too few runs to measure their noise).
    #[serde(default)]
    pub p50_detectable_pct: Option<f64>,
    #[serde(default)]
    pub p99_detectable_pct: Option<f64>,
    /// Both can detect a 50 % rise: the leg is judged; otherwise listed
    /// (a regression beyond chance still fails).
    #[serde(default)]
    pub resolvable: bool,
    /// Grew beyond what is allowed.
    pub regressed: bool,
}
