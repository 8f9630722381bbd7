//! The capacity search's driver: runs each step's samples as open-model
//! phases on the run's [`Engine`], with the target's CPU and the shared
//! store's commands per round trip, and turns the [`Search`] into the
//! report's [`CapacitySummary`].

use super::search::{
    KneeStatus, Sample, Search, StepVerdict, host_leftover, host_spread, judge, worst_case,
    worst_of,
};
use super::store_stats::StoreStats;
use crate::load::exec::engine::{EndReason, Engine, Measured, RunError};
use crate::load::exec::target;
use crate::load::metrics::generator;
use crate::load::spec::plan::{CapacitySpec, LoadShape, Plan};
use crate::load::summarize;
use crate::report::{CapacityStep, CapacitySummary, HostShare};
use std::time::Duration;

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

/// The generator's cores and the target processes running beside it: the
/// embedded server, every `--cpu-pid`, the listener of each 127.0.0.1
/// target URL.
fn host_share(engine: &Engine, plan: &Plan, extras: &Extras) -> HostShare {
    let mut found: Vec<(u32, String)> = Vec::new();
    if let Some(s) = &engine.server {
        found.push((s.pid(), "embedded server".into()));
    }
    found.extend(extras.cpu_pids.iter().map(|p| (*p, "--cpu-pid".into())));
    let urls = plan.target.url.iter().chain(&plan.target.more_urls);
    // A proxy in front of the server is named as one: its CPU is the
    // target side's work on this host, but it is not the server.
    found.extend(
        urls.filter_map(|u| target::loopback_listener(u))
            .map(|(pid, how)| match target::proxy_program(pid) {
                Some(p) => (pid, format!("{how}: {p}, a proxy")),
                None => (pid, how),
            }),
    );
    // A process found twice (the embedded server is also its port's
    // listener) is named once, by the first way it was found.
    let mut pids: Vec<u32> = Vec::new();
    let mut local_targets: Vec<String> = Vec::new();
    for (pid, how) in found {
        if !pids.contains(&pid) {
            pids.push(pid);
            local_targets.push(format!("PID {pid} ({how})"));
        }
    }
    HostShare {
        cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
        local_targets,
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
    /// The host's other work during the sample, cores.
    host_other: Option<f64>,
}

/// Runs the capacity search of `plan` on `engine`; returns the measured
/// data of the knee step (or of the last step), the capacity summary, and
/// the round trips and requests of every step.
pub async fn search(
    engine: &Engine,
    plan: &Plan,
    extras: &Extras,
) -> Result<(Measured, CapacitySummary, (u64, u64)), RunError> {
    let spec = plan.capacity.clone().unwrap_or_else(|| CapacitySpec {
        slo: plan.thresholds.clone(),
        ..CapacitySpec::default()
    });
    let store = match &extras.store_stats {
        Some(url) => {
            let u = url.clone();
            Some(
                tokio::task::spawn_blocking(move || StoreStats::open(&u))
                    .await
                    .map_err(|e| RunError::Setup(e.to_string()))?
                    .map_err(|e| RunError::Setup(e.to_string()))?,
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
        spec.describe(),
        search.max_steps(),
        spec.samples.max(1),
        humantime::format_duration(Duration::from_secs(bound.as_secs()))
    );
    let mut steps = Vec::new();
    let mut notes = Vec::new();
    // The highest good rate's last sample, its achieved rate, CPU and store cost.
    let mut knee: Option<Knee> = None;
    let mut last: Option<Measured> = None;
    // What ended the search early (Ctrl-C, SIGTERM, a dead target): the
    // run's end, whichever step's figures the report shows.
    let mut stop: Option<(EndReason, String)> = None;
    // Why the knee cannot be told, when it cannot.
    let mut inconclusive: Option<String> = None;
    let mut i = 0;
    let per_sample = plan.warmup + spec.step_duration + drain;
    let run_start = std::time::Instant::now();
    // The target's processes on this host, for its CPU and, by difference,
    // the host's other work in each sample.
    let mut pids = extras.cpu_pids.clone();
    let urls = plan.target.url.iter().chain(&plan.target.more_urls);
    pids.extend(
        urls.filter_map(|u| target::loopback_listener(u))
            .map(|(p, _)| p),
    );
    pids.sort_unstable();
    pids.dedup();
    let mut ctx = StepCtx {
        engine,
        plan,
        spec: &spec,
        store: store.as_ref(),
        pids,
        per_sample,
        run_start,
        max_steps: search.max_steps(),
        totals: (0, 0),
        host_other: Vec::new(),
    };
    while let Some((rate, kind)) = search.next_rate() {
        i += 1;
        let mut run = ctx.step(i, rate, kind.as_str()).await?;
        let verdict = run.verdict;
        match verdict {
            StepVerdict::Noisy => {
                inconclusive = Some(noisy_reason(rate, &run.samples, spec.samples))
            }
            StepVerdict::Unjudged => {
                let why = run
                    .samples
                    .iter()
                    .find_map(|s| s.unjudged.clone())
                    .unwrap_or_default();
                inconclusive = Some(format!(
                    "at {rate:.0}/s no sample could be judged: {why}; the knee is not known"
                ));
            }
            _ => {}
        }
        notes.extend(run.notes(rate, &spec));
        let full: u64 = run
            .taken
            .iter()
            .map(|t| summarize::budget_refusals(&t.measured.set.samples))
            .sum();
        if full > 0 && !verdict.holds() {
            notes.push(format!(
                "at {rate:.0}/s the target refused {full} round trips as its store was full: its \
                 memory budget (--store-memory-budget), not its CPU, set the knee there"
            ));
        }
        steps.push(run.row(rate, kind.as_str()));
        if verdict == StepVerdict::Stopped && stop.is_none() {
            stop = run.taken.last().and_then(|t| t.measured.end.clone());
        }
        search.step(rate, kind, verdict);
        let within = verdict.holds();
        // The knee's figures are a sample that held (a lone breach of a
        // step that held is noted, not shown as the knee).
        let m = if within {
            run.take_within()
        } else {
            run.taken.pop().map(|t| t.measured)
        };
        if within && knee.as_ref().is_none_or(|k| rate > k.offered) {
            if let Some(m) = m {
                knee = Some(Knee {
                    offered: rate,
                    achieved: run.worst.achieved_rps,
                    measured: m,
                    cpu_rt: run.cpu_rt,
                    store_rt: run.store_rt,
                });
            }
        } else if let Some(m) = m {
            last = Some(m);
        }
    }
    // A knee that repeats: the highest rate that held is measured again at
    // the end. On a host whose spare CPU drifts (other work coming and
    // going), a rate that held minutes ago may not now; then the knee is
    // the host's of the moment, not the target's.
    let settled = matches!(
        search.status(),
        Some(KneeStatus::Bracketed | KneeStatus::NotReached)
    );
    if settled
        && inconclusive.is_none()
        && let Some(k) = &knee
    {
        i += 1;
        let rate = k.offered;
        let run = ctx.step(i, rate, "confirm").await?;
        steps.push(run.row(rate, "confirm"));
        match run.verdict {
            StepVerdict::Stopped => {
                stop = run.taken.last().and_then(|t| t.measured.end.clone());
            }
            v if v.holds() => notes.push(format!(
                "the knee repeated: {rate:.0}/s held the SLO again at the end of the search"
            )),
            v => {
                inconclusive = Some(format!(
                    "the knee did not repeat: {rate:.0}/s held the SLO during the search and {} \
                     when measured again at its end (p99 {} ms): what this host gives the target \
                     moved during the search; quiet the host, or run the generator elsewhere",
                    if v == StepVerdict::Noisy {
                        "was noisy"
                    } else {
                        "broke it"
                    },
                    run.samples
                        .iter()
                        .map(|s| format!("{:.1}", s.p99_ms))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
        }
    }
    // The host's other work over the samples: a spread this wide moves the
    // knee by itself.
    let spread = host_spread(&ctx.host_other, spec.host_noise_cores);
    if inconclusive.is_none()
        && stop.is_none()
        && let Some((lo, hi)) = spread
    {
        inconclusive = Some(format!(
            "the host's other work varied from {lo:.2} to {hi:.2} cores over the search's \
             samples (more than {} cores): the spare CPU the target got moved with it, and so \
             would the knee; quiet the host, or run the generator elsewhere",
            spec.host_noise_cores
        ));
    }
    // What the host's other work left the run at its busiest.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    if inconclusive.is_none()
        && stop.is_none()
        && let Some((busiest, left)) = host_leftover(&ctx.host_other, cores, spec.host_spare_cores)
    {
        inconclusive = Some(format!(
            "the host's other work took up to {busiest:.2} of its {cores} cores, leaving the \
             generator and the target {left:.2} (less than host_spare = {} cores): the knee \
             would be what was left over, not the target's; quiet the host, or run the \
             generator elsewhere",
            spec.host_spare_cores
        ));
    }
    let totals = ctx.totals;
    let status = search.status().unwrap_or(KneeStatus::Stopped);
    let (good, bad) = search.bracket();
    let knee_rps = knee.as_ref().map(|k| k.achieved);
    let host = host_share(engine, plan, extras);
    notes.extend(host.shared_note());
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
        instances: extras.instances,
        store: store.as_ref().map(|s| s.shown.clone()),
        store_cmds_per_rt: knee.as_ref().and_then(|k| k.store_rt),
        worst_case_s: bound.as_secs_f64(),
        inconclusive,
        host_other_cores: (!ctx.host_other.is_empty()).then(|| {
            let lo = ctx.host_other.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = ctx.host_other.iter().copied().fold(0.0, f64::max);
            [lo, hi]
        }),
        notes,
        host: Some(host),
    };
    let mut measured = match (knee, last) {
        (Some(k), _) => k.measured,
        (None, Some(m)) => m,
        (None, None) => Measured {
            set: crate::load::metrics::recorder::Recorder::new(plan.interval, &engine.comments)
                .map_err(|e| RunError::Setup(e.to_string()))?
                .finish()
                .0,
            hlog: Vec::new(),
            hlog_error: None,
            end: None,
            slip: None,
        },
    };
    if stop.is_some() {
        measured.end = stop;
    }
    Ok((measured, summary, totals))
}

/// What every step of a search shares.
struct StepCtx<'a> {
    engine: &'a Engine,
    plan: &'a Plan,
    spec: &'a CapacitySpec,
    store: Option<&'a StoreStats>,
    /// The target's processes on this host (for its CPU).
    pids: Vec<u32>,
    per_sample: Duration,
    run_start: std::time::Instant,
    max_steps: u64,
    /// Round trips and requests of every sample.
    totals: (u64, u64),
    /// Every sample's other work on the host, cores.
    host_other: Vec<f64>,
}

/// One step: its samples, the verdict, and the costs.
struct StepRun {
    verdict: StepVerdict,
    stable: Option<bool>,
    taken: Vec<Taken>,
    samples: Vec<Sample>,
    worst: Sample,
    cpu_rt: Option<f64>,
    store_rt: Option<f64>,
}

impl StepCtx<'_> {
    /// Samples step `i` at `rate` until [`judge`] decides, writing each
    /// sample's `.hlog`.
    async fn step(&mut self, i: usize, rate: f64, kind: &str) -> Result<StepRun, RunError> {
        let spec = self.spec;
        let mut taken: Vec<Taken> = Vec::new();
        let (verdict, stable) = loop {
            let j = taken.len() + 1;
            // What is left at worst: this step's remaining samples and every
            // step after it at its most samples.
            let left = self.per_sample
                * ((self.max_steps.saturating_sub(i as u64)) as u32 * spec.samples.max(1)
                    + spec.samples.max(1).saturating_sub(j as u32 - 1));
            let label = format!(
                "{} step {i}/≤{}{} @{rate:.0}/s sample {j}/{} (ETA ≤ {}, {} so far)",
                self.plan.name,
                self.max_steps,
                if kind == "confirm" { " (confirm)" } else { "" },
                spec.samples.max(1),
                humantime::format_duration(Duration::from_secs(left.as_secs())),
                humantime::format_duration(Duration::from_secs(self.run_start.elapsed().as_secs())),
            );
            let t = sample(
                self.engine,
                self.plan,
                spec,
                rate,
                &self.pids,
                self.store,
                &label,
            )
            .await?;
            let path = self
                .engine
                .dir
                .join(format!("capacity-{i:02}-{rate:.0}-{j}.hlog"));
            std::fs::write(&path, &t.measured.hlog).map_err(|source| RunError::Io {
                path: path.display().to_string(),
                source,
            })?;
            self.totals.0 += t.round_trips;
            self.totals.1 += t.requests;
            if let Some(h) = t.host_other {
                self.host_other.push(h);
            }
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
        Ok(StepRun {
            verdict,
            stable,
            worst: worst_of(&samples),
            samples,
            taken,
            cpu_rt,
            store_rt,
        })
    }
}

impl StepRun {
    /// The step's row in the table.
    fn row(&self, rate: f64, kind: &str) -> CapacityStep {
        let w = &self.worst;
        CapacityStep {
            offered_rps: rate,
            achieved_rps: w.achieved_rps,
            p50_ms: w.p50_ms,
            p99_ms: w.p99_ms,
            error_rate: w.error_rate,
            within_slo: self.verdict.holds(),
            target_cpu_us_per_rt: self.cpu_rt,
            kind: kind.into(),
            samples: self.taken.len() as u32,
            stable: self.stable,
            verdict: self.verdict.as_str().into(),
            sample_p99_ms: self.samples.iter().map(|s| s.p99_ms).collect(),
            store_cmds_per_rt: self.store_rt,
        }
    }

    /// What the step's samples say beside its verdict.
    fn notes(&self, rate: f64, spec: &CapacitySpec) -> Vec<String> {
        let mut out = Vec::new();
        let p99s: Vec<String> = self
            .samples
            .iter()
            .map(|s| format!("{:.1}", s.p99_ms))
            .collect();
        let lone = self
            .samples
            .iter()
            .filter(|s| s.unjudged.is_none() && !s.within)
            .count();
        if self.verdict.holds() && lone > 0 {
            out.push(format!(
                "at {rate:.0}/s one sample breached the SLO and the others held it ({} ms): a \
                 breach that does not repeat does not break a step",
                p99s.join(", ")
            ));
        }
        if self.verdict == StepVerdict::Unstable {
            out.push(format!(
                "at {rate:.0}/s the p99 did not settle within {} % over {} samples ({} ms); \
                 every sample held the SLO, so the step counts as within",
                spec.stable_pct,
                self.samples.len(),
                p99s.join(", ")
            ));
        }
        out
    }

    /// The measured data of the step's last sample that held the SLO.
    fn take_within(&mut self) -> Option<Measured> {
        let i = self.taken.iter().rposition(|t| t.sample.within)?;
        Some(self.taken.swap_remove(i).measured)
    }
}

/// Why a step whose samples disagreed cannot bracket the knee.
fn noisy_reason(rate: f64, samples: &[Sample], allowed: u32) -> String {
    let p99s: Vec<String> = samples
        .iter()
        .map(|s| format!("{:.1}{}", s.p99_ms, if s.within { "" } else { " (breach)" }))
        .collect();
    format!(
        "at {rate:.0}/s the samples disagreed (p99 {} ms) and no majority formed in the {allowed} \
         samples allowed: the host or the target is too noisy at this rate to bracket the knee; \
         allow more samples (--samples) or quiet the host",
        p99s.join(", ")
    )
}

/// Measures one sample at `rate`; `label` names it on the live line;
/// `pids` are the target's processes on this host.
async fn sample(
    engine: &Engine,
    plan: &Plan,
    spec: &CapacitySpec,
    rate: f64,
    pids: &[u32],
    store: Option<&StoreStats>,
    label: &str,
) -> Result<Taken, RunError> {
    let mut p = plan.clone();
    p.shape = LoadShape::Open { rate };
    p.duration = spec.step_duration;
    // A step is judged on its SLO; the plan's abort_on_fail does not end it.
    for t in &mut p.thresholds {
        t.abort = None;
    }
    let server = engine.server.as_ref();
    let cpu0 = target::target_cpu(server, pids);
    let host0 = target::host_busy_seconds();
    let cmd0 = match store {
        Some(s) => s.read().await,
        None => None,
    };
    let gen0 = target::own_cpu_seconds();
    let t0 = std::time::Instant::now();
    let m = engine.phase(&p, label).await?;
    let gen_cpu = gen0.zip(target::own_cpu_seconds()).map(|(a, b)| b - a);
    let wall = t0.elapsed();
    let cpu1 = target::target_cpu(server, pids);
    let host1 = target::host_busy_seconds();
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
    let stopped = m
        .end
        .as_ref()
        .is_some_and(|(by, _)| *by != EndReason::MaxRequests);
    // Could the generator offer the rate? Its own shortfall tells nothing
    // of the target; a rate the target held back is a breach.
    let threads = tokio::runtime::Handle::current().metrics().num_workers();
    let cpu = gen_cpu.map(|cpu_s| generator::CpuShare {
        cpu_s,
        wall_s: wall.as_secs_f64(),
        threads,
    });
    let cap = p
        .in_flight_lowered_from
        .map(|planned| generator::InFlightCap {
            planned,
            lowered: p.max_in_flight,
        });
    let problems = generator::problems(m.slip, cpu, cap);
    let mut timeline = p.timeline();
    timeline.measured = timeline.measured.min(m.set.elapsed);
    let delivery = summarize::delivery::judge(&summarize::delivery::Facts {
        planned: summarize::delivery::planned_in_window(&timeline, p.segment),
        ran: rts
            + m.set
                .outcome_counts()
                .iter()
                .filter(|((_, l), _)| l == "skipped")
                .map(|(_, n)| n)
                .sum::<u64>(),
        window: timeline.measured,
        slip: m.slip,
        generator_busy: cpu.map(|c| c.busy()),
        generator_unwell: !problems.is_empty(),
        max_in_flight: p.max_in_flight,
    });
    let short_by_target = delivery.limited_by.as_deref() == Some("target");
    let unjudged = if stopped {
        None
    } else if let Some(p) = problems.first() {
        Some(p.clone())
    } else if delivery.limited_by.is_some() && !short_by_target {
        delivery.reason.clone()
    } else {
        None
    };
    let sample = Sample {
        p50_ms: pct(50.0),
        p99_ms: pct(99.0),
        achieved_rps: rts as f64 / secs,
        error_rate: if rts > 0 {
            errors as f64 / rts as f64
        } else {
            0.0
        },
        within: m.end.is_none() && verdicts.iter().all(|v| v.passed) && !short_by_target,
        stopped,
        unjudged,
    };
    let cpu_s = cpu0.zip(cpu1).map(|(a, b)| b - a);
    // The host's other work meanwhile: its busy time less ours and the
    // target's, in cores.
    let host_other = host0.zip(host1).zip(gen_cpu).map(|((a, b), g)| {
        ((b - a - g - cpu_s.unwrap_or(0.0)) / wall.as_secs_f64().max(1e-9)).max(0.0)
    });
    Ok(Taken {
        sample,
        host_other,
        round_trips: rts,
        requests: m.set.requests(),
        cpu_s,
        // One INFO of ours lands between the two reads.
        store_cmds: cmd0
            .zip(cmd1)
            .map(|(a, b)| b.saturating_sub(a).saturating_sub(1)),
        measured: m,
    })
}
