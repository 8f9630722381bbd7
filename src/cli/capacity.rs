//! Capacity planning on the command line: the search knobs of `load
//! --capacity` (flattened into `load`'s arguments), its step table on the
//! terminal, and `report capacity DIR…` (knees across instance counts).

use super::{exit, usage_error};
use crate::load::capacity::scaling::{self, Run};
use crate::load::spec::overrides::SearchOverrides;
use crate::report::{CapacitySummary, SCHEMA_VERSION, Summary, capacity};
use clap::Args as ClapArgs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The capacity-search flags of `elicitkit load`.
#[derive(Debug, Clone, Default, ClapArgs)]
pub struct SearchArgs {
    /// With --capacity: label the run with how many instances the target
    /// runs (behind one balancer), for `elicitkit report capacity`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub instances: Option<u64>,
    /// With --capacity: read Redis `INFO stats` before and after every
    /// sample, for the shared store's commands per round trip, e.g.
    /// --store-stats redis://127.0.0.1:6379.
    #[arg(long, env = "ELICITKIT_STORE_STATS", value_name = "REDIS_URL")]
    pub store_stats: Option<String>,
    /// With --capacity: most halvings of the bracket between the last good
    /// and the first bad rate (plan: [capacity] bisections; default 4; 0:
    /// coarse steps only).
    #[arg(long, value_name = "K")]
    pub bisections: Option<u32>,
    /// With --capacity: stop halving when the bracket is narrower than this
    /// percentage of the first bad rate (plan: resolution_pct; default 5).
    #[arg(long, value_name = "PCT")]
    pub resolution: Option<f64>,
    /// With --capacity: most samples per step. Neither a lone pass nor a
    /// lone breach decides a step: it is within once two samples held the
    /// SLO with agreeing p99s, broken once two breached; with 3, two of
    /// three decide; with 2, one of each is noisy and the search
    /// INCONCLUSIVE (plan: samples; default 3; 1: one sample decides).
    #[arg(long, value_name = "M", value_parser = clap::value_parser!(u32).range(1..))]
    pub samples: Option<u32>,
    /// With --capacity: two p99s agree when within this many percent (or
    /// within the plan's stable_floor, default 1ms) (plan: stable_pct;
    /// default 20).
    #[arg(long, value_name = "PCT")]
    pub stable_within: Option<f64>,
    /// Count this local process's CPU as the target's (repeatable; e.g.
    /// each `serve` instance, Redis, nginx): the target's CPU per request
    /// and round trip in the summary (per step with --capacity), for a
    /// target that is not the embedded server.
    #[arg(long = "cpu-pid", value_name = "PID")]
    pub cpu_pids: Vec<u32>,
}

/// `--help` examples of the capacity search.
pub const EXAMPLES: &str = "Capacity planning:
  elicitkit load --plan loadtests/capacity.toml --capacity             # knee of the embedded server
  elicitkit load --plan loadtests/capacity.toml --capacity --samples 2 --bisections 3 --resolution 10
  elicitkit load --plan loadtests/capacity.toml --capacity --target URL --instances 2 \\
      --store-stats redis://127.0.0.1:6379 --cpu-pid 4242 --cpu-pid 4243 --run-id knee-2
  elicitkit report capacity 1=reports/knee-1 2=reports/knee-2 --target-rate 20000";

impl SearchArgs {
    /// Whether any flag that needs --capacity was given.
    pub fn any(&self) -> bool {
        self.instances.is_some()
            || self.store_stats.is_some()
            || self.bisections.is_some()
            || self.resolution.is_some()
            || self.samples.is_some()
            || self.stable_within.is_some()
    }

    /// The search knobs, as the plan's overrides take them.
    pub fn overrides(&self) -> SearchOverrides {
        SearchOverrides {
            bisections: self.bisections,
            resolution: self.resolution,
            samples: self.samples,
            stable_within: self.stable_within,
        }
    }

    /// What the run needs besides the plan.
    pub fn extras(&self) -> crate::load::capacity::driver::Extras {
        crate::load::capacity::driver::Extras {
            store_stats: self.store_stats.clone(),
            instances: self.instances,
            cpu_pids: self.cpu_pids.clone(),
        }
    }
}

