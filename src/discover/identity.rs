//! Whether the target knows its users, decided from evidence once per run
//! (§3.6 rules 3, 5): a request without credentials or with a token no
//! server can know refused (401/403); `WWW-Authenticate` on a reply; a
//! 2025-11-25 session that serves its own principal but refuses another;
//! a flow page that shows its form to the principal but not to a visitor
//! without credentials. Any one of them makes cross-principal probes (of
//! `check` and `fuzz`) meaningful with the default two named tokens.

use super::legacy::{self, Session};
use super::{AuthSeen, Discovery, Wire, all_modes, wire};
use crate::client::browser::find_form;
use crate::client::local::Local;
use crate::client::raw::RawRequest;
use serde_json::json;
use std::time::Duration;

/// What was looked at when no sign of identity turned up.
pub const LOOKED_AT: &str = "anonymous requests and an unknown token are served alike, no reply \
     carries WWW-Authenticate, and no 2025-11-25 session or flow page was found bound to its user";

/// Each sign of identity the target shows, as a sentence; empty when none.
pub async fn evidence(
    found: &Discovery,
    http: reqwest::Client,
    principal: &str,
    other: &str,
    timeout: Duration,
    local: Option<Local>,
) -> Vec<String> {
    let mut out = from_auth(found.auth);
    if let Some(line) = www_authenticate(found) {
        out.push(line);
    }
    let w = wire::Log::new(http, &found.mcp_url, principal, timeout, 0).in_process(local);
    if found.legacy.is_some()
        && let Some(line) = session_bound(&w, other).await
    {
        out.push(line);
    }
    if let Some(line) = page_bound(&w, found).await {
        out.push(line);
    }
    out
}

fn from_auth(auth: AuthSeen) -> Vec<String> {
    let mut out = Vec::new();
    if auth.anonymous_refused {
        out.push("a request without credentials is refused (401/403)".to_owned());
    }
    if auth.checks_tokens {
        out.push("a token no server can know is refused (401/403)".to_owned());
    }
    out
}

/// A `WWW-Authenticate` header on any discovery reply.
fn www_authenticate(found: &Discovery) -> Option<String> {
    found.exchanges.iter().find_map(|e| {
        e.response
            .lines()
            .take_while(|l| !l.is_empty())
            .any(|l| l.to_ascii_lowercase().starts_with("www-authenticate:"))
            .then(|| format!("'{}' is answered with WWW-Authenticate", e.label))
    })
}

/// A session opened as the principal: its own `tools/list` served, the
/// other principal's refused with a 4xx.
async fn session_bound(w: &wire::Log, other: &str) -> Option<String> {
    let s: Session = legacy::open(w, &all_modes(), true).await.ok()?;
    s.sid.as_ref()?;
    let list = |label: &str| legacy::request(w, &s, label, "tools/list", json!({}));
    let own = w.send(list("identity: tools/list on the session")).await;
    let theirs = w
        .send(list("identity: tools/list on the session as another principal").token(Some(other)))
        .await;
    legacy::close(w, &s).await;
    match (own, theirs) {
        (Ok(a), Ok(b)) if (200..300).contains(&a.status) && (400..500).contains(&b.status) => {
            Some(format!(
                "a 2025-11-25 session serves its principal but refuses another (HTTP {})",
                b.status
            ))
        }
        _ => None,
    }
}

/// The first flow page on the target's origin that discovery saw: its form
/// shown to the principal, not to a visitor without credentials.
async fn page_bound(w: &wire::Log, found: &Discovery) -> Option<String> {
    let url = [&found.modern, &found.legacy]
        .into_iter()
        .flatten()
        .flat_map(|v| v.tools.iter())
        .flat_map(|t| t.rounds.iter())
        .flat_map(|r| r.urls.iter())
        .find_map(|u| crate::client::page::same_origin(&found.mcp_url, u).ok())?
        .to_string();
    let get = |label: &str, token: Option<&str>| {
        RawRequest::new(label, reqwest::Method::GET, &url)
            .header("Accept", "text/html")
            .token(token)
    };
    // The visitor without credentials first: a page that can be opened only
    // once then fails for the principal, which proves nothing.
    let anon = w
        .send(get("identity: flow page GET without credentials", None))
        .await
        .ok()?;
    let own = w
        .send(get(
            "identity: flow page GET as the principal",
            Some(w.token()),
        ))
        .await
        .ok()?;
    let form = |status: u16, b: &[u8]| {
        (200..300)
            .contains(&status)
            .then(|| find_form(&String::from_utf8_lossy(b)))
            .flatten()
    };
    let flow_form = form(own.status, &own.body)?;
    // The same form (action and fields; hidden values may be per request).
    let same_form = form(anon.status, &anon.body).is_some_and(|f| {
        f.action == flow_form.action
            && f.fields
                .iter()
                .map(|x| &x.name)
                .eq(flow_form.fields.iter().map(|x| &x.name))
    });
    (!same_form).then(|| {
        format!(
            "a flow page shows its form to the principal but not to a visitor without \
             credentials (HTTP {})",
            anon.status
        )
    })
}
