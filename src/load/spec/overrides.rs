//! What the command line changes in a plan, as data: [`Overrides`] holds
//! every `load` flag that overrides a plan key (the CLI only maps its flags
//! here), and [`Plan::apply`] is the one place they are applied and
//! checked after parsing. [`Plan::take_segment`] takes this process's share
//! (`--segment I/N`).

use super::plan::{CapacitySpec, LoadShape, Plan};
use super::principals::{self, Principals, TokenFileError};
use super::segment::{Segment, SegmentError};
use super::shape::{self, Model, ShapeError};
use super::soak;
use super::threshold::{Threshold, ThresholdError};
use std::time::Duration;

/// Why the command line's overrides cannot apply to a plan: each names the
/// flag that is wrong (a usage error).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OverrideError {
    /// One flag's value out of range: `{flag} {why}`.
    #[error("{flag} {why}")]
    Flag {
        /// The flag.
        flag: &'static str,
        /// What its value must be.
        why: &'static str,
    },
    /// Flags that do not go together, or one that needs another.
    #[error("{0}")]
    Conflict(&'static str),
    /// A soak growth limit that is not a number ≥ 0.
    #[error("{0} must be a number ≥ 0, e.g. {0} 2")]
    NegativeLimit(&'static str),
    /// `--segment` with `--capacity`.
    #[error(
        "--segment {0} with --capacity: a capacity search steps its rate by what it \
         measures, which one segment cannot judge for the whole; search with one process"
    )]
    SegmentedSearch(Segment),
    /// `--principals` out of range.
    #[error("--principals must be 1 to {}", principals::MAX)]
    Principals,
    /// `--tool` naming a tool no scenario calls.
    #[error("--tool {0}: no scenario of the plan calls {0:?}")]
    UnknownTool(String),
    /// A `--target` list item that is not a distinct http(s) URL.
    #[error("--target {given:?}: {why}")]
    Target {
        /// The item (the whole list for an empty item).
        given: String,
        /// What is wrong.
        why: String,
    },
    /// `--stage` that does not parse or cannot run.
    #[error("--stage: {0}")]
    Stages(ShapeError),
    /// `--warmup` as long as the stages.
    #[error("--warmup: {0}")]
    Warmup(ShapeError),
    /// `--threshold` that does not parse.
    #[error("--threshold: {0}")]
    Threshold(ThresholdError),
    /// A threshold naming a leg or scenario that does not exist.
    #[error(transparent)]
    UnknownName(ThresholdError),
    /// `--principal-file`.
    #[error(transparent)]
    TokenFile(#[from] TokenFileError),
    /// `--segment`.
    #[error(transparent)]
    Segment(#[from] SegmentError),
}

use OverrideError::{Conflict, Flag};

/// The `load` flags that override a plan (all unset: the plan as written).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--target URL[,URL...]`: the target(s) instead of the plan's.
    pub target: Option<String>,
    /// `--principal`: every user runs as this bearer token.
    pub principal: Option<String>,
    /// `--principals N`: a pool of N generated principals.
    pub principals: Option<usize>,
    /// `--principal-file FILE`: tokens, one a line, taken round robin.
    pub principal_file: Option<std::path::PathBuf>,
    /// `--cacert FILE`: trust this CA for an `https` target.
    pub cacert: Option<std::path::PathBuf>,
    /// `--insecure`: do not verify an `https` target's certificate.
    pub insecure: bool,
    /// `--tool` (repeatable): keep only the scenarios calling these.
    pub tools: Vec<String>,
    /// `--skip-tool` (repeatable): drop the scenarios calling these.
    pub skip_tools: Vec<String>,
    /// `--workers`: the embedded server's workers.
    pub workers: Option<usize>,
    /// `--max-requests`: the hard request cap.
    pub max_requests: Option<u64>,
    /// `--timeout`: per request.
    pub timeout: Option<Duration>,
    /// `--warmup`.
    pub warmup: Option<Duration>,
    /// `--users`: a fixed closed-model load.
    pub users: Option<usize>,
    /// `--rate`: a constant open-model rate.
    pub rate: Option<f64>,
    /// `--stage` (repeatable): stages instead of the plan's shape.
    pub stages: Vec<String>,
    /// `--model`: which model the stages drive.
    pub model: Option<Model>,
    /// `--duration`: the measured duration (stages are scaled to it).
    pub duration: Option<Duration>,
    /// `--threshold` (repeatable): added to the plan's.
    pub thresholds: Vec<String>,
    /// `--capacity`: run a capacity search.
    pub capacity: bool,
    /// `--target-rate`: the rate to size for (with `--capacity`).
    pub target_rate: Option<f64>,
    /// The search knobs (`--bisections`, `--resolution`, `--samples`,
    /// `--stable-within`).
    pub search: SearchOverrides,
    /// Whether any flag that only goes with `--capacity` was given.
    pub search_flags: bool,
    /// `--segment I/N`.
    pub segment: Option<Segment>,
    /// `--soak DURATION`: a soak with this steady phase.
    pub soak: Option<Duration>,
    /// `--cool-down DURATION`: the soak's cool-down.
    pub cool_down: Option<Duration>,
    /// `--soak-rss-per-min`, `--soak-fds-per-min`, `--soak-min-r2`: what
    /// counts as growth, where not the default.
    pub soak_limits: SoakLimitOverrides,
}

