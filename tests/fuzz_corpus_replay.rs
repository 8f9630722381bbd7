//! Replays every committed fuzz input on the stable toolchain: each file
//! under `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` goes
//! through the same `elicitkit::fuzz_support` function the fuzz target
//! calls, so a property that once failed (or a seed that once passed) is
//! checked by every `cargo test`.
//!
//! A regression input whose bug is not fixed yet is listed in [`KNOWN_OPEN`]
//! and replayed only by the `#[ignore]`d test `known_open_regressions`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use elicitkit::fuzz_support::{TARGETS, run_target};

/// Regression files (`<target>/<file name>`) for bugs still open in their
/// owner's module, with the bug they show.
const KNOWN_OPEN: &[(&str, &str)] = &[];

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
    for t in TARGETS {
        let files: Vec<PathBuf> = inputs("regressions", t)
            .into_iter()
            .filter(|f| !is_known_open(t, f))
            .collect();
        failures.extend(replay(t, &files));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "bugs still open in other modules; see KNOWN_OPEN"]
fn known_open_regressions() {
    let mut failures = Vec::new();
    for (file, _bug) in KNOWN_OPEN {
        let (t, _) = file.split_once('/').unwrap_or((file, ""));
        let path = fuzz_dir().join("regressions").join(file);
        failures.extend(replay(t, &[path]));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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
