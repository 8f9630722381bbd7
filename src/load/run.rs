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
//! Stop conditions, checked four times a second: the duration; the hard
//! request cap (`max_requests`); 25 consecutive round trips that could not
//! connect (a dead target); no round trip answered for the plan's `stall`
//! window (a stalled target); the embedded server exiting; Ctrl-C. Every
//! run that got past the preflight writes its report, whatever ended it.
//!
//! Verdicts ([`Verdict`]): `Passed`; `Failed` (a threshold failed, the target
//! stalled or died mid-run); `Interrupted` (Ctrl-C; the report says so);
//! `Unreachable` (the target never answered: nothing was measured, so it is
//! a usage error, exit 2).

use super::closed;
use super::hlog;
use super::metrics::{MetricSet, Recorder};
use super::open;
use super::plan::{LoadShape, Plan};
use super::progress::ProgressLine;
use super::scenarios::LoadContext;
use super::shape::Model;
use super::stream::IntervalStream;
use super::summarize::{self, RunInfo};
use super::target::{self, EmbeddedServer, TargetError};
use crate::report::{self, CpuUsage, Summary};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Consecutive connection failures that mean the target is gone.
const DEAD_STREAK: u64 = 25;

/// What a run needs besides the plan.
#[derive(Debug, Clone)]
pub struct Options {
    /// The plan (CLI overrides already applied).
    pub plan: Plan,
    /// Folder that receives `<run-id>/`.
    pub out_root: PathBuf,
    /// File that receives the interval stream (`--out ndjson=FILE`).
    pub ndjson: Option<PathBuf>,
    /// Extra copy of `summary.json` (`--summary-export FILE`).
    pub summary_export: Option<PathBuf>,
    /// A baseline run to compare with (`--baseline`): its summary, its
    /// file, and the tolerance in percent.
    pub baseline: Option<(Summary, String, f64)>,
    /// Run id (default `<UTC time>-<plan>`).
    pub run_id: Option<String>,
    /// Extra `serve` arguments for the embedded server (e.g. `--flaw X`).
    pub serve_args: Vec<String>,
    /// The `elicitkit` executable for the embedded server (default: this one).
    pub exe: Option<PathBuf>,
    /// Run a capacity search instead of the plan's load shape.
    pub capacity: bool,
    /// The capacity search's store counter and instance label.
    pub capacity_extras: super::capacity::Extras,
    /// Show the live progress line.
    pub progress: bool,
    /// What discovery called, when the plan came from it (for the report).
    pub discovery: Vec<String>,
    /// Synchronized start (`--start-at`): wait until then, after the
    /// preflight, before the first round trip ([`super::segment`]).
    pub start_at: Option<SystemTime>,
    /// The whole run's users before `--segment` took this share (closed
    /// model), for the report.
    pub whole_users: Option<u64>,
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

/// Why a run could not happen or could not write its report.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The embedded server did not start.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The report folder or a file could not be written.
    #[error("cannot write the report in {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// Setting up the HTTP client or metrics failed.
    #[error("{0}")]
    Setup(String),
    /// The target does not answer as the plan needs (nothing was measured).
    #[error("{0}")]
    Preflight(String),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Shared stop state: the first reason wins.
#[derive(Debug, Default)]
struct EndState {
    reason: Mutex<Option<(String, String)>>,
}

impl EndState {
    fn set(&self, by: &str, note: String) {
        if let Ok(mut r) = self.reason.lock()
            && r.is_none()
        {
            *r = Some((by.to_owned(), note));
        }
    }

