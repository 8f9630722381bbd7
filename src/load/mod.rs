//! `elicitkit load`: load tests of elicitation servers.
//!
//! - [`plan`]: load plans (TOML in `loadtests/`), validated with file/line/key errors.
//! - [`generate`]: plans built from discovery (`load --target`, `elicitkit plan`).
//! - [`threshold`]: `p99(retry) < 50ms`, `error_rate < 0.1%`, `rps > 100`.
//! - [`scenarios`]: scenario kinds → answer policies; one round trip (MCP
//!   legs over a pooled HTTP/1.1 lane, the rest over reqwest); the shared
//!   [`scenarios::LoadContext`] and the hard request cap.
//! - [`closed`]: the closed model on Goose 0.19 (one transaction per round
//!   trip, every leg named, whole round trips as custom requests).
//! - [`shape`]: stages (`--stage 10s:50,30s:50,10s:0`) shared by the command
//!   line, plans and both models; the warm-up and the measured window; the
//!   open model's arrival schedule.
//! - [`open`]: the open model (constant rate or stages), latency from
//!   the intended send time (no coordinated omission).
//! - [`progress`]: the live progress line on stderr (in place on a terminal).
//! - [`timer`]: the sub-millisecond timer the open model's schedule waits on.
//! - [`metrics`] and [`hlog`]: HDR histograms per leg, scenario and outcome,
//!   `Server-Timing` state durations, error taxonomy, and HDR interval logs
//!   that merge exactly across processes and machines.
//! - [`instances`]: which instance answered each leg (`elicitkit-instance`,
//!   else the peer address), interned; per-instance counts and latency, and
//!   the retries that crossed instances.
//! - [`summarize`]: metrics → `summary.json` data, threshold verdicts.
//! - [`segment`]: distributed load on one engine: `--segment I/N` (k6's
//!   execution segments: shares of users, rate and cap that add up exactly;
//!   disjoint ids and seeds) and `--start-at` (a synchronized start); the
//!   checks `report merge` makes on the segments it merges.
//! - [`target`]: the embedded reference server as a child process, and CPU
//!   time from `/proc`.
//! - [`run`]: one run end to end, with stop conditions and reports.
//! - [`capacity`]: the capacity search (`--capacity`): coarse rate steps,
//!   then bisection of the bracket around the knee, each step repeated until
//!   its p99 settles; CPU and shared-store commands per round trip.
//! - [`scaling`]: knees measured at 1, 2, … instances → scaling efficiency,
//!   marginal gain, and the instances a target rate needs, projected from
//!   that curve (`elicitkit report capacity`).

pub mod baseline;
pub mod capacity;
pub mod closed;
pub mod generate;
pub mod hlog;
pub mod instances;
pub mod metrics;
pub mod open;
pub mod plan;
pub mod progress;
pub mod run;
pub mod scaling;
pub mod scenarios;
pub mod segment;
pub mod shape;
pub mod stream;
pub mod summarize;
pub mod target;
pub mod threshold;
pub mod timer;
