//! The harness's own cargo-fuzz target over the reference server, as a
//! function (so its corpus replays under `cargo test` too).

use std::sync::{Mutex, OnceLock};

use super::{Config, Harness, SingleUse};
use crate::server::ServerConfig;
use crate::server::embed::in_process;

/// The `serve_mrtr` harness: the reference server (memory store, no
/// flaws) in process, every invariant, every tool single use (the server
/// completes every originating request at most once), a fresh server
/// every 1000 sessions.
pub fn serve_mrtr_harness() -> Harness<axum::Router> {
    let url = in_process(ServerConfig::default())
        .map(|s| s.mcp_url())
        .unwrap_or_else(|e| panic!("reference server: {e}"));
    let make = || {
        in_process(ServerConfig::default())
            .unwrap_or_else(|e| panic!("reference server: {e}"))
            .router()
    };
    Harness::new(make, Config::new(url).single_use(SingleUse::All))
        .unwrap_or_else(|e| panic!("serve_mrtr harness: {e}"))
}

/// `serve_mrtr`: one session decoded from `data` against the reference
/// server; panics with the violation.
pub fn serve_mrtr_target(data: &[u8]) {
    static H: OnceLock<Mutex<Harness<axum::Router>>> = OnceLock::new();
    let h = H.get_or_init(|| Mutex::new(serve_mrtr_harness()));
    let mut h = h.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Err(v) = h.run_bytes(data) {
        panic!("{v}");
    }
}
