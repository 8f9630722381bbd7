//! Rules on one 2026-07-28 reply, each a pure function of the request's
//! method and the reply: `resultType` declared and known (§4.4),
//! `input_required` only for the methods MRTR is allowed on (S1), and the
//! reading of a reply to a wrongly typed `inputResponses` / `requestState`
//! (S9: `-32602` or a re-prompt; never HTTP 404 / `-32601`, never a 5xx).

use crate::client::raw::Rpc;
use crate::protocol::codes;
use crate::protocol::mrtr::{REQUEST_STATE, asks_for_input};
use serde_json::Value;

/// The methods whose results may ask for input (S1).
pub const MRTR_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// What is wrong with a result's `resultType`, if anything: absent (said
/// apart when the result asks for input by its shape), or a value no
/// extension was advertised for.
pub fn result_type_problem(result: &Value) -> Option<String> {
    match result.get("resultType") {
        Some(Value::String(t)) if t == "complete" || t == "input_required" => None,
        Some(other) => Some(format!("resultType {other} (no extension was advertised)")),
        None if asks_for_input(result) => Some(
            "no resultType on a round that asks for input (it carries inputRequests or \
             requestState; read as input_required by its shape)"
                .into(),
        ),
        None => Some("no resultType".into()),
    }
}

/// Whether `result`, the answer to `method`, asks for input where MRTR is
/// not allowed.
pub fn input_required_out_of_scope(method: &str, result: &Value) -> bool {
    !MRTR_METHODS.contains(&method) && asks_for_input(result)
}

/// Which of a `tools/call`'s MRTR fields has the wrong JSON type in
/// `params`: `inputResponses` not an object, `requestState` not a string.
pub fn misshapen_field(params: &Value) -> Option<&'static str> {
    if params.get("inputResponses").is_some_and(|v| !v.is_object()) {
        return Some("inputResponses");
    }
    if params.get(REQUEST_STATE).is_some_and(|v| !v.is_string()) {
        return Some(REQUEST_STATE);
    }
    None
}

/// How a request with a malformed MRTR field was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShapeReply {
    /// A 5xx: the server failed.
    ServerError(u16),
    /// HTTP 404 or `-32601`: taken for an unknown method, not invalid params.
    UnknownMethod,
    /// Anything else (an error, a re-prompt, a result: judged further by
    /// the caller, which may hold a control).
    Other,
}

/// Reads the reply (`rpc`, HTTP `status`) to a request with a malformed
/// MRTR field.
pub fn shape_reply(rpc: &Rpc, status: u16) -> ShapeReply {
    if status >= 500 {
        ShapeReply::ServerError(status)
    } else if status == 404 || rpc.code() == Some(codes::METHOD_NOT_FOUND) {
        ShapeReply::UnknownMethod
    } else {
        ShapeReply::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn result_types_are_judged() {
        assert_eq!(
            result_type_problem(&json!({"resultType": "complete"})),
            None
        );
        assert_eq!(
            result_type_problem(&json!({"resultType": "input_required", "inputRequests": {}})),
            None
        );
        assert_eq!(
            result_type_problem(&json!({})).as_deref(),
            Some("no resultType")
        );
        assert!(
            result_type_problem(&json!({"inputRequests": {"a": {}}}))
                .unwrap()
                .contains("asks for input")
        );
        assert!(result_type_problem(&json!({"resultType": "task"})).is_some());
    }

    #[test]
    fn input_required_is_allowed_on_three_methods_only() {
        let ir = json!({"resultType": "input_required", "inputRequests": {}});
        for m in MRTR_METHODS {
            assert!(!input_required_out_of_scope(m, &ir));
        }
        assert!(input_required_out_of_scope("tools/list", &ir));
        assert!(!input_required_out_of_scope(
            "tools/list",
            &json!({"resultType": "complete"})
        ));
    }

    #[test]
    fn malformed_fields_and_their_replies() {
        assert_eq!(
            misshapen_field(&json!({"inputResponses": []})),
            Some("inputResponses")
        );
        assert_eq!(
            misshapen_field(&json!({"requestState": 1})),
            Some("requestState")
        );
        assert_eq!(
            misshapen_field(&json!({"inputResponses": {}, "requestState": "s"})),
            None
        );
        let err = |code| {
            Rpc::Error(serde_json::from_value(json!({"code": code, "message": "m"})).unwrap())
        };
        assert_eq!(shape_reply(&err(-32601), 200), ShapeReply::UnknownMethod);
        assert_eq!(shape_reply(&err(-32602), 404), ShapeReply::UnknownMethod);
        assert_eq!(shape_reply(&err(-32602), 400), ShapeReply::Other);
        assert_eq!(shape_reply(&err(-32603), 500), ShapeReply::ServerError(500));
    }
}
