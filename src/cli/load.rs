//! `elicitkit load`: run a load plan against an elicitation server, and
//! `elicitkit plan`: write the plan discovery would run, for editing.
//!
//! With `--target` and no `--plan`, the target is discovered (both
//! generations, its tools, which of them elicit) and a plan is built from
//! what was found ([`crate::load::spec::generate`]); the terminal lists every call
//! discovery made. With no `--target` (and no `url` in the plan) the
//! embedded reference server is started on 127.0.0.1 and stopped at the end;
//! with neither `--plan` nor `--target`, `loadtests/smoke.toml` runs (a
//! built-in copy when the file is not there).
//!
//! Exit codes ([`EXIT_CODES`]): 0 every threshold held; 1 a threshold failed,
//! the target stalled or died mid-run; 2 usage errors, a bad plan, a target
//! that does not answer as the plan needs (nothing is measured then); 130
//! interrupted by Ctrl-C (the report is written and marked so).

use super::{exit, usage_error};
use crate::discover::{self, Discovery, TargetSettings};
use crate::load::run::{self, Options, Verdict};
use crate::load::spec::generate;
use crate::load::spec::overrides::{self, Overrides};
use crate::load::spec::parse;
use crate::load::spec::plan::Plan;
use crate::load::spec::principals::Principals;
use crate::load::spec::shape::Model;
use crate::protocol::Generation;
use crate::report::format::ms;
use clap::Args as ClapArgs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The exit codes, for `--help`.
pub const EXIT_CODES: &str = "Exit codes: 0 every threshold held; 1 a threshold failed, or the \
target stalled or died; 2 usage error, bad plan, or a target that does not answer as an MCP \
server (nothing measured); 3 inconclusive (the generator could not back the verdict: the report \
says why); 130 / 143 stopped by Ctrl-C / SIGTERM (report written, marked INTERRUPTED).";

/// Exit code of a run whose verdict the generator cannot back.
pub const EXIT_INCONCLUSIVE: u8 = 3;

/// Exit code of a run stopped by Ctrl-C (128 + SIGINT, as shells report it);
/// SIGTERM's is 143 ([`crate::interrupt::Signal::exit_code`]).
pub const EXIT_INTERRUPTED: u8 = 130; // exit::interrupted()

/// `--help` examples of `elicitkit load`: a comment line, then the
/// command, each under 60 columns so that a narrow terminal wraps none.
pub const LOAD_EXAMPLES: &str = "Examples:
  # the smoke plan against an embedded reference server
  elicitkit load
  # your server: discover it, load every eliciting tool
  elicitkit load --target http://127.0.0.1:3000/mcp
  # 20 users for 30 s (closed model, as Goose and k6)
  elicitkit load --target URL -u 20 -d 30s
  # 200 round trips/s (open model); 5 s warm-up unmeasured
  elicitkit load --target URL -r 200 -d 30s --warmup 5s
  # ramp to 500/s, hold 30 s, ramp down
  elicitkit load --model open -s 10s:500,30s:500,10s:0
  # 512 users as 64 principals; real tokens from a file
  elicitkit load --target URL -u 512 --principals 64
  elicitkit load --target URL -u 64 --principal-file t.txt
  # fail the run on a threshold
  elicitkit load --threshold 'p99(retry) < 20ms'
  # a baseline of 5 runs once, then judge 3 runs against it
  elicitkit load --repeat 5 -o reports/base
  elicitkit load --baseline reports/base --repeat 3
  # the highest rate that holds the plan's SLO
  elicitkit load --plan loadtests/capacity.toml --capacity
  # 30 min at 50/s: do the target's RSS or fds grow?
  elicitkit load --target URL --soak 30m -r 50
  # write the plan discovery builds, edit it, run it
  elicitkit plan --target URL -o my-plan.toml
  elicitkit load --plan my-plan.toml

Capacity across instances, distributed runs, every option
in detail and the summary's columns: docs/load.md";

/// The smoke plan compiled in, used when `loadtests/smoke.toml` is absent.
pub const BUILTIN_SMOKE: &str = include_str!("../../loadtests/smoke.toml");

/// Why `load` takes no stdio target.
const STDIO_LOAD: &str = "load needs an HTTP target: a stdio server serves the one client that \
started it, so there is no shared capacity to plan (a process per user measures process \
starts, not the server). Check it with `elicitkit check --target stdio -- CMD`, or load its \
HTTP transport if it has one.";

