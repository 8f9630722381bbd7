//! Happy paths (§6.B 10): every eliciting tool completes when its input
//! requests are answered validly (URL pages completed as a browser would),
//! and a multi-round flow gets a *new* `requestState` each round. The
//! 2025-11-25 twin (`legacy-happy-path`, [`legacy_checks`]) answers pushed
//! elicitations on a session.

use super::legacy_session::{ended, run_answered};
use super::model::Verdict;
use super::probe::{Probe, ToolProfile, all_modes};
use super::registry::{Check, check};
use crate::client::modern::FlowConfig;
use crate::client::outcome::{Outcome, RoundTrip};
use crate::client::policy::AnswerPolicy;
use crate::client::raw::Rpc;
use crate::findings::Severity;
use std::collections::HashSet;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-happy-path",
            "§4.6 / §6.B 10",
            Must,
            Modern,
            "each eliciting tool completes when its requests are answered validly",
            happy_path;
            scenario "input-required-result-basic-elicitation"
        ),
        check!(
            "mrtr-multi-round-new-state",
            "§4.6 / §6.B 10",
            Must,
            Modern,
            "a multi-round flow gets a different requestState each round",
            multi_round;
            scenario "input-required-result-multi-round"
        ),
    ]
}

/// The flow config checks use: every capability, the run's seed.
pub fn config(p: &Probe, policy: AnswerPolicy) -> FlowConfig {
    let mut cfg = FlowConfig::with_policy(policy);
    cfg.capabilities = all_modes();
    cfg.seed = p.settings().target.seed;
    cfg.read_by_shape = true;
    cfg
}

/// Runs `tool` under `policy` with every capability.
pub async fn run_flow(p: &Probe, tool: &ToolProfile, policy: AnswerPolicy) -> RoundTrip {
    p.flow(tool.call(), config(p, policy)).await
}

fn describe(rt: &RoundTrip) -> String {
    match &rt.outcome {
        Outcome::Success => format!("completed in {} round(s)", rt.rounds),
        Outcome::ExpectedRejection { code, reason } => {
            format!("rejected (code {code:?}, reason {reason:?})")
        }
        Outcome::Unexpected { class, message } => format!("{class}: {message}"),
        Outcome::Skipped(why) => format!("skipped: {why}"),
    }
}

async fn happy_path(p: Probe) -> Verdict {
    let tools = p.target().page_safe_tools();
    let off = p.target().off_origin_notes();
    if tools.is_empty() && off.is_empty() {
        return p.target().no_subject("no tool elicits");
    }
    let mut ok = Vec::new();
    let mut bad = Vec::new();
    for t in &tools {
        let rt = run_flow(&p, t, AnswerPolicy::AcceptValid).await;
        let mut line = format!("{}: {}", t.name, describe(&rt));
        if t.undeclared_rounds() {
            line.push_str(
                " (its rounds say no resultType, read by their shape: see mrtr-result-type)",
            );
        }
        if rt.outcome == Outcome::Success {
            ok.push(line);
        } else {
            bad.push(line);
        }
    }
    if !bad.is_empty() {
        return Verdict::fail(bad.join("; "));
    }
    if !off.is_empty() {
        ok.extend(off);
        return Verdict::violation(crate::findings::Severity::Info, ok.join("; "));
    }
    Verdict::pass(ok.join("; "))
}

async fn multi_round(p: Probe) -> Verdict {
    let tools = p.target().page_safe_tools();
    let mut seen_multi = Vec::new();
    for t in &tools {
        let rt = run_flow(&p, t, AnswerPolicy::AcceptValid).await;
        if rt.request_states.len() < 2 {
            continue;
        }
        let distinct: HashSet<&String> = rt.request_states.iter().collect();
        if distinct.len() != rt.request_states.len() {
            return Verdict::fail(format!(
                "{}: {} rounds but only {} distinct requestStates",
                t.name,
                rt.request_states.len(),
                distinct.len()
            ));
        }
        seen_multi.push(format!("{} ({} states)", t.name, rt.request_states.len()));
    }
    if seen_multi.is_empty() {
        return Verdict::skip("no tool issued more than one requestState");
    }
    Verdict::pass(format!(
        "every round had a new state: {}",
        seen_multi.join(", ")
    ))
}

/// The 2025-11-25 twin: the happy path on a session (§3.2).
pub fn legacy_checks() -> Vec<Check> {
    vec![check!(
        "legacy-happy-path",
        "§3.2",
        Must,
        Legacy,
        "each eliciting tool finishes with a result when answered validly",
        legacy_happy_path
    )]
}

async fn legacy_happy_path(p: Probe) -> Verdict {
    let runs = match run_answered(&p).await {
        Ok(r) => r,
        Err(v) => return v,
    };
    let mut ok = Vec::new();
    for (t, s) in &runs {
        match (&s.response, ended(&p, &t.name, s)) {
            (Some(Rpc::Result(_)), Ok(line)) => ok.push(line),
            (_, Ok(line)) | (_, Err(line)) => return Verdict::fail(line),
        }
    }
    let off = p.target().off_origin_notes();
    if !off.is_empty() {
        ok.extend(off);
        return Verdict::violation(Severity::Info, ok.join("; "));
    }
    Verdict::pass(ok.join("; "))
}
