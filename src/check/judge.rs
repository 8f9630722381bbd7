//! Shared judgement helpers: building valid answers for raw retries,
//! deciding whether an error is a rejection *for the reason a check probes*
//! (a tampered state refused because of a header error is no pass), and
//! reading round trips from the client's state machine.

use crate::client::outcome::{ErrorClass, Outcome, RoundTrip};
use crate::client::raw::Rpc;
use serde_json::Value;

pub use crate::client::rejection::{INTEGRITY, NotRefused, UNRELATED_CODES, state_rejection};

/// [`state_rejection`] for a raw reply's JSON-RPC reading.
pub fn rpc_state_rejection(rpc: &Rpc, expected: &[&str]) -> Result<String, NotRefused> {
    match rpc {
        Rpc::Error(e) => state_rejection(e.code, rpc.reason(), expected),
        other => Err(NotRefused::Answered(other.describe())),
    }
}

/// What a state probe run through the client's state machine concluded.
pub enum Probed {
    /// Rejected for an expected reason.
    Rejected(String),
    /// Accepted (complete result or re-prompt), or rejected for the wrong reason.
    Accepted(String),
    /// The flow never reached the probe; says why.
    NotReached(String),
    /// The server hung.
    Hung(String),
}

/// Reads a round trip whose policy probes a state (tamper, replay,
/// cross-principal) against the `expected` rejection reasons.
pub fn judge_state_probe(rt: &RoundTrip, expected: &[&str]) -> Probed {
    match &rt.outcome {
        Outcome::ExpectedRejection {
            code: Some(code),
            reason,
        } => match state_rejection(*code, reason.as_deref(), expected) {
            Ok(s) => Probed::Rejected(s),
            Err(s) => Probed::Accepted(s.to_string()),
        },
        Outcome::ExpectedRejection { code: None, reason } => {
            let r = reason.clone().unwrap_or_default();
            if r == "HTTP 401" || r == "HTTP 403" {
                Probed::Rejected(format!("refused with {r}"))
            } else {
                Probed::Accepted(format!(
                    "refused with {r} but no JSON-RPC error (a state rejection is a JSON-RPC error)"
                ))
            }
        }
        Outcome::Unexpected {
            class: ErrorClass::StateAccepted,
            message,
        } => Probed::Accepted(message.clone()),
        Outcome::Unexpected {
            class: ErrorClass::Timeout,
            message,
        } => Probed::Hung(message.clone()),
        Outcome::Unexpected { message, .. } => Probed::NotReached(message.clone()),
        Outcome::Skipped(why) => Probed::NotReached(why.to_string()),
        Outcome::Success => Probed::NotReached("the flow ended without the probe".into()),
    }
}

pub use crate::client::content::answers_for;

pub use crate::oracle::capability::elicitations;

/// Words of `text` with numbers and the given answer values replaced by
/// one placeholder.
fn words_of(text: &str, values: &[String]) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            if w.chars().all(|c| c.is_ascii_digit()) || values.iter().any(|v| v == w) {
                "<v>".to_owned()
            } else {
                w.to_lowercase()
            }
        })
        .collect()
}

/// Every leaf of `v` as (pointer, words of its value).
fn leaves(v: &Value, at: String, values: &[String], out: &mut Vec<(String, Vec<String>)>) {
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| leaves(x, format!("{at}/{k}"), values, out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| leaves(x, format!("{at}/{i}"), values, out)),
        Value::String(s) => out.push((at, words_of(s, values))),
        other => out.push((at, words_of(&other.to_string(), values))),
    }
}

/// The text words and `structuredContent` leaves of a tool result, with
/// numbers and answer values set aside: two results of the same shape
/// ("Order #3 placed: 2 × mug (size M)" and "Order #4 placed: 2 × mug
/// (size XL)") read alike.
fn shape_of(result: &Value, values: &[String]) -> (Vec<String>, Vec<(String, Vec<String>)>) {
    let text: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter_map(|x| x.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    let mut structured = Vec::new();
    if let Some(sc) = result.get("structuredContent") {
        leaves(sc, String::new(), values, &mut structured);
    }
    (words_of(&text.join(" "), values), structured)
}

/// The scalar values inside answers (`content` fields), as words.
pub fn answer_values(answers: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![answers];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => out.extend(
                s.split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .map(str::to_owned),
            ),
            Value::Number(n) => out.push(n.to_string()),
            Value::Bool(b) => out.push(b.to_string()),
            Value::Array(a) => stack.extend(a),
            Value::Object(m) => stack.extend(m.values()),
            Value::Null => {}
        }
    }
    out
}

/// True when two complete tool results read as the same outcome: the same
/// text, or the same `structuredContent`, once numbers and answer values
/// are set aside (`values` lists both calls' answer values).
pub fn same_outcome(a: &Value, b: &Value, values: &[String]) -> bool {
    let (wa, sa) = shape_of(a, values);
    let (wb, sb) = shape_of(b, values);
    (!wa.is_empty() && wa == wb) || (!sa.is_empty() && sa == sb)
}

/// Whether a result asks for input, declared or by shape: every verdict
/// about re-prompts reads replies this way, and `mrtr-result-type` alone
/// reports a missing declaration.
pub use crate::protocol::mrtr::asks_for_input;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::mrtr::InputRequiredResult;
    use serde_json::json;

    #[test]
    fn outcomes_compare_by_shape() {
        let r = |t: &str| json!({"content":[{"type":"text","text":t}]});
        let values = answer_values(
            &json!({"a":{"content":{"size":"M"}},"b":{"content":{"size":"XL","n":42}}}),
        );
        assert!(same_outcome(
            &r("Order #3 placed: 2 × mug (size M)"),
            &r("Order #4 placed: 2 × mug (size XL)"),
            &values
        ));
        assert!(!same_outcome(
            &r("Order #3 placed: 2 × mug (size M)"),
            &r("Order not placed (declined)"),
            &values
        ));
        let s = |t: &str, v: &str| json!({"content":[{"type":"text","text":t}],"structuredContent":{"result":v}});
        assert!(same_outcome(&s("a", "Order 1"), &s("b", "Order 2"), &[]));
        assert!(!same_outcome(
            &s("a", "Trip to Oslo, window seat"),
            &s("b", "Trip planning stopped"),
            &[]
        ));
        assert!(
            !same_outcome(&json!({}), &json!({}), &[]),
            "nothing to compare"
        );
    }

    #[test]
    fn answers_cover_every_request() {
        let ir = InputRequiredResult::from_value(&json!({"resultType":"input_required",
            "inputRequests":{
              "f":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}},
              "u":{"method":"elicitation/create","params":{"mode":"url","message":"m","url":"https://x"}}}}))
        .unwrap();
        let a = answers_for(&ir, 1);
        assert_eq!(a["u"], json!({"action":"accept"}));
        assert!(a["f"]["content"]["ok"].is_boolean());
        let e = elicitations(&ir.to_value());
        assert_eq!(e, vec![("f".to_owned(), "form"), ("u".to_owned(), "url")]);
    }
}
