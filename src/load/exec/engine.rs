//! The executor of one run: [`Engine`] holds what every load phase of a run
//! shares (the HTTP client, the target's URL and process, the report
//! folder, the progress flag, the `.hlog` comments, the interval stream);
//! [`Engine::phase`] runs one closed or open phase under the stop
//! conditions and returns what it [`Measured`] and why it ended
//! ([`EndReason`]). Also the preflight (does the target serve the plan?)
//! and the synchronized start's wait.
//!
//! Stop conditions, checked four times a second: the hard request cap
//! (`max_requests`); 25 consecutive round trips that could not connect (a
//! dead target); no round trip answered for the plan's `stall` window (a
//! stalled target); the embedded server exiting; Ctrl-C or SIGTERM
//! ([`crate::interrupt`]); an `abort_on_fail` threshold that failed.

use super::closed;
use super::open;
use super::progress::ProgressLine;
use super::round_trip::LoadContext;
use super::target::{EmbeddedServer, TargetError};
use crate::load::metrics::gaps::Pace;
use crate::load::metrics::health;
use crate::load::metrics::recorder::Recorder;
use crate::load::metrics::set::MetricSet;
use crate::load::metrics::stream::IntervalStream;
use crate::load::spec::plan::{LoadShape, Plan};
use crate::load::spec::shape::Model;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Consecutive connection failures that mean the target is gone.
const DEAD_STREAK: u64 = 25;

/// Why a run or phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EndReason {
    /// The planned duration ran out (the normal end).
    #[default]
    Duration,
    /// The hard request cap (`max_requests`) was reached; figures stand.
    MaxRequests,
    /// No round trip was answered for the plan's `stall` window.
    Stalled,
    /// The target stopped answering (or the embedded server exited) mid-run.
    TargetDied,
    /// The target never answered at all.
    TargetUnreachable,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// A threshold marked `abort_on_fail` failed mid-run.
    Aborted,
    /// Goose failed, or the run overran its time bound.
    Error,
}

impl EndReason {
    /// The name `summary.json` (`ended_by`) and the terminal use.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Duration => "duration",
            EndReason::MaxRequests => "max_requests",
            EndReason::Stalled => "stalled",
            EndReason::TargetDied => "target_died",
            EndReason::TargetUnreachable => "target_unreachable",
            EndReason::Interrupted => "interrupted",
            EndReason::Aborted => "aborted",
            EndReason::Error => "error",
        }
    }

    /// The run ran its course: its duration, or the request cap (whose
    /// figures stand).
    pub fn is_normal(self) -> bool {
        matches!(self, EndReason::Duration | EndReason::MaxRequests)
    }
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
    #[error(transparent)]
    Preflight(#[from] PreflightError),
}

/// Why a target does not answer as the plan needs ([`preflight`]); each
/// names the target.
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    /// The HTTP client could not be built.
    #[error("{0}")]
    Client(String),
    /// A TLS handshake failed: what failed and how to fix it.
    #[error("{url}: {explained}")]
    Tls {
        /// The MCP endpoint.
        url: String,
        /// The failure in words, with its fix.
        explained: String,
    },
    /// No 2026-07-28 `tools/list`.
    #[error("{url} does not answer 2026-07-28 tools/list: {why}")]
    Modern {
        /// The MCP endpoint.
        url: String,
        /// What went wrong.
        why: String,
    },
    /// No 2025-11-25 session.
    #[error("{url} does not answer as a 2025-11-25 MCP server: {why}")]
    Legacy {
        /// The MCP endpoint.
        url: String,
        /// What went wrong.
        why: String,
    },
    /// The 2025-11-25 `tools/list` failed or was refused.
    #[error("{url}: 2025-11-25 tools/list{why}")]
    LegacyList {
        /// The MCP endpoint.
        url: String,
        /// `: ERROR` or ` answered …`.
        why: String,
    },
    /// A scenario's tool is not listed.
    #[error("scenario {scenario}: {url} lists no tool {tool:?} on {generation} (it lists: {})", .listed.join(", "))]
    NoTool {
        /// The scenario.
        scenario: String,
        /// The MCP endpoint.
        url: String,
        /// Its tool.
        tool: String,
        /// The generation asked.
        generation: crate::protocol::Generation,
        /// The tools it lists.
        listed: Vec<String>,
    },
    /// The users' first principal is refused where the plan's token is not.
    #[error(
        "the users run as distinct principals, and {who} is refused ({source}); give the \
         users' tokens with --principal-file FILE (one a line), or run every user as \
         one principal with --principal TOKEN"
    )]
    Principal {
        /// The principal, in words.
        who: String,
        /// Why it is refused.
        source: Box<PreflightError>,
    },
}

