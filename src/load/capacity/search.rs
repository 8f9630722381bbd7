//! The capacity search's pure part: which rate to try next ([`Search`]:
//! coarse steps, then bisection of the bracket around the knee), how a
//! step's samples are judged ([`judge`], [`worst_of`]) and the search's
//! worst-case length. No I/O: [`super::driver`] measures the steps.

use crate::load::spec::plan::CapacitySpec;
use std::time::Duration;

/// Which phase of the search a step belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// `start_rate + k × step`.
    Coarse,
    /// A midpoint between the last good and the first bad rate.
    Bisect,
}

impl StepKind {
    /// `coarse` or `bisect`.
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Coarse => "coarse",
            StepKind::Bisect => "bisect",
        }
    }
}

/// How a search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KneeStatus {
    /// The knee lies between a good and a bad measured rate.
    Bracketed,
    /// The first step already broke the SLO: the knee is below `start_rate`.
    BelowStart,
    /// `max_rate` held: the knee is at least the highest good rate.
    NotReached,
    /// The run stopped (Ctrl-C, a dead or stalled target) before the end.
    Stopped,
    /// A step could not be judged: its samples disagreed with no majority,
    /// or the generator could not offer its rate. The knee is not known.
    Inconclusive,
}

impl KneeStatus {
    /// The name written in `summary.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            KneeStatus::Bracketed => "bracketed",
            KneeStatus::BelowStart => "below_start",
            KneeStatus::NotReached => "not_reached",
            KneeStatus::Stopped => "stopped",
            KneeStatus::Inconclusive => "inconclusive",
        }
    }
}

/// The rate schedule of a search: coarse steps, then bisection.
#[derive(Debug, Clone)]
pub struct Search {
    start: f64,
    step: f64,
    max: f64,
    resolution: f64,
    max_bisections: u32,
    next_coarse: f64,
    good: Option<f64>,
    bad: Option<f64>,
    bisections: u32,
    done: Option<KneeStatus>,
}

impl Search {
    /// A search over `spec`'s rates.
    pub fn new(spec: &CapacitySpec) -> Search {
        Search {
            start: spec.start_rate,
            step: spec.step,
            max: spec.max_rate,
            resolution: spec.resolution_pct / 100.0,
            max_bisections: spec.bisections,
            next_coarse: spec.start_rate,
            good: None,
            bad: None,
            bisections: 0,
            done: None,
        }
    }

    /// The next rate to measure, or `None` when the search is over.
    pub fn next_rate(&mut self) -> Option<(f64, StepKind)> {
        if self.done.is_some() {
            return None;
        }
        match (self.good, self.bad) {
            (_, None) => {
                if self.next_coarse > self.max + 1e-9 {
                    self.done = Some(KneeStatus::NotReached);
                    return None;
                }
                Some((self.next_coarse, StepKind::Coarse))
            }
            (None, Some(_)) => {
                self.done = Some(KneeStatus::BelowStart);
                None
            }
            (Some(g), Some(b)) => {
                if self.bisections >= self.max_bisections || (b - g) < self.resolution * b {
                    self.done = Some(KneeStatus::Bracketed);
                    return None;
                }
                Some(((g + b) / 2.0, StepKind::Bisect))
            }
        }
    }

    /// Records the verdict of the step at `rate` (`within`: it held the
    /// SLO; `stopped`: the run ended during it).
    pub fn record(&mut self, rate: f64, kind: StepKind, within: bool, stopped: bool) {
        if stopped {
            self.done = Some(KneeStatus::Stopped);
            return;
        }
        self.record_judged(rate, kind, within);
    }

    /// Records a step's verdict ([`Search::record`] for one that ran).
    pub fn step(&mut self, rate: f64, kind: StepKind, verdict: StepVerdict) {
        match verdict {
            StepVerdict::Stopped => self.done = Some(KneeStatus::Stopped),
            StepVerdict::Noisy | StepVerdict::Unjudged => {
                self.done = Some(KneeStatus::Inconclusive)
            }
            v => self.record_judged(rate, kind, v.holds()),
        }
    }

