//! Service gaps: spells in which round trips were in flight and none was
//! answered. A frozen target (SIGSTOP, a stop-the-world pause, a deadlock
//! that clears) shows as one, whatever the model: in the closed model the
//! users simply wait, so latency percentiles alone hide it (coordinated
//! omission), and a freeze shorter than the `stall` window does not end the
//! run.
//!
//! Every finished round trip witnesses the quiet spell before it: from the
//! later of its own start and the last answer before it, to its end. The
//! run's watcher adds what it sees while round trips are still waiting (a
//! freeze at the very end has no later answer). Spells are merged, clipped
//! to the measured window and kept when at least [`MIN_KEPT`] long; which
//! of them count as gaps is decided against the run's own pace
//! ([`floor`]).

use std::time::Duration;

/// Spells shorter than this are not kept at all.
pub const MIN_KEPT: Duration = Duration::from_millis(200);

/// A quiet spell never counts as a gap below this, however fast the target:
/// on a shared 2-core host running the test suite, a healthy target's
/// spells reach about 1 s (the machine, not the target, pausing).
pub const GAP_FLOOR: Duration = Duration::from_secs(2);

/// A spell counts as a gap when it lasts this many times the run's median
/// end-to-end latency (a tool that takes 2 s makes 2 s spells normal).
pub const MEDIAN_FACTOR: f64 = 20.0;

/// Spells kept at most (the longest win).
const MAX_KEPT: usize = 256;

/// One quiet spell, in the measured window's time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spell {
    /// Start, seconds from the window's start.
    pub from_s: f64,
    /// Length in seconds.
    pub len_s: f64,
    /// How many round trips were seen waiting through (part of) it: those
    /// that ended after it, or the most in flight at one look.
    pub witnesses: u32,
}

impl Spell {
    /// As the report shows it.
    pub fn report(&self) -> crate::report::ServiceGap {
        crate::report::ServiceGap {
            from_s: self.from_s,
            length_s: self.len_s,
        }
    }
}

/// The length from which a quiet spell is a service gap, for a run whose
/// median end-to-end latency is `median`.
pub fn floor(median: Duration) -> Duration {
    GAP_FLOOR.max(median.mul_f64(MEDIAN_FACTOR))
}

/// A spell as logged: start, end (recorder time) and its witnesses: the
/// round trips that ended after waiting through it (each counted once),
/// and the most seen waiting at one look (a look at round trips still in
/// flight sees the same ones again).
type Logged = (Duration, Duration, Witnesses);

/// Who saw a spell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
struct Witnesses {
    ended: u32,
    at_once: u32,
}

impl Witnesses {
    fn join(self, o: Witnesses) -> Witnesses {
        Witnesses {
            ended: self.ended.saturating_add(o.ended),
            at_once: self.at_once.max(o.at_once),
        }
    }

    fn count(self) -> u32 {
        self.ended.max(self.at_once)
    }
}

/// Quiet spells as they are witnessed, in the recorder's time.
#[derive(Debug, Default)]
pub struct SpellLog {
    spells: Vec<Logged>,
}

impl SpellLog {
    /// Notes that nothing was answered from `from` to `to` while a round
    /// trip was in flight (recorder time): the round trip that ended at
    /// `to` saw it.
    pub fn note(&mut self, from: Duration, to: Duration) {
        self.add(
            from,
            to,
            Witnesses {
                ended: 1,
                at_once: 1,
            },
        );
    }

    /// Notes a spell still under way, `waiting` round trips in flight.
    pub fn note_waiting(&mut self, from: Duration, to: Duration, waiting: u32) {
        self.add(
            from,
            to,
            Witnesses {
                ended: 0,
                at_once: waiting,
            },
        );
    }

    fn add(&mut self, from: Duration, to: Duration, witnesses: Witnesses) {
        if to.saturating_sub(from) < MIN_KEPT {
            return;
        }
        if let Some(last) = self.spells.last_mut()
            && from <= last.1
            && to >= last.0
        {
            *last = (last.0.min(from), last.1.max(to), last.2.join(witnesses));
            return;
        }
        self.spells.push((from, to, witnesses));
        if self.spells.len() > MAX_KEPT * 2 {
            self.spells = merged(std::mem::take(&mut self.spells));
            self.spells
                .sort_by_key(|(a, b, _)| std::cmp::Reverse(b.saturating_sub(*a)));
            self.spells.truncate(MAX_KEPT);
            self.spells.sort();
        }
    }

