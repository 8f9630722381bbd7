//! The capacity search behind `elicitkit load --capacity`: find the highest
//! open-model rate one deployment sustains within an SLO (the knee).
//!
//! 1. **Coarse steps**: `start_rate`, `start_rate + step`, … up to
//!    `max_rate`, until a step breaks the SLO.
//! 2. **Bisection**: between the last good and the first bad rate, halve the
//!    bracket until it is narrower than `resolution_pct` of the bad rate, or
//!    after `bisections` halvings ([`Search`]).
//! 3. **Stability**: each step is sampled up to `samples` times; a step that
//!    holds the SLO is only called within it once two consecutive samples'
//!    p99 agree within `stable_pct` (or `stable_floor`, whichever is wider).
//!    A sample that breaks the SLO breaks the step at once (no second chance);
//!    a step whose p99 never settles is `unstable` and counts as bad
//!    ([`judge`]). A verdict is never friendlier than the worst sample: the
//!    step's p50/p99/error rate are its worst sample's, its achieved rate the
//!    lowest.
//!
//! The whole search is bounded: [`worst_case`] (printed before it starts)
//! is the time if every step took every sample and the rate never broke.
//! With `--store-stats redis://…`, each sample reads Redis `INFO stats`
//! `total_commands_processed` before and after, giving the shared store's
//! commands per round trip.

use super::plan::{CapacitySpec, LoadShape, Plan};
use super::run::{Measured, Options, RunError, phase};
use super::summarize;
use super::target::{self, EmbeddedServer};
use crate::report::{CapacityStep, CapacitySummary};
use std::path::Path;
use std::time::Duration;

/// Default number of halvings after the coarse steps.
pub const DEFAULT_BISECTIONS: u32 = 4;
/// Default bracket width (percent of the first bad rate) that ends the bisection.
pub const DEFAULT_RESOLUTION_PCT: f64 = 5.0;
/// Default most samples per step (1: one sample, stability not checked).
pub const DEFAULT_SAMPLES: u32 = 3;
/// Default: two consecutive p99s within this many percent are stable.
pub const DEFAULT_STABLE_PCT: f64 = 20.0;
/// Default absolute tolerance between two p99s (below it, noise).
pub const DEFAULT_STABLE_FLOOR: Duration = Duration::from_millis(1);

/// Which phase of the search a step belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// `start_rate + k × step`.
    Coarse,
    /// A midpoint between the last good and the first bad rate.
    Bisect,
}

impl StepKind {
    /// `coarse` or `bisect`.
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Coarse => "coarse",
            StepKind::Bisect => "bisect",
        }
    }
}

/// How a search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KneeStatus {
    /// The knee lies between a good and a bad measured rate.
    Bracketed,
    /// The first step already broke the SLO: the knee is below `start_rate`.
    BelowStart,
    /// `max_rate` held: the knee is at least the highest good rate.
    NotReached,
    /// The run stopped (Ctrl-C, a dead or stalled target) before the end.
    Stopped,
}

impl KneeStatus {
    /// The name written in `summary.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            KneeStatus::Bracketed => "bracketed",
            KneeStatus::BelowStart => "below_start",
            KneeStatus::NotReached => "not_reached",
            KneeStatus::Stopped => "stopped",
        }
    }
}

/// The rate schedule of a search: coarse steps, then bisection.
#[derive(Debug, Clone)]
pub struct Search {
    start: f64,
    step: f64,
    max: f64,
    resolution: f64,
    max_bisections: u32,
    next_coarse: f64,
    good: Option<f64>,
    bad: Option<f64>,
    bisections: u32,
    done: Option<KneeStatus>,
}

impl Search {
    /// A search over `spec`'s rates.
    pub fn new(spec: &CapacitySpec) -> Search {
        Search {
            start: spec.start_rate,
            step: spec.step,
            max: spec.max_rate,
            resolution: spec.resolution_pct / 100.0,
            max_bisections: spec.bisections,
            next_coarse: spec.start_rate,
            good: None,
            bad: None,
            bisections: 0,
            done: None,
        }
    }

