//! Fuzz target `serve_mrtr`: the in-process harness
//! ([`elicitkit::fuzz::harness`]) over the reference server's router, every
//! invariant on. A shell over
//! [`elicitkit::fuzz::harness::targets::serve_mrtr_target`], which replays
//! under `cargo test` too.
#![no_main]
#![feature(cfg_sanitize)]

mod harness_alloc;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    elicitkit::fuzz::harness::targets::serve_mrtr_target(data);
});
