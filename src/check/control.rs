//! Controls: the evidence a PASS that rests on a refusal needs (design.md,
//! "Evidence before a verdict"). A server that refuses every answer, never
//! answers one, or ignores a header refuses the bad request too, so its
//! refusal says nothing about how it judges one. A check whose PASS rests
//! on a refusal (or on silence, or on a header being read) runs a
//! [`Control`] first, a request of the same kind that a correct server
//! serves, and hands its verdict to [`Control::judge`]: a PASS stands only
//! when the control held; otherwise the row is INFO "could not tell".
//! Findings stand whatever the control showed (a bad request accepted is
//! seen whether or not a good one is).
//!
//! The kinds: [`Control::retry`] (2026-07-28: a fresh walk of a tool to its
//! state round, answered validly, goes on), [`Control::completes`] (a tool
//! walked to its end), [`Control::answer`] (2025-11-25: a session's
//! elicitation answered validly completes its call, within a bound: silence
//! is no success) and [`Control::observed`] for a control a check reads off
//! replies of its own (a wrong `Mcp-Name` refused shows that the server
//! reads the header).

use super::decline_cancel::refusal_deadline;
use super::legacy_session::{Answer, CallOptions, Streamed, call_once};
use super::model::Verdict;
use super::probe::{Probe, ToolProfile};
use super::subject::{at_state, complete, reading, retry};
use crate::client::ReplyStatus;
use crate::client::raw::Rpc;
use serde_json::Value;
use std::fmt::Display;

/// What a control showed: a valid request of the probe's kind succeeded
/// (with its result, where it has one), or what it got instead.
#[derive(Debug, Clone)]
pub struct Control {
    /// What the control shows when it holds, in a few words (`a valid
    /// retry of deploy goes on`).
    what: String,
    /// `Ok`: it succeeded (its result, if any); `Err`: what it got instead.
    seen: Result<Option<Value>, String>,
}

impl Control {
    /// A control the check ran itself: `what` it shows when it holds, and
    /// `Ok` (with a result, if any) when it did, or `Err` with what it got.
    pub fn observed(what: impl Into<String>, seen: Result<Option<Value>, String>) -> Control {
        Control {
            what: what.into(),
            seen,
        }
    }

    /// 2026-07-28: a fresh walk of `tool` to its state round, answered
    /// validly, gets a result that is not a tool error (complete, or the
    /// next round); a tool that issues no state is walked to its end
    /// ([`Control::completes`]).
    pub async fn retry(p: &Probe, tool: &ToolProfile) -> Control {
        if !tool.issues_state() {
            return Control::completes(p, tool).await;
        }
        let what = format!("a valid retry of {} goes on", tool.name);
        let seen = match at_state(p, tool).await {
            Err(e) => Err(format!("it could not be sent ({e})")),
            Ok(r) => {
                let label = format!("control: tools/call {} valid retry", tool.name);
                match retry(p, tool, &label, &r.answers, &r.state).await {
                    Ok((Rpc::Result(v), _)) if !is_tool_error(&v) => Ok(Some(v)),
                    Ok((rpc, status)) => {
                        Err(format!("it got {}", reading(&rpc, p.reply_status(status))))
                    }
                    Err(e) => Err(format!("it got no reply ({e})")),
                }
            }
        };
        Control { what, seen }
    }

    /// `tool` walked to its end with valid answers completes without a
    /// tool error.
    pub async fn completes(p: &Probe, tool: &ToolProfile) -> Control {
        Control {
            what: format!("{} answered validly completes", tool.name),
            seen: complete(p, tool)
                .await
                .map(|c| Some(c.result))
                .map_err(|e| e.to_string()),
        }
    }

    /// 2025-11-25: `tool` called on a session of its own, its elicitation
    /// accepted with valid content (pages completed), gets a response that
    /// is not a tool error within [`refusal_deadline`].
    pub async fn answer(p: &Probe, tool: &ToolProfile) -> Control {
        let what = format!(
            "{} with its elicitation answered validly completes",
            tool.name
        );
        let bounded = p.bounded(refusal_deadline(p));
        let accept = Answer::Accept {
            complete_pages: true,
        };
        let seen = match call_once(&bounded, tool, accept, &CallOptions::default()).await {
            Err(e) => Err(format!("it could not be sent ({e})")),
            Ok(st) => answered(&st, p.reply_status(st.status)),
        };
        Control { what, seen }
    }