/// The soak's growth limits from the command line.
#[derive(Debug, Clone, Copy, Default)]
pub struct SoakLimitOverrides {
    /// RSS growth allowed, MiB per minute.
    pub rss_mib_per_min: Option<f64>,
    /// Descriptor growth allowed, per minute.
    pub fds_per_min: Option<f64>,
    /// The least R² growth must fit with.
    pub min_r2: Option<f64>,
}

impl SoakLimitOverrides {
    fn any(&self) -> bool {
        self.rss_mib_per_min.is_some() || self.fds_per_min.is_some() || self.min_r2.is_some()
    }

    /// `limits` with these applied; `Err` names a value out of range.
    fn apply(&self, limits: &mut soak::SoakLimits) -> Result<(), OverrideError> {
        let rate = |v: Option<f64>, flag: &'static str| match v {
            Some(x) if !(x.is_finite() && x >= 0.0) => Err(OverrideError::NegativeLimit(flag)),
            _ => Ok(v),
        };
        if let Some(x) = rate(self.rss_mib_per_min, "--soak-rss-per-min")? {
            limits.rss_mib_per_min = x;
        }
        if let Some(x) = rate(self.fds_per_min, "--soak-fds-per-min")? {
            limits.fds_per_min = x;
        }
        match self.min_r2 {
            Some(r) if !(r > 0.0 && r <= 1.0) => Err(Flag {
                flag: "--soak-min-r2",
                why: "must lie in (0, 1], e.g. --soak-min-r2 0.9",
            }),
            Some(r) => {
                limits.min_r2 = r;
                Ok(())
            }
            None => Ok(()),
        }
    }
}

/// The capacity search's knobs from the command line.
#[derive(Debug, Clone, Default)]
pub struct SearchOverrides {
    /// `--bisections`.
    pub bisections: Option<u32>,
    /// `--resolution` (percent).
    pub resolution: Option<f64>,
    /// `--samples`.
    pub samples: Option<u32>,
    /// `--stable-within` (percent).
    pub stable_within: Option<f64>,
}

impl SearchOverrides {
    /// Applies the knobs to a search.
    pub fn apply(&self, c: &mut CapacitySpec) -> Result<(), OverrideError> {
        if let Some(b) = self.bisections {
            c.bisections = b;
        }
        if let Some(r) = self.resolution {
            if !(r.is_finite() && r > 0.0 && r < 100.0) {
                return Err(Flag {
                    flag: "--resolution",
                    why: "must be a percentage > 0 and < 100",
                });
            }
            c.resolution_pct = r;
        }
        if let Some(n) = self.samples {
            c.samples = n;
        }
        if let Some(p) = self.stable_within {
            if !(p.is_finite() && p >= 0.0) {
                return Err(Flag {
                    flag: "--stable-within",
                    why: "must be a percentage ≥ 0",
                });
            }
            c.stable_pct = p;
        }
        Ok(())
    }
}