/// Arguments of `elicitkit load`.
#[derive(Debug, ClapArgs)]
#[command(after_help = format!("{LOAD_EXAMPLES}\n\n{EXIT_CODES}"))]
pub struct Args {
    /// MCP endpoint to load, or several instances of one service as URL1,URL2 (default: the plan's,
    /// else an embedded reference server).
    #[arg(help_heading = "Target", long, value_name = "URL[,URL...]")]
    pub target: Option<String>,
    /// Plan file (TOML). Default: discovered from --target, else loadtests/smoke.toml.
    #[arg(help_heading = "Load shape", long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// Load only this tool (repeatable).
    #[arg(help_heading = "Target", long = "tool", value_name = "NAME")]
    pub tools: Vec<String>,
    /// Never call this tool (repeatable).
    #[arg(help_heading = "Target", long = "skip-tool", value_name = "NAME")]
    pub skip_tools: Vec<String>,
    /// Only this generation when discovering: 2025-11-25 or 2026-07-28.
    #[arg(help_heading = "Target", long, value_name = "VERSION")]
    pub generation: Option<Generation>,
    /// Every user runs as this bearer token (default: each user its own principal).
    #[arg(
        help_heading = "Target",
        long,
        env = "ELICITKIT_PRINCIPAL",
        value_name = "TOKEN"
    )]
    pub principal: Option<String>,
    /// Spread the users over N generated principals (ek-user-0001 …), round robin.
    #[arg(
        help_heading = "Target",
        long,
        value_name = "N",
        conflicts_with = "principal_file"
    )]
    pub principals: Option<usize>,
    /// Real tokens for the users, one a line, taken round robin.
    #[arg(help_heading = "Target", long, value_name = "FILE")]
    pub principal_file: Option<PathBuf>,
    /// How an https target's certificate is checked (`cacert` and
    /// `insecure` in the plan's [target] table; the flags win).
    #[command(flatten)]
    pub tls: super::target::TlsArgs,
    /// The measured window, e.g. 30s (after the users' launch and --warmup).
    #[arg(short = 'd', help_heading = "Load shape", long, value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,
    /// Closed model: N users, each one round trip at a time.
    #[arg(
        short = 'u',
        help_heading = "Load shape",
        long,
        value_name = "N",
        conflicts_with = "rate"
    )]
    pub users: Option<usize>,
    /// Open model: N round trips per second.
    #[arg(short = 'r', help_heading = "Load shape", long, value_name = "N")]
    pub rate: Option<f64>,
    /// Stages DURATION:TARGET,… like k6's, e.g. 10s:50,30s:50,10s:0 (the whole run).
    #[arg(short = 's', help_heading = "Load shape", long = "stage", value_name = "DURATION:TARGET,…", conflicts_with_all = ["users", "rate", "duration"])]
    pub stages: Vec<String>,
    /// What --stage targets count: closed (users) or open (round trips/s).
    #[arg(help_heading = "Load shape", long, value_name = "closed|open", value_parser = Model::parse)]
    pub model: Option<Model>,
    /// Run this long first and leave it out of every result, e.g. 5s.
    #[arg(help_heading = "Load shape", long, value_parser = humantime::parse_duration)]
    pub warmup: Option<Duration>,
    /// Hold the load this long, then fail on RSS or descriptor growth, e.g. 30m.
    #[arg(help_heading = "Soak", long, value_name = "DURATION", value_parser = humantime::parse_duration, conflicts_with_all = ["duration", "stages", "capacity"])]
    pub soak: Option<Duration>,
    /// Watch the target this long with no load after the soak (default: a fifth of it).
    #[arg(help_heading = "Soak", long, value_name = "DURATION", value_parser = humantime::parse_duration, requires = "soak")]
    pub cool_down: Option<Duration>,
    /// RSS growth allowed, MiB per minute (default 1).
    #[arg(help_heading = "Soak", long, value_name = "MIB", requires = "soak")]
    pub soak_rss_per_min: Option<f64>,
    /// Descriptor growth allowed per minute (default 1).
    #[arg(help_heading = "Soak", long, value_name = "N", requires = "soak")]
    pub soak_fds_per_min: Option<f64>,
    /// The least R² a growth slope must fit with to count (default 0.8).
    #[arg(help_heading = "Soak", long, value_name = "R2", requires = "soak")]
    pub soak_min_r2: Option<f64>,
    /// The target's process id, for its RSS, descriptors and CPU (default: found when local).
    #[arg(help_heading = "Target", long, value_name = "PID")]
    pub target_pid: Option<u32>,
    /// Hard cap on HTTP requests.
    #[arg(help_heading = "Load shape", long, value_name = "N")]
    pub max_requests: Option<u64>,
    /// Per-request timeout, e.g. 5s (discovery waits as long).
    #[arg(help_heading = "Target", long, value_parser = humantime::parse_duration)]
    pub timeout: Option<Duration>,
    /// Worker threads of the load generator (default: by model and rate).
    #[arg(help_heading = "Load shape", long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub generator_threads: Option<u16>,
    /// Pass/fail threshold (repeatable), e.g. 'p99(retry) < 50ms'.
    #[arg(
        help_heading = "Thresholds and baselines",
        long = "threshold",
        value_name = "EXPR"
    )]
    pub thresholds: Vec<String>,
    /// Step the open-model rate up to the plan's SLO knee (not with --users, --rate, --stage).
    #[arg(help_heading = "Capacity search", long, conflicts_with_all = ["users", "rate", "stages"])]
    pub capacity: bool,
    /// The rate to size for: instances needed at the knee.
    #[arg(help_heading = "Capacity search", long, value_name = "N")]
    pub target_rate: Option<f64>,
    /// Capacity-search knobs.
    #[command(flatten)]
    pub cap: super::capacity::SearchArgs,
    /// Where results go (repeatable): a folder (default reports), ndjson=FILE,
    /// or goose (Goose's goose.json and goose.md in the run folder, closed model).
    #[arg(short = 'o', help_heading = "Output", long = "out", value_name = "DIR | ndjson=FILE | goose", value_parser = parse_out)]
    pub out: Vec<OutTarget>,
    /// Also write the summary JSON to FILE (k6's flag).
    #[arg(help_heading = "Output", long, value_name = "FILE")]
    pub summary_export: Option<PathBuf>,
    /// Compare with earlier runs (summary.json, run folder, or folder of them; repeatable).
    #[arg(
        help_heading = "Thresholds and baselines",
        long,
        value_name = "SUMMARY"
    )]
    pub baseline: Vec<PathBuf>,
    /// How much worse, in percent, a figure may get before a real change fails.
    #[arg(help_heading = "Thresholds and baselines", long, value_name = "PCT", default_value_t = crate::load::summarize::baseline::DEFAULT_TOLERANCE_PCT)]
    pub baseline_tolerance: f64,
    /// Run the plan N times, one report each (with --baseline: judged together).
    #[arg(help_heading = "Thresholds and baselines", long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Name of the report folder (default: <UTC time>-<plan>).
    #[arg(help_heading = "Output", long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Worker threads of the embedded server.
    #[arg(help_heading = "Embedded server", long, value_name = "N")]
    pub workers: Option<usize>,
    /// Extra argument for the embedded serve (repeatable), e.g. --serve-arg=--flaw.
    #[arg(
        help_heading = "Embedded server",
        long = "serve-arg",
        value_name = "ARG",
        allow_hyphen_values = true
    )]
    pub serve_args: Vec<String>,
    /// Run segment I of N of the plan (k6's execution segments), e.g. 2/3.
    #[arg(help_heading = "Distributed runs", long, value_name = "I/N", value_parser = crate::load::spec::segment::Segment::parse)]
    pub segment: Option<crate::load::spec::segment::Segment>,
    /// Start at this time: RFC 3339 UTC, e.g. 2026-12-02T03:10:00Z, or +10s.
    #[arg(help_heading = "Distributed runs", long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// No live progress line.
    #[arg(help_heading = "Output", long, short)]
    pub quiet: bool,
}

