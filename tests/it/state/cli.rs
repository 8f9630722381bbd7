//! `elicitkit state` as a user runs it: the examples of `state --help` run
//! as printed, and `state bench --format json` is one document.
#![cfg(feature = "net")]

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_elicitkit");

/// Where the examples that need a running server begin.
const LIVE: &str = "A state from a running server";

/// `state --help` as an 80-column terminal shows it.
fn help() -> String {
    let out = Command::new(BIN)
        .args(["state", "--help"])
        .env("COLUMNS", "80")
        .output()
        .expect("run elicitkit state --help");
    assert!(out.status.success());
    String::from_utf8(out.stdout).expect("utf-8 help")
}

/// The example commands before the live-server part: every indented line,
/// indent removed, as one script (continuations and multi-line quotes
/// stay as the shell reads them when pasted).
fn offline_script(help: &str) -> String {
    let examples = &help[help.find("Examples").expect("an Examples section")..];
    let live = examples.find(LIVE).expect("the live-server part");
    examples[..live]
        .lines()
        .filter_map(|l| l.strip_prefix("  "))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn state_help_examples_run_as_printed() {
    let help = help();
    let script = offline_script(&help);
    let runs = script
        .lines()
        .filter(|l| l.starts_with("elicitkit state "))
        .count();
    assert_eq!(runs, 5, "two bench and three inspect examples:\n{script}");
    let dir = tempfile::tempdir().expect("temp dir");
    let bin_dir = Path::new(BIN).parent().expect("binary's folder");
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    // -e: the first command that fails stops the script with its status;
    // -x: stderr names it.
    let out = Command::new("sh")
        .args(["-ex", "-c", &script])
        .current_dir(dir.path())
        .env("PATH", path)
        .output()
        .expect("run sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{:?}\n--- stderr\n{stderr}\n--- stdout\n{stdout}",
        out.status
    );
    assert_eq!(stdout.matches("Recommended: ").count(), 1, "{stdout}");
    assert!(stdout.contains("\"recommendation\": {"), "{stdout}");
    assert!(stdout.contains("principal:      \"alice\""), "{stdout}");
    assert!(
        stdout.contains("opens: yes (tag and time window (binding not checked))")
            && stdout.contains("opens: yes (tag, time window and binding)"),
        "{stdout}"
    );
}

#[test]
fn bench_json_is_one_document_with_every_codec() {
    let out = Command::new(BIN)
        .args([
            "state",
            "bench",
            "--quick",
            "--payload",
            "64",
            "--format",
            "json",
        ])
        .output()
        .expect("run elicitkit state bench");
    assert!(out.status.success(), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["payload"], 64);
    assert_eq!(doc["cpu"]["arch"], std::env::consts::ARCH);
    let codecs = doc["codecs"].as_array().expect("codecs");
    assert_eq!(codecs.len(), elicitkit::state::CodecName::ALL.len());
    for c in codecs {
        let (seal, open) = (&c["seal_ns"], &c["open_ns"]);
        for s in [seal, open] {
            let n = |k: &str| s[k].as_f64().expect("ns");
            assert!(n("min") <= n("median") && n("median") <= n("max"), "{c}");
        }
    }
    let pick = doc["recommendation"]["codec"].as_str().expect("a codec");
    assert!(
        codecs.iter().any(|c| c["codec"] == pick),
        "{pick} is one of the measured codecs"
    );
    assert!(
        doc["recommendation"]["reason"]
            .as_str()
            .unwrap()
            .contains(" ns")
    );
    let bad = Command::new(BIN)
        .args(["state", "bench", "--format", "yaml"])
        .output()
        .expect("run");
    assert_eq!(bad.status.code(), Some(2), "a usage error");
}
