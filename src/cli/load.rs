//! `elicitkit load`: run a load plan against an elicitation server.
//!
//! With no `--target` (and no `url` in the plan) the embedded reference
//! server is started as a child process on 127.0.0.1 and stopped at the end.
//! With no `--plan`, `loadtests/smoke.toml` is used (a built-in copy when the
//! file is not there). Exit codes: 0 every threshold held; 1 a threshold
//! failed or the target died mid-run; 2 usage errors, a bad plan, or a
//! target that never answered. A report is written in every case but a bad
//! plan.

use super::{exit, usage_error};
use crate::load::plan::{self, LoadShape, Plan, RateStep};
use crate::load::run::{self, Options, Verdict};
use crate::load::threshold::Threshold;
use clap::Args as ClapArgs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The smoke plan compiled in, used when `loadtests/smoke.toml` is absent.
pub const BUILTIN_SMOKE: &str = include_str!("../../loadtests/smoke.toml");

/// Arguments of `elicitkit load`.
#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Plan file (TOML). Default: loadtests/smoke.toml.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// MCP endpoint to load (e.g. http://127.0.0.1:8080/mcp). Default: the
    /// plan's target, else the embedded reference server.
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// Run length (e.g. 5s, 1m); scales a ramp's steps proportionally.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,
    /// Closed model with N Goose users (replaces the plan's load shape).
    #[arg(long, value_name = "N", conflicts_with = "rate")]
    pub users: Option<usize>,
    /// Open model at N round trips per second (replaces the plan's load shape).
    #[arg(long, value_name = "N")]
    pub rate: Option<f64>,
    /// Hard cap on HTTP requests.
    #[arg(long, value_name = "N")]
    pub max_requests: Option<u64>,
    /// Per-request timeout.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub timeout: Option<Duration>,
    /// Worker threads of the embedded server.
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Worker threads of the load generator. Default: every core for the
    /// closed model; for the open model one per 20,000 round trips/s of its
    /// peak rate (idle workers only add wake-ups), up to every core.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub generator_threads: Option<u16>,
    /// Extra threshold (repeatable), e.g. "p99(retry) < 50ms".
    #[arg(long = "threshold", value_name = "EXPR")]
    pub thresholds: Vec<String>,
    /// Capacity search: step the open-model rate up until the plan's SLO
    /// breaks; report the knee, CPU per round trip and instances needed.
    #[arg(long)]
    pub capacity: bool,
    /// With --capacity: the rate to size for (instances = ceil(rate / knee)).
    #[arg(long, value_name = "N")]
    pub target_rate: Option<f64>,
    /// Folder for report folders.
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub out: PathBuf,
    /// Name of the report folder (default: <UTC time>-<plan>).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Extra argument for the embedded `serve` (repeatable), e.g.
    /// --serve-arg=--flaw --serve-arg=crash-on-decline.
    #[arg(long = "serve-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub serve_args: Vec<String>,
    /// No live progress line.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Reads the plan (or the built-in smoke plan) and applies the overrides.
pub fn build_plan(args: &Args) -> Result<Plan, String> {
    let mut plan = match &args.plan {
        Some(p) => plan::load_file(p).map_err(|e| e.to_string())?,
        None => {
            let default = Path::new("loadtests/smoke.toml");
            if default.exists() {
                plan::load_file(default).map_err(|e| e.to_string())?
            } else {
                plan::parse_plan(BUILTIN_SMOKE, "<built-in smoke.toml>", "smoke")
                    .map_err(|e| e.to_string())?
            }
        }
    };
    if let Some(t) = &args.target {
        let u = url::Url::parse(t).map_err(|e| format!("--target {t:?}: not a URL: {e}"))?;
        if !matches!(u.scheme(), "http" | "https") {
            return Err(format!("--target {t:?}: the URL must be http or https"));
        }
        plan.target.url = Some(t.clone());
    }
    if let Some(w) = args.workers {
        plan.target.workers = w.max(1);
    }
    if let Some(n) = args.max_requests {
        if n == 0 {
            return Err("--max-requests must be at least 1".into());
        }
        plan.max_requests = n;
    }
    if let Some(t) = args.timeout {
        if t.is_zero() {
            return Err("--timeout must be greater than zero".into());
        }
        plan.timeout = t;
    }
    if let Some(users) = args.users {
        if users == 0 {
            return Err("--users must be at least 1".into());
        }
        plan.shape = LoadShape::Closed {
            users,
            hatch_rate: users as f64,
        };
    }
    if let Some(rate) = args.rate {
        if !(rate.is_finite() && rate > 0.0) {
            return Err("--rate must be a number > 0".into());
        }
        plan.shape = LoadShape::Open {
            steps: vec![RateStep {
                rate,
                hold: plan.duration,
            }],
        };
    }
    if let Some(d) = args.duration {
        if d.is_zero() {
            return Err("--duration must be greater than zero".into());
        }
        if let LoadShape::Open { steps } = &mut plan.shape {
            let total: f64 = steps.iter().map(|s| s.hold.as_secs_f64()).sum();
            let scale = d.as_secs_f64() / total.max(1e-9);
            for s in steps.iter_mut() {
                s.hold = Duration::from_secs_f64(s.hold.as_secs_f64() * scale);
            }
        }
        plan.duration = d;
        if let Some(c) = &mut plan.capacity {
            c.step_duration = c.step_duration.min(d);
        }
    }
    for t in &args.thresholds {
        plan.thresholds
            .push(Threshold::parse(t).map_err(|e| format!("--threshold: {e}"))?);
    }
    if args.capacity {
        let c = plan.capacity.get_or_insert_with(|| plan::CapacitySpec {
            start_rate: 200.0,
            step: 200.0,
            max_rate: 20_000.0,
            step_duration: Duration::from_secs(3),
            slo: Vec::new(),
            target_rate: None,
        });
        if c.slo.is_empty() {
            c.slo = plan.thresholds.clone();
        }
        if c.slo.is_empty() {
            return Err(
                "--capacity needs an SLO: add [capacity] slo = [...] or thresholds to the plan"
                    .into(),
            );
        }
        if let Some(r) = args.target_rate {
            c.target_rate = Some(r);
        }
    }
    Ok(plan)
}

