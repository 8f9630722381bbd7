//! One `elicitkit load` run from start to end: report folder, target
//! (embedded child server or `--target`), reachability check, the chosen
//! model (closed on Goose, open, or a capacity search), the live progress
//! line, stop conditions, and the report files.
//!
//! Before anything is measured, a preflight asks the target, as an MCP
//! client would, whether it speaks the plan's generations and lists the
//! plan's tools; a target that does not is a usage error with a one-line
//! reason (no report full of errors). With several targets, every one is
//! asked (discovery, when the plan comes from it, asks only the first).
//!
//! The run is three steps: [`prepare`] (target, preflight, report folder,
//! the [`Engine`]), [`measure`] (the plan's phase, or a capacity search, and
//! CPU on both sides), [`report`] (summary, baseline, files, verdict). The
//! stop conditions are the engine's ([`super::exec::engine`]). Every run
//! that got past the preflight writes its report, whatever ended it.
//!
//! Verdicts ([`Verdict`]): `Passed`; `Failed` (a threshold failed, the target
//! stalled or died mid-run); `Interrupted` (Ctrl-C; the report says so);
//! `Unreachable` (the target never answered: nothing was measured, so it is
//! a usage error, exit 2).

use super::capacity::driver::{self as capacity, Extras};
use super::exec::cool_down::{self, CutShort};
use super::exec::engine::{EndReason, Engine, Measured, io_err, preflight, wait_until};
use super::exec::target::{self, EmbeddedServer, TargetError};
use super::metrics::stream::IntervalStream;
use super::metrics::{health, hlog};
use super::spec::plan::Plan;
use super::summarize::{self, RunInfo};
use crate::report::{self, CapacitySummary, CpuUsage, HealthSummary, Summary};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub use super::exec::engine::RunError;

/// What a run needs besides the plan.
#[derive(Debug, Clone)]
pub struct Options {
    /// The plan (CLI overrides already applied).
    pub plan: Plan,
    /// Folder that receives `<run-id>/`.
    pub out_root: PathBuf,
    /// File that receives the interval stream (`--out ndjson=FILE`).
    pub ndjson: Option<PathBuf>,
    /// Goose's own reports in the run folder (`--out goose`, closed model).
    pub goose_reports: bool,
    /// Extra copy of `summary.json` (`--summary-export FILE`).
    pub summary_export: Option<PathBuf>,
    /// The baseline runs to compare with (`--baseline`): their summaries,
    /// the paths as given, and the tolerance in percent.
    pub baseline: Option<(Vec<Summary>, String, f64)>,
    /// Run id (default `<UTC time>-<plan>`).
    pub run_id: Option<String>,
    /// Extra `serve` arguments for the embedded server (e.g. `--flaw X`).
    pub serve_args: Vec<String>,
    /// The `elicitkit` executable for the embedded server (default: this one).
    pub exe: Option<PathBuf>,
    /// Run a capacity search instead of the plan's load shape.
    pub capacity: bool,
    /// The capacity search's store counter and instance label.
    pub capacity_extras: Extras,
    /// Show the live progress line.
    pub progress: bool,
    /// What discovery called, when the plan came from it (for the report).
    pub discovery: Vec<String>,
    /// Synchronized start (`--start-at`): wait until then, after the
    /// preflight, before the first round trip ([`crate::load::spec::segment`]).
    pub start_at: Option<SystemTime>,
    /// The whole run's users before `--segment` took this share (closed
    /// model), for the report.
    pub whole_users: Option<u64>,
    /// The target's process (`--target-pid`), for its health over time.
    pub target_pid: Option<u32>,
    /// The earlier runs of this invocation (`--repeat`): judged with this
    /// one against the baseline.
    pub repeated: Vec<Summary>,
}

/// The embedded server's extra arguments: the user's `--serve-arg`s, and
/// a `--max-connections` that holds every connection the plan may open
/// ([`Plan::max_connections`]) when that is above the server's default
/// and the user set none. Otherwise the server would refuse the
/// generator's own connections at its default cap, and the run would fail
/// on a limit nobody chose.
fn embedded_serve_args(plan: &Plan, user: &[String]) -> Vec<String> {
    let mut args = user.to_vec();
    let given = |flag: &str| {
        user.iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
    };
    let wanted = plan.max_connections();
    let default = crate::server::config::ServerConfig::default().max_connections;
    let cap = if given("--max-connections") {
        None
    } else {
        Some(wanted.max(default))
    };
    if let Some(c) = cap.filter(|c| *c > default) {
        args.push(format!("--max-connections={c}"));
    }
    // The load is the embedded server's only client: one principal (every
    // user as --principal TOKEN, or a pool smaller than the users) may hold
    // every connection the plan opens, where the server's fair share per
    // principal would refuse it some.
    if let Some(c) = cap.filter(|_| !given("--max-connections-per-principal")) {
        args.push(format!("--max-connections-per-principal={c}"));
    }
    args
}

