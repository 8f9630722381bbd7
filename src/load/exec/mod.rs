//! How a load run is driven (I/O): the [`engine::Engine`] and its phases,
//! the round trip both models share, the two models, and the target.
//!
//! - [`engine`]: one run's executor context, one phase under the stop
//!   conditions, why it ended, the preflight and the synchronized start.
//! - [`round_trip`]: scenario kinds → answer policies; one round trip (MCP
//!   legs over a pooled HTTP/1.1 lane, the rest over reqwest); the shared
//!   [`round_trip::LoadContext`] and the hard request cap.
//! - [`closed`]: the closed model on Goose 0.19 (one transaction per round
//!   trip, every leg named, whole round trips as custom requests).
//! - [`open`]: the open model (constant rate or stages), latency from the
//!   intended send time (no coordinated omission).
//! - [`timer`]: the sub-millisecond timer the open model's schedule waits on.
//! - [`progress`]: the live progress line on stderr (in place on a terminal).
//! - [`target`]: the embedded reference server as a child process, CPU
//!   time from `/proc`, and the process listening on a loopback port.
//! - [`cool_down`]: a soak's wait with no load after the steady phase.

pub mod closed;
pub mod cool_down;
pub mod engine;
pub mod open;
pub mod progress;
pub mod round_trip;
pub mod target;
pub mod timer;
