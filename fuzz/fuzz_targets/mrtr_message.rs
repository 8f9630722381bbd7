//! Fuzz target `mrtr_message`: a shell over [`elicitkit::fuzz::props::mrtr_message_target`],
//! which holds the property (and replays under `cargo test`).
#![no_main]

use elicitkit::fuzz::Verdict;
use elicitkit::fuzz::props::mrtr_message_target;
use libfuzzer_sys::{Corpus, fuzz_target};

fuzz_target!(|data: &[u8]| -> Corpus {
    match mrtr_message_target(data) {
        Verdict::Keep => Corpus::Keep,
        Verdict::Reject => Corpus::Reject,
    }
});
