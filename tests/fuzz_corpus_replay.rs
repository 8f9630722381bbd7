//! Replays every committed fuzz input on the stable toolchain: each file
//! under `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` goes
//! through the same `elicitkit::fuzz_support` function the fuzz target
//! calls, so a property that once failed (or a seed that once passed) is
//! checked by every `cargo test`.
//!
//! Regression files are replayed with every check on
//! ([`run_target_strict`]), except those of bugs still open in another
//! module, listed in [`KNOWN_OPEN`]: they replay with that one check
//! tolerated, and each has an `#[ignore]`d test of its own that checks it
//! strictly (run with `cargo test --test fuzz_corpus_replay -- --ignored`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use elicitkit::fuzz_support::{TARGETS, run_target, run_target_strict};

/// Regression files (`<target>/<file name>`) for bugs still open in their
/// owner's module, with the bug they show.
const KNOWN_OPEN: &[(&str, &str)] = &[(
    "sse_stream/sse-bom-cap",
    "protocol/sse.rs: bytes of a split, then broken, BOM prefix are not counted towards the event cap",
)];

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

fn key(target: &str, file: &Path) -> String {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    format!("{target}/{name}")
}

fn is_known_open(target: &str, file: &Path) -> bool {
    let k = key(target, file);
    KNOWN_OPEN.iter().any(|(f, _)| *f == k)
}

/// Runs `files` through `target`; returns one line per failing file.
fn replay(target: &str, files: &[PathBuf]) -> Vec<String> {
    replay_with(target, files, false)
}

/// Like [`replay`], with every check on when `strict`.
fn replay_with(target: &str, files: &[PathBuf], strict: bool) -> Vec<String> {
    let mut failures = Vec::new();
    for file in files {
        let data = match std::fs::read(file) {
            Ok(d) => d,
            Err(e) => {
                failures.push(format!("{}: unreadable: {e}", file.display()));
                continue;
            }
        };
        let got = catch_unwind(AssertUnwindSafe(|| {
            if strict {
                run_target_strict(target, &data)
            } else {
                run_target(target, &data)
            }
        }));
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
    for t in TARGETS {
        let (open, fixed): (Vec<PathBuf>, Vec<PathBuf>) = inputs("regressions", t)
            .into_iter()
            .partition(|f| is_known_open(t, f));
        failures.extend(replay_with(t, &fixed, true));
        // Open bugs: everything but the one tolerated check must hold.
        failures.extend(replay_with(t, &open, false));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn replay_open(file: &str) {
    let (t, _) = file.split_once('/').unwrap_or((file, ""));
    let path = fuzz_dir().join("regressions").join(file);
    let failures = replay_with(t, &[path], true);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Open bug in `src/protocol/sse.rs` (owner: protocol): with a small event
/// cap, a body starting `EF BB 20 ...` (a BOM prefix that turns out not to
/// be one) trips `EventTooLarge` when parsed whole but not when the first
/// chunk ends after `EF`: `push` keeps the held-back BOM bytes in `line`
/// without adding them to `event_bytes`. Un-ignore once fixed.
#[test]
#[ignore = "open bug sse-bom-cap in protocol/sse.rs"]
fn open_bug_sse_bom_cap() {
    replay_open("sse_stream/sse-bom-cap");
}

#[test]
fn known_open_entries_exist() {
    for (file, bug) in KNOWN_OPEN {
        let path = fuzz_dir().join("regressions").join(file);
        assert!(path.is_file(), "{file} ({bug}) is listed but missing");
    }
}

#[test]
fn unknown_target_is_reported() {
    assert_eq!(run_target("no-such-target", b""), None);
}
