//! Fuzz target `rmcp_server`: the in-process harness over the rmcp 3.11
//! test server (`tests/rmcp_server/`, rmcp's `StreamableHttpService` under
//! an axum router) — the same ten lines a user writes for their own server.
//! It steps past three documented deviations of that server (see
//! `tests/it/fuzz/harness_rmcp.rs`, which shows each is real): no
//! authentication, states bound to no request, plain-text 415 for an
//! unparseable body.
#![no_main]
#![feature(cfg_sanitize)]

mod harness_alloc;

#[path = "../../tests/rmcp_server/mod.rs"]
mod rmcp_server;

use std::sync::{Mutex, OnceLock};

use elicitkit::fuzz::harness::{Config, Harness, Invariant, Invariants};
use libfuzzer_sys::fuzz_target;

static H: OnceLock<Mutex<Harness<axum::Router>>> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let h = H.get_or_init(|| {
        let make = || rmcp_server::app("http://127.0.0.1:8080").0;
        let kept = Invariants::all()
            .without(Invariant::OtherPrincipalNeverCompletes)
            .without(Invariant::OtherRequestNeverCompletes)
            .without(Invariant::JsonRpcOnMalformed);
        let cfg = Config::new("http://127.0.0.1:8080/mcp").invariants(kept);
        Mutex::new(Harness::new(make, cfg).expect("rmcp tools/list"))
    });
    if let Err(v) = h.lock().unwrap().run_bytes(data) {
        panic!("{v}");
    }
});
