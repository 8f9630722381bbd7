//! The black-box fuzzer behind `elicitkit fuzz --target URL`: any MCP
//! server over HTTP, both generations.
//!
//! Discovery ([`crate::discover`], the one `check` and `load` use) finds
//! the generations, tools and flows. Then case after case, each derived
//! from `(--seed, index)` ([`case`]), starts a fresh flow and sends it with
//! [`crate::fuzz::mutation`]'s changes to states, `inputResponses`,
//! headers and JSON text, plus replays and concurrent copies, under one
//! of five declared capability variants, after list and discovery requests
//! ([`exec`]).
//! The [`oracle`]s: 5xx, connection reset, a reply that is not JSON-RPC,
//! a hang past the timeout, the server no longer answering, a changed
//! state (or another principal) completing where controls (no state, and
//! an untampered state) show the state load-bearing
//! ([`crate::oracle::tamper`]; otherwise a note), an input request for a
//! mode the case did not declare, a single-use request completing twice
//! (and, as a warning, any request replayed with the same state and
//! answers). A replay or a changed state is reported only where the
//! completion acted: the effect control, the same flow declined, reads
//! otherwise ([`crate::oracle::effect`]; otherwise a note).
//! With no 2026-07-28 tool listed, that generation's listing replies are
//! judged instead (`input_required` on `tools/list` hides every tool).
//! Each hit is delta-debugged over its op list ([`minimise`]), filed under
//! its root cause ([`group`]: oracle, generation, method, op kinds; the
//! tools and cases counted) and, the first time, written as a reproducer
//! ([`repro`]), which is re-run against the target before it is reported
//! ([`rerun`]); the run ends with a [`summary`].
//! Every run is bounded by a duration and a request count.
//!
//! - [`wire`]: the recording network wire.

pub mod case;
pub mod exec;
pub mod group;
pub mod minimise;
pub mod oracle;
pub mod repro;
pub mod rerun;
pub mod summary;
#[cfg(test)]
mod test_http;
pub mod verdict_file;
pub mod wire;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicI64;
use std::time::{Duration, Instant};

use crate::client::local::Local;
use crate::discover::{self, DiscoverError, FirstReply, TargetSettings};
use crate::findings::Severity;
use crate::fuzz::harness::wire::Logged;
use crate::protocol::Generation;

use crate::oracle::Oracle;
use case::Op;
use exec::{Target, ToolInfo};
use group::{Groups, RootCause};
use summary::{Listed, Summary};

/// How a run goes.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The endpoint, principals (cross-principal retries run when the
    /// server authenticates, or when the other was given explicitly),
    /// tools, bound on every request (a hang is a reply later than it) and
    /// the seed of the cases.
    pub target: TargetSettings,
    /// Whether `target.other_principal` was given explicitly.
    pub other_given: bool,
    /// Only this generation (`None`: every one spoken).
    pub generation: Option<Generation>,
    /// How long to fuzz (discovery not included).
    pub duration: Duration,
    /// Most HTTP requests (discovery not included).
    pub max_requests: u64,
    /// Stop once this many findings are listed (`None`: run on).
    pub max_findings: Option<usize>,
    /// Where findings and the summary go (`.../fuzz`).
    pub out_dir: PathBuf,
    /// Most candidates tried when minimising one finding.
    pub minimise_budget: usize,
    /// Print a progress line this often (`None`: never).
    pub progress: Option<Duration>,
    /// The server speaks stdio behind the bridge at `target.mcp_url`: its
    /// command goes into each `repro.sh`, its exits are findings.
    pub stdio: Option<crate::stdio::Info>,
    /// Tools the user says act on what their state holds, as the server's
    /// documentation does (`--trusts-state`).
    pub trusts_state: Vec<String>,
}

