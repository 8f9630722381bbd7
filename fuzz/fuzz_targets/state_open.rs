//! Fuzz target `state_open`: a shell over [`elicitkit::fuzz::props::state_open_target`],
//! which holds the property (and replays under `cargo test`).
#![no_main]

use elicitkit::fuzz::Verdict;
use elicitkit::fuzz::props::state_open_target;
use libfuzzer_sys::{Corpus, fuzz_target};

fuzz_target!(|data: &[u8]| -> Corpus {
    match state_open_target(data) {
        Verdict::Keep => Corpus::Keep,
        Verdict::Reject => Corpus::Reject,
    }
});
