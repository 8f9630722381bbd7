//! The in-process fuzz harness (issue 26 item 5): sessions per second of
//! the `serve_mrtr` target's own harness over a slice of its committed
//! corpus, outside libFuzzer and its sanitizer, so a profile shows the
//! harness and the server rather than the instrumentation.
//!
//! Run: `cargo bench --bench harness_session -- --warm-up-time 2 --measurement-time 10`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use elicitkit::fuzz::harness::targets::serve_mrtr_harness;

/// How many committed seeds one iteration runs (every n-th, sorted).
const SEEDS: usize = 64;

fn corpus() -> Vec<Vec<u8>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/corpus/serve_mrtr");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("the serve_mrtr corpus")
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

fn sessions(c: &mut Criterion) {
    let seeds = corpus();
    let mut h = serve_mrtr_harness();
    let mut g = c.benchmark_group("harness");
    g.sample_size(10);
    g.throughput(Throughput::Elements(seeds.len() as u64));
    g.bench_function(format!("serve_mrtr/{}_sessions", seeds.len()), |b| {
        b.iter(|| {
            for s in &seeds {
                // A violation is a finding, not a benchmark failure.
                let _ = h.run_bytes(s);
            }
        })
    });
    g.finish();
}

criterion_group!(benches, sessions);
criterion_main!(benches);
