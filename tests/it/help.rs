//! Every command's `--help` as a newcomer reads it: options in headed
//! groups, examples and exit codes, and example lines that a 60-column
//! terminal (or `COLUMNS=60` off a TTY) shows whole, never wrapped into
//! lines that look like commands.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_elicitkit");

/// Every command and subcommand with a `--help` of its own.
const COMMANDS: &[&[&str]] = &[
    &[],
    &["check"],
    &["fuzz"],
    &["load"],
    &["plan"],
    &["report"],
    &["report", "merge"],
    &["report", "render"],
    &["report", "capacity"],
    &["serve"],
    &["state"],
    &["validate"],
    &["bridge"],
];

/// `elicitkit <cmd> --help` off a TTY, `columns` wide.
fn help(cmd: &[&str], columns: u32) -> String {
    let out = Command::new(BIN)
        .args(cmd)
        .arg("--help")
        .env("COLUMNS", columns.to_string())
        .output()
        .expect("run --help");
    assert!(out.status.success(), "{cmd:?}");
    String::from_utf8(out.stdout).expect("utf-8 help")
}

/// The indented lines after the options: example commands and comments.
fn example_lines(help: &str) -> Vec<&str> {
    let start = help
        .find("\nExamples")
        .or_else(|| help.find("\nStart here"))
        .expect("an Examples or Start here section");
    help[start..]
        .lines()
        .filter(|l| l.starts_with(' '))
        .collect()
}

#[test]
fn every_command_has_examples_and_exit_codes_that_fit_60_columns() {
    for cmd in COMMANDS {
        let wide = help(cmd, 1000);
        let narrow = help(cmd, 60);
        assert!(wide.contains("Exit codes"), "{cmd:?}: no exit codes");
        let lines = example_lines(&wide);
        assert!(!lines.is_empty(), "{cmd:?}: no examples");
        for l in &lines {
            assert!(l.chars().count() <= 60, "{cmd:?}: {l:?}");
        }
        // Not wrapped at 60 columns: the same lines, none split in two.
        assert_eq!(example_lines(&narrow), lines, "{cmd:?}");
    }
}

#[test]
fn the_top_level_help_says_where_to_start_and_what_exits_mean() {
    let top = help(&[], 100);
    for needle in [
        "Start here",
        "elicitkit serve &",
        "elicitkit check --target http://127.0.0.1:8080/mcp",
        "elicitkit state bench --quick",
        "Exit codes, every command: 0 passed; 1 failed",
    ] {
        assert!(top.contains(needle), "{needle:?} missing:\n{top}");
    }
}

/// `load --help` was 209 lines of 45 options under one heading; it is
/// grouped as Goose groups its options, the detail in docs/load.md.
#[test]
fn load_help_is_grouped_and_short() {
    let text = help(&["load"], 100);
    let headings: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .collect();
    for h in [
        "Target:",
        "Load shape:",
        "Thresholds and baselines:",
        "Capacity search:",
        "Soak:",
        "Distributed runs:",
        "Output:",
        "Embedded server:",
    ] {
        assert!(headings.contains(&h), "{h} missing: {headings:?}");
    }
    let lines = text.lines().count();
    assert!(lines < 130, "{lines} lines");
    for short in [
        "-u, --users",
        "-r, --rate",
        "-d, --duration",
        "-s, --stage",
        "-o, --out",
    ] {
        assert!(text.contains(short), "{short}");
    }
}

/// `bridge --help` describes the flags bridge has (it said "With --target
/// stdio" and named --principal and cross-principal checks it has not).
#[test]
fn bridge_help_names_only_its_own_flags() {
    let text = help(&["bridge"], 100);
    for absent in ["--target", "--principal", "cross-principal"] {
        assert!(!text.contains(absent), "{absent}:\n{text}");
    }
}