/// One `--out` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutTarget {
    /// A folder that receives `<run-id>/`.
    Dir(PathBuf),
    /// A file that receives the interval stream, one JSON object a line.
    Ndjson(PathBuf),
    /// Goose's own `goose.json` and `goose.md` in the run folder (closed
    /// model). Goose records every leg only when they are asked for
    /// ([`crate::load::exec::closed::goose_config`]).
    Goose,
}

fn parse_out(v: &str) -> Result<OutTarget, String> {
    match v.split_once('=') {
        Some(("ndjson", "")) => Err("ndjson= needs a file, e.g. --out ndjson=run.ndjson".into()),
        Some(("ndjson", f)) => Ok(OutTarget::Ndjson(f.into())),
        Some((kind, _)) if !kind.contains(['/', '.']) && !Path::new(v).exists() => Err(format!(
            "unknown output `{kind}=`: give a folder, ndjson=FILE or goose"
        )),
        // A folder of that name is `./goose`.
        None if v == "goose" => Ok(OutTarget::Goose),
        _ => Ok(OutTarget::Dir(v.into())),
    }
}

/// The report folder root: the last `--out DIR`, else `reports`.
fn out_dir(outs: &[OutTarget]) -> PathBuf {
    outs.iter()
        .rev()
        .find_map(|o| match o {
            OutTarget::Dir(d) => Some(d.clone()),
            OutTarget::Ndjson(_) | OutTarget::Goose => None,
        })
        .unwrap_or_else(|| "reports".into())
}

/// The interval stream file, if one was asked for (the last wins).
fn ndjson_file(outs: &[OutTarget]) -> Option<PathBuf> {
    outs.iter().rev().find_map(|o| match o {
        OutTarget::Ndjson(f) => Some(f.clone()),
        OutTarget::Dir(_) | OutTarget::Goose => None,
    })
}

