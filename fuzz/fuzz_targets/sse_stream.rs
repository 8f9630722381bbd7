//! Fuzz target `sse_stream`: a shell over [`elicitkit::fuzz::props::sse_stream_target`],
//! which holds the property (and replays under `cargo test`).
#![no_main]

use elicitkit::fuzz::Verdict;
use elicitkit::fuzz::props::sse_stream_target;
use libfuzzer_sys::{Corpus, fuzz_target};

fuzz_target!(|data: &[u8]| -> Corpus {
    match sse_stream_target(data) {
        Verdict::Keep => Corpus::Keep,
        Verdict::Reject => Corpus::Reject,
    }
});
