//! Whether a completion had an effect (S7, S8): a replayed request or a
//! changed state completing matters only when the call did something. Seen
//! from outside, the one outcome known to do nothing is a refusal, so the
//! control is the same tool's flow with every input request declined: a
//! completion that reads exactly like that decline did nothing (a server
//! that answers "not approved" to a decline and to an accept whose
//! approval field is false). A completion that reads otherwise acted; a
//! decline that got no reply cannot tell.

use crate::client::raw::Rpc;
use serde_json::{Value, json};

/// How one retry ended, as far as these rules compare replies.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A final success, with what it said (`content`, `structuredContent`).
    Completed(Value),
    /// A reply that did not complete: an error, a re-prompt, a tool error.
    Other,
    /// No reply at all (a transport failure, a timeout): says nothing of
    /// what the server does with the request.
    Unanswered,
}

impl Outcome {
    /// The outcome of a reply.
    pub fn of(rpc: &Rpc) -> Self {
        match rpc {
            Rpc::Result(v) if rpc.completes() => Outcome::Completed(json!({
                "content": v.get("content"),
                "structuredContent": v.get("structuredContent"),
            })),
            _ => Outcome::Other,
        }
    }
}

/// What the decline control shows of a completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// It read otherwise than a decline: the call acted.
    Acted,
    /// It read exactly like a decline: the call did nothing.
    Nothing,
    /// The decline got no reply: whether it acted cannot be told.
    Unknown,
}

impl Effect {
    /// Words for a note or a finding.
    pub fn why(&self) -> &'static str {
        match self {
            Effect::Acted => "it completed otherwise than the same flow declined, so it acted",
            Effect::Nothing => {
                "it completed exactly like the same flow declined: the call did nothing"
            }
            Effect::Unknown => {
                "the same flow declined got no reply, so whether the call acted could not be told"
            }
        }
    }
}

/// Judges a `completed` outcome against the `declined` control.
pub fn judge(completed: &Outcome, declined: &Outcome) -> Effect {
    match declined {
        Outcome::Unanswered => Effect::Unknown,
        d if d == completed => Effect::Nothing,
        _ => Effect::Acted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(text: &str) -> Outcome {
        Outcome::Completed(json!({"content": [{"type": "text", "text": text}]}))
    }

    #[test]
    fn a_completion_like_a_decline_did_nothing() {
        assert_eq!(
            judge(&done("not approved"), &done("not approved")),
            Effect::Nothing
        );
        assert_eq!(
            judge(&done("deployed"), &done("not approved")),
            Effect::Acted
        );
        // A decline answered with an error or a re-prompt: the completion acted.
        assert_eq!(judge(&done("deployed"), &Outcome::Other), Effect::Acted);
        assert_eq!(
            judge(&done("deployed"), &Outcome::Unanswered),
            Effect::Unknown
        );
    }

    #[test]
    fn outcomes_compare_what_the_result_said() {
        let a = Rpc::Result(json!({"resultType": "complete", "content": [1], "_meta": {"a": 1}}));
        let b = Rpc::Result(json!({"resultType": "complete", "content": [1], "_meta": {"a": 2}}));
        assert_eq!(Outcome::of(&a), Outcome::of(&b));
        let ir = Rpc::Result(json!({"resultType": "input_required", "requestState": "s"}));
        assert_eq!(Outcome::of(&ir), Outcome::Other);
    }
}
