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
//! A field whose `pattern` or length the marker does not fit gets a value
//! that does (a six-digit code): the values the browser actually typed
//! ([`Typed`]) are searched for too, so such a value is tracked as well.

use super::legacy_session::{Answer, CallOptions, call_once};
use super::model::Verdict;
use super::probe::{Probe, ToolProfile};
use super::registry::{Check, check};
use super::state_decode::find_in;
use super::subject::complete;
use crate::client::browser::{SECRET_MARKER, TYPED_MARKER, Typed};
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

/// The shortest typed value searched for as itself: a shorter one (a
/// two-digit number) shows up by chance, so it is named as not tracked.
const MIN_TRACKED: usize = 6;

/// What to search for among the values typed on the pages, `secret` ones or
/// the others: the marker, and every value the marker did not fit, each
/// with what to call it; and the values too short to search for.
fn needles(typed: &[Typed], secret: bool) -> (Vec<(String, String)>, Vec<String>) {
    let marker = if secret { SECRET_MARKER } else { TYPED_MARKER };
    let mut find = vec![(marker.to_owned(), format!("a test value starting {marker}"))];
    let mut short = Vec::new();
    for t in typed
        .iter()
        .filter(|t| t.secret == secret && !t.value.contains(marker))
    {
        if t.value.chars().count() < MIN_TRACKED {
            short.push(format!(
                "{} ({} characters)",
                t.field,
                t.value.chars().count()
            ));
        } else if !find.iter().any(|(v, _)| *v == t.value) {
            find.push((
                t.value.clone(),
                format!(
                    "the value typed into field {} ({:?}; its pattern or length left no room for \
                     the marker)",
                    t.field, t.value
                ),
            ));
        }
    }
    (find, short)
}

/// Where any of `needles` shows in any of `(what, text)`, as sentences.
fn leaks_of(texts: &[(String, String)], needles: &[(String, String)]) -> Vec<String> {
    needles
        .iter()
        .flat_map(|(needle, name)| {
            leaks(texts, needle)
                .into_iter()
                .map(move |l| format!("{name}: {l}"))
        })
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
    let mut untracked = Vec::new();
    for t in &tools {
        let (texts, typed_values) = match g {
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
                    (v, done.typed)
                }
                Err(e) => {
                    unreached.push(e.to_string());
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
                (v, st.typed.clone())
            }
        };
        let states: Vec<(String, String)> = texts
            .iter()
            .filter(|(what, _)| what.starts_with("requestState"))
            .cloned()
            .collect();
        let (secrets, short_secrets) = needles(&typed_values, true);
        let (others, short_others) = needles(&typed_values, false);
        untracked.extend(
            short_secrets
                .into_iter()
                .chain(short_others)
                .map(|f| format!("{}: {f}", t.name)),
        );
        let t_leaks = leaks_of(&states, &others);
        if !t_leaks.is_empty() {
            typed.push(format!("{}: {}", t.name, t_leaks.join("; ")));
        }
        let l = leaks_of(&texts, &secrets);
        if l.is_empty() {
            clean.push(format!("{} ({} messages searched)", t.name, texts.len()));
        } else {
            found.push(format!("{}: {}", t.name, l.join("; ")));
        }
    }
    if !found.is_empty() {
        return Verdict::fail(format!(
            "a secret typed on the flow page came back to the client: {}",
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
                "a value typed into a text field of the flow page (the field is not named like a \
                 secret, but may hold one) is readable in a later requestState: {}",
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
    let short = if untracked.is_empty() {
        String::new()
    } else {
        format!(
            "; not searched for, too short to tell from chance: {}",
            untracked.join(", ")
        )
    };
    Verdict::pass(format!(
        "the typed values appear nowhere: {}{short}",
        clean.join(", ")
    ))
}

async fn modern(p: Probe) -> Verdict {
    judge(p, Generation::Modern).await
}

async fn legacy(p: Probe) -> Verdict {
    judge(p, Generation::Legacy).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(field: &str, value: &str, secret: bool) -> Typed {
        Typed {
            field: field.into(),
            value: value.into(),
            secret,
        }
    }

    #[test]
    fn a_value_the_marker_did_not_fit_is_searched_for_itself() {
        let typed = [
            typed("api_key", &format!("{SECRET_MARKER}abc"), true),
            typed("code", "345678", true),
            typed("pin", "42", true),
            typed("note", "ektyped01", false),
        ];
        let (secrets, short) = needles(&typed, true);
        let values: Vec<&str> = secrets.iter().map(|(v, _)| v.as_str()).collect();
        assert_eq!(values, [SECRET_MARKER, "345678"]);
        assert_eq!(short, ["pin (2 characters)"]);
        let texts = [(
            "the final result".to_owned(),
            "connected, code 345678".to_owned(),
        )];
        let found = leaks_of(&texts, &secrets);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("field code"), "{found:?}");
        // The others' needles never include a secret's value.
        let (others, _) = needles(&typed, false);
        assert_eq!(others.len(), 1, "the marker only: {others:?}");
    }
}
