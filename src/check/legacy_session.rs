//! 2025-11-25 sessions: the observing driver (from [`crate::discover::legacy`],
//! re-exported for the checks), the runs the elicitation checks of that
//! generation share ([`run_all`], [`ended`]), and the session checks (§3.1, §3.2, §6.A 1, 19): handshake, 404 after DELETE, 400 on a
//! bad `MCP-Protocol-Version`, 400 without a session id.

use super::model::Verdict;
use super::probe::{Probe, ToolProfile, all_modes};
use super::registry::{Check, check};
use crate::client::raw::{RawRequest, Rpc};
use crate::findings::Finding;
use crate::protocol::headers::{PROTOCOL_VERSION, SESSION_ID};
use crate::protocol::validate::validate_elicit_params;
use crate::protocol::version::LEGACY;
use crate::protocol::{ClientCapabilities, Generation};
use serde_json::{Value, json};

use crate::discover::wire::SessionError;

pub use crate::discover::legacy::{
    Answer, CallOptions, Session, Streamed, call, close, initialize_request, modes_seen, open,
    request, watch_get,
};

/// The tools that elicit; when `answer` completes URL pages, only those
/// whose pages are on the target's origin.
pub fn eliciting(p: &Probe, answer: &Answer) -> Vec<ToolProfile> {
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

/// Calls `t` once on a session of its own (every mode declared,
/// initialized) with `answer` and `opts`, and ends the session.
pub async fn call_once(
    p: &Probe,
    t: &ToolProfile,
    answer: Answer,
    opts: &CallOptions,
) -> Result<Streamed, SessionError> {
    let s = open(p, &all_modes(), true).await?;
    let st = call(p, &s, &t.name, &t.arguments, answer, opts).await;
    close(p, &s).await;
    Ok(st)
}

/// Calls `t` on `s`, answering with `answer`, without [`CallOptions`].
pub async fn call_tool(p: &Probe, s: &Session, t: &ToolProfile, answer: Answer) -> Streamed {
    call(p, s, &t.name, &t.arguments, answer, &CallOptions::default()).await
}

/// Runs every eliciting tool once on a fresh session with `caps`.
pub async fn run_all(
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
        let st = call_tool(p, &s, &t, answer.clone()).await;
        out.push((t, st));
    }
    Ok(out)
}

/// [`run_all`] with every mode declared and every elicitation accepted
/// (URL pages completed).
pub async fn run_answered(p: &Probe) -> Result<Vec<(ToolProfile, Streamed)>, Verdict> {
    let answer = Answer::Accept {
        complete_pages: true,
    };
    run_all(p, &all_modes(), true, answer).await
}

/// Every elicitation params seen when each eliciting tool runs twice.
pub async fn all_elicitations(p: &Probe) -> Result<Vec<(String, Value)>, Verdict> {
    let mut out = Vec::new();
    for _ in 0..2 {
        for (t, s) in run_all(p, &all_modes(), true, Answer::Observe).await? {
            out.extend(s.elicitations.into_iter().map(|e| (t.name.clone(), e)));
        }
    }
    Ok(out)
}

/// What the validator says about one `elicitation/create` params object.
pub fn elicit_findings(params: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    validate_elicit_params(params, Generation::Legacy, "", &mut out);
    out
}

/// How the call of tool `t` ended on `p`'s target: a line for a response
/// (a result, a tool error, a JSON-RPC error), or why there was none (5xx,
/// a broken stream).
pub fn ended(p: &Probe, t: &str, s: &Streamed) -> Result<String, String> {
    if s.status >= 500 {
        return Err(format!("{t}: {}", p.reply_status(s.status)));
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

/// What a row says when a call showed no `elicitation/create` at all.
pub const NO_ELICITATION: &str = "no elicitation arrived";

/// Why the call of tool `t` tells nothing about how the server takes an
/// answer: no `elicitation/create` arrived, so no answer (decline, cancel,
/// error, invalid content) was ever sent. `None` when one arrived.
pub fn unanswered(p: &Probe, t: &str, s: &Streamed) -> Option<String> {
    if !s.elicitations.is_empty() {
        return None;
    }
    let how = match ended(p, t, s) {
        Ok(line) | Err(line) => line,
    };
    Some(format!("{how} ({NO_ELICITATION}, so none was answered)"))
}

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "legacy-handshake",
            "§3.1 / §6.A 1",
            Must,
            Legacy,
            "initialize returns protocolVersion, capabilities, serverInfo; a visible-ASCII session id; initialized gets 202",
            handshake;
            stdio "initialize returns protocolVersion, capabilities, serverInfo; notifications/initialized gets no reply"
        ),
        check!(
            "legacy-session-deleted-404",
            "§3.2 / §6.A 19",
            Must,
            Legacy,
            "a request on a deleted session gets HTTP 404",
            deleted_404,
            http("HTTP sessions")
        ),
        check!(
            "legacy-bad-version-400",
            "§3.2 / §6.A 19",
            Must,
            Legacy,
            "an unsupported MCP-Protocol-Version on a session request gets HTTP 400",
            bad_version,
            http("the MCP-Protocol-Version header")
        ),
        check!(
            "legacy-missing-session-400",
            "§3.2 / §6.A 19",
            Should,
            Legacy,
            "a request without the session id the server issued gets HTTP 400",
            missing_session,
            http("HTTP sessions")
        ),
    ]
}

