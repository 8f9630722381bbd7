//! Shared judgement helpers: building valid answers for raw retries,
//! deciding whether an error is a rejection *for the reason a check probes*
//! (a tampered state refused because of a header error is no pass), and
//! reading round trips from the client's state machine.

use super::raw::Rpc;
use crate::client::content::valid_content;
use crate::client::outcome::{ErrorClass, Outcome, RoundTrip};
use crate::protocol::codes;
use crate::protocol::mrtr::InputRequiredResult;
use crate::state::StateError;
use serde_json::{Map, Value, json};

/// Reasons that mean "the state failed integrity verification".
pub const INTEGRITY: [&str; 5] = [
    "malformed",
    "bad_tag",
    "unknown_key",
    "unsupported_version",
    "too_large",
];

/// Error codes that say the request was refused before its state was looked
/// at (headers, `_meta`, capabilities, framing): never a state rejection.
pub const UNRELATED_CODES: [i64; 6] = [
    codes::HEADER_MISMATCH,
    codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
    codes::UNSUPPORTED_PROTOCOL_VERSION,
    codes::METHOD_NOT_FOUND,
    codes::INVALID_REQUEST,
    codes::PARSE_ERROR,
];

/// Judges a JSON-RPC error `code` / `reason` as a rejection of the state for
/// one of the `expected` reasons. `Ok` says what was seen; `Err` says why it
/// does not count.
pub fn state_rejection(
    code: i64,
    reason: Option<&str>,
    expected: &[&str],
) -> Result<String, String> {
    if UNRELATED_CODES.contains(&code) {
        return Err(format!(
            "rejected with {code} ({}), which is about the request's framing, not its state",
            codes::name(code)
        ));
    }
    match reason {
        Some(r) if expected.contains(&r) => Ok(format!("rejected with {code}, reason {r:?}")),
        Some(r) if StateError::KINDS.contains(&r) => Err(format!(
            "rejected with {code} but for reason {r:?}, not {}: the probed property was not what failed",
            expected.join(" / ")
        )),
        Some(r) => Ok(format!(
            "rejected with {code} (server-specific reason {r:?})"
        )),
        None => Ok(format!("rejected with JSON-RPC error {code}")),
    }
}

/// [`state_rejection`] for a raw reply's JSON-RPC reading.
pub fn rpc_state_rejection(rpc: &Rpc, expected: &[&str]) -> Result<String, String> {
    match rpc {
        Rpc::Error(e) => state_rejection(e.code, rpc.reason(), expected),
        other => Err(format!("answered with {}", other.describe())),
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
            Err(s) => Probed::Accepted(s),
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
        Outcome::Skipped(why) => Probed::NotReached(why.clone()),
        Outcome::Success => Probed::NotReached("the flow ended without the probe".into()),
    }
}

/// Valid answers for every input request of an `input_required` result:
/// form content generated from the schema, bare consent for URL mode,
/// empty answers for roots and sampling.
pub fn answers_for(ir: &InputRequiredResult, seed: u64) -> Map<String, Value> {
    let mut out = Map::new();
    for (i, (key, req)) in ir.input_requests.iter().flatten().enumerate() {
        let answer = match req.method.as_str() {
            "elicitation/create" => match req.params.get("mode").and_then(Value::as_str) {
                Some("url") => json!({"action": "accept"}),
                _ => {
                    let schema = req.params.get("requestedSchema").unwrap_or(&Value::Null);
                    json!({"action": "accept", "content": valid_content(schema, seed ^ i as u64)})
                }
            },
            "roots/list" => json!({"roots": []}),
            _ => {
                json!({"role":"assistant","content":{"type":"text","text":"elicitkit"},"model":"elicitkit"})
            }
        };
        out.insert(key.clone(), answer);
    }
    out
}

/// The `elicitation/create` input requests of a result, as `(key, mode)`
/// with `mode` `"form"` or `"url"`.
pub fn elicitations(result: &Value) -> Vec<(String, &'static str)> {
    result
        .get("inputRequests")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter(|(_, r)| {
                    r.get("method").and_then(Value::as_str) == Some("elicitation/create")
                })
                .map(|(k, r)| {
                    let mode = match r
                        .get("params")
                        .and_then(|p| p.get("mode"))
                        .and_then(Value::as_str)
                    {
                        Some("url") => "url",
                        _ => "form",
                    };
                    (k.clone(), mode)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// True when a result is `resultType: "input_required"`.
pub fn is_input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejection_must_be_for_the_probed_reason() {
        assert!(state_rejection(-32602, Some("bad_tag"), &INTEGRITY).is_ok());
        assert!(state_rejection(-32602, None, &INTEGRITY).is_ok());
        assert!(state_rejection(-32602, Some("custom"), &INTEGRITY).is_ok());
        let wrong = state_rejection(-32602, Some("wrong_principal"), &INTEGRITY);
        assert!(wrong.unwrap_err().contains("wrong_principal"));
        assert!(state_rejection(codes::HEADER_MISMATCH, None, &INTEGRITY).is_err());
        assert!(
            state_rejection(
                codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                None,
                &["expired"]
            )
            .is_err()
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