    fn get(&self) -> Option<(String, String)> {
        self.reason.lock().ok().and_then(|r| r.clone())
    }
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

fn fresh_dir(root: &Path, id: &str) -> Result<(PathBuf, String), RunError> {
    let (dir, name) = crate::report::fresh_run_dir(root, id);
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    Ok((dir, name))
}

/// Asks the target what an MCP client would before the run: does it speak
/// the generations the plan's scenarios use, and does it list their tools?
/// `Err` is a one-line reason.
pub async fn preflight(plan: &Plan, mcp_url: &str) -> Result<(), String> {
    use crate::client::raw::Rpc;
    use crate::discover::{self, Wire, all_modes, legacy, modern, wire::Log};
    use crate::protocol::Generation;
    let http = discover::http_client().map_err(|e| e.to_string())?;
    let log = Log::new(
        http,
        mcp_url,
        &plan.target.token,
        plan.timeout.max(Duration::from_secs(2)),
        plan.seed,
    );
    let caps = all_modes();
    let mut gens: Vec<Generation> = plan
        .scenarios
        .iter()
        .map(|s| {
            if s.is_legacy() {
                Generation::Legacy
            } else {
                Generation::Modern
            }
        })
        .collect();
    gens.dedup();
    gens.sort_by_key(|g| *g == Generation::Legacy);
    gens.dedup();
    for g in gens {
        let names: Vec<String> = match g {
            Generation::Modern => modern::list_tools(&log, &caps)
                .await
                .map_err(|e| format!("{mcp_url} does not answer 2026-07-28 tools/list: {e}"))?,
            Generation::Legacy => {
                let s = legacy::open(&log, &caps, true).await.map_err(|e| {
                    format!("{mcp_url} does not answer as a 2025-11-25 MCP server: {e}")
                })?;
                let reply = log
                    .send(legacy::request(
                        &log,
                        &s,
                        "tools/list",
                        "tools/list",
                        serde_json::json!({}),
                    ))
                    .await
                    .map_err(|e| format!("{mcp_url}: 2025-11-25 tools/list: {e}"))?;
                legacy::close(&log, &s).await;
                match reply.rpc() {
                    Rpc::Result(v) => v
                        .get("tools")
                        .and_then(serde_json::Value::as_array)
                        .cloned()
                        .unwrap_or_default(),
                    other => {
                        return Err(format!(
                            "{mcp_url}: 2025-11-25 tools/list answered {}",
                            other.describe()
                        ));
                    }
                }
            }
        }
        .iter()
        .filter_map(|d| {
            d.get("name")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        })
        .collect();
        for sc in plan
            .scenarios
            .iter()
            .filter(|s| (g == Generation::Legacy) == s.is_legacy())
        {
            if !names.contains(&sc.tool) {
                return Err(format!(
                    "scenario {}: {mcp_url} lists no tool {:?} on {} (it lists: {})",
                    sc.name,
                    sc.tool,
                    g,
                    names.join(", ")
                ));
            }
        }
    }
    Ok(())
}

fn http_client(plan: &Plan) -> Result<reqwest::Client, RunError> {
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(plan.max_in_flight.min(4096))
        .connect_timeout(plan.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| RunError::Setup(format!("cannot build the HTTP client: {e}")))
}

fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 1..];
            rest.split_whitespace()
                .next()
                .map(|st| st != "Z" && st != "X")
        })
        .unwrap_or(false)
}

/// The watcher: progress line and stop conditions.
#[allow(clippy::too_many_arguments)]
async fn watch(
    ctx: Arc<LoadContext>,
    end: Arc<EndState>,
    done: Arc<AtomicBool>,
    target_pid: Option<u32>,
    planned: Duration,
    progress: bool,
    goose: bool,
    label: String,
) {
    let started = Instant::now();
    let mut line = ProgressLine::new(false);
    let stop = |by: &str, note: String| {
        end.set(by, note);
        ctx.stop.store(true, Ordering::Relaxed);
        if goose {
            goose::trigger_killswitch(by);
        }
    };
    while !done.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        if ctx.cap_reached.load(Ordering::Relaxed) && !ctx.stop.load(Ordering::Relaxed) {
            stop(
                "max_requests",
                format!(
                    "the hard cap of {} requests was reached",
                    ctx.plan.max_requests
                ),
            );
        }
        if target_pid.is_some_and(|p| !pid_alive(p)) && !ctx.stop.load(Ordering::Relaxed) {
            stop(
                "target_died",
                "the embedded server exited during the run".into(),
            );
        }
        let streak = ctx.recorder.transport_streak();
        if streak >= DEAD_STREAK && !ctx.stop.load(Ordering::Relaxed) {
            let by = if ctx.recorder.round_trips() > streak {
                "target_died"
            } else {
                "target_unreachable"
            };
            stop(
                by,
                format!("{streak} consecutive round trips could not reach the target"),
            );
        }
        let quiet = ctx.recorder.since_last_answer();
        if quiet >= ctx.plan.stall && !ctx.stop.load(Ordering::Relaxed) {
            stop(
                "stalled",
                format!(
                    "no round trip got an answer for {:.1} s (the target is stalled, or every \
                     request times out: timeout {:?})",
                    quiet.as_secs_f64(),
                    ctx.plan.timeout
                ),
            );
        }
        if goose && goose::is_killswitch_triggered() && !ctx.stop.load(Ordering::Relaxed) {
            stop("interrupted", "stopped by Ctrl-C".into());
        }
        if progress && line.due() {
            let rec = &ctx.recorder;
            let el = started.elapsed().as_secs_f64();
            let rts = rec.round_trips();
            let p99 = rec
                .last_interval()
                .map_or(String::from("-"), |i| format!("{:.2}ms", i.p99_ms));
            line.print(&format!(
                "{label} {el:5.1}s/{:.0}s  {rts} round trips ({:.0}/s)  {} requests  {} unexpected  p99 e2e {p99}",
                planned.as_secs_f64(),
                rts as f64 / el.max(0.001),
                rec.requests(),
                rec.errors()
            ));
        }
    }
    line.finish();
}