    /// The spells merged and clipped to the window that starts at `start`
    /// and lasts `len` (recorder time), in order.
    pub fn window(&self, start: Duration, len: Duration) -> Vec<Spell> {
        let end = start.saturating_add(len);
        merged(self.spells.clone())
            .into_iter()
            .filter_map(|(a, b, witnesses)| {
                let (a, b) = (a.max(start), b.min(end));
                (b.saturating_sub(a) >= MIN_KEPT).then(|| Spell {
                    from_s: (a - start).as_secs_f64(),
                    len_s: (b - a).as_secs_f64(),
                    witnesses: witnesses.count(),
                })
            })
            .collect()
    }
}

/// Overlapping spells joined (their witnesses added), in order of start.
fn merged(mut v: Vec<Logged>) -> Vec<Logged> {
    v.sort();
    let mut out: Vec<Logged> = Vec::with_capacity(v.len());
    for (a, b, w) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => {
                last.1 = last.1.max(b);
                last.2 = last.2.join(w);
            }
            _ => out.push((a, b, w)),
        }
    }
    out
}

/// A quiet spell counts toward the frozen time from this many times the
/// run's typical fast round trip ([`FROZEN_PERCENTILE`]): a slow tool's
/// own wait is not a freeze.
pub const FROZEN_FACTOR: f64 = 5.0;

/// The percentile of the end-to-end latency that stands for a round trip
/// the target served at its own pace. Not the median: in the open model
/// a target frozen most of the time makes most round trips wait out a
/// freeze (latency counts from each slot), and a median-based floor then
/// excused the freezes themselves.
pub const FROZEN_PERCENTILE: f64 = 10.0;

/// How much of a window the target was frozen.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Frozen {
    /// Frozen time over the window's length (0–1).
    pub share: f64,
    /// The frozen time, seconds.
    pub frozen_s: f64,
    /// The spells that counted (less the generator's own pauses).
    pub spells: usize,
    /// The longest of them, seconds.
    pub longest_s: f64,
    /// Time the generator itself was paused in those spells, seconds (left
    /// out: the host, not the target, stopped).
    pub paused_s: f64,
}

/// Open model: a quiet spell counts toward the frozen time when the
/// schedule started at least this many round trips in it (a target
/// keeping pace answers about as many; none answered is no chance).
pub const FROZEN_EXPECTED: f64 = 10.0;

/// What a quiet spell is measured against: is it longer than the target's
/// own pace?
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Pace {
    /// The closed model: against the run's typical fast round trip
    /// ([`FROZEN_FACTOR`] × its [`FROZEN_PERCENTILE`] end-to-end latency).
    /// Each user's round trip counts from its own start, so a freeze does
    /// not make the fast ones slow.
    #[default]
    Latency,
    /// The open model: against the schedule, which keeps starting round
    /// trips whatever the target does ([`FROZEN_EXPECTED`]). Latency
    /// counts from each slot there, so a target frozen most of the time
    /// makes nearly every round trip slow and no latency is typical.
    Schedule {
        /// The stages, in round trips/s.
        stages: Vec<crate::load::spec::shape::Stage>,
        /// The window's start within them.
        lead: Duration,
        /// This process's share of the arrivals (a segment's 1/N).
        share: f64,
    },
}

impl Pace {
    /// The least length from which `s` counts as frozen, given the run's
    /// [`FROZEN_PERCENTILE`] end-to-end latency `typical`.
    fn counts(&self, s: &Spell, typical: Duration) -> bool {
        if s.len_s < MIN_KEPT.as_secs_f64() || s.witnesses < 2 {
            return false;
        }
        match self {
            Pace::Latency => s.len_s >= typical.as_secs_f64() * FROZEN_FACTOR,
            Pace::Schedule {
                stages,
                lead,
                share,
            } => {
                let from = *lead + Duration::from_secs_f64(s.from_s);
                let to = from + Duration::from_secs_f64(s.len_s);
                let rate = crate::load::spec::shape::mean_target(stages, from, to) * share;
                rate * s.len_s >= FROZEN_EXPECTED
            }
        }
    }
}