impl Settings {
    /// Defaults for `mcp_url`: principals `alice` and `bob`, 60 s, 100 000
    /// requests, 5 s per request, seed 1, findings under `reports/fuzz`.
    pub fn new(mcp_url: impl Into<String>) -> Self {
        Settings {
            target: TargetSettings::new(mcp_url, Duration::from_secs(5), 1),
            other_given: false,
            generation: None,
            duration: Duration::from_secs(60),
            max_requests: 100_000,
            max_findings: None,
            out_dir: PathBuf::from("reports/fuzz"),
            minimise_budget: 24,
            progress: None,
            stdio: None,
            trusts_state: Vec::new(),
        }
    }
}

/// One minimised finding.
#[derive(Debug, Clone)]
pub struct Finding {
    /// Oracle.
    pub oracle: Oracle,
    /// What happened.
    pub what: String,
    /// Generation.
    pub generation: Generation,
    /// The JSON-RPC method the mutation was sent to (see [`group`]).
    pub method: String,
    /// The case's tool (the flow `repro.sh` runs; a `tools/list`
    /// mutation does not call it).
    pub tool: String,
    /// The run's seed.
    pub seed: u64,
    /// The case's index.
    pub case: u64,
    /// The minimised ops.
    pub ops: Vec<Op>,
    /// The ops as generated.
    pub original_ops: Vec<String>,
    /// Whether the minimised ops showed the oracle again (in-process; the
    /// re-run of `repro.sh` is [`rerun`]'s verdict).
    pub minimised_reproduced: bool,
    /// The minimised run's requests and replies.
    pub log: Vec<Logged>,
    /// Its 2025-11-25 streamed calls.
    pub streamed: Vec<crate::client::raw::Exchange>,
    /// Its 2025-11-25 answered call (body, action).
    pub legacy_call: Option<(serde_json::Value, String)>,
    /// The endpoint.
    pub mcp_url: String,
    /// `elicitkit bridge`'s arguments for the stdio server (shell-quoted),
    /// when the target speaks stdio: `repro.sh` starts it for `URL`.
    pub stdio_command: Option<String>,
    /// The stdio server's command as a user reads it: what the finding's
    /// words name (the bridge's URL is only how `repro.sh` reaches it).
    pub server_command: Option<String>,
    /// The principal's token.
    pub principal: String,
    /// The other principal's token, if used.
    pub other_principal: Option<String>,
    /// The request timeout in seconds.
    pub timeout_secs: f64,
    /// The tool was said to act on its state (`--trusts-state`): a changed
    /// state completing is judged on that word ([`exec::ToolInfo::trusts_state`]).
    pub trusts_state: bool,
}

impl Finding {
    /// Names of the minimised ops.
    pub fn op_names(&self) -> Vec<String> {
        self.ops.iter().map(Op::name).collect()
    }
}

fn tool_infos(d: &discover::Discovery, g: Generation, trusts_state: &[String]) -> Vec<ToolInfo> {
    let Some(v) = d.view(g) else {
        return Vec::new();
    };
    v.tools
        .iter()
        .filter(|t| !matches!(t.first, FirstReply::Other(_)) || t.elicits())
        .map(|t| ToolInfo {
            name: t.name.clone(),
            args: t.arguments.clone(),
            other_args: t.other_arguments.clone(),
            single_use: t.single_use,
            elicits: t.elicits(),
            has_state: t.issues_state(),
            elicits_on_get: t.elicits_on_get,
            trusts_state: trusts_state.contains(&t.name),
        })
        .collect()
}

