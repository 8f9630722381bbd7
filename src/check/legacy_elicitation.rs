//! 2025-11-25 elicitation over the session stream (§2, §3, §6.A 2–18), the
//! rules without a 2026-07-28 twin: no elicitation before `initialized`;
//! request shape (`elicitationId` present and unique); the answer POST gets
//! 202; an error reply to an undeclared mode; invalid answers; completion
//! notices only for issued ids; the `-32042` shape. The twins (capability
//! gating, schema findings, happy path, decline and cancel) sit beside
//! their MRTR checks in `capabilities`, `schema_findings`, `flows` and
//! `decline_cancel`.

use super::control::Control;
use super::input_required_shape::{is_shape_rule, verdict_of};
use super::input_responses::Tally;
use super::invalid_content::{KINDS, describe};
use super::judge::answer_values;
use super::legacy_session::{
    Answer, CallOptions, all_elicitations, call, call_once, elicit_findings, eliciting, ended,
    initialize_request, open, run_all, run_answered, unanswered,
};
use super::model::Verdict;
use super::probe::{Probe, ToolProfile, all_modes};
use super::registry::{Check, check};
use crate::client::content::{invalid_content, valid_content};
use crate::client::raw::Rpc;
use crate::findings::{Finding, Severity};
use crate::protocol::{ClientCapabilities, codes};
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
            "legacy-request-shape",
            "§2.1, §3.4 / §6.A 6, 9",
            Must,
            Legacy,
            "elicitation/create is well formed; URL mode has a unique elicitationId",
            request_shape
        ),
        check!(
            "legacy-answer-202",
            "§3.2 / §6.A 15",
            Must,
            Legacy,
            "the POSTed elicitation answer gets 202 with an empty body",
            answer_202,
            http("the HTTP status of a POSTed answer")
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
            stream_rules,
            http("SSE streams")
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

/// The `elicitation/create` requests among server messages seen before
/// `notifications/initialized`, as where they came from.
pub fn early_elicitations(seen: &[(String, String)]) -> Vec<String> {
    seen.iter()
        .filter(|(_, m)| m == "elicitation/create")
        .map(|(w, _)| w.clone())
        .collect()
}

/// The tool the withheld session calls: an eliciting one whose first
/// request is a form (a URL page needs no completing to be seen), else any
/// eliciting one.
fn withheld_subject(p: &Probe) -> Option<ToolProfile> {
    let tools = eliciting(p, &Answer::Peek);
    tools
        .iter()
        .find(|t| t.modes().form && !t.modes().url)
        .or_else(|| tools.first())
        .cloned()
}

/// Opens a 2025-11-25 session and withholds `notifications/initialized`:
/// watches the initialize reply and the GET stream for a bounded window,
/// then (breaking the client's SHOULD to observe the server's SHOULD NOT)
/// calls an eliciting tool on that session and stops at its first
/// `elicitation/create`. A server that elicits there breaks the rule; one
/// that does not passes only beside a control: the same tool elicits on an
/// initialized session.
async fn before_initialized(p: Probe) -> Verdict {
    let caps = all_modes();
    let init = initialize_request(
        &p.settings().target.mcp_url,
        Some(&p.settings().target.principal),
        p.target().next_id(),
        &caps.to_value(),
    );
    let reply = match p.send(init).await {
        Ok(r) => r,
        Err(e) => return Verdict::skip(format!("initialize: {e}")),
    };
    let mut seen: Vec<(String, String)> = reply
        .decoded()
        .map(|d| {
            d.messages
                .into_iter()
                .filter_map(|m| match m {
                    crate::protocol::jsonrpc::Message::Request(r) => {
                        Some(("the initialize reply".to_owned(), r.method))
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
        get: Default::default(),
    };
    let window = (p.settings().target.timeout / 4).min(std::time::Duration::from_secs(2));
    let (status, requests) = super::legacy_session::watch_get(&p, &s, window).await;
    seen.extend(
        requests
            .into_iter()
            .map(|(m, _)| ("the GET stream".to_owned(), m)),
    );
    let subject = withheld_subject(&p);
    let withheld = match &subject {
        Some(t) => Some(
            call(
                &p,
                &s,
                &t.name,
                &t.arguments,
                Answer::Peek,
                &CallOptions::default(),
            )
            .await,
        ),
        None => None,
    };
    if let (Some(t), Some(st)) = (&subject, &withheld) {
        let on_post = st.elicitations.len() - st.via_get;
        seen.extend((0..on_post).map(|_| {
            (
                format!("the tools/call {} stream", t.name),
                "elicitation/create".to_owned(),
            )
        }));
        seen.extend((0..st.via_get).map(|_| {
            (
                format!("the GET stream during tools/call {}", t.name),
                "elicitation/create".to_owned(),
            )
        }));
    }
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
    let mut early = early_elicitations(&seen);
    early.dedup();
    if !early.is_empty() {
        return Verdict::fail(format!(
            "elicitation/create before notifications/initialized, on {}",
            early.join(" and ")
        ))
        .expecting(
            "no server request other than ping or logging before notifications/initialized",
        );
    }
    let get = match status {
        Some(200) => format!("the GET stream was open for {window:?}"),
        Some(s) => format!("the GET stream got {}", p.reply_status(s)),
        None => "the GET stream did not open".to_owned(),
    };
    let (Some(t), Some(st)) = (subject, withheld) else {
        return p.target().no_subject(&format!(
            "could not tell: no elicitation/create on the initialize reply or the GET stream \
             before notifications/initialized ({get}), but no tool elicits, so none was called \
             on a session whose initialized was withheld"
        ));
    };
    let got = match ended(&p, &t.name, &st) {
        Ok(line) | Err(line) => line,
    };
    // The same tool on an initialized session: it must elicit there, or
    // its silence on the withheld session proves nothing.
    let control = match call_once(&p, &t, Answer::Peek, &CallOptions::default()).await {
        Err(e) => Err(format!("it could not be sent ({e})")),
        Ok(c) if c.elicitations.is_empty() => Err(format!(
            "it did not elicit ({})",
            match ended(&p, &t.name, &c) {
                Ok(line) | Err(line) => line,
            }
        )),
        Ok(_) => Ok(None),
    };
    Control::observed(
        format!("{} elicits on an initialized session", t.name),
        control,
    )
    .judge(Verdict::pass(format!(
        "no elicitation/create before notifications/initialized: not on the initialize reply, \
         not on the GET stream ({get}), not for tools/call {} on that session ({got})",
        t.name
    )))
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
            elicit_findings(e)
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

async fn answer_202(p: Probe) -> Verdict {
    let runs = match run_answered(&p).await {
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

async fn error_reply(p: Probe) -> Verdict {
    let runs = match run_all(&p, &all_modes(), true, Answer::Error(codes::INVALID_PARAMS)).await {
        Ok(r) => r,
        Err(v) => return v,
    };
    let mut lines = Vec::new();
    let mut untold = Vec::new();
    for (t, s) in &runs {
        if let Some(why) = unanswered(&p, &t.name, s) {
            untold.push(why);
            continue;
        }
        match ended(&p, &t.name, s) {
            Ok(line) => lines.push(line),
            Err(why) => return Verdict::fail(format!("after a -32602 reply: {why}")),
        }
    }
    if lines.is_empty() {
        return Verdict::skip(format!(
            "could not tell: no -32602 reply was sent: {}",
            untold.join("; ")
        ));
    }
    if !untold.is_empty() {
        lines.push(format!("could not tell: {}", untold.join("; ")));
    }
    // A server that takes no answer at all ends its calls some other way.
    let tools = || runs.iter().map(|(t, _)| t);
    let Some(t) = tools().find(|t| t.modes().form).or_else(|| tools().next()) else {
        return Verdict::skip("no tool was called");
    };
    Control::answer(&p, t)
        .await
        .judge(Verdict::pass(lines.join("; ")))
}

/// [`super::invalid_content`]'s twin: each kind of invalid content on every
/// form tool, each on a session of its own; the same form pushed again is a
/// re-prompt, a result of the valid answer's shape (the control) is
/// acceptance, and a refusal counts only where the control held.
async fn invalid_answers(p: Probe) -> Verdict {
    let tools: Vec<_> = p
        .target()
        .tools
        .iter()
        .filter(|t| t.elicits() && t.modes().form && !t.modes().url)
        .cloned()
        .collect();
    if tools.is_empty() {
        return Verdict::skip("no form tool elicits");
    }
    let seed = p.settings().target.seed;
    let schema_of = |e: &Value| e.get("requestedSchema").cloned();
    let mut tally = Tally::default();
    let (mut sent, mut unsent) = (0, Vec::new());
    for t in &tools {
        let schema = t
            .rounds
            .first()
            .and_then(|r| schema_of(&r.result))
            .unwrap_or(Value::Null);
        let kinds: Vec<_> = KINDS
            .into_iter()
            .filter_map(|k| invalid_content(&schema, k, seed).map(|c| (k, c)))
            .collect();
        if kinds.is_empty() {
            continue;
        }
        let control = Control::answer(&p, t).await;
        let mut values = answer_values(&Value::Object(valid_content(&schema, seed)));
        for (kind, content) in kinds {
            let what = format!("{}: {}", t.name, describe(kind));
            values.extend(answer_values(&Value::Object(content)));
            let st = match call_once(&p, t, Answer::Invalid(kind), &CallOptions::default()).await {
                Ok(st) => st,
                Err(e) => match tally.halt(e) {
                    Some(skip) => return skip,
                    None => break,
                },
            };
            if let Some(why) = unanswered(&p, &t.name, &st) {
                unsent.push(why);
                continue;
            }
            sent += 1;
            // Asked again: the same form pushed once more.
            let reprompted = st.elicitations.len() > 1
                && schema_of(&st.elicitations[1]) == st.elicitations.first().and_then(schema_of);
            if reprompted {
                tally.refused(format!("{what}: the same form asked for again"), &control);
                continue;
            }
            let reply = match (st.response, st.failure) {
                (Some(rpc), _) => Ok((rpc, p.reply_status(st.status))),
                (None, f) => Err(f.unwrap_or_else(|| "no response".into())),
            };
            tally.file(&what, reply, &control, &values);
        }
    }
    if sent == 0 && !unsent.is_empty() {
        return Verdict::skip(format!(
            "could not tell: no invalid content was sent: {}",
            unsent.join("; ")
        ));
    }
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    tally.verdict(&names.join(", "), "form content")
}

async fn complete_notification(p: Probe) -> Verdict {
    let runs = match run_answered(&p).await {
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
        match run_all(&p, &caps, true, Answer::Observe).await {
            Ok(runs) => errors.extend(runs.into_iter().flat_map(|(_, s)| s.errors)),
            Err(v) => return v,
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
    if used == 0 {
        // The rule is about -32042 when used: unused, nothing was judged.
        return Verdict::skip(
            "-32042 was never used (every eliciting tool called with every mode and with form \
             mode only): nothing to judge",
        );
    }
    Verdict::pass(format!("{used} well-formed -32042 errors"))
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
    let st = call(
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
    let n = st.elicitations.len();
    if n == 0 {
        let get = if st.get_status == Some(200) {
            " nor on the session's GET stream"
        } else {
            ""
        };
        return Verdict::violation(
            Severity::Should,
            format!(
                "{}: no elicitation/create on the call's POST stream{get}",
                t.name
            ),
        );
    }
    // A tool that pushes on the GET stream is called with it open (the
    // driver does so), so its elicitations are seen, and judged here by the
    // rule's first clause: they SHOULD travel on the call's POST stream.
    let mut problems = Vec::new();
    if st.via_get == n {
        problems.push(format!(
            "{}: its {n} elicitation(s) arrived only on the session's GET stream, none on the \
             call's POST stream (legacy-get-stream reports the same)",
            t.name
        ));
    } else if st.via_get > 0 {
        problems.push(format!(
            "{}: {} of {n} elicitation(s) arrived on the session's GET stream, not the call's \
             POST stream (legacy-get-stream reports the same)",
            t.name, st.via_get
        ));
    }
    match (&st.response, st.after_response) {
        (None, _) => problems.push(format!(
            "{}: the final response did not arrive on the POST stream ({})",
            t.name,
            st.failure.clone().unwrap_or_default()
        )),
        (Some(_), Some((_, extra))) if extra > 0 => problems.push(format!(
            "{}: {extra} message(s) after the final response",
            t.name
        )),
        (Some(_), Some((false, _))) => problems.push(format!(
            "{}: the stream stayed open after the final response",
            t.name
        )),
        _ => {}
    }
    if !problems.is_empty() {
        return Verdict::violation(Severity::Should, problems.join("; "));
    }
    Verdict::pass(format!(
        "{}: {n} elicitation(s) and the response on the POST stream, which then closed",
        t.name
    ))
}