/// The share of a window of `window` the target spent frozen: every quiet
/// spell longer than the target's own pace ([`Pace`]) that more than one
/// round trip waited through, less its overlap with `pauses` (spells in
/// which the generator's own heartbeat did not run). Where [`gaps`] needs
/// one long spell, this sums short ones: a target frozen for 1.8 s of
/// every 2.4 s has no service gap (each freeze is under the floor) and is
/// frozen 75 % of the time. With a single round trip in flight a slow
/// answer cannot be told from a freeze, so such spells do not count (a
/// long one is still a service gap).
pub fn frozen(
    spells: &[Spell],
    pace: &Pace,
    typical: Duration,
    pauses: &[Spell],
    window: Duration,
) -> Frozen {
    let overlap = |s: &Spell| -> f64 {
        pauses
            .iter()
            .map(|p| {
                let (a, b) = (
                    s.from_s.max(p.from_s),
                    (s.from_s + s.len_s).min(p.from_s + p.len_s),
                );
                (b - a).max(0.0)
            })
            .sum::<f64>()
            .min(s.len_s)
    };
    let mut out = Frozen {
        share: 0.0,
        frozen_s: 0.0,
        spells: 0,
        longest_s: 0.0,
        paused_s: 0.0,
    };
    for s in spells.iter().filter(|s| pace.counts(s, typical)) {
        let paused = overlap(s);
        out.paused_s += paused;
        let len = s.len_s - paused;
        if len <= 0.0 {
            continue;
        }
        out.frozen_s += len;
        out.spells += 1;
        out.longest_s = out.longest_s.max(len);
    }
    let w = window.as_secs_f64();
    out.share = if w > 0.0 {
        (out.frozen_s / w).min(1.0)
    } else {
        0.0
    };
    out
}

