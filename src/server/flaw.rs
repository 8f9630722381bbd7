//! Flaw switches: deliberate spec violations the reference server can be
//! started with (`--flaw NAME`), so that every check can be shown to fail.
//! Without flaws the server breaks none of these rules.

use std::fmt;
use std::str::FromStr;

/// One deliberate defect. Each changes exactly the behaviour it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flaw {
    /// A `requestState` that fails verification is trusted anyway: the
    /// request's own principal, tool and arguments stand in for its claims.
    AcceptTamperedState,
    /// The principal bound into a `requestState` (and a URL flow's owner)
    /// is not compared with the caller.
    IgnorePrincipal,
    /// The request digest bound into a `requestState` is not compared.
    IgnoreRequestBinding,
    /// New states are sealed without a usable expiry (far future).
    NoExpiry,
    /// Single-use completions (`delete_file`, `connect_billing`) may repeat.
    ReplayableSideEffect,
    /// `connect_billing` sends URL mode to a form-only client instead of `-32021`.
    UrlToFormClient,
    /// Tools elicit even when the client declared no `elicitation` capability.
    ElicitWithoutCapability,
    /// `connect_billing` asks for the API key in a form field.
    SecretInForm,
    /// A `decline` answer makes the server fail with HTTP 500.
    CrashOnDecline,
    /// A `cancel` answer is not answered until the hang limit (60 s) passes.
    HangOnCancel,
    /// 2026-07-28 results carry no `resultType`.
    MissingResultType,
    /// `tools/list` answers `input_required`.
    InputRequiredOnList,
    /// 2025-11-25 URL-mode `elicitation/create` omits `elicitationId`.
    LegacyUrlWithoutId,
}

impl Flaw {
    /// Every flaw, in `--list-flaws` order.
    pub const ALL: [Flaw; 13] = [
        Flaw::AcceptTamperedState,
        Flaw::IgnorePrincipal,
        Flaw::IgnoreRequestBinding,
        Flaw::NoExpiry,
        Flaw::ReplayableSideEffect,
        Flaw::UrlToFormClient,
        Flaw::ElicitWithoutCapability,
        Flaw::SecretInForm,
        Flaw::CrashOnDecline,
        Flaw::HangOnCancel,
        Flaw::MissingResultType,
        Flaw::InputRequiredOnList,
        Flaw::LegacyUrlWithoutId,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Flaw::AcceptTamperedState => "accept-tampered-state",
            Flaw::IgnorePrincipal => "ignore-principal",
            Flaw::IgnoreRequestBinding => "ignore-request-binding",
            Flaw::NoExpiry => "no-expiry",
            Flaw::ReplayableSideEffect => "replayable-side-effect",
            Flaw::UrlToFormClient => "url-to-form-client",
            Flaw::ElicitWithoutCapability => "elicit-without-capability",
            Flaw::SecretInForm => "secret-in-form",
            Flaw::CrashOnDecline => "crash-on-decline",
            Flaw::HangOnCancel => "hang-on-cancel",
            Flaw::MissingResultType => "missing-result-type",
            Flaw::InputRequiredOnList => "input-required-on-list",
            Flaw::LegacyUrlWithoutId => "legacy-url-without-id",
        }
    }

    /// The spec rule it breaks (spec-digest section and rule).
    pub fn rule(self) -> &'static str {
        match self {
            Flaw::AcceptTamperedState => "§4.7 S7",
            Flaw::IgnorePrincipal => "§4.7 S8a, §3.6 rule 5",
            Flaw::IgnoreRequestBinding => "§4.7 S8c",
            Flaw::NoExpiry => "§4.7 S8b",
            Flaw::ReplayableSideEffect => "§4.7 S8 (single use)",
            Flaw::UrlToFormClient => "§2.4, §4.7 S5",
            Flaw::ElicitWithoutCapability => "§2.4, §4.7 S5",
            Flaw::SecretInForm => "§3.6 rule 1",
            Flaw::CrashOnDecline => "§4.10, §6.A 12",
            Flaw::HangOnCancel => "§4.10, §6.B 20",
            Flaw::MissingResultType => "§4.4",
            Flaw::InputRequiredOnList => "§4.7 S1",
            Flaw::LegacyUrlWithoutId => "§2.1, §6.A 9",
        }
    }

    /// What the server does differently.
    pub fn description(self) -> &'static str {
        match self {
            Flaw::AcceptTamperedState => {
                "a requestState that fails verification is trusted; the request stands in for its claims"
            }
            Flaw::IgnorePrincipal => {
                "states and URL flows are not checked against the calling principal"
            }
            Flaw::IgnoreRequestBinding => {
                "states are not checked against the originating tool and arguments"
            }
            Flaw::NoExpiry => "states are sealed with a far-future expiry (the TTL is ignored)",
            Flaw::ReplayableSideEffect => {
                "delete_file and connect_billing run their side effect again on a replayed state"
            }
            Flaw::UrlToFormClient => "connect_billing sends URL mode to a form-only client",
            Flaw::ElicitWithoutCapability => {
                "tools elicit even when the client declared no elicitation capability"
            }
            Flaw::SecretInForm => "connect_billing asks for the API key in a form field",
            Flaw::CrashOnDecline => "a decline answer yields HTTP 500",
            Flaw::HangOnCancel => "a cancel answer is left unanswered for 60 s",
            Flaw::MissingResultType => "2026-07-28 results omit resultType",
            Flaw::InputRequiredOnList => "tools/list answers input_required",
            Flaw::LegacyUrlWithoutId => {
                "2025-11-25 URL-mode elicitation/create has no elicitationId"
            }
        }
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }

    /// The `--list-flaws` table: name, rule, description.
    pub fn table() -> String {
        let mut out = format!("{:<27} {:<24} {}\n", "FLAW", "RULE", "BEHAVIOUR");
        for f in Flaw::ALL {
            out.push_str(&format!(
                "{:<27} {:<24} {}\n",
                f.name(),
                f.rule(),
                f.description()
            ));
        }
        out
    }
}

