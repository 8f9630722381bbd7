//! 2025-11-25 elicitation over the session stream (§2, §3, §6.A 2–18): no
//! elicitation before `initialized`; capability gating (none, form only,
//! URL only); request shape (`elicitationId` present and unique) and schema
//! findings; the answer POST gets 202; happy path, decline and cancel; an
//! error reply to an undeclared mode; invalid answers; completion notices
//! only for issued ids; the `-32042` shape.

use super::input_required_shape::{is_shape_rule, verdict_of};
use super::judge::{answer_values, same_outcome};
use super::legacy_session::{
    Answer, CallOptions, Streamed, call, call_with, initialize_request, modes_seen, open,
};
use super::model::Verdict;
use super::probe::{Probe, ToolProfile, all_modes};
use super::registry::{Check, check};
use crate::client::raw::Rpc;
use crate::findings::{Finding, Severity};
use crate::protocol::capabilities::ElicitModes;
use crate::protocol::validate::validate_elicit_params;
use crate::protocol::{ClientCapabilities, Generation, codes};
use serde_json::Value;
use std::collections::HashSet;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "legacy-no-elicit-before-initialized",
            "§3.1 / §6.A 2",
            Should,
            Legacy,
            "no elicitation/create before notifications/initialized",
            before_initialized
        ),
        check!(
            "legacy-cap-none",
            "§2.4, §3.6 rule 2 / §6.A 3",
            Must,
            Legacy,
            "a client without the elicitation capability never gets elicitation/create",
            cap_none
        ),
        check!(
            "legacy-cap-form-only",
            "§2.4, §3.6 rule 2 / §6.A 4",
            Must,
            Legacy,
            "a client declaring {} or {form:{}} never gets URL mode",
            cap_form_only
        ),
        check!(
            "legacy-cap-url-only",
            "§2.4, §3.6 rule 2 / §6.A 5",
            Must,
            Legacy,
            "a client declaring {url:{}} never gets form mode (mode omitted counts as form)",
            cap_url_only
        ),
        check!(
            "legacy-request-shape",
            "§2.1, §3.4 / §6.A 6, 9",
            Must,
            Legacy,
            "elicitation/create is well formed; URL mode has a unique elicitationId",
            request_shape
        ),
        check!(
            "legacy-schema-findings",
            "§2.2, §3.6 rules 1 and 4 / §6.A 6-9",
            Must,
            Legacy,
            "requested schemas are valid, forms ask for no secrets, URLs are safe",
            schema_findings
        ),
        check!(
            "legacy-answer-202",
            "§3.2 / §6.A 15",
            Must,
            Legacy,
            "the POSTed elicitation answer gets 202 with an empty body",
            answer_202
        ),
        check!(
            "legacy-happy-path",
            "§3.2",
            Must,
            Legacy,
            "each eliciting tool finishes with a result when answered validly",
            happy_path
        ),
        check!(
            "legacy-decline",
            "§2.3, §4.10 / §6.A 12",
            Must,
            Legacy,
            "declining ends the call with a response, no crash or hang",
            decline
        ),
        check!(
            "legacy-cancel",
            "§2.3, §4.10 / §6.A 12",
            Must,
            Legacy,
            "cancelling ends the call with a response, no crash or hang",
            cancel
        ),
        check!(
            "legacy-error-reply",
            "§3.5 / §6.A 14",
            Must,
            Legacy,
            "a -32602 error reply to elicitation/create still ends the call cleanly",
            error_reply
        ),
        check!(
            "legacy-invalid-answers",
            "§3.6 / §6.A 13",
            Should,
            Legacy,
            "content that fails the schema is not accepted silently",
            invalid_answers
        ),
        check!(
            "legacy-stream-rules",
            "§3.2 / §6.A 16",
            Should,
            Legacy,
            "elicitations and the final response travel on the call's POST stream, which then closes",
            stream_rules
        ),
        check!(
            "legacy-complete-notification",
            "§3.3 / §6.A 17",
            Must,
            Legacy,
            "notifications/elicitation/complete names only elicitationIds this client was issued",
            complete_notification
        ),
        check!(
            "legacy-url-required-error",
            "§3.4 / §6.A 18",
            Must,
            Legacy,
            "-32042, when used, lists URL-mode elicitations with elicitationId, url, message",
            url_required_error
        ),
    ]
}

