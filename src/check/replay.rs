//! Replay of valid states (S8): every tool that issues a `requestState` is
//! walked to its completion, then the same final retry (same state, same
//! answers, a new id) is sent again. Completing twice breaks the S8 note
//! for a single-use tool (FAIL) and is a WARN elsewhere (the server cannot
//! know the action may repeat; the user can say it must not with
//! `--single-use`). A state presented by another principal must be refused
//! (S8a); an old state must expire (S8b: after the expiry the state carries
//! where it is readable, or the lifetime the user says the server documents,
//! `--state-lifetime`). Their refusals count beside a [`Control`] (a valid
//! retry by its owner, now, goes on); the replay's own control is the
//! completion it repeats.

use super::control::Control;
use super::judge::rpc_state_rejection;
use super::model::Verdict;
use super::probe::{Probe, ToolProfile};
use super::registry::{Check, check};
use super::state_decode::{expiry_ms, reencodings};
use super::subject::{Completed, complete, first_at_state, reading, result_text, retry};
use crate::client::raw::Rpc;
use crate::oracle::replay::{Twice, judge};
use serde_json::Value;
use std::time::Duration;

/// The checks of this family.
pub fn checks() -> Vec<Check> {
    vec![
        check!(
            "mrtr-replay-final-retry",
            "§4.7 S8 / §6.B 15",
            Must,
            Modern,
            "the final retry of a completed flow, sent again, does not complete again (FAIL for single-use tools, WARN elsewhere)",
            replay_final_retry
        ),
        check!(
            "mrtr-cross-principal",
            "§4.7 S8a, §3.6 rule 3 / §6.B 12",
            Should,
            Modern,
            "a state presented with another principal's credentials is rejected",
            cross_principal,
            two_principals
        ),
        check!(
            "mrtr-state-expiry",
            "§4.7 S8b / §6.B 13",
            Should,
            Modern,
            "a state replayed after it expired (the expiry it carries, or --state-lifetime) is rejected",
            expiry,
            expiry
        ),
    ]
}

/// What one replay showed.
enum Replayed {
    /// The replay was refused; says how.
    Refused(String),
    /// It completed again; the evidence line.
    Twice(String),
    /// The tool could not be walked to a completion; says why.
    NotReached(String),
}

async fn replay_one(p: &Probe, t: &ToolProfile) -> Replayed {
    let done: Completed = match complete(p, t).await {
        Ok(d) => d,
        Err(e) => return Replayed::NotReached(e.to_string()),
    };
    let Some(state) = done.state.clone() else {
        return Replayed::NotReached(format!(
            "{}: its final retry carried no requestState",
            t.name
        ));
    };
    let label = format!(
        "tools/call {} replay of the final retry (same requestState and inputResponses, new id)",
        t.name
    );
    let (rpc, status) = match retry(p, t, &label, &done.answers, &state).await {
        Ok(x) => x,
        Err(e) => return Replayed::Refused(format!("{}: no reply to the replay ({e})", t.name)),
    };
    if rpc.completes() {
        return Replayed::Twice(format!(
            "{}: first completion \"{}\", the replay completed again \"{}\"",
            t.name,
            result_text(&done.result),
            rpc.result().map(result_text).unwrap_or_default()
        ));
    }
    let refused = format!(
        "{}: the replay got {}",
        t.name,
        reading(&rpc, p.reply_status(status))
    );
    // A guard keyed on the wire string lets a re-encoding of the same bytes
    // through: replay once more, re-encoded.
    for (what, again) in reencodings(&state) {
        let label = format!(
            "tools/call {} replay of the final retry, state re-encoded as {what}",
            t.name
        );
        if let Ok((rpc, _)) = retry(p, t, &label, &done.answers, &again).await
            && rpc.completes()
        {
            return Replayed::Twice(format!(
                "{}: the exact replay was refused, but the same state re-encoded as {what} \
                 completed again (\"{}\"): the replay guard keys on the wire string, not the \
                 decoded state",
                t.name,
                rpc.result().map(result_text).unwrap_or_default()
            ));
        }
    }
    match rpc_state_rejection(&rpc, &["replayed"]) {
        Ok(seen) => Replayed::Refused(format!("{}: {seen}", t.name)),
        Err(_) => Replayed::Refused(refused),
    }
}

