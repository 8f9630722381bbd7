//! A changed request accepted (S7, S8a): a retry whose `requestState` was
//! tampered with (or that another principal sent) completes. That shows the
//! server trusted the state only when the state is demonstrably
//! load-bearing, so the changed retry is judged against controls: the same
//! answers with no state (sent twice, to tell a stable result from one that
//! changes call to call) and an untampered retry of a fresh state.
//!
//! - No-state does not complete: the state was needed, and the changed one
//!   stood in for it. (No reply at all is no refusal: it shows nothing.)
//! - No-state completes too: the state bears on the call only when the
//!   untampered retry completes *differently* from no-state (compared on
//!   `content` and `structuredContent`), and the changed state was trusted
//!   only when it, too, completed differently from no-state (a server that
//!   drops a bad state and completes from the answers alone trusted
//!   nothing); where the untampered retry completes alike too, the
//!   changed state completing otherwise shows the changed field changed
//!   the result.
//! - Shown trusted, the changed retry is a finding only when it acted:
//!   completing like the same flow declined did nothing ([`effect`]).
//! - Where the user says the tool acts on what its state holds (as the
//!   server documents it: [`Controls::documented`]), the state is
//!   load-bearing on that word and no no-state control is asked for; the
//!   effect control still is.

use super::Oracle;
use super::effect::{self, Effect};

pub use super::effect::Outcome;

/// What a changed retry changed, and so which rule its acceptance breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The state's bytes (S7: integrity).
    State,
    /// The state, swapped whole for one the server issued for another
    /// request: genuine, so only its binding to the request is tested
    /// (S8c, a SHOULD).
    OtherRequest,
    /// The credentials: another principal sent the state (S8a).
    Principal,
}

impl Change {
    /// The oracle a changed retry shown trusted is a finding of.
    pub fn oracle(self) -> Oracle {
        match self {
            Change::State => Oracle::TamperedStateAccepted,
            Change::OtherRequest => Oracle::OtherRequestAccepted,
            Change::Principal => Oracle::ForeignPrincipalAccepted,
        }
    }

    /// What was sent, as a reader would say it.
    pub fn what(self) -> &'static str {
        match self {
            Change::State => "a changed requestState",
            Change::OtherRequest => "the requestState issued for another request",
            Change::Principal => "another principal's retry",
        }
    }
}

/// The controls a completed changed retry is judged against.
#[derive(Debug, Clone, Default)]
pub struct Controls {
    /// The same answers (and credentials), no state.
    pub no_state: Option<Outcome>,
    /// The same, sent again (only needed when the first completed).
    pub no_state_again: Option<Outcome>,
    /// An untampered retry of a fresh state, same principal (only needed
    /// when no-state completed).
    pub untampered: Option<Outcome>,
    /// The effect control ([`effect`]): a fresh flow's retry with every
    /// input request declined (only needed once the state is shown
    /// load-bearing and trusted).
    pub declined: Option<Outcome>,
    /// The user says the tool acts on what its state holds, as the
    /// server's documentation does (`fuzz --trusts-state`): the state is
    /// load-bearing on that word, not shown by the no-state controls.
    pub documented: bool,
}

/// A control to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// [`Controls::no_state`].
    NoState,
    /// [`Controls::no_state_again`].
    NoStateAgain,
    /// [`Controls::untampered`].
    Untampered,
    /// [`Controls::declined`].
    Declined,
}

/// The judgement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// The changed retry did not complete.
    Refused,
    /// A finding: why the state was load-bearing and trusted.
    Accepted(String),
    /// Completed, but the controls do not show the state was trusted: why.
    NotShown(String),
    /// Another control is needed first (the caller sends it and asks again).
    Need(Control),
}

/// Why a no-state control that got no reply decides nothing.
const UNANSWERED: &str = "the same answers without a state got no reply, so nothing shows whether \
                          the state was needed";

/// Why a changed retry of a tool documented to act on its state is a
/// finding without the no-state controls.
pub const DOCUMENTED: &str = "the tool acts on what its state holds (--trusts-state: the server's \
                              documentation says so), and the changed state completed";