/// Discovers the target and builds what the cases run against.
pub async fn prepare(s: &Settings) -> Result<Target, DiscoverError> {
    // Over stdio, the bridge is called in process: no loopback HTTP hop.
    let local = s.stdio.as_ref().map(|i| Local::new(i.router.clone()));
    let discovery = discover::Settings {
        local: local.clone(),
        ..s.target.discovery(s.generation)
    };
    let d = discover::discover(&discovery).await?;
    let http = discover::http_client()?;
    // Cross-principal retries mean something when the user named two
    // principals or the server shows it knows its users (as for `check`).
    let users = s.other_given
        || !discover::identity::evidence(
            &d,
            http.clone(),
            &s.target.principal,
            &s.target.other_principal,
            s.target.timeout,
            local.clone(),
        )
        .await
        .is_empty();
    Ok(Target {
        mcp_url: s.target.mcp_url.clone(),
        principal: s.target.principal.clone(),
        other_principal: users.then(|| s.target.other_principal.clone()),
        timeout: s.target.timeout,
        seed: s.target.seed,
        modern: tool_infos(&d, Generation::Modern, &s.trusts_state),
        legacy: tool_infos(&d, Generation::Legacy, &s.trusts_state),
        speaks_modern: d.modern.is_some(),
        http,
        ids: AtomicI64::new(1_000_000),
        stdio_log: s.stdio.as_ref().map(|i| i.log.clone()),
        local,
    })
}

/// Runs the fuzzer against a prepared target; writes each finding and the
/// summary under `s.out_dir`.
pub async fn run(s: &Settings, t: &Target) -> std::io::Result<Summary> {
    std::fs::create_dir_all(&s.out_dir)?;
    let gens: Vec<(Generation, usize)> = [Generation::Modern, Generation::Legacy]
        .into_iter()
        .map(|g| (g, t.tools(g).len()))
        .filter(|(_, n)| *n > 0)
        .collect();
    let started = Instant::now();
    let mut summary = Summary {
        target: shown(s),
        seed: s.target.seed,
        generations: gens.iter().map(|(g, _)| g.to_string()).collect(),
        tools: gens
            .iter()
            .map(|(g, _)| {
                (
                    g.to_string(),
                    t.tools(*g).iter().map(|x| x.name.clone()).collect(),
                )
            })
            .collect(),
        execs: 0,
        requests: 0,
        elapsed_secs: 0.0,
        execs_per_sec: 0.0,
        requests_per_sec: 0.0,
        stopped: "duration".into(),
        findings_per_oracle: BTreeMap::new(),
        first_finding_secs: None,
        findings: Vec::new(),
        notes: Vec::new(),
        stdio: None,
    };
    let mut groups = Groups::default();
    if gens.is_empty() {
        summary.stopped = "no tool listed".into();
    }
    // Spoken, but no 2026-07-28 tool listed: its listing replies may say why.
    if t.modern.is_empty()
        && let Some((hit, log)) = t.listings().await
    {
        summary.requests += log.len() as u64;
        let f = listing_finding(s, t, hit, log);
        let pre = RootCause::new(f.oracle, f.generation, &f.method, &f.ops);
        let at = started.elapsed().as_secs_f64();
        file(s, &mut groups, &pre, &f, None, at).await?;
    }
    let mut last_progress = Instant::now();
    let mut index = 0u64;
    while started.elapsed() < s.duration {
        if summary.requests >= s.max_requests {
            summary.stopped = "max-requests".into();
            break;
        }
        // Ctrl-C or SIGTERM: what was found is filed already (repro.sh
        // included); the summary is written below.
        if let Some(sig) = crate::interrupt::received() {
            summary.stopped = sig.note().into();
            break;
        }
        let Some(c) = case::generate(s.target.seed, index, &gens) else {
            break;
        };
        index += 1;
        let mut ex = t.exec(c.generation, c.tool, &c.ops, c.index).await;
        summary.execs += 1;
        summary.requests += ex.log.len() as u64;
        if let Some(n) = ex.note.take() {
            summary.note(n);
        }
        if let Some(hit) = ex.hit.clone() {
            let tool = hit.sent.tool.as_deref();
            let pre = RootCause::new(hit.oracle, c.generation, &hit.sent.method, &c.ops);
            if !groups.repeat(&pre, tool) {
                let at = started.elapsed().as_secs_f64();
                let bound = Bound {
                    until: started + s.duration,
                    requests: s.max_requests.saturating_sub(summary.requests),
                };
                let (f, extra) = minimise_finding(s, t, &c, &hit, ex, bound).await;
                summary.requests += extra;
                file(s, &mut groups, &pre, &f, tool, at).await?;
                if f.oracle == Oracle::Unresponsive && !t.alive().await {
                    summary.stopped = "unresponsive".into();
                    break;
                }
                if s.max_findings.is_some_and(|m| groups.listed.len() >= m) {
                    summary.stopped = "max-findings".into();
                    break;
                }
            }
        }
        if let Some(p) = s.progress
            && last_progress.elapsed() >= p
        {
            last_progress = Instant::now();
            let e = started.elapsed().as_secs_f64();
            eprintln!(
                "[{e:>5.1}s] {} execs ({:.1}/s), {} requests ({:.1}/s), {} findings",
                summary.execs,
                summary.execs as f64 / e.max(1e-9),
                summary.requests,
                summary.requests as f64 / e.max(1e-9),
                groups.listed.len()
            );
        }
    }
    summary.findings = groups.listed;
    summary.stdio = s.stdio.as_ref().map(|i| summary::Processes {
        started: i.log.spawn_count(),
        sessions_reused: i.log.reuse_count(),
    });
    summary.elapsed_secs = started.elapsed().as_secs_f64();
    summary.execs_per_sec = summary.execs as f64 / summary.elapsed_secs.max(1e-9);
    summary.requests_per_sec = summary.requests as f64 / summary.elapsed_secs.max(1e-9);
    summary.count();
    std::fs::write(
        s.out_dir.join("summary.json"),
        serde_json::to_string_pretty(&summary).unwrap_or_default(),
    )?;
    std::fs::write(s.out_dir.join("summary.md"), summary.markdown())?;
    Ok(summary)
}