    /// The next rate to measure, or `None` when the search is over.
    pub fn next_rate(&mut self) -> Option<(f64, StepKind)> {
        if self.done.is_some() {
            return None;
        }
        match (self.good, self.bad) {
            (_, None) => {
                if self.next_coarse > self.max + 1e-9 {
                    self.done = Some(KneeStatus::NotReached);
                    return None;
                }
                Some((self.next_coarse, StepKind::Coarse))
            }
            (None, Some(_)) => {
                self.done = Some(KneeStatus::BelowStart);
                None
            }
            (Some(g), Some(b)) => {
                if self.bisections >= self.max_bisections || (b - g) < self.resolution * b {
                    self.done = Some(KneeStatus::Bracketed);
                    return None;
                }
                Some(((g + b) / 2.0, StepKind::Bisect))
            }
        }
    }

    /// Records the verdict of the step at `rate` (`within`: it held the
    /// SLO; `stopped`: the run ended during it).
    pub fn record(&mut self, rate: f64, kind: StepKind, within: bool, stopped: bool) {
        if stopped {
            self.done = Some(KneeStatus::Stopped);
            return;
        }
        match kind {
            StepKind::Coarse => {
                if within {
                    self.good = Some(rate);
                    self.next_coarse = rate + self.step;
                } else {
                    self.bad = Some(rate);
                }
            }
            StepKind::Bisect => {
                self.bisections += 1;
                if within {
                    self.good = Some(rate);
                } else {
                    self.bad = Some(rate);
                }
            }
        }
    }

    /// The highest rate that held and the lowest that broke.
    pub fn bracket(&self) -> (Option<f64>, Option<f64>) {
        (self.good, self.bad)
    }

    /// How it ended (`None` while it runs).
    pub fn status(&self) -> Option<KneeStatus> {
        self.done
    }

    /// Most steps the search can take: every coarse step, then every halving.
    pub fn max_steps(&self) -> u64 {
        let coarse = ((self.max - self.start) / self.step + 1e-9)
            .floor()
            .max(0.0) as u64
            + 1;
        coarse + u64::from(self.max_bisections)
    }
}

/// One sample of a step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// End-to-end p50 (ms).
    pub p50_ms: f64,
    /// End-to-end p99 (ms).
    pub p99_ms: f64,
    /// Achieved round trips/s.
    pub achieved_rps: f64,
    /// Unexpected / all round trips.
    pub error_rate: f64,
    /// Every SLO threshold held.
    pub within: bool,
    /// The run ended during this sample (not by its duration).
    pub stopped: bool,
}

/// The verdict of a step once its samples are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepVerdict {
    /// Every sample held the SLO and the p99 settled (or one sample was asked for).
    Within,
    /// A sample broke the SLO.
    Breach,
    /// Every sample held, but the p99 never settled: not called within.
    Unstable,
    /// The run stopped during the step.
    Stopped,
}

impl StepVerdict {
    /// The name in the step table.
    pub fn as_str(self) -> &'static str {
        match self {
            StepVerdict::Within => "within",
            StepVerdict::Breach => "breach",
            StepVerdict::Unstable => "unstable",
            StepVerdict::Stopped => "stopped",
        }
    }
}

/// When two p99s agree: within `pct` percent of the larger, or within
/// `floor_ms`, whichever is wider.
pub fn consistent(a: f64, b: f64, pct: f64, floor_ms: f64) -> bool {
    (a - b).abs() <= (a.max(b) * pct / 100.0).max(floor_ms)
}

/// The stability rule: `None` asks for another sample; otherwise the
/// step's verdict and whether it settled (`None`: not checked, one sample
/// allowed).
pub fn judge(
    samples: &[Sample],
    max_samples: u32,
    pct: f64,
    floor_ms: f64,
) -> Option<(StepVerdict, Option<bool>)> {
    let last = samples.last()?;
    let settled = |s: &[Sample]| {
        s.len() >= 2 && consistent(s[s.len() - 2].p99_ms, last.p99_ms, pct, floor_ms)
    };
    if last.stopped {
        return Some((StepVerdict::Stopped, None));
    }
    if samples.iter().any(|s| !s.within) {
        let stable = (samples.len() >= 2).then(|| settled(samples));
        return Some((StepVerdict::Breach, stable));
    }
    if max_samples <= 1 {
        return Some((StepVerdict::Within, None));
    }
    if settled(samples) {
        return Some((StepVerdict::Within, Some(true)));
    }
    if samples.len() as u32 >= max_samples {
        return Some((StepVerdict::Unstable, Some(false)));
    }
    None
}

