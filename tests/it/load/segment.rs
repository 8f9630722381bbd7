//! Distributed load on one engine: N `elicitkit load --segment I/N`
//! processes with one `--start-at`, against one `elicitkit serve` on
//! 127.0.0.1, then `elicitkit report merge` of their logs. Every process is
//! bounded (seconds of load, a request cap) and stopped by its own PID if
//! the test fails early.

use crate::support::load::{BIN, f, n, stderr, write_plan};
use elicitkit::load::exec::target::EmbeddedServer;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, SystemTime};

const PLAN: &str = r#"
name = "seg"
duration = "3s"
timeout = "5s"
max_requests = 100000
# Judged by counts and rates here, not by latency or errors: 2 shared
# cores running debug builds make those depend on what else runs.
default_thresholds = false

[load]
rate = 120

[scenarios.form-accept]
weight = 3
tool = "deploy"
arguments = { service = "web" }

[scenarios.form-decline]
weight = 1
tool = "deploy"
arguments = { service = "web" }
"#;

/// A child killed (by its PID) if the test ends before it does.
struct Running(Option<Child>);

impl Running {
    fn wait(mut self) -> Output {
        self.0.take().unwrap().wait_with_output().expect("wait")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The start time `secs` from now, as `--start-at` takes it.
fn start_in(secs: u64) -> String {
    let t = SystemTime::now() + Duration::from_secs(secs);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// Starts `elicitkit load ARGS --segment SEG --out OUT --run-id ID --quiet`.
fn spawn_segment(args: &[&str], seg: &str, out: &Path, id: &str) -> Running {
    let child = Command::new(BIN)
        .arg("load")
        .args(args)
        .args(["--segment", seg, "--run-id", id, "--quiet", "--out"])
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn elicitkit load");
    Running(Some(child))
}

fn summary(dir: &Path) -> Value {
    let t = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    serde_json::from_str(&t).expect("summary.json is JSON")
}

fn merge(logs: &[PathBuf], out: &Path) -> Output {
    Command::new(BIN)
        .args(["report", "merge"])
        .args(logs)
        .arg("--out")
        .arg(out)
        .output()
        .expect("run report merge")
}

/// Runs `n` segments of `args` at once with one start time; returns each
/// segment's report folder.
fn run_segments(args: &[&str], n: u32, out: &Path) -> Vec<PathBuf> {
    let at = start_in(8);
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--start-at", &at]);
    let segs: Vec<String> = (1..=n).map(|i| format!("{i}/{n}")).collect();
    let running: Vec<Running> = segs
        .iter()
        .enumerate()
        .map(|(i, s)| spawn_segment(&all, s, out, &format!("seg{}", i + 1)))
        .collect();
    let mut dirs = Vec::new();
    for (i, r) in running.into_iter().enumerate() {
        let o = r.wait();
        assert_eq!(
            o.status.code(),
            Some(0),
            "segment {}: {}\n{}",
            segs[i],
            stderr(&o),
            String::from_utf8_lossy(&o.stdout)
        );
        dirs.push(out.join(format!("seg{}", i + 1)));
    }
    dirs
}

fn sum(summaries: &[Value], key: &dyn Fn(&Value) -> &Value) -> u64 {
    summaries.iter().map(|s| n(key(s))).sum()
}

#[test]
fn three_open_segments_merge_into_the_whole_rate() {
    let server = EmbeddedServer::start(PathBuf::from(BIN), 2, &[]).expect("serve");
    let url = server.mcp_url();
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), PLAN);
    let dirs = run_segments(&["--plan", &plan, "--target", &url], 3, dir.path());
    let sums: Vec<Value> = dirs.iter().map(|d| summary(d)).collect();

    // Each segment says which it was and when it started, in the report and
    // in its log's header; each ran a third of the 180/s schedule.
    let mut starts = Vec::new();
    for (i, s) in sums.iter().enumerate() {
        let seg = format!("{}/3", i + 1);
        assert_eq!(
            s["settings"]["segment"],
            seg.as_str(),
            "{:#}",
            s["settings"]
        );
        assert!(
            s["settings"]["segment share"]
                .as_str()
                .unwrap_or("")
                .contains("40 round trips/s"),
            "{:#}",
            s["settings"]
        );
        assert!(s["settings"]["start at"].is_string(), "{:#}", s["settings"]);
        let hlog = std::fs::read_to_string(dirs[i].join("run.hlog")).unwrap();
        assert!(hlog.contains(&format!("#segment {seg} ")), "{hlog:.400}");
        let rts = n(&s["round_trips"]["total"]);
        // 120 of the whole's 360 arrivals are this segment's (round trips
        // cut off at the end count, as timeouts); one started after the
        // window (a late, CPU-starved wake-up) is left out.
        assert!((105..=120).contains(&rts), "segment {seg}: {rts}");
        starts.push(f(&s["window"]["from_unix"]));
    }
    // The windows line up on the shared start (not on each first round trip).
    let spread = starts.iter().cloned().fold(f64::MIN, f64::max)
        - starts.iter().cloned().fold(f64::MAX, f64::min);
    assert!(spread < 0.25, "window starts {starts:?}");

    let logs: Vec<PathBuf> = dirs.iter().map(|d| d.join("run.hlog")).collect();
    let merged_dir = dir.path().join("merged");
    let o = merge(&logs, &merged_dir);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        !stderr(&o).contains("segment"),
        "all three present: {}",
        stderr(&o)
    );
    let m = summary(&merged_dir);
    // Exact sums of the segments' counts.
    assert_eq!(
        n(&m["round_trips"]["total"]),
        sum(&sums, &|s| &s["round_trips"]["total"])
    );
    assert_eq!(n(&m["requests"]), sum(&sums, &|s| &s["requests"]));
    for k in ["success", "expected_rejection", "unexpected"] {
        assert_eq!(
            n(&m["round_trips"][k]),
            sum(&sums, &|s| &s["round_trips"][k]),
            "{k}"
        );
    }
    assert_eq!(m["settings"]["segments"], "1/3, 2/3, 3/3");
    // The merged rate is the whole plan's (120/s), not one segment's; 2
    // shared cores can start a few round trips late, hence the tolerance.
    let rps = f(&m["rps"]);
    assert!((100.0..=130.0).contains(&rps), "merged rate {rps}/s");
    server.stop();
}

