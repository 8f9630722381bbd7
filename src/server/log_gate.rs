//! Log lines a client can trigger at will, held to one per window: a flood
//! of bad requests must not become a flood of lines (disk, log pipeline).
//!
//! A [`LogGate`] counts every event of one kind and lets the first through
//! at once, then at most one per [`WINDOW_MS`]; the line let through learns
//! how many were held back since the last one. Lock-free (two atomics): an
//! event held back costs a load and an add.
//!
//! [`gated!`] is how a call site uses one: a `static` gate of its own,
//! the INFO line with a `suppressed = N` field when due, the same event at
//! DEBUG otherwise.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The shortest time between two lines of one gate, in milliseconds.
pub const WINDOW_MS: u64 = 10_000;

/// What [`LogGate::pass`] measures time from: the first use in the process.
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Milliseconds since [`EPOCH`].
fn now_ms() -> u64 {
    u64::try_from(EPOCH.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Says when one kind of event may be logged: the first at once, then at
/// most once per [`WINDOW_MS`], with the count of the events held back.
#[derive(Debug, Default)]
pub struct LogGate {
    /// 1 + when the last line was let through (ms); 0: never.
    last_ms: AtomicU64,
    /// Events held back since the last line.
    suppressed: AtomicU64,
}

impl LogGate {
    pub const fn new() -> Self {
        Self {
            last_ms: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        }
    }

    /// Counts one event now; `Some(held back since the last line)` when
    /// its line is due, `None` when it is only counted.
    pub fn pass(&self) -> Option<u64> {
        self.due_at(now_ms())
    }

    /// [`pass`](Self::pass) at `now_ms` (any clock, as long as one gate is
    /// always given the same one).
    pub fn due_at(&self, now_ms: u64) -> Option<u64> {
        let last = self.last_ms.load(Ordering::Relaxed);
        let due = last == 0 || now_ms >= (last - 1).saturating_add(WINDOW_MS);
        // Of events racing for one due line, one wins; the others are
        // counted towards the next.
        if due
            && self
                .last_ms
                .compare_exchange(
                    last,
                    now_ms.saturating_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            Some(self.suppressed.swap(0, Ordering::Relaxed))
        } else {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

/// `tracing::LEVEL!(suppressed = N, ARGS)` when this call site's own
/// [`LogGate`] lets it through, else `tracing::debug!(ARGS)` (the detail
/// of every event, for whoever turns DEBUG on): `gated!(info, "…")`,
/// `gated!(warn, "…")`. Client text in ARGS goes through
/// [`LogText`](super::log_text::LogText) as in any line. The gate is per
/// process: servers embedded side by side share it.
macro_rules! gated {
    ($level:ident, $($arg:tt)+) => {{
        static GATE: $crate::server::log_gate::LogGate = $crate::server::log_gate::LogGate::new();
        match GATE.pass() {
            Some(suppressed) => ::tracing::$level!(suppressed, $($arg)+),
            None => ::tracing::debug!($($arg)+),
        }
    }};
}
pub(crate) use gated;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_event_passes_at_once_with_nothing_held_back() {
        assert_eq!(LogGate::new().due_at(0), Some(0));
        assert_eq!(LogGate::new().due_at(123_456), Some(0));
    }

    #[test]
    fn events_within_the_window_are_only_counted() {
        let g = LogGate::new();
        assert_eq!(g.due_at(5_000), Some(0));
        for t in [5_000, 5_001, 9_999, 14_999] {
            assert_eq!(g.due_at(t), None, "at {t} ms");
        }
    }

    #[test]
    fn the_next_line_carries_the_count_held_back_and_starts_a_new_window() {
        let g = LogGate::new();
        assert_eq!(g.due_at(0), Some(0));
        for _ in 0..199 {
            assert_eq!(g.due_at(1_000), None);
        }
        assert_eq!(g.due_at(WINDOW_MS), Some(199));
        assert_eq!(g.due_at(WINDOW_MS + 1), None);
        assert_eq!(g.due_at(2 * WINDOW_MS - 1), None);
        assert_eq!(g.due_at(2 * WINDOW_MS), Some(2));
        // A quiet spell: the next event passes at once, nothing held back.
        assert_eq!(g.due_at(60 * WINDOW_MS), Some(0));
    }

    #[test]
    fn racing_events_pass_once_and_every_other_is_counted() {
        let g = LogGate::new();
        assert_eq!(g.due_at(0), Some(0));
        let passed: Vec<u64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        (0..1_000)
                            .filter_map(|_| g.due_at(WINDOW_MS))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("no panic"))
                .collect()
        });
        assert_eq!(passed, vec![0], "one line in the window");
        // 3,999 held back in this window, reported by the next line.
        assert_eq!(g.due_at(2 * WINDOW_MS), Some(3_999));
    }

    #[test]
    fn the_process_clock_passes_the_first_event() {
        let g = LogGate::new();
        assert_eq!(g.pass(), Some(0));
        assert_eq!(g.pass(), None);
    }
}
