//! URL-mode flows (§4.8, §3.6 rules 4–5, §6.A 10–11, §6.B 21): consent
//! before the page was submitted gets `input_required` again (never a
//! complete result); the page does not open without credentials (no
//! pre-authenticated URL); another principal cannot open or complete it.

use super::flows::run_flow;
use super::legacy_session::{self, Answer};
use super::model::Verdict;
use super::probe::{Probe, ToolProfile, all_modes};
use super::registry::{Check, check};
use crate::client::browser::{HtmlForm, find_form};
use crate::client::outcome::Outcome;
use crate::client::policy::AnswerPolicy;
use crate::client::raw::RawRequest;
use crate::protocol::Generation;
use crate::protocol::mrtr::InputRequiredResult;
use serde_json::Value;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-url-accept-before-completion",
            "§4.8 / §6.B 21",
            Must,
            Modern,
            "accept before the URL page was submitted gets input_required again, not complete",
            accept_early
        ),
        check!(
            "mrtr-url-page-requires-auth",
            "§3.6 rule 4 / §6.A 10",
            Must,
            Modern,
            "the URL-mode page does not open without credentials (not pre-authenticated)",
            page_requires_auth
        ),
        check!(
            "mrtr-url-cross-user",
            "§3.6 rule 5 / §6.A 11",
            Must,
            Modern,
            "another principal cannot open the URL-mode page of a flow",
            cross_user,
            two_principals
        ),
        check!(
            "legacy-url-page-requires-auth",
            "§3.6 rule 4 / §6.A 10",
            Must,
            Legacy,
            "the URL-mode page does not open without credentials (not pre-authenticated)",
            page_requires_auth
        ),
        check!(
            "legacy-url-cross-user",
            "§3.6 rule 5 / §6.A 11",
            Must,
            Legacy,
            "another principal cannot open the URL-mode page of an elicitation",
            cross_user,
            two_principals
        ),
    ]
}

fn url_tool(p: &Probe) -> Option<ToolProfile> {
    p.target().url_tools().next().cloned()
}

async fn accept_early(p: Probe) -> Verdict {
    let Some(t) = url_tool(&p) else {
        return Verdict::skip("no tool elicits in URL mode");
    };
    let rt = run_flow(&p, &t, AnswerPolicy::UrlConsentOnly).await;
    match &rt.outcome {
        Outcome::ExpectedRejection { .. } | Outcome::Success => Verdict::pass(format!(
            "{}: consent alone was answered with input_required",
            t.name
        )),
        Outcome::Skipped(why) => Verdict::skip(why.clone()),
        Outcome::Unexpected { class, message } => {
            Verdict::fail(format!("{}: {class}: {message}", t.name))
        }
    }
}

/// A fresh URL of `tool`'s first round (a 2026-07-28 first call, or a
/// 2025-11-25 session call observed up to its URL-mode request), resolved
/// against the MCP URL; only URLs on the target's own host are returned
/// (others are not fetched).
async fn fresh_url(p: &Probe, tool: &ToolProfile) -> Result<String, String> {
    let url = match p.target().generation {
        Generation::Modern => modern_url(p, tool).await?,
        Generation::Legacy => legacy_url(p, tool).await?,
    };
    crate::client::page::same_origin(&p.settings().target.mcp_url, &url)
        .map(|u| u.to_string())
        .map_err(|e| e.to_string())
}

fn url_of(params: &Value) -> Option<String> {
    (params.get("mode").and_then(Value::as_str) == Some("url"))
        .then(|| params.get("url").and_then(Value::as_str).map(str::to_owned))
        .flatten()
}

async fn modern_url(p: &Probe, tool: &ToolProfile) -> Result<String, String> {
    let req = p.call_request(
        format!("tools/call {} #1", tool.name),
        tool,
        &all_modes(),
        None,
        None,
    );
    let reply = p.send(req).await.map_err(|e| e.to_string())?;
    let ir = reply
        .rpc()
        .result()
        .and_then(InputRequiredResult::from_value)
        .ok_or("the first call did not answer input_required")?;
    ir.input_requests
        .iter()
        .flatten()
        .find_map(|(_, r)| url_of(&r.params))
        .ok_or_else(|| "no URL-mode request with a url".to_owned())
}

async fn legacy_url(p: &Probe, tool: &ToolProfile) -> Result<String, String> {
    let s = legacy_session::open(p, &all_modes(), true).await?;
    let st = legacy_session::call_tool(p, &s, tool, Answer::Observe).await;
    st.elicitations
        .iter()
        .find_map(url_of)
        .ok_or_else(|| "no URL-mode elicitation/create with a url".to_owned())
}

/// True when a page reply shows the flow's own form (a secret-asking form
/// posting back to the page) rather than a login or refusal.
fn shows_flow_form(status: u16, body: &[u8], flow_form: Option<&HtmlForm>) -> bool {
    if !(200..300).contains(&status) {
        return false;
    }
    let Some(form) = find_form(&String::from_utf8_lossy(body)) else {
        return false;
    };
    match flow_form {
        Some(f) => f.action == form.action && f.fields.len() == form.fields.len(),
        None => form.fields.iter().any(|x| x.kind == "password"),
    }
}

