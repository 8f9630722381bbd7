//! SIGTERM ends a run as Ctrl-C does: the run stops, its report is written
//! and marked INTERRUPTED, and the process exits 143 (Kubernetes stops a
//! pod with SIGTERM; before, `load` died with 143 and wrote no summary,
//! and `fuzz` wrote no summary either). One test per kind of run: closed
//! and open model, a capacity search, a soak, a fuzz campaign, and the
//! Kubernetes Job's shell, which must pass the signal on.

use crate::support::load::{BIN, write_plan};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `elicitkit ARGS`, waits until `ready` holds (at most 60 s),
/// lets it run `then` more, sends SIGTERM and returns its exit code.
fn terminate(mut cmd: Command, ready: impl Fn() -> bool, then: Duration) -> Option<i32> {
    let mut child: Child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let started = Instant::now();
    while !ready() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("it ended before the signal: {status}");
        }
        assert!(started.elapsed() < Duration::from_secs(60), "never ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(then);
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let stopped = Instant::now();
    let status = child.wait().unwrap();
    assert!(
        stopped.elapsed() < Duration::from_secs(20),
        "it took {:?} to stop",
        stopped.elapsed()
    );
    status.code()
}

fn load_cmd(args: &[&str], out: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.arg("load")
        .args(args)
        .arg("--out")
        .arg(out)
        .args(["--run-id", "run", "--quiet"]);
    c
}

fn summary(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("run/summary.json"))
        .unwrap_or_else(|e| panic!("no summary.json: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// The report is there and says the run was stopped by SIGTERM.
fn assert_marked(dir: &Path, code: Option<i32>) -> Value {
    assert_eq!(code, Some(143));
    let s = summary(dir);
    assert_eq!(s["verdict"], "interrupted", "{s:#}");
    assert_eq!(s["ended_by"], "interrupted", "{s:#}");
    assert!(
        s["end_note"]
            .as_str()
            .unwrap_or_default()
            .contains("SIGTERM"),
        "{:#}",
        s["end_note"]
    );
    for f in ["report.html", "summary.md", "metrics.prom"] {
        assert!(dir.join("run").join(f).is_file(), "{f} missing");
    }
    s
}

const PLAN: &str = "name = \"sig\"\ntimeout = \"5s\"\n[scenarios.form-accept]\ntool = \"deploy\"\n\
                    arguments = { service = \"web\" }\n";

#[test]
fn sigterm_keeps_the_report_of_a_closed_and_an_open_model_run() {
    for shape in [["--users", "2"], ["--rate", "50"]] {
        let dir = tempfile::tempdir().unwrap();
        let plan = write_plan(dir.path(), PLAN);
        let run_dir = dir.path().join("run");
        let cmd = load_cmd(
            &["--plan", &plan, "--duration", "60s", shape[0], shape[1]],
            dir.path(),
        );
        let code = terminate(cmd, || run_dir.is_dir(), Duration::from_secs(3));
        let s = assert_marked(dir.path(), code);
        assert!(
            s["round_trips"]["total"].as_u64().unwrap_or(0) > 0,
            "{shape:?}: the seconds measured are kept: {s:#}"
        );
    }
}

#[test]
fn sigterm_keeps_the_steps_of_a_capacity_search() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(
        dir.path(),
        &format!(
            "{PLAN}[capacity]\nstart_rate = 20\nstep = 20\nmax_rate = 2000\n\
             step_duration = \"1s\"\nslo = [\"error_rate < 50%\"]\nsamples = 1\nhost_noise = 64\nhost_spare = 0\n"
        ),
    );
    let run_dir = dir.path().join("run");
    let cmd = load_cmd(&["--plan", &plan, "--capacity"], dir.path());
    // Two steps in (their .hlog files are written as each sample ends).
    let ready = || {
        std::fs::read_dir(&run_dir).is_ok_and(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("capacity-"))
                .count()
                >= 2
        })
    };
    let code = terminate(cmd, ready, Duration::from_millis(300));
    let s = assert_marked(dir.path(), code);
    let c = &s["capacity"];
    assert!(
        c["steps"].as_array().is_some_and(|v| v.len() >= 2),
        "the steps so far are kept: {c:#}"
    );
    assert_eq!(c["knee_status"], "stopped", "{c:#}");
}

