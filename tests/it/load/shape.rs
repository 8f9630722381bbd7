//! The load shape of `elicitkit load`: stages (`--stage`), the warm-up
//! (`--warmup`) and the measured window, against the embedded reference
//! server on 127.0.0.1. Durations are read from the report's recorded
//! window, never from the test's own clock.

use crate::support::load::{BIN, f, load, n, ndjson_intervals, stderr, write_plan};
use std::process::Command;

const PLAN: &str = r#"
name = "shape"
duration = "2s"
timeout = "5s"

[load]
users = 2

[scenarios.form-accept]
"#;

#[test]
fn a_staged_open_run_rises_and_falls_with_its_stages() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), PLAN);
    let stream = dir.path().join("run.ndjson");
    let (out, s) = load(
        &[
            "--plan",
            &plan,
            "--model",
            "open",
            "--stage",
            "2s:120,2s:0",
            "--out",
            &format!("ndjson={}", stream.display()),
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{s:#}", stderr(&out));
    assert_eq!(s["model"], "open");
    // 0 → 120/s over 2 s and back: 30, 90, 90, 30 round trips begun a
    // second. Finished ones lag on a busy machine; begun ones follow the
    // schedule.
    let intervals = ndjson_intervals(&stream);
    let started: Vec<u64> = intervals.iter().map(|l| n(&l["started"])).collect();
    assert!(started.len() >= 4, "{started:?}");
    assert!(started[1] > started[0] + 40, "rises: {started:?}");
    assert!(started[2] > started[3] + 40, "falls: {started:?}");
    let counts: Vec<u64> = intervals.iter().map(|l| n(&l["round_trips"])).collect();
    let total: u64 = counts.iter().sum();
    assert_eq!(total, n(&s["round_trips"]["total"]));
    assert!((200..=250).contains(&total), "~240 scheduled: {counts:?}");
    assert!(
        (f(&s["duration_s"]) - 4.0).abs() < 0.2,
        "{}",
        s["duration_s"]
    );
}

#[test]
fn the_warmup_is_left_out_of_the_results_and_stated() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), PLAN);
    let stream = dir.path().join("run.ndjson");
    let (out, s) = load(
        &[
            "--plan",
            &plan,
            "--rate",
            "50",
            "--duration",
            "2s",
            "--warmup",
            "1s",
            "--out",
            &format!("ndjson={}", stream.display()),
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{s:#}", stderr(&out));
    let w = &s["window"];
    assert_eq!(f(&w["warmup_s"]), 1.0);
    // 50/s: 50 round trips in the warm-up, 100 in the 2 s window.
    let before = n(&w["before_round_trips"]);
    assert!((45..=51).contains(&before), "{w}");
    let total = n(&s["round_trips"]["total"]);
    assert!((90..=101).contains(&total), "warm-up excluded: {total}");
    assert_eq!(n(&s["legs"]["tools/call #1"]["count"]), total);
    let intervals = ndjson_intervals(&stream);
    let streamed: u64 = intervals.iter().map(|l| n(&l["round_trips"])).sum();
    assert_eq!(streamed, total, "the stream leaves the warm-up out too");
    assert!(
        (f(&intervals[0]["unix"]) - f(&w["from_unix"])).abs() < 1e-6,
        "intervals start at the window"
    );
    assert!(
        (f(&s["duration_s"]) - 2.0).abs() < 0.1,
        "{}",
        s["duration_s"]
    );
    let md = std::fs::read_to_string(dir.path().join("run/summary.md")).unwrap();
    assert!(md.contains("warm-up 1.0 s"), "{md}");
}

#[test]
fn a_closed_run_measures_its_duration_after_the_users_launch() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(
        dir.path(),
        &PLAN.replace("users = 2", "users = 4\nhatch_rate = 2.0"),
    );
    let (out, s) = load(&["--plan", &plan], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}\n{s:#}", stderr(&out));
    let w = &s["window"];
    let measured = f(&w["to_unix"]) - f(&w["from_unix"]);
    assert!((measured - 2.0).abs() < 0.25, "window {w}");
    assert!((f(&s["duration_s"]) - measured).abs() < 1e-6);
    assert_eq!(f(&w["lead_s"]), 2.0, "4 users at 2/s launch in 2 s");
    assert!(n(&w["before_round_trips"]) > 0, "the launch ran: {w}");
    let rps = n(&s["round_trips"]["total"]) as f64 / measured;
    assert!((f(&s["rps"]) - rps).abs() < 1e-6 * rps.max(1.0));
}

#[test]
fn a_staged_closed_run_ramps_goose_users() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), PLAN);
    let (out, s) = load(
        &[
            "--plan",
            &plan,
            "--model",
            "closed",
            "--stage",
            "1s:3,2s:3",
            "--warmup",
            "1s",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{s:#}", stderr(&out));
    assert_eq!(s["model"], "closed");
    assert!(n(&s["round_trips"]["success"]) > 0, "{s:#}");
    let w = &s["window"];
    let measured = f(&w["to_unix"]) - f(&w["from_unix"]);
    assert!((measured - 2.0).abs() < 0.3, "3 s of stages less 1 s: {w}");
}

#[test]
fn bad_shapes_are_usage_errors_that_say_why() {
    for (args, says) in [
        (vec!["--stage", "10s"], "expected DURATION:TARGET"),
        (
            vec!["--stage", "10s:5", "--users", "2"],
            "cannot be used with",
        ),
        (
            vec!["--model", "closed", "--stage", "1500ms:2"],
            "whole seconds",
        ),
        (
            vec!["--stage", "2s:5", "--warmup", "2s"],
            "shorter than the stages",
        ),
        (
            vec!["--model", "open", "--users", "3"],
            "--model goes with stages",
        ),
        (
            vec!["--model", "ramping", "--stage", "1s:1"],
            "unknown model",
        ),
    ] {
        let out = Command::new(BIN)
            .arg("load")
            .args(&args)
            .arg("--quiet")
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