/// Maps an I/O error on `path` to [`RunError::Io`].
pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Shared stop state: the first reason wins.
#[derive(Debug, Default)]
struct EndState {
    reason: Mutex<Option<(EndReason, String)>>,
}

impl EndState {
    fn set(&self, by: EndReason, note: String) {
        if let Ok(mut r) = self.reason.lock()
            && r.is_none()
        {
            *r = Some((by, note));
        }
    }

    fn get(&self) -> Option<(EndReason, String)> {
        self.reason.lock().ok().and_then(|r| r.clone())
    }
}

/// What one load phase measured.
pub struct Measured {
    /// The phase's metrics.
    pub set: MetricSet,
    /// Its `.hlog` bytes.
    pub hlog: Vec<u8>,
    /// Why the `.hlog` is incomplete, if it is.
    pub hlog_error: Option<String>,
    /// Why it ended early, with a note (none: it ran its course).
    pub end: Option<(EndReason, String)>,
    /// The open model's schedule slip (none in the closed model).
    pub slip: Option<crate::load::metrics::generator::SlipCounts>,
}

/// What every phase of one run shares.
pub struct Engine {
    /// The pooled HTTP client (non-MCP legs, the open model).
    pub http: reqwest::Client,
    /// The target's MCP endpoint.
    pub mcp_url: String,
    /// The report folder (Goose writes its files there).
    pub dir: PathBuf,
    /// The embedded server, when the run started one.
    pub server: Option<EmbeddedServer>,
    /// Show the live progress line.
    pub progress: bool,
    /// Goose records every leg and writes its reports (`--out goose`).
    pub goose_reports: bool,
    /// Header comments of every `.hlog`.
    pub comments: Vec<String>,
    /// The interval stream (`--out ndjson=FILE`).
    pub stream: Option<IntervalStream>,
    /// Per plan scenario, the argument that carries each round trip's
    /// marker (from the preflight; see [`LoadContext::mark`]).
    pub markers: Vec<Option<String>>,
}

impl Engine {
    /// The HTTP client a run of `plan` uses.
    pub fn http_client(plan: &Plan) -> Result<reqwest::Client, RunError> {
        crate::client::tls::reqwest_builder()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(plan.max_in_flight.min(4096))
            .connect_timeout(plan.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| RunError::Setup(format!("cannot build the HTTP client: {e}")))
    }

    /// The embedded server's process id (watched for an early exit).
    pub fn target_pid(&self) -> Option<u32> {
        self.server.as_ref().map(EmbeddedServer::pid)
    }

