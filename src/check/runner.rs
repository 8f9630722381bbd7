//! Runs checks: at most `concurrency` at a time, each under the per-check
//! timeout and all under the overall deadline, so the run always ends. A
//! check that does not finish in time is reported as `timeout` with the
//! evidence it gathered so far. Checks that read the server's state before
//! and after an action, or time its replies, run alone ([`Needs::alone`](super::Needs::alone)):
//! another check's calls would change what they read.

use super::model::{CheckResult, Status, Verdict};
use super::probe::{Probe, Target};
use super::registry::Check;
use crate::client::ReplyStatus;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Runs `checks` that apply to the target's generation against it and
/// returns one row per check, in the order given.
pub async fn run_checks(target: Arc<Target>, checks: &[Check]) -> Vec<CheckResult> {
    let deadline = Instant::now() + target.settings.deadline;
    run_checks_until(target, checks, deadline).await
}

/// [`run_checks`] under an overall deadline shared with other runs (one per
/// generation in a run that checks both).
pub async fn run_checks_until(
    target: Arc<Target>,
    checks: &[Check],
    deadline: Instant,
) -> Vec<CheckResult> {
    let settings = &target.settings;
    let per_check = settings.target.timeout;
    let permits = Arc::new(Semaphore::new(settings.concurrency.max(1)));
    let alone = Arc::new(tokio::sync::RwLock::new(()));
    let mut handles = Vec::new();
    let board = Arc::new(Board::default());
    for check in checks
        .iter()
        .copied()
        .filter(|c| c.generation == target.generation)
    {
        let target = target.clone();
        let permits = permits.clone();
        let alone = alone.clone();
        let board = board.clone();
        handles.push((
            check,
            tokio::spawn(async move {
                let body = async {
                    let _permit = permits.acquire_owned().await.ok();
                    let _running = board.start(check.id);
                    if check.needs.alone {
                        let _only = alone.write().await;
                        run_one(check, target, per_check, deadline).await
                    } else {
                        let _shared = alone.read().await;
                        run_one(check, target, per_check, deadline).await
                    }
                };
                tokio::select! {
                    r = body => r,
                    () = super::interrupt::wait() => row(
                        check,
                        Status::Skip(super::interrupt::SKIPPED.into()),
                        String::new(),
                        Duration::ZERO,
                        Vec::new(),
                    ),
                }
            }),
        ));
    }
    let ticker = settings.progress.then(|| {
        let (board, total, g) = (board.clone(), handles.len(), target.generation);
        tokio::spawn(async move {
            let mut line = crate::load::exec::progress::ProgressLine::new(false);
            while !board.finished.load(std::sync::atomic::Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(250)).await;
                if line.due() {
                    line.print(&crate::load::exec::progress::fit(
                        &board.line(g, total),
                        crate::load::exec::progress::width(),
                    ));
                }
            }
            line.finish();
        })
    });
    let mut out = Vec::with_capacity(handles.len());
    for (check, h) in handles {
        match h.await {
            Ok(r) => out.push(r),
            Err(e) => out.push(row(
                check,
                Status::Skip(format!("elicitkit internal error: {e}")),
                String::new(),
                Duration::ZERO,
                Vec::new(),
            )),
        }
    }
    board
        .finished
        .store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(t) = ticker {
        let _ = t.await;
    }
    out
}

/// Which checks are running and how many are done, for the progress line.
#[derive(Debug, Default)]
struct Board {
    state: std::sync::Mutex<(Vec<&'static str>, usize)>,
    finished: std::sync::atomic::AtomicBool,
}

/// A check on the [`Board`]: counted done when dropped.
struct Running<'a> {
    board: &'a Board,
    id: &'static str,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if let Ok(mut s) = self.board.state.lock() {
            s.0.retain(|r| *r != self.id);
            s.1 += 1;
        }
    }
}

