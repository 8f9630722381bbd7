//! `elicitkit load` across instances: which instance answered each leg,
//! per-instance counts in the report, and retries that crossed instances.
//! Real processes on 127.0.0.1 (redis-server, `elicitkit serve` on a shared
//! Redis store and key file, nginx round robin), stopped by PID.
#![cfg(feature = "net")]

use crate::support::cluster::*;
use crate::support::load::*;
use serde_json::Value;
use std::path::Path;

/// Form round trips on `deploy`: `tools/call #1` (input_required), then
/// `tools/call #2 retry` with the answer and the state. Bounded: 2 s and
/// 20,000 requests.
const PLAN: &str = r#"name = "instances"
duration = "2s"
timeout = "5s"
max_requests = 20000
thresholds = ["error_rate < 0.1%"]

[load]
users = 4

[scenarios.form-accept]
tool = "deploy"
arguments = { service = "web" }
"#;

const RETRY: &str = "tools/call #2 retry";

/// Runs the plan against `target` (one URL or a comma list), with `extra`
/// arguments.
fn run_with(dir: &Path, target: &str, extra: &[&str]) -> (std::process::Output, Value) {
    let plan = write_plan(dir, PLAN);
    let mut args = vec!["--plan", &plan, "--target", target];
    args.extend_from_slice(extra);
    let (out, s) = load(&args, dir);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stderr(&out),
        String::from_utf8_lossy(&out.stdout)
    );
    (out, s)
}

/// `answered_by` as (instance, requests), and checks the counts add up
/// to the run's requests with none unattributed.
fn answered(s: &Value) -> Vec<(String, u64)> {
    let inst = &s["instances"];
    let by: Vec<(String, u64)> = inst["answered_by"]
        .as_array()
        .expect("instances.answered_by")
        .iter()
        .map(|i| {
            (
                i["instance"].as_str().unwrap().to_owned(),
                n(&i["requests"]),
            )
        })
        .collect();
    let sum: u64 = by.iter().map(|(_, r)| r).sum();
    assert_eq!(n(&inst["unattributed_requests"]), 0, "{inst:#}");
    assert_eq!(sum, n(&s["requests"]), "instance counts sum to the total");
    assert!(sum > 20, "a real run: {sum} requests");
    by
}

/// The report's retry legs, and checks `instances.retries` counts them all.
fn retries(s: &Value) -> u64 {
    let legs = n(&s["legs"][RETRY]["count"]);
    assert!(legs > 10, "retries ran: {legs}");
    assert_eq!(n(&s["instances"]["retries"]), legs, "{:#}", s["instances"]);
    assert_eq!(n(&s["instances"]["retries_unattributed"]), 0);
    legs
}

fn run(dir: &Path, target: &str) -> (std::process::Output, Value) {
    run_with(dir, target, &[])
}

fn report_files(dir: &Path) -> (String, String) {
    let md = std::fs::read_to_string(dir.join("run/summary.md")).expect("summary.md");
    let html = std::fs::read_to_string(dir.join("run/report.html")).expect("report.html");
    (md, html)
}

#[test]
fn behind_nginx_both_instances_answer_and_retries_cross() {
    let c = Cluster::start(2);
    let nginx = &c.nginx;
    let out = tempfile::tempdir().unwrap();
    let stream = out.path().join("run.ndjson");
    let ndjson = format!("ndjson={}", stream.display());
    let (_, s) = run_with(
        out.path(),
        &format!("{}/mcp", nginx.base()),
        &["--out", &ndjson],
    );
    let by = answered(&s);
    let mut names: Vec<&str> = by.iter().map(|(i, _)| i.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        ["i0", "i1"],
        "named by elicitkit-instance, not nginx's address"
    );
    assert!(by.iter().all(|(_, r)| *r > 0), "{by:?}");
    for i in s["instances"]["answered_by"].as_array().unwrap() {
        assert!(n(&i["legs"]["tools/call #1"]["requests"]) > 0, "{i:#}");
        assert!(n(&i["legs"][RETRY]["requests"]) > 0, "{i:#}");
        assert!(i["latency"]["p99_ms"].as_f64().unwrap() > 0.0, "{i:#}");
    }
    let total = retries(&s);
    let crossed = n(&s["instances"]["cross_instance_retries"]);
    assert!(
        crossed > 0 && crossed <= total,
        "round robin sends some retries elsewhere: {crossed} of {total}\n{}",
        nginx.error_log()
    );
    assert_eq!(s["passed"], true, "retries on the other instance complete");
    let (md, html) = report_files(out.path());
    assert!(md.contains("## Instances"), "{md}");
    assert!(md.contains("2 instances answered"), "{md}");
    assert!(md.contains("| i0 |") && md.contains("| i1 |"), "{md}");
    assert!(md.contains(&format!("{crossed} of {total} retries crossed instances")));
    assert!(html.contains("<table id=\"instances\">"), "an HTML table");
    assert!(html.contains("<td>i0</td>") && html.contains("<td>i1</td>"));
    assert!(
        html.contains("id=\"chart-instances\""),
        "requests by instance over time"
    );
    exported_per_instance(out.path(), &stream, &s);
}