#[test]
fn sigterm_keeps_the_report_of_a_soak() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), PLAN);
    let run_dir = dir.path().join("run");
    let cmd = load_cmd(
        &["--plan", &plan, "--soak", "2m", "--rate", "20"],
        dir.path(),
    );
    let code = terminate(cmd, || run_dir.is_dir(), Duration::from_secs(4));
    let s = assert_marked(dir.path(), code);
    assert!(
        s["health"]["samples"]
            .as_array()
            .is_some_and(|v| !v.is_empty()),
        "{s:#}"
    );
}

#[test]
fn sigterm_keeps_a_fuzz_campaigns_summary_and_repro_scripts() {
    let server = crate::support::serve::serve(&["--flaw", "crash-on-decline"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fuzz-out");
    let mut cmd = Command::new(BIN);
    cmd.args(["fuzz", "--target", &server.mcp_url(), "--duration", "5m"])
        .args(["--run-id", "f", "--quiet"])
        .arg("--out")
        .arg(&out);
    let fuzz_dir = out.join("f/fuzz");
    // Stopped once the first finding is filed (its folder holds repro.sh).
    let found = || {
        std::fs::read_dir(&fuzz_dir)
            .is_ok_and(|d| d.flatten().any(|e| e.path().join("repro.sh").is_file()))
    };
    let code = terminate(cmd, found, Duration::from_millis(500));
    assert_eq!(code, Some(143));
    let s: Value = serde_json::from_str(
        &std::fs::read_to_string(fuzz_dir.join("summary.json")).expect("summary.json"),
    )
    .unwrap();
    assert!(
        s["stopped"]
            .as_str()
            .unwrap_or_default()
            .contains("SIGTERM"),
        "{:#}",
        s["stopped"]
    );
    let md = std::fs::read_to_string(fuzz_dir.join("summary.md")).expect("summary.md");
    assert!(md.contains("SIGTERM"), "{md}");
    assert!(
        s["findings"].as_array().is_some_and(|f| !f.is_empty()),
        "{s:#}"
    );
}

/// The Indexed Job's container command runs under `/bin/sh -c` as PID 1,
/// which passes no signal on by itself: the script forwards SIGTERM to
/// elicitkit and waits for its report. Run here as the pod would (the
/// manifest's own script, its paths pointed at a scratch folder).
#[test]
fn the_k8s_job_script_forwards_sigterm_and_keeps_the_report() {
    let script = super::k8s_manifests::job_script();
    let server = crate::support::serve::serve(&[]);
    let dir = tempfile::tempdir().unwrap();
    let plan_at = write_plan(
        dir.path(),
        "name = \"k8s\"\nduration = \"60s\"\ntimeout = \"5s\"\n[load]\nrate = 30\n\
         [scenarios.form-accept]\ntool = \"deploy\"\narguments = { service = \"web\" }\n",
    );
    let script = script
        .replace("/plan/plan.toml", &plan_at)
        .replace("/results/", &format!("{}/", dir.path().display()));
    let bin_dir = Path::new(BIN).parent().unwrap();
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", &script])
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
        .env("JOB_COMPLETION_INDEX", "0")
        .env("SEGMENTS", "1")
        .env("START_AT", "+1s")
        .env("TARGET", server.mcp_url())
        .env("RUN", "run");
    let seg = dir.path().join("run/segment-1-of-1");
    let code = terminate(cmd, || seg.is_dir(), Duration::from_secs(3));
    assert_eq!(code, Some(143), "the shell exits with elicitkit's code");
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(seg.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["verdict"], "interrupted", "{s:#}");
    assert!(
        s["end_note"]
            .as_str()
            .unwrap_or_default()
            .contains("SIGTERM")
    );
}

/// Ctrl-C in the warm-up: the run is interrupted, and its thresholds are
/// not judged on the little it measured (before: ten FAIL lines, and
/// "every scenario had a success" beside them).
#[test]
fn an_interrupted_run_does_not_judge_its_thresholds() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), PLAN);
    let run_dir = dir.path().join("run");
    let child = load_cmd(
        &[
            "--plan",
            &plan,
            "--warmup",
            "30s",
            "--duration",
            "10s",
            "--users",
            "2",
        ],
        dir.path(),
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let t0 = Instant::now();
    while !run_dir.is_dir() {
        assert!(t0.elapsed() < Duration::from_secs(60), "never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stdout}");
    assert!(stdout.contains("INTERRUPTED"), "{stdout}");
    assert!(
        stdout.contains("thresholds: not judged, the run was interrupted"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("FAIL") && !stdout.contains("had a success"),
        "{stdout}"
    );
}