    /// Runs one load phase of `plan` (closed or open); `label` names it on
    /// the progress line and in the interval stream.
    pub async fn phase(&self, plan: &Plan, label: &str) -> Result<Measured, RunError> {
        let Engine {
            http,
            mcp_url,
            dir,
            progress,
            goose_reports,
            comments,
            stream,
            ..
        } = self;
        let (progress, target_pid) = (*progress, self.target_pid());
        let timeline = plan.timeline();
        let recorder = Arc::new(
            Recorder::new(plan.interval, comments)
                .map_err(|e| RunError::Setup(e.to_string()))?
                .with_window(timeline.lead, timeline.measured)
                .with_pace(match timeline.model {
                    Model::Closed => Pace::Latency,
                    Model::Open => Pace::Schedule {
                        stages: timeline.stages.clone(),
                        lead: timeline.lead,
                        share: 1.0 / f64::from(plan.segment.count.max(1)),
                    },
                }),
        );
        if let Some(s) = stream {
            recorder.stream_to(s.clone(), label);
        }
        let ctx = Arc::new(
            LoadContext::new(plan.clone(), mcp_url.to_owned(), recorder.clone())
                .mark(&self.markers),
        );
        let end = Arc::new(EndState::default());
        let done = Arc::new(AtomicBool::new(false));
        let goose = timeline.model == Model::Closed;
        let heartbeat = Heartbeat::start(recorder.clone(), done.clone());
        let watcher = tokio::spawn(
            Watch {
                ctx: ctx.clone(),
                end: end.clone(),
                done: done.clone(),
                target_pid,
                timeline: timeline.clone(),
                progress,
                goose,
                label: label.to_owned(),
            }
            .run(),
        );
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
                let cfg = closed::goose_config(
                    &base,
                    &shape,
                    plan.timeout,
                    goose_reports.then_some(dir.as_path()),
                );
                let run = closed::drive(ctx.clone(), http.clone(), cfg, &shape);
                let result = tokio::time::timeout(backstop, run).await;
                // A signal (or, where ours are not taken, Goose's own Ctrl-C
                // handler) ends its run; the first reason set wins, so a stop
                // we triggered ourselves keeps its reason.
                if let Some(sig) = crate::interrupt::received() {
                    end.set(EndReason::Interrupted, sig.note().into());
                } else if goose::is_killswitch_triggered() {
                    end.set(EndReason::Interrupted, "stopped by Ctrl-C".into());
                }
                match result {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => end.set(EndReason::Error, format!("Goose: {}", goose_error(&e))),
                    Err(_) => {
                        goose::trigger_killswitch("backstop");
                        end.set(
                            EndReason::Error,
                            "the run overran its time bound and was stopped".into(),
                        );
                    }
                }
            }
            Model::Open => {
                // Round trips in flight at the end get at most 1.5 s: the run ends
                // within 2 s of its deadline whatever the target does.
                let drain = plan.timeout.min(Duration::from_millis(1500));
                let run = open::drive(ctx.clone(), http.clone(), &timeline.stages, drain);
                if tokio::time::timeout(backstop, run).await.is_err() {
                    end.set(
                        EndReason::Error,
                        "the run overran its time bound and was stopped".into(),
                    );
                }
            }
        }
        ctx.stop.store(true, Ordering::Relaxed);
        done.store(true, Ordering::Relaxed);
        let _ = watcher.await;
        if let Some(h) = heartbeat {
            let _ = tokio::task::spawn_blocking(move || h.join()).await;
        }
        ctx.close_legacy_sessions().await;
        let (set, hlog, hlog_error) = recorder.finish();
        Ok(Measured {
            set,
            hlog,
            hlog_error,
            end: end.get(),
            slip: recorder.slip().counts(),
        })
    }
}

/// The generator's heartbeat: a thread of its own that wakes every
/// [`Heartbeat::TICK`] and notes in the recorder each time it woke more
/// than [`Heartbeat::LATE`] late: the host did not run this process (a
/// VM paused, the machine overloaded). A quiet spell the generator itself
/// sat through is not the target's frozen time.
struct Heartbeat;

impl Heartbeat {
    /// How often it wakes.
    const TICK: Duration = Duration::from_millis(10);
    /// A wake-up this late is a pause.
    const LATE: Duration = Duration::from_millis(100);

