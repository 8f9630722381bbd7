//! The in-process fuzz harness (issue 26 item 5): sessions per second of
//! the `serve_mrtr` and `rmcp_server` targets' own harnesses over a slice
//! of each one's committed corpus, outside libFuzzer and its
//! instrumentation: the ceiling of the harness and the server, and a
//! profile that shows them rather than the fuzzer.
//!
//! Run: `cargo bench --bench harness_session -- --warm-up-time 2 --measurement-time 10`

#[path = "../tests/rmcp_server/fuzz_harness.rs"]
mod rmcp_harness;
#[path = "../tests/rmcp_server/mod.rs"]
mod rmcp_server;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use elicitkit::fuzz::harness::targets::serve_mrtr_harness;
use elicitkit::fuzz::harness::{Harness, SingleUse};

/// How many committed seeds one iteration runs (every n-th, sorted).
const SEEDS: usize = 64;

/// Every n-th of `fuzz/corpus/<target>`'s seeds, sorted by name.
fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = format!("{}/fuzz/corpus/{target}", env!("CARGO_MANIFEST_DIR"));
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    let step = (paths.len() / SEEDS).max(1);
    paths
        .iter()
        .step_by(step)
        .take(SEEDS)
        .map(|p| std::fs::read(p).expect("a seed"))
        .collect()
}

/// Builds a target's harness.
type Build = fn() -> Harness<axum::Router>;

fn sessions(c: &mut Criterion) {
    let mut g = c.benchmark_group("harness");
    g.sample_size(10);
    let targets: [(&str, Build); 2] = [
        ("serve_mrtr", serve_mrtr_harness),
        ("rmcp_server", || {
            rmcp_harness::harness(rmcp_harness::kept(), SingleUse::Declared)
        }),
    ];
    for (target, build) in targets {
        let seeds = corpus(target);
        let mut h = build();
        g.throughput(Throughput::Elements(seeds.len() as u64));
        g.bench_function(format!("{target}/{}_sessions", seeds.len()), |b| {
            b.iter(|| {
                for s in &seeds {
                    // A violation is a finding, not a benchmark failure.
                    let _ = h.run_bytes(s);
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, sessions);
criterion_main!(benches);