/// The flags of `args` that override a plan, as data.
fn overrides(args: &Args) -> Overrides {
    Overrides {
        target: args.target.clone(),
        principal: args.principal.clone(),
        principals: args.principals,
        principal_file: args.principal_file.clone(),
        cacert: args.tls.cacert.clone(),
        insecure: args.tls.insecure,
        tools: args.tools.clone(),
        skip_tools: args.skip_tools.clone(),
        workers: args.workers,
        max_requests: args.max_requests,
        timeout: args.timeout,
        warmup: args.warmup,
        users: args.users,
        rate: args.rate,
        stages: args.stages.clone(),
        model: args.model,
        duration: args.duration,
        thresholds: args.thresholds.clone(),
        capacity: args.capacity,
        target_rate: args.target_rate,
        search: args.cap.overrides(),
        search_flags: args.cap.any() || args.target_rate.is_some(),
        segment: args.segment,
        soak: args.soak,
        cool_down: args.cool_down,
        soak_limits: crate::load::spec::overrides::SoakLimitOverrides {
            rss_mib_per_min: args.soak_rss_per_min,
            fds_per_min: args.soak_fds_per_min,
            min_r2: args.soak_min_r2,
        },
    }
}

/// Reads the plan (the discovered one, a file, or the built-in smoke
/// plan) and applies `o`.
fn build_plan(args: &Args, o: &Overrides, discovered: Option<Plan>) -> Result<Plan, String> {
    let mut plan = match (&args.plan, discovered) {
        (_, Some(p)) => p,
        (Some(p), None) => parse::load_file(p).map_err(|e| e.to_string())?,
        (None, None) => {
            let default = Path::new("loadtests/smoke.toml");
            if default.exists() {
                parse::load_file(default).map_err(|e| e.to_string())?
            } else {
                parse::parse_plan(BUILTIN_SMOKE, "<built-in smoke.toml>", "smoke")
                    .map_err(|e| e.to_string())?
            }
        }
    };
    plan.apply(o).map_err(|e| e.to_string())?;
    for t in &plan.thresholds {
        if let Some(note) = t.ambiguity() {
            eprintln!("elicitkit: note: {note}");
        }
    }
    Ok(plan)
}

fn discovery_settings(
    target: &str,
    tools: &[String],
    skip: &[String],
    generation: Option<Generation>,
    principal: Option<&str>,
) -> discover::Settings {
    // The target as check and fuzz describe it; discovery's own seed.
    let mut t = TargetSettings::new(target, Duration::from_secs(5), discover::Settings::SEED);
    t.tools = tools.to_vec();
    t.skip_tools = skip.to_vec();
    if let Some(p) = principal {
        t.principal = p.to_owned();
    }
    t.discovery(generation)
}

/// Prints what discovery called and found, to stderr.
fn print_discovery(d: &Discovery, g: &generate::Generated) {
    eprintln!("elicitkit: discovered {} — it called:", d.mcp_url);
    for line in d.call_lines() {
        eprintln!("  {line}");
    }
    for line in d.tool_lines() {
        eprintln!("  tool {line}");
    }
    for l in &g.left_out {
        eprintln!("  not loaded: {} {}: {}", l.generation, l.tool, l.why);
    }
    let names: Vec<&str> = g.plan.scenarios.iter().map(|s| s.name.as_str()).collect();
    eprintln!("  scenarios: {}", names.join(", "));
}

/// Discovers `target` and builds its plan (`Err`: a one-line reason).
async fn discovered_plan(
    settings: &discover::Settings,
    opts: &generate::Options,
) -> Result<(Discovery, generate::Generated), String> {
    let d = discover::discover(settings)
        .await
        .map_err(|e| e.to_string())?;
    let g = generate::from_discovery(&d, opts).map_err(|e| e.to_string())?;
    Ok((d, g))
}

/// Worker threads for the generator's runtime (see `--generator-threads`).
fn generator_threads(plan: &Plan, args: &Args) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if let Some(n) = args.generator_threads {
        return usize::from(n);
    }
    let peak = match (&plan.capacity, plan.shape.model()) {
        (Some(c), _) if args.capacity => c.max_rate,
        (_, Model::Open) => plan.shape.peak(),
        (_, Model::Closed) => return cores,
    };
    crate::load::exec::open::shards_for(peak, cores)
}

/// Raises this process's descriptor limit for the connections the plan's
/// round trips may hold ([`Plan::max_connections`]), or lowers
/// `max_in_flight` to what the limit allows, saying so: out of descriptors,
/// every connection would fail as the target's fault.
fn fit_descriptors(plan: &mut Plan) {
    let wanted = plan.max_connections();
    let allowed = crate::server::accept::effective_cap(wanted);
    if allowed < wanted {
        let lowered = (allowed / 2).max(1);
        eprintln!(
            "elicitkit: at most {lowered} round trips in flight (max_in_flight {} lowered): the \
             descriptor limit (ulimit -n) leaves room for {allowed} connections",
            plan.max_in_flight
        );
        plan.in_flight_lowered_from = Some(plan.max_in_flight);
        plan.max_in_flight = lowered;
    }
}