/// Worker threads for the generator's runtime (see `--generator-threads`).
fn generator_threads(plan: &Plan, args: &Args) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if let Some(n) = args.generator_threads {
        return usize::from(n);
    }
    let peak = match (&plan.capacity, &plan.shape) {
        (Some(c), _) if args.capacity => c.max_rate,
        (_, LoadShape::Open { steps }) => steps.iter().map(|s| s.rate).fold(0.0, f64::max),
        (_, LoadShape::Closed { .. }) => return cores,
    };
    crate::load::open::shards_for(peak, cores)
}

/// Runs `elicitkit load`.
pub fn run(args: Args) -> ExitCode {
    let plan = match build_plan(&args) {
        Ok(p) => p,
        Err(e) => return usage_error(e),
    };
    // Route Goose's `log` output through a quiet tracing subscriber (Goose
    // would otherwise print a warning per failed request); RUST_LOG overrides.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,goose=error"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(generator_threads(&plan, &args))
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return usage_error(format!("cannot start the async runtime: {e}")),
    };
    let opts = Options {
        plan,
        out_root: args.out.clone(),
        run_id: args.run_id.clone(),
        serve_args: args.serve_args.clone(),
        exe: None,
        capacity: args.capacity,
        progress: !args.quiet,
    };
    let result = rt.block_on(run::run(opts));
    // Goose users and pooled connections may linger; do not wait for them.
    rt.shutdown_timeout(Duration::from_secs(2));
    let report = match result {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    print_report(&report);
    match report.verdict {
        Verdict::Passed => exit::ok(),
        Verdict::Failed => exit::failed(),
        Verdict::Unreachable => {
            eprintln!(
                "elicitkit: the target could not be reached: {}",
                report.summary.end_note.as_deref().unwrap_or("no answer")
            );
            exit::usage()
        }
    }
}

fn print_report(r: &run::RunReport) {
    let s = &r.summary;
    let verdict = if s.passed { "PASSED" } else { "FAILED" };
    println!(
        "elicitkit load: plan {} against {} — {verdict}",
        s.plan, s.target
    );
    if s.ended_by != "duration" {
        println!(
            "  ended by {}: {}",
            s.ended_by,
            s.end_note.as_deref().unwrap_or("")
        );
    }
    let c = &s.round_trips;
    println!(
        "  {} round trips in {:.1}s ({:.1}/s): {} success, {} expected rejections, {} unexpected, {} skipped; {} requests ({:.1}/s)",
        c.total,
        s.duration_s,
        s.rps,
        c.success,
        c.expected_rejection,
        c.unexpected,
        c.skipped,
        s.requests,
        s.requests_per_s
    );
    for (leg, st) in &s.legs {
        println!(
            "  {leg:<24} n={:<8} p50 {:>8.3} ms  p99 {:>8.3} ms",
            st.count, st.p50_ms, st.p99_ms
        );
    }
    println!(
        "  {:<24} n={:<8} p50 {:>8.3} ms  p99 {:>8.3} ms",
        "end to end", s.e2e.count, s.e2e.p50_ms, s.e2e.p99_ms
    );
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
    if let Some(cap) = &s.capacity {
        println!(
            "  capacity: knee {} round trips/s; target CPU {} µs/round trip; instances for {}: {}",
            cap.knee_rps.map_or("none".into(), |v| format!("{v:.0}")),
            cap.target_cpu_us_per_rt
                .map_or("n/a".into(), |v| format!("{v:.1}")),
            cap.target_rate.map_or("-".into(), |v| format!("{v:.0}/s")),
            cap.instances_needed.map_or("n/a".into(), |v| v.to_string())
        );
    }
    for t in &s.thresholds {
        println!(
            "  threshold {:<28} actual {:<12} {}",
            t.expr,
            t.actual.map_or("n/a".into(), |v| format!("{v:.4}")),
            if t.passed { "pass" } else { "FAIL" }
        );
    }
    println!("  report: {}", r.dir.join("report.html").display());
}
