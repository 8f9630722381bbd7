//! Rules of the stdio transport, judged from what the server's processes
//! did over the whole run ([`crate::stdio::Log`]): stdout carries nothing
//! but MCP messages, and the process does not exit while it serves. They
//! run once, after every other check, on stdio targets only.

use super::model::Verdict;
use super::probe::Probe;
use super::registry::{Check, check};

/// The modern-generation checks.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-stdio-clean-stdout",
            "§stdio",
            Must,
            Modern,
            "a stdio server writes nothing but MCP messages to stdout",
            clean_stdout,
            whole_run
        ),
        check!(
            "mrtr-stdio-stays-up",
            "§stdio",
            Must,
            Modern,
            "a stdio server does not exit while it serves, whatever it is sent",
            stays_up,
            whole_run
        ),
    ]
}

/// The 2025-11-25 twins (for a server that speaks only that generation).
pub fn legacy_checks() -> Vec<Check> {
    vec![
        check!(
            "legacy-stdio-clean-stdout",
            "§stdio",
            Must,
            Legacy,
            "a stdio server writes nothing but MCP messages to stdout",
            clean_stdout,
            whole_run
        ),
        check!(
            "legacy-stdio-stays-up",
            "§stdio",
            Must,
            Legacy,
            "a stdio server does not exit while it serves, whatever it is sent",
            stays_up,
            whole_run
        ),
    ]
}

fn log(p: &Probe) -> Option<std::sync::Arc<crate::stdio::Log>> {
    p.settings().stdio.as_ref().map(|s| s.log.clone())
}

async fn clean_stdout(p: Probe) -> Verdict {
    let Some(log) = log(&p) else {
        return Verdict::NotApplicable("the target speaks HTTP".into());
    };
    let n = log.noise_count();
    if n == 0 {
        return Verdict::pass(format!(
            "every stdout line of {} process(es) was a JSON-RPC message",
            log.spawn_count()
        ));
    }
    let lines: Vec<String> = log.noise_lines().iter().map(|l| format!("  {l}")).collect();
    Verdict::fail(format!(
        "{n} stdout line(s) were not JSON-RPC messages (a client drops the connection on the \
         first); the first:\n{}",
        lines.join("\n")
    ))
    .expecting("logs on stderr; stdout carries only newline-delimited JSON-RPC messages")
}

async fn stays_up(p: Probe) -> Verdict {
    let Some(log) = log(&p) else {
        return Verdict::NotApplicable("the target speaks HTTP".into());
    };
    let crashes = log.crashes();
    if crashes.is_empty() {
        return Verdict::pass(format!(
            "{} process(es) started; none exited on its own",
            log.spawn_count()
        ));
    }
    // Every distinct status with its count, in order of first exit: the
    // first exit alone may be a kill that hides the crash that matters.
    let mut statuses: Vec<(&str, usize)> = Vec::new();
    for c in &crashes {
        match statuses.iter_mut().find(|(s, _)| *s == c.status) {
            Some((_, n)) => *n += 1,
            None => statuses.push((&c.status, 1)),
        }
    }
    let statuses: Vec<String> = statuses.iter().map(|(s, n)| format!("{s} ×{n}")).collect();
    let first = &crashes[0];
    let tail = first.stderr_last(8);
    Verdict::fail(format!(
        "{} of {} process(es) exited while serving ({}); the first (pid {}) with {}{}",
        crashes.len(),
        log.spawn_count(),
        statuses.join(", "),
        first.pid,
        first.status,
        if tail.is_empty() {
            "; nothing on stderr".to_owned()
        } else {
            format!("; its stderr ends:\n  {}", tail.join("\n  "))
        }
    ))
    .expecting("an error reply for a request the server cannot serve; the process keeps running")
}
