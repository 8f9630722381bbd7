//! Input a 2026-07-28 server must refuse rather than serve: a POST body that
//! holds two JSON-RPC messages back to back (every message is its own POST
//! with a single message as the body, §3.2; the body as a whole is not one
//! JSON text, so JSON-RPC makes it a parse error), and a tool argument of a
//! type its `inputSchema` forbids (the tools page: servers MUST validate
//! all tool inputs; SEP-1303: the error may be a tool result with
//! `isError`). Each refusal passes only beside a [`Control`]: the same
//! request, valid, is served. Each rule has a 2025-11-25 twin on an
//! initialized session, judged by the same code.

use super::control::Control;
use super::legacy_session::{self, Answer, CallOptions};
use super::model::Verdict;
use super::probe::{Probe, ToolProfile, all_modes};
use super::registry::{Check, check};
use super::subject::{MAX_ROUNDS, reading};
use crate::client::ReplyStatus;
use crate::client::raw::{RawRequest, Rpc};
use crate::discover::modern::{WalkEnd, call_request, walk};
use crate::protocol::codes;
use serde_json::{Map, Value, json};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-one-message-per-body",
            "§3.2 (one JSON-RPC message per POST body)",
            Must,
            Modern,
            "a POST body holding two JSON-RPC requests back to back is refused (-32700 / -32600 or HTTP 400), never served",
            two_messages,
            http("POST bodies")
        ),
        check!(
            "mrtr-tool-argument-types",
            "§tools (Security: servers MUST validate all tool inputs), SEP-1303",
            Must,
            Modern,
            "a tool argument of a type its inputSchema forbids gets an error (-32602 or an isError result), not a success",
            argument_types
        ),
    ]
}

/// The 2025-11-25 twins, on an initialized session.
pub fn legacy_checks() -> Vec<Check> {
    vec![
        check!(
            "legacy-one-message-per-body",
            "§3.2 (one JSON-RPC message per POST body)",
            Must,
            Legacy,
            "a POST body holding two JSON-RPC requests back to back is refused (-32700 / -32600 or HTTP 400), never served",
            legacy_two_messages,
            http("POST bodies")
        ),
        check!(
            "legacy-tool-argument-types",
            "§tools (Security: servers MUST validate all tool inputs), SEP-1303",
            Must,
            Legacy,
            "a tool argument of a type its inputSchema forbids gets an error (-32602 or an isError result), not a success",
            legacy_argument_types
        ),
    ]
}

/// The generation a probe speaks: 2026-07-28 requests, or 2025-11-25 ones
/// on a session of their own.
#[derive(Clone, Copy)]
enum Era {
    Modern,
    Legacy,
}

/// Whether a JSON-RPC error code says the body was not one valid message.
fn framing_code(code: i64) -> bool {
    code == codes::PARSE_ERROR || code == codes::INVALID_REQUEST
}

async fn two_messages(p: Probe) -> Verdict {
    let method = p.target().plain_method();
    let single = p.modern_request(
        format!("{method} (one message)"),
        method,
        json!({}),
        &all_modes(),
    );
    two_in_one_body(&p, method, single.clone(), single).await
}

/// [`two_messages`] on an initialized 2025-11-25 session.
async fn legacy_two_messages(p: Probe) -> Verdict {
    let s = match legacy_session::open(&p, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::skip(e.to_string()),
    };
    let method = "tools/list";
    let single = legacy_session::request(
        &p,
        &s,
        &format!("{method} on the session (one message)"),
        method,
        json!({}),
    );
    // The control is a request of its own: an id is not reused on a session.
    let control = legacy_session::request(
        &p,
        &s,
        &format!("{method} on the session (one message)"),
        method,
        json!({}),
    );
    let verdict = two_in_one_body(&p, method, single, control).await;
    legacy_session::close(&p, &s).await;
    verdict
}

