//! Replays every committed fuzz input on the stable toolchain: each file
//! under `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` goes
//! through the same `elicitkit::fuzz` function the fuzz target
//! calls, so a property that once failed (or a seed that once passed) is
//! checked by every `cargo test`. Crash regressions live in
//! `fuzz/regressions/<target>/` (e.g. `sse_stream/sse-bom-cap`, the event-cap
//! bug the sse_stream target found in `protocol/sse.rs`, now fixed).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use elicitkit::fuzz::{TARGETS, run_target};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// Every file of `<fuzz>/<kind>/<target>/`, sorted (none if the dir is absent).
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = fuzz_dir().join(kind).join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.'))
        })
        .collect();
    files.sort();
    files
}

/// Runs `files` through `target`; returns one line per failing file.
fn replay(target: &str, files: &[PathBuf]) -> Vec<String> {
    let mut failures = Vec::new();
    for file in files {
        let data = match std::fs::read(file) {
            Ok(d) => d,
            Err(e) => {
                failures.push(format!("{}: unreadable: {e}", file.display()));
                continue;
            }
        };
        let got = catch_unwind(AssertUnwindSafe(|| run_target(target, &data)));
        match got {
            Ok(Some(_)) => {}
            Ok(None) => failures.push(format!("{target}: no such target")),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                failures.push(format!("{}: {msg}", file.display()));
            }
        }
    }
    failures
}

#[test]
fn every_target_has_a_seed_corpus() {
    for t in TARGETS {
        assert!(
            !inputs("corpus", t).is_empty(),
            "fuzz/corpus/{t}/ has no seed inputs"
        );
    }
}

#[test]
fn corpora_replay_cleanly() {
    let mut failures = Vec::new();
    let mut count = 0;
    for t in TARGETS {
        let files: Vec<PathBuf> = inputs("corpus", t);
        count += files.len();
        failures.extend(replay(t, &files));
    }
    assert!(count > 0);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn fixed_regressions_stay_fixed() {
    let mut failures = Vec::new();
    let mut count = 0;
    for t in TARGETS {
        let files = inputs("regressions", t);
        count += files.len();
        failures.extend(replay(t, &files));
    }
    assert!(count > 0, "fuzz/regressions/ holds no crash inputs");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn unknown_target_is_reported() {
    assert_eq!(run_target("no-such-target", b""), None);
}

/// `sse_stream/sse-bom-cap` was found under the old hand-written decoder;
/// it was re-encoded for the `arbitrary` layout of `SseCase` (cap byte,
/// continuation byte + little-endian `u16` per cut, `0`, then the body), so
/// it still means: cap 4, one cut after byte 1, body `EF BB " a\ng"`.
#[test]
fn sse_regression_keeps_its_meaning() {
    let data = std::fs::read(fuzz_dir().join("regressions/sse_stream/sse-bom-cap")).unwrap();
    let case: elicitkit::fuzz::shapes::SseCase<'_> =
        elicitkit::fuzz::shapes::decode(&data).unwrap();
    assert_eq!(1 + usize::from(case.cap), 4);
    assert_eq!(case.cuts, vec![1]);
    assert_eq!(case.body, b"\xef\xbb a\ng");
}

/// The harness target `serve_mrtr` (the reference server in process, every
/// invariant) replays its committed seeds too; `rmcp_server` lives in the
/// fuzz crate (it includes the rmcp test server) and is covered by
/// `tests/it/fuzz/harness_rmcp.rs`. Both have seeds, so the CI smoke, which
/// passes `corpus/<target>` to libFuzzer, finds the directory. Its fixed
/// regressions replay here as well (`splice-identical-request` and
/// `donor-identical-request`: false tamper findings, the state of an
/// identical request spliced in or sent whole).
#[test]
fn harness_targets_have_seeds_and_serve_mrtr_replays_them() {
    for t in ["serve_mrtr", "rmcp_server"] {
        assert!(!inputs("corpus", t).is_empty(), "fuzz/corpus/{t}/ is empty");
    }
    let regressions = inputs("regressions", "serve_mrtr");
    assert!(
        !regressions.is_empty(),
        "fuzz/regressions/serve_mrtr/ is empty"
    );
    for f in inputs("corpus", "serve_mrtr")
        .into_iter()
        .chain(regressions)
    {
        let data = std::fs::read(&f).expect("readable");
        elicitkit::fuzz::harness::targets::serve_mrtr_target(&data);
    }
}