    /// Starts the thread; it ends when `done` is set. `None` when no
    /// thread could be started (then no pause is noted).
    fn start(
        recorder: Arc<Recorder>,
        done: Arc<AtomicBool>,
    ) -> Option<std::thread::JoinHandle<()>> {
        std::thread::Builder::new()
            .name("elicitkit-heartbeat".into())
            .spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    let due = Instant::now() + Self::TICK;
                    std::thread::sleep(Self::TICK);
                    let late = due.elapsed();
                    if late > Self::LATE {
                        recorder.note_pause(late);
                    }
                }
            })
            .ok()
    }
}

/// The watcher of one phase: the progress line and the stop conditions,
/// four times a second until `done`.
struct Watch {
    ctx: Arc<LoadContext>,
    end: Arc<EndState>,
    done: Arc<AtomicBool>,
    target_pid: Option<u32>,
    timeline: crate::load::spec::shape::Timeline,
    progress: bool,
    goose: bool,
    label: String,
}

impl Watch {
    async fn run(self) {
        let Watch {
            ctx,
            end,
            done,
            target_pid,
            timeline,
            progress,
            goose,
            label,
        } = self;
        let started = Instant::now();
        let mut line = ProgressLine::new(false);
        let mut aborts = Aborts::new(&ctx.plan);
        let stop = |by: EndReason, note: String| {
            end.set(by, note);
            ctx.stop.store(true, Ordering::Relaxed);
            if goose {
                goose::trigger_killswitch(by.as_str());
            }
        };
        while !done.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(250)).await;
            if ctx.cap_reached.load(Ordering::Relaxed) && !ctx.stop.load(Ordering::Relaxed) {
                stop(
                    EndReason::MaxRequests,
                    format!(
                        "the hard cap of {} requests was reached",
                        ctx.plan.max_requests
                    ),
                );
            }
            if target_pid.is_some_and(|p| !health::alive(p)) && !ctx.stop.load(Ordering::Relaxed) {
                stop(
                    EndReason::TargetDied,
                    "the embedded server exited during the run".into(),
                );
            }
            let streak = ctx.recorder.transport_streak();
            if streak >= DEAD_STREAK && !ctx.stop.load(Ordering::Relaxed) {
                let by = if ctx.recorder.round_trips() > streak {
                    EndReason::TargetDied
                } else {
                    EndReason::TargetUnreachable
                };
                // A process still running refuses or resets connections (a
                // full accept queue, a connection cap): not the same fix as
                // a dead one.
                let alive = if target_pid.is_some_and(health::alive) {
                    ", though its process still runs (it refused or reset the connections)"
                } else {
                    ""
                };
                stop(
                    by,
                    format!("{streak} consecutive round trips could not reach the target{alive}"),
                );
            }
            if !ctx.stop.load(Ordering::Relaxed)
                && let Some(why) = aborts.due(&ctx.recorder)
            {
                stop(EndReason::Aborted, why);
            }
            ctx.recorder.observe_quiet();
            let quiet = ctx.recorder.since_last_answer();
            if quiet >= ctx.plan.stall && !ctx.stop.load(Ordering::Relaxed) {
                stop(
                    EndReason::Stalled,
                    format!(
                        "no round trip got an answer for {:.1} s (the target is stalled, or every \
                         request times out: timeout {:?})",
                        quiet.as_secs_f64(),
                        ctx.plan.timeout
                    ),
                );
            }
            if let Some(sig) = crate::interrupt::received()
                && !ctx.stop.load(Ordering::Relaxed)
            {
                stop(EndReason::Interrupted, sig.note().into());
            }
            if goose && goose::is_killswitch_triggered() && !ctx.stop.load(Ordering::Relaxed) {
                stop(EndReason::Interrupted, "stopped by Ctrl-C".into());
            }
            let last = progress.then(|| ctx.recorder.last_interval()).flatten();
            if progress && line.due_for(last.as_ref().map(|i| i.start_s)) {
                let rec = &ctx.recorder;
                let el = started.elapsed();
                let snap = super::progress::Snapshot {
                    label: &label,
                    elapsed: el,
                    timeline: &timeline,
                    round_trips: rec.round_trips(),
                    last_rate: last
                        .as_ref()
                        .map(|i| i.round_trips as f64 / i.len_s.max(1e-3)),
                    last_span: last.as_ref().map(|i| (i.start_s, i.len_s)),
                    share: 1.0 / f64::from(ctx.plan.segment.count.max(1)),
                    in_flight: rec.in_flight(),
                    unexpected: rec.errors(),
                    last_errors: last
                        .as_ref()
                        .map(super::progress::error_classes)
                        .unwrap_or_default(),
                    p50_ms: last.as_ref().map(|i| i.p50_ms),
                    p99_ms: last.as_ref().map(|i| i.p99_ms),
                    bands: last.as_ref().map(|i| i.e2e_bands),
                };
                line.show(&snap, super::progress::width());
            }
        }
        line.finish();
    }
}