    fn record_judged(&mut self, rate: f64, kind: StepKind, within: bool) {
        match kind {
            StepKind::Coarse => {
                if within {
                    self.good = Some(rate);
                    self.next_coarse = rate + self.step;
                } else {
                    self.bad = Some(rate);
                }
            }
            StepKind::Bisect => {
                self.bisections += 1;
                if within {
                    self.good = Some(rate);
                } else {
                    self.bad = Some(rate);
                }
            }
        }
    }

    /// The highest rate that held and the lowest that broke.
    pub fn bracket(&self) -> (Option<f64>, Option<f64>) {
        (self.good, self.bad)
    }

    /// How it ended (`None` while it runs).
    pub fn status(&self) -> Option<KneeStatus> {
        self.done
    }

    /// Most steps the search can take: every coarse step, then every halving.
    pub fn max_steps(&self) -> u64 {
        let coarse = ((self.max - self.start) / self.step + 1e-9)
            .floor()
            .max(0.0) as u64
            + 1;
        coarse + u64::from(self.max_bisections)
    }
}

/// One sample of a step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// End-to-end p50 (ms).
    pub p50_ms: f64,
    /// End-to-end p99 (ms).
    pub p99_ms: f64,
    /// Achieved round trips/s.
    pub achieved_rps: f64,
    /// Unexpected / all round trips.
    pub error_rate: f64,
    /// Every SLO threshold held (and the offered rate was delivered).
    pub within: bool,
    /// The run ended during this sample (not by its duration).
    pub stopped: bool,
    /// Why the sample tells nothing of the target (the generator fell
    /// behind its schedule, saturated its CPU, or could not offer the
    /// rate): it is neither a pass nor a breach.
    pub unjudged: Option<String>,
}

/// The verdict of a step once its samples are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepVerdict {
    /// The samples held the SLO and the p99 settled (or one sample was asked for).
    Within,
    /// A breach of the SLO that repeated (or one sample was asked for).
    Breach,
    /// Every sample held, but the p99 never settled: within (the worst
    /// sample held), with the spread noted.
    Unstable,
    /// The run stopped during the step.
    Stopped,
    /// The samples disagreed and no majority formed within the samples
    /// allowed (a lone breach, a lone pass): the host or the target is
    /// too noisy at this rate to tell.
    Noisy,
    /// No sample could be judged: the generator did not offer the rate.
    Unjudged,
}

impl StepVerdict {
    /// Whether the search counts the step as holding the SLO: its judged
    /// samples held it, settled or not (a spread is noted, never read as a
    /// breach; a lone breach that did not repeat is noted too).
    pub fn holds(self) -> bool {
        matches!(self, StepVerdict::Within | StepVerdict::Unstable)
    }

    /// The name in the step table.
    pub fn as_str(self) -> &'static str {
        match self {
            StepVerdict::Within => "within",
            StepVerdict::Breach => "breach",
            StepVerdict::Unstable => "unstable",
            StepVerdict::Stopped => "stopped",
            StepVerdict::Noisy => "noisy",
            StepVerdict::Unjudged => "unjudged",
        }
    }
}

/// When two p99s agree: within `pct` percent of the larger, or within
/// `floor_ms`, whichever is wider.
pub fn consistent(a: f64, b: f64, pct: f64, floor_ms: f64) -> bool {
    (a - b).abs() <= (a.max(b) * pct / 100.0).max(floor_ms)
}