/// The per-instance figures of run `s` (in `dir/run`) are in its interval
/// stream, its Prometheus text, and in `report merge` of its `.hlog`
/// (there without the per-leg split).
fn exported_per_instance(dir: &Path, stream: &Path, s: &Value) {
    let inst = &s["instances"];
    let by = answered(s);
    let text = std::fs::read_to_string(stream).expect("the ndjson stream");
    for (name, requests) in &by {
        let streamed: u64 = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
            .filter(|v| v["metric"] == format!("inst:{name}"))
            .map(|v| n(&v["count"]))
            .sum();
        assert_eq!(
            streamed, *requests,
            "{name}'s interval lines sum to its requests"
        );
    }
    let prom = std::fs::read_to_string(dir.join("run/metrics.prom")).expect("metrics.prom");
    for (name, requests) in &by {
        let line = format!("instance=\"{name}\"}} {requests}");
        assert!(
            prom.lines()
                .any(|l| l.starts_with("elicitkit_instance_requests{") && l.ends_with(&line)),
            "{line} in\n{prom}"
        );
    }
    let crossed = format!(
        "landed=\"crossed\"}} {}",
        n(&inst["cross_instance_retries"])
    );
    assert!(prom.contains(&crossed), "{crossed} in\n{prom}");
    let merged = dir.join("merged");
    let out = std::process::Command::new(BIN)
        .args(["report", "merge"])
        .arg(dir.join("run/run.hlog"))
        .arg("--out")
        .arg(&merged)
        .output()
        .expect("report merge runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(merged.join("summary.json")).unwrap())
            .unwrap();
    let mi = &m["instances"];
    assert_eq!(answered(&m), by, "merged: the same instances and counts");
    for key in ["retries", "cross_instance_retries", "retries_unattributed"] {
        assert_eq!(mi[key], inst[key], "merged {key}");
    }
    for (a, b) in mi["answered_by"]
        .as_array()
        .unwrap()
        .iter()
        .zip(inst["answered_by"].as_array().unwrap())
    {
        assert_eq!(a["errors"], b["errors"]);
        assert_eq!(a["latency"]["p99_ms"], b["latency"]["p99_ms"]);
        assert_eq!(a["legs"], serde_json::json!({}), "no per-leg split in logs");
    }
    let md = std::fs::read_to_string(merged.join("summary.md")).unwrap();
    assert!(md.contains("not in merged logs"), "{md}");
}

/// Both generations behind nginx: 2025-11-25 sessions are pinned (the
/// recipe hashes `Authorization` for them) and their legs are the instance
/// that answered `initialize`; nothing is left unattributed.
const MIXED: &str = r#"name = "mixed"
duration = "2s"
timeout = "5s"
max_requests = 20000
thresholds = ["error_rate < 0.1%"]

[load]
users = 4

[scenarios.mrtr]
kind = "form-accept"
tool = "deploy"
arguments = { service = "web" }

[scenarios.legacy]
kind = "legacy-push"
tool = "deploy"
arguments = { service = "web" }
"#;

#[test]
fn behind_nginx_2025_sessions_are_attributed_to_their_instance() {
    let c = Cluster::start(2);
    let nginx = &c.nginx;
    let out = tempfile::tempdir().unwrap();
    let plan = write_plan(out.path(), MIXED);
    let (o, s) = load(
        &[
            "--plan",
            &plan,
            "--target",
            &format!("{}/mcp", nginx.base()),
        ],
        out.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let by = answered(&s);
    assert!(by.iter().all(|(i, _)| i == "i0" || i == "i1"), "{by:?}");
    let legacy_legs: u64 = s["instances"]["answered_by"]
        .as_array()
        .unwrap()
        .iter()
        // An instance no session was pinned to has no such leg.
        .filter_map(|i| i["legs"]["tools/call (stream)"]["requests"].as_u64())
        .sum();
    assert_eq!(
        legacy_legs,
        n(&s["legs"]["tools/call (stream)"]["count"]),
        "every 2025-11-25 call is attributed"
    );
    assert!(legacy_legs > 5, "legacy calls ran: {legacy_legs}");
    // Legacy legs never count as retries: only MRTR retries do.
    assert_eq!(n(&s["instances"]["retries"]), n(&s["legs"][RETRY]["count"]));
}

#[test]
fn two_targets_send_every_retry_to_the_other_instance() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().unwrap();
    let instances = instances_on(&redis, dir.path(), 2, &[]);
    let target = format!("{},{}", instances[0].mcp_url(), instances[1].mcp_url());
    let out = tempfile::tempdir().unwrap();
    let (_, s) = run(out.path(), &target);
    let by = answered(&s);
    assert_eq!(by.len(), 2, "{by:?}");
    // Round trips start on each target in turn.
    let firsts: Vec<u64> = s["instances"]["answered_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| n(&i["legs"]["tools/call #1"]["requests"]))
        .collect();
    let (a, b) = (firsts[0], firsts[1]);
    assert!(
        a.abs_diff(b) <= (a + b) / 10 + 8,
        "round robin: {a} vs {b} first calls"
    );
    let total = retries(&s);
    assert_eq!(
        n(&s["instances"]["cross_instance_retries"]),
        total,
        "each retry goes to the next URL: {:#}",
        s["instances"]
    );
    let targets = s["instances"]["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2);
    assert_eq!(targets[1], instances[1].mcp_url().as_str());
    assert_eq!(s["target"], instances[0].mcp_url().as_str());
    assert_eq!(s["passed"], true, "{:#}", s["failures"]);
    // Without the header, the peer address names the instance; here the
    // header does (`--instance-id`).
    let mut names: Vec<String> = by.into_iter().map(|(i, _)| i).collect();
    names.sort();
    assert_eq!(names, ["i0", "i1"]);
}

#[test]
fn one_serve_is_one_instance_in_one_line() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().unwrap();
    let instances = instances_on(&redis, dir.path(), 1, &[]);
    let out = tempfile::tempdir().unwrap();
    let (output, s) = run(out.path(), &instances[0].mcp_url());
    let by = answered(&s);
    assert_eq!(by.len(), 1, "{by:?}");
    assert_eq!(by[0].0, "i0");
    let total = retries(&s);
    assert_eq!(n(&s["instances"]["cross_instance_retries"]), 0);
    assert!(s["instances"]["targets"].as_array().unwrap().is_empty());
    let (md, html) = report_files(out.path());
    assert!(
        md.contains(&format!("one instance answered: i0 ({} requests", by[0].1)),
        "{md}"
    );
    assert!(
        md.contains(&format!("0 of {total} retries crossed")),
        "{md}"
    );
    assert!(!md.contains("| instance |"), "no table of one: {md}");
    assert!(html.contains("<p id=\"instances\">one instance answered: i0"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("one instance answered: i0"), "{stdout}");
}

#[test]
fn every_target_is_preflighted_and_a_bad_one_is_named() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().unwrap();
    let instances = instances_on(&redis, dir.path(), 1, &[]);
    let dead = format!("http://127.0.0.1:{}/mcp", free_port());
    let out = tempfile::tempdir().unwrap();
    let plan = write_plan(out.path(), PLAN);
    let target = format!("{},{dead}", instances[0].mcp_url());
    let (o, s) = load(&["--plan", &plan, "--target", &target], out.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(&dead), "names the URL: {}", stderr(&o));
    assert_eq!(s, Value::Null, "nothing measured, no report");
    // A list with a repeat or a hole is a usage error before any request.
    for bad in [
        format!("{0},{0}", instances[0].mcp_url()),
        format!("{},", instances[0].mcp_url()),
    ] {
        let (o, _) = load(&["--plan", &plan, "--target", &bad], out.path());
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("--target"), "{}", stderr(&o));
    }
}