/// Sends `single` (a `method` request) twice back to back in one body and
/// judges the reply beside the control: `control` (the same request, alone)
/// is served.
async fn two_in_one_body(
    p: &Probe,
    method: &str,
    single: RawRequest,
    mut control: RawRequest,
) -> Verdict {
    // The same request again, another id, straight after the first.
    let second = single.clone().with_id(json!("elicitkit-second-message"));
    let mut body = single.body.clone();
    body.extend_from_slice(&second.body);
    let mut double = single.clone().body(body);
    double.label = format!("{method} twice in one body, back to back");
    let reply = match p.send(double).await {
        Ok(r) => r,
        Err(e) => return Verdict::fail(format!("no reply: {e}")),
    };
    let expect = "HTTP 400 or a JSON-RPC error -32700 (Parse error) / -32600 (Invalid Request): \
                  the body is not one JSON-RPC message";
    let verdict = match reply.rpc() {
        _ if reply.status >= 500 => Verdict::fail(format!(
            "two messages in one body got HTTP {}",
            reply.status
        )),
        Rpc::Result(_) => Verdict::fail(format!(
            "two messages in one body were served: HTTP {} and a result",
            reply.status
        ))
        .expecting(expect),
        Rpc::Error(e) if framing_code(e.code) || reply.status == 400 => Verdict::pass(format!(
            "two messages in one body: HTTP {} and error {} ({})",
            reply.status,
            e.code,
            codes::name(e.code)
        )),
        _ if reply.status == 400 => Verdict::pass("two messages in one body: HTTP 400"),
        // Refused, not served: the MUST holds; how it was refused is
        // recorded (JSON-RPC names -32700 for it, the status is not set).
        Rpc::Error(e) => Verdict::info(format!(
            "two messages in one body were refused (not served), with HTTP {} and error {} ({}) \
             rather than a parse or invalid-request error",
            reply.status,
            e.code,
            codes::name(e.code)
        )),
        Rpc::Missing(why) if (400..500).contains(&reply.status) => Verdict::info(format!(
            "two messages in one body were refused (not served), with HTTP {} and no JSON-RPC \
             error ({why}); a -32700 parse error would say why",
            reply.status
        )),
        Rpc::Missing(why) => Verdict::fail(format!(
            "two messages in one body: HTTP {} and {why}",
            reply.status
        ))
        .expecting(expect),
    };
    control.label = format!("control: {}", control.label);
    let seen = match p.send(control).await {
        Ok(r) => match r.rpc() {
            Rpc::Result(v) => Ok(Some(v)),
            other => Err(format!(
                "it got {}",
                p.reply_status(r.status).then(" and ", other.describe())
            )),
        },
        Err(e) => Err(format!("it got no reply: {e}")),
    };
    Control::observed(
        format!("the same {method}, alone in its body, is served"),
        seen,
    )
    .judge(verdict)
}

/// A value of another JSON type than `ty` that no lax parser takes for one
/// (no numeric string for a number, no `"true"` for a boolean).
fn wrong_value(ty: &str) -> Option<Value> {
    Some(match ty {
        "string" => json!({"elicitkit": "an object where a string belongs"}),
        "integer" | "number" => json!("elicitkit-not-a-number"),
        "boolean" => json!("elicitkit-not-a-boolean"),
        "array" | "object" => json!(4096.5),
        _ => return None,
    })
}

/// The first argument of `t` whose `inputSchema` gives it one plain type
/// (not one mirrored into an `Mcp-Param-*` header, whose refusal would be
/// about the header), with a value of another type in its place: the
/// argument's name and the arguments to send.
fn mistyped(t: &ToolProfile) -> Option<(String, Map<String, Value>)> {
    let props = t
        .descriptor
        .pointer("/inputSchema/properties")
        .and_then(Value::as_object)?;
    props.iter().find_map(|(name, schema)| {
        if schema.get("x-mcp-header").is_some() {
            return None;
        }
        let bad = wrong_value(schema.get("type").and_then(Value::as_str)?)?;
        let mut args = t.arguments.clone();
        args.insert(name.clone(), bad);
        Some((name.clone(), args))
    })
}

/// How one tool took a mistyped argument.
enum Took {
    /// Refused (what it got).
    Refused(String),
    /// Served as if valid (what it got).
    Accepted(String),
    /// Neither could be told (why).
    Unclear(String),
}

