//! The load generator's own health: can the run's verdict be trusted?
//!
//! Two signs that the generator, not the target, set the pace:
//!
//! - **Schedule slip** (open model): an arrival started later than its slot
//!   though the in-flight cap never held it (the generator's thread was busy
//!   or not running): the target was offered less than the plan. An arrival
//!   the cap held is the target's doing (it is not finishing round trips),
//!   and its wait stays in the latency, from the intended start, unless
//!   the generator's own descriptor limit lowered the cap below the plan's
//!   ([`InFlightCap`]): then an arrival the cap held late is its shortfall.
//! - **Its own CPU**: busy for at least [`CPU_LIMIT`] of its threads' time.
//!
//! Beyond the limits a run's verdict is INCONCLUSIVE with the reason
//! ([`problems`]), never PASSED.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// An arrival this late (beyond any wait for the in-flight cap) is late.
pub const LATE: Duration = Duration::from_millis(250);

/// More than this share of late arrivals makes the run inconclusive.
pub const LATE_SHARE_LIMIT: f64 = 0.10;

/// The generator's CPU over its threads' time from which it is saturated.
pub const CPU_LIMIT: f64 = 0.95;

/// Counts arrivals and their slip, shared by the open model's shards.
#[derive(Debug, Default)]
pub struct SlipMeter {
    arrivals: AtomicU64,
    late: AtomicU64,
    held: AtomicU64,
    held_late: AtomicU64,
    max_slip_us: AtomicU64,
}

impl SlipMeter {
    /// Notes one arrival that started `slip` after its slot, having waited
    /// `held` for room under the in-flight cap (an arrival the cap held at
    /// all is the target's doing, not late).
    pub fn note(&self, slip: Duration, held: Duration) {
        self.arrivals.fetch_add(1, Ordering::Relaxed);
        if !held.is_zero() {
            // Once the cap held it, the target's pace set its start (unless
            // the cap is the generator's, see `problems`).
            self.held.fetch_add(1, Ordering::Relaxed);
            if slip > LATE {
                self.held_late.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        if slip > LATE {
            self.late.fetch_add(1, Ordering::Relaxed);
        }
        self.max_slip_us
            .fetch_max(slip.as_micros() as u64, Ordering::Relaxed);
    }

    /// The counts so far (`None` when no arrival was scheduled: the closed
    /// model).
    pub fn counts(&self) -> Option<SlipCounts> {
        let arrivals = self.arrivals.load(Ordering::Relaxed);
        (arrivals > 0).then(|| SlipCounts {
            arrivals,
            late: self.late.load(Ordering::Relaxed),
            held: self.held.load(Ordering::Relaxed),
            held_late: self.held_late.load(Ordering::Relaxed),
            max_slip: Duration::from_micros(self.max_slip_us.load(Ordering::Relaxed)),
        })
    }
}

/// What a [`SlipMeter`] counted.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SlipCounts {
    /// Arrivals due: started, or due before the schedule ended and never
    /// started.
    pub arrivals: u64,
    /// Of those, late by more than [`LATE`] and never held by the cap.
    pub late: u64,
    /// Of those, held back by the in-flight cap for a while.
    pub held: u64,
    /// Of the held, late by more than [`LATE`] in all.
    pub held_late: u64,
    /// The largest slip of an arrival the cap did not hold.
    pub max_slip: Duration,
}

/// The generator's CPU over a run: `cpu_s` seconds on `threads` threads in
/// `wall_s` seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuShare {
    /// CPU seconds spent.
    pub cpu_s: f64,
    /// Wall seconds.
    pub wall_s: f64,
    /// Worker threads.
    pub threads: usize,
}

impl CpuShare {
    /// The share of its threads' time it was busy (0–1, may pass 1 a
    /// little: helper threads).
    pub fn busy(&self) -> f64 {
        if self.wall_s > 0.0 {
            self.cpu_s / (self.wall_s * self.threads.max(1) as f64)
        } else {
            0.0
        }
    }
}

/// An in-flight cap the generator's descriptor limit (`ulimit -n`) set
/// below the plan's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InFlightCap {
    /// The plan's `max_in_flight`.
    pub planned: usize,
    /// The cap the run used.
    pub lowered: usize,
}