/// The step's figures from its samples, conservatively: the worst p50, p99
/// and error rate, the lowest achieved rate.
pub fn worst_of(samples: &[Sample]) -> Sample {
    let max = |f: fn(&Sample) -> f64| samples.iter().map(f).fold(0.0, f64::max);
    Sample {
        p50_ms: max(|s| s.p50_ms),
        p99_ms: max(|s| s.p99_ms),
        achieved_rps: samples
            .iter()
            .map(|s| s.achieved_rps)
            .reduce(f64::min)
            .unwrap_or(0.0),
        error_rate: max(|s| s.error_rate),
        within: samples.iter().all(|s| s.within),
        stopped: samples.iter().any(|s| s.stopped),
    }
}

/// The search's longest possible duration: every step (coarse and halving)
/// taking every sample, each `warm-up + step + drain`.
pub fn worst_case(spec: &CapacitySpec, warmup: Duration, drain: Duration) -> Duration {
    let steps = Search::new(spec).max_steps();
    let per = warmup + spec.step_duration + drain;
    per * (steps * u64::from(spec.samples.max(1))) as u32
}

/// The search's settings in one line (the report's settings table).
pub fn describe(spec: &CapacitySpec) -> String {
    format!(
        "{}/s to {}/s in steps of {}/s, {} each; then up to {} halvings to {} % of the rate; \
         up to {} samples a step, stable when consecutive p99s agree within {} % or {}",
        spec.start_rate,
        spec.max_rate,
        spec.step,
        humantime::format_duration(spec.step_duration),
        spec.bisections,
        spec.resolution_pct,
        spec.samples,
        spec.stable_pct,
        humantime::format_duration(spec.stable_floor)
    )
}

/// What `load --capacity` takes besides the plan.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// Redis to read `INFO stats` from (`--store-stats`).
    pub store_stats: Option<String>,
    /// How many instances the target runs (`--instances`), for `report capacity`.
    pub instances: Option<u64>,
    /// Local processes whose CPU counts as the target's (`--cpu-pid`).
    pub cpu_pids: Vec<u32>,
}

/// CPU seconds of the target: the embedded server and every `--cpu-pid`
/// (`None` when there is neither, or one cannot be read).
fn target_cpu(server: &Option<EmbeddedServer>, pids: &[u32]) -> Option<f64> {
    let mut total = match server {
        Some(s) => Some(s.cpu_seconds()?),
        None => None,
    };
    for &p in pids {
        total = Some(total.unwrap_or(0.0) + target::process_cpu_seconds(p)?);
    }
    total
}

/// The shared store's command counter (Redis `total_commands_processed`).
struct StoreStats {
    client: ::redis::Client,
    shown: String,
}

impl StoreStats {
    fn open(url: &str) -> Result<StoreStats, String> {
        let client = ::redis::Client::open(url).map_err(|e| format!("--store-stats: {e}"))?;
        let shown = redact(url);
        let s = StoreStats { client, shown };
        s.read_blocking()
            .map_err(|e| format!("--store-stats {}: {e}", s.shown))?;
        Ok(s)
    }

    fn read_blocking(&self) -> Result<u64, String> {
        let mut c = self
            .client
            .get_connection_with_timeout(Duration::from_secs(2))
            .map_err(|e| e.to_string())?;
        let info: String = ::redis::cmd("INFO")
            .arg("stats")
            .query(&mut c)
            .map_err(|e| e.to_string())?;
        parse_commands(&info).ok_or_else(|| "INFO stats has no total_commands_processed".into())
    }

    async fn read(&self) -> Option<u64> {
        let client = self.client.clone();
        let me = StoreStats {
            client,
            shown: self.shown.clone(),
        };
        tokio::task::spawn_blocking(move || me.read_blocking().ok())
            .await
            .ok()
            .flatten()
    }
}

/// `total_commands_processed` from Redis `INFO stats` text.
pub fn parse_commands(info: &str) -> Option<u64> {
    info.lines()
        .find_map(|l| l.trim().strip_prefix("total_commands_processed:"))
        .and_then(|v| v.trim().parse().ok())
}

/// A Redis URL without its password.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            u.to_string()
        }
        Err(_) => "(unparsable URL)".into(),
    }
}

/// The highest good step so far: its rate, achieved rate, last sample and costs.
struct Knee {
    offered: f64,
    achieved: f64,
    measured: Measured,
    cpu_rt: Option<f64>,
    store_rt: Option<f64>,
}