async fn replay_final_retry(p: Probe) -> Verdict {
    let tools: Vec<ToolProfile> = p
        .target()
        .state_tools()
        .into_iter()
        .filter(|t| p.target().off_origin(t).is_none())
        .collect();
    if tools.is_empty() {
        return p
            .target()
            .no_subject("no tool issues a requestState in any round");
    }
    let mut twice_single = Vec::new();
    let mut twice = Vec::new();
    let mut refused = Vec::new();
    let mut unreached = Vec::new();
    for t in &tools {
        match replay_one(&p, t).await {
            Replayed::Twice(line) => match judge(t.single_use, 2) {
                Some(Twice::SingleUse) => twice_single.push(line),
                _ => twice.push(line),
            },
            Replayed::Refused(line) => refused.push(line),
            Replayed::NotReached(why) => unreached.push(why),
        }
    }
    let rest = |v: &[String]| {
        if v.is_empty() {
            String::new()
        } else {
            format!("; refused: {}", v.join("; "))
        }
    };
    if !twice_single.is_empty() {
        return Verdict::fail(format!(
            "single-use tool(s) completed twice from the same state and answers: {}{}",
            twice_single.join("; "),
            rest(&[twice.clone(), refused].concat())
        ))
        .expecting("the second completion of a single-use state is refused (a JSON-RPC error)");
    }
    if !twice.is_empty() {
        return Verdict::violation(
            Twice::MayRepeat.severity(),
            format!(
                "the same state and answers completed twice; if this action must not repeat, \
                 this is a MUST (mark the tool destructiveHint, say \"exactly once\" in its \
                 description, or run with --single-use NAME): {}{}",
                twice.join("; "),
                rest(&refused)
            ),
        )
        .expecting("a replayed final retry is refused, or the action is safe to repeat");
    }
    if refused.is_empty() {
        return Verdict::skip(format!(
            "no tool could be walked to a completion: {}",
            unreached.join("; ")
        ));
    }
    let mut out = format!("every replay was refused: {}", refused.join("; "));
    if !unreached.is_empty() {
        out.push_str(&format!("; not reached: {}", unreached.join("; ")));
    }
    Verdict::pass(out)
}

async fn cross_principal(p: Probe) -> Verdict {
    if !p.target().principals_matter() {
        return super::identity::no_identity();
    }
    let r = match first_at_state(&p, false).await {
        Ok(r) => r,
        Err(v) => return v,
    };
    let control = Control::retry(&p, &r.tool).await;
    let other = p.settings().target.other_principal.clone();
    let req = p
        .call_request(
            format!(
                "tools/call {} round {} retry as another principal",
                r.tool.name,
                r.index + 1
            ),
            &r.tool,
            &super::probe::all_modes(),
            Some(Value::Object(r.answers.clone())),
            Some(&r.state),
        )
        .token(Some(&other));
    let reply = match p.send(req).await {
        Ok(x) => x,
        Err(e) => return Verdict::fail(format!("no reply: {e}")),
    };
    if matches!(reply.status, 401 | 403) {
        return control.judge(Verdict::pass(format!(
            "{}: refused with {}",
            r.tool.name,
            p.reply_status(reply.status)
        )));
    }
    let rpc = reply.rpc();
    match rpc_state_rejection(&rpc, &["wrong_principal"]) {
        Ok(s) => control.judge(Verdict::pass(format!("{}: {s}", r.tool.name))),
        Err(why) => Verdict::fail(format!(
            "{}: another principal's retry with this state got {}{}",
            r.tool.name,
            reading(&rpc, p.reply_status(reply.status)),
            if matches!(rpc, Rpc::Error(_)) {
                format!(" ({why})")
            } else {
                String::new()
            }
        ))
        .expecting(
            "a JSON-RPC error (or 401/403): the state belongs to the principal it was issued to",
        ),
    }
}