/// Calls `t` with `args` in `era`; a reply that asks for input is answered
/// validly to its end (a server may judge its arguments late).
async fn take(era: Era, p: &Probe, t: &ToolProfile, arg: &str, args: &Map<String, Value>) -> Took {
    let label = format!("tools/call {} with a mistyped {arg}", t.name);
    match era {
        Era::Modern => take_modern(p, t, label, args).await,
        Era::Legacy => take_legacy(p, t, args).await,
    }
}

/// [`take`] in 2026-07-28: input_required rounds are walked.
async fn take_modern(p: &Probe, t: &ToolProfile, label: String, args: &Map<String, Value>) -> Took {
    let req = call_request(p, label, &t.name, args, &all_modes(), None, None);
    let reply = match p.send(req).await {
        Ok(r) => r,
        Err(e) => return Took::Unclear(format!("no reply: {e}")),
    };
    let rpc = reply.rpc();
    let status = p.reply_status(reply.status);
    match &rpc {
        Rpc::Result(v) if reply.status < 500 && super::judge::asks_for_input(v) => {
            let w = walk(p, &t.name, args, &all_modes(), MAX_ROUNDS, false).await;
            match w.end {
                WalkEnd::Complete { is_error: true, .. } => {
                    Took::Refused("input_required, then a tool error result".into())
                }
                WalkEnd::Error { code, status, .. } => Took::Refused(format!(
                    "input_required, then {}",
                    p.reply_status(status)
                        .then(" and ", format_args!("error {code}"))
                )),
                WalkEnd::Complete { .. } => Took::Accepted(
                    "input_required, and a complete result once the input was given".into(),
                ),
                other => Took::Unclear(format!(
                    "input_required, then {}",
                    super::subject::describe_end(p, &other)
                )),
            }
        }
        _ => took(&rpc, status),
    }
}

/// [`take`] in 2025-11-25: on a session of its own, every elicitation
/// pushed is answered validly (pages completed), as the 2026 walk does.
async fn take_legacy(p: &Probe, t: &ToolProfile, args: &Map<String, Value>) -> Took {
    let s = match legacy_session::open(p, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Took::Unclear(format!("no session: {e}")),
    };
    let accept = Answer::Accept {
        complete_pages: true,
    };
    let st = legacy_session::call(p, &s, &t.name, args, accept, &CallOptions::default()).await;
    legacy_session::close(p, &s).await;
    let asked = match st.elicitations.len() {
        0 => "",
        _ => "elicitation answered, then ",
    };
    match &st.response {
        Some(rpc) => match took(rpc, p.reply_status(st.status)) {
            Took::Refused(got) => Took::Refused(format!("{asked}{got}")),
            Took::Accepted(got) => Took::Accepted(format!("{asked}{got}")),
            Took::Unclear(why) => Took::Unclear(format!("{asked}{why}")),
        },
        None if st.status >= 500 => Took::Accepted(p.reply_status(st.status).to_string()),
        None => Took::Unclear(format!(
            "{asked}no response ({})",
            st.failure.clone().unwrap_or_default()
        )),
    }
}

/// How a final reply (`rpc`, with `status`) to a mistyped call reads, either
/// generation: an error or a tool error refuses it, a 5xx or a result
/// serves it.
fn took(rpc: &Rpc, status: ReplyStatus) -> Took {
    let got = reading(rpc, status);
    match rpc {
        _ if status.code() >= 500 => Took::Accepted(status.to_string()),
        Rpc::Error(_) => Took::Refused(got),
        Rpc::Result(v) if v.get("isError").and_then(Value::as_bool) == Some(true) => {
            Took::Refused(got)
        }
        Rpc::Result(_) => Took::Accepted(got),
        Rpc::Missing(why) => Took::Unclear(status.then(", ", why)),
    }
}

