//! A secret typed on a URL-mode page never comes back to the client (§3.6
//! rule 6: URL mode keeps credentials out of the client; the client MUST
//! NOT see them). Each URL flow on the target's origin is completed as a
//! browser would, typing a marked test value ([`SECRET_MARKER`]) into the
//! page's secret fields; then every reply of the flow, every `requestState`
//! issued after the page, and the final result are searched for the
//! marker, decoded where they are encoded (dot-separated parts, base64 /
//! base64url, JSON and JWT-style payloads inside). Every other text field
//! of the page gets its own marker ([`TYPED_MARKER`]): a field not named
//! like a secret may still hold one, so what was typed there readable in a
//! later `requestState` is a WARN (the state travels through the client);
//! in a reply or the result it is not judged (a name echoed back is normal).

use super::legacy_session::{Answer, CallOptions, call_once};
use super::model::Verdict;
use super::probe::{Probe, ToolProfile};
use super::registry::{Check, check};
use super::state_decode::find_in;
use super::subject::complete;
use crate::client::browser::{SECRET_MARKER, TYPED_MARKER};
use crate::client::raw::Rpc;
use crate::findings::Severity;
use crate::protocol::Generation;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-url-secret-not-returned",
            "§3.6 rule 6, §4.8 / §6.B 21",
            Must,
            Modern,
            "a value typed on a URL-mode page never comes back: not in a reply, a later requestState (decoded) or the result",
            modern
        ),
        check!(
            "legacy-url-secret-not-returned",
            "§3.6 rule 6 / §6.A 9-11",
            Must,
            Legacy,
            "a value typed on a URL-mode page never comes back: not in a later elicitation, notification or the result",
            legacy
        ),
    ]
}

fn url_tools(p: &Probe) -> Vec<ToolProfile> {
    p.target()
        .eliciting_tools()
        .into_iter()
        .filter(|t| t.modes().url && p.target().off_origin(t).is_none())
        .collect()
}

/// Where `marker` shows in any of `(what, text)`, as sentences.
fn leaks(texts: &[(String, String)], marker: &str) -> Vec<String> {
    texts
        .iter()
        .filter_map(|(what, text)| find_in(text, marker).map(|how| format!("in {what} ({how})")))
        .collect()
}

async fn judge(p: Probe, g: Generation) -> Verdict {
    let tools = url_tools(&p);
    if tools.is_empty() {
        return Verdict::skip("no tool elicits in URL mode with a page on the target's origin");
    }
    let mut found = Vec::new();
    let mut typed = Vec::new();
    let mut clean = Vec::new();
    let mut unreached = Vec::new();
    for t in &tools {
        let texts = match g {
            Generation::Modern => match complete(&p, t).await {
                Ok(done) => {
                    let mut v: Vec<(String, String)> = done
                        .states
                        .iter()
                        .enumerate()
                        .map(|(i, s)| (format!("requestState #{}", i + 1), s.clone()))
                        .collect();
                    v.extend(
                        done.bodies
                            .iter()
                            .enumerate()
                            .map(|(i, b)| (format!("the reply of round {}", i + 1), b.clone())),
                    );
                    v.push(("the final result".into(), done.result.to_string()));
                    v
                }
                Err(e) => {
                    unreached.push(e);
                    continue;
                }
            },
            Generation::Legacy => {
                let accept = Answer::Accept {
                    complete_pages: true,
                };
                let st = match call_once(&p, t, accept, &CallOptions::default()).await {
                    Ok(st) => st,
                    Err(e) => return Verdict::skip(e),
                };
                let Some(Rpc::Result(result)) = &st.response else {
                    unreached.push(format!(
                        "{}: the flow did not complete ({})",
                        t.name,
                        st.failure.clone().unwrap_or_else(|| "no result".into())
                    ));
                    continue;
                };
                let mut v: Vec<(String, String)> = st
                    .elicitations
                    .iter()
                    .enumerate()
                    .map(|(i, e)| (format!("elicitation/create #{}", i + 1), e.to_string()))
                    .collect();
                v.extend(
                    st.notifications
                        .iter()
                        .map(|(m, params)| (m.clone(), params.to_string())),
                );
                v.push(("the final result".into(), result.to_string()));
                v
            }
        };
        let states: Vec<(String, String)> = texts
            .iter()
            .filter(|(what, _)| what.starts_with("requestState"))
            .cloned()
            .collect();
        let t_leaks = leaks(&states, TYPED_MARKER);
        if !t_leaks.is_empty() {
            typed.push(format!("{}: {}", t.name, t_leaks.join("; ")));
        }
        let l = leaks(&texts, SECRET_MARKER);
        if l.is_empty() {
            clean.push(format!("{} ({} messages searched)", t.name, texts.len()));
        } else {
            found.push(format!("{}: {}", t.name, l.join("; ")));
        }
    }
    if !found.is_empty() {
        return Verdict::fail(format!(
            "the value typed on the flow page (a test key starting {SECRET_MARKER}) came back to \
             the client: {}",
            found.join("; ")
        ))
        .expecting(
            "the page's secret stays on the server: the client sees at most a masked form of it",
        );
    }
    if !typed.is_empty() {
        return Verdict::violation(
            Severity::Should,
            format!(
                "a value typed into a text field of the flow page (a test value starting \
                 {TYPED_MARKER}; the field is not named like a secret, but may hold one) is \
                 readable in a later requestState: {}",
                typed.join("; ")
            ),
        )
        .expecting(
            "what the user types on the page stays on the server, or the state is encrypted",
        );
    }
    if clean.is_empty() {
        return Verdict::skip(format!("no URL flow completed: {}", unreached.join("; ")));
    }
    Verdict::pass(format!(
        "the typed value appears nowhere: {}",
        clean.join(", ")
    ))
}

async fn modern(p: Probe) -> Verdict {
    judge(p, Generation::Modern).await
}

async fn legacy(p: Probe) -> Verdict {
    judge(p, Generation::Legacy).await
}