/// The plan's `abort_on_fail` thresholds (k6's `abortOnFail`), judged on
/// the metrics so far once a second, each from its `delay_abort_eval` into
/// the measured window on.
struct Aborts {
    thresholds: Vec<crate::load::spec::threshold::Threshold>,
    last: Option<Instant>,
}

impl Aborts {
    fn new(plan: &Plan) -> Aborts {
        Aborts {
            thresholds: plan
                .thresholds
                .iter()
                .filter(|t| t.abort.is_some())
                .cloned()
                .collect(),
            last: None,
        }
    }

    /// Why the run must end now (a failed threshold, with its figure), if
    /// it must.
    fn due(&mut self, recorder: &Recorder) -> Option<String> {
        if self.thresholds.is_empty()
            || self
                .last
                .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return None;
        }
        self.last = Some(Instant::now());
        let into = recorder.into_window();
        let ready: Vec<_> = self
            .thresholds
            .iter()
            .filter(|t| !into.is_zero() && t.abort.is_some_and(|d| into >= d))
            .collect();
        if ready.is_empty() {
            return None;
        }
        let set = recorder.snapshot();
        ready.into_iter().find_map(|t| {
            let actual = crate::load::metrics::measure::measure(t, &set);
            (!actual.is_some_and(|v| t.passes(v))).then(|| {
                format!(
                    "threshold `{}` failed {:.1} s into the measured window (actual {}); \
                     abort_on_fail ended the run",
                    t.expr,
                    into.as_secs_f64(),
                    actual.map_or_else(|| "nothing measured".into(), |v| t.value_text(v))
                )
            })
        })
    }
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

/// Asks the target what an MCP client would before the run: does it speak
/// the generations the plan's scenarios use, and does it list their tools?
/// Asked as the plan's token, then as the users' first principal when that
/// is another: a server that knows only its own tokens refuses generated
/// names, and is told so before any load. `Ok` holds, per scenario, the
/// argument that can carry a round trip's marker under its tool's
/// `inputSchema`; `Err` is a one-line reason.
pub async fn preflight(plan: &Plan, mcp_url: &str) -> Result<Vec<Option<String>>, PreflightError> {
    use crate::load::spec::principals::Principals;
    let t = &plan.target;
    let markers = preflight_as(plan, mcp_url, &t.token).await?;
    let first = t
        .principals
        .tokens(&t.token, &plan.shape, plan.max_in_flight)
        .swap_remove(0);
    if first == t.token {
        return Ok(markers);
    }
    let who = match &t.principals {
        Principals::File { path, .. } => format!("the first token of {path}"),
        _ => format!("the generated principal {first:?}"),
    };
    preflight_as(plan, mcp_url, &first)
        .await
        .map_err(|e| PreflightError::Principal {
            who,
            source: Box::new(e),
        })?;
    Ok(markers)
}

/// A failure that was a TLS handshake, in words with its fix, or `other`.
fn tls_or(
    mcp_url: &str,
    e: &impl std::fmt::Display,
    other: impl FnOnce(String, String) -> PreflightError,
) -> PreflightError {
    let why = e.to_string();
    match crate::client::tls::explain_text(&why) {
        Some(explained) => PreflightError::Tls {
            url: mcp_url.to_owned(),
            explained,
        },
        None => other(mcp_url.to_owned(), why),
    }
}