/// Why the generator cannot back the run's verdict, one line each (empty:
/// it can).
pub fn problems(
    slip: Option<SlipCounts>,
    cpu: Option<CpuShare>,
    cap: Option<InFlightCap>,
) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(s), Some(c)) = (slip, cap)
        && s.held_late as f64 > s.arrivals as f64 * LATE_SHARE_LIMIT
    {
        out.push(format!(
            "the generator's descriptor limit (ulimit -n) lowered max_in_flight from {} to {}, \
             and that cap held {} of {} arrivals ({:.0}%) more than {} ms past their slot (at \
             most {:.0}% may), so the target was offered less than the plan; raise ulimit -n",
            c.planned,
            c.lowered,
            s.held_late,
            s.arrivals,
            s.held_late as f64 * 100.0 / s.arrivals as f64,
            LATE.as_millis(),
            LATE_SHARE_LIMIT * 100.0,
        ));
    }
    if let Some(s) = slip
        && s.late as f64 > s.arrivals as f64 * LATE_SHARE_LIMIT
    {
        out.push(format!(
            "the generator fell behind its schedule: {} of {} arrivals ({:.0}%) started more \
             than {} ms late, or not at all, for want of CPU (at most {:.0}% may; the largest slip was {:.0} ms), \
             so the target was offered less than the plan",
            s.late,
            s.arrivals,
            s.late as f64 * 100.0 / s.arrivals as f64,
            LATE.as_millis(),
            LATE_SHARE_LIMIT * 100.0,
            s.max_slip.as_secs_f64() * 1000.0
        ));
    }
    if let Some(c) = cpu
        && c.busy() >= CPU_LIMIT
    {
        out.push(format!(
            "the generator's own CPU was saturated: {:.0}% of its {} thread{} (limit {:.0}%); \
             give it more (--generator-threads) or run it on another machine",
            c.busy() * 100.0,
            c.threads,
            if c.threads == 1 { "" } else { "s" },
            CPU_LIMIT * 100.0
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn waits_for_the_cap_are_not_slip() {
        let m = SlipMeter::default();
        assert_eq!(m.counts(), None);
        m.note(ms(2), Duration::ZERO);
        m.note(ms(900), ms(50)); // held by the cap: the target's doing
        m.note(ms(300), Duration::ZERO); // the generator's own
        m.note(ms(100), ms(100)); // held, but not late
        let c = m.counts().unwrap();
        assert_eq!((c.arrivals, c.late, c.held, c.held_late), (4, 1, 2, 1));
        assert_eq!(c.max_slip, ms(300));
    }

    #[test]
    fn late_arrivals_beyond_the_share_make_a_problem() {
        let under = SlipCounts {
            arrivals: 100,
            late: 10,
            ..Default::default()
        };
        assert!(problems(Some(under), None, None).is_empty());
        let over = SlipCounts { late: 11, ..under };
        let p = problems(Some(over), None, None);
        assert_eq!(p.len(), 1);
        assert!(p[0].contains("11 of 100 arrivals"), "{p:?}");
    }

    #[test]
    fn a_saturated_generator_is_a_problem() {
        let cpu = |cpu_s| CpuShare {
            cpu_s,
            wall_s: 10.0,
            threads: 2,
        };
        assert!(problems(None, Some(cpu(18.0)), None).is_empty());
        let p = problems(None, Some(cpu(19.5)), None);
        assert!(p[0].contains("98% of its 2 threads"), "{p:?}");
    }

    #[test]
    fn a_cap_lowered_for_descriptors_that_holds_arrivals_is_the_generators_shortfall() {
        let held = SlipCounts {
            arrivals: 100,
            held: 60,
            held_late: 40,
            ..Default::default()
        };
        // The plan's own cap holding arrivals is the target's doing.
        assert!(problems(Some(held), None, None).is_empty());
        let cap = InFlightCap {
            planned: 60_000,
            lowered: 9_872,
        };
        let p = problems(Some(held), None, Some(cap));
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].contains("from 60000 to 9872"), "{p:?}");
        assert!(p[0].contains("40 of 100 arrivals"), "{p:?}");
        // Within the share, the lowered cap did not set the pace.
        let few = SlipCounts {
            held_late: 10,
            ..held
        };
        assert!(problems(Some(few), None, Some(cap)).is_empty());
    }
}