/// The longest a run waits for a state to expire unasked (no
/// `--wait-expiry`), when the state says when it expires.
pub const PLAIN_EXPIRY_WAIT: Duration = Duration::from_secs(30);

/// Beyond the expiry a state carries, how long before its retry: servers
/// allow some clock skew (the reference server 5 s).
const SKEW_GRACE: Duration = Duration::from_secs(6);

/// The longest the expiry check waits under `s` (its timeout grows by it).
pub fn longest_wait(s: &super::probe::Settings) -> Duration {
    s.wait_expiry.unwrap_or_else(|| {
        let stated = s.state_lifetime.map_or(Duration::ZERO, |l| l + SKEW_GRACE);
        stated.max(PLAIN_EXPIRY_WAIT)
    })
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// What an accepted retry after the wait rests on: the lifetime the state
/// carries, the one the user stated the server documents, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifetime {
    /// Read from the state ([`expiry_ms`]).
    Carried,
    /// `--state-lifetime`: what the server documents.
    Stated(Duration),
    /// Neither: a retry still taken after the wait cannot tell a lifetime
    /// longer than the wait from none.
    Unknown,
}

/// How long the expiry check waits and what that wait rests on, from
/// `--wait-expiry` (`wait`), `--state-lifetime` (`stated`) and the lifetime
/// the state of `tool` carries (`carried`, which wins over `stated`). A
/// wait shorter than a known lifetime is the setting's fault (INCONCLUSIVE);
/// nothing to wait for is a SKIP saying what to pass.
fn expiry_wait(
    wait: Option<Duration>,
    stated: Option<Duration>,
    carried: Option<Duration>,
    tool: &str,
) -> Result<(Duration, Lifetime), Verdict> {
    match (wait, carried, stated) {
        (Some(w), Some(l), _) if w < l + SKEW_GRACE => Err(Verdict::Inconclusive(format!(
            "--wait-expiry {w:?} is shorter than the lifetime the state of {tool} carries (it \
             expires in {l:?}, and servers allow some clock skew): pass --wait-expiry {:?} or \
             more to measure it",
            l + SKEW_GRACE
        ))),
        (Some(w), Some(_), _) => Ok((w, Lifetime::Carried)),
        (None, Some(l), _) if l + SKEW_GRACE <= PLAIN_EXPIRY_WAIT => {
            Ok((l + SKEW_GRACE, Lifetime::Carried))
        }
        (None, Some(l), _) => Err(Verdict::skip(format!(
            "the state of {tool} says it expires in {l:?}, longer than a run waits unasked \
             ({PLAIN_EXPIRY_WAIT:?}): pass --wait-expiry {:?} (and a --deadline above it) to \
             measure it",
            l + SKEW_GRACE
        ))),
        (Some(w), None, Some(s)) if w < s => Err(Verdict::Inconclusive(format!(
            "--wait-expiry {w:?} is shorter than the lifetime stated with --state-lifetime \
             ({s:?}): pass --wait-expiry {:?} or more, or leave it out",
            s + SKEW_GRACE
        ))),
        (Some(w), None, Some(s)) => Ok((w, Lifetime::Stated(s))),
        (None, None, Some(s)) => Ok((s + SKEW_GRACE, Lifetime::Stated(s))),
        (Some(w), None, None) => Ok((w, Lifetime::Unknown)),
        (None, None, None) => Err(Verdict::skip(format!(
            "not requested: the state of {tool} shows no expiry to wait for; pass \
             --state-lifetime DURATION (the state lifetime the server documents)"
        ))),
    }
}