/// [`preflight`] as bearer `token`.
async fn preflight_as(
    plan: &Plan,
    mcp_url: &str,
    token: &str,
) -> Result<Vec<Option<String>>, PreflightError> {
    use crate::client::raw::Rpc;
    use crate::discover::{self, Wire, all_modes, legacy, modern, wire::Log};
    use crate::protocol::Generation;
    let http = discover::http_client().map_err(|e| PreflightError::Client(e.to_string()))?;
    let log = Log::new(
        http,
        mcp_url,
        token,
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
    let mut markers = vec![None; plan.scenarios.len()];
    for g in gens {
        let tools: Vec<serde_json::Value> = match g {
            Generation::Modern => modern::list_tools(&log, &caps)
                .await
                .map_err(|e| tls_or(mcp_url, &e, |url, why| PreflightError::Modern { url, why }))?,
            Generation::Legacy => {
                let s = legacy::open(&log, &caps, true).await.map_err(|e| {
                    tls_or(mcp_url, &e, |url, why| PreflightError::Legacy { url, why })
                })?;
                let list = |why: String| PreflightError::LegacyList {
                    url: mcp_url.to_owned(),
                    why,
                };
                let reply = log
                    .send(legacy::request(
                        &log,
                        &s,
                        "tools/list",
                        "tools/list",
                        serde_json::json!({}),
                    ))
                    .await
                    .map_err(|e| list(format!(": {e}")))?;
                legacy::close(&log, &s).await;
                match reply.rpc() {
                    Rpc::Result(v) => v
                        .get("tools")
                        .and_then(serde_json::Value::as_array)
                        .cloned()
                        .unwrap_or_default(),
                    other => return Err(list(format!(" answered {}", other.describe()))),
                }
            }
        };
        let names: Vec<String> = tools
            .iter()
            .filter_map(|d| {
                d.get("name")
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_owned)
            })
            .collect();
        for (i, sc) in plan.scenarios.iter().enumerate() {
            if (g == Generation::Legacy) != sc.is_legacy() {
                continue;
            }
            if let Some(schema) = tools
                .iter()
                .find(|d| d.get("name").and_then(serde_json::Value::as_str) == Some(&sc.tool))
                .and_then(|d| d.get("inputSchema"))
            {
                markers[i] = crate::client::marker::free_string_argument(schema, &sc.arguments);
            }
            if !names.contains(&sc.tool) {
                return Err(PreflightError::NoTool {
                    scenario: sc.name.clone(),
                    url: mcp_url.to_owned(),
                    tool: sc.tool.clone(),
                    generation: g,
                    listed: names,
                });
            }
        }
    }
    Ok(markers)
}

/// Waits until `at` (wall clock), with a progress line on stderr when
/// `progress`; returns how late the start is (zero when on time).
pub async fn wait_until(at: SystemTime, progress: bool, label: &str) -> Duration {
    let mut line = ProgressLine::new(true);
    loop {
        let now = SystemTime::now();
        let Ok(left) = at.duration_since(now) else {
            break;
        };
        if left.is_zero() {
            break;
        }
        if progress && line.due() {
            line.print(&format!(
                "{label} waiting for the synchronized start at {} ({:.1} s)",
                humantime::format_rfc3339_millis(at),
                left.as_secs_f64()
            ));
        }
        // Short sleeps near the end: the wall clock, not a monotonic
        // deadline, is what the other processes share.
        tokio::time::sleep(left.min(Duration::from_millis(200))).await;
    }
    line.finish();
    SystemTime::now().duration_since(at).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_end_reason_wins() {
        let e = EndState::default();
        e.set(EndReason::MaxRequests, "cap".into());
        e.set(EndReason::TargetDied, "x".into());
        assert_eq!(e.get().map(|r| r.0), Some(EndReason::MaxRequests));
    }
}