fn runtime(threads: usize) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// Runs `elicitkit load`.
pub fn run(args: Args) -> ExitCode {
    if args.target.as_deref() == Some(super::target::STDIO) {
        return usage_error(STDIO_LOAD);
    }
    // Route Goose's `log` output through a quiet tracing subscriber (Goose
    // would otherwise print a warning per failed request; rustls one per
    // refused certificate, which our own message explains); RUST_LOG
    // overrides. Colour only on a terminal.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,goose=error,rustls=off"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
    let baseline = match args.baseline.as_slice() {
        [] => None,
        _ if !(args.baseline_tolerance.is_finite() && args.baseline_tolerance >= 0.0) => {
            return usage_error("--baseline-tolerance must be a percentage ≥ 0");
        }
        paths => match crate::load::summarize::baseline::read_all(paths) {
            Ok(runs) => {
                let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                Some((runs, names.join(", "), args.baseline_tolerance))
            }
            Err(e) => return usage_error(e),
        },
    };
    // Discovery trusts what the flags say; the plan's own keys join below.
    if let Err(e) = args.tls.install() {
        return usage_error(e);
    }
    let mut discovery_lines = Vec::new();
    let discovered = match (&args.plan, &args.target) {
        (None, Some(targets)) => {
            // Discovery asks the first target; the preflight asks them all.
            let target = match overrides::split_targets(targets) {
                Ok(urls) => urls[0].clone(),
                Err(e) => return usage_error(e),
            };
            let target = &target;
            let rt = match runtime(2) {
                Ok(r) => r,
                Err(e) => return usage_error(e),
            };
            let mut settings = discovery_settings(
                target,
                &args.tools,
                &args.skip_tools,
                args.generation,
                args.principal.as_deref(),
            );
            // Discovery waits for each reply as long as the run will.
            if let Some(t) = args.timeout {
                settings.timeout = t;
            }
            let opts = generate::Options {
                token: settings.principal.clone(),
                ..generate::Options::default()
            };
            match rt.block_on(discovered_plan(&settings, &opts)) {
                Ok((d, g)) => {
                    // Always shown (--quiet only drops the progress line):
                    // discovery called the target's tools for real.
                    print_discovery(&d, &g);
                    discovery_lines = d.call_lines();
                    Some(g.plan)
                }
                Err(e) => return usage_error(e),
            }
        }
        _ => None,
    };
    let selected_by_discovery = discovered.is_some();
    let mut o = overrides(&args);
    if selected_by_discovery {
        // Discovery already applied --tool / --skip-tool.
        o.tools.clear();
        o.skip_tools.clear();
    }
    let mut plan = match build_plan(&args, &o, discovered) {
        Ok(p) => p,
        Err(e) => return usage_error(e),
    };
    if plan.target.tls != args.tls.options()
        && let Err(e) = crate::client::tls::install(&plan.target.tls)
    {
        return usage_error(e);
    }
    let start_at = match &args.start_at {
        Some(t) => {
            match crate::load::spec::segment::parse_start_at(t, std::time::SystemTime::now()) {
                Ok(at) => Some(at),
                Err(e) => return usage_error(e),
            }
        }
        None => None,
    };
    let whole_users = match plan.take_segment(&o) {
        Ok(w) => w,
        Err(e) => return usage_error(e),
    };
    fit_descriptors(&mut plan);
    let rt = match runtime(generator_threads(&plan, &args)) {
        Ok(rt) => rt,
        Err(e) => return usage_error(e),
    };
    // A file the summary cannot be written to is said now, not after the run.
    if let Some(path) = &args.summary_export
        && let Err(e) = writable(path)
    {
        return usage_error(format!("--summary-export {}: {e}", path.display()));
    }
    // Goose drives the closed model only: asked for its tables where it
    // does not run, the run would write none without a word.
    let goose = args.out.contains(&OutTarget::Goose);
    if goose && (args.capacity || plan.shape.model() == Model::Open) {
        let why = if args.capacity {
            "a capacity search runs the open model"
        } else {
            "this plan runs the open model"
        };
        return usage_error(format!(
            "--out goose: Goose's tables come from the closed model only, and {why}"
        ));
    }
    let repeats = args.repeat.max(1);
    if repeats > 1 {
        let single = [
            (args.capacity, "--capacity"),
            (plan.soak.is_some(), "--soak"),
            (!plan.segment.is_whole(), "--segment"),
            (start_at.is_some(), "--start-at"),
            (ndjson_file(&args.out).is_some(), "--out ndjson="),
        ];
        if let Some((_, flag)) = single.iter().find(|(set, _)| *set) {
            return usage_error(format!(
                "--repeat runs the plan several times; {flag} describes one run: drop one of them"
            ));
        }
    }
    let base_id = args.run_id.clone().unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        format!("{}-{}", run::utc_stamp(now), plan.name)
    });
    let mut opts = Options {
        plan,
        out_root: out_dir(&args.out),
        ndjson: ndjson_file(&args.out),
        goose_reports: goose,
        summary_export: args.summary_export.clone(),
        baseline: None,
        run_id: args.run_id.clone(),
        serve_args: args.serve_args.clone(),
        exe: None,
        capacity: args.capacity,
        capacity_extras: args.cap.extras(),
        progress: !args.quiet,
        discovery: discovery_lines,
        start_at,
        whole_users,
        target_pid: args.target_pid,
        repeated: Vec::new(),
    };
    // The runs one by one; the last is judged against the baseline with
    // the others. The worst verdict is the invocation's.
    let mut worst: Option<run::RunReport> = None;
    for i in 1..=repeats {
        if repeats > 1 {
            opts.run_id = Some(format!("{base_id}-{i}"));
            eprintln!("elicitkit: run {i} of {repeats}");
        }
        if i == repeats {
            opts.baseline = baseline.clone();
        }
        let result = rt.block_on(run::run(opts.clone()));
        let report = match result {
            Ok(r) => r,
            Err(e) => return usage_error(e),
        };
        print_report(&report);
        let stop = matches!(report.verdict, Verdict::Interrupted | Verdict::Unreachable);
        opts.repeated.push(report.summary.clone());
        if worst
            .as_ref()
            .is_none_or(|w| rank(report.verdict) >= rank(w.verdict))
        {
            worst = Some(report);
        }
        if stop {
            break;
        }
    }
    // Goose users and pooled connections may linger; do not wait for them.
    rt.shutdown_timeout(Duration::from_millis(200));
    let Some(report) = worst else {
        return usage_error("no run");
    };
    if repeats > 1 {
        let verdicts: Vec<String> = opts
            .repeated
            .iter()
            .map(|s| format!("{} {}", s.run_id, s.verdict))
            .collect();
        println!(
            "elicitkit load: {} runs: {}",
            opts.repeated.len(),
            verdicts.join(", ")
        );
    }
    match report.verdict {
        Verdict::Passed => exit::ok(),
        Verdict::Failed => exit::failed(),
        Verdict::Interrupted => {
            ExitCode::from(crate::interrupt::received().map_or(EXIT_INTERRUPTED, |s| s.exit_code()))
        }
        Verdict::Inconclusive => ExitCode::from(EXIT_INCONCLUSIVE),
        Verdict::Unreachable => {
            eprintln!(
                "elicitkit: the target could not be reached: {}",
                report.summary.end_note.as_deref().unwrap_or("no answer")
            );
            exit::usage()
        }
    }
}

