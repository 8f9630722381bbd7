//! The JSON-RPC reading of a reply: a result, an error, or why there is
//! none ([`Rpc`]), from the status, `Content-Type` and body alone (JSON or
//! SSE), as the probes, the fuzzer and the walking flow read replies.

use super::mask;
use crate::protocol::body::{BodyError, DecodedBody, decode_body};
use crate::protocol::jsonrpc::{ErrorObject, Message, Outcome as RpcOutcome};
use crate::protocol::mrtr::asks_for_input;
use serde_json::Value;

/// The JSON-RPC reading of a reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Rpc {
    /// A result object (or any value).
    Result(Value),
    /// An error object.
    Error(ErrorObject),
    /// No JSON-RPC response in the body; says why.
    Missing(String),
}

impl From<RpcOutcome> for Rpc {
    fn from(outcome: RpcOutcome) -> Rpc {
        match outcome {
            RpcOutcome::Result(v) => Rpc::Result(v),
            RpcOutcome::Error(e) => Rpc::Error(e),
        }
    }
}

impl Rpc {
    /// The error code, if an error.
    pub fn code(&self) -> Option<i64> {
        match self {
            Rpc::Error(e) => Some(e.code),
            _ => None,
        }
    }

    /// The result, if a result.
    pub fn result(&self) -> Option<&Value> {
        match self {
            Rpc::Result(v) => Some(v),
            _ => None,
        }
    }

    /// `error.data.reason`, if present.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Rpc::Error(e) => e.data.as_ref()?.get("reason")?.as_str(),
            _ => None,
        }
    }

    /// A short description for verdict texts.
    pub fn describe(&self) -> String {
        match self {
            Rpc::Result(v) => match v.get("resultType").and_then(Value::as_str) {
                Some(t) => format!("a result (resultType {t:?})"),
                None => "a result without resultType".into(),
            },
            Rpc::Error(e) => match self.reason() {
                Some(r) => format!("error {} (reason {r:?})", e.code),
                None => format!("error {} ({})", e.code, mask::shorten(&e.message, 80)),
            },
            Rpc::Missing(why) => why.clone(),
        }
    }

    /// Whether it is a final, successful result ([`final_success`]), not a
    /// JSON-RPC error.
    pub fn completes(&self) -> bool {
        matches!(self, Rpc::Result(v) if final_success(v))
    }

    /// Reads the first JSON-RPC response of a reply.
    pub fn read(status: u16, content_type: Option<&str>, body: &[u8]) -> Rpc {
        let decoded = decode_body(content_type, body);
        if let Some(why) = missing(status, body, &decoded) {
            return Rpc::Missing(why);
        }
        for m in decoded.into_iter().flat_map(|d| d.messages) {
            if let Message::Response(r) = m {
                return r.outcome.into();
            }
        }
        Rpc::Missing(format!("HTTP {status}, no JSON-RPC response in the body"))
    }
}

/// Whether a result is final and successful: not `input_required`, not a
/// tool error (`isError`).
pub fn final_success(result: &Value) -> bool {
    !asks_for_input(result) && result.get("isError").and_then(Value::as_bool) != Some(true)
}

/// Why a reply, its body already decoded, holds no JSON-RPC response;
/// `None` when it holds one.
pub fn missing(
    status: u16,
    body: &[u8],
    decoded: &Result<DecodedBody, BodyError>,
) -> Option<String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Some(format!("HTTP {status} with an empty body"));
    }
    match decoded {
        Err(e) => Some(format!("HTTP {status}, undecodable body: {e}")),
        Ok(d) if d.messages.iter().any(|m| matches!(m, Message::Response(_))) => None,
        Ok(_) => Some(format!("HTTP {status}, no JSON-RPC response in the body")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_final_success_completes() {
        let result = |v: Value| Rpc::Result(v);
        assert!(result(json!({"resultType": "complete", "content": []})).completes());
        assert!(!result(json!({"resultType": "input_required", "requestState": "s"})).completes());
        assert!(!result(json!({"isError": true})).completes());
        let err = serde_json::from_value(json!({"code": -32602, "message": "m"})).unwrap();
        assert!(!Rpc::Error(err).completes());
    }
}