fn eliciting(p: &Probe, answer: &Answer) -> Vec<ToolProfile> {
    let completes_pages = matches!(
        answer,
        Answer::Accept {
            complete_pages: true
        }
    );
    p.target()
        .tools
        .iter()
        .filter(|t| t.elicits() && !(completes_pages && p.target().off_origin(t).is_some()))
        .cloned()
        .collect()
}

/// Runs every eliciting tool once on a fresh session with `caps`.
async fn run_all(
    p: &Probe,
    caps: &ClientCapabilities,
    initialized: bool,
    answer: Answer,
) -> Result<Vec<(ToolProfile, Streamed)>, Verdict> {
    let tools = eliciting(p, &answer);
    if tools.is_empty() {
        return Err(p.target().no_subject("no tool elicits"));
    }
    let s = open(p, caps, initialized).await.map_err(Verdict::fail)?;
    let mut out = Vec::new();
    for t in tools {
        let st = call(p, &s, &t.name, &t.arguments, answer.clone()).await;
        out.push((t, st));
    }
    Ok(out)
}

/// The `elicitation/create` requests among server messages seen before
/// `notifications/initialized`, as where they came from.
pub fn early_elicitations(seen: &[(&str, String)]) -> Vec<String> {
    seen.iter()
        .filter(|(_, m)| m == "elicitation/create")
        .map(|(w, _)| (*w).to_owned())
        .collect()
}