impl Board {
    fn start(&self, id: &'static str) -> Running<'_> {
        if let Ok(mut s) = self.state.lock() {
            s.0.push(id);
        }
        Running { board: self, id }
    }

    /// `check 2026-07-28: 12/44 done, running mrtr-isolation, …`.
    fn line(&self, g: crate::protocol::Generation, total: usize) -> String {
        let (running, done) = self
            .state
            .lock()
            .map(|s| (s.0.join(", "), s.1))
            .unwrap_or_default();
        format!("elicitkit check {g}: {done}/{total} done, running {running}")
    }
}

/// Runs one check under `per_check` and `deadline`.
pub async fn run_one(
    check: Check,
    target: Arc<Target>,
    per_check: Duration,
    deadline: Instant,
) -> CheckResult {
    let stdio = target.settings.stdio.is_some();
    let check = check.worded_for(stdio);
    let now = Instant::now();
    let Some(left) = deadline
        .checked_duration_since(now)
        .filter(|d| !d.is_zero())
    else {
        let why = "not run: the overall --deadline passed before this check started";
        return row(
            check,
            Status::Inconclusive(why.into()),
            why.into(),
            Duration::ZERO,
            Vec::new(),
        );
    };
    if let Some(why) = super::transport::not_applicable(&check, &target) {
        return row(
            check,
            Status::NotApplicable(why.clone()),
            why,
            Duration::ZERO,
            Vec::new(),
        );
    }
    let extra = if check.needs.expiry {
        super::replay::longest_wait(&target.settings)
    } else {
        Duration::ZERO
    };
    let own = per_check + extra;
    let budget = own.min(left);
    // A budget the deadline cut: running out of it is the setting's doing.
    let cut = budget < own;
    let probe = Probe::new(target);
    let started = Instant::now();
    let verdict = tokio::time::timeout(budget, (check.run)(probe.clone())).await;
    let elapsed = started.elapsed();
    let mut expected = None;
    let (status, detail) = match verdict {
        Err(_) if cut => {
            let why = format!(
                "cut short: the overall --deadline left this check {budget:?} of its \
                 {own:?}, and it had no verdict then"
            );
            (Status::Inconclusive(why.clone()), why)
        }
        Ok(Verdict::Violation { detail, .. }) if cut && elapsed >= budget => {
            let why = format!(
                "cut short: the overall --deadline left this check {budget:?} of its \
                 {own:?} ({detail})"
            );
            (Status::Inconclusive(why.clone()), why)
        }
        Err(_) => (
            Status::Timeout,
            format!("timeout: no verdict within {budget:?} (the server hung or is too slow)"),
        ),
        // A request inside the check ran into the same budget and the check
        // concluded from that: it is still a timeout, not a judged failure.
        Ok(Verdict::Violation { detail, .. }) if elapsed >= budget => (
            Status::Timeout,
            format!("timeout: the check used its whole {budget:?} ({detail})"),
        ),
        Ok(Verdict::Pass(d)) => (Status::Pass, d),
        Ok(Verdict::Skip(r)) => (Status::Skip(r.clone()), r),
        Ok(Verdict::NotApplicable(r)) => (Status::NotApplicable(r.clone()), r),
        Ok(Verdict::Inconclusive(r)) => (Status::Inconclusive(r.clone()), r),
        Ok(Verdict::Violation {
            severity,
            detail,
            expected: e,
        }) => {
            expected = e;
            (
                Status::for_violation(severity.unwrap_or(check.severity)),
                detail,
            )
        }
    };
    let evidence = probe.evidence();
    // Over stdio a 502 may be the bridge's: the server's process was gone.
    // That is one root cause, the stdio-stays-up row's (it names the exit
    // status and stderr); here the check could not tell, and the status is
    // not the server's.
    let gone = stdio
        .then(|| {
            evidence
                .iter()
                .find_map(|e| crate::stdio::bridge::gone(&e.response))
        })
        .flatten();
    if let Some(line) = gone {
        // The detail names no bridge status: flows, raw replies and checks
        // word them as the pipe saw them (`client::ReplyStatus`).
        let why = format!(
            "not run: {line} ({}-stdio-stays-up reports the exit); the check otherwise {}: {detail}",
            check.id.split('-').next().unwrap_or("mrtr"),
            was(&status),
        );
        let mut r = row(
            check,
            Status::Inconclusive(why.clone()),
            why,
            elapsed,
            evidence,
        );
        r.actual = None;
        return r;
    }
    let (status, detail, crashed) = server_errors_fail(status, detail, &evidence, stdio);
    let mut r = row(check, status, detail, elapsed, evidence);
    if crashed {
        r.expected = "no 5xx reply, whatever the request (a server error is a failure \
                      whatever the check saw after it)"
            .into();
    } else if let Some(e) = expected {
        r.expected = e;
    }
    if r.is_finding() {
        r.actual = Some(r.detail.clone());
    }
    r
}

/// A 5xx reply anywhere in a check's exchanges fails the row, whatever the
/// check concluded from what followed it (a crash seen once is not undone
/// by a recovery, a skip or a timeout). Returns whether it did. Over
/// `stdio` the status is the bridge's, worded as what the pipe saw.
fn server_errors_fail(
    status: Status,
    detail: String,
    evidence: &[super::model::Exchange],
    stdio: bool,
) -> (Status, String, bool) {
    let mut seen: Vec<(String, usize)> = Vec::new();
    for e in evidence {
        if let Some(s) = e.status.filter(|s| *s >= 500) {
            let what = format!("{} on '{}'", ReplyStatus::new(s, stdio), e.label);
            match seen.iter_mut().find(|(w, _)| *w == what) {
                Some((_, n)) => *n += 1,
                None => seen.push((what, 1)),
            }
        }
    }
    let seen: Vec<String> = seen
        .into_iter()
        .map(|(w, n)| if n > 1 { format!("{w} (x{n})") } else { w })
        .collect();
    let was = match &status {
        _ if seen.is_empty() => return (status, detail, false),
        Status::Fail => return (status, detail, false),
        other => was(other),
    };
    (
        Status::Fail,
        format!(
            "server error: {}; the check otherwise {was}: {detail}",
            seen.join(", ")
        ),
        true,
    )
}

/// What a row with `status` did, in a word or two (`passed`, `failed`).
fn was(status: &Status) -> &'static str {
    match status {
        Status::Pass => "passed",
        Status::Fail => "failed",
        Status::Warn => "warned",
        Status::Info => "noted",
        Status::Skip(_) => "skipped",
        Status::NotApplicable(_) => "did not apply",
        Status::Timeout => "timed out",
        Status::Inconclusive(_) => "was cut short",
    }
}