/// Whether `path` can be written (created if missing, then removed again;
/// an existing file is left as it is).
fn writable(path: &Path) -> std::io::Result<()> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// How bad a verdict is, for the worst of several runs.
fn rank(v: Verdict) -> u8 {
    match v {
        Verdict::Passed => 0,
        Verdict::Inconclusive => 1,
        Verdict::Failed => 2,
        Verdict::Unreachable => 3,
        Verdict::Interrupted => 4,
    }
}

/// Arguments of `elicitkit plan`.
#[derive(Debug, ClapArgs)]
#[command(after_help = "Examples:
  # print the plan discovery builds
  elicitkit plan --target http://127.0.0.1:3000/mcp
  # write it, leaving a tool out; edit it; run it
  elicitkit plan --target URL -o my-server.toml \\
      --skip-tool delete_all
  elicitkit load --plan my-server.toml

Exit codes: 0 the plan was written; 2 usage error, or a target that does not answer as an MCP \
server or has no tool the load tool can drive.")]
pub struct PlanArgs {
    /// MCP endpoint to discover (e.g. http://127.0.0.1:8080/mcp).
    #[arg(help_heading = "Target", long, value_name = "URL")]
    pub target: String,
    /// Write the plan here (default: stdout).
    #[arg(help_heading = "Plan", long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Only this tool (repeatable).
    #[arg(help_heading = "Target", long = "tool", value_name = "NAME")]
    pub tools: Vec<String>,
    /// Never call this tool (repeatable).
    #[arg(help_heading = "Target", long = "skip-tool", value_name = "NAME")]
    pub skip_tools: Vec<String>,
    /// Only this generation: 2025-11-25 or 2026-07-28.
    #[arg(help_heading = "Target", long, value_name = "VERSION")]
    pub generation: Option<Generation>,
    /// Bearer token discovery runs as; written into the plan as every
    /// user's (without it, each user is its own principal).
    #[arg(
        help_heading = "Target",
        long,
        env = "ELICITKIT_PRINCIPAL",
        value_name = "TOKEN"
    )]
    pub principal: Option<String>,
    /// Run length written into the plan.
    #[arg(short = 'd', help_heading = "Plan", long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Goose users written into the plan.
    #[arg(short = 'u', help_heading = "Plan", long, default_value_t = 4)]
    pub users: usize,
    /// How an https target's certificate is checked.
    #[command(flatten)]
    pub tls: super::target::TlsArgs,
}

