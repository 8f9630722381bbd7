//! What the load client spends judging one reply (issue 31): the fast
//! reader ([`peek_result`] into a [`ResultHead`]) on the reference
//! server's `stats` reply (1.9 KB, a JSON text escaped into a string: the
//! reply `loadtests/bench-vs-oha.sh` drives), next to its parts (the
//! UTF-8 pass, serde_json skipping the whole text) and the full parse it
//! spares.
//!
//! The skip is most of it: serde_json pays a branch per escape, and this
//! text holds over a hundred. Two hand-written validating skims were tried
//! against it (2026-12-04): word-at-a-time, 1.58 µs for the whole reader
//! (1.88 before); SSE2 blocks of 64 bytes, 2.46 µs. Neither was worth a
//! second JSON grammar for about 1 % of the generator's CPU per request.
//! A third (2026-12-05: one pass that also checks the escapes' surrogates,
//! with 1,024 levels of nesting) gave 1.69 µs against 1.91: the same
//! verdict. Half the text is the escaped string, half the
//! `structuredContent` members (each about 700 ns either way).
//!
//! `server_timing` is the `Server-Timing` reader every reply goes through.
//!
//! Run: `cargo bench --bench client_reply -- --warm-up-time 1 --measurement-time 2`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use elicitkit::client::parse_server_timing;
use elicitkit::protocol::jsonrpc::{parse_message, peek_result};
use elicitkit::protocol::mrtr::ResultHead;

const STATS: &[u8] = include_bytes!("data/stats-reply.json");

fn judge(c: &mut Criterion) {
    let mut g = c.benchmark_group("reply/stats-1.9KB");
    g.bench_function("peek_result", |b| {
        b.iter(|| peek_result::<ResultHead<'_>>(black_box(STATS)).map(|p| p.result.is_error))
    });
    g.bench_function("utf8_only", |b| {
        b.iter(|| std::str::from_utf8(black_box(STATS)).is_ok())
    });
    g.bench_function("serde_skip_only", |b| {
        b.iter(|| serde_json::from_slice::<serde::de::IgnoredAny>(black_box(STATS)).is_ok())
    });
    g.bench_function("parse_message", |b| {
        b.iter(|| parse_message(black_box(STATS)).is_ok())
    });
    g.finish();
    // The reference server's `Server-Timing`, read from every reply.
    c.bench_function("reply/server_timing", |b| {
        b.iter(|| parse_server_timing(black_box("state;dur=0.000, app;dur=0.236")))
    });
}

criterion_group!(benches, judge);
criterion_main!(benches);
