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
    /// Label the run with the target's instance count (for report capacity).
    #[arg(help_heading = "Capacity search", long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub instances: Option<u64>,
    /// Read Redis INFO stats per sample: store commands per round trip.
    #[arg(
        help_heading = "Capacity search",
        long,
        env = "ELICITKIT_STORE_STATS",
        value_name = "REDIS_URL"
    )]
    pub store_stats: Option<String>,
    /// Most halvings of the good/bad bracket (default 4; 0: coarse steps only).
    #[arg(help_heading = "Capacity search", long, value_name = "K")]
    pub bisections: Option<u32>,
    /// Stop halving below this percentage of the first bad rate (default 5).
    #[arg(help_heading = "Capacity search", long, value_name = "PCT")]
    pub resolution: Option<f64>,
    /// Most samples per step (default 3: two of three decide).
    #[arg(help_heading = "Capacity search", long, value_name = "M", value_parser = clap::value_parser!(u32).range(1..))]
    pub samples: Option<u32>,
    /// Two p99s agree within this many percent (default 20).
    #[arg(help_heading = "Capacity search", long, value_name = "PCT")]
    pub stable_within: Option<f64>,
    /// Count this local process's CPU as the target's (repeatable).
    #[arg(help_heading = "Target", long = "cpu-pid", value_name = "PID")]
    pub cpu_pids: Vec<u32>,
}

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
  # runs that recorded --instances
  elicitkit report capacity reports/knee-1 reports/knee-2
  # instance counts given; the instances 20,000/s needs
  elicitkit report capacity 1=reports/knee-1 \\
      2=reports/knee-2 4=reports/knee-4 --target-rate 20000

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