impl Plan {
    /// Applies the command line's overrides and checks the result; `Err`
    /// names the flag that is wrong.
    pub fn apply(&mut self, o: &Overrides) -> Result<(), OverrideError> {
        let plan = self;
        if let Some(t) = &o.target {
            let mut urls = split_targets(t)?;
            plan.target.url = Some(urls.remove(0));
            plan.target.more_urls = urls;
        }
        apply_principals(o, plan)?;
        if !o.tools.is_empty() || !o.skip_tools.is_empty() {
            for t in &o.tools {
                if !plan.scenarios.iter().any(|s| &s.tool == t) {
                    return Err(OverrideError::UnknownTool(t.clone()));
                }
            }
            plan.scenarios.retain(|s| {
                (o.tools.is_empty() || o.tools.contains(&s.tool)) && !o.skip_tools.contains(&s.tool)
            });
            if plan.scenarios.is_empty() {
                return Err(Conflict("--tool / --skip-tool left no scenario to run"));
            }
        }
        if let Some(w) = o.workers {
            plan.target.workers = w.max(1);
        }
        if let Some(n) = o.max_requests {
            if n == 0 {
                return Err(Flag {
                    flag: "--max-requests",
                    why: "must be at least 1",
                });
            }
            plan.max_requests = n;
        }
        if let Some(t) = o.timeout {
            if t.is_zero() {
                return Err(Flag {
                    flag: "--timeout",
                    why: "must be greater than zero",
                });
            }
            plan.timeout = t;
        }
        apply_shape(o, plan)?;
        apply_soak(o, plan)?;
        for t in &o.thresholds {
            plan.thresholds
                .push(Threshold::parse(t).map_err(OverrideError::Threshold)?);
        }
        if o.capacity {
            let c = plan.capacity.get_or_insert_with(CapacitySpec::default);
            o.search.apply(c)?;
            if c.slo.is_empty() {
                c.slo = plan.thresholds.clone();
            }
            if c.slo.is_empty() {
                return Err(Conflict(
                    "--capacity needs an SLO: add [capacity] slo = [...] or thresholds to the plan",
                ));
            }
            if let Some(r) = o.target_rate {
                c.target_rate = Some(r);
            }
        }
        if !o.capacity && o.search_flags {
            return Err(Conflict(
                "--target-rate, --instances, --store-stats, --bisections, --resolution, \
                    --samples and --stable-within go with --capacity",
            ));
        }
        plan.validate_thresholds()
            .map_err(OverrideError::UnknownName)
    }

    /// Takes this process's share of the whole plan (`--segment I/N`);
    /// returns the whole run's users (closed model), for the report.
    pub fn take_segment(&mut self, o: &Overrides) -> Result<Option<u64>, OverrideError> {
        let plan = self;
        let Some(seg) = o.segment else {
            return Ok(None);
        };
        if o.capacity && !seg.is_whole() {
            return Err(OverrideError::SegmentedSearch(seg));
        }
        let whole = match plan.shape {
            LoadShape::Closed { users, .. } => Some(users as u64),
            _ => None,
        };
        plan.split(seg)?;
        Ok(whole)
    }
}

/// Applies `--principal`, then `--principals` or `--principal-file`
/// (clap refuses both), which win: `--principal` may come from
/// `ELICITKIT_PRINCIPAL`, and still names the token discovery runs as.
fn apply_principals(o: &Overrides, plan: &mut Plan) -> Result<(), OverrideError> {
    if let Some(t) = &o.principal {
        if t.is_empty() {
            return Err(Flag {
                flag: "--principal",
                why: "needs a token",
            });
        }
        plan.target.token = t.clone();
        plan.target.principals = Principals::Single;
    }
    if let Some(count) = o.principals {
        if !(1..=principals::MAX).contains(&count) {
            return Err(OverrideError::Principals);
        }
        plan.target.principals = Principals::Pool { count };
    }
    if let Some(path) = &o.principal_file {
        plan.target.principals = Principals::File {
            path: path.display().to_string(),
            tokens: principals::read_file(path)?,
        };
    }
    if let Some(ca) = &o.cacert {
        plan.target.tls.cacert = Some(ca.clone());
    }
    plan.target.tls.insecure |= o.insecure;
    Ok(())
}

