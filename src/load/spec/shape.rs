//! Load shapes over time: k6-style stages (`--stage 10s:50,30s:50,10s:0`,
//! or `stages = "…"` in a plan), the warm-up, and the measured window.
//!
//! One representation serves the command line, the plan and both drivers:
//! a list of [`Stage`]s, each ramping linearly from the previous stage's
//! target (0 before the first) to its own over its duration; a `0s` stage
//! jumps. In the closed model a target is Goose users, in the open model
//! round trips started per second.
//!
//! [`Timeline`] says what a run does: the stages it drives, and the
//! measured window within them (after the users' launch and the warm-up,
//! [`Timeline::lead`], lasting [`Timeline::measured`]).

use std::fmt;
use std::time::Duration;

/// Why a model, a stage list or a timeline cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ShapeError {
    /// Neither `closed` nor `open`.
    #[error("unknown model {0:?}: use closed (TARGET = users) or open (TARGET = round trips/s)")]
    UnknownModel(String),
    /// A stage without its `:`.
    #[error("stage {n} {item:?}: expected DURATION:TARGET, e.g. 10s:50")]
    NotAStage {
        /// 1-based.
        n: usize,
        /// The stage as written.
        item: String,
    },
    /// A stage whose duration does not parse.
    #[error("stage {n} {item:?}: {given:?} is not a duration ({why}); use e.g. 10s, 1m, 500ms")]
    BadDuration {
        /// 1-based.
        n: usize,
        /// The stage as written.
        item: String,
        /// Its duration part.
        given: String,
        /// humantime's reason.
        why: String,
    },
    /// A stage whose target does not parse.
    #[error("stage {n} {item:?}: {given:?} is not a number")]
    BadTarget {
        /// 1-based.
        n: usize,
        /// The stage as written.
        item: String,
        /// Its target part.
        given: String,
    },
    /// A stage whose target is negative or not finite.
    #[error("stage {n} {item:?}: the target must be ≥ 0")]
    NegativeTarget {
        /// 1-based.
        n: usize,
        /// The stage as written.
        item: String,
    },
    /// Stages lasting no time.
    #[error("the stages last no time: give at least one stage a duration, e.g. 10s:50")]
    NoTime,
    /// Stages whose every target is 0.
    #[error("every stage's target is 0: nothing would run")]
    NoLoad,
    /// A warm-up as long as the stages.
    #[error("the warm-up ({}) must be shorter than the stages ({})", humantime::format_duration(*.warmup), humantime::format_duration(*.stages))]
    WarmupTooLong {
        /// The warm-up.
        warmup: Duration,
        /// The stages' total.
        stages: Duration,
    },
    /// A closed-model stage with a fractional user count.
    #[error("stage {n}: closed-model targets are users, a whole number (got {target})")]
    FractionalUsers {
        /// 1-based.
        n: usize,
        /// The target given.
        target: f64,
    },
    /// A closed-model stage not lasting whole seconds.
    #[error("stage {n}: closed-model stages last whole seconds (Goose steps in seconds; got {})", humantime::format_duration(*.duration))]
    FractionalSeconds {
        /// 1-based.
        n: usize,
        /// Its duration.
        duration: Duration,
    },
}

/// Which load model a target counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Goose users running round trips back to back.
    Closed,
    /// Round trips started on a schedule (per second).
    Open,
}

impl Model {
    /// `closed` or `open`.
    pub fn as_str(self) -> &'static str {
        match self {
            Model::Closed => "closed",
            Model::Open => "open",
        }
    }

    /// Parses `closed` / `open`.
    pub fn parse(s: &str) -> Result<Model, ShapeError> {
        match s.trim() {
            "closed" => Ok(Model::Closed),
            "open" => Ok(Model::Open),
            other => Err(ShapeError::UnknownModel(other.to_owned())),
        }
    }
}