/// Judges a changed retry's `outcome` against `c`: the state shown
/// load-bearing and trusted, then the effect control, so that a changed
/// retry that completed like a decline (it did nothing) is a note.
pub fn judge(changed: &Outcome, c: &Controls) -> Judgement {
    let why = match trusted(changed, c) {
        Judgement::Accepted(why) => why,
        other => return other,
    };
    let Some(declined) = &c.declined else {
        return Judgement::Need(Control::Declined);
    };
    match effect::judge(changed, declined) {
        Effect::Acted => Judgement::Accepted(why),
        Effect::Nothing => Judgement::NotShown(Effect::Nothing.why().into()),
        Effect::Unknown => Judgement::Accepted(format!("{why} ({})", Effect::Unknown.why())),
    }
}

/// Whether the controls show the state load-bearing and the changed one
/// trusted.
fn trusted(changed: &Outcome, c: &Controls) -> Judgement {
    let Outcome::Completed(t) = changed else {
        return Judgement::Refused;
    };
    if c.documented {
        return Judgement::Accepted(DOCUMENTED.into());
    }
    let Some(none) = &c.no_state else {
        return Judgement::Need(Control::NoState);
    };
    if *none == Outcome::Unanswered {
        return Judgement::NotShown(UNANSWERED.into());
    }
    let Outcome::Completed(n) = none else {
        return Judgement::Accepted(
            "the same answers without a state did not complete: the state was needed, and the \
             changed one stood in for it"
                .into(),
        );
    };
    let Some(again) = &c.no_state_again else {
        return Judgement::Need(Control::NoStateAgain);
    };
    if *again == Outcome::Unanswered {
        return Judgement::NotShown(UNANSWERED.into());
    }
    if again != none {
        return Judgement::NotShown(
            "without a state the call completes too, with a result that changes from call to \
             call, so results cannot show what the state adds"
                .into(),
        );
    }
    let Some(untampered) = &c.untampered else {
        return Judgement::Need(Control::Untampered);
    };
    match untampered {
        Outcome::Other | Outcome::Unanswered => Judgement::NotShown(
            "without a state the call completes too, and the untampered retry did not, so \
             nothing shows what the state adds"
                .into(),
        ),
        Outcome::Completed(u) if u == n && t != n => Judgement::Accepted(
            "without a state the call completes alike, yet the changed state completed \
             differently from both: the changed field changed the result"
                .into(),
        ),
        Outcome::Completed(u) if u == n => Judgement::NotShown(
            "without a state the call completes alike: the state does not bear on the result"
                .into(),
        ),
        Outcome::Completed(_) if t == n => Judgement::NotShown(
            "the state bears on the result, but the changed one completed like no state at all: \
             it was dropped, not trusted"
                .into(),
        ),
        Outcome::Completed(u) => Judgement::Accepted(format!(
            "without a state the call completes differently (the state bears on the result), and \
             the changed state completed {}",
            if t == u {
                "exactly like the untampered one: it was trusted"
            } else {
                "differently from both: its changed content was used"
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn done(text: &str) -> Outcome {
        Outcome::Completed(json!({"content": [{"type": "text", "text": text}]}))
    }

    fn controls(n: Outcome, again: Option<Outcome>, u: Option<Outcome>) -> Controls {
        Controls {
            no_state: Some(n),
            no_state_again: again,
            untampered: u,
            declined: Some(done("not approved")),
            documented: false,
        }
    }

    /// A tool documented to act on its state: a changed state completing
    /// is a finding even where no state completes alike (a note without
    /// that word), unless it did nothing; a refusal stays a refusal.
    #[test]
    fn a_documented_state_needs_no_no_state_control() {
        let c = Controls {
            documented: true,
            ..controls(done("booked"), Some(done("booked")), Some(done("booked")))
        };
        assert_eq!(
            judge(&done("booked"), &c),
            Judgement::Accepted(DOCUMENTED.into())
        );
        assert!(matches!(
            judge(&done("not approved"), &c),
            Judgement::NotShown(_)
        ));
        assert_eq!(judge(&Outcome::Other, &c), Judgement::Refused);
        let asked = Controls {
            documented: true,
            ..Controls::default()
        };
        assert_eq!(
            judge(&done("ok"), &asked),
            Judgement::Need(Control::Declined)
        );
        let undocumented = Controls {
            documented: false,
            ..c
        };
        assert!(matches!(
            judge(&done("booked"), &undocumented),
            Judgement::NotShown(w) if w.contains("does not bear")
        ));
    }

    #[test]
    fn a_refused_or_needed_state_is_told_at_once() {
        assert_eq!(
            judge(&Outcome::Other, &Controls::default()),
            Judgement::Refused
        );
        assert_eq!(
            judge(&done("ok"), &Controls::default()),
            Judgement::Need(Control::NoState)
        );
        let c = controls(Outcome::Other, None, None);
        assert!(matches!(judge(&done("ok"), &c), Judgement::Accepted(w) if w.contains("needed")));
        // Shown trusted, the effect control is asked for last.
        let c = Controls {
            declined: None,
            ..controls(Outcome::Other, None, None)
        };
        assert_eq!(judge(&done("ok"), &c), Judgement::Need(Control::Declined));
        // A control that got no reply is no refusal: it tells nothing.
        let c = controls(Outcome::Unanswered, None, None);
        assert!(matches!(judge(&done("ok"), &c), Judgement::NotShown(w) if w.contains("no reply")));
        let c = controls(done("ok"), Some(Outcome::Unanswered), None);
        assert!(matches!(judge(&done("ok"), &c), Judgement::NotShown(w) if w.contains("no reply")));
        assert_eq!(
            judge(&Outcome::Unanswered, &Controls::default()),
            Judgement::Refused
        );
    }

    #[test]
    fn a_state_that_bears_on_the_result_and_is_trusted_is_found() {
        let c = controls(done("to ?"), None, None);
        assert_eq!(
            judge(&done("to Paris"), &c),
            Judgement::Need(Control::NoStateAgain)
        );
        let c = controls(done("to ?"), Some(done("to ?")), None);
        assert_eq!(
            judge(&done("to Paris"), &c),
            Judgement::Need(Control::Untampered)
        );
        let c = controls(done("to ?"), Some(done("to ?")), Some(done("to Paris")));
        assert!(
            matches!(judge(&done("to Paris"), &c), Judgement::Accepted(w) if w.contains("trusted"))
        );
        assert!(
            matches!(judge(&done("to Rome"), &c), Judgement::Accepted(w) if w.contains("used"))
        );
    }

    #[test]
    fn a_state_not_shown_to_bear_on_the_result_is_no_finding() {
        // The server completes from the answers alone, state or not.
        let same = controls(done("ok"), Some(done("ok")), Some(done("ok")));
        assert!(matches!(judge(&done("ok"), &same), Judgement::NotShown(w) if w.contains("alike")));
        // The changed state was dropped: it completed like no state.
        let c = controls(done("to ?"), Some(done("to ?")), Some(done("to Paris")));
        assert!(
            matches!(judge(&done("to ?"), &c), Judgement::NotShown(w) if w.contains("dropped"))
        );
        // Results that change call to call cannot be compared.
        let c = controls(done("#1"), Some(done("#2")), Some(done("#3")));
        assert!(matches!(judge(&done("#4"), &c), Judgement::NotShown(w) if w.contains("changes")));
        // The untampered retry failed: nothing to compare with.
        let c = controls(done("ok"), Some(done("ok")), Some(Outcome::Other));
        assert!(matches!(judge(&done("x"), &c), Judgement::NotShown(_)));
    }

    /// The effect control: a changed retry that completed like the same
    /// flow declined did nothing (seen failing without it: a declined retry
    /// with a spliced state, no state needed, was `Accepted`); one whose
    /// decline got no reply is reported, saying so.
    #[test]
    fn a_changed_retry_that_did_nothing_is_no_finding() {
        let c = controls(Outcome::Other, None, None);
        assert!(
            matches!(judge(&done("not approved"), &c), Judgement::NotShown(w) if w.contains("did nothing"))
        );
        let c = Controls {
            declined: Some(Outcome::Unanswered),
            ..controls(Outcome::Other, None, None)
        };
        assert!(
            matches!(judge(&done("ok"), &c), Judgement::Accepted(w) if w.contains("could not be told"))
        );
    }

    /// Where no state and the untampered state complete alike, a changed
    /// state completing otherwise changed the result: a finding (it was a
    /// note, "the state does not bear on the result"), unless it did
    /// nothing.
    #[test]
    fn a_changed_field_that_changed_the_result_is_found() {
        let c = controls(done("booked"), Some(done("booked")), Some(done("booked")));
        assert!(
            matches!(judge(&done("booked for mallory"), &c), Judgement::Accepted(w) if w.contains("changed the result"))
        );
        assert!(matches!(
            judge(&done("not approved"), &c),
            Judgement::NotShown(_)
        ));
    }
}
