//! Fuzz target `rmcp_server`: the in-process harness over the rmcp 3.11
//! test server (`tests/rmcp_server/`, rmcp's `StreamableHttpService` under
//! an axum router) — the same ten lines a user writes for their own server,
//! built in `tests/rmcp_server/fuzz_harness.rs`. It steps past three
//! documented deviations of that server (see `tests/it/fuzz/harness_rmcp.rs`,
//! which shows each is real): no authentication, states bound to no
//! request, plain-text 415 for an unparseable body.
#![no_main]
#![feature(cfg_sanitize)]

mod harness_alloc;

#[path = "../../tests/rmcp_server/mod.rs"]
mod rmcp_server;
#[path = "../../tests/rmcp_server/fuzz_harness.rs"]
mod rmcp_harness;

use std::sync::{Mutex, OnceLock};

use elicitkit::fuzz::harness::{Harness, SingleUse};
use libfuzzer_sys::fuzz_target;

static H: OnceLock<Mutex<Harness<axum::Router>>> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let h = H.get_or_init(|| {
        Mutex::new(rmcp_harness::harness(
            rmcp_harness::kept(),
            SingleUse::Declared,
        ))
    });
    if let Err(v) = h.lock().unwrap().run_bytes(data) {
        panic!("{v}");
    }
});