/// The target as a user names it: the URL, or a stdio server's command
/// (never the bridge's loopback URL in front of it).
pub fn shown(s: &Settings) -> String {
    s.stdio.as_ref().map_or_else(
        || s.target.mcp_url.clone(),
        |i| format!("stdio: {}", i.command),
    )
}

/// Files finding `f` (first seen `at` seconds in) under its root cause:
/// a new cause gets its folder, `repro.sh`, re-run and summary row.
async fn file(
    s: &Settings,
    groups: &mut Groups,
    pre: &RootCause,
    f: &Finding,
    tool: Option<&str>,
    at: f64,
) -> std::io::Result<()> {
    let cause = RootCause::new(f.oracle, f.generation, &f.method, &f.ops);
    if groups.file(pre, &cause, tool).is_some() {
        return Ok(());
    }
    let dir = format!(
        "{:03}-{}-{}-{}",
        groups.listed.len() + 1,
        f.oracle,
        slug(&f.method),
        g_short(f.generation),
    );
    let fdir = s.out_dir.join(&dir);
    repro::write(&fdir, f)?;
    verdict_file::write(&fdir, f)?;
    let rerun = rerun::rerun(&fdir, f).await;
    repro::write_finding(&fdir, f, &rerun)?;
    let listed = Listed {
        dir,
        oracle: f.oracle,
        severity: f.oracle.severity(),
        generation: f.generation.to_string(),
        method: f.method.clone(),
        ops: f.op_names(),
        tools: tool.into_iter().map(str::to_owned).collect(),
        count: 1,
        what: f.what.clone(),
        at_secs: at,
        rerun: rerun.clone(),
    };
    groups.add(pre, cause, tool, listed);
    if s.progress.is_some() {
        eprintln!(
            "[{:>5.1}s] {} {} [{} {}]: {} (reproduced: {})",
            at,
            if f.oracle.severity() == Severity::Must {
                "FINDING"
            } else {
                "WARNING"
            },
            f.oracle,
            f.generation,
            f.method,
            f.what,
            rerun.short()
        );
    }
    Ok(())
}

