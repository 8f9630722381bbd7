//! The ownership oracle of `elicitkit load`: every round trip's ids restart
//! at 1 (so concurrent ids collide, as real clients' do) and its `deploy`
//! argument carries its marker; a reply carrying another round trip's
//! marker is `misrouted` and fails the run. Proven both ways against the
//! embedded server: with `--flaw cross-talk` (one reply slot shared by
//! overlapping calls) and without.

use crate::support::load::*;
use serde_json::Value;
use std::path::Path;
use std::process::Output;

/// `users` closed-model users on `deploy` form round trips for 3 s
/// (bounded: 200,000 requests, 10 s per request; generous, as the suite's
/// other load runs share the cores).
fn plan(users: u32) -> String {
    format!(
        "name = \"ownership\"\nduration = \"3s\"\ntimeout = \"10s\"\nstall = \"20s\"\n\
         max_requests = 200000\n\
         [load]\nusers = {users}\n\
         [scenarios.form-accept]\ntool = \"deploy\"\narguments = {{ service = \"web\" }}\n"
    )
}

fn run(dir: &Path, users: u32, serve: &[&str]) -> (Output, Value) {
    let plan = write_plan(dir, &plan(users));
    let mut args = vec!["--plan", plan.as_str()];
    args.extend_from_slice(serve);
    load(&args, dir)
}

/// The `misrouted < 1` default threshold's verdict.
fn misroute_threshold(s: &Value) -> &Value {
    s["thresholds"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["expr"] == "misrouted < 1"))
        .unwrap_or_else(|| panic!("no misrouted threshold: {:#}", s["thresholds"]))
}

/// The two round-trip markers a misroute message names (ours, theirs).
fn named_round_trips(message: &str) -> Option<(u64, u64)> {
    let mut it = message.match_indices("ek-rt-").map(|(at, p)| {
        message[at + p.len()..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .fold(0u64, |n, b| n * 10 + u64::from(b - b'0'))
    });
    Some((it.next()?, it.next()?))
}

#[test]
fn cross_talk_is_caught_as_misrouted_and_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run(
        dir.path(),
        16,
        &["--serve-arg=--flaw", "--serve-arg=cross-talk"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(0), "{stdout}\n{s:#}");
    assert_eq!(s["passed"], false, "{s:#}");
    let misrouted = n(&s["scenarios"]["form-accept"]["errors"]["misrouted"]);
    assert!(misrouted > 0, "{s:#}");
    let t = misroute_threshold(&s);
    assert_eq!(t["passed"], false, "{t:#}");
    assert_eq!(f(&t["actual"]), misrouted as f64, "{t:#}");
    // The evidence names this round trip and the one whose reply it got.
    let groups = s["error_groups"].as_array().expect("error_groups");
    let (ours, theirs) = groups
        .iter()
        .filter_map(|g| g["message"].as_str())
        .filter(|m| m.contains(": misrouted: "))
        .find_map(named_round_trips)
        .unwrap_or_else(|| panic!("no misroute evidence: {groups:#?}"));
    assert_ne!(ours, theirs);
    // Counted where people look: the terminal and summary.md.
    assert!(stdout.contains("misrouted"), "{stdout}");
    let md = std::fs::read_to_string(dir.path().join("run/summary.md")).unwrap();
    assert!(md.contains("misrouted"), "{md}");
    let first = s["timeline"]
        .as_array()
        .and_then(|t| t.iter().find(|i| n(&i["errors_by_kind"]["misrouted"]) > 0))
        .map(|i| f(&i["t_s"]));
    eprintln!(
        "cross-talk: {misrouted} misrouted of {} round trips; first in the interval at {first:?} s",
        n(&s["round_trips"]["total"])
    );
    assert!(
        first.is_some_and(|t| t <= 2.0),
        "caught within 2 s: {first:?}"
    );
}

#[test]
fn a_correct_server_misroutes_nothing_at_64_users() {
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run(dir.path(), 64, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", stderr(&out));
    let t = misroute_threshold(&s);
    assert_eq!(t["passed"], true, "{t:#}");
    assert_eq!(f(&t["actual"]), 0.0, "{t:#}");
    let o = &s["scenarios"]["form-accept"];
    assert_eq!(o["errors"]["misrouted"].as_u64().unwrap_or(0), 0, "{s:#}");
    let total = n(&s["round_trips"]["total"]);
    assert!(n(&o["outcomes"]["success"]) > 100, "a real run: {s:#}");
    eprintln!("clean serve, 64 users: 0 misrouted of {total} round trips");
}

/// 16 users on 2025-11-25 `deploy` form round trips for 2 s.
fn run_legacy(dir: &Path, serve: &[&str]) -> (Output, Value) {
    let plan = write_plan(
        dir,
        "duration = \"2s\"\ntimeout = \"10s\"\nstall = \"20s\"\nmax_requests = 100000\n\
         [load]\nusers = 16\n\
         [scenarios.push]\nkind = \"form-accept\"\ngeneration = \"2025-11-25\"\n\
         tool = \"deploy\"\narguments = { service = \"web\" }\n",
    );
    let mut args = vec!["--plan", plan.as_str()];
    args.extend_from_slice(serve);
    load(&args, dir)
}

#[test]
fn a_correct_server_misroutes_nothing_on_2025_11_25_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run_legacy(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}\n{s:#}", stderr(&out));
    assert_eq!(misroute_threshold(&s)["passed"], true);
    assert!(
        n(&s["scenarios"]["push"]["outcomes"]["success"]) > 50,
        "{s:#}"
    );
}

#[test]
fn cross_talk_on_2025_11_25_sessions_is_misrouted() {
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run_legacy(
        dir.path(),
        &["--serve-arg=--flaw", "--serve-arg=cross-talk"],
    );
    assert_ne!(out.status.code(), Some(0), "{s:#}");
    assert_eq!(misroute_threshold(&s)["passed"], false, "{s:#}");
    let misrouted = n(&s["scenarios"]["push"]["errors"]["misrouted"]);
    assert!(misrouted > 0, "{s:#}");
    let evidence = s["error_groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["message"].as_str())
        .find_map(named_round_trips);
    assert!(evidence.is_some_and(|(a, b)| a != b), "{s:#}");
}