/// Applies `--users`, `--rate`, `--stage`, `--model`, `--warmup` and
/// `--duration` to the plan's load shape.
fn apply_shape(o: &Overrides, plan: &mut Plan) -> Result<(), OverrideError> {
    if let Some(w) = o.warmup {
        plan.warmup = w;
    }
    if let Some(users) = o.users {
        if users == 0 {
            return Err(Flag {
                flag: "--users",
                why: "must be at least 1",
            });
        }
        plan.shape = LoadShape::Closed {
            users,
            hatch_rate: users as f64,
        };
    }
    if let Some(rate) = o.rate {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(Flag {
                flag: "--rate",
                why: "must be a number > 0",
            });
        }
        plan.shape = LoadShape::Open { rate };
    }
    if !o.stages.is_empty() {
        let stages = shape::parse_stages(&o.stages.join(",")).map_err(OverrideError::Stages)?;
        plan.shape = LoadShape::Staged {
            model: o.model.unwrap_or_else(|| plan.shape.model()),
            stages,
        };
    } else if let Some(m) = o.model {
        match &mut plan.shape {
            LoadShape::Staged { model, .. } => *model = m,
            _ => {
                return Err(Conflict(
                    "--model goes with stages (--stage, or a plan's stages): --users and --rate already say the model",
                ));
            }
        }
    }
    if let Some(d) = o.duration {
        if d.is_zero() {
            return Err(Flag {
                flag: "--duration",
                why: "must be greater than zero",
            });
        }
        if let LoadShape::Staged { stages, .. } = &mut plan.shape {
            *stages = shape::scaled(stages, d + plan.warmup);
        }
        plan.duration = d;
        if let Some(c) = &mut plan.capacity {
            c.step_duration = c.step_duration.min(d);
        }
    }
    if let LoadShape::Staged { model, stages } = &plan.shape {
        if *model == Model::Closed {
            shape::check_closed_stages(stages).map_err(OverrideError::Stages)?;
        }
        let t = shape::Timeline::staged(*model, stages.clone(), plan.warmup)
            .map_err(OverrideError::Warmup)?;
        plan.duration = t.measured;
    }
    Ok(())
}

/// Applies `--soak` and `--cool-down`: the plan's fixed load held for the
/// soak's steady phase (its measured window), after a warm-up (a tenth of
/// it unless `--warmup` says), then the cool-down.
fn apply_soak(o: &Overrides, plan: &mut Plan) -> Result<(), OverrideError> {
    let Some(steady) = o.soak else {
        if o.cool_down.is_some() {
            return Err(Conflict("--cool-down goes with --soak"));
        }
        if o.soak_limits.any() {
            return Err(Conflict(
                "--soak-rss-per-min, --soak-fds-per-min and --soak-min-r2 go with --soak",
            ));
        }
        return Ok(());
    };
    if steady.is_zero() {
        return Err(Flag {
            flag: "--soak",
            why: "must be greater than zero, e.g. --soak 10m",
        });
    }
    if o.capacity {
        return Err(Conflict(
            "--soak with --capacity: a soak holds one load level; search first, then soak at the level you chose",
        ));
    }
    if matches!(plan.shape, LoadShape::Staged { .. }) {
        return Err(Conflict(
            "--soak holds one load level: give --users N or --rate N (or a plan with users or \
             rate), not stages",
        ));
    }
    plan.duration = steady;
    if o.warmup.is_none() {
        plan.warmup = soak::default_warmup(steady);
    }
    let mut spec = soak::SoakSpec::new(steady, o.cool_down);
    o.soak_limits.apply(&mut spec.limits)?;
    plan.soak = Some(spec);
    Ok(())
}

