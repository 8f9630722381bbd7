//! Fuzzing, in three layers that share one set of input types:
//!
//! - [`props`]: the properties of the cargo-fuzz targets over elicitkit's
//!   own parsers, codecs and store (one function per target, bytes in,
//!   panic on a violated property), replayed on every committed corpus file
//!   by `cargo test`.
//! - [`shapes`]: the `#[derive(Arbitrary)]` inputs those targets decode
//!   (schema shapes, JSON and message shapes, tamper cases...).
//! - [`harness`] (`net`): an in-process, coverage-guided harness for *any*
//!   Rust MCP server that is a `tower::Service<http::Request<…>>` (an axum
//!   `Router`, rmcp's `StreamableHttpService`): arbitrary sequences of
//!   2026-07-28 exchanges, checked against selectable invariants.
//! - [`blackbox`] (`net`): the black-box fuzzer behind `elicitkit fuzz --target
//!   URL`, for any server over HTTP, both generations, with oracles,
//!   delta-debugged findings and `repro.sh` reproducers.
//!
//! [`mutation`] holds the mutations the harness and the network fuzzer
//! apply to states, answers, headers and JSON bodies.

#[cfg(feature = "net")]
pub mod blackbox;
#[cfg(feature = "net")]
pub mod harness;
#[cfg(feature = "net")]
pub mod mutation;
pub mod props;
pub mod shapes;

pub use props::{TARGETS, Verdict, json_eq, run_target, seed_of};