/// Runs `elicitkit plan`.
pub fn run_plan(args: PlanArgs) -> ExitCode {
    if args.target == super::target::STDIO {
        // A plan is what `load` runs, and `load` takes no stdio target.
        return usage_error(format!("plan writes a load plan: {STDIO_LOAD}"));
    }
    if let Err(e) = args.tls.install() {
        return usage_error(e);
    }
    let rt = match runtime(2) {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    let settings = discovery_settings(
        &args.target,
        &args.tools,
        &args.skip_tools,
        args.generation,
        args.principal.as_deref(),
    );
    let opts = generate::Options {
        duration: args.duration,
        users: args.users.max(1),
        token: settings.principal.clone(),
        principals: if args.principal.is_some() {
            Principals::Single
        } else {
            Principals::PerUser
        },
        ..generate::Options::default()
    };
    let (d, g) = match rt.block_on(discovered_plan(&settings, &opts)) {
        Ok(x) => x,
        Err(e) => return usage_error(e),
    };
    print_discovery(&d, &g);
    let text = generate::to_toml(&g, &d);
    match &args.output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &text) {
                return usage_error(format!("cannot write {}: {e}", path.display()));
            }
            eprintln!("elicitkit: wrote {}", path.display());
        }
        None => print!("{text}"),
    }
    exit::ok()
}

/// The instances line (one instance) or table (several), to stdout.
fn print_instances(s: &crate::report::Summary) {
    use crate::report::instances::{InstancesView, instances_view};
    match instances_view(s) {
        InstancesView::None => {}
        InstancesView::One(line) => println!("  {line}"),
        InstancesView::Table(head, rows) => {
            println!("  {head}");
            for r in rows {
                println!(
                    "    {:<24} {:>8} requests ({:>6}), {} errors, p50 {:>8} ms, p99 {:>8} ms",
                    r[0], r[1], r[2], r[3], r[4], r[5]
                );
            }
        }
    }
}

