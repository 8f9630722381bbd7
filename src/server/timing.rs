//! `Server-Timing` for every response: `state;dur=` (time spent opening,
//! verifying and sealing `requestState`) and `app;dur=` (everything else the
//! handler did), both in milliseconds with three decimals.

use std::time::{Duration, Instant};

/// Per-request stopwatch.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    start: Instant,
    state: Duration,
}

impl Timing {
    /// Starts timing a request.
    pub fn start() -> Self {
        Timing {
            start: Instant::now(),
            state: Duration::ZERO,
        }
    }

    /// Runs `f`, counting its time as state work.
    pub fn state<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let out = f();
        self.state += t.elapsed();
        out
    }

    /// The header value: `state;dur=0.012, app;dur=0.034`.
    pub fn header_value(&self) -> String {
        let total = self.start.elapsed();
        let app = total.saturating_sub(self.state);
        format!(
            "state;dur={:.3}, app;dur={:.3}",
            self.state.as_secs_f64() * 1000.0,
            app.as_secs_f64() * 1000.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_has_both_metrics() {
        let mut t = Timing::start();
        let v = t.state(|| 7);
        assert_eq!(v, 7);
        let h = t.header_value();
        assert!(h.starts_with("state;dur="), "{h}");
        assert!(h.contains(", app;dur="), "{h}");
        let fresh = Timing::start().header_value();
        assert!(fresh.starts_with("state;dur=0.000"), "{fresh}");
    }
}