/// The finding of a listing request (no tool, no ops: nothing to minimise).
fn listing_finding(s: &Settings, t: &Target, hit: exec::Hit, log: Vec<Logged>) -> Finding {
    Finding {
        oracle: hit.oracle,
        what: hit.what,
        generation: Generation::Modern,
        method: hit.sent.method,
        tool: String::new(),
        seed: s.target.seed,
        case: 0,
        ops: Vec::new(),
        original_ops: Vec::new(),
        minimised_reproduced: true,
        log,
        streamed: Vec::new(),
        legacy_call: None,
        mcp_url: t.mcp_url.clone(),
        stdio_command: s.stdio.as_ref().map(|i| i.bridge_args.clone()),
        server_command: s.stdio.as_ref().map(|i| i.command.clone()),
        principal: t.principal.clone(),
        other_principal: t.other_principal.clone(),
        timeout_secs: t.timeout.as_secs_f64(),
        trusts_state: false,
    }
}

/// A method as part of a folder name: `tools/call` -> `tools-call`.
fn slug(method: &str) -> String {
    method
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn g_short(g: Generation) -> &'static str {
    match g {
        Generation::Modern => "mrtr",
        Generation::Legacy => "legacy",
    }
}

/// What is left of the run for minimising: it sends nothing past either.
struct Bound {
    until: Instant,
    requests: u64,
}

/// Delta-debugs the case's ops down to those the oracle still needs (on
/// the same method), and keeps the last run that showed it. Returns the
/// finding and the requests minimisation sent.
async fn minimise_finding(
    s: &Settings,
    t: &Target,
    c: &case::Case,
    hit: &exec::Hit,
    first: exec::Exec,
    bound: Bound,
) -> (Finding, u64) {
    let oracle = hit.oracle;
    let method = hit.sent.method.as_str();
    let mut best: Option<exec::Exec> = None;
    let mut best_ops: Vec<Op> = c.ops.clone();
    let requests = std::cell::Cell::new(0u64);
    let kept: std::cell::RefCell<Vec<(Vec<Op>, exec::Exec)>> = Default::default();
    let (requests_ref, kept_ref, bound) = (&requests, &kept, &bound);
    let min = minimise::ddmin(
        c.ops.clone(),
        |ops: Vec<Op>| async move {
            if Instant::now() >= bound.until || requests_ref.get() >= bound.requests {
                return false;
            }
            let ex = t.exec(c.generation, c.tool, &ops, c.index).await;
            requests_ref.set(requests_ref.get() + ex.log.len() as u64);
            // The same oracle on the same method: another method would be
            // another root cause.
            let ok = ex
                .hit
                .as_ref()
                .is_some_and(|h| h.oracle == oracle && h.sent.method == method);
            if ok {
                kept_ref.borrow_mut().push((ops, ex));
            }
            ok
        },
        s.minimise_budget,
    )
    .await;
    let kept = kept.into_inner();
    let requests = requests.get();
    if let Some((ops, ex)) = kept.into_iter().rev().find(|(o, _)| *o == min) {
        best_ops = ops;
        best = Some(ex);
    }
    let minimised_reproduced = best.is_some() || min == c.ops;
    let ex = match best {
        Some(ex) => ex,
        None => {
            best_ops = c.ops.clone();
            first
        }
    };
    let what = ex.hit.as_ref().map_or(hit.what.clone(), |h| h.what.clone());
    (
        Finding {
            oracle,
            what,
            generation: c.generation,
            method: method.to_owned(),
            tool: t.tools(c.generation)[c.tool].name.clone(),
            seed: s.target.seed,
            case: c.index,
            original_ops: c.ops.iter().map(Op::name).collect(),
            ops: best_ops,
            minimised_reproduced,
            log: ex.log,
            streamed: ex.streamed,
            legacy_call: ex.legacy_call,
            mcp_url: t.mcp_url.clone(),
            stdio_command: s.stdio.as_ref().map(|i| i.bridge_args.clone()),
            server_command: s.stdio.as_ref().map(|i| i.command.clone()),
            principal: t.principal.clone(),
            other_principal: t.other_principal.clone(),
            timeout_secs: t.timeout.as_secs_f64(),
            trusts_state: t.tools(c.generation)[c.tool].trusts_state,
        },
        requests,
    )
}