/// What one load phase measured.
pub(super) struct Measured {
    pub(super) set: MetricSet,
    pub(super) hlog: Vec<u8>,
    pub(super) hlog_error: Option<String>,
    pub(super) end: Option<(String, String)>,
}

/// Runs one load phase (closed or open) against `mcp_url`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn phase(
    plan: &Plan,
    mcp_url: &str,
    http: &reqwest::Client,
    dir: &Path,
    target_pid: Option<u32>,
    progress: bool,
    label: &str,
    comments: &[String],
    stream: Option<&IntervalStream>,
) -> Result<Measured, RunError> {
    let timeline = plan.timeline();
    let recorder = Arc::new(
        Recorder::new(plan.interval, comments)
            .map_err(|e| RunError::Setup(e.to_string()))?
            .with_window(timeline.lead, timeline.measured),
    );
    if let Some(s) = stream {
        recorder.stream_to(s.clone(), label);
    }
    let ctx = Arc::new(LoadContext::new(
        plan.clone(),
        mcp_url.to_owned(),
        recorder.clone(),
    ));
    let end = Arc::new(EndState::default());
    let done = Arc::new(AtomicBool::new(false));
    let goose = timeline.model == Model::Closed;
    let watcher = tokio::spawn(watch(
        ctx.clone(),
        end.clone(),
        done.clone(),
        target_pid,
        timeline.total(),
        progress,
        goose,
        label.to_owned(),
    ));
    let interrupt = if goose {
        None
    } else {
        let (c, e) = (ctx.clone(), end.clone());
        Some(tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                e.set("interrupted", "stopped by Ctrl-C".into());
                c.stop.store(true, Ordering::Relaxed);
            }
        }))
    };
    if !plan.segment.is_whole() {
        recorder.anchor_now();
    }
    let backstop = timeline.total() + plan.timeout * 4 + Duration::from_secs(30);
    match timeline.model {
        Model::Closed => {
            let base = url::Url::parse(mcp_url)
                .map(|u| u[..url::Position::BeforePath].to_owned())
                .unwrap_or_else(|_| mcp_url.to_owned());
            let shape = match &plan.shape {
                LoadShape::Closed { users, hatch_rate } => closed::GooseShape::Fixed {
                    users: *users,
                    hatch_rate: *hatch_rate,
                    // A little past the window: what starts after it is
                    // left out, so the window is covered to its end.
                    hold: timeline.warmup + timeline.measured + Duration::from_millis(100),
                },
                _ => closed::GooseShape::Plan(closed::goose_test_plan(&timeline.stages)),
            };
            let cfg = closed::goose_config(&base, &shape, plan.timeout, dir);
            let chatter = if progress {
                closed::GooseChatter::Stderr
            } else {
                closed::GooseChatter::Discard
            };
            let run = closed::run(ctx.clone(), cfg, &shape, chatter);
            let result = tokio::time::timeout(backstop, run).await;
            // Goose's own Ctrl-C handler ends its run; the first reason set
            // wins, so a stop we triggered ourselves keeps its reason.
            if goose::is_killswitch_triggered() {
                end.set("interrupted", "stopped by Ctrl-C".into());
            }
            match result {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => end.set("error", format!("Goose: {}", goose_error(&e))),
                Err(_) => {
                    goose::trigger_killswitch("backstop");
                    end.set(
                        "error",
                        "the run overran its time bound and was stopped".into(),
                    );
                }
            }
        }
        Model::Open => {
            // Round trips in flight at the end get at most 1.5 s: the run ends
            // within 2 s of its deadline whatever the target does.
            let drain = plan.timeout.min(Duration::from_millis(1500));
            let run = open::run(ctx.clone(), http.clone(), &timeline.stages, drain);
            if tokio::time::timeout(backstop, run).await.is_err() {
                end.set(
                    "error",
                    "the run overran its time bound and was stopped".into(),
                );
            }
        }
    }
    ctx.stop.store(true, Ordering::Relaxed);
    done.store(true, Ordering::Relaxed);
    let _ = watcher.await;
    if let Some(i) = interrupt {
        i.abort();
    }
    ctx.close_legacy_sessions().await;
    let (set, hlog, hlog_error) = recorder.finish();
    Ok(Measured {
        set,
        hlog,
        hlog_error,
        end: end.get(),
    })
}

