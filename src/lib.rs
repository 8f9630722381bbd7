//! elicitkit: load-test, fuzz and conformance-check MCP servers that elicit
//! input from their users, on both protocol generations (2025-11-25 push and
//! 2026-07-28 Multi Round-Trip Requests).
//!
//! # Module map
//!
//! Dependencies point one way (the order is under [Layers](#layers)):
//! `protocol`, `schema` and `state` know nothing of HTTP; `store` builds on
//! `state` (one clock); `report` only renders and formats, for everyone, and
//! imports no other module; `server` and `client` build on those;
//! `discover` builds on `client`; `load` builds on both, and `check` on
//! `load` too (its isolation probe drives load's executor).
//!
//! - [`findings`]: the `Finding {severity, pointer, rule, message}` shape that
//!   every validator reports in.
//! - [`clock`]: [`clock::Clock`], where the server reads the time for every
//!   expiry it decides: the system's, or an offset clock a test moves
//!   forward instead of sleeping. Imports nothing of ours.
//! - [`hex`]: lowercase hex, one encoder and decoder for every module.
//! - [`protocol`]: wire types for JSON-RPC 2.0 and both generations, the
//!   `Mcp-*` header codec, an SSE codec, and message validators. No I/O.
//! - [`schema`]: `requestedSchema` as a typed model; schema and content
//!   validation; generation of valid and deliberately invalid content; secret
//!   heuristics for forms and URLs. No I/O.
//! - [`state`]: `requestState` sealing: envelope, HMAC and AEAD codecs, key
//!   ring and rotation, binding to principal, request and expiry, and a
//!   replay guard.
//! - [`store`]: pending-elicitation records with an exactly-once completion
//!   contract, one-time claims that keep their outcome, and purging past
//!   retention; memory, SQLite and Redis (shared by instances behind a load
//!   balancer) backends.
//! - [`server`]: the reference server behind `elicitkit serve`: demo tools
//!   completing once per originating request, connection and session
//!   limits, a store sweep that forgets on schedule, `--flaw` switches
//!   (`leak`: memory and a descriptor kept per completed call); each
//!   response names its instance (`elicitkit-instance`).
//! - [`client`]: the protocol clients (modern MRTR, legacy push) and their
//!   answer policies, used by `load` and `check`.
//! - [`discover`]: what a target speaks, its authentication, its tools and
//!   what their calls do; one implementation for `check`, `load` and `plan`.
//! - [`load`]: a pipeline: `spec` (plans, the command line's overrides,
//!   load shapes, segments, thresholds) → `exec` (the engine: Goose's closed
//!   model and our open model over one round-trip executor, stop
//!   conditions, a soak's cool-down) → `metrics` (HDR histograms, `.hlog`,
//!   the interval stream, which instance answered each leg, the target's
//!   RSS, descriptors and threads from `/proc`) → `summarize` (with the
//!   soak's least-squares growth verdict); `capacity` (the knee
//!   search, scaling across instance counts) over the engine; `run` (one
//!   invocation) and `merge` (`report merge` of distributed segments).
//! - [`check`]: conformance and security probes, one file per family
//!   (`cross_instance`: a state retried on a second instance; `check --list`
//!   names each check's file), and their text, JSON, JUnit and Markdown.
//! - [`report`]: renders run results as JSON, Markdown, HTML (one offline
//!   page of SVG charts) and Prometheus text, and capacity across instance
//!   counts (`capacity.md`, `capacity.json`), the target's health charts
//!   and soak verdict (`report::health`); `report::format` holds the
//!   one HTML, XML and Markdown-cell escaper and the `ms` formatter.
//! - [`oracle`]: the rules a reply is judged by, one implementation each,
//!   shared by `check`, `fuzz` and `load` (server errors, hangs and replies
//!   without JSON-RPC, reply shape, replay, capability gating, tampered
//!   state against its controls), and one table of what they find
//!   ([`oracle::Oracle`]: the black-box fuzzer's findings and the harness's
//!   properties).
//! - [`stdio`]: servers that speak stdio, started as a command and put
//!   behind a loopback endpoint so every driver reaches them as it reaches
//!   HTTP servers (`--target stdio -- CMD`; `fuzz` calls the endpoint's
//!   router in process, [`client::local`]); `serve --stdio` is
//!   `server::stdio`.
//! - [`interrupt`]: Ctrl-C and SIGTERM, taken once for the process and
//!   polled by load and fuzz runs, which end, write their reports marked
//!   so, and exit 130 or 143. Imports nothing of ours.
//! - [`cli`]: the subcommands behind the `elicitkit` binary.
//! - [`fuzz`]: the properties of the cargo-fuzz targets (replayed by `cargo
//!   test` on stable), their `arbitrary` input shapes, an in-process harness
//!   for any Rust MCP server (`tower::Service`), and the black-box network
//!   fuzzer behind `elicitkit fuzz`.
//!
//! The `net` feature (on by default) gates everything that does I/O over
//! HTTP; the fuzz crate builds without it.
//!
//! # Layers
//!
//! A module imports only from the lines below its own, and the modules of
//! one folder import one another without a circle (`tests/it/imports.rs`
//! holds both, tests included):
//!
//! ```text
//! cli
//! check fuzz
//! load
//! discover oracle
//! client server
//! stdio
//! store
//! protocol
//! schema state
//! findings hex report interrupt clock
//! ```

#[cfg(feature = "net")]
pub mod check;
#[cfg(feature = "net")]
pub mod cli;
#[cfg(feature = "net")]
pub mod client;
pub mod clock;
#[cfg(feature = "net")]
pub mod discover;
pub mod findings;
#[cfg(feature = "arbitrary")]
pub mod fuzz;
pub mod hex;
#[cfg(feature = "net")]
pub mod interrupt;
#[cfg(feature = "net")]
pub mod load;
#[cfg(feature = "net")]
pub mod oracle;
pub mod protocol;
pub mod report;
pub mod schema;
#[cfg(feature = "net")]
pub mod server;
pub mod state;
#[cfg(feature = "net")]
pub mod stdio;
pub mod store;
