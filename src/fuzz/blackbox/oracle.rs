//! The black-box oracles: what makes a reply (or a flow) a finding.

use serde_json::Value;

use crate::client::raw::{RawError, RawReply, RawRequest, Rpc};
use crate::discover::legacy::Streamed;
use crate::fuzz::harness::wire::{FRAMING, MALFORMED};
use crate::oracle::{Oracle, transport};
use crate::protocol::headers::PROTOCOL_VERSION;
use crate::protocol::version::MODERN;

/// Label prefix of requests carrying a mutation.
pub const MUTATED: &str = "[mutated] ";

/// Whether a reply is a final, successful result ([`Rpc::completes`]).
pub fn completes(reply: &Result<RawReply, RawError>) -> bool {
    reply.as_ref().is_ok_and(|r| r.rpc().completes())
}

/// The body of a POSTed JSON-RPC request (an `id` and a `method`), parsed.
fn rpc_request_body(req: &RawRequest) -> Option<Value> {
    if req.method != reqwest::Method::POST {
        return None;
    }
    serde_json::from_slice::<Value>(&req.body)
        .ok()
        .filter(|v| v.get("id").is_some() && v.get("method").is_some())
}

/// Judges one exchange against the per-reply oracles.
pub fn judge(
    req: &RawRequest,
    reply: &Result<RawReply, RawError>,
    mcp_url: &str,
) -> Option<(Oracle, String)> {
    let label = &req.label;
    if let found @ Some(_) = transport::judge(label, reply) {
        return found;
    }
    let r = reply.as_ref().ok()?;
    if req.url != mcp_url || label.starts_with(FRAMING) {
        return None;
    }
    let body = rpc_request_body(req);
    if body.is_none() && !label.contains(MALFORMED.trim()) {
        return None;
    }
    let mutated = label.contains(MUTATED.trim());
    let success = (200..300).contains(&r.status);
    match r.rpc() {
        Rpc::Missing(why) if success || !mutated => {
            Some(transport::not_json_rpc(Oracle::NotJsonRpc, label, &why))
        }
        Rpc::Missing(_) => None,
        rpc => judge_modern(req, body.as_ref()?, &rpc, r.status),
    }
}

/// The 2026-07-28 rules of [`crate::oracle::reply`] on one reply to a
/// JSON-RPC request (`body`, parsed) sent as that generation.
fn judge_modern(
    req: &RawRequest,
    body: &Value,
    rpc: &Rpc,
    status: u16,
) -> Option<(Oracle, String)> {
    use crate::oracle::capability::{declared_modes, undeclared};
    use crate::oracle::reply::{
        ShapeReply, input_required_out_of_scope, misshapen_field, result_type_problem, shape_reply,
    };
    let modern = req
        .headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case(PROTOCOL_VERSION) && v == MODERN);
    if !modern {
        return None;
    }
    let method = body.get("method")?.as_str()?;
    // A dual-era server may answer the 2025-11-25 handshake as that
    // generation, whatever the header says.
    if method == "initialize" {
        return None;
    }
    let label = &req.label;
    if let Rpc::Result(v) = rpc {
        if input_required_out_of_scope(method, v) {
            return Some((
                Oracle::InputRequiredOutOfScope,
                format!(
                    "{label}: {method} answered input_required (MRTR is only for tools/call, prompts/get, resources/read)"
                ),
            ));
        }
        if let Some(problem) = result_type_problem(v) {
            return Some((Oracle::ResultType, format!("{label}: {method}: {problem}")));
        }
    }
    let params = body.get("params").unwrap_or(&Value::Null);
    if let Rpc::Result(v) = rpc
        && let Some(modes) = declared_modes(params)
    {
        let bad = undeclared(v, modes);
        if !bad.is_empty() {
            let list: Vec<String> = bad.iter().map(|(k, m)| format!("{k} ({m} mode)")).collect();
            return Some((
                Oracle::UndeclaredMode,
                format!(
                    "{label}: {method} asked for {} from a client declaring {}",
                    list.join(", "),
                    declared_text(modes)
                ),
            ));
        }
    }
    if method == "tools/call"
        && let Some(field) = misshapen_field(params)
        && shape_reply(rpc, status) == ShapeReply::UnknownMethod
    {
        return Some((
            Oracle::ShapeAsUnknownMethod,
            format!(
                "{label}: {field} of the wrong JSON type got HTTP {status}, {} (taken for an \
                 unknown method, not invalid params)",
                rpc.describe()
            ),
        ));
    }
    None
}