/// One measured sample with what it cost.
struct Taken {
    sample: Sample,
    measured: Measured,
    round_trips: u64,
    requests: u64,
    cpu_s: Option<f64>,
    store_cmds: Option<u64>,
}

/// Runs the capacity search against `mcp_url`; returns the measured data
/// of the knee step (or of the last step), the capacity summary, and the
/// round trips and requests of every step.
#[allow(clippy::too_many_arguments)]
pub(super) async fn search(
    plan: &Plan,
    mcp_url: &str,
    http: &reqwest::Client,
    dir: &Path,
    server: &Option<EmbeddedServer>,
    opts: &Options,
    comments: &[String],
    stream: Option<&super::stream::IntervalStream>,
) -> Result<(Measured, CapacitySummary, (u64, u64)), RunError> {
    let spec = plan.capacity.clone().unwrap_or_else(|| CapacitySpec {
        slo: plan.thresholds.clone(),
        ..CapacitySpec::default()
    });
    let store = match &opts.capacity_extras.store_stats {
        Some(url) => {
            let u = url.clone();
            Some(
                tokio::task::spawn_blocking(move || StoreStats::open(&u))
                    .await
                    .map_err(|e| RunError::Setup(e.to_string()))?
                    .map_err(RunError::Setup)?,
            )
        }
        None => None,
    };
    let drain = plan.timeout.min(Duration::from_millis(1500));
    let bound = worst_case(&spec, plan.warmup, drain);
    let mut search = Search::new(&spec);
    eprintln!(
        "elicitkit: capacity search: {}; at most {} steps × {} samples, worst case {} (it ends at \
         the first breach once bisected)",
        describe(&spec),
        search.max_steps(),
        spec.samples.max(1),
        humantime::format_duration(Duration::from_secs(bound.as_secs()))
    );
    let mut steps = Vec::new();
    let mut totals = (0u64, 0u64);
    let mut notes = Vec::new();
    // The highest good rate's last sample, its achieved rate, CPU and store cost.
    let mut knee: Option<Knee> = None;
    let mut last: Option<Measured> = None;
    let mut i = 0;
    while let Some((rate, kind)) = search.next_rate() {
        i += 1;
        let mut taken: Vec<Taken> = Vec::new();
        let (verdict, stable) = loop {
            let j = taken.len() + 1;
            let t = sample(
                plan,
                &spec,
                rate,
                mcp_url,
                http,
                dir,
                server,
                opts,
                comments,
                stream,
                store.as_ref(),
            )
            .await?;
            let path = dir.join(format!("capacity-{i:02}-{rate:.0}-{j}.hlog"));
            std::fs::write(&path, &t.measured.hlog).map_err(|source| RunError::Io {
                path: path.display().to_string(),
                source,
            })?;
            totals.0 += t.round_trips;
            totals.1 += t.requests;
            taken.push(t);
            let samples: Vec<Sample> = taken.iter().map(|t| t.sample.clone()).collect();
            if let Some(v) = judge(
                &samples,
                spec.samples,
                spec.stable_pct,
                spec.stable_floor.as_secs_f64() * 1000.0,
            ) {
                break v;
            }
        };
        let samples: Vec<Sample> = taken.iter().map(|t| t.sample.clone()).collect();
        let worst = worst_of(&samples);
        let rts: u64 = taken.iter().map(|t| t.round_trips).sum();
        let cpu_rt = taken
            .iter()
            .map(|t| t.cpu_s)
            .sum::<Option<f64>>()
            .filter(|_| rts > 0)
            .map(|c| c * 1e6 / rts as f64);
        let store_rt = taken
            .iter()
            .map(|t| t.store_cmds)
            .sum::<Option<u64>>()
            .filter(|_| rts > 0)
            .map(|c| c as f64 / rts as f64);
        if store.is_some() && store_rt.is_none() && notes.is_empty() {
            notes.push(
                "a Redis INFO read failed during a step: its commands per round trip are missing"
                    .into(),
            );
        }
        let within = verdict == StepVerdict::Within;
        steps.push(CapacityStep {
            offered_rps: rate,
            achieved_rps: worst.achieved_rps,
            p50_ms: worst.p50_ms,
            p99_ms: worst.p99_ms,
            error_rate: worst.error_rate,
            within_slo: within,
            target_cpu_us_per_rt: cpu_rt,
            kind: kind.as_str().into(),
            samples: taken.len() as u32,
            stable,
            verdict: verdict.as_str().into(),
            sample_p99_ms: samples.iter().map(|s| s.p99_ms).collect(),
            store_cmds_per_rt: store_rt,
        });
        let stopped = verdict == StepVerdict::Stopped;
        search.record(rate, kind, within, stopped);
        let m = taken.pop().map(|t| t.measured);
        if within && knee.as_ref().is_none_or(|k| rate > k.offered) {
            if let Some(m) = m {
                knee = Some(Knee {
                    offered: rate,
                    achieved: worst.achieved_rps,
                    measured: m,
                    cpu_rt,
                    store_rt,
                });
            }
        } else if let Some(m) = m {
            last = Some(m);
        }
    }
    let status = search.status().unwrap_or(KneeStatus::Stopped);
    let (good, bad) = search.bracket();
    let knee_rps = knee.as_ref().map(|k| k.achieved);
    let summary = CapacitySummary {
        slo: spec.slo.iter().map(|t| t.expr.clone()).collect(),
        slo_limits: spec.slo.iter().filter_map(summarize::chart_limit).collect(),
        steps,
        knee_rps,
        target_cpu_us_per_rt: knee.as_ref().and_then(|k| k.cpu_rt),
        target_rate: spec.target_rate,
        instances_needed: knee_rps
            .zip(spec.target_rate)
            .filter(|(k, _)| *k > 0.0)
            .map(|(k, t)| (t / k).ceil() as u64),
        knee_offered_rps: good,
        first_bad_rps: bad,
        knee_status: status.as_str().into(),
        instances: opts.capacity_extras.instances,
        store: store.as_ref().map(|s| s.shown.clone()),
        store_cmds_per_rt: knee.as_ref().and_then(|k| k.store_rt),
        worst_case_s: bound.as_secs_f64(),
        notes,
    };
    let measured = match (knee, last) {
        (Some(k), _) => k.measured,
        (None, Some(m)) => m,
        (None, None) => Measured {
            set: super::metrics::Recorder::new(plan.interval, comments)
                .map_err(|e| RunError::Setup(e.to_string()))?
                .finish()
                .0,
            hlog: Vec::new(),
            hlog_error: None,
            end: None,
        },
    };
    Ok((measured, summary, totals))
}

