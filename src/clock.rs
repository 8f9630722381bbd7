//! Time as an input: [`Clock`], where the reference server reads "now" for
//! every expiry it decides (state lifetimes, pending records, one-time
//! claims, sessions, retention). The system clock by default; a test hands
//! the server an offset clock and moves it forward ([`Clock::advance`])
//! instead of sleeping past an expiry. Timeouts that wait on I/O (reads,
//! keep-alive, an elicitation's answer) stay on the runtime's timers.
//! Imports nothing of ours.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// The system's wall clock in ms since the Unix epoch (0 before 1970).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A wall clock in ms since the Unix epoch: the system's, or the system's
/// shifted by an offset that clones share and [`Clock::advance`] moves.
/// Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    /// `None`: the system clock; else ms added to it (negative: behind).
    offset_ms: Option<Arc<AtomicI64>>,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Clock::default()
    }

    /// The system clock shifted by `offset_ms` (negative: behind), which
    /// [`Clock::advance`] moves for every clone at once.
    pub fn offset(offset_ms: i64) -> Self {
        Clock {
            offset_ms: Some(Arc::new(AtomicI64::new(offset_ms))),
        }
    }

    /// Now, in ms since the Unix epoch (0 at the earliest).
    pub fn now_ms(&self) -> u64 {
        let now = now_ms();
        match self.offset_ms() {
            0 => now,
            o if o > 0 => now.saturating_add(o.unsigned_abs()),
            o => now.saturating_sub(o.unsigned_abs()),
        }
    }

    /// How far this clock is ahead of the system's, in ms (negative:
    /// behind; 0 for the system clock).
    pub fn offset_ms(&self) -> i64 {
        self.offset_ms
            .as_ref()
            .map_or(0, |o| o.load(Ordering::Relaxed))
    }

    /// Jumps an offset clock (and its clones) forward by `by`.
    ///
    /// # Panics
    /// On the system clock, which nothing may move.
    pub fn advance(&self, by: Duration) {
        let o = self
            .offset_ms
            .as_ref()
            .expect("Clock::advance on the system clock: use Clock::offset");
        let by = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        // fetch_update never fails with a closure that always answers.
        let _ = o.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
            Some(v.saturating_add(by))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_clock_reads_the_wall_clock() {
        let (before, read, after) = (now_ms(), Clock::system().now_ms(), now_ms());
        assert!(before <= read && read <= after, "{before} {read} {after}");
        assert_eq!(Clock::system().offset_ms(), 0);
    }

    #[test]
    fn an_offset_clock_runs_ahead_or_behind_and_advances_every_clone() {
        let ahead = Clock::offset(60_000);
        let twin = ahead.clone();
        let t = twin.now_ms();
        assert!(t >= now_ms() + 59_000 && t <= now_ms() + 60_000, "{t}");
        ahead.advance(Duration::from_secs(3_600));
        assert_eq!(twin.offset_ms(), 3_660_000);
        assert!(twin.now_ms() >= now_ms() + 3_659_000);
        let behind = Clock::offset(-5_000);
        assert!(behind.now_ms() <= now_ms() - 5_000);
        assert_eq!(Clock::offset(i64::MIN).now_ms(), 0, "never before 1970");
        assert!(Clock::offset(i64::MAX).now_ms() > i64::MAX.unsigned_abs());
    }

    #[test]
    #[should_panic(expected = "Clock::advance on the system clock")]
    fn the_system_clock_cannot_be_moved() {
        Clock::system().advance(Duration::from_secs(1));
    }
}
