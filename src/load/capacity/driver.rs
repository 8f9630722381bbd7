//! The capacity search's driver: runs each step's samples as open-model
//! phases on the run's [`Engine`], with the target's CPU and the shared
//! store's commands per round trip, and turns the [`Search`] into the
//! report's [`CapacitySummary`].

use super::search::{KneeStatus, Sample, Search, StepVerdict, judge, worst_case, worst_of};
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
    found.extend(urls.filter_map(|u| target::loopback_listener(u)));
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
    let dir = &engine.dir;
    let store = match &extras.store_stats {
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
        spec.describe(),
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
    // What ended the search early (Ctrl-C, SIGTERM, a dead target): the
    // run's end, whichever step's figures the report shows.
    let mut stop: Option<(EndReason, String)> = None;
    // Why the knee cannot be told, when it cannot.
    let mut inconclusive: Option<String> = None;
    let mut i = 0;
    let per_sample = plan.warmup + spec.step_duration + drain;
    let run_start = std::time::Instant::now();
    while let Some((rate, kind)) = search.next_rate() {
        i += 1;
        let mut taken: Vec<Taken> = Vec::new();
        let (verdict, stable) = loop {
            let j = taken.len() + 1;
            // What is left at worst: this step's remaining samples and every
            // step after it at its most samples.
            let left = per_sample
                * ((search.max_steps().saturating_sub(i as u64)) as u32 * spec.samples.max(1)
                    + spec.samples.max(1).saturating_sub(j as u32 - 1));
            let label = format!(
                "{} step {i}/≤{} @{rate:.0}/s sample {j}/{} (ETA ≤ {}, {} so far)",
                plan.name,
                search.max_steps(),
                spec.samples.max(1),
                humantime::format_duration(Duration::from_secs(left.as_secs())),
                humantime::format_duration(Duration::from_secs(run_start.elapsed().as_secs())),
            );
            let t = sample(engine, plan, &spec, rate, extras, store.as_ref(), &label).await?;
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
        let within = verdict.holds();
        let lone = samples
            .iter()
            .filter(|s| s.unjudged.is_none() && !s.within)
            .count();
        if within && lone > 0 {
            let p99s: Vec<String> = samples.iter().map(|s| format!("{:.1}", s.p99_ms)).collect();
            notes.push(format!(
                "at {rate:.0}/s one sample breached the SLO and the others held it ({} ms): a \
                 breach that does not repeat does not break a step",
                p99s.join(", ")
            ));
        }
        match verdict {
            StepVerdict::Noisy => {
                let p99s: Vec<String> = samples
                    .iter()
                    .map(|s| format!("{:.1}{}", s.p99_ms, if s.within { "" } else { " (breach)" }))
                    .collect();
                inconclusive = Some(format!(
                    "at {rate:.0}/s the samples disagreed (p99 {} ms) and no majority formed in \
                     the {} samples allowed: the host or the target is too noisy at this rate to \
                     bracket the knee; allow more samples (--samples) or quiet the host",
                    p99s.join(", "),
                    spec.samples
                ));
            }
            StepVerdict::Unjudged => {
                let why = samples
                    .iter()
                    .find_map(|s| s.unjudged.clone())
                    .unwrap_or_default();
                inconclusive = Some(format!(
                    "at {rate:.0}/s no sample could be judged: {why}; the knee is not known"
                ));
            }
            _ => {}
        }
        if verdict == StepVerdict::Unstable {
            let p99s: Vec<String> = samples.iter().map(|s| format!("{:.1}", s.p99_ms)).collect();
            notes.push(format!(
                "at {rate:.0}/s the p99 did not settle within {} % over {} samples ({} ms); \
                 every sample held the SLO, so the step counts as within",
                spec.stable_pct,
                samples.len(),
                p99s.join(", ")
            ));
        }
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
        if stopped && stop.is_none() {
            stop = taken.last().and_then(|t| t.measured.end.clone());
        }
        search.step(rate, kind, verdict);
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

/// Measures one sample at `rate`; `label` names it on the live line.
async fn sample(
    engine: &Engine,
    plan: &Plan,
    spec: &CapacitySpec,
    rate: f64,
    extras: &Extras,
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
    let cpu0 = target::target_cpu(server, &extras.cpu_pids);
    let cmd0 = match store {
        Some(s) => s.read().await,
        None => None,
    };
    let gen0 = target::own_cpu_seconds();
    let t0 = std::time::Instant::now();
    let m = engine.phase(&p, label).await?;
    let gen_cpu = gen0.zip(target::own_cpu_seconds()).map(|(a, b)| b - a);
    let wall = t0.elapsed();
    let cpu1 = target::target_cpu(server, &extras.cpu_pids);
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
