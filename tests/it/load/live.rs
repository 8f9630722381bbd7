//! The live view of `elicitkit load` as a user sees it: on a terminal
//! (recorded with util-linux's `script`, 60 columns wide) a panel redrawn
//! in place with the phase, rates, errors, p50/p99 and a latency
//! histogram, no line wider than the terminal; off a terminal one plain
//! line per interval, no escapes.

use std::process::Command;

use crate::support::load::BIN;

/// `s` without ANSI escape sequences (ESC `[` … final byte).
fn plain(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for f in chars.by_ref() {
                if f.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[test]
fn on_a_terminal_the_panel_fits_it_and_is_redrawn_in_place() {
    crate::support::need::need("script");
    let dir = tempfile::tempdir().unwrap();
    let typescript = dir.path().join("typescript");
    let cmd = format!(
        "stty cols 60 rows 40; {BIN} load -d 3s --out {} --run-id run",
        dir.path().display()
    );
    let status = Command::new("script")
        .args(["-q", "-e", "-c", &cmd])
        .arg(&typescript)
        .output()
        .expect("run script");
    // A verdict (passed or failed: the busy test machine decides), not a
    // usage error.
    assert!(matches!(status.status.code(), Some(0 | 1)), "{status:?}");
    let raw = std::fs::read_to_string(&typescript).unwrap();
    // Redrawn in place: the cursor goes up over the previous panel.
    assert!(
        raw.contains("\u{1b}[4A") || raw.contains("\u{1b}[8A"),
        "{raw}"
    );
    let text = plain(&raw.replace('\r', ""));
    let panel: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("elicitkit load: plan"))
        .filter(|l| !l.starts_with("Script "))
        .collect();
    for l in &panel {
        assert!(l.chars().count() <= 60, "wider than the terminal: {l:?}");
    }
    for needle in [
        "smoke · measuring",
        " in flight · ",
        "errors none",
        "latency, last interval: p50 ",
    ] {
        assert!(
            panel.iter().any(|l| l.contains(needle)),
            "{needle}: {panel:#?}"
        );
    }
    // The histogram: a band row with a bar and its count.
    assert!(
        panel.iter().any(|l| {
            let t = l.trim_start();
            t.split_once(" ms ")
                .is_some_and(|(band, rest)| band.contains('-') && rest.contains('█'))
        }),
        "{panel:#?}"
    );
}

#[test]
fn off_a_terminal_it_prints_one_plain_line_per_interval() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["load", "-d", "3s", "--run-id", "run", "--out"])
        .arg(dir.path())
        .output()
        .expect("run load");
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains('\u{1b}'), "no escapes in a log: {err:?}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("smoke ")).collect();
    // Launch (1 s) and 3 s measured: an interval a second, each once.
    assert!((3..=6).contains(&lines.len()), "{lines:#?}");
    for l in &lines {
        assert!(l.contains(" p50 ") && l.contains(" p99 "), "{l}");
    }
    let mut seen: Vec<&str> = lines
        .iter()
        .map(|l| l.split("  ").next().unwrap_or_default())
        .collect();
    seen.dedup();
    assert_eq!(
        seen.len(),
        lines.len(),
        "an interval printed twice: {lines:#?}"
    );
}