async fn page(
    p: &Probe,
    label: &str,
    url: &str,
    token: Option<&str>,
) -> Result<(u16, bytes::Bytes), String> {
    let req = RawRequest::new(label, reqwest::Method::GET, url)
        .header("Accept", "text/html")
        .token(token);
    let r = p.send(req).await.map_err(|e| e.to_string())?;
    Ok((r.status, r.body))
}

/// Why page checks mean nothing on this target, if they do not: a page
/// that opens for anyone is only a defect where the server knows its users.
fn no_identity(p: &Probe) -> Option<Verdict> {
    (!p.target().principals_matter()).then(super::identity::no_identity)
}

async fn page_requires_auth(p: Probe) -> Verdict {
    if let Some(v) = no_identity(&p) {
        return v;
    }
    let Some(t) = url_tool(&p) else {
        return Verdict::skip("no tool elicits in URL mode");
    };
    let url = match fresh_url(&p, &t).await {
        Ok(u) => u,
        Err(e) => return Verdict::skip(e),
    };
    let principal = p.settings().target.principal.clone();
    let own = page(&p, "flow page GET as the principal", &url, Some(&principal)).await;
    let flow_form = own
        .ok()
        .and_then(|(_, b)| find_form(&String::from_utf8_lossy(&b)));
    match page(&p, "flow page GET without credentials", &url, None).await {
        Err(e) => Verdict::fail(format!("no reply: {e}")),
        Ok((status, body)) if shows_flow_form(status, &body, flow_form.as_ref()) => {
            Verdict::fail(format!(
                "{}: HTTP {status}: the page opened without any credentials (a pre-authenticated \
                 URL), although the server authenticates its MCP requests",
                t.name
            ))
            .expecting(
                "the page asks the visitor who they are (login, 401/403) before showing the flow",
            )
        }
        Ok((status, _)) => Verdict::pass(format!(
            "without credentials the page answered HTTP {status} without the flow form"
        )),
    }
}

async fn cross_user(p: Probe) -> Verdict {
    if let Some(v) = no_identity(&p) {
        return v;
    }
    let Some(t) = url_tool(&p) else {
        return Verdict::skip("no tool elicits in URL mode");
    };
    let url = match fresh_url(&p, &t).await {
        Ok(u) => u,
        Err(e) => return Verdict::skip(e),
    };
    let principal = p.settings().target.principal.clone();
    let other = p.settings().target.other_principal.clone();
    let own = page(&p, "flow page GET as the principal", &url, Some(&principal)).await;
    let flow_form = own
        .ok()
        .and_then(|(_, b)| find_form(&String::from_utf8_lossy(&b)));
    match page(&p, "flow page GET as another principal", &url, Some(&other)).await {
        Err(e) => Verdict::fail(format!("no reply: {e}")),
        Ok((status, body)) if shows_flow_form(status, &body, flow_form.as_ref()) => {
            let submitted = submit_as(&p, &url, &body, &other).await;
            Verdict::fail(format!(
                "{}: HTTP {status}: another principal opened the flow page{submitted} (phishing: \
                 the server must check who opens it)",
                t.name
            ))
            .expecting("the page refuses a visitor who is not the user the elicitation was for")
        }
        Ok((status, _)) => Verdict::pass(format!(
            "another principal got HTTP {status} without the flow form"
        )),
    }
}

/// Submits the page's form as `token`; says how the submission went.
async fn submit_as(p: &Probe, url: &str, html: &[u8], token: &str) -> String {
    let Some(form) = find_form(&String::from_utf8_lossy(html)) else {
        return String::new();
    };
    let origin = url::Url::parse(url)
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_default();
    let post = RawRequest::new(
        "flow page POST as another principal",
        reqwest::Method::POST,
        form.target(url),
    )
    .header("Content-Type", "application/x-www-form-urlencoded")
    .header("Origin", origin)
    .token(Some(token))
    .body(form.encoded_body(p.settings().target.seed));
    match p.send(post).await {
        Ok(r) if (200..400).contains(&r.status) => format!(
            " and completed it (its form POST got HTTP {}): the other principal finished \
             someone else's flow",
            r.status
        ),
        Ok(r) => format!(" (submitting its form got HTTP {})", r.status),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLOW: &str = r#"<form method="post" action="/flow/1"><input type="hidden" name="csrf" value="x"><input type="password" name="api_key"></form>"#;
    const LOGIN: &str = r#"<form method="post" action="/login"><input name="user"></form>"#;

    #[test]
    fn only_the_flow_form_counts_as_opened() {
        let flow = find_form(FLOW);
        assert!(shows_flow_form(200, FLOW.as_bytes(), flow.as_ref()));
        assert!(!shows_flow_form(401, FLOW.as_bytes(), flow.as_ref()));
        assert!(!shows_flow_form(200, LOGIN.as_bytes(), flow.as_ref()));
        // Without a reference page, a password field is the tell.
        assert!(shows_flow_form(200, FLOW.as_bytes(), None));
        assert!(!shows_flow_form(200, b"<p>forbidden</p>", None));
    }
}
