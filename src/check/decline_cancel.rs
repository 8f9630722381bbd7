//! Decline and cancel (§4.10, §6.B 20): answering `decline` or `cancel` to
//! every input request must end the call cleanly (a complete result,
//! `isError` optional, or a re-prompt), never a crash (5xx) or a hang. The
//! refusal has its own deadline ([`refusal_deadline`]): a server that does
//! not answer after a decline fails here with that said, rather than the
//! check timing out. A JSON-RPC error for a plain refusal is a WARN (§6.A 12).

use super::flows::config;
use super::model::Verdict;
use super::probe::{Probe, ToolProfile};
use super::registry::{Check, check};
use crate::client::outcome::{ErrorClass, Outcome, RoundTrip};
use crate::client::policy::AnswerPolicy;
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
    (p.settings().timeout / 3).max(Duration::from_secs(1))
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