fn row(
    check: Check,
    status: Status,
    detail: String,
    elapsed: Duration,
    evidence: Vec<super::model::Exchange>,
) -> CheckResult {
    CheckResult {
        id: check.id,
        rule: check.rule,
        severity: check.severity,
        generation: check.generation,
        title: check.title,
        status,
        detail,
        expected: check.title.to_owned(),
        actual: None,
        link: super::links::spec_link(check.generation, check.rule),
        elapsed,
        evidence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::model::Exchange;

    fn ex(label: &str, status: Option<u16>) -> Exchange {
        Exchange {
            label: label.into(),
            request: String::new(),
            response: String::new(),
            status,
        }
    }

    #[test]
    fn a_5xx_fails_the_row_whatever_the_check_concluded() {
        let log = [
            ex("tools/call a", Some(200)),
            ex("tools/call b", Some(503)),
            ex("tools/call b", Some(503)),
        ];
        for before in [
            Status::Pass,
            Status::Warn,
            Status::Info,
            Status::Skip("the server stopped answering".into()),
            Status::Timeout,
        ] {
            let (s, d, crashed) = server_errors_fail(before.clone(), "x".into(), &log, false);
            assert_eq!(s, Status::Fail, "{before:?}");
            assert!(crashed);
            assert!(
                d.starts_with("server error: HTTP 503 on 'tools/call b' (x2);"),
                "{d}"
            );
            assert!(d.ends_with(": x"), "{d}");
        }
    }

    /// A check that needs 2 s to conclude PASS.
    fn slow() -> Check {
        Check {
            id: "mrtr-slow",
            rule: "§0",
            severity: crate::findings::Severity::Must,
            generation: crate::protocol::Generation::Modern,
            title: "slow",
            run: |_| {
                futures::FutureExt::boxed(async {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    Verdict::pass("done")
                })
            },
            source: file!(),
            needs: super::super::Needs::NONE,
            stdio_title: None,
            scenario: None,
        }
    }

    #[tokio::test]
    async fn a_check_the_deadline_cuts_short_is_inconclusive_not_a_timeout() {
        let target = |timeout: Duration| {
            let mut s = super::super::Settings::new("http://127.0.0.1:9/mcp");
            s.target.timeout = timeout;
            let g = crate::protocol::Generation::Modern;
            Arc::new(Target::new(s, reqwest::Client::new(), g))
        };
        let soon = Instant::now() + Duration::from_millis(100);
        let r = run_one(
            slow(),
            target(Duration::from_secs(10)),
            Duration::from_secs(10),
            soon,
        )
        .await;
        assert!(
            matches!(&r.status, Status::Inconclusive(w) if w.contains("--deadline")),
            "{r:?}"
        );
        assert!(!r.is_failure());
        let r = run_one(
            slow(),
            target(Duration::from_secs(10)),
            Duration::from_secs(10),
            Instant::now(),
        )
        .await;
        assert!(
            matches!(&r.status, Status::Inconclusive(w) if w.contains("not run")),
            "{r:?}"
        );
        // Its own timeout, not the deadline's: a timeout still.
        let later = Instant::now() + Duration::from_secs(60);
        let short = Duration::from_millis(100);
        let r = run_one(slow(), target(short), short, later).await;
        assert_eq!(r.status, Status::Timeout, "{r:?}");
    }

    #[test]
    fn without_a_5xx_the_verdict_stands() {
        let log = [ex("a", Some(200)), ex("b", Some(404)), ex("c", None)];
        for before in [Status::Pass, Status::Warn, Status::Timeout] {
            let (s, d, crashed) = server_errors_fail(before.clone(), "x".into(), &log, false);
            assert_eq!((s, d.as_str(), crashed), (before, "x", false));
        }
        let (s, d, crashed) =
            server_errors_fail(Status::Fail, "own".into(), &[ex("a", Some(500))], false);
        assert_eq!((s, d.as_str(), crashed), (Status::Fail, "own", false));
    }
}