/// The URLs of `--target URL[,URL...]`, each checked (http or https, no
/// repeats); `Err` names the one that is wrong.
pub fn split_targets(arg: &str) -> Result<Vec<String>, OverrideError> {
    let mut urls: Vec<String> = Vec::new();
    for t in arg.split(',').map(str::trim) {
        let bad = |given: &str, why: String| OverrideError::Target {
            given: given.to_owned(),
            why,
        };
        if t.is_empty() {
            return Err(bad(arg, "an empty URL in the list".into()));
        }
        let u = url::Url::parse(t).map_err(|e| bad(t, format!("not a URL: {e}")))?;
        if !matches!(u.scheme(), "http" | "https") {
            return Err(bad(t, "the URL must be http or https".into()));
        }
        if urls.iter().any(|x| x == t) {
            return Err(bad(t, "given twice".into()));
        }
        urls.push(t.to_owned());
    }
    Ok(urls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_knobs_apply_and_are_checked() {
        let mut c = CapacitySpec::with_defaults(10.0, 10.0, 100.0, Vec::new());
        let a = SearchOverrides {
            bisections: Some(2),
            resolution: Some(10.0),
            samples: Some(1),
            stable_within: Some(50.0),
        };
        a.apply(&mut c).unwrap();
        assert_eq!(
            (c.bisections, c.resolution_pct, c.samples, c.stable_pct),
            (2, 10.0, 1, 50.0)
        );
        let bad = SearchOverrides {
            resolution: Some(100.0),
            ..Default::default()
        };
        assert!(bad.apply(&mut c).is_err());
    }

    #[test]
    fn a_soak_holds_the_plans_level_for_its_steady_phase() {
        let plan = |text: &str| super::super::parse::parse_plan(text, "t.toml", "t").unwrap();
        let fixed = "duration = \"5s\"\n[load]\nrate = 20\n[scenarios.form-accept]\n";
        let mut p = plan(fixed);
        let o = Overrides {
            soak: Some(Duration::from_secs(600)),
            ..Default::default()
        };
        p.apply(&o).unwrap();
        assert_eq!(p.duration, Duration::from_secs(600));
        assert_eq!(p.warmup, Duration::from_secs(30), "a tenth, at most 30 s");
        let s = p.soak.expect("a soak");
        assert_eq!(s.cool_down, Duration::from_secs(120));
        assert_eq!(p.shape, LoadShape::Open { rate: 20.0 });
        let mut p = plan(fixed);
        let o = Overrides {
            soak: Some(Duration::from_secs(4)),
            cool_down: Some(Duration::from_secs(2)),
            warmup: Some(Duration::from_secs(1)),
            ..Default::default()
        };
        p.apply(&o).unwrap();
        assert_eq!(p.warmup, Duration::from_secs(1));
        assert_eq!(p.soak.unwrap().cool_down, Duration::from_secs(2));
        let staged = "[load]\nmodel = \"open\"\nstages = \"2s:10,2s:0\"\n[scenarios.form-accept]\n";
        let e = plan(staged).apply(&o).unwrap_err().to_string();
        assert!(e.contains("one load level"), "{e}");
        let o = Overrides {
            cool_down: Some(Duration::from_secs(2)),
            ..Default::default()
        };
        let e = plan(fixed).apply(&o).unwrap_err().to_string();
        assert!(e.contains("--soak"), "{e}");
    }

    #[test]
    fn soak_limits_are_set_by_flags_and_checked() {
        let plan = || {
            let text = "duration = \"5s\"\n[load]\nrate = 20\n[scenarios.form-accept]\n";
            super::super::parse::parse_plan(text, "t.toml", "t").unwrap()
        };
        let with = |l: SoakLimitOverrides, soak: bool| Overrides {
            soak: soak.then_some(Duration::from_secs(60)),
            soak_limits: l,
            ..Default::default()
        };
        let set = SoakLimitOverrides {
            rss_mib_per_min: Some(4.0),
            fds_per_min: Some(0.5),
            min_r2: Some(0.9),
        };
        let mut p = plan();
        p.apply(&with(set, true)).unwrap();
        let l = p.soak.unwrap().limits;
        assert_eq!(
            (l.rss_mib_per_min, l.fds_per_min, l.min_r2),
            (4.0, 0.5, 0.9)
        );
        // Unset ones keep their defaults.
        let mut p = plan();
        let only_rss = SoakLimitOverrides {
            rss_mib_per_min: Some(2.0),
            ..Default::default()
        };
        p.apply(&with(only_rss, true)).unwrap();
        let d = soak::SoakLimits::default();
        let l = p.soak.unwrap().limits;
        assert_eq!(
            (l.rss_mib_per_min, l.fds_per_min, l.min_r2),
            (2.0, d.fds_per_min, d.min_r2)
        );
        for (bad, flag) in [
            (
                SoakLimitOverrides {
                    rss_mib_per_min: Some(-1.0),
                    ..Default::default()
                },
                "--soak-rss-per-min",
            ),
            (
                SoakLimitOverrides {
                    fds_per_min: Some(f64::NAN),
                    ..Default::default()
                },
                "--soak-fds-per-min",
            ),
            (
                SoakLimitOverrides {
                    min_r2: Some(0.0),
                    ..Default::default()
                },
                "--soak-min-r2",
            ),
            (
                SoakLimitOverrides {
                    min_r2: Some(1.5),
                    ..Default::default()
                },
                "--soak-min-r2",
            ),
        ] {
            let e = plan().apply(&with(bad, true)).unwrap_err().to_string();
            assert!(e.contains(flag), "{e}");
        }
        let e = plan().apply(&with(set, false)).unwrap_err().to_string();
        assert!(e.contains("go with --soak"), "{e}");
    }
}
