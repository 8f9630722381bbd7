//! Building HTTP responses: JSON-RPC results and errors (as JSON or SSE),
//! with `Server-Timing` on every one.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde::Serialize;
use serde_json::Value;

use crate::protocol::codes;
use crate::protocol::headers::SERVER_TIMING;
use crate::protocol::jsonrpc::{ErrorObject, RequestId};
use crate::protocol::sse::encode_event;

use super::config::ResponseMode;
use super::timing::Timing;

/// A JSON-RPC error to send back, with its HTTP status.
#[derive(Debug, Clone)]
pub struct RpcError {
    /// HTTP status.
    pub status: StatusCode,
    /// The error object.
    pub error: ErrorObject,
    /// `Retry-After` in seconds: when what was missing frees up (a 503
    /// without one says 1).
    pub retry_after: Option<u64>,
}

impl RpcError {
    /// An error with a status, code and message.
    pub fn new(status: StatusCode, code: i64, message: impl Into<String>) -> Self {
        RpcError {
            status,
            error: ErrorObject::new(code, message),
            retry_after: None,
        }
    }

    /// `-32602` with HTTP 400.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, codes::INVALID_PARAMS, message)
    }

    /// `-32601` with HTTP 404.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            codes::METHOD_NOT_FOUND,
            format!("method {method:?} not found"),
        )
    }

    /// Sealing a `requestState` failed, logged: 500 and `-32603`.
    pub fn seal_failed(e: &crate::state::SealError) -> Self {
        tracing::error!(error = %e, "sealing failed");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            codes::INTERNAL_ERROR,
            "could not seal requestState",
        )
    }

    /// A store failure, logged: 503 and `-32603` "retry later" when the
    /// store is unreachable (`Retry-After` 1) or full (`Retry-After` the
    /// `sweep` interval: room is made when the sweep forgets what is past
    /// retention); 429 when the principal holds its share of the store
    /// (`Retry-After`: when its earliest pending record expires); else 500
    /// and `-32603`. One mapping for both generations (the 2025-11-25
    /// stream carries the error object, its HTTP status is long sent).
    pub fn store_failed(e: crate::store::StoreError, sweep: std::time::Duration) -> Self {
        use crate::store::StoreError;
        // Gated: during an outage every request would log one.
        if matches!(e, StoreError::Full { .. } | StoreError::OverShare { .. }) {
            super::log_gate::gated!(warn, error = %e, "store full");
        } else {
            super::log_gate::gated!(error, error = %e, "store failure");
        }
        let secs = |ms: u64| ms.div_ceil(1000).max(1);
        match &e {
            StoreError::Unavailable(_) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                codes::INTERNAL_ERROR,
                "the pending-elicitation store is unreachable; retry later",
            ),
            StoreError::Full { .. } => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                codes::INTERNAL_ERROR,
                "the server's store is full (--store-memory-budget); retry later",
            )
            .retry_after(secs(u64::try_from(sweep.as_millis()).unwrap_or(u64::MAX))),
            StoreError::OverShare { frees_in_ms, .. } => Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                codes::SERVER_ERROR,
                e.to_string(),
            )
            .retry_after(secs(*frees_in_ms)),
            _ => Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                codes::INTERNAL_ERROR,
                "the pending-elicitation store failed",
            ),
        }
    }

    /// Sets `Retry-After` (seconds).
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// Adds `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.error.data = Some(data);
        self
    }
}

#[derive(Serialize)]
struct Envelope<'a> {
    jsonrpc: &'static str,
    id: Option<&'a RequestId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorObject>,
}

/// A JSON-RPC response message serialized compactly.
pub fn response_json(
    id: Option<&RequestId>,
    result: Option<&Value>,
    error: Option<&ErrorObject>,
) -> String {
    serde_json::to_string(&Envelope {
        jsonrpc: "2.0",
        id,
        result,
        error,
    })
    .unwrap_or_else(|_| String::from(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"serialization failed"}}"#))
}

/// A JSON-RPC request message (server → client) serialized compactly.
pub fn request_json(id: &str, method: &str, params: &Value) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A notification message serialized compactly.
pub fn notification_json(method: &str, params: &Value) -> String {
    serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// Adds `Server-Timing` to a response.
pub fn with_timing(mut resp: Response, timing: &Timing) -> Response {
    if let Ok(v) = HeaderValue::from_str(&timing.header_value()) {
        resp.headers_mut().insert(SERVER_TIMING, v);
    }
    resp
}

/// A response carrying one JSON-RPC message, framed as JSON or SSE.
pub fn message(status: StatusCode, json: String, mode: ResponseMode) -> Response {
    let (ct, body) = match mode {
        ResponseMode::Json => ("application/json", json),
        ResponseMode::Sse => ("text/event-stream", encode_event(None, &json)),
    };
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    if mode == ResponseMode::Sse {
        r.headers_mut()
            .insert("x-accel-buffering", HeaderValue::from_static("no"));
        r.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    r
}

/// A successful result.
pub fn result(id: &RequestId, result: &Value, mode: ResponseMode) -> Response {
    message(
        StatusCode::OK,
        response_json(Some(id), Some(result), None),
        mode,
    )
}

/// An error response (always JSON: errors end the exchange).
pub fn error(id: Option<&RequestId>, e: &RpcError) -> Response {
    let mut r = message(
        e.status,
        response_json(id, None, Some(&e.error)),
        ResponseMode::Json,
    );
    if let Some(secs) = e.retry_after {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    } else if e.status == StatusCode::SERVICE_UNAVAILABLE {
        r.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from_static(RETRY_AFTER_SECS),
        );
    }
    r
}

/// `Retry-After` of a 503: the server is briefly out of a resource.
pub const RETRY_AFTER_SECS: &str = "1";

/// A bare status without body (202, 204, 405 ...).
pub fn status(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_are_valid_json_rpc() {
        let id = RequestId::Number(7);
        let ok = response_json(Some(&id), Some(&serde_json::json!({"a":1})), None);
        assert_eq!(ok, r#"{"jsonrpc":"2.0","id":7,"result":{"a":1}}"#);
        let e = ErrorObject::new(-32602, "bad");
        let err = response_json(None, None, Some(&e));
        assert_eq!(
            err,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"bad"}}"#
        );
        let m = crate::protocol::jsonrpc::parse_message(err.as_bytes()).unwrap();
        assert!(matches!(m, crate::protocol::Message::Response(_)));
    }
}