#[test]
fn merge_refuses_a_log_twice_and_notes_a_missing_segment() {
    let server = EmbeddedServer::start(PathBuf::from(BIN), 1, &[]).expect("serve");
    let url = server.mcp_url();
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), PLAN);
    // Closed model: 5 users over 2 segments are 3 and 2 (k6's rounding).
    let dirs = run_segments(
        &[
            "--plan",
            &plan,
            "--target",
            &url,
            "--users",
            "5",
            "--duration",
            "2s",
        ],
        2,
        dir.path(),
    );
    server.stop();
    let sums: Vec<Value> = dirs.iter().map(|d| summary(d)).collect();
    assert_eq!(
        sums[0]["settings"]["load shape"],
        "3 users, launched at 3 per second"
    );
    assert_eq!(
        sums[1]["settings"]["load shape"],
        "2 users, launched at 2 per second"
    );
    assert_eq!(
        sums[1]["settings"]["segment users"],
        "users 3 to 4 of the whole run's 5"
    );
    for s in &sums {
        assert!(n(&s["round_trips"]["total"]) > 0, "{s:#}");
    }
    let logs: Vec<PathBuf> = dirs.iter().map(|d| d.join("run.hlog")).collect();

    let m_dir = dir.path().join("m");
    let o = merge(&logs, &m_dir);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let m = summary(&m_dir);
    assert_eq!(
        n(&m["round_trips"]["total"]),
        sum(&sums, &|s| &s["round_trips"]["total"])
    );

    // The same log twice, by path or by content: refused (exit 2).
    let o = merge(&[logs[0].clone(), logs[0].clone()], &dir.path().join("x"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("given twice"), "{}", stderr(&o));
    let copy = dir.path().join("copy.hlog");
    std::fs::copy(&logs[1], &copy).unwrap();
    let o = merge(&[logs[1].clone(), copy], &dir.path().join("y"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("same content"), "{}", stderr(&o));

    // One segment of two: merged, with a note that 2/2 is missing.
    let o = merge(&logs[..1], &dir.path().join("z"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("note: not all segments of 2 are present: missing 2/2"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_segments_and_start_times_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), PLAN);
    let past =
        humantime::format_rfc3339_seconds(SystemTime::now() - Duration::from_secs(60)).to_string();
    for (args, says) in [
        (vec!["--segment", "4/3"], "I must be between 1 and N (3)"),
        (vec!["--segment", "0/3"], "I must be between 1 and N"),
        (vec!["--segment", "two"], "expected I/N"),
        (
            vec!["--segment", "2/3", "--users", "2"],
            "leave this segment none",
        ),
        (vec!["--start-at", &past], "s ago"),
        (vec!["--start-at", "+48h"], "more than 24 h ahead"),
        (vec!["--start-at", "03:10"], "RFC 3339 UTC"),
    ] {
        let o = Command::new(BIN)
            .arg("load")
            .args(["--plan", &plan, "--quiet", "--out"])
            .arg(dir.path())
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    // Nothing ran: no report folder was written.
    let entries: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    assert!(entries.is_empty(), "{entries:?}");
}
