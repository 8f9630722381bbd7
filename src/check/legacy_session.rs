//! 2025-11-25 sessions: the observing driver (from [`crate::discover::legacy`],
//! re-exported for the checks) and the session checks (§3.1, §3.2, §6.A 1, 19): handshake, 404 after DELETE, 400 on a
//! bad `MCP-Protocol-Version`, 400 without a session id.

use super::model::Verdict;
use super::probe::{Probe, all_modes};
use super::registry::{Check, check};
use crate::client::raw::RawRequest;
use crate::protocol::headers::{PROTOCOL_VERSION, SESSION_ID};
use crate::protocol::version::LEGACY;
use serde_json::{Value, json};

pub use crate::discover::legacy::{
    Answer, CallOptions, Session, Streamed, call, call_with, close, initialize_request, modes_seen,
    open, request, watch_get,
};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "legacy-handshake",
            "§3.1 / §6.A 1",
            Must,
            Legacy,
            "initialize returns protocolVersion, capabilities, serverInfo; a visible-ASCII session id; initialized gets 202",
            handshake
        ),
        check!(
            "legacy-session-deleted-404",
            "§3.2 / §6.A 19",
            Must,
            Legacy,
            "a request on a deleted session gets HTTP 404",
            deleted_404
        ),
        check!(
            "legacy-bad-version-400",
            "§3.2 / §6.A 19",
            Must,
            Legacy,
            "an unsupported MCP-Protocol-Version on a session request gets HTTP 400",
            bad_version
        ),
        check!(
            "legacy-missing-session-400",
            "§3.2 / §6.A 19",
            Should,
            Legacy,
            "a request without the session id the server issued gets HTTP 400",
            missing_session
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
        problems.push(format!(
            "notifications/initialized got HTTP {:?}, not 202",
            s.initialized_status
        ));
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
        p.settings().mcp_url.clone(),
    )
    .header(SESSION_ID, sid)
    .header(PROTOCOL_VERSION, LEGACY)
    .token(Some(&p.settings().principal));
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
            "tools/list on the deleted session",
            "tools/list",
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
        "tools/list with MCP-Protocol-Version: 1999-01-01",
        "tools/list",
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
            "tools/list without MCP-Session-Id",
            "tools/list",
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