async fn handshake(p: Probe) -> Verdict {
    let s = match open(&p, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::fail(e),
    };
    let mut problems = Vec::new();
    match s.init.get("protocolVersion").and_then(Value::as_str) {
        Some(v) if crate::protocol::version::SUPPORTED.contains(&v) || v < LEGACY => {}
        Some(v) => problems.push(format!(
            "protocolVersion {v:?} is neither 2025-11-25 nor an older version"
        )),
        None => problems.push("no protocolVersion".into()),
    }
    if !s.init.get("capabilities").is_some_and(Value::is_object) {
        problems.push("no capabilities object".into());
    }
    let info = s.init.get("serverInfo");
    if !info
        .and_then(|i| i.get("name"))
        .is_some_and(Value::is_string)
        || !info
            .and_then(|i| i.get("version"))
            .is_some_and(Value::is_string)
    {
        problems.push("serverInfo lacks name or version".into());
    }
    if let Some(sid) = &s.sid
        && (sid.is_empty() || !sid.bytes().all(|b| (0x21..=0x7e).contains(&b)))
    {
        problems.push(format!("MCP-Session-Id {sid:?} is not visible ASCII"));
    }
    if s.initialized_status != Some(202) {
        problems.push(match (s.initialized_status, p.status_is_servers()) {
            (_, true) => format!(
                "notifications/initialized got HTTP {:?}, not 202",
                s.initialized_status
            ),
            (Some(c), false) => format!(
                "notifications/initialized got {} (a notification gets no reply)",
                p.reply_status(c)
            ),
            (None, false) => "notifications/initialized got no answer from the bridge".into(),
        });
    }
    if problems.is_empty() {
        Verdict::pass(format!(
            "handshake complete{}",
            if s.sid.is_some() {
                " with a session id"
            } else {
                ""
            }
        ))
    } else {
        Verdict::fail(problems.join("; "))
    }
}

async fn deleted_404(p: Probe) -> Verdict {
    let s = match open(&p, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::skip(e),
    };
    let Some(sid) = s.sid.clone() else {
        return Verdict::skip("the server issues no session id");
    };
    let del = RawRequest::new(
        "DELETE the session",
        reqwest::Method::DELETE,
        p.settings().target.mcp_url.clone(),
    )
    .header(SESSION_ID, sid)
    .header(PROTOCOL_VERSION, LEGACY)
    .token(Some(&p.settings().target.principal));
    match p.send(del).await {
        Ok(r) if r.status == 405 => {
            return Verdict::skip("the server does not let clients delete sessions (405)");
        }
        Ok(r) if !(200..300).contains(&r.status) => {
            return Verdict::fail(format!("DELETE got HTTP {}", r.status));
        }
        Ok(_) => {}
        Err(e) => return Verdict::fail(format!("DELETE: {e}")),
    }
    match p
        .send(request(
            &p,
            &s,
            &format!("{} on the deleted session", p.target().plain_method()),
            p.target().plain_method(),
            json!({}),
        ))
        .await
    {
        Ok(r) if r.status == 404 => Verdict::pass("HTTP 404 after DELETE"),
        Ok(r) => Verdict::fail(format!("a deleted session got HTTP {}, not 404", r.status)),
        Err(e) => Verdict::fail(format!("no reply: {e}")),
    }
}

async fn bad_version(p: Probe) -> Verdict {
    let s = match open(&p, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::skip(e),
    };
    let req = request(
        &p,
        &s,
        &format!(
            "{} with MCP-Protocol-Version: 1999-01-01",
            p.target().plain_method()
        ),
        p.target().plain_method(),
        json!({}),
    )
    .header(PROTOCOL_VERSION, "1999-01-01");
    match p.send(req).await {
        Ok(r) if r.status == 400 => Verdict::pass("HTTP 400"),
        Ok(r) => Verdict::fail(format!(
            "an unsupported MCP-Protocol-Version got HTTP {}, not 400",
            r.status
        )),
        Err(e) => Verdict::fail(format!("no reply: {e}")),
    }
}

async fn missing_session(p: Probe) -> Verdict {
    let s = match open(&p, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::skip(e),
    };
    if s.sid.is_none() {
        return Verdict::skip("the server issues no session id");
    }
    let bare = Session { sid: None, ..s };
    match p
        .send(request(
            &p,
            &bare,
            &format!("{} without MCP-Session-Id", p.target().plain_method()),
            p.target().plain_method(),
            json!({}),
        ))
        .await
    {
        Ok(r) if r.status == 400 => Verdict::pass("HTTP 400"),
        Ok(r) => Verdict::fail(format!(
            "a request without the session id got HTTP {}, not 400",
            r.status
        )),
        Err(e) => Verdict::fail(format!("no reply: {e}")),
    }
}
