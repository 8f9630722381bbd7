//! Coordinated omission in the closed model: a Goose user waits for each
//! round trip before it starts the next, so while the target stalls the
//! users stop sending, and the stall leaves one slow sample per user among
//! thousands of fast ones. [`CadenceBook`] keeps each user's expected
//! pacing per scenario; a round trip that took more than [`STALL_FACTOR`]
//! times that stands for the round trips the user would have started
//! meanwhile, which the recorder backfills at `d − c, d − 2c, …` down to
//! `c` (HdrHistogram's correction, as wrk2 applies it at its fixed rate
//! and Goose's `--co-mitigation` at each user's cadence). The corrected
//! histograms sit beside the raw ones (`co:` tags), and the closed model's
//! end-to-end thresholds are judged on raw + backfilled.
//!
//! The pacing is a running median in log space (up by a quarter when a
//! round trip took longer, down by a fifth when shorter), not Goose's
//! running mean: a stall among a user's first round trips inflated the
//! mean for hundreds of round trips after it (a 1.8 s freeze at the start
//! read as a 25 ms pacing 100 round trips later, against 7 ms), and the
//! next freezes were then backfilled a quarter as much. A step of a
//! quarter forgets an outlier in a few round trips and follows a lasting
//! change in latency as fast.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A round trip longer than this many times its user's pacing stalled
/// (Goose's rule).
pub const STALL_FACTOR: u64 = 2;

/// Round trips a user runs of a scenario before its pacing is trusted.
pub const WARM: u64 = 3;

/// Backfilled samples at most per stalled round trip (a 2 s timeout at a
/// 20 µs pacing would be 100,000): the largest come first, so the tail is
/// kept whole.
pub const MAX_BACKFILL: u64 = 100_000;

/// One user's pacing of one scenario: round trips seen, and the estimate
/// (microseconds).
#[derive(Debug, Default)]
struct Slot {
    count: AtomicU64,
    pace_us: AtomicU64,
}

/// Every user's pacing per scenario. A slot is only ever touched by its
/// own user (one round trip at a time), so plain relaxed atomics suffice.
#[derive(Debug)]
pub struct CadenceBook {
    scenarios: usize,
    slots: Vec<Slot>,
}

impl CadenceBook {
    /// A book for `users` users (Goose numbers them from 0) and `scenarios`
    /// scenarios.
    pub fn new(users: usize, scenarios: usize) -> CadenceBook {
        CadenceBook {
            scenarios,
            slots: (0..users.saturating_mul(scenarios))
                .map(|_| Slot::default())
                .collect(),
        }
    }

    /// Notes that `user` took `d` for a round trip of `scenario`; returns
    /// its expected pacing when the round trip stalled. `None` for a user
    /// or scenario out of range, or before [`WARM`] round trips.
    pub fn note(&self, user: usize, scenario: usize, d: Duration) -> Option<Duration> {
        if scenario >= self.scenarios {
            return None;
        }
        let slot = self
            .slots
            .get(user.checked_mul(self.scenarios)? + scenario)?;
        let us = (d.as_micros().min(u128::from(u64::MAX / 2)) as u64).max(1);
        let n = slot.count.load(Ordering::Relaxed);
        let pace = slot.pace_us.load(Ordering::Relaxed);
        slot.count.store(n + 1, Ordering::Relaxed);
        if n == 0 {
            slot.pace_us.store(us, Ordering::Relaxed);
            return None;
        }
        let next = if us > pace {
            (pace + pace / 4).min(us)
        } else {
            (pace - pace / 5).max(us)
        };
        slot.pace_us.store(next.max(1), Ordering::Relaxed);
        (n >= WARM && us > pace.saturating_mul(STALL_FACTOR)).then(|| Duration::from_micros(pace))
    }
}

/// The round trips a stall of `d` at pacing `c` stands for: `d − c,
/// d − 2c, …` while at least `c`, at most [`MAX_BACKFILL`] of them.
pub fn backfill(d: Duration, c: Duration) -> impl Iterator<Item = Duration> {
    let step = c.max(Duration::from_micros(1));
    let n = (d.as_nanos() / step.as_nanos()).saturating_sub(1);
    let n = n.min(u128::from(MAX_BACKFILL)) as u32;
    (1..=n).map(move |k| d - step * k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_stall_is_long_against_the_users_own_pacing() {
        let book = CadenceBook::new(2, 2);
        for _ in 0..WARM {
            assert_eq!(book.note(0, 0, ms(10)), None, "not warm yet");
        }
        assert_eq!(book.note(0, 0, ms(20)), None, "2x is not a stall");
        // The pacing moved up a quarter (12.5 ms): 30 ms stalled.
        assert_eq!(book.note(0, 0, ms(30)), Some(Duration::from_micros(12_500)));
        // Another user, another scenario: their own pacing.
        assert_eq!(book.note(1, 0, ms(1800)), None);
        assert_eq!(book.note(0, 1, ms(1800)), None);
        // Out of range: no pacing, no panic.
        assert_eq!(book.note(2, 0, ms(1)), None);
        assert_eq!(book.note(0, 2, ms(1)), None);
        assert_eq!(book.note(usize::MAX, 1, ms(1)), None);
    }

    /// A freeze at a user's very first round trip does not hide the next
    /// ones: the pacing comes down to the real one within a few dozen
    /// round trips (a running mean still read 25 ms after 100).
    #[test]
    fn an_early_stall_is_forgotten() {
        let book = CadenceBook::new(1, 1);
        book.note(0, 0, ms(1800));
        for _ in 0..40 {
            book.note(0, 0, ms(7));
        }
        assert_eq!(book.note(0, 0, ms(1800)), Some(ms(7)));
        // And a lasting change in latency is followed, not backfilled
        // forever.
        let stalls = (0..40)
            .filter(|_| book.note(0, 0, ms(70)).is_some())
            .count();
        assert!(stalls <= 12, "{stalls}");
        assert_eq!(book.note(0, 0, ms(70)), None);
    }

    #[test]
    fn a_stall_stands_for_the_round_trips_it_held_back() {
        let b: Vec<Duration> = backfill(ms(1000), ms(300)).collect();
        assert_eq!(b, [ms(700), ms(400)]);
        assert_eq!(backfill(ms(1000), ms(250)).count(), 3);
        assert_eq!(backfill(ms(10), ms(20)).count(), 0);
        // A freeze of 1.8 s at a 3 ms pacing: 599 round trips a fixed-rate
        // client would have seen waiting 1.797 s down to 3 ms.
        let b: Vec<Duration> = backfill(ms(1800), ms(3)).collect();
        assert_eq!((b.len(), b[0], b[b.len() - 1]), (599, ms(1797), ms(3)));
        assert_eq!(
            backfill(Duration::from_secs(3600), Duration::from_micros(1)).count() as u64,
            MAX_BACKFILL
        );
    }
}
