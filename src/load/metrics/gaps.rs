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

/// Quiet spells as they are witnessed, in the recorder's time.
#[derive(Debug, Default)]
pub struct SpellLog {
    spells: Vec<(Duration, Duration)>,
}

impl SpellLog {
    /// Notes that nothing was answered from `from` to `to` while a round
    /// trip was in flight (recorder time).
    pub fn note(&mut self, from: Duration, to: Duration) {
        if to.saturating_sub(from) < MIN_KEPT {
            return;
        }
        if let Some(last) = self.spells.last_mut()
            && from <= last.1
            && to >= last.0
        {
            *last = (last.0.min(from), last.1.max(to));
            return;
        }
        self.spells.push((from, to));
        if self.spells.len() > MAX_KEPT * 2 {
            self.spells = merged(std::mem::take(&mut self.spells));
            self.spells
                .sort_by_key(|(a, b)| std::cmp::Reverse(b.saturating_sub(*a)));
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
            .filter_map(|(a, b)| {
                let (a, b) = (a.max(start), b.min(end));
                (b.saturating_sub(a) >= MIN_KEPT).then(|| Spell {
                    from_s: (a - start).as_secs_f64(),
                    len_s: (b - a).as_secs_f64(),
                })
            })
            .collect()
    }
}

/// Overlapping spells joined, in order of start.
fn merged(mut v: Vec<(Duration, Duration)>) -> Vec<(Duration, Duration)> {
    v.sort();
    let mut out: Vec<(Duration, Duration)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
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
            },
            Spell {
                from_s: 3.0,
                len_s: 4.0,
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
