//! Rules of the stdio transport, judged from what the server's processes
//! did over the whole run ([`crate::stdio::Log`]): stdout carries nothing
//! but MCP messages, and the process does not exit while it serves. They
//! run once, after every other check, on stdio targets only. On a server
//! that speaks both generations each generation's rules judge its own
//! processes (2025-11-25 sessions; the processes 2026-07-28 requests
//! share), so one cause is one row; on one generation they judge all.

use super::model::Verdict;
use super::probe::Probe;
use super::registry::{Check, check};
use crate::protocol::Generation;
use crate::stdio::log::Kind;

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

/// The 2025-11-25 twins.
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

/// The processes this generation's rules judge: its own when the run
/// checks two generations, else every one.
fn processes(p: &Probe) -> Kind {
    match (p.target().generations.len() > 1, p.target().generation) {
        (false, _) => Kind::All,
        (true, Generation::Legacy) => Kind::Sessions,
        (true, Generation::Modern) => Kind::Shared,
    }
}

/// `processes` in words, for the verdicts.
fn of(k: Kind) -> &'static str {
    match k {
        Kind::All => "",
        Kind::Sessions => " of 2025-11-25 sessions",
        Kind::Shared => " shared by 2026-07-28 requests",
    }
}

async fn clean_stdout(p: Probe) -> Verdict {
    let Some(log) = log(&p) else {
        return Verdict::NotApplicable("the target speaks HTTP".into());
    };
    let k = processes(&p);
    let n = log.noise_count_of(k);
    if n == 0 {
        return Verdict::pass(format!(
            "every stdout line of {} process(es){} was a JSON-RPC message",
            log.spawn_count_of(k),
            of(k)
        ));
    }
    let lines: Vec<String> = log
        .noise_lines_of(k)
        .iter()
        .map(|l| format!("  {l}"))
        .collect();
    Verdict::fail(format!(
        "{n} stdout line(s) of the processes{} were not JSON-RPC messages (a client drops the \
         connection on the first); the first:\n{}",
        of(k),
        lines.join("\n")
    ))
    .expecting("logs on stderr; stdout carries only newline-delimited JSON-RPC messages")
}

async fn stays_up(p: Probe) -> Verdict {
    let Some(log) = log(&p) else {
        return Verdict::NotApplicable("the target speaks HTTP".into());
    };
    let k = processes(&p);
    let crashes = log.crashes_of(k);
    if crashes.is_empty() {
        return Verdict::pass(format!(
            "{} process(es){} started; none exited on its own",
            log.spawn_count_of(k),
            of(k)
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
        "{} of {} process(es){} exited while serving ({}); the first (pid {}) with {}{}",
        crashes.len(),
        log.spawn_count_of(k),
        of(k),
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
