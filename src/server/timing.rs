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
        // Milliseconds to 3 places from whole microseconds (rounded): integer
        // formatting, where `{:.3}` of a float took its exact-digits path on
        // every response.
        let ms = |d: Duration| {
            let us = (d.as_nanos() + 500) / 1000;
            (us / 1000, us % 1000)
        };
        let ((s, s_frac), (a, a_frac)) = (ms(self.state), ms(app));
        format!("state;dur={s}.{s_frac:03}, app;dur={a}.{a_frac:03}")
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
        let t = Timing {
            start: Instant::now(),
            state: Duration::from_nanos(1_234_567),
        };
        assert!(t.header_value().starts_with("state;dur=1.235, app;dur="));
        let t = Timing {
            start: Instant::now(),
            state: Duration::from_micros(42),
        };
        assert!(t.header_value().starts_with("state;dur=0.042, app;dur="));
    }
}
