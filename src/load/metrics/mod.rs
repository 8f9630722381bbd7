//! What a load run measured.
//!
//! - [`set`]: a run's [`set::MetricSet`]: histograms per leg, scenario and
//!   outcome, `Server-Timing` state durations, the timeline, error samples.
//! - [`recorder`]: the live [`recorder::Recorder`] every user or task
//!   records into, interval by interval.
//! - [`hlog`]: HDR interval logs that merge exactly across processes and
//!   machines; the histogram tags.
//! - [`instances`]: which instance answered each leg (`elicitkit-instance`,
//!   else the peer address), interned; per-instance counts and latency, and
//!   the retries that crossed instances.
//! - [`gaps`]: service gaps, spells with round trips in flight and none
//!   answered, and the share of the window they froze.
//! - [`cadence`]: each closed-model user's pacing, for the round trips a
//!   stall held back (coordinated omission).
//! - [`generator`]: the generator's own health (schedule slip, CPU), which
//!   makes a verdict INCONCLUSIVE.
//! - [`measure`]: what a threshold measures, read off a metric set.
//! - [`phases`]: where each leg's time goes (connect, TLS, headers, first
//!   SSE event, body), and the legs on reused connections.
//! - [`stream`]: the per-interval ndjson stream (`--out ndjson=FILE`).
//! - [`health`]: the target process's RSS, descriptors and threads from
//!   `/proc`, sampled once per interval.

pub mod cadence;
pub mod gaps;
pub mod generator;
pub mod health;
pub mod hlog;
pub mod instances;
pub mod measure;
pub mod phases;
pub mod recorder;
pub mod set;
pub mod stream;
