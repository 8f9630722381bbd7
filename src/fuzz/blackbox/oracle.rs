//! The black-box oracles: what makes a reply (or a flow) a finding.

use serde::Serialize;
use serde_json::Value;

use crate::client::raw::{RawError, RawReply, RawRequest, Rpc};
use crate::discover::legacy::Streamed;
use crate::fuzz::harness::wire::{FRAMING, MALFORMED};

/// Label prefix of requests carrying a mutation.
pub const MUTATED: &str = "[mutated] ";

/// What was wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Oracle {
    /// An HTTP 5xx.
    ServerError,
    /// The connection failed mid-request (reset, closed, cut-off body).
    ConnectionReset,
    /// A reply to a JSON-RPC request that carries no JSON-RPC response
    /// (a success status, or a request that was not mutated at all).
    NotJsonRpc,
    /// No whole reply within the timeout.
    Hang,
    /// After a failure, the server no longer answers at all.
    Unresponsive,
    /// A retry with a changed `requestState` completed where the control
    /// (the same answers, no state) did not.
    TamperedStateAccepted,
    /// A retry with the other principal's credentials completed where the
    /// control did not.
    ForeignPrincipalAccepted,
    /// A single-use tool's request completed more than once.
    SingleUseTwice,
}

impl Oracle {
    /// Every oracle, in report order.
    pub const ALL: [Oracle; 8] = [
        Oracle::ServerError,
        Oracle::ConnectionReset,
        Oracle::NotJsonRpc,
        Oracle::Hang,
        Oracle::Unresponsive,
        Oracle::TamperedStateAccepted,
        Oracle::ForeignPrincipalAccepted,
        Oracle::SingleUseTwice,
    ];

    /// Stable kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Oracle::ServerError => "server-error",
            Oracle::ConnectionReset => "connection-reset",
            Oracle::NotJsonRpc => "not-json-rpc",
            Oracle::Hang => "hang",
            Oracle::Unresponsive => "unresponsive",
            Oracle::TamperedStateAccepted => "tampered-state-accepted",
            Oracle::ForeignPrincipalAccepted => "foreign-principal-accepted",
            Oracle::SingleUseTwice => "single-use-twice",
        }
    }

    /// Whether a liveness probe should follow (the server may have died).
    pub fn transport_level(self) -> bool {
        matches!(
            self,
            Oracle::ServerError | Oracle::ConnectionReset | Oracle::Hang
        )
    }
}

impl std::fmt::Display for Oracle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a reply is a final, successful result (not `input_required`,
/// not `isError`).
pub fn completes(reply: &Result<RawReply, RawError>) -> bool {
    let Ok(r) = reply else { return false };
    match r.rpc() {
        Rpc::Result(v) => {
            !crate::protocol::mrtr::asks_for_input(&v)
                && v.get("isError").and_then(Value::as_bool) != Some(true)
        }
        _ => false,
    }
}

fn is_rpc_request(req: &RawRequest) -> bool {
    req.method == reqwest::Method::POST
        && serde_json::from_slice::<Value>(&req.body)
            .ok()
            .is_some_and(|v| v.get("id").is_some() && v.get("method").is_some())
}

/// Judges one exchange against the per-reply oracles.
pub fn judge(
    req: &RawRequest,
    reply: &Result<RawReply, RawError>,
    mcp_url: &str,
) -> Option<(Oracle, String)> {
    let label = &req.label;
    match reply {
        Err(RawError::Timeout(t)) => {
            Some((Oracle::Hang, format!("{label}: no reply within {t:?}")))
        }
        Err(RawError::Transport(e)) => Some((Oracle::ConnectionReset, format!("{label}: {e}"))),
        // A server closing on an oversized request is refusing it.
        Err(RawError::Refused(_)) => None,
        Ok(r) if r.status >= 500 => Some((
            Oracle::ServerError,
            format!(
                "{label}: HTTP {} ({})",
                r.status,
                crate::client::mask::shorten(&String::from_utf8_lossy(&r.body), 160)
            ),
        )),
        Ok(r) => {
            let body_is_rpc =
                req.url == mcp_url && (is_rpc_request(req) || label.contains(MALFORMED.trim()));
            if !body_is_rpc || label.starts_with(FRAMING) {
                return None;
            }
            let mutated = label.contains(MUTATED.trim());
            let success = (200..300).contains(&r.status);
            match r.rpc() {
                Rpc::Missing(why) if success || !mutated => Some((
                    Oracle::NotJsonRpc,
                    format!("{label}: the reply is not a JSON-RPC response: {why}"),
                )),
                _ => None,
            }
        }
    }
}

/// Judges a 2025-11-25 call read from its stream: a 5xx on the call or an
/// answer POST, no response within the timeout (a hang) or a broken stream
/// (a reset), or a stream that ends without a JSON-RPC response.
pub fn judge_call(st: &Streamed) -> Option<(Oracle, String)> {
    let worst = st
        .answer_replies
        .iter()
        .map(|(status, _)| *status)
        .chain([st.status])
        .max()
        .unwrap_or(0);
    if worst >= 500 {
        let on = if st.status >= 500 {
            "call"
        } else {
            "answer POST"
        };
        return Some((Oracle::ServerError, format!("HTTP {worst} on the {on}")));
    }
    if let Some(f) = &st.failure {
        let oracle = if f.starts_with("timeout") {
            Oracle::Hang
        } else {
            Oracle::ConnectionReset
        };
        return Some((oracle, f.clone()));
    }
    match &st.response {
        Some(Rpc::Missing(why)) => Some((Oracle::NotJsonRpc, why.clone())),
        None if !st.abandoned && (200..300).contains(&st.status) => Some((
            Oracle::NotJsonRpc,
            "the stream ended without the call's response".into(),
        )),
        _ => None,
    }
}