/// The declared modes as a reader would write them.
fn declared_text(m: crate::protocol::capabilities::ElicitModes) -> &'static str {
    match (m.form, m.url) {
        (true, true) => "form and URL mode",
        (true, false) => "form mode only",
        (false, true) => "URL mode only",
        (false, false) => "no elicitation",
    }
}

/// Judges the `elicitation/create` params a 2025-11-25 call was sent
/// against the modes its session declared (`caps`, at `initialize`).
pub fn judge_modes(
    elicitations: &[Value],
    caps: &crate::protocol::ClientCapabilities,
) -> Option<(Oracle, String)> {
    let modes = caps.elicit_modes();
    let bad = crate::oracle::capability::undeclared_pushed(elicitations, modes);
    bad.any().then(|| {
        let named: Vec<&str> = [(bad.form, "form"), (bad.url, "url")]
            .into_iter()
            .filter_map(|(b, m)| b.then_some(m))
            .collect();
        (
            Oracle::UndeclaredMode,
            format!(
                "elicitation/create in {} mode on a session declaring {}",
                named.join(" and "),
                declared_text(modes)
            ),
        )
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::raw::modern_post;
    use serde_json::json;

    const URL: &str = "http://127.0.0.1:1/mcp";

    fn reply(status: u16, body: Value) -> Result<RawReply, RawError> {
        Ok(RawReply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into(),
            elapsed: std::time::Duration::ZERO,
        })
    }

    fn oracle(req: &RawRequest, r: &Result<RawReply, RawError>) -> Option<Oracle> {
        judge(req, r, URL).map(|(o, _)| o)
    }

    fn page(status: u16, html: &str) -> Result<RawReply, RawError> {
        Ok(RawReply {
            status,
            headers: vec![("content-type".into(), "text/html".into())],
            body: html.to_owned().into(),
            elapsed: std::time::Duration::ZERO,
        })
    }

    /// Each per-reply transport oracle, against a server that refuses a bad
    /// request correctly (quiet) and one that breaks on it (fires).
    #[test]
    fn each_transport_oracle_is_quiet_on_a_refusal_and_fires_on_a_breakage() {
        let bad = modern_post(
            format!("{MUTATED}tools/call with a mangled id"),
            URL,
            1,
            "tools/call",
            Some(json!({"name":"t"})),
        );
        let refusal = reply(
            400,
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad id"}}),
        );
        type Reply = Result<RawReply, RawError>;
        let cases: [(Oracle, Reply, Reply); 4] = [
            (
                Oracle::ServerError,
                refusal.clone(),
                reply(500, json!({"error":"panic"})),
            ),
            (
                Oracle::NotJsonRpc,
                page(400, "<h1>Bad Request</h1>"),
                page(200, "<h1>OK</h1>"),
            ),
            (
                Oracle::ConnectionReset,
                Err(RawError::Refused("431, then closed".into())),
                Err(RawError::Transport("connection reset by peer".into())),
            ),
            (
                Oracle::Hang,
                refusal.clone(),
                Err(RawError::Timeout(std::time::Duration::from_secs(5))),
            ),
        ];
        for (o, refused, broken) in cases {
            assert_eq!(oracle(&bad, &refused), None, "{o}: a correct refusal");
            assert_eq!(oracle(&bad, &broken), Some(o), "{o}: the breakage");
        }
        // A plain (not mutated) request answered with an error page is not
        // JSON-RPC, refusal or not.
        let plain = modern_post("tools/list", URL, 1, "tools/list", Some(json!({})));
        assert_eq!(
            oracle(&plain, &page(400, "<h1>Bad</h1>")),
            Some(Oracle::NotJsonRpc)
        );
    }

    #[test]
    fn the_mrtr_reply_rules_judge_modern_replies_only() {
        let ir = json!({"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{}}});
        let list = modern_post("tools/list", URL, 1, "tools/list", Some(json!({})));
        assert_eq!(
            oracle(&list, &reply(200, ir.clone())),
            Some(Oracle::InputRequiredOutOfScope)
        );
        let call = modern_post(
            "tools/call",
            URL,
            1,
            "tools/call",
            Some(json!({"name":"t"})),
        );
        assert_eq!(oracle(&call, &reply(200, ir)), None);
        let bare = json!({"jsonrpc":"2.0","id":1,"result":{"content":[]}});
        assert_eq!(
            oracle(&call, &reply(200, bare.clone())),
            Some(Oracle::ResultType)
        );
        let complete = json!({"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}});
        assert_eq!(oracle(&call, &reply(200, complete)), None);
        // The same bare result to a 2025-11-25 request is that generation's.
        let mut legacy = call.clone();
        legacy
            .headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case(PROTOCOL_VERSION));
        legacy = legacy.header(PROTOCOL_VERSION, "2025-11-25");
        assert_eq!(oracle(&legacy, &reply(200, bare)), None);
    }

    #[test]
    fn an_input_request_for_an_undeclared_mode_is_found() {
        use crate::protocol::ClientCapabilities;
        use crate::protocol::mrtr::META_CLIENT_CAPABILITIES;
        let call = |caps: ClientCapabilities| {
            modern_post(
                "tools/call",
                URL,
                1,
                "tools/call",
                Some(json!({"name": "t", "_meta": {META_CLIENT_CAPABILITIES: caps.to_value()}})),
            )
        };
        let url_ir = json!({"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required",
            "requestState":"s","inputRequests":{"pay":{"method":"elicitation/create",
            "params":{"mode":"url","url":"https://x","message":"m"}}}}});
        let form_only = call(ClientCapabilities::with_modes(true, false));
        assert_eq!(
            oracle(&form_only, &reply(200, url_ir.clone())),
            Some(Oracle::UndeclaredMode)
        );
        let both = call(ClientCapabilities::with_modes(true, true));
        assert_eq!(oracle(&both, &reply(200, url_ir.clone())), None);
        // A request whose capabilities cannot be read is not judged.
        let bare = modern_post(
            "tools/call",
            URL,
            1,
            "tools/call",
            Some(json!({"name": "t"})),
        );
        assert_eq!(oracle(&bare, &reply(200, url_ir)), None);
        let refused = json!({"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"no",
            "data":{"requiredCapabilities":{"elicitation":{"url":{}}}}}});
        assert_eq!(oracle(&form_only, &reply(400, refused)), None);
    }

    #[test]
    fn a_legacy_elicitation_in_an_undeclared_mode_is_found() {
        use crate::protocol::ClientCapabilities;
        let url = json!({"mode": "url", "url": "https://x", "message": "m", "elicitationId": "e"});
        let form = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}}});
        let form_only = ClientCapabilities::with_modes(true, false);
        let (o, what) = judge_modes(&[form.clone(), url.clone()], &form_only).unwrap();
        assert_eq!(o, Oracle::UndeclaredMode);
        assert!(
            what.contains("url mode") && what.contains("form mode only"),
            "{what}"
        );
        assert_eq!(judge_modes(std::slice::from_ref(&form), &form_only), None);
        let both = ClientCapabilities::with_modes(true, true);
        assert_eq!(judge_modes(&[form.clone(), url], &both), None);
        // `{elicitation:{}}` is form only; no elicitation capability, none.
        let url_only = ClientCapabilities::with_modes(false, true);
        assert!(judge_modes(std::slice::from_ref(&form), &url_only).is_some());
        assert!(judge_modes(&[form], &ClientCapabilities::none()).is_some());
    }

    #[test]
    fn a_misshapen_field_taken_for_an_unknown_method_is_found() {
        let bad = modern_post(
            "tools/call",
            URL,
            1,
            "tools/call",
            Some(json!({"name":"t","inputResponses":[]})),
        );
        let not_found = json!({"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}});
        assert_eq!(
            oracle(&bad, &reply(404, not_found.clone())),
            Some(Oracle::ShapeAsUnknownMethod)
        );
        let invalid = json!({"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}});
        assert_eq!(oracle(&bad, &reply(400, invalid)), None);
        let fine = modern_post(
            "tools/call",
            URL,
            1,
            "tools/call",
            Some(json!({"name":"t"})),
        );
        assert_eq!(oracle(&fine, &reply(404, not_found)), None);
    }
}
