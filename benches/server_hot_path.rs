//! The reference server's per-request helpers that a profile named
//! (issue 31): hex of the completion key (table vs the `format!` per byte
//! it replaced) and the `Host` check (the exact-match shortcut every
//! well-behaved client takes vs the URL parse a non-canonical value still
//! gets, which every request paid before).
//!
//! Run: `cargo bench --bench server_hot_path -- --warm-up-time 1 --measurement-time 2`

use std::hint::black_box;
use std::net::SocketAddr;

use axum::http::{HeaderMap, HeaderValue, header};
use criterion::{Criterion, criterion_group, criterion_main};
use elicitkit::server::origin::AllowedOrigins;

fn hex(c: &mut Criterion) {
    let digest = [0xa7u8; 32];
    let mut g = c.benchmark_group("hex");
    g.bench_function("encode/32B", |b| {
        b.iter(|| elicitkit::hex::encode(black_box(&digest)))
    });
    g.bench_function("format_per_byte/32B", |b| {
        b.iter(|| {
            black_box(&digest)
                .iter()
                .map(|x| format!("{x:02x}"))
                .collect::<String>()
        })
    });
    g.finish();
}

fn host(c: &mut Criterion) {
    let allowed =
        AllowedOrigins::new(SocketAddr::from(([127, 0, 0, 1], 8080)), &[], &[]).expect("rules");
    let with_host = |v: &str| {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_str(v).expect("value"));
        h
    };
    let canonical = with_host("127.0.0.1:8080");
    // Same host, a space after it: not canonical, so it is parsed.
    let parsed = with_host("127.0.0.1:8080 ");
    let mut g = c.benchmark_group("host_check");
    g.bench_function("canonical (shortcut)", |b| {
        b.iter(|| allowed.check(black_box(&canonical)))
    });
    g.bench_function("non_canonical (parsed)", |b| {
        b.iter(|| allowed.check(black_box(&parsed)))
    });
    g.finish();
}

criterion_group!(benches, hex, host);
criterion_main!(benches);