/// Goose's error with its detail (its Display omits which option is wrong).
fn goose_error(e: &goose::GooseError) -> String {
    match e {
        goose::GooseError::InvalidOption {
            option,
            value,
            detail,
        } => format!("invalid option {option} = {value:?}: {detail}"),
        other => other.to_string(),
    }
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
        put("capacity search", super::capacity::describe(c));
    }
    m
}

fn cpu(cpu_s: f64, requests: u64, round_trips: u64) -> CpuUsage {
    CpuUsage {
        cpu_s,
        us_per_request: (requests > 0).then(|| cpu_s * 1e6 / requests as f64),
        us_per_round_trip: (round_trips > 0).then(|| cpu_s * 1e6 / round_trips as f64),
    }
}

/// Runs a whole `elicitkit load` invocation and writes its report.
pub async fn run(opts: Options) -> Result<RunReport, RunError> {
    let plan = opts.plan.clone();
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
            let s = EmbeddedServer::start(exe, plan.target.workers, &opts.serve_args)?;
            (s.mcp_url(), Some(s))
        }
    };
    preflight(&plan, &mcp_url)
        .await
        .map_err(RunError::Preflight)?;
    // Every other target must serve the same plan (its reasons name it).
    for url in &plan.target.more_urls {
        preflight(&plan, url).await.map_err(RunError::Preflight)?;
    }
    let stream = match &opts.ndjson {
        Some(path) => Some(
            IntervalStream::create(path)
                .map_err(|e| RunError::Setup(format!("--out ndjson={}: {e}", path.display())))?,
        ),
        None => None,
    };
    let (dir, run_id) = fresh_dir(&opts.out_root, &id)?;
    let target_pid = server.as_ref().map(EmbeddedServer::pid);
    let http = http_client(&plan)?;
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
        ended_by: "duration".into(),
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
        Some(at) => Some(super::segment::wait_until(at, opts.progress, &plan.name).await),
        None => None,
    };
    if opts.start_at.is_some() {
        info.started_unix = hlog::unix_seconds(SystemTime::now());
    }

    let gen0 = target::own_cpu_seconds();
    let tgt0 = server.as_ref().and_then(EmbeddedServer::cpu_seconds);
    let (measured, capacity) = if opts.capacity {
        let (m, c, totals) = super::capacity::search(
            &plan,
            &mcp_url,
            &http,
            &dir,
            &server,
            &opts,
            &comments,
            stream.as_ref(),
        )
        .await?;
        (m, Some((c, totals)))
    } else {
        let m = phase(
            &plan,
            &mcp_url,
            &http,
            &dir,
            target_pid,
            opts.progress,
            &plan.name,
            &comments,
            stream.as_ref(),
        )
        .await?;
        (m, None)
    };
    let gen_cpu = gen0.zip(target::own_cpu_seconds()).map(|(a, b)| b - a);
    let tgt_cpu = tgt0
        .zip(server.as_ref().and_then(EmbeddedServer::cpu_seconds))
        .map(|(a, b)| b - a);
    if let Some(s) = server {
        s.stop();
    }

    if let Some((by, note)) = &measured.end {
        info.ended_by = by.clone();
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
        summary.instances.targets = std::iter::once(mcp_url.clone())
            .chain(plan.target.more_urls.iter().cloned())
            .collect();
    }
    summary.settings = settings(&plan, opts.capacity);
    super::segment::settings(
        &plan,
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
    if let Some((c, _)) = capacity {
        summary.passed = summary.passed && c.knee_rps.is_some();
        summary.capacity = Some(c);
    }
    if let Some((before, file, tolerance)) = &opts.baseline {
        let c = super::baseline::compare(&summary, before, file, *tolerance);
        let failed = super::baseline::failures(&c);
        summary.passed = summary.passed && c.passed;
        summary.failures.extend(failed);
        summary.baseline = Some(c);
    }
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
    let verdict = if summary.ended_by == "interrupted" {
        Verdict::Interrupted
    } else if summary.passed {
        Verdict::Passed
    } else if summary.ended_by == "target_unreachable"
        && summary.round_trips.total == summary.errors.get("transport").copied().unwrap_or(0)
    {
        Verdict::Unreachable
    } else {
        Verdict::Failed
    };
    Ok(RunReport {
        summary,
        dir,
        verdict,
    })
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
    for (role, f) in [
        ("goose_html", "goose.html"),
        ("goose_json", "goose.json"),
        ("goose_md", "goose.md"),
    ] {
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
    fn the_first_end_reason_wins() {
        let e = EndState::default();
        e.set("max_requests", "cap".into());
        e.set("target_died", "x".into());
        assert_eq!(e.get().map(|r| r.0), Some("max_requests".into()));
    }
}