/// Closed (Goose users) or open (arrival rate) model, fixed or staged.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadShape {
    /// `users` Goose users, each running round trips back to back.
    Closed {
        /// Number of users.
        users: usize,
        /// Users started per second.
        hatch_rate: f64,
    },
    /// Round trips start at a constant rate, whatever the target's speed.
    Open {
        /// Round trips started per second.
        rate: f64,
    },
    /// Stages ramping the users (closed) or the rate (open); they are the
    /// whole run (`stages = "10s:50,30s:50,10s:0"`, `--stage`, or a `ramp`).
    Staged {
        /// What the targets count.
        model: Model,
        /// The stages, in order.
        stages: Vec<Stage>,
    },
}

impl LoadShape {
    /// The model the shape runs in.
    pub fn model(&self) -> Model {
        match self {
            LoadShape::Closed { .. } => Model::Closed,
            LoadShape::Open { .. } => Model::Open,
            LoadShape::Staged { model, .. } => *model,
        }
    }

    /// The highest rate (open) or user count (closed) the shape reaches.
    pub fn peak(&self) -> f64 {
        match self {
            LoadShape::Closed { users, .. } => *users as f64,
            LoadShape::Open { rate } => *rate,
            LoadShape::Staged { stages, .. } => peak(stages),
        }
    }

