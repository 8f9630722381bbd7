//! Another principal on a 2025-11-25 session (§3.6 rule 3: elicitations
//! are bound to the user, and state MUST NOT be tied to session ids alone;
//! §6.A 21): a request carrying the session id with another principal's
//! credentials is refused, and so is that principal's answer to the
//! session's pending elicitation (beside a control: the session's own
//! principal answers and the call completes). Runs where principals mean
//! something to the server (it authenticates, or the user named two
//! principals); not over stdio, where a session is a process of one
//! principal and its id and tokens are the bridge's.

use super::control::Control;
use super::decline_cancel::refusal_deadline;
use super::legacy_session::{Answer, CallOptions, call, close, open, request};
use super::model::Verdict;
use super::probe::{Probe, all_modes};
use super::registry::{Check, check};
use crate::client::raw::Rpc;
use serde_json::{Value, json};

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "legacy-cross-principal-session",
            "§3.6 rule 3 / §6.A 21",
            Must,
            Legacy,
            "a request on a session with another principal's credentials is refused",
            session,
            two_principals,
            // Over stdio a session is a process, started for one principal;
            // the session id and the token on it are the bridge's.
            http("HTTP sessions and the credentials on them")
        ),
        check!(
            "legacy-cross-principal-answer",
            "§3.6 rule 3 / §6.A 21",
            Must,
            Legacy,
            "another principal cannot answer a session's pending elicitation",
            answer,
            two_principals,
            // Over stdio a session is a process, started for one principal;
            // the session id and the token on it are the bridge's.
            http("HTTP sessions and the credentials on them")
        ),
    ]
}

fn no_principals(p: &Probe) -> Option<Verdict> {
    (!p.target().principals_matter()).then(super::identity::no_identity)
}

async fn session(p: Probe) -> Verdict {
    if let Some(v) = no_principals(&p) {
        return v;
    }
    let s = match open(&p, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::skip(e),
    };
    if s.sid.is_none() {
        close(&p, &s).await;
        return Verdict::skip("the server issues no session id");
    }
    let other = p.settings().target.other_principal.clone();
    let req = request(
        &p,
        &s,
        &format!(
            "{} on the session as another principal",
            p.target().plain_method()
        ),
        p.target().plain_method(),
        json!({}),
    )
    .token(Some(&other));
    let out = p.send(req).await;
    close(&p, &s).await;
    match out {
        Err(e) => Verdict::fail(format!("no reply: {e}")),
        Ok(r) if (400..500).contains(&r.status) => Verdict::pass(format!(
            "another principal's request on the session got {}",
            p.reply_status(r.status)
        )),
        Ok(r) => match r.rpc() {
            Rpc::Result(_) => Verdict::fail(format!(
                "{}: the session is bound to its id alone, not to the user who opened it",
                p.reply_status(r.status)
                    .after("another principal's request on the session was served")
            ))
            .expecting("HTTP 4xx (e.g. 404 or 403) for a session request by another principal"),
            other => Verdict::pass(format!(
                "another principal's request on the session got {}",
                p.reply_status(r.status).then(" and ", other.describe())
            )),
        },
    }
}

async fn answer(p: Probe) -> Verdict {
    if let Some(v) = no_principals(&p) {
        return v;
    }
    let Some(t) = p.target().form_tools().next().cloned() else {
        return p.target().no_subject("no tool elicits in form mode");
    };
    // The control: the session's own principal answers and the call
    // completes. Without it, a refused or unanswered answer proves nothing.
    let control = Control::answer(&p, &t).await;
    let s = match open(&p, &all_modes(), true).await {
        Ok(s) => s,
        Err(e) => return Verdict::skip(e),
    };
    let opts = CallOptions {
        answer_token: Some(p.settings().target.other_principal.clone()),
        ..Default::default()
    };
    let deadline = refusal_deadline(&p);
    let bounded = p.bounded(deadline);
    let st = call(
        &bounded,
        &s,
        &t.name,
        &t.arguments,
        Answer::Accept {
            complete_pages: false,
        },
        &opts,
    )
    .await;
    close(&p, &s).await;
    let Some((status, _)) = st.answer_replies.first().copied() else {
        return Verdict::skip(format!(
            "{}: no elicitation arrived to answer ({})",
            t.name,
            st.failure
                .unwrap_or_else(|| "the call ended without one".into())
        ));
    };
    let completed = matches!(&st.response, Some(Rpc::Result(v))
        if v.get("isError").and_then(Value::as_bool) != Some(true));
    if (200..300).contains(&status) && completed {
        return Verdict::fail(format!(
            "{}: {} and the call completed with it",
            t.name,
            p.reply_status(status)
                .after("another principal POSTed the answer to this session's elicitation")
        ))
        .expecting("the answer POST of another principal is refused (4xx) and not applied");
    }
    if (200..300).contains(&status) {
        return control.judge(Verdict::pass(format!(
            "{}: another principal's answer got {}, but the call did not complete with it ({})",
            t.name,
            p.reply_status(status),
            match &st.response {
                Some(r) => r.describe(),
                None => format!("no response within {deadline:?}"),
            }
        )));
    }
    control.judge(Verdict::pass(format!(
        "{}: another principal's answer was refused with {}",
        t.name,
        p.reply_status(status)
    )))
}