/// The spells of `spells` that are gaps for a run with median `median`,
/// longest first.
pub fn gaps(spells: &[Spell], median: Duration) -> Vec<Spell> {
    let min = floor(median).as_secs_f64();
    let mut out: Vec<Spell> = spells.iter().copied().filter(|s| s.len_s >= min).collect();
    out.sort_by(|a, b| b.len_s.total_cmp(&a.len_s));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn overlapping_witnesses_make_one_spell_and_short_ones_are_dropped() {
        let mut log = SpellLog::default();
        log.note(ms(1000), ms(5000));
        log.note(ms(1000), ms(5100)); // a second witness of the same freeze
        log.note(ms(6000), ms(6100)); // too short to keep
        log.note(ms(7000), ms(7600));
        let w = log.window(Duration::ZERO, ms(20_000));
        assert_eq!(w.len(), 2);
        assert!((w[0].len_s - 4.1).abs() < 1e-9, "{w:?}");
        assert_eq!((w[0].witnesses, w[1].witnesses), (2, 1));
        // Looks at a freeze still under way see the same round trips again:
        // the most at once counts, not the number of looks.
        let mut log = SpellLog::default();
        for i in 1..=8 {
            log.note_waiting(ms(1000), ms(1000 + 250 * i), 1);
        }
        assert_eq!(log.window(Duration::ZERO, ms(5000))[0].witnesses, 1);
        log.note_waiting(ms(1000), ms(3100), 3);
        assert_eq!(log.window(Duration::ZERO, ms(5000))[0].witnesses, 3);
        assert!((w[1].from_s - 7.0).abs() < 1e-9);
    }

    #[test]
    fn spells_are_clipped_to_the_window() {
        let mut log = SpellLog::default();
        log.note(ms(500), ms(2500));
        log.note(ms(9_000), ms(12_000));
        let w = log.window(ms(1000), ms(9000));
        assert_eq!(w.len(), 2);
        assert!((w[0].from_s - 0.0).abs() < 1e-9 && (w[0].len_s - 1.5).abs() < 1e-9);
        assert!((w[1].from_s - 8.0).abs() < 1e-9 && (w[1].len_s - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_gap_is_long_against_the_runs_own_pace() {
        let spells = [
            Spell {
                from_s: 1.0,
                len_s: 0.4,
                witnesses: 1,
            },
            Spell {
                from_s: 3.0,
                len_s: 4.0,
                witnesses: 1,
            },
        ];
        let fast = gaps(&spells, ms(2));
        assert_eq!(fast.len(), 1, "0.4 s is under the floor");
        assert_eq!(fast[0].from_s, 3.0);
        // A tool that takes 300 ms: spells of 4 s are still gaps, below
        // 6 s they would not be.
        assert_eq!(gaps(&spells, ms(300)).len(), 0);
        assert_eq!(gaps(&spells, ms(150)).len(), 1);
    }

    fn spell(from_s: f64, len_s: f64) -> Spell {
        Spell {
            from_s,
            len_s,
            witnesses: 4,
        }
    }

    #[test]
    fn short_freezes_add_up_to_the_frozen_time() {
        // 1.8 s of every 2.4 s over 12 s: no gap (each is under the 2 s
        // floor), 75 % frozen.
        let spells: Vec<Spell> = (0..5).map(|i| spell(i as f64 * 2.4, 1.8)).collect();
        assert!(gaps(&spells, ms(3)).is_empty());
        let f = frozen(&spells, &Pace::Latency, ms(3), &[], Duration::from_secs(12));
        assert!((f.share - 0.75).abs() < 1e-9, "{f:?}");
        assert_eq!((f.spells, f.longest_s), (5, 1.8));
        // A slow tool (500 ms at the fast end): spells under 2.5 s are its
        // pace.
        let f = frozen(
            &spells,
            &Pace::Latency,
            ms(500),
            &[],
            Duration::from_secs(12),
        );
        assert_eq!(f.share, 0.0);
        // The open model: at 300/s, 1.8 s without an answer is 540 round
        // trips unanswered, whatever the latency; at 2/s it is 3.6, no
        // telling.
        let open = |rate: f64| Pace::Schedule {
            stages: crate::load::spec::shape::parse_stages(&format!("20s:{rate}"))
                .unwrap()
                .into_iter()
                .map(|s| crate::load::spec::shape::Stage { target: rate, ..s })
                .collect(),
            lead: Duration::ZERO,
            share: 1.0,
        };
        let f = frozen(&spells, &open(300.0), ms(900), &[], Duration::from_secs(12));
        assert!((f.share - 0.75).abs() < 1e-9, "{f:?}");
        let f = frozen(&spells, &open(2.0), ms(900), &[], Duration::from_secs(12));
        assert_eq!(f.share, 0.0);
        // One round trip waiting alone: a slow answer, or a freeze; no telling.
        let alone: Vec<Spell> = spells
            .iter()
            .map(|s| Spell { witnesses: 1, ..*s })
            .collect();
        let f = frozen(&alone, &Pace::Latency, ms(3), &[], Duration::from_secs(12));
        assert_eq!(f.share, 0.0);
    }

    #[test]
    fn the_generators_own_pauses_are_not_the_targets() {
        let spells = [spell(1.0, 1.0), spell(5.0, 0.5)];
        // The host stopped the generator for the whole first spell and
        // half of the second.
        let pauses = [spell(0.9, 1.2), spell(5.25, 1.0)];
        let f = frozen(
            &spells,
            &Pace::Latency,
            ms(1),
            &pauses,
            Duration::from_secs(10),
        );
        assert!((f.frozen_s - 0.25).abs() < 1e-9, "{f:?}");
        assert!((f.paused_s - 1.25).abs() < 1e-9, "{f:?}");
        assert_eq!(f.spells, 1);
    }

    #[test]
    fn the_log_stays_bounded() {
        let mut log = SpellLog::default();
        for i in 0..10_000u64 {
            log.note(ms(i * 1000), ms(i * 1000 + 300 + i % 7));
        }
        assert!(log.spells.len() <= MAX_KEPT * 2);
        assert!(!log.window(Duration::ZERO, ms(20_000_000)).is_empty());
    }
}