    /// The shape in words, for the report's settings.
    pub fn describe(&self) -> String {
        match self {
            LoadShape::Closed { users, hatch_rate } => {
                format!("{users} users, launched at {hatch_rate} per second")
            }
            LoadShape::Open { rate } => format!("{rate} round trips/s"),
            LoadShape::Staged { model, stages } => format!(
                "stages {} ({})",
                format_stages(stages),
                match model {
                    Model::Closed => "users",
                    Model::Open => "round trips/s",
                }
            ),
        }
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One stage: ramp linearly to `target` over `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    /// How long the ramp takes (zero: a jump).
    pub duration: Duration,
    /// Users (closed) or round trips/s (open) at the stage's end.
    pub target: f64,
}

/// Parses `10s:50,30s:50,10s:0` (humantime durations, targets ≥ 0).
/// Errors name the stage and say what is expected.
pub fn parse_stages(text: &str) -> Result<Vec<Stage>, ShapeError> {
    let mut out = Vec::new();
    for (i, item) in text.split(',').enumerate() {
        let item = item.trim();
        let (n, owned) = (i + 1, || item.to_owned());
        let Some((d, t)) = item.split_once(':') else {
            return Err(ShapeError::NotAStage { n, item: owned() });
        };
        let duration =
            humantime::parse_duration(d.trim()).map_err(|e| ShapeError::BadDuration {
                n,
                item: owned(),
                given: d.trim().to_owned(),
                why: e.to_string(),
            })?;
        let target: f64 = t.trim().parse().map_err(|_| ShapeError::BadTarget {
            n,
            item: owned(),
            given: t.trim().to_owned(),
        })?;
        if !(target.is_finite() && target >= 0.0) {
            return Err(ShapeError::NegativeTarget { n, item: owned() });
        }
        out.push(Stage { duration, target });
    }
    validate(&out)?;
    Ok(out)
}

/// A stage list a run can drive: some time, and some load at some point.
pub fn validate(stages: &[Stage]) -> Result<(), ShapeError> {
    if total(stages).is_zero() {
        return Err(ShapeError::NoTime);
    }
    if stages.iter().all(|s| s.target <= 0.0) {
        return Err(ShapeError::NoLoad);
    }
    Ok(())
}

/// Writes stages back in the `--stage` syntax.
pub fn format_stages(stages: &[Stage]) -> String {
    stages
        .iter()
        .map(|s| format!("{}:{}", humantime::format_duration(s.duration), s.target))
        .collect::<Vec<_>>()
        .join(",")
}

/// The stages' total length.
pub fn total(stages: &[Stage]) -> Duration {
    stages.iter().map(|s| s.duration).sum()
}

/// The highest target.
pub fn peak(stages: &[Stage]) -> f64 {
    stages.iter().map(|s| s.target).fold(0.0, f64::max)
}

/// The target `t` into the stages (linear within a stage; 0 past the end).
pub fn target_at(stages: &[Stage], t: Duration) -> f64 {
    let mut from = 0.0;
    let mut start = Duration::ZERO;
    for s in stages {
        let end = start + s.duration;
        if t < end {
            let f = (t - start).as_secs_f64() / s.duration.as_secs_f64();
            return from + (s.target - from) * f;
        }
        from = s.target;
        start = end;
    }
    0.0
}

/// The mean target over `[from, to)` (the integral of the piecewise-linear
/// stages over their length): the offered rate of an interval. 0 past
/// the end; the target at `from` when the span is empty.
pub fn mean_target(stages: &[Stage], from: Duration, to: Duration) -> f64 {
    let (a, b) = (from.as_secs_f64(), to.as_secs_f64());
    if b <= a {
        return target_at(stages, from);
    }
    let mut area = 0.0;
    let mut start = 0.0;
    let mut prev = 0.0;
    for s in stages {
        let len = s.duration.as_secs_f64();
        let end = start + len;
        let (lo, hi) = (a.max(start), b.min(end));
        if hi > lo && len > 0.0 {
            let at = |t: f64| prev + (s.target - prev) * (t - start) / len;
            area += (at(lo) + at(hi)) / 2.0 * (hi - lo);
        }
        prev = s.target;
        start = end;
    }
    area / (b - a)
}

/// Stages scaled in time so they last `len`.
pub fn scaled(stages: &[Stage], len: Duration) -> Vec<Stage> {
    let factor = len.as_secs_f64() / total(stages).as_secs_f64().max(1e-9);
    stages
        .iter()
        .map(|s| Stage {
            duration: Duration::from_secs_f64(s.duration.as_secs_f64() * factor),
            target: s.target,
        })
        .collect()
}

/// What a run drives and which part of it is measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// The model the targets count in.
    pub model: Model,
    /// The stages the driver runs, from the first round trip on.
    pub stages: Vec<Stage>,
    /// Unmeasured time before the window: the users' launch (a fixed
    /// closed model) plus the warm-up.
    pub lead: Duration,
    /// The warm-up part of `lead`.
    pub warmup: Duration,
    /// The measured window's length.
    pub measured: Duration,
}

impl Timeline {
    /// A fixed load (`users` launched at `hatch_rate` per second, or a
    /// constant `rate`) held through the warm-up and the measured duration.
    pub fn fixed(
        model: Model,
        level: f64,
        hatch_rate: f64,
        warmup: Duration,
        measured: Duration,
    ) -> Timeline {
        let launch = match model {
            Model::Closed => Duration::from_secs_f64(level / hatch_rate.max(1e-3)),
            Model::Open => Duration::ZERO,
        };
        Timeline {
            model,
            stages: vec![
                Stage {
                    duration: launch,
                    target: level,
                },
                Stage {
                    duration: warmup + measured,
                    target: level,
                },
            ],
            lead: launch + warmup,
            warmup,
            measured,
        }
    }

    /// Stages as given: they are the whole run; the warm-up is their
    /// first part, the rest is measured.
    pub fn staged(
        model: Model,
        stages: Vec<Stage>,
        warmup: Duration,
    ) -> Result<Timeline, ShapeError> {
        validate(&stages)?;
        let all = total(&stages);
        if warmup >= all {
            return Err(ShapeError::WarmupTooLong {
                warmup,
                stages: all,
            });
        }
        Ok(Timeline {
            model,
            stages,
            lead: warmup,
            warmup,
            measured: all - warmup,
        })
    }

    /// The whole run's planned length.
    pub fn total(&self) -> Duration {
        total(&self.stages)
    }
}

/// The open model's schedule: the offsets (from the start) at which round
/// trips are due, in order. Arrival `k` is due when the integral of the
/// rate reaches `k` (so the first is due at once when the rate starts above
/// zero); no arrival is due at or after the stages' end.
#[derive(Debug, Clone)]
pub struct Arrivals<'a> {
    stages: &'a [Stage],
    index: usize,
    stage_start: f64,
    /// Arrivals' worth of rate integrated before the current stage.
    before: f64,
    from: f64,
    next: u64,
}

impl<'a> Arrivals<'a> {
    /// The schedule of `stages` (targets in round trips/s).
    pub fn new(stages: &'a [Stage]) -> Arrivals<'a> {
        Arrivals {
            stages,
            index: 0,
            stage_start: 0.0,
            before: 0.0,
            from: 0.0,
            next: 0,
        }
    }
}

impl Iterator for Arrivals<'_> {
    type Item = f64;

    fn next(&mut self) -> Option<f64> {
        while let Some(s) = self.stages.get(self.index) {
            let len = s.duration.as_secs_f64();
            let (r0, r1) = (self.from, s.target);
            let area = (r0 + r1) / 2.0 * len;
            let m = self.next as f64 - self.before;
            if len > 0.0 && m < area - 1e-9 {
                // Solve r0·t + (r1 − r0)·t²/(2·len) = m for t in [0, len):
                // t = 2m / (r0 + √(r0² + 2(r1 − r0)m/len)), stable for any slope.
                let disc = (r0 * r0 + 2.0 * (r1 - r0) * m / len).max(0.0);
                let denom = r0 + disc.sqrt();
                let t = if m <= 0.0 || denom <= 0.0 {
                    0.0
                } else {
                    2.0 * m / denom
                };
                self.next += 1;
                return Some(self.stage_start + t.min(len));
            }
            self.before += area;
            self.stage_start += len;
            self.from = r1;
            self.index += 1;
        }
        None
    }
}

/// Why stages cannot run on the closed model (Goose): it counts users in whole numbers and
/// steps in whole seconds.
pub fn check_closed_stages(stages: &[Stage]) -> Result<(), ShapeError> {
    for (i, s) in stages.iter().enumerate() {
        let n = i + 1;
        if s.target.fract() != 0.0 {
            return Err(ShapeError::FractionalUsers {
                n,
                target: s.target,
            });
        }
        if s.duration.subsec_nanos() != 0 {
            return Err(ShapeError::FractionalSeconds {
                n,
                duration: s.duration,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn an_intervals_mean_target_integrates_the_ramps() {
        let s = parse_stages("10s:100,10s:100,10s:0").unwrap();
        // Flat part, then half a ramp down: 100 and (100 + 50) / 2.
        assert!((mean_target(&s, secs(12), secs(13)) - 100.0).abs() < 1e-9);
        assert!((mean_target(&s, secs(20), secs(25)) - 75.0).abs() < 1e-9);
        // Across a stage boundary: 1 s at 100 and 1 s from 100 down to 90.
        assert!((mean_target(&s, secs(19), secs(21)) - 97.5).abs() < 1e-9);
        // Past the end the schedule offers nothing; the run's last second
        // is still what the schedule offered over it.
        assert_eq!(mean_target(&s, secs(40), secs(41)), 0.0);
        assert!((mean_target(&s, secs(29), secs(30)) - 5.0).abs() < 1e-9);
    }

    #[test]
    fn stages_parse_and_errors_say_which_and_why() {
        let s = parse_stages("10s:50, 30s:50,10s:0").unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(
            s[0],
            Stage {
                duration: secs(10),
                target: 50.0
            }
        );
        assert_eq!(total(&s), secs(50));
        assert_eq!(peak(&s), 50.0);
        assert_eq!(parse_stages(&format_stages(&s)).unwrap(), s);
        for (bad, says) in [
            ("10s", "stage 1 \"10s\": expected DURATION:TARGET"),
            (
                "10s:50,soon:3",
                "stage 2 \"soon:3\": \"soon\" is not a duration",
            ),
            ("10s:lots", "\"lots\" is not a number"),
            ("10s:-1", "must be ≥ 0"),
            ("0s:50", "last no time"),
            ("5s:0,5s:0", "nothing would run"),
        ] {
            let e = parse_stages(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn targets_ramp_linearly_between_stages() {
        let s = parse_stages("10s:50,10s:50,10s:0").unwrap();
        assert_eq!(target_at(&s, secs(0)), 0.0);
        assert_eq!(target_at(&s, secs(5)), 25.0);
        assert_eq!(target_at(&s, secs(15)), 50.0);
        assert_eq!(target_at(&s, secs(25)), 25.0);
        assert_eq!(target_at(&s, secs(31)), 0.0);
        let jump = parse_stages("0s:10,2s:10,0s:30,2s:30").unwrap();
        assert_eq!(target_at(&jump, secs(1)), 10.0);
        assert_eq!(target_at(&jump, secs(3)), 30.0);
    }

    #[test]
    fn the_schedule_follows_the_stages() {
        // Constant 10/s for 2 s: due at 0, 0.1, …, 1.9.
        let c = parse_stages("0s:10,2s:10").unwrap();
        let due: Vec<f64> = Arrivals::new(&c).collect();
        assert_eq!(due.len(), 20);
        assert!((due[1] - 0.1).abs() < 1e-9 && (due[19] - 1.9).abs() < 1e-9);
        // 0 → 100/s over 2 s, then back to 0 over 2 s: 100 + 100 arrivals,
        // a quarter of each ramp's in its first half.
        let r = parse_stages("2s:100,2s:0").unwrap();
        let due: Vec<f64> = Arrivals::new(&r).collect();
        assert!((199..=201).contains(&due.len()), "{}", due.len());
        assert!(due.windows(2).all(|w| w[0] <= w[1]), "in order");
        let in_sec = |a: f64| due.iter().filter(|t| **t >= a && **t < a + 1.0).count();
        let counts: Vec<usize> = (0..4).map(|i| in_sec(i as f64)).collect();
        assert!(counts[0].abs_diff(25) <= 1, "{counts:?}");
        assert!(counts[1].abs_diff(75) <= 1, "{counts:?}");
        assert!(counts[2].abs_diff(75) <= 1, "{counts:?}");
        assert!(counts[3].abs_diff(25) <= 1, "{counts:?}");
        assert!(due.iter().all(|t| *t < 4.0));
    }

    #[test]
    fn timelines_put_the_window_after_launch_and_warmup() {
        let t = Timeline::fixed(Model::Closed, 4.0, 2.0, secs(1), secs(10));
        assert_eq!(t.lead, secs(3), "2 s launch + 1 s warm-up");
        assert_eq!(t.measured, secs(10));
        assert_eq!(t.total(), secs(13));
        let o = Timeline::fixed(Model::Open, 50.0, 1.0, Duration::ZERO, secs(10));
        assert_eq!((o.lead, o.total()), (Duration::ZERO, secs(10)));
        let s =
            Timeline::staged(Model::Open, parse_stages("5s:10,5s:10").unwrap(), secs(2)).unwrap();
        assert_eq!((s.lead, s.measured), (secs(2), secs(8)));
        let e = Timeline::staged(Model::Open, parse_stages("5s:10").unwrap(), secs(5))
            .unwrap_err()
            .to_string();
        assert!(e.contains("shorter than the stages"), "{e}");
    }

    #[test]
    fn scaling_keeps_the_shape() {
        let s = parse_stages("1s:10,3s:20").unwrap();
        let d = scaled(&s, secs(8));
        assert_eq!(d[0].duration, secs(2));
        assert_eq!(d[1].duration, secs(6));
        assert_eq!(d[1].target, 20.0);
    }

    #[test]
    fn models_parse() {
        assert_eq!(Model::parse("open"), Ok(Model::Open));
        assert!(
            Model::parse("ramping")
                .unwrap_err()
                .to_string()
                .contains("closed")
        );
    }

    #[test]
    fn closed_stages_are_whole_users_and_seconds() {
        assert!(check_closed_stages(&parse_stages("0s:4,5s:4").unwrap()).is_ok());
        let e = check_closed_stages(&parse_stages("2s:2.5").unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("whole number"), "{e}");
        let e = check_closed_stages(&parse_stages("1500ms:2").unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("whole seconds"), "{e}");
    }
}
