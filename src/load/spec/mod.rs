//! What a load run is to do, as plain data (no I/O, no tokio): the plan
//! and its parser, the load shape, distributed segments, thresholds, and
//! plans generated from discovery.
//!
//! - [`plan`]: [`plan::Plan`] and its parts (scenarios, load shape, target,
//!   capacity search).
//! - [`overrides`]: what the command line changes in a plan ([`overrides::Overrides`]).
//! - [`parse`]: plan files (TOML in `loadtests/`) → [`plan::Plan`], with
//!   file/line/key errors.
//! - [`shape`]: stages (`--stage 10s:50,30s:50,10s:0`) shared by the command
//!   line, plans and both models; the warm-up and the measured window; the
//!   open model's arrival schedule.
//! - [`soak`]: `--soak 10m`: a steady phase, a cool-down with no load, and
//!   the limits memory and descriptor growth are judged by.
//! - [`segment`]: distributed load on one engine: `--segment I/N` (k6's
//!   execution segments: shares of users, rate and cap that add up exactly;
//!   disjoint ids and seeds) and `--start-at` (a synchronized start).
//! - [`principals`]: who the virtual users are (a principal per user by
//!   default, a pool, a token file, or one token).
//! - [`threshold`]: `p99(retry) < 50ms`, `error_rate < 0.1%`, `rps > 100`.
//! - [`generate`]: plans built from discovery (`load --target`, `elicitkit plan`).

pub mod generate;
pub mod overrides;
pub mod parse;
pub mod plan;
pub mod principals;
pub mod segment;
pub mod shape;
pub mod soak;
pub mod threshold;