/// Sends only what a correct client sends before `initialized`
/// (`initialize`, then it may open the GET stream; it calls no tool) and
/// watches the initialize reply and the GET stream for a bounded window.
async fn before_initialized(p: Probe) -> Verdict {
    let caps = all_modes();
    let init = initialize_request(
        &p.settings().mcp_url,
        Some(&p.settings().principal),
        p.target().next_id(),
        &caps.to_value(),
    );
    let reply = match p.send(init).await {
        Ok(r) => r,
        Err(e) => return Verdict::skip(format!("initialize: {e}")),
    };
    let mut seen: Vec<(&str, String)> = reply
        .decoded()
        .map(|d| {
            d.messages
                .into_iter()
                .filter_map(|m| match m {
                    crate::protocol::jsonrpc::Message::Request(r) => {
                        Some(("the initialize reply", r.method))
                    }
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let Rpc::Result(result) = reply.rpc() else {
        return Verdict::skip(format!("initialize answered {}", reply.rpc().describe()));
    };
    let s = super::legacy_session::Session {
        sid: reply
            .header(crate::protocol::headers::SESSION_ID)
            .map(str::to_owned),
        init: result,
        initialized_status: None,
    };
    let window = (p.settings().timeout / 4).min(std::time::Duration::from_secs(2));
    let (status, requests) = super::legacy_session::watch_get(&p, &s, window).await;
    seen.extend(requests.into_iter().map(|(m, _)| ("the GET stream", m)));
    let mut notice = super::legacy_session::request(
        &p,
        &s,
        "notifications/initialized",
        crate::protocol::legacy::METHOD_INITIALIZED,
        Value::Null,
    );
    notice.body =
        serde_json::json!({"jsonrpc":"2.0","method":crate::protocol::legacy::METHOD_INITIALIZED})
            .to_string()
            .into_bytes();
    let _ = p.send(notice).await;
    super::legacy_session::close(&p, &s).await;
    let early = early_elicitations(&seen);
    let get = match status {
        Some(200) => format!("the GET stream was open for {window:?}"),
        Some(s) => format!("the GET stream got HTTP {s}"),
        None => "the GET stream did not open".to_owned(),
    };
    if early.is_empty() {
        return Verdict::pass(format!(
            "no elicitation/create before notifications/initialized ({get}; a correct client \
             calls no tool before initialized, so a server that elicits only inside tool calls \
             cannot break this rule)"
        ));
    }
    Verdict::fail(format!(
        "elicitation/create before notifications/initialized, on {}",
        early.join(" and ")
    ))
    .expecting("no server request other than ping or logging before notifications/initialized")
}

async fn gate(p: Probe, caps: ClientCapabilities, what: &str) -> Verdict {
    let allowed = caps.elicit_modes();
    let runs = match run_all(&p, &caps, true, Answer::Observe).await {
        Ok(r) => r,
        Err(v) => return v,
    };
    let mut problems = Vec::new();
    for (t, s) in &runs {
        let seen = modes_seen(&s.elicitations);
        let bad = ElicitModes {
            form: seen.form && !allowed.form,
            url: seen.url && !allowed.url,
        };
        if bad.any() {
            let modes = [(bad.form, "form"), (bad.url, "URL")]
                .iter()
                .filter(|(b, _)| *b)
                .map(|(_, m)| *m)
                .collect::<Vec<_>>()
                .join(" and ");
            problems.push(format!(
                "{}: {modes} mode sent to a client declaring {what}",
                t.name
            ));
        }
    }
    if problems.is_empty() {
        Verdict::pass(format!(
            "no undeclared mode under {what} ({} tools)",
            runs.len()
        ))
    } else {
        Verdict::fail(problems.join("; "))
    }
}

async fn cap_none(p: Probe) -> Verdict {
    gate(p, ClientCapabilities::none(), "{}").await
}

async fn cap_form_only(p: Probe) -> Verdict {
    let a = gate(
        p.clone(),
        ClientCapabilities::elicitation_empty(),
        "{elicitation:{}}",
    )
    .await;
    if !matches!(a, Verdict::Pass(_)) {
        return a;
    }
    gate(
        p,
        ClientCapabilities::with_modes(true, false),
        "{elicitation:{form:{}}}",
    )
    .await
}

async fn cap_url_only(p: Probe) -> Verdict {
    gate(
        p,
        ClientCapabilities::with_modes(false, true),
        "{elicitation:{url:{}}}",
    )
    .await
}

/// Every elicitation params seen when each eliciting tool runs twice.
async fn all_elicitations(p: &Probe) -> Result<Vec<(String, Value)>, Verdict> {
    let mut out = Vec::new();
    for _ in 0..2 {
        for (t, s) in run_all(p, &all_modes(), true, Answer::Observe).await? {
            out.extend(s.elicitations.into_iter().map(|e| (t.name.clone(), e)));
        }
    }
    Ok(out)
}

fn findings(params: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    validate_elicit_params(params, Generation::Legacy, "", &mut out);
    out
}

async fn request_shape(p: Probe) -> Verdict {
    let all = match all_elicitations(&p).await {
        Ok(a) => a,
        Err(v) => return v,
    };
    let mut found: Vec<(String, Finding)> = Vec::new();
    let mut ids = HashSet::new();
    for (tool, e) in &all {
        found.extend(
            findings(e)
                .into_iter()
                .filter(|f| is_shape_rule(&f.rule) || f.rule.starts_with("legacy-"))
                .map(|f| (tool.clone(), f)),
        );
        if let Some(id) = e.get("elicitationId").and_then(Value::as_str)
            && !ids.insert(id.to_owned())
        {
            found.push((
                tool.clone(),
                Finding::new(
                    Severity::Must,
                    "/elicitationId",
                    "legacy-url-elicitation-id-unique",
                    format!("elicitationId {id:?} was issued twice"),
                ),
            ));
        }
    }
    verdict_of(found, &format!("{} elicitation requests", all.len()))
}

async fn schema_findings(p: Probe) -> Verdict {
    let all = match all_elicitations(&p).await {
        Ok(a) => a,
        Err(v) => return v,
    };
    let found = all
        .iter()
        .flat_map(|(tool, e)| {
            findings(e)
                .into_iter()
                .filter(|f| !is_shape_rule(&f.rule) && !f.rule.starts_with("legacy-"))
                .map(|f| (tool.clone(), f))
        })
        .collect();
    verdict_of(found, &format!("{} elicitation requests", all.len()))
}

async fn answer_202(p: Probe) -> Verdict {
    let runs = match run_all(
        &p,
        &all_modes(),
        true,
        Answer::Accept {
            complete_pages: true,
        },
    )
    .await
    {
        Ok(r) => r,
        Err(v) => return v,
    };
    let replies: Vec<(u16, usize)> = runs
        .iter()
        .flat_map(|(_, s)| s.answer_replies.clone())
        .collect();
    if replies.is_empty() {
        return Verdict::skip("no elicitation was answered");
    }
    let bad: Vec<String> = replies
        .iter()
        .filter(|(s, len)| *s != 202 || *len != 0)
        .map(|(s, len)| format!("HTTP {s} with {len} body bytes"))
        .collect();
    if bad.is_empty() {
        Verdict::pass(format!(
            "{} answers, each 202 with an empty body",
            replies.len()
        ))
    } else {
        Verdict::fail(format!("answer POSTs got {}", bad.join(", ")))
    }
}

fn ended(t: &str, s: &Streamed) -> Result<String, String> {
    if s.status >= 500 {
        return Err(format!("{t}: HTTP {}", s.status));
    }
    match (&s.response, &s.failure) {
        (Some(Rpc::Result(v)), _) => Ok(format!(
            "{t}: {}",
            if v.get("isError").and_then(Value::as_bool) == Some(true) {
                "tool error result"
            } else {
                "result"
            }
        )),
        (Some(Rpc::Error(e)), _) => Ok(format!("{t}: error {}", e.code)),
        (Some(Rpc::Missing(why)), _) => Err(format!("{t}: {why}")),
        (None, Some(f)) => Err(format!("{t}: {f}")),
        (None, None) => Err(format!("{t}: the stream ended without the call's response")),
    }
}

async fn happy_path(p: Probe) -> Verdict {
    let runs = match run_all(
        &p,
        &all_modes(),
        true,
        Answer::Accept {
            complete_pages: true,
        },
    )
    .await
    {
        Ok(r) => r,
        Err(v) => return v,
    };
    let mut ok = Vec::new();
    for (t, s) in &runs {
        match (&s.response, ended(&t.name, s)) {
            (Some(Rpc::Result(_)), Ok(line)) => ok.push(line),
            (_, Ok(line)) | (_, Err(line)) => return Verdict::fail(line),
        }
    }
    let off = p.target().off_origin_notes();
    if !off.is_empty() {
        ok.extend(off);
        return Verdict::violation(Severity::Info, ok.join("; "));
    }
    Verdict::pass(ok.join("; "))
}

async fn refuse(p: Probe, answer: Answer, what: &str) -> Verdict {
    // The refusal has its own deadline: a hang is this check's finding, and
    // the first one ends the check (the others would hang as long).
    let deadline = super::decline_cancel::refusal_deadline(&p);
    let bounded = p.bounded(deadline);
    let tools = eliciting(&p, &answer);
    if tools.is_empty() {
        return p.target().no_subject("no tool elicits");
    }
    let s = match open(&bounded, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::fail(e),
    };
    let mut lines = Vec::new();
    let mut protocol_errors = Vec::new();
    for t in &tools {
        let st = call(&bounded, &s, &t.name, &t.arguments, answer.clone()).await;
        match ended(&t.name, &st) {
            Ok(line) => {
                if matches!(st.response, Some(Rpc::Error(_))) {
                    protocol_errors.push(line.clone());
                }
                lines.push(line);
            }
            Err(why) if why.contains("timeout") => {
                return Verdict::fail(format!(
                    "no answer within {deadline:?} after {what}: the call hangs ({why})"
                ))
                .expecting(format!(
                    "the call ends promptly after a {what} (a result, a tool error or an error)"
                ));
            }
            Err(why) => return Verdict::fail(format!("after {what}: {why}")),
        }
    }
    if !protocol_errors.is_empty() {
        return Verdict::violation(
            Severity::Should,
            format!(
                "a protocol error answered a plain {what}: {}",
                protocol_errors.join("; ")
            ),
        );
    }
    Verdict::pass(lines.join("; "))
}

async fn decline(p: Probe) -> Verdict {
    refuse(p, Answer::Decline, "decline").await
}

async fn cancel(p: Probe) -> Verdict {
    refuse(p, Answer::Cancel, "cancel").await
}

async fn error_reply(p: Probe) -> Verdict {
    let runs = match run_all(&p, &all_modes(), true, Answer::Error(codes::INVALID_PARAMS)).await {
        Ok(r) => r,
        Err(v) => return v,
    };
    let mut lines = Vec::new();
    for (t, s) in &runs {
        match ended(&t.name, s) {
            Ok(line) => lines.push(line),
            Err(why) => return Verdict::fail(format!("after a -32602 reply: {why}")),
        }
    }
    Verdict::pass(lines.join("; "))
}

async fn invalid_answers(p: Probe) -> Verdict {
    let Some(t) = p
        .target()
        .tools
        .iter()
        .find(|t| t.elicits() && t.modes().form && !t.modes().url)
        .cloned()
    else {
        return Verdict::skip("no form tool elicits");
    };
    let s = match open(&p, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::fail(e),
    };
    let st = call(&p, &s, &t.name, &t.arguments, Answer::Invalid).await;
    // Asked again: the same form pushed once more (a next round has another).
    let schema_of = |e: &Value| e.get("requestedSchema").cloned();
    let reprompted = st.elicitations.len() > 1
        && schema_of(&st.elicitations[1]) == st.elicitations.first().and_then(schema_of);
    match (&st.response, reprompted) {
        (_, true) => Verdict::pass(format!(
            "{}: the server asked again after invalid content",
            t.name
        )),
        (Some(Rpc::Result(v)), false)
            if v.get("isError").and_then(Value::as_bool) != Some(true) =>
        {
            // "Completed without isError" is not yet "accepted": compare
            // with the result of valid content (the control).
            let schema = st
                .elicitations
                .first()
                .and_then(schema_of)
                .unwrap_or(Value::Null);
            let seed = p.settings().seed;
            let mut values = answer_values(&Value::Object(crate::client::content::valid_content(
                &schema, seed,
            )));
            values.extend(answer_values(&Value::Object(
                crate::client::content::invalid_content(
                    &schema,
                    crate::client::content::InvalidKind::WrongType,
                    seed,
                )
                .unwrap_or_default(),
            )));
            let control = match open(&p, &all_modes(), true).await {
                Ok(s2) => {
                    call(
                        &p,
                        &s2,
                        &t.name,
                        &t.arguments,
                        Answer::Accept {
                            complete_pages: true,
                        },
                    )
                    .await
                    .response
                }
                Err(_) => None,
            };
            match control {
                Some(Rpc::Result(c)) if same_outcome(&c, v, &values) => Verdict::fail(format!(
                    "{}: content that fails the schema was accepted like valid content: \
                     \"{}\" (valid content: \"{}\")",
                    t.name,
                    super::subject::result_text(v),
                    super::subject::result_text(&c)
                ))
                .expecting(
                    "invalid content is refused (an error, a tool error) or asked for again",
                ),
                _ => Verdict::violation(
                    Severity::Info,
                    format!(
                        "{}: could not tell: the call completed without isError (\"{}\"), but not \
                         with the result valid content gets; the server may refuse in plain text",
                        t.name,
                        super::subject::result_text(v)
                    ),
                ),
            }
        }
        (Some(_), false) => Verdict::pass(format!("{}: invalid content was refused", t.name)),
        (None, false) => Verdict::violation(
            Severity::Must,
            format!(
                "{}: {}",
                t.name,
                st.failure.unwrap_or_else(|| "no response".into())
            ),
        ),
    }
}

async fn complete_notification(p: Probe) -> Verdict {
    let runs = match run_all(
        &p,
        &all_modes(),
        true,
        Answer::Accept {
            complete_pages: true,
        },
    )
    .await
    {
        Ok(r) => r,
        Err(v) => return v,
    };
    let issued: HashSet<String> = runs
        .iter()
        .flat_map(|(_, s)| {
            s.elicitations.iter().filter_map(|e| {
                e.get("elicitationId")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
        })
        .collect();
    let mut seen = 0;
    let mut problems = Vec::new();
    for (t, s) in &runs {
        for (m, params) in &s.notifications {
            if m != "notifications/elicitation/complete" {
                continue;
            }
            seen += 1;
            match params.get("elicitationId").and_then(Value::as_str) {
                Some(id) if issued.contains(id) => {}
                Some(id) => problems.push(format!(
                    "{}: completion for {id:?}, which this client was never issued",
                    t.name
                )),
                None => problems.push(format!("{}: completion without an elicitationId", t.name)),
            }
        }
    }
    if !problems.is_empty() {
        return Verdict::fail(problems.join("; "));
    }
    if seen == 0 {
        return Verdict::pass("no completion notifications were sent (they are optional)");
    }
    Verdict::pass(format!(
        "{seen} completion notifications, each for an issued elicitationId"
    ))
}

async fn url_required_error(p: Probe) -> Verdict {
    let mut errors = Vec::new();
    for caps in [all_modes(), ClientCapabilities::with_modes(true, false)] {
        if let Ok(runs) = run_all(&p, &caps, true, Answer::Observe).await {
            errors.extend(runs.into_iter().flat_map(|(_, s)| s.errors));
        }
    }
    let mut problems = Vec::new();
    let mut used = 0;
    for e in errors
        .iter()
        .filter(|e| e.get("code").and_then(Value::as_i64) == Some(codes::URL_ELICITATION_REQUIRED))
    {
        used += 1;
        let list = e
            .get("data")
            .and_then(|d| d.get("elicitations"))
            .and_then(Value::as_array);
        match list {
            Some(items) if !items.is_empty() => {
                for it in items {
                    let ok = it.get("mode").and_then(Value::as_str) == Some("url")
                        && ["elicitationId", "url", "message"]
                            .iter()
                            .all(|k| it.get(k).is_some_and(Value::is_string));
                    if !ok {
                        problems.push(format!("an item of data.elicitations is not a URL-mode request with elicitationId, url and message: {it}"));
                    }
                }
            }
            _ => problems.push("-32042 without a non-empty data.elicitations".into()),
        }
    }
    if !problems.is_empty() {
        return Verdict::fail(problems.join("; "));
    }
    Verdict::pass(if used == 0 {
        "-32042 was never used".to_owned()
    } else {
        format!("{used} well-formed -32042 errors")
    })
}

async fn stream_rules(p: Probe) -> Verdict {
    let Some(t) = p
        .target()
        .tools
        .iter()
        .find(|t| t.elicits() && t.modes().form && !t.modes().url)
        .cloned()
    else {
        return Verdict::skip("no form tool elicits");
    };
    let s = match open(&p, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::fail(e),
    };
    let opts = CallOptions {
        watch_close: true,
        ..Default::default()
    };
    let st = call_with(
        &p,
        &s,
        &t.name,
        &t.arguments,
        Answer::Accept {
            complete_pages: true,
        },
        &opts,
    )
    .await;
    let sse = st
        .content_type
        .as_deref()
        .is_some_and(|c| c.starts_with("text/event-stream"));
    if !sse {
        return Verdict::violation(
            Severity::Should,
            format!(
                "{}: the call was answered with {:?}, so its elicitations cannot travel on its stream",
                t.name, st.content_type
            ),
        );
    }
    if st.elicitations.is_empty() {
        return Verdict::violation(
            Severity::Should,
            format!(
                "{}: no elicitation/create on the call's POST stream",
                t.name
            ),
        );
    }
    if st.response.is_none() {
        return Verdict::violation(
            Severity::Should,
            format!(
                "{}: the final response did not arrive on the POST stream ({})",
                t.name,
                st.failure.unwrap_or_default()
            ),
        );
    }
    match st.after_response {
        Some((_, extra)) if extra > 0 => Verdict::violation(
            Severity::Should,
            format!("{}: {extra} message(s) after the final response", t.name),
        ),
        Some((false, _)) => Verdict::violation(
            Severity::Should,
            format!(
                "{}: the stream stayed open after the final response",
                t.name
            ),
        ),
        _ => Verdict::pass(format!(
            "{}: {} elicitation(s) and the response on the POST stream, which then closed",
            t.name,
            st.elicitations.len()
        )),
    }
}