/// The stability rule: `None` asks for another sample; otherwise the
/// step's verdict and whether it settled (`None`: not checked).
///
/// Neither a lone pass nor a lone breach decides a step: a pass needs a
/// second whose p99 agrees with it, a breach needs a second breach. On a
/// shared host one disturbed sample broke a step and moved the knee by a
/// whole coarse step (four searches of one setup gave 1,562/s, none,
/// 750/s, none). With `max_samples` 3, two samples of three decide; with
/// 2, a pass and a breach are [`StepVerdict::Noisy`]. A sample the
/// generator could not back ([`Sample::unjudged`]) counts for neither.
/// With `max_samples` 1 the one sample decides, as asked.
pub fn judge(
    samples: &[Sample],
    max_samples: u32,
    pct: f64,
    floor_ms: f64,
) -> Option<(StepVerdict, Option<bool>)> {
    let last = samples.last()?;
    if last.stopped {
        return Some((StepVerdict::Stopped, None));
    }
    let judged: Vec<&Sample> = samples.iter().filter(|s| s.unjudged.is_none()).collect();
    let passes: Vec<&Sample> = judged.iter().copied().filter(|s| s.within).collect();
    let breaches: Vec<&Sample> = judged.iter().copied().filter(|s| !s.within).collect();
    let settled = |s: &[&Sample]| {
        s.len() >= 2 && consistent(s[s.len() - 2].p99_ms, s[s.len() - 1].p99_ms, pct, floor_ms)
    };
    let full = samples.len() as u32 >= max_samples.max(1);
    if max_samples <= 1 {
        return Some(match judged.first() {
            Some(s) if s.within => (StepVerdict::Within, None),
            Some(_) => (StepVerdict::Breach, None),
            None => (StepVerdict::Unjudged, None),
        });
    }
    if breaches.len() >= 2 {
        return Some((StepVerdict::Breach, Some(settled(&breaches))));
    }
    if passes.len() >= 2 && (settled(&passes) || !breaches.is_empty()) {
        return Some((StepVerdict::Within, Some(settled(&passes))));
    }
    if !full {
        return None;
    }
    Some(match (passes.len(), breaches.len()) {
        (0, 0) => (StepVerdict::Unjudged, None),
        (p, 0) if p >= 2 => (StepVerdict::Unstable, Some(false)),
        _ => (StepVerdict::Noisy, None),
    })
}

/// The least and most of the host's other work over a search's samples
/// (cores), when they lie more than `limit` apart: the spare CPU the target
/// got moved by that much, and the knee with it (four searches of one
/// setup on a host whose builds came and went found 531, 1,750 and
/// 1,875/s, and none).
pub fn host_spread(other_cores: &[f64], limit: f64) -> Option<(f64, f64)> {
    let (lo, hi) = other_cores
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
    (hi - lo > limit).then_some((lo, hi))
}

/// The busiest the host's other work was over a search's samples and the
/// cores that left the run, when fewer than `spare` (0: not judged): the
/// knee would then be the host's leftovers (four searches on a 2-core host
/// whose other work took 1.4-1.86 cores found 594, 1,938 and 2,500/s).
pub fn host_leftover(other_cores: &[f64], cores: f64, spare: f64) -> Option<(f64, f64)> {
    let busiest = other_cores.iter().copied().reduce(f64::max)?;
    let left = (cores - busiest).max(0.0);
    (spare > 0.0 && left < spare).then_some((busiest, left))
}

/// The step's figures from its samples, conservatively: the worst p50, p99
/// and error rate, the lowest achieved rate.
pub fn worst_of(samples: &[Sample]) -> Sample {
    let max = |f: fn(&Sample) -> f64| samples.iter().map(f).fold(0.0, f64::max);
    Sample {
        p50_ms: max(|s| s.p50_ms),
        p99_ms: max(|s| s.p99_ms),
        achieved_rps: samples
            .iter()
            .map(|s| s.achieved_rps)
            .reduce(f64::min)
            .unwrap_or(0.0),
        error_rate: max(|s| s.error_rate),
        within: samples.iter().all(|s| s.within),
        stopped: samples.iter().any(|s| s.stopped),
        unjudged: None,
    }
}

