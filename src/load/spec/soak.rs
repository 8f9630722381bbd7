//! The soak shape (`--soak 10m`): the plan's load held steady for a long
//! measured window, then a cool-down with no load, while the target's
//! health is sampled; the verdict says whether memory (RSS) and open
//! descriptors grow, and whether they return after the cool-down.
//!
//! Growth counts when the least-squares slope over the steady phase (or
//! over its second half: a leak that began halfway) is above its limit per
//! minute, fits with R² ≥ [`SoakLimits::min_r2`], and adds up to more than
//! a noise floor; it fails the run unless over half
//! of it is given back by the end of the cool-down, or it has levelled off:
//! over the steady phase's second half the slope is under half its limit
//! (a cache or a retention window that filled, where a leak keeps going).

use std::time::Duration;

/// What a soak holds to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SoakLimits {
    /// RSS growth allowed, MiB per minute.
    pub rss_mib_per_min: f64,
    /// RSS growth over the steady phase below this is noise, MiB.
    pub rss_floor_mib: f64,
    /// Descriptor growth allowed, per minute.
    pub fds_per_min: f64,
    /// Descriptor growth over the steady phase below this is noise.
    pub fds_floor: f64,
    /// The least R² a slope must fit with to count as growth.
    pub min_r2: f64,
}

impl Default for SoakLimits {
    fn default() -> Self {
        SoakLimits {
            rss_mib_per_min: 1.0,
            rss_floor_mib: 4.0,
            fds_per_min: 1.0,
            fds_floor: 5.0,
            min_r2: 0.8,
        }
    }
}

/// A soak: the steady phase (the plan's measured duration) and the
/// cool-down after it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SoakSpec {
    /// How long the load is held (the measured window).
    pub steady: Duration,
    /// How long the target is watched with no load afterwards.
    pub cool_down: Duration,
    /// What counts as growth.
    pub limits: SoakLimits,
}

impl SoakSpec {
    /// A soak of `steady`, with the cool-down given or the default.
    pub fn new(steady: Duration, cool_down: Option<Duration>) -> SoakSpec {
        SoakSpec {
            steady,
            cool_down: cool_down.unwrap_or_else(|| default_cool_down(steady)),
            limits: SoakLimits::default(),
        }
    }

    /// The soak in words, for the report's settings.
    pub fn describe(&self) -> String {
        let d = |d: Duration| humantime::format_duration(d).to_string();
        let l = &self.limits;
        format!(
            "{} steady, then {} with no load; fails when RSS grows over {} MiB/min (and {} MiB) \
             or descriptors over {}/min (and {}) with R² ≥ {}, and over half stays after the \
             cool-down",
            d(self.steady),
            d(self.cool_down),
            l.rss_mib_per_min,
            l.rss_floor_mib,
            l.fds_per_min,
            l.fds_floor,
            l.min_r2
        )
    }
}

/// The default cool-down: a fifth of the steady phase, 5 s to 2 min.
pub fn default_cool_down(steady: Duration) -> Duration {
    (steady / 5).clamp(Duration::from_secs(5), Duration::from_secs(120))
}

/// The default warm-up of a soak: a tenth of the steady phase, 1 s to
/// 30 s (start-up allocations are not growth).
pub fn default_warmup(steady: Duration) -> Duration {
    (steady / 10).clamp(Duration::from_secs(1), Duration::from_secs(30))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_scale_with_the_steady_phase_within_bounds() {
        let m = |n: u64| Duration::from_secs(60 * n);
        assert_eq!(default_cool_down(m(10)), m(2));
        assert_eq!(
            default_cool_down(Duration::from_secs(4)),
            Duration::from_secs(5)
        );
        assert_eq!(default_cool_down(m(120)), m(2));
        assert_eq!(default_warmup(m(10)), Duration::from_secs(30));
        assert_eq!(
            default_warmup(Duration::from_secs(20)),
            Duration::from_secs(2)
        );
        let s = SoakSpec::new(m(10), Some(Duration::from_secs(7)));
        assert_eq!(s.cool_down, Duration::from_secs(7));
        assert!(
            s.describe().contains("10m steady, then 7s"),
            "{}",
            s.describe()
        );
    }
}
