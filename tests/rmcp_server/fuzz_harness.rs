//! The in-process fuzz harness over the rmcp test server, as the
//! `rmcp_server` fuzz target, its integration tests and the
//! `harness_session` bench build it. Included by `#[path]` next to
//! `mod.rs` (imported as `rmcp_server`).

use elicitkit::fuzz::harness::{Config, Harness, Oracle, Oracles, SingleUse};

/// The origin the server is built for and the harness addresses (no
/// socket: requests go to the router).
const ORIGIN: &str = "http://127.0.0.1:8080";

/// The invariants the `rmcp_server` target keeps: every one but the three
/// documented deviations of that server (no authentication, states bound
/// to no request, plain-text 415 for an unparseable body).
pub fn kept() -> Oracles {
    Oracles::all()
        .without(Oracle::ForeignPrincipalAccepted)
        .without(Oracle::OtherRequestAccepted)
        .without(Oracle::NotJsonRpcOnMalformed)
}

/// A harness over the rmcp test server checking `invariants`.
pub fn harness(invariants: Oracles, single_use: SingleUse) -> Harness<axum::Router> {
    let make = || super::rmcp_server::app(ORIGIN).0;
    let cfg = Config::new(format!("{ORIGIN}/mcp"))
        .oracles(invariants)
        .single_use(single_use);
    Harness::new(make, cfg).unwrap_or_else(|e| panic!("rmcp harness: {e}"))
}
