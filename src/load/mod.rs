//! `elicitkit load`: load tests of elicitation servers, as a pipeline.
//!
//! [`spec`] says WHAT to run (a plan: TOML, discovery or the command
//! line, plain data) → [`exec`] drives it (an [`exec::engine::Engine`] runs
//! closed or open phases against the target under the stop conditions) →
//! [`metrics`] records what was measured (HDR histograms per leg, scenario
//! and outcome, instances, `.hlog` and ndjson) → [`summarize`] turns that into
//! the report's `summary.json` data and threshold verdicts. [`capacity`]
//! is a strategy over the engine (the knee search, and scaling across
//! instance counts). [`run`] is one invocation end to end (prepare →
//! measure → report); [`merge`] is `report merge`.
//!
//! Imports run one way: `run` → `capacity` → `exec` → `metrics` → `spec`;
//! `summarize` and `merge` read `metrics` and `spec`; nothing in `spec`
//! imports the rest of `load`.

pub mod capacity;
pub mod exec;
pub mod merge;
pub mod metrics;
pub mod run;
pub mod spec;
pub mod summarize;