fn print_report(r: &run::RunReport) {
    let s = &r.summary;
    let verdict = match r.verdict {
        Verdict::Interrupted => "INTERRUPTED",
        Verdict::Inconclusive => "INCONCLUSIVE",
        _ if s.passed => "PASSED",
        _ => "FAILED",
    };
    println!(
        "elicitkit load: plan {} against {} — {verdict}",
        s.plan, s.target
    );
    if s.ended_by != crate::load::exec::engine::EndReason::Duration.as_str() {
        println!(
            "  ended by {}: {}",
            s.ended_by,
            s.end_note.as_deref().unwrap_or("")
        );
    }
    if let Some(w) = crate::report::window_text(s) {
        println!("  {w}");
    }
    if let Some(p) = s.settings.get("principals") {
        println!("  principals: {p}");
    }
    let c = &s.round_trips;
    println!(
        "  {} round trips in {:.1}s ({:.1}/s): {} success, {} expected rejections, {} unexpected; {} requests ({:.1}/s)",
        c.total,
        s.duration_s,
        s.rps,
        c.success,
        c.expected_rejection,
        c.unexpected,
        s.requests,
        s.requests_per_s
    );
    if c.skipped > 0 {
        println!(
            "  {} attempts skipped (not counted as round trips): their policy could not apply",
            c.skipped
        );
    }
    if let Some(d) = &s.delivery {
        println!(
            "  offered {:.1}/s, achieved {:.1}/s ({} of the plan){}",
            d.offered_rps,
            d.achieved_rps,
            crate::load::summarize::delivery::pct(d.delivered_pct),
            d.limited_by
                .as_deref()
                .map_or(String::new(), |by| format!(": short, limited by the {by}"))
        );
    }
    print_instances(s);
    for (leg, st) in &s.legs {
        let gap = s.gaps.get(leg).map_or(String::new(), |g| {
            format!("  gap p50 {:>7} ms", ms(g.p50_ms))
        });
        println!(
            "  {leg:<24} n={:<8} p50 {:>8} ms  p95 {:>8} ms  p99 {:>8} ms{gap}",
            st.count,
            ms(st.p50_ms),
            ms(st.p95_ms),
            ms(st.p99_ms)
        );
    }
    let phases = crate::report::phases::rows(s);
    if !phases.is_empty() {
        let h = crate::report::phases::HEADS;
        println!(
            "  where the time goes (p50 / p99 ms):  {:<16} {:<16} {:<16} {:<16} {:<16}",
            h[0], h[1], h[2], h[3], h[4]
        );
        for r in &phases {
            let c = &r.cells;
            println!(
                "  {:<37} {:<16} {:<16} {:<16} {:<16} {:<16} {}",
                r.leg, c[0], c[1], c[2], c[3], c[4], r.connections
            );
        }
    }
    println!(
        "  {:<24} n={:<8} p50 {:>8} ms  p95 {:>8} ms  p99 {:>8} ms",
        "end to end",
        s.e2e.count,
        ms(s.e2e.p50_ms),
        ms(s.e2e.p95_ms),
        ms(s.e2e.p99_ms)
    );
    if let Some(c) = s.e2e_corrected.as_ref().filter(|_| s.backfilled > 0) {
        println!(
            "  {:<24} n={:<8} p50 {:>8} ms  p95 {:>8} ms  p99 {:>8} ms  ({} backfilled: \
             coordinated omission)",
            "end to end, corrected",
            c.count,
            ms(c.p50_ms),
            ms(c.p95_ms),
            ms(c.p99_ms),
            s.backfilled
        );
    }
    if let Some(f) = s.frozen.as_ref().filter(|f| f.spells > 0) {
        println!(
            "  frozen {:.1}% of the window: {} spells of up to {:.2} s with round trips waiting \
             and none answered",
            f.share_pct, f.spells, f.longest_s
        );
    }
    if let Some(c) = &s.baseline {
        let (head, rows) = crate::report::baseline_rows(c);
        println!("  {head}");
        for r in rows {
            println!("    {:<24} {:<34} {:<34} {}", r[0], r[1], r[2], r[3]);
        }
    }
    if !s.errors.is_empty() {
        let errs: Vec<String> = s.errors.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!("  errors: {}", errs.join(", "));
        if let Some(m) = s.error_samples.first() {
            println!("  first: {m}");
        }
    }
    if let Some(g) = &s.generator_cpu {
        println!(
            "  generator CPU {:.2}s ({} µs/request)",
            g.cpu_s,
            g.us_per_request.map_or("-".into(), |v| format!("{v:.1}"))
        );
    }
    if let Some(t) = &s.target_cpu {
        println!(
            "  target CPU {:.2}s ({} µs/round trip)",
            t.cpu_s,
            t.us_per_round_trip
                .map_or("-".into(), |v| format!("{v:.1}"))
        );
    }
    if let Some(h) = &s.health
        && let (Some(a), Some(b)) = (h.samples.first(), h.samples.last())
    {
        let mib = |v: u64| v as f64 / (1024.0 * 1024.0);
        println!(
            "  target health (pid {}, {}{}): RSS {:.1} → {:.1} MiB, descriptors {} → {}, threads {} → {} ({} samples)",
            h.pid,
            h.source,
            if h.alive_at_end {
                ""
            } else {
                "; gone before the load ended"
            },
            mib(a.rss_bytes),
            mib(b.rss_bytes),
            a.fds,
            b.fds,
            a.threads,
            b.threads,
            h.samples.len()
        );
    }
    if let Some(cap) = &s.capacity {
        super::capacity::print(cap);
    }
    let mut quiet_defaults = 0;
    // An interrupted run is not judged on its thresholds: what it measured
    // is in the report, but no threshold held or failed over a run cut
    // short (its warm-up alone, say).
    let thresholds: &[crate::report::ThresholdResult] = if r.verdict == Verdict::Interrupted {
        if !s.thresholds.is_empty() {
            println!(
                "  thresholds: not judged, the run was interrupted ({} of them; summary.json holds \
                 what was measured)",
                s.thresholds.len()
            );
        }
        &[]
    } else {
        &s.thresholds
    };
    for t in thresholds {
        if t.default && t.passed && t.expr != "error_rate < 1%" {
            quiet_defaults += 1;
            continue;
        }
        println!(
            "  threshold {:<34} actual {:<14} {}{}",
            t.expr,
            t.actual_text,
            if t.passed { "pass" } else { "FAIL" },
            if t.default { " (default)" } else { "" }
        );
    }
    if quiet_defaults > 0 {
        println!(
            "  {quiet_defaults} default per-scenario thresholds passed (every scenario had a \
             success, none was mostly skipped; see summary.md)"
        );
    }
    for d in &s.diagnoses {
        println!("  diagnosis: {d}");
    }
    for f in &s.failures {
        println!("  failed: {f}");
    }
    for p in s.generator_health.iter().flat_map(|g| &g.problems) {
        println!("  inconclusive: {p}");
    }
    println!("  report: {}", r.dir.join("report.html").display());
}
