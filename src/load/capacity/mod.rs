//! The capacity search behind `elicitkit load --capacity`: find the highest
//! open-model rate one deployment sustains within an SLO (the knee).
//!
//! 1. **Coarse steps**: `start_rate`, `start_rate + step`, … up to
//!    `max_rate`, until a step breaks the SLO.
//! 2. **Bisection**: between the last good and the first bad rate, halve the
//!    bracket until it is narrower than `resolution_pct` of the bad rate, or
//!    after `bisections` halvings ([`Search`]).
//! 3. **Stability**: each step is sampled up to `samples` times; a step that
//!    holds the SLO is only called within it once two consecutive samples'
//!    p99 agree within `stable_pct` (or `stable_floor`, whichever is wider).
//!    A sample that breaks the SLO breaks the step at once (no second chance);
//!    a step whose p99 never settles but whose every sample held the SLO is
//!    `unstable`: it counts as within (its worst sample held) and a note
//!    names the spread ([`judge`]). A verdict is never friendlier than the worst sample: the
//!    step's p50/p99/error rate are its worst sample's, its achieved rate the
//!    lowest.
//!
//! The whole search is bounded: [`worst_case`] (printed before it starts)
//! is the time if every step took every sample and the rate never broke.
//! With `--store-stats redis://…`, each sample reads Redis `INFO stats`
//! `total_commands_processed` before and after, giving the shared store's
//! commands per round trip.

pub mod driver;
pub mod scaling;
pub mod search;
pub mod store_stats;