impl fmt::Display for Flaw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown flaw name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown flaw {0:?} (see --list-flaws)")]
pub struct UnknownFlaw(pub String);

impl FromStr for Flaw {
    type Err = UnknownFlaw;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Flaw::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownFlaw(s.to_owned()))
    }
}

/// A set of flaws (empty = a correct server).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlawSet(u16);

impl FlawSet {
    /// No flaws.
    pub fn none() -> Self {
        FlawSet(0)
    }

    /// Adds a flaw.
    pub fn insert(&mut self, flaw: Flaw) {
        self.0 |= flaw.bit();
    }

    /// True when `flaw` is switched on.
    pub fn has(self, flaw: Flaw) -> bool {
        self.0 & flaw.bit() != 0
    }

    /// True when no flaw is on.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The flaws switched on, in [`Flaw::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Flaw> {
        Flaw::ALL.into_iter().filter(move |f| self.has(*f))
    }
}

impl FromIterator<Flaw> for FlawSet {
    fn from_iter<I: IntoIterator<Item = Flaw>>(iter: I) -> Self {
        let mut s = FlawSet::none();
        for f in iter {
            s.insert(f);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for f in Flaw::ALL {
            assert_eq!(f.name().parse::<Flaw>(), Ok(f));
            assert!(seen.insert(f.name()));
            assert!(!f.rule().is_empty() && !f.description().is_empty());
        }
        assert!("no-such-flaw".parse::<Flaw>().is_err());
    }

    #[test]
    fn set_holds_exactly_what_was_inserted() {
        let s: FlawSet = [Flaw::NoExpiry, Flaw::LegacyUrlWithoutId]
            .into_iter()
            .collect();
        assert!(s.has(Flaw::NoExpiry) && s.has(Flaw::LegacyUrlWithoutId));
        assert!(!s.has(Flaw::CrashOnDecline));
        assert_eq!(s.iter().count(), 2);
        assert!(FlawSet::none().is_empty());
    }

    #[test]
    fn table_lists_every_flaw() {
        let t = Flaw::table();
        for f in Flaw::ALL {
            assert!(t.contains(f.name()));
        }
    }
}