    /// What the control shows when it holds.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// Whether the control held.
    pub fn held(&self) -> bool {
        self.seen.is_ok()
    }

    /// The result the valid request got, when it held and had one (checks
    /// compare a suspect result with it).
    pub fn result(&self) -> Option<&Value> {
        self.seen.as_ref().ok().and_then(Option::as_ref)
    }

    /// Judges `v`, a verdict whose PASS rests on a refusal: the PASS stands
    /// when the control held (and says so); otherwise it becomes
    /// [`Control::unsure`]. Other verdicts stand.
    pub fn judge(&self, v: Verdict) -> Verdict {
        match v {
            Verdict::Pass(d) if self.held() => {
                Verdict::pass(format!("{d} (control: {})", self.what))
            }
            Verdict::Pass(d) => self.unsure(d),
            other => other,
        }
    }

    /// INFO "could not tell": what the probe saw (`seen`) proves nothing,
    /// because the control did not hold. Checks whose findings also rest on
    /// the control (a framing error judged against a correct request) use
    /// it for any verdict.
    pub fn unsure(&self, seen: impl Display) -> Verdict {
        Verdict::info(format!("could not tell: {seen}; {}", self.why_not()))
    }

    /// Why a refusal proves nothing here (empty when the control held), for
    /// checks that judge several probes against their controls.
    pub fn why_not(&self) -> String {
        match &self.seen {
            Ok(_) => String::new(),
            Err(e) => format!(
                "but the control ({}) did not hold: {e}, so the refusal proves nothing",
                self.what
            ),
        }
    }
}

/// Whether a tool result says `isError`.
fn is_tool_error(v: &Value) -> bool {
    v.get("isError").and_then(Value::as_bool) == Some(true)
}

/// How a 2025-11-25 control call reads (`status`, its reply's): answered,
/// with a result that is not a tool error, or why not.
fn answered(st: &Streamed, status: ReplyStatus) -> Result<Option<Value>, String> {
    if st.elicitations.is_empty() {
        return Err("it got no elicitation to answer".into());
    }
    match (&st.response, &st.failure) {
        (Some(Rpc::Result(v)), _) if !is_tool_error(v) => Ok(Some(v.clone())),
        (Some(rpc), _) => Err(format!("it got {}", reading(rpc, status))),
        (None, Some(f)) => Err(format!("it got no response ({f})")),
        (None, None) => Err("it got no response".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_refusal_passes_only_beside_a_control_that_held() {
        let held = Control::observed(
            "a valid retry of t goes on",
            Ok(Some(json!({"content": []}))),
        );
        let failed = Control::observed(
            "a valid retry of t goes on",
            Err("it got error -32603".into()),
        );
        let pass = || Verdict::pass("t: rejected with -32602");
        assert!(matches!(held.judge(pass()), Verdict::Pass(d) if d.contains("control")));
        let Verdict::Violation {
            severity, detail, ..
        } = failed.judge(pass())
        else {
            panic!("a PASS without a control stood")
        };
        assert_eq!(severity, Some(crate::findings::Severity::Info));
        assert!(
            detail.starts_with("could not tell: t: rejected"),
            "{detail}"
        );
        assert!(detail.contains("got error -32603"), "{detail}");
        // A finding stands whatever the control showed.
        let fail = Verdict::fail("t: a tampered state completed");
        assert_eq!(failed.judge(fail.clone()), fail);
        assert_eq!(held.result(), Some(&json!({"content": []})));
        assert_eq!(failed.result(), None);
    }

    #[test]
    fn a_2025_call_counts_only_when_answered_and_served() {
        let mut st = Streamed {
            response: Some(Rpc::Result(json!({"content": []}))),
            ..Default::default()
        };
        assert!(
            answered(&st, ReplyStatus::new(st.status, false)).is_err(),
            "no elicitation, nothing answered"
        );
        st.elicitations.push(json!({"message": "m"}));
        assert!(answered(&st, ReplyStatus::new(st.status, false)).is_ok());
        st.response = Some(Rpc::Result(json!({"isError": true})));
        assert!(answered(&st, ReplyStatus::new(st.status, false)).is_err());
        st.response = None;
        st.failure = Some("timeout".into());
        assert!(
            answered(&st, ReplyStatus::new(st.status, false))
                .unwrap_err()
                .contains("timeout")
        );
    }
}