/// S8b: a state retried after it expired is refused. How long to wait
/// comes from `--wait-expiry`, the expiry the state carries where it is
/// readable ([`expiry_ms`]) and near enough ([`PLAIN_EXPIRY_WAIT`]), or the
/// lifetime the server documents (`--state-lifetime`): see
/// [`expiry_wait`]. A state still taken after a wait that no known
/// lifetime backs is INCONCLUSIVE: a lifetime longer than the wait cannot
/// be told from none, and the user's wait is not the server's fault.
async fn expiry(p: Probe) -> Verdict {
    let r = match first_at_state(&p, false).await {
        Ok(r) => r,
        Err(v) => return v,
    };
    let tool = r.tool.name.clone();
    let carried = expiry_ms(&r.state).map(|e| Duration::from_millis(e.saturating_sub(unix_ms())));
    let settings = p.settings();
    let (wait, lifetime) = match expiry_wait(
        settings.wait_expiry,
        settings.state_lifetime,
        carried,
        &tool,
    ) {
        Ok(w) => w,
        Err(v) => return v,
    };
    tokio::time::sleep(wait).await;
    // The control after the wait: a fresh state is still taken now.
    let control = Control::retry(&p, &r.tool).await;
    let label = format!("tools/call {tool} retry after {wait:?}");
    match retry(&p, &r.tool, &label, &r.answers, &r.state).await {
        Err(e) => Verdict::fail(format!("no reply: {e}")),
        Ok((rpc, status)) => match rpc_state_rejection(&rpc, &["expired"]) {
            Ok(s) => control.judge(Verdict::pass(format!("{tool}: after {wait:?}: {s}"))),
            Err(why) => {
                let got = format!(
                    "{}{}",
                    reading(&rpc, p.reply_status(status)),
                    if matches!(rpc, Rpc::Error(_)) {
                        format!(" ({why})")
                    } else {
                        String::new()
                    }
                );
                let past = match lifetime {
                    Lifetime::Carried => ", past the expiry it carries,".to_string(),
                    Lifetime::Stated(s) if wait < s + SKEW_GRACE => format!(
                        ", past the {s:?} lifetime the server documents (--state-lifetime) but \
                         within the {SKEW_GRACE:?} of clock skew a server may add (leave \
                         --wait-expiry out if it does),"
                    ),
                    Lifetime::Stated(s) => format!(
                        ", past the {s:?} lifetime the server documents (--state-lifetime),"
                    ),
                    Lifetime::Unknown => {
                        return Verdict::Inconclusive(format!(
                            "{tool}: a state {wait:?} old got {got}; its expiry is not readable \
                             and no lifetime was stated, so a lifetime longer than {wait:?} \
                             cannot be told from none: pass --state-lifetime DURATION (the \
                             state lifetime the server documents) to judge it"
                        ));
                    }
                };
                Verdict::fail(format!("{tool}: a state {wait:?} old{past} got {got}"))
                    .expecting("a JSON-RPC error: the state has expired")
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn inconclusive(r: Result<(Duration, Lifetime), Verdict>) -> String {
        match r {
            Err(Verdict::Inconclusive(w)) => w,
            other => panic!("not inconclusive: {other:?}"),
        }
    }

    #[test]
    fn a_carried_expiry_wins_over_a_stated_lifetime() {
        let w = expiry_wait(None, Some(100 * S), Some(2 * S), "t").unwrap();
        assert_eq!(w, (2 * S + SKEW_GRACE, Lifetime::Carried));
        let why = inconclusive(expiry_wait(Some(S), None, Some(2 * S), "t"));
        assert!(why.contains("--wait-expiry 1s is shorter"), "{why}");
    }

    #[test]
    fn a_stated_lifetime_backs_the_wait_and_bounds_it() {
        let w = expiry_wait(None, Some(S), None, "t").unwrap();
        assert_eq!(w, (S + SKEW_GRACE, Lifetime::Stated(S)));
        let w = expiry_wait(Some(2 * S), Some(S), None, "t").unwrap();
        assert_eq!(w, (2 * S, Lifetime::Stated(S)));
        let why = inconclusive(expiry_wait(Some(S / 2), Some(S), None, "t"));
        assert!(why.contains("--state-lifetime"), "{why}");
    }

    #[test]
    fn a_wait_alone_on_an_unreadable_state_backs_no_finding() {
        let w = expiry_wait(Some(S), None, None, "t").unwrap();
        assert_eq!(w, (S, Lifetime::Unknown));
        match expiry_wait(None, None, None, "t") {
            Err(Verdict::Skip(w)) => assert!(w.contains("--state-lifetime"), "{w}"),
            other => panic!("not a skip: {other:?}"),
        }
    }
}