/// How a run ended, for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every threshold held.
    Passed,
    /// A threshold failed or the run ended abnormally (exit 1).
    Failed,
    /// Stopped by Ctrl-C (its own exit code); the report is marked so.
    Interrupted,
    /// The target could not be reached at all (exit 2).
    Unreachable,
    /// The generator could not back the verdict (it fell behind its
    /// schedule or saturated its CPU) and nothing failed that it could not
    /// have caused (exit 3); the reasons are in `generator_health`.
    Inconclusive,
}

impl Verdict {
    /// The word `summary.json` (`verdict`) and the terminal use.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Passed => "passed",
            Verdict::Failed => "failed",
            Verdict::Interrupted => "interrupted",
            Verdict::Unreachable => "unreachable",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The summary as written to `summary.json`.
    pub summary: Summary,
    /// The report folder.
    pub dir: PathBuf,
    /// The verdict.
    pub verdict: Verdict,
}

/// `YYYYMMDDTHHMMSSZ` for a Unix time.
pub fn utc_stamp(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    // Civil-from-days (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

/// Creates the run's report folder under `root` (a fresh name for `id`).
fn fresh_dir(root: &Path, id: &str) -> Result<(PathBuf, String), RunError> {
    let (dir, name) = crate::report::fresh_run_dir(root, id);
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    Ok((dir, name))
}

/// The run's settings as the report lists them.
fn settings(plan: &Plan, capacity: bool) -> std::collections::BTreeMap<String, String> {
    let d = |d: Duration| humantime::format_duration(d).to_string();
    let mut m = std::collections::BTreeMap::new();
    let mut put = |k: &str, v: String| {
        m.insert(k.to_owned(), v);
    };
    put("model", plan.shape.model().as_str().into());
    put("load shape", plan.shape.describe());
    put("duration (measured)", d(plan.duration));
    put("warm-up", d(plan.warmup));
    put("timeout", d(plan.timeout));
    put("stall", d(plan.stall));
    put("interval", d(plan.interval));
    put("max requests", plan.max_requests.to_string());
    put("max in flight", plan.max_in_flight.to_string());
    let t = &plan.target;
    put(
        "principals",
        t.principals.describe(&plan.shape, plan.max_in_flight),
    );
    put("seed", plan.seed.to_string());
    put("target workers", plan.target.workers.to_string());
    put(
        "generator threads",
        tokio::runtime::Handle::try_current()
            .map(|h| h.metrics().num_workers().to_string())
            .unwrap_or_else(|_| "-".into()),
    );
    put(
        "scenarios",
        plan.scenarios
            .iter()
            .map(|s| format!("{} ({} ×{})", s.name, s.kind, s.weight))
            .collect::<Vec<_>>()
            .join(", "),
    );
    if capacity && let Some(c) = &plan.capacity {
        put("capacity search", c.describe());
    }
    if let Some(s) = &plan.soak {
        put("soak", s.describe());
    }
    m
}

/// Adds the segment and start-at lines to a run's settings. `whole_users`
/// is the whole run's user count (closed model), for the users' range.
fn segment_settings(
    plan: &Plan,
    whole_users: Option<u64>,
    start_at: Option<SystemTime>,
    late: Option<Duration>,
    out: &mut std::collections::BTreeMap<String, String>,
) {
    if !plan.segment.is_whole() {
        out.insert("segment".into(), plan.segment.to_string());
        out.insert("segment share".into(), plan.segment_share());
        if let Some(u) = whole_users {
            let r = plan.segment.range(u);
            out.insert(
                "segment users".into(),
                format!("users {} to {} of the whole run's {u}", r.start, r.end - 1),
            );
        }
    }
    if let Some(t) = start_at {
        let late = late
            .filter(|l| *l > Duration::from_millis(100))
            .map(|l| format!(" (started {:.1} s late)", l.as_secs_f64()))
            .unwrap_or_default();
        out.insert(
            "start at".into(),
            format!("{}{late}", humantime::format_rfc3339_millis(t)),
        );
    }
}

fn cpu(cpu_s: f64, requests: u64, round_trips: u64) -> CpuUsage {
    CpuUsage {
        cpu_s,
        us_per_request: (requests > 0).then(|| cpu_s * 1e6 / requests as f64),
        us_per_round_trip: (round_trips > 0).then(|| cpu_s * 1e6 / round_trips as f64),
    }
}

/// A run prepared: the engine over a reachable target, and what the
/// report needs from the preparation.
struct Prepared {
    engine: Engine,
    info: RunInfo,
    /// How late the synchronized start began.
    late: Option<Duration>,
    /// The target process whose health is sampled, and how it was found.
    health: Option<(u32, String)>,
    /// A soak's target: how long it keeps what a round trip leaves, when
    /// it says.
    keeps_for: Option<Duration>,
}

/// What a run measured, with the CPU both sides spent.
struct MeasuredRun {
    measured: Measured,
    /// The capacity search's summary and every step's (round trips, requests).
    capacity: Option<(CapacitySummary, (u64, u64))>,
    gen_cpu: Option<f64>,
    tgt_cpu: Option<f64>,
    /// CPU seconds the whole host was busy meanwhile.
    host_busy: Option<f64>,
    /// Wall time of the load (the cool-down left out).
    wall: Duration,
    /// The target's health samples, with their source and when the load
    /// ended (seconds since sampling began).
    health: Option<SampledHealth>,
}

/// What the health sampler took over a run.
struct SampledHealth {
    pid: u32,
    source: String,
    started_unix: f64,
    samples: Vec<crate::report::HealthSample>,
    load_end_s: f64,
    /// The cool-down actually waited, seconds.
    cool_down_s: f64,
    /// Whether the process still ran when the load ended (judged then: an
    /// embedded server is stopped before the report is written).
    alive_at_end: bool,
    /// How long the target keeps what a round trip leaves, when it says.
    keeps_for: Option<Duration>,
}

/// Runs a whole `elicitkit load` invocation and writes its report.
pub async fn run(opts: Options) -> Result<RunReport, RunError> {
    let prepared = prepare(&opts).await?;
    let mut measured = measure(&opts, &prepared.engine, prepared.health.clone()).await?;
    if let Some(h) = &mut measured.health {
        h.keeps_for = prepared.keeps_for;
    }
    if let Some(s) = prepared.engine.server {
        s.stop();
    }
    report(
        &opts,
        prepared.info,
        prepared.engine.mcp_url,
        prepared.engine.dir,
        prepared.late,
        measured,
    )
}

/// Starts (or names) the target, asks it whether it serves the plan,
/// creates the report folder and waits for a synchronized start.
async fn prepare(opts: &Options) -> Result<Prepared, RunError> {
    let plan = &opts.plan;
    let started_unix = hlog::unix_seconds(SystemTime::now());
    let id = opts
        .run_id
        .clone()
        .unwrap_or_else(|| format!("{}-{}", utc_stamp(started_unix as u64), plan.name));
    let (mcp_url, server) = match &plan.target.url {
        Some(u) => (u.clone(), None),
        None => {
            let exe = match &opts.exe {
                Some(e) => e.clone(),
                None => std::env::current_exe().map_err(|e| TargetError::Spawn {
                    exe: "current executable".into(),
                    why: e.to_string(),
                })?,
            };
            let args = embedded_serve_args(plan, &opts.serve_args);
            let s = EmbeddedServer::start(exe, plan.target.workers, &args)?;
            (s.mcp_url(), Some(s))
        }
    };
    let health = health_target(opts, server.as_ref())?;
    let mut markers = preflight(plan, &mcp_url)
        .await
        .map_err(RunError::Preflight)?;
    // Every other target must serve the same plan (its reasons name it);
    // a marker goes only where every target takes it.
    for url in &plan.target.more_urls {
        let theirs = preflight(plan, url).await.map_err(RunError::Preflight)?;
        for (m, t) in markers.iter_mut().zip(theirs) {
            if *m != t {
                *m = None;
            }
        }
    }
    let stream = match &opts.ndjson {
        Some(path) => Some(
            IntervalStream::create(path)
                .map_err(|e| RunError::Setup(format!("--out ndjson={}: {e}", path.display())))?,
        ),
        None => None,
    };
    let (dir, run_id) = fresh_dir(&opts.out_root, &id)?;
    let http = Engine::http_client(plan)?;
    let mut info = RunInfo {
        run_id: run_id.clone(),
        plan: plan.name.clone(),
        plan_file: plan.source.clone(),
        target: mcp_url.clone(),
        embedded_target: server.is_some(),
        model: if opts.capacity {
            "capacity".into()
        } else {
            plan.shape.model().as_str().into()
        },
        started_unix,
        warmup_s: plan.warmup.as_secs_f64(),
        ended_by: EndReason::Duration,
        end_note: None,
    };
    let mut comments = vec![
        format!("elicitkit load run {run_id}"),
        format!("plan {} ({})", plan.name, plan.source),
        format!("target {mcp_url}"),
    ];
    if !plan.segment.is_whole() || opts.start_at.is_some() {
        comments.push(plan.segment.hlog_comment(opts.start_at));
    }
    let late = match opts.start_at {
        Some(at) => Some(wait_until(at, opts.progress, &plan.name).await),
        None => None,
    };
    if opts.start_at.is_some() {
        info.started_unix = hlog::unix_seconds(SystemTime::now());
    }
    let engine = Engine {
        http,
        mcp_url,
        dir,
        server,
        progress: opts.progress,
        goose_reports: opts.goose_reports,
        comments,
        stream,
        markers,
    };
    let keeps_for = match plan.soak {
        Some(soak) => soak_retention(&engine, plan, soak.steady).await,
        None => None,
    };
    Ok(Prepared {
        engine,
        info,
        late,
        health,
        keeps_for,
    })
}

/// Asks a soak's target how long it keeps what a finished round trip
/// leaves (the reference server publishes it in `/stats`) and says before
/// the soak what that means for its memory verdict.
async fn soak_retention(engine: &Engine, plan: &Plan, steady: Duration) -> Option<Duration> {
    let d = |d: Duration| humantime::format_duration(Duration::from_secs(d.as_secs())).to_string();
    let keeps = target::keeps_for(&engine.http, &engine.mcp_url, &plan.target.token).await;
    match keeps {
        Some(k) if summarize::soak::needed(k) > steady => eprintln!(
            "elicitkit: soak: the target keeps what a finished round trip leaves for {} (its \
             state TTL and retention, from /stats): memory grows for that long, leak or not, so \
             a {} soak cannot judge it (INCONCLUSIVE if it grows); soak at least {}, or run the \
             target with a shorter --state-ttl and --retention",
            d(k),
            d(steady),
            d(summarize::soak::needed(k))
        ),
        Some(k) => eprintln!(
            "elicitkit: soak: the target keeps what a finished round trip leaves for {}; memory \
             is judged on the {} of steady load after that",
            d(k),
            d(steady.saturating_sub(k))
        ),
        None => eprintln!(
            "elicitkit: soak: retention unknown (the target does not publish how long it keeps \
             finished requests): memory that grows until its sessions, caches and records fill is \
             not a leak, and is judged as one here; soak at least twice as long as the target \
             keeps them"
        ),
    }
    keeps
}

/// Whose health is sampled: the embedded server, `--target-pid`, or the
/// process listening on a loopback target's port (one target only). A soak
/// without one is a usage error.
fn health_target(
    opts: &Options,
    server: Option<&EmbeddedServer>,
) -> Result<Option<(u32, String)>, RunError> {
    let plan = &opts.plan;
    let mut proxy: Option<String> = None;
    let found = if let Some(pid) = opts.target_pid {
        if !health::readable(pid) {
            return Err(RunError::Setup(format!(
                "--target-pid {pid}: no such process, or its /proc entry cannot be read"
            )));
        }
        Some((pid, "--target-pid".to_owned()))
    } else if let Some(s) = server {
        Some((s.pid(), "embedded server".to_owned()))
    } else {
        let listener = plan
            .target
            .url
            .as_deref()
            .filter(|_| plan.target.more_urls.is_empty())
            .and_then(target::loopback_listener)
            .filter(|(p, _)| health::readable(*p));
        // A proxy's memory and descriptors are not the server's: never
        // shown as the target's.
        match listener {
            Some((pid, how)) => match target::proxy_program(pid) {
                Some(program) => {
                    proxy = Some(format!(
                        "the {how} is {program} (PID {pid}), a proxy in front of the server, \
                         not the server"
                    ));
                    None
                }
                None => Some((pid, how)),
            },
            None => None,
        }
    };
    if let Some(p) = &proxy {
        eprintln!(
            "elicitkit: {p}: its memory and descriptors are not the target's, so target \
             health is not watched; give --target-pid PID (the server's process) to watch it"
        );
    }
    if found.is_none() && plan.soak.is_some() {
        let why = proxy.map(|p| format!(" ({p})")).unwrap_or_default();
        return Err(RunError::Setup(format!(
            "--soak needs the target's process to watch its memory and descriptors{why}: give \
             --target-pid PID (or run against the embedded server, or a 127.0.0.1 target \
             this user can inspect)"
        )));
    }
    Ok(found)
}

/// Runs the plan's phase (or the capacity search) and, in a soak, the
/// cool-down; reads the CPU both sides spent (the target's: the embedded
/// server and every `--cpu-pid`) and samples the target's health throughout.
async fn measure(
    opts: &Options,
    engine: &Engine,
    health: Option<(u32, String)>,
) -> Result<MeasuredRun, RunError> {
    let plan = &opts.plan;
    // From here on a report exists to write: Ctrl-C and SIGTERM end the
    // run and keep it.
    crate::interrupt::listen();
    let server_cpu = || target::target_cpu(engine.server.as_ref(), &opts.capacity_extras.cpu_pids);
    let gen0 = target::own_cpu_seconds();
    let tgt0 = server_cpu();
    let host0 = target::host_busy_seconds();
    let t0 = std::time::Instant::now();
    let sampler = health
        .as_ref()
        .map(|(pid, _)| health::Sampler::start(*pid, plan.interval));
    let (mut measured, capacity) = if opts.capacity {
        let (m, c, totals) = capacity::search(engine, plan, &opts.capacity_extras).await?;
        (m, Some((c, totals)))
    } else {
        (engine.phase(plan, &plan.name).await?, None)
    };
    // CPU and wall time of the load itself; a soak's cool-down follows.
    let wall = t0.elapsed();
    let tgt_cpu = tgt0.zip(server_cpu()).map(|(a, b)| b - a);
    let gen_cpu = gen0.zip(target::own_cpu_seconds()).map(|(a, b)| b - a);
    let host_busy = host0.zip(target::host_busy_seconds()).map(|(a, b)| b - a);
    let health = match (sampler, health) {
        (Some(sampler), Some((pid, source))) => {
            let load_end_s = sampler.elapsed_s();
            let alive_at_end = health::alive(pid);
            let ran_its_course = measured.end.as_ref().is_none_or(|(by, _)| by.is_normal());
            if let Some(soak) = plan.soak.filter(|_| ran_its_course) {
                match cool_down::wait(soak.cool_down, pid, opts.progress, &plan.name).await {
                    Ok(()) => {}
                    Err(CutShort::Interrupted(sig)) => {
                        measured.end = Some((
                            EndReason::Interrupted,
                            format!("{} in the cool-down", sig.note()),
                        ))
                    }
                    Err(CutShort::TargetGone) => {
                        measured.end = Some((
                            EndReason::TargetDied,
                            "the target exited in the cool-down".into(),
                        ))
                    }
                }
            }
            let cool_down_s = sampler.elapsed_s() - load_end_s;
            Some(SampledHealth {
                pid,
                source,
                started_unix: sampler.started_unix(),
                samples: sampler.finish().await,
                load_end_s,
                cool_down_s,
                alive_at_end,
                keeps_for: None,
            })
        }
        _ => None,
    };
    Ok(MeasuredRun {
        measured,
        capacity,
        gen_cpu,
        tgt_cpu,
        host_busy,
        wall,
        health,
    })
}

/// The health section of the summary and, in a soak, its verdict: growth
/// fails the run through its failures.
fn health_summary(plan: &Plan, h: SampledHealth, summary: &mut Summary) {
    let rel = |unix: f64| (unix - h.started_unix).max(0.0);
    let (window_from_s, window_to_s) = (rel(summary.window.from_unix), rel(summary.window.to_unix));
    let soak = plan.soak.map(|spec| {
        let phases = summarize::soak::Phases {
            steady_from_s: window_from_s,
            steady_to_s: window_to_s,
            cool_down_s: h.cool_down_s,
            keeps_for_s: h.keeps_for.map(|k| k.as_secs_f64()),
        };
        let (verdict, failures) = summarize::soak::judge(&h.samples, phases, &spec.limits);
        summary
            .diagnoses
            .extend(summarize::soak::describe(&verdict));
        summary.passed = summary.passed && failures.is_empty();
        summary.failures.extend(failures);
        verdict
    });
    summary.health = Some(HealthSummary {
        pid: h.pid,
        source: h.source,
        started_unix: h.started_unix,
        samples: h.samples,
        window_from_s,
        window_to_s,
        load_end_s: h.load_end_s,
        alive_at_end: h.alive_at_end,
        soak,
    });
}

/// Builds the summary (thresholds, CPU, capacity, baseline), writes every
/// report file and decides the verdict.
fn report(
    opts: &Options,
    mut info: RunInfo,
    mcp_url: String,
    dir: PathBuf,
    late: Option<Duration>,
    run: MeasuredRun,
) -> Result<RunReport, RunError> {
    let plan = &opts.plan;
    let MeasuredRun {
        measured,
        capacity,
        gen_cpu,
        tgt_cpu,
        host_busy,
        wall,
        health,
    } = run;
    if let Some((by, note)) = &measured.end {
        info.ended_by = *by;
        info.end_note = Some(note.clone());
    }
    let mut summary = summarize::build(
        &measured.set,
        &info,
        &plan.scenarios,
        &plan.all_thresholds(),
    );
    summary.discovery = opts.discovery.clone();
    if !plan.target.more_urls.is_empty() {
        summary.instances.targets = std::iter::once(mcp_url)
            .chain(plan.target.more_urls.iter().cloned())
            .collect();
    }
    summary.settings = settings(plan, opts.capacity);
    segment_settings(
        plan,
        opts.whole_users,
        opts.start_at,
        late,
        &mut summary.settings,
    );
    // CPU covers the whole run: in a capacity search, every step's requests.
    let w = &measured.set.window;
    let (rts, reqs) = capacity.as_ref().map_or(
        (
            summary.round_trips.total + w.before.0 + w.after.0,
            summary.requests + w.before.1 + w.after.1,
        ),
        |(_, t)| *t,
    );
    summary.generator_cpu = gen_cpu.map(|c| cpu(c, reqs, rts));
    summary.target_cpu = tgt_cpu.map(|c| cpu(c, reqs, rts));
    // What else kept the host busy: its busy time less ours and the
    // target's (when measured here), in cores.
    summary.host_other_cores = host_busy
        .zip(gen_cpu)
        .map(|(h, g)| ((h - g - tgt_cpu.unwrap_or(0.0)) / wall.as_secs_f64().max(1e-9)).max(0.0));
    let capacity_run = capacity.as_ref().map(|_| ());
    if let Some((c, _)) = capacity {
        summary.passed = summary.passed && c.knee_rps.is_some();
        summary.capacity = Some(c);
    }
    if let Some((before, file, tolerance)) = &opts.baseline {
        let now: Vec<&Summary> = opts.repeated.iter().chain([&summary]).collect();
        let c = summarize::baseline::compare(&now, before, file, *tolerance);
        let failed = summarize::baseline::failures(&c);
        summary.passed = summary.passed && c.passed;
        summary.failures.extend(failed);
        summary.baseline = Some(c);
    }
    // Whether the target's process (when one is watched) ran when the load ended.
    let target_alive = health.as_ref().is_some_and(|h| h.alive_at_end);
    if let Some(h) = health {
        health_summary(plan, h, &mut summary);
    }
    let mut health = generator_health(&measured, gen_cpu, wall, plan);
    if capacity_run.is_none() {
        summary.delivery = delivery(&measured, plan, &summary, &health);
    }
    if let Some(d) = &summary.delivery
        && let Some(reason) = &d.reason
    {
        if d.limited_by.as_deref() == Some(summarize::delivery::Limit::Target.as_str()) {
            summary.passed = false;
            summary
                .failures
                .push(format!("the offered rate was not delivered: {reason}"));
        } else if health.problems.is_empty() {
            health.problems.push(reason.clone());
        }
    }
    // A capacity search that could not bracket the knee says why, and is
    // inconclusive whatever the knee of its last good step.
    let knee_unknown = summary
        .capacity
        .as_ref()
        .and_then(|c| c.inconclusive.clone());
    if let Some(why) = &knee_unknown {
        health.problems.push(format!("capacity search: {why}"));
    }
    // A baseline gate too noisy to catch the change it must catch, that
    // caught nothing, cannot pass the run ("add runs"); nor can a soak
    // whose memory grew within the target's retention (it had no chance
    // to level off).
    let mut gate_unknown: Vec<String> = summary
        .baseline
        .iter()
        .flat_map(|b| &b.inconclusive)
        .map(|w| format!("baseline gate: {w}"))
        .collect();
    if let Some(s) = summary.health.as_ref().and_then(|h| h.soak.as_ref()) {
        gate_unknown.extend(s.inconclusive.iter().cloned());
    }
    let verdict = match verdict(
        &info,
        &summary,
        plan,
        !health.problems.is_empty(),
        target_alive,
    ) {
        Verdict::Interrupted => Verdict::Interrupted,
        _ if knee_unknown.is_some() => Verdict::Inconclusive,
        Verdict::Passed if !gate_unknown.is_empty() => {
            health.problems.extend(gate_unknown);
            Verdict::Inconclusive
        }
        v => v,
    };
    summary.verdict = verdict.as_str().into();
    summary.passed = summary.passed && verdict != Verdict::Inconclusive;
    summary.generator_health = Some(health);
    let hlog_path = dir.join("run.hlog");
    std::fs::write(&hlog_path, &measured.hlog).map_err(io_err(&hlog_path))?;
    if let Some(e) = &measured.hlog_error {
        summary.error_samples.push(format!("hlog: {e}"));
    }
    write_report(&dir, &mut summary, Some("run.hlog"))?;
    if let Some(path) = &opts.summary_export {
        let json =
            serde_json::to_string_pretty(&summary).map_err(|e| RunError::Setup(e.to_string()))?;
        std::fs::write(path, json + "\n").map_err(io_err(path))?;
    }
    Ok(RunReport {
        summary,
        dir,
        verdict,
    })
}

/// The open model's delivery: the arrivals its measured window planned
/// against those started and ended ([`summarize::delivery`]); `None` in the
/// closed model.
fn delivery(
    m: &Measured,
    plan: &Plan,
    summary: &Summary,
    health: &crate::report::GeneratorHealth,
) -> Option<crate::report::Delivery> {
    use super::spec::shape::Model;
    let mut timeline = plan.timeline();
    if timeline.model != Model::Open {
        return None;
    }
    // A run cut short is judged on the part of the window it ran.
    timeline.measured = timeline.measured.min(m.set.elapsed);
    let facts = summarize::delivery::Facts {
        planned: summarize::delivery::planned_in_window(&timeline, plan.segment),
        ran: summary.round_trips.total + summary.round_trips.skipped,
        window: timeline.measured,
        slip: m.slip,
        generator_busy: health.cpu_busy_pct.map(|p| p / 100.0),
        generator_unwell: !health.problems.is_empty(),
        max_in_flight: plan.max_in_flight,
    };
    Some(summarize::delivery::judge(&facts))
}

/// The generator's health over the run: the open model's slip and its
/// CPU over its worker threads' time.
fn generator_health(
    m: &Measured,
    gen_cpu: Option<f64>,
    wall: Duration,
    plan: &Plan,
) -> crate::report::GeneratorHealth {
    use super::metrics::generator::{CpuShare, InFlightCap, problems};
    let threads = tokio::runtime::Handle::try_current()
        .map(|h| h.metrics().num_workers())
        .unwrap_or(1);
    let cpu = gen_cpu.map(|cpu_s| CpuShare {
        cpu_s,
        wall_s: wall.as_secs_f64(),
        threads,
    });
    let cap = plan.in_flight_lowered_from.map(|planned| InFlightCap {
        planned,
        lowered: plan.max_in_flight,
    });
    crate::report::GeneratorHealth {
        arrivals: m.slip.map(|s| s.arrivals),
        late_arrivals: m.slip.map(|s| s.late),
        held_by_in_flight_cap: m.slip.map(|s| s.held),
        max_slip_ms: m.slip.map(|s| s.max_slip.as_secs_f64() * 1000.0),
        cpu_busy_pct: cpu.map(|c| c.busy() * 100.0),
        threads,
        problems: problems(m.slip, cpu, cap),
    }
}

/// The run's verdict. A generator that could not keep up makes it
/// INCONCLUSIVE, unless the run failed in a way a slow generator cannot
/// cause: it ended abnormally, or a threshold failed on something other
/// than timing (latency, rate, service gaps, and error counts made only of
/// timeouts and failed connections: a generator too busy to read a reply
/// makes those too).
fn verdict(
    info: &RunInfo,
    summary: &Summary,
    plan: &Plan,
    generator_unwell: bool,
    target_alive: bool,
) -> Verdict {
    use super::spec::threshold::Metric;
    let only_slow_errors = summary
        .errors
        .keys()
        .all(|k| matches!(k.as_str(), "timeout" | "transport"));
    let timing = |m: &Metric| match m {
        Metric::Latency { .. } | Metric::Rps | Metric::ServiceGaps | Metric::FrozenTime => true,
        Metric::ErrorRate | Metric::Ok(_) => only_slow_errors,
        Metric::SkippedRate(_) | Metric::Misrouted => false,
    };
    // A run cut short by failures to reach a target whose process still
    // runs, all of them timeouts or transport errors: a starved generator
    // (connections idle past the server's timeouts) can cause exactly that.
    let ended_for_timing = info.ended_by.is_normal()
        || info.ended_by == EndReason::Aborted
        || (matches!(
            info.ended_by,
            EndReason::TargetDied | EndReason::TargetUnreachable
        ) && target_alive
            && only_slow_errors);
    let only_timing_failed = ended_for_timing
        && summary.baseline.as_ref().is_none_or(|b| b.passed)
        && summary
            .health
            .as_ref()
            .and_then(|h| h.soak.as_ref())
            .is_none_or(|s| s.passed)
        && summary.capacity.is_none()
        && plan
            .all_thresholds()
            .iter()
            .zip(&summary.thresholds)
            .all(|((t, _), r)| r.passed || timing(&t.metric));
    match info.ended_by {
        EndReason::Interrupted => Verdict::Interrupted,
        _ if generator_unwell && only_timing_failed => Verdict::Inconclusive,
        _ if summary.passed => Verdict::Passed,
        EndReason::TargetUnreachable
            if summary.round_trips.total
                == summary.errors.get("transport").copied().unwrap_or(0) =>
        {
            Verdict::Unreachable
        }
        _ => Verdict::Failed,
    }
}

fn write_report(dir: &Path, summary: &mut Summary, hlog: Option<&str>) -> Result<(), RunError> {
    let mut files = std::collections::BTreeMap::new();
    files.insert("summary_json".to_owned(), "summary.json".to_owned());
    files.insert("summary_md".to_owned(), "summary.md".to_owned());
    files.insert("report_html".to_owned(), "report.html".to_owned());
    files.insert("prometheus".to_owned(), "metrics.prom".to_owned());
    if let Some(h) = hlog {
        files.insert("hlog".to_owned(), h.to_owned());
    }
    for (role, f) in [("goose_json", "goose.json"), ("goose_md", "goose.md")] {
        if dir.join(f).exists() {
            files.insert(role.to_owned(), f.to_owned());
        }
    }
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("capacity-") && name.ends_with(".hlog") {
                files.insert(name.trim_end_matches(".hlog").to_owned(), name);
            }
        }
    }
    summary.files = files;
    report::write_all(dir, summary).map_err(io_err(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(1_709_251_199), "20240229T235959Z");
        assert_eq!(utc_stamp(1_795_000_000), "20261118T110640Z");
    }

    #[test]
    fn the_embedded_server_holds_every_connection_the_plan_may_open() {
        let text = "name = \"c\"\n[load]\nrate = 10\nmax_in_flight = 9000\n\
                    [scenarios.form-accept]\ntool = \"deploy\"\n";
        let mut plan = super::super::spec::parse::parse_plan(text, "c.toml", "c").expect("plan");
        let flaw = vec!["--flaw".to_owned(), "no-expiry".to_owned()];
        assert_eq!(
            embedded_serve_args(&plan, &flaw),
            [
                "--flaw",
                "no-expiry",
                "--max-connections=18000",
                "--max-connections-per-principal=18000"
            ]
        );
        // The user's own cap stands, in either spelling.
        for user in [
            vec!["--max-connections".to_owned(), "100".to_owned()],
            vec!["--max-connections=100".to_owned()],
        ] {
            assert_eq!(embedded_serve_args(&plan, &user), user);
        }
        // Below the server's default, its default stands, and one
        // principal may hold all of it.
        plan.max_in_flight = 100;
        assert_eq!(
            embedded_serve_args(&plan, &flaw),
            [
                "--flaw",
                "no-expiry",
                "--max-connections-per-principal=8192"
            ]
        );
    }

    /// A plan whose one threshold (error_rate) failed, with these errors,
    /// ended by `ended_by`.
    fn failed_run(ended_by: EndReason, errors: &[(&str, u64)]) -> (RunInfo, Summary, Plan) {
        let text = "name = \"v\"\ndefault_thresholds = false\nthresholds = [\"error_rate < 1%\"]\n\
                    [scenarios.form-accept]\ntool = \"deploy\"\n";
        let plan = super::super::spec::parse::parse_plan(text, "v.toml", "v").expect("plan");
        assert_eq!(plan.all_thresholds().len(), 1);
        let summary = Summary {
            errors: errors.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect(),
            thresholds: vec![report::ThresholdResult {
                expr: "error_rate < 1%".into(),
                passed: false,
                ..Default::default()
            }],
            passed: false,
            ..Default::default()
        };
        let info = RunInfo {
            ended_by,
            ..Default::default()
        };
        (info, summary, plan)
    }

    #[test]
    fn a_starved_generator_makes_only_timing_failures_inconclusive() {
        let slow = [("timeout", 90), ("transport", 10)];
        let (i, s, p) = failed_run(EndReason::Duration, &slow);
        assert_eq!(verdict(&i, &s, &p, true, true), Verdict::Inconclusive);
        assert_eq!(verdict(&i, &s, &p, false, true), Verdict::Failed);
        // An error a slow generator cannot cause fails whatever its health.
        let (i, s, p) = failed_run(EndReason::Duration, &[("timeout", 9), ("http_500", 1)]);
        assert_eq!(verdict(&i, &s, &p, true, true), Verdict::Failed);
    }

    #[test]
    fn a_dead_target_fails_even_with_a_starved_generator() {
        let slow = [("timeout", 90), ("transport", 10)];
        for end in [EndReason::TargetDied, EndReason::TargetUnreachable] {
            let (i, s, p) = failed_run(end, &slow);
            // Its process is gone: the generator did not cause that.
            assert_eq!(verdict(&i, &s, &p, true, false), Verdict::Failed, "{end:?}");
            // Its process still runs: the starved generator may have.
            assert_eq!(
                verdict(&i, &s, &p, true, true),
                Verdict::Inconclusive,
                "{end:?}"
            );
        }
    }
}