/// Measures one sample at `rate`.
#[allow(clippy::too_many_arguments)]
async fn sample(
    plan: &Plan,
    spec: &CapacitySpec,
    rate: f64,
    mcp_url: &str,
    http: &reqwest::Client,
    dir: &Path,
    server: &Option<EmbeddedServer>,
    opts: &Options,
    comments: &[String],
    stream: Option<&super::stream::IntervalStream>,
    store: Option<&StoreStats>,
) -> Result<Taken, RunError> {
    let mut p = plan.clone();
    p.shape = LoadShape::Open { rate };
    p.duration = spec.step_duration;
    let cpu0 = target_cpu(server, &opts.capacity_extras.cpu_pids);
    let cmd0 = match store {
        Some(s) => s.read().await,
        None => None,
    };
    let label = format!("{} @{rate:.0}/s", plan.name);
    let m = phase(
        &p,
        mcp_url,
        http,
        dir,
        server.as_ref().map(EmbeddedServer::pid),
        opts.progress,
        &label,
        comments,
        stream,
    )
    .await?;
    let cpu1 = target_cpu(server, &opts.capacity_extras.cpu_pids);
    let cmd1 = match store {
        Some(s) => s.read().await,
        None => None,
    };
    let rts = m.set.round_trips();
    let secs = m.set.elapsed.as_secs_f64().max(1e-9);
    let e2e = m.set.e2e_all();
    let pct = |q: f64| {
        if e2e.is_empty() {
            0.0
        } else {
            e2e.value_at_percentile(q) as f64 / 1000.0
        }
    };
    let verdicts = summarize::evaluate_plain(&spec.slo, &m.set);
    let errors = m.set.timeline.iter().map(|t| t.errors).sum::<u64>();
    // The request cap ends a sample early but its figures stand.
    let stopped = m.end.as_ref().is_some_and(|(by, _)| by != "max_requests");
    let sample = Sample {
        p50_ms: pct(50.0),
        p99_ms: pct(99.0),
        achieved_rps: rts as f64 / secs,
        error_rate: if rts > 0 {
            errors as f64 / rts as f64
        } else {
            0.0
        },
        within: m.end.is_none() && verdicts.iter().all(|v| v.passed),
        stopped,
    };
    Ok(Taken {
        sample,
        round_trips: rts,
        requests: m.set.requests(),
        cpu_s: cpu0.zip(cpu1).map(|(a, b)| b - a),
        // One INFO of ours lands between the two reads.
        store_cmds: cmd0
            .zip(cmd1)
            .map(|(a, b)| b.saturating_sub(a).saturating_sub(1)),
        measured: m,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(start: f64, step: f64, max: f64, bisections: u32, res: f64) -> CapacitySpec {
        let mut s = CapacitySpec::with_defaults(start, step, max, Vec::new());
        s.bisections = bisections;
        s.resolution_pct = res;
        s
    }

    /// Runs a search against a target whose knee is exactly `knee`.
    fn run_against(s: &CapacitySpec, knee: f64) -> (Vec<(f64, StepKind)>, Search) {
        let mut search = Search::new(s);
        let mut tried = Vec::new();
        while let Some((rate, kind)) = search.next_rate() {
            tried.push((rate, kind));
            search.record(rate, kind, rate <= knee, false);
            assert!(tried.len() < 1000, "the search must end");
        }
        (tried, search)
    }

    #[test]
    fn bisection_narrows_the_bracket_around_the_knee() {
        let s = spec(100.0, 100.0, 1000.0, 10, 5.0);
        let (tried, search) = run_against(&s, 437.0);
        let coarse: Vec<f64> = tried
            .iter()
            .filter(|t| t.1 == StepKind::Coarse)
            .map(|t| t.0)
            .collect();
        assert_eq!(coarse, [100.0, 200.0, 300.0, 400.0, 500.0]);
        let bisect: Vec<f64> = tried
            .iter()
            .filter(|t| t.1 == StepKind::Bisect)
            .map(|t| t.0)
            .collect();
        // 450 bad, 425 good, 437.5 bad: bracket 425..437.5 = 12.5 < 5 % of 437.5.
        assert_eq!(bisect, [450.0, 425.0, 437.5]);
        let (g, b) = search.bracket();
        assert_eq!((g, b), (Some(425.0), Some(437.5)));
        assert!(g.unwrap() <= 437.0 && 437.0 < b.unwrap());
        assert_eq!(search.status(), Some(KneeStatus::Bracketed));
    }

    #[test]
    fn bisection_stops_after_k_halvings() {
        let s = spec(100.0, 100.0, 1000.0, 2, 0.01);
        let (tried, search) = run_against(&s, 437.0);
        assert_eq!(tried.iter().filter(|t| t.1 == StepKind::Bisect).count(), 2);
        assert_eq!(search.bracket(), (Some(425.0), Some(450.0)));
        assert_eq!(search.max_steps(), 10 + 2);
    }

    #[test]
    fn a_knee_below_the_start_or_above_the_max_says_so() {
        let s = spec(100.0, 100.0, 300.0, 4, 5.0);
        let (tried, search) = run_against(&s, 50.0);
        assert_eq!(tried, [(100.0, StepKind::Coarse)]);
        assert_eq!(search.status(), Some(KneeStatus::BelowStart));
        assert_eq!(search.bracket(), (None, Some(100.0)));
        let (tried, search) = run_against(&s, 1e9);
        assert_eq!(tried.len(), 3);
        assert_eq!(search.status(), Some(KneeStatus::NotReached));
        assert_eq!(search.bracket(), (Some(300.0), None));
    }

    #[test]
    fn a_stopped_step_ends_the_search() {
        let s = spec(100.0, 100.0, 1000.0, 4, 5.0);
        let mut search = Search::new(&s);
        let (r, k) = search.next_rate().unwrap();
        search.record(r, k, true, false);
        let (r, k) = search.next_rate().unwrap();
        search.record(r, k, false, true);
        assert_eq!(search.next_rate(), None);
        assert_eq!(search.status(), Some(KneeStatus::Stopped));
    }

    fn ok(p99: f64) -> Sample {
        Sample {
            p99_ms: p99,
            within: true,
            ..Default::default()
        }
    }

    #[test]
    fn a_step_is_within_only_once_its_p99_settles() {
        // One sample is never enough when repeats are allowed.
        assert_eq!(judge(&[ok(10.0)], 3, 20.0, 1.0), None);
        // 10 → 11: within 20 %.
        assert_eq!(
            judge(&[ok(10.0), ok(11.0)], 3, 20.0, 1.0),
            Some((StepVerdict::Within, Some(true)))
        );
        // 10 → 20: not settled, one more; 20 → 21 settles.
        assert_eq!(judge(&[ok(10.0), ok(20.0)], 3, 20.0, 1.0), None);
        assert_eq!(
            judge(&[ok(10.0), ok(20.0), ok(21.0)], 3, 20.0, 1.0),
            Some((StepVerdict::Within, Some(true)))
        );
        // Never settles within 3 samples: unstable, not within.
        assert_eq!(
            judge(&[ok(10.0), ok(20.0), ok(40.0)], 3, 20.0, 1.0),
            Some((StepVerdict::Unstable, Some(false)))
        );
        // Below the floor, differences are noise: 0.2 ms vs 0.9 ms is stable.
        assert_eq!(
            judge(&[ok(0.2), ok(0.9)], 3, 20.0, 1.0),
            Some((StepVerdict::Within, Some(true)))
        );
        // One sample allowed: within, stability not checked.
        assert_eq!(
            judge(&[ok(10.0)], 1, 20.0, 1.0),
            Some((StepVerdict::Within, None))
        );
    }

    #[test]
    fn a_breaching_sample_breaks_the_step_whatever_the_others_say() {
        let bad = Sample {
            p99_ms: 90.0,
            within: false,
            ..Default::default()
        };
        assert_eq!(
            judge(std::slice::from_ref(&bad), 3, 20.0, 1.0),
            Some((StepVerdict::Breach, None))
        );
        // Good, then bad: the step is bad (not its best sample).
        assert_eq!(
            judge(&[ok(10.0), bad.clone()], 3, 20.0, 1.0).map(|v| v.0),
            Some(StepVerdict::Breach)
        );
        let stopped = Sample {
            stopped: true,
            ..ok(1.0)
        };
        assert_eq!(
            judge(&[stopped], 3, 20.0, 1.0).map(|v| v.0),
            Some(StepVerdict::Stopped)
        );
    }

    #[test]
    fn a_step_reports_its_worst_sample() {
        let a = Sample {
            p50_ms: 1.0,
            p99_ms: 5.0,
            achieved_rps: 98.0,
            error_rate: 0.0,
            within: true,
            stopped: false,
        };
        let b = Sample {
            p50_ms: 2.0,
            p99_ms: 4.0,
            achieved_rps: 99.0,
            error_rate: 0.01,
            within: true,
            stopped: false,
        };
        let w = worst_of(&[a, b]);
        assert_eq!(
            (w.p50_ms, w.p99_ms, w.achieved_rps, w.error_rate),
            (2.0, 5.0, 98.0, 0.01)
        );
    }

    #[test]
    fn the_worst_case_counts_every_step_and_sample() {
        let mut s = spec(100.0, 100.0, 500.0, 3, 5.0);
        s.samples = 2;
        s.step_duration = Duration::from_secs(2);
        // 5 coarse + 3 halvings, 2 samples each, (1 + 2 + 0.5) s each.
        assert_eq!(
            worst_case(&s, Duration::from_secs(1), Duration::from_millis(500)),
            Duration::from_secs(56)
        );
    }

    #[test]
    fn the_shipped_capacity_plan_sets_every_knob() {
        let p = super::super::plan::parse_plan(
            include_str!("../../loadtests/capacity.toml"),
            "capacity.toml",
            "capacity",
        )
        .unwrap();
        let c = p.capacity.unwrap();
        assert_eq!((c.bisections, c.samples), (4, 3));
        assert_eq!((c.resolution_pct, c.stable_pct), (5.0, 20.0));
        assert_eq!(c.stable_floor, Duration::from_millis(1));
    }

    #[test]
    fn redis_info_and_urls() {
        let info = "# Stats\r\ntotal_connections_received:3\r\ntotal_commands_processed:12345\r\n";
        assert_eq!(parse_commands(info), Some(12345));
        assert_eq!(parse_commands("# Stats\r\n"), None);
        assert_eq!(
            redact("redis://:hunter2@127.0.0.1:6379/0"),
            "redis://:***@127.0.0.1:6379/0"
        );
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
    }
}