/// The same tool with its valid arguments is served in `era`: a result
/// that is not a tool error (complete, or a round that asks for input; in
/// 2025-11-25, once its elicitations are answered validly).
async fn served(era: Era, p: &Probe, t: &ToolProfile) -> Control {
    let seen = match era {
        Era::Modern => {
            let req = p.call_request(
                format!("control: tools/call {}", t.name),
                t,
                &all_modes(),
                None,
                None,
            );
            match p.send(req).await {
                Ok(r) => match r.rpc() {
                    Rpc::Result(v) if v.get("isError").and_then(Value::as_bool) != Some(true) => {
                        Ok(Some(v))
                    }
                    other => Err(format!(
                        "it got {}",
                        reading(&other, p.reply_status(r.status))
                    )),
                },
                Err(e) => Err(format!("it got no reply: {e}")),
            }
        }
        Era::Legacy => {
            let accept = Answer::Accept {
                complete_pages: true,
            };
            match legacy_session::call_once(p, t, accept, &CallOptions::default()).await {
                Err(e) => Err(format!("it could not be sent ({e})")),
                Ok(st) => match st.response {
                    Some(Rpc::Result(v))
                        if v.get("isError").and_then(Value::as_bool) != Some(true) =>
                    {
                        Ok(Some(v))
                    }
                    Some(other) => Err(format!(
                        "it got {}",
                        reading(&other, p.reply_status(st.status))
                    )),
                    None => Err(format!(
                        "it got no response ({})",
                        st.failure.unwrap_or_default()
                    )),
                },
            }
        }
    };
    Control::observed(format!("{} with valid arguments is served", t.name), seen)
}

/// At most this many tools are called with a mistyped argument.
const TOOLS: usize = 2;

async fn argument_types(p: Probe) -> Verdict {
    argument_types_in(Era::Modern, &p).await
}

/// [`argument_types`] on 2025-11-25 sessions.
async fn legacy_argument_types(p: Probe) -> Verdict {
    argument_types_in(Era::Legacy, &p).await
}

/// Calls up to [`TOOLS`] tools with a mistyped argument in `era`: any
/// served fails; a refusal passes beside its control.
async fn argument_types_in(era: Era, p: &Probe) -> Verdict {
    // Tools that change nothing first, then those that may repeat.
    let mut tools: Vec<(ToolProfile, String, Map<String, Value>)> = p
        .target()
        .tools
        .iter()
        .filter_map(|t| mistyped(t).map(|(a, args)| (t.clone(), a, args)))
        .collect();
    if tools.is_empty() {
        return p
            .target()
            .no_subject("no tool argument has a plain type in its inputSchema");
    }
    tools.sort_by_key(|(t, _, _)| (t.elicits(), !t.read_only, t.single_use));
    tools.truncate(TOOLS);
    let (mut accepted, mut refused, mut unclear) = (Vec::new(), Vec::new(), Vec::new());
    for (t, arg, args) in &tools {
        let what = format!("{} with {arg} = {}", t.name, args[arg.as_str()]);
        match take(era, p, t, arg, args).await {
            Took::Accepted(got) => accepted.push(format!("{what}: {got}")),
            Took::Refused(got) => refused.push((t, format!("{what}: {got}"))),
            Took::Unclear(why) => unclear.push(format!("{what}: {why}")),
        }
    }
    if !accepted.is_empty() {
        return Verdict::fail(format!(
            "a mistyped argument was served as valid: {}",
            accepted.join("; ")
        ))
        .expecting("an error for an argument its inputSchema forbids: -32602, or a tool result with isError: true");
    }
    let mut passed = Vec::new();
    let mut unsure = unclear;
    for (t, line) in refused {
        let control = served(era, p, t).await;
        if control.held() {
            passed.push(format!("{line} (control: {})", control.what()));
        } else {
            unsure.push(format!("{line}, {}", control.why_not()));
        }
    }
    if passed.is_empty() {
        return Verdict::info(format!("could not tell: {}", unsure.join("; ")));
    }
    if !unsure.is_empty() {
        passed.push(format!("could not tell: {}", unsure.join("; ")));
    }
    Verdict::pass(passed.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_value_is_never_of_the_type_it_replaces() {
        for ty in ["string", "integer", "number", "boolean", "array", "object"] {
            let v = wrong_value(ty).expect(ty);
            let is = match ty {
                "string" => v.is_string(),
                "integer" => v.is_i64() || v.is_u64(),
                "number" => v.is_number(),
                "boolean" => v.is_boolean(),
                "array" => v.is_array(),
                _ => v.is_object(),
            };
            assert!(!is, "{ty}: {v}");
        }
        assert_eq!(wrong_value("null"), None);
    }
}
