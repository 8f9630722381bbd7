//! Decline and cancel (§4.10, §6.B 20): answering `decline` or `cancel` to
//! every input request must end the call cleanly (a complete result,
//! `isError` optional, or a re-prompt), never a crash (5xx) or a hang. The
//! refusal has its own deadline ([`refusal_deadline`]): a server that does
//! not answer after a decline fails here with that said, rather than the
//! check timing out. A JSON-RPC error for a plain refusal is a WARN (§6.A 12).
//! The 2025-11-25 twins (`legacy-decline`, `legacy-cancel`,
//! [`legacy_checks`]) refuse pushed elicitations under the same deadline.

use super::flows::config;
use super::legacy_session::{Answer, call_tool, eliciting, ended, open, unanswered};
use super::model::Verdict;
use super::probe::{Probe, ToolProfile, all_modes};
use super::registry::{Check, check};
use crate::client::outcome::{ErrorClass, Outcome, RoundTrip};
use crate::client::policy::AnswerPolicy;
use crate::client::raw::Rpc;
use crate::findings::Severity;
use std::time::Duration;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-decline",
            "§4.10 / §6.B 20",
            Must,
            Modern,
            "declining ends the call with a result or a re-prompt, no crash or hang",
            decline
        ),
        check!(
            "mrtr-cancel",
            "§4.10 / §6.B 20",
            Must,
            Modern,
            "cancelling ends the call with a result or a re-prompt, no crash or hang",
            cancel
        ),
    ]
}

/// How long a call may take to answer a decline or a cancel: a third of the
/// check timeout (at least a second), so a hang is judged as one before the
/// check itself runs out of time.
pub fn refusal_deadline(p: &Probe) -> Duration {
    (p.settings().target.timeout / 3).max(Duration::from_secs(1))
}

/// Runs `tool` under `policy` with every request bounded by
/// [`refusal_deadline`].
pub async fn refuse_flow(p: &Probe, tool: &ToolProfile, policy: AnswerPolicy) -> RoundTrip {
    let bounded = p.bounded(refusal_deadline(p));
    bounded.flow(tool.call(), config(p, policy)).await
}

async fn refuse(p: Probe, policy: AnswerPolicy, what: &str) -> Verdict {
    let tools = p.target().eliciting_tools();
    if tools.is_empty() {
        return p.target().no_subject("no tool elicits");
    }
    let deadline = refusal_deadline(&p);
    let mut notes = Vec::new();
    let mut warns = Vec::new();
    for t in &tools {
        let rt = refuse_flow(&p, t, policy.clone()).await;
        match &rt.outcome {
            Outcome::Success | Outcome::ExpectedRejection { .. } => {
                let is_error = rt
                    .final_result
                    .as_ref()
                    .and_then(|r| r.get("isError"))
                    .and_then(serde_json::Value::as_bool)
                    .unwrap_or(false);
                notes.push(format!(
                    "{}: {}",
                    t.name,
                    if is_error {
                        "tool error result"
                    } else {
                        "result"
                    }
                ));
            }
            Outcome::Unexpected {
                class: ErrorClass::Timeout,
                message,
            } => {
                return Verdict::fail(format!(
                    "{}: no answer within {deadline:?} after {what}: the call hangs ({message})",
                    t.name
                ))
                .expecting(format!(
                    "the call ends promptly after a {what} (a result, a tool error or a re-prompt)"
                ));
            }
            Outcome::Unexpected {
                class: ErrorClass::ServerError,
                message,
            } => {
                warns.push(format!("{}: {message}", t.name));
            }
            Outcome::Unexpected { class, message } => {
                return Verdict::fail(format!("{} after {what}: {class}: {message}", t.name));
            }
            Outcome::Skipped(why) => notes.push(format!("{}: skipped ({why})", t.name)),
        }
    }
    if !warns.is_empty() {
        return Verdict::violation(
            Severity::Should,
            format!(
                "a protocol error answered a plain {what}: {}",
                warns.join("; ")
            ),
        )
        .expecting(format!(
            "a tool result (isError optional) for a {what}, not a JSON-RPC error"
        ));
    }
    Verdict::pass(notes.join("; "))
}

async fn decline(p: Probe) -> Verdict {
    refuse(p, AnswerPolicy::Decline, "decline").await
}

async fn cancel(p: Probe) -> Verdict {
    refuse(p, AnswerPolicy::Cancel, "cancel").await
}

/// The 2025-11-25 twins: declining and cancelling a pushed elicitation (§6.A 12).
pub fn legacy_checks() -> Vec<Check> {
    vec![
        check!(
            "legacy-decline",
            "§2.3, §4.10 / §6.A 12",
            Must,
            Legacy,
            "declining ends the call with a response, no crash or hang",
            legacy_decline
        ),
        check!(
            "legacy-cancel",
            "§2.3, §4.10 / §6.A 12",
            Must,
            Legacy,
            "cancelling ends the call with a response, no crash or hang",
            legacy_cancel
        ),
    ]
}

async fn legacy_refuse(p: Probe, answer: Answer, what: &str) -> Verdict {
    // The refusal has its own deadline: a hang is this check's finding, and
    // the first one ends the check (the others would hang as long).
    let deadline = refusal_deadline(&p);
    let bounded = p.bounded(deadline);
    let tools = eliciting(&p, &answer);
    if tools.is_empty() {
        return p.target().no_subject("no tool elicits");
    }
    let s = match open(&bounded, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::fail(e),
    };
    let mut lines = Vec::new();
    let mut protocol_errors = Vec::new();
    // Calls that showed no elicitation: nothing was refused, so they say
    // nothing about a refusal (a silent one ends the calls: they would
    // wait as long each).
    let mut untold = Vec::new();
    for t in &tools {
        let st = call_tool(&bounded, &s, t, answer.clone()).await;
        if let Some(why) = unanswered(&p, &t.name, &st) {
            untold.push(why);
            if st.response.is_none() {
                break;
            }
            continue;
        }
        match ended(&p, &t.name, &st) {
            Ok(line) => {
                if matches!(st.response, Some(Rpc::Error(_))) {
                    protocol_errors.push(line.clone());
                }
                lines.push(line);
            }
            Err(why) if why.contains("timeout") => {
                return Verdict::fail(format!(
                    "no answer within {deadline:?} after {what}: the call hangs ({why})"
                ))
                .expecting(format!(
                    "the call ends promptly after a {what} (a result, a tool error or an error)"
                ));
            }
            Err(why) => return Verdict::fail(format!("after {what}: {why}")),
        }
    }
    if !protocol_errors.is_empty() {
        return Verdict::violation(
            Severity::Should,
            format!(
                "a protocol error answered a plain {what}: {}",
                protocol_errors.join("; ")
            ),
        );
    }
    if lines.is_empty() {
        return Verdict::skip(format!(
            "could not tell: no {what} was sent: {}",
            untold.join("; ")
        ));
    }
    if !untold.is_empty() {
        lines.push(format!("could not tell: {}", untold.join("; ")));
    }
    Verdict::pass(lines.join("; "))
}

async fn legacy_decline(p: Probe) -> Verdict {
    legacy_refuse(p, Answer::Decline, "decline").await
}

async fn legacy_cancel(p: Probe) -> Verdict {
    legacy_refuse(p, Answer::Cancel, "cancel").await
}
