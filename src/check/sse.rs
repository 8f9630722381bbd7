//! SSE hygiene on 2026-07-28 response streams (§4.3, §6.B 23): a response
//! stream carries only notifications about the request and then its
//! response, never a JSON-RPC request; nothing follows the response (an
//! `input_required` over SSE is the last message); no `notifications/message`
//! when the request set no `logLevel`.

use super::judge::answers_for;
use super::model::Verdict;
use super::probe::{Probe, all_modes};
use super::registry::{Check, check};
use crate::client::raw::RawReply;
use crate::protocol::jsonrpc::Message;
use crate::protocol::mrtr::InputRequiredResult;
use serde_json::{Value, json};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![check!(
        "mrtr-sse-hygiene",
        "§4.3 / §6.B 23",
        Must,
        Modern,
        "SSE responses: no requests, nothing after the response, no log without logLevel",
        sse_hygiene,
        http("SSE streams");
        scenario "server-stateless"
    )]
}

fn inspect(what: &str, reply: &RawReply, problems: &mut Vec<String>) -> bool {
    if !reply.is_sse() {
        return false;
    }
    let decoded = match reply.decoded() {
        Ok(d) => d,
        Err(e) => {
            problems.push(format!("{what}: undecodable SSE stream: {e}"));
            return true;
        }
    };
    let mut after_response = 0;
    let mut responded = false;
    for m in &decoded.messages {
        if responded {
            after_response += 1;
        }
        match m {
            Message::Request(r) => problems.push(format!(
                "{what}: JSON-RPC request {} on a response stream",
                r.method
            )),
            Message::Notification(n) if n.method == "notifications/message" => problems.push(
                format!("{what}: notifications/message although the request set no logLevel"),
            ),
            Message::Response(_) => responded = true,
            Message::Notification(_) => {}
        }
    }
    if after_response > 0 {
        problems.push(format!(
            "{what}: {after_response} message(s) after the response"
        ));
    }
    true
}

async fn sse_hygiene(p: Probe) -> Verdict {
    let caps = all_modes();
    let mut problems = Vec::new();
    let mut streams = 0;
    let plain = p.target().plain_method();
    if let Ok(r) = p.modern(plain, plain, json!({}), &caps).await {
        streams += usize::from(inspect(plain, &r, &mut problems));
    }
    let tools = p.target().eliciting_tools();
    for t in &tools {
        let first = p.call_request(format!("tools/call {} #1", t.name), t, &caps, None, None);
        let Ok(reply) = p.send(first).await else {
            continue;
        };
        streams += usize::from(inspect(&format!("{} #1", t.name), &reply, &mut problems));
        let Some(ir) = reply
            .rpc()
            .result()
            .and_then(InputRequiredResult::from_value)
        else {
            continue;
        };
        let answers = Value::Object(answers_for(&ir, p.settings().target.seed));
        let retry = p.call_request(
            format!("tools/call {} #2 retry", t.name),
            t,
            &caps,
            Some(answers),
            ir.request_state.as_deref(),
        );
        if let Ok(r) = p.send(retry).await {
            streams += usize::from(inspect(&format!("{} #2", t.name), &r, &mut problems));
        }
    }
    if !problems.is_empty() {
        return Verdict::fail(problems.join("; "));
    }
    if streams == 0 {
        return Verdict::skip(
            "the server answered every request with application/json: no SSE stream to inspect",
        );
    }
    Verdict::pass(format!("{streams} SSE responses, all clean"))
}