/// Prints a capacity run's step table and knee.
pub fn print(c: &CapacitySummary) {
    println!("  capacity steps (SLO {}):", c.slo.join(", "));
    for line in capacity::steps_text(c) {
        println!("    {line}");
    }
    println!("  {}", capacity::knee_text(c));
    for n in &c.notes {
        println!("  note: {n}");
    }
}

/// Arguments of `elicitkit report capacity`.
#[derive(Debug, ClapArgs)]
#[command(
    after_help = "Each RUN is a `load --capacity` report folder (or its summary.json), \
given as DIR when its summary records --instances, or as N=DIR.

Examples:
  elicitkit report capacity reports/knee-1 reports/knee-2
  elicitkit report capacity 1=reports/knee-1 2=reports/knee-2 4=reports/knee-4 --target-rate 20000

Exit codes: 0 written; 2 usage error (unreadable summary, no capacity data, unknown instance count)."
)]
pub struct ReportArgs {
    /// The runs: DIR or N=DIR (N instances).
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<String>,
    /// Rate to size for (round trips/s). Default: the runs' target_rate.
    #[arg(long, value_name = "N")]
    pub target_rate: Option<f64>,
    /// Output folder for capacity.md and capacity.json.
    #[arg(long, value_name = "DIR", default_value = "reports/capacity")]
    pub out: PathBuf,
}

fn read_summary(path: &Path) -> Result<Summary, String> {
    let file = if path.is_dir() {
        path.join("summary.json")
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let s: Summary = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a summary.json: {e}", file.display()))?;
    if s.schema != SCHEMA_VERSION {
        return Err(format!(
            "{}: schema {} is not supported (expected {SCHEMA_VERSION})",
            file.display(),
            s.schema
        ));
    }
    Ok(s)
}

/// Reads one `DIR` or `N=DIR` argument.
pub fn read_run(arg: &str) -> Result<(Run, Option<f64>), String> {
    let (label, dir) = match arg.split_once('=') {
        Some((n, d)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            let n: u64 = n.parse().map_err(|e| format!("{arg}: {e}"))?;
            if n == 0 {
                return Err(format!("{arg}: the instance count must be at least 1"));
            }
            (Some(n), d)
        }
        _ => (None, arg),
    };
    let s = read_summary(Path::new(dir))?;
    let Some(c) = s.capacity else {
        return Err(format!(
            "{dir}: not a capacity run (no `capacity` in its summary.json): run `elicitkit load --capacity`"
        ));
    };
    let instances = match (label, c.instances) {
        (Some(n), _) => n,
        (None, Some(n)) => n,
        (None, None) => {
            return Err(format!(
                "{dir}: its summary does not say how many instances it ran against: give it as \
                 N={dir}, or run load with --instances N"
            ));
        }
    };
    Ok((
        Run {
            instances,
            source: dir.to_owned(),
            knee_rps: c.knee_rps,
            knee_status: c.knee_status,
            store_cmds_per_rt: c.store_cmds_per_rt,
            target_cpu_us_per_rt: c.target_cpu_us_per_rt,
            host: c.host,
        },
        c.target_rate,
    ))
}

/// Runs `elicitkit report capacity`.
pub fn run_report(args: ReportArgs) -> ExitCode {
    let mut runs = Vec::new();
    let mut targets = Vec::new();
    for a in &args.runs {
        match read_run(a) {
            Ok((r, t)) => {
                runs.push(r);
                targets.extend(t);
            }
            Err(e) => return usage_error(e),
        }
    }
    let target = match args.target_rate {
        Some(t) if !(t.is_finite() && t > 0.0) => {
            return usage_error("--target-rate must be a number > 0");
        }
        Some(t) => Some(t),
        None => targets.iter().copied().reduce(f64::max),
    };
    let report = scaling::analyse(&runs, target);
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        return usage_error(format!("{}: {e}", args.out.display()));
    }
    let json = match serde_json::to_string_pretty(&report) {
        Ok(j) => j,
        Err(e) => return usage_error(e),
    };
    for (name, text) in [
        ("capacity.json", json + "\n"),
        ("capacity.md", capacity::scaling_markdown(&report)),
    ] {
        let path = args.out.join(name);
        if let Err(e) = std::fs::write(&path, text) {
            return usage_error(format!("{}: {e}", path.display()));
        }
    }
    println!("elicitkit report capacity: {} runs", runs.len());
    for line in capacity::scaling_text(&report) {
        println!("  {line}");
    }
    println!("  report: {}", args.out.join("capacity.md").display());
    exit::ok()
}