/// The search's longest possible duration: every step (coarse and halving)
/// taking every sample, each `warm-up + step + drain`.
pub fn worst_case(spec: &CapacitySpec, warmup: Duration, drain: Duration) -> Duration {
    let steps = Search::new(spec).max_steps();
    let per = warmup + spec.step_duration + drain;
    per * (steps * u64::from(spec.samples.max(1))) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(start: f64, step: f64, max: f64, bisections: u32, res: f64) -> CapacitySpec {
        let mut s = CapacitySpec::with_defaults(start, step, max, Vec::new());
        s.bisections = bisections;
        s.resolution_pct = res;
        s
    }

    #[test]
    fn a_host_that_leaves_the_run_too_little_is_said() {
        // One core of two kept busy leaves about one: judged.
        assert_eq!(host_leftover(&[0.9, 1.1, 1.0], 2.0, 0.5), None);
        let (busiest, left) = host_leftover(&[1.4, 1.86, 1.6], 2.0, 0.5).unwrap();
        assert_eq!(busiest, 1.86);
        assert!((left - 0.14).abs() < 1e-9);
        assert_eq!(host_leftover(&[1.9], 2.0, 0.0), None, "0: not judged");
        assert_eq!(
            host_leftover(&[], 2.0, 0.5),
            None,
            "no samples, nothing to say"
        );
        assert_eq!(host_leftover(&[2.5], 2.0, 0.5).unwrap().1, 0.0);
    }

    /// Runs a search against a target whose knee is exactly `knee`.
    fn run_against(s: &CapacitySpec, knee: f64) -> (Vec<(f64, StepKind)>, Search) {
        let mut search = Search::new(s);
        let mut tried = Vec::new();
        while let Some((rate, kind)) = search.next_rate() {
            tried.push((rate, kind));
            search.record(rate, kind, rate <= knee, false);
            assert!(tried.len() < 1000, "the search must end");
        }
        (tried, search)
    }

    #[test]
    fn bisection_narrows_the_bracket_around_the_knee() {
        let s = spec(100.0, 100.0, 1000.0, 10, 5.0);
        let (tried, search) = run_against(&s, 437.0);
        let coarse: Vec<f64> = tried
            .iter()
            .filter(|t| t.1 == StepKind::Coarse)
            .map(|t| t.0)
            .collect();
        assert_eq!(coarse, [100.0, 200.0, 300.0, 400.0, 500.0]);
        let bisect: Vec<f64> = tried
            .iter()
            .filter(|t| t.1 == StepKind::Bisect)
            .map(|t| t.0)
            .collect();
        // 450 bad, 425 good, 437.5 bad: bracket 425..437.5 = 12.5 < 5 % of 437.5.
        assert_eq!(bisect, [450.0, 425.0, 437.5]);
        let (g, b) = search.bracket();
        assert_eq!((g, b), (Some(425.0), Some(437.5)));
        assert!(g.unwrap() <= 437.0 && 437.0 < b.unwrap());
        assert_eq!(search.status(), Some(KneeStatus::Bracketed));
    }

    #[test]
    fn bisection_stops_after_k_halvings() {
        let s = spec(100.0, 100.0, 1000.0, 2, 0.01);
        let (tried, search) = run_against(&s, 437.0);
        assert_eq!(tried.iter().filter(|t| t.1 == StepKind::Bisect).count(), 2);
        assert_eq!(search.bracket(), (Some(425.0), Some(450.0)));
        assert_eq!(search.max_steps(), 10 + 2);
    }

    #[test]
    fn a_knee_below_the_start_or_above_the_max_says_so() {
        let s = spec(100.0, 100.0, 300.0, 4, 5.0);
        let (tried, search) = run_against(&s, 50.0);
        assert_eq!(tried, [(100.0, StepKind::Coarse)]);
        assert_eq!(search.status(), Some(KneeStatus::BelowStart));
        assert_eq!(search.bracket(), (None, Some(100.0)));
        let (tried, search) = run_against(&s, 1e9);
        assert_eq!(tried.len(), 3);
        assert_eq!(search.status(), Some(KneeStatus::NotReached));
        assert_eq!(search.bracket(), (Some(300.0), None));
    }

    #[test]
    fn a_stopped_step_ends_the_search() {
        let s = spec(100.0, 100.0, 1000.0, 4, 5.0);
        let mut search = Search::new(&s);
        let (r, k) = search.next_rate().unwrap();
        search.record(r, k, true, false);
        let (r, k) = search.next_rate().unwrap();
        search.record(r, k, false, true);
        assert_eq!(search.next_rate(), None);
        assert_eq!(search.status(), Some(KneeStatus::Stopped));
    }

    fn ok(p99: f64) -> Sample {
        Sample {
            p99_ms: p99,
            within: true,
            ..Default::default()
        }
    }

    #[test]
    fn a_step_is_within_only_once_its_p99_settles() {
        // One sample is never enough when repeats are allowed.
        assert_eq!(judge(&[ok(10.0)], 3, 20.0, 1.0), None);
        // 10 → 11: within 20 %.
        assert_eq!(
            judge(&[ok(10.0), ok(11.0)], 3, 20.0, 1.0),
            Some((StepVerdict::Within, Some(true)))
        );
        // 10 → 20: not settled, one more; 20 → 21 settles.
        assert_eq!(judge(&[ok(10.0), ok(20.0)], 3, 20.0, 1.0), None);
        assert_eq!(
            judge(&[ok(10.0), ok(20.0), ok(21.0)], 3, 20.0, 1.0),
            Some((StepVerdict::Within, Some(true)))
        );
        // Never settles within 3 samples: unstable, which holds the SLO
        // (every sample did); a breach never does.
        assert!(StepVerdict::Unstable.holds() && !StepVerdict::Breach.holds());
        assert_eq!(
            judge(&[ok(10.0), ok(20.0), ok(40.0)], 3, 20.0, 1.0),
            Some((StepVerdict::Unstable, Some(false)))
        );
        // Below the floor, differences are noise: 0.2 ms vs 0.9 ms is stable.
        assert_eq!(
            judge(&[ok(0.2), ok(0.9)], 3, 20.0, 1.0),
            Some((StepVerdict::Within, Some(true)))
        );
        // One sample allowed: within, stability not checked.
        assert_eq!(
            judge(&[ok(10.0)], 1, 20.0, 1.0),
            Some((StepVerdict::Within, None))
        );
    }

    fn bad(p99: f64) -> Sample {
        Sample {
            p99_ms: p99,
            within: false,
            ..Default::default()
        }
    }

    /// A lone breach broke a step and moved the knee by a whole coarse
    /// step on a busy host: now a breach must repeat, as a pass must.
    #[test]
    fn a_breach_breaks_a_step_only_when_it_repeats() {
        // One breach: sample again.
        assert_eq!(judge(&[bad(90.0)], 3, 20.0, 1.0), None);
        // It repeats: a breach.
        assert_eq!(
            judge(&[bad(90.0), bad(80.0)], 3, 20.0, 1.0),
            Some((StepVerdict::Breach, Some(true)))
        );
        // It does not: one more decides, two of three.
        assert_eq!(judge(&[bad(90.0), ok(5.0)], 3, 20.0, 1.0), None);
        assert_eq!(
            judge(&[bad(90.0), ok(5.0), ok(5.5)], 3, 20.0, 1.0).map(|v| v.0),
            Some(StepVerdict::Within)
        );
        assert_eq!(
            judge(&[ok(5.0), bad(90.0), bad(70.0)], 3, 20.0, 1.0).map(|v| v.0),
            Some(StepVerdict::Breach)
        );
        // Two passes that did not settle outvote a lone breach.
        assert_eq!(
            judge(&[ok(5.0), ok(15.0), bad(90.0)], 3, 20.0, 1.0).map(|v| v.0),
            Some(StepVerdict::Within)
        );
        // Two samples allowed, one of each: no telling.
        assert_eq!(
            judge(&[bad(90.0), ok(5.0)], 2, 20.0, 1.0),
            Some((StepVerdict::Noisy, None))
        );
        // One sample allowed: it decides, as asked.
        assert_eq!(
            judge(&[bad(90.0)], 1, 20.0, 1.0).map(|v| v.0),
            Some(StepVerdict::Breach)
        );
        let stopped = Sample {
            stopped: true,
            ..ok(1.0)
        };
        assert_eq!(
            judge(&[stopped], 3, 20.0, 1.0).map(|v| v.0),
            Some(StepVerdict::Stopped)
        );
    }

    #[test]
    fn a_host_whose_other_work_comes_and_goes_is_noise() {
        // A build beside the search: a core more in some samples.
        assert_eq!(host_spread(&[0.1, 1.1, 0.2, 1.0], 0.5), Some((0.1, 1.1)));
        // One core kept busy throughout: steady, whatever its level.
        assert_eq!(host_spread(&[1.0, 1.1, 0.95, 1.05], 0.5), None);
        assert_eq!(host_spread(&[], 0.5), None);
    }

    /// A sample the generator could not back is neither a pass nor a
    /// breach; a step with none judged cannot be told.
    #[test]
    fn samples_the_generator_could_not_back_do_not_count() {
        let late = Sample {
            unjudged: Some("the generator fell behind its schedule".into()),
            ..bad(500.0)
        };
        assert_eq!(judge(std::slice::from_ref(&late), 3, 20.0, 1.0), None);
        assert_eq!(
            judge(&[late.clone(), ok(5.0), ok(5.2)], 3, 20.0, 1.0).map(|v| v.0),
            Some(StepVerdict::Within)
        );
        assert_eq!(
            judge(&[late.clone(), late.clone(), late.clone()], 3, 20.0, 1.0).map(|v| v.0),
            Some(StepVerdict::Unjudged)
        );
        assert_eq!(
            judge(&[late.clone(), ok(5.0), late], 3, 20.0, 1.0).map(|v| v.0),
            Some(StepVerdict::Noisy)
        );
        // A step that cannot be told ends the search: inconclusive.
        let s = spec(100.0, 100.0, 1000.0, 4, 5.0);
        let mut search = Search::new(&s);
        let (r, k) = search.next_rate().unwrap();
        search.step(r, k, StepVerdict::Within);
        let (r, k) = search.next_rate().unwrap();
        search.step(r, k, StepVerdict::Noisy);
        assert_eq!(search.next_rate(), None);
        assert_eq!(search.status(), Some(KneeStatus::Inconclusive));
    }

    #[test]
    fn a_step_reports_its_worst_sample() {
        let a = Sample {
            p50_ms: 1.0,
            p99_ms: 5.0,
            achieved_rps: 98.0,
            error_rate: 0.0,
            within: true,
            stopped: false,
            unjudged: None,
        };
        let b = Sample {
            p50_ms: 2.0,
            p99_ms: 4.0,
            achieved_rps: 99.0,
            error_rate: 0.01,
            within: true,
            stopped: false,
            unjudged: None,
        };
        let w = worst_of(&[a, b]);
        assert_eq!(
            (w.p50_ms, w.p99_ms, w.achieved_rps, w.error_rate),
            (2.0, 5.0, 98.0, 0.01)
        );
    }

    #[test]
    fn the_worst_case_counts_every_step_and_sample() {
        let mut s = spec(100.0, 100.0, 500.0, 3, 5.0);
        s.samples = 2;
        s.step_duration = Duration::from_secs(2);
        // 5 coarse + 3 halvings, 2 samples each, (1 + 2 + 0.5) s each.
        assert_eq!(
            worst_case(&s, Duration::from_secs(1), Duration::from_millis(500)),
            Duration::from_secs(56)
        );
    }

    #[test]
    fn the_shipped_capacity_plan_sets_every_knob() {
        let p = crate::load::spec::parse::parse_plan(
            include_str!("../../../loadtests/capacity.toml"),
            "capacity.toml",
            "capacity",
        )
        .unwrap();
        let c = p.capacity.unwrap();
        assert_eq!((c.bisections, c.samples), (4, 3));
        assert_eq!((c.resolution_pct, c.stable_pct), (5.0, 20.0));
        assert_eq!(c.stable_floor, Duration::from_millis(1));
    }
}
