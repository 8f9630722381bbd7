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
    /// The principal bound into a `requestState` (and a URL flow's owner,
    /// and a 2025-11-25 session's owner) is not compared with the caller.
    IgnorePrincipal,
    /// The request digest bound into a `requestState` is not compared.
    IgnoreRequestBinding,
    /// New states are sealed without a usable expiry (far future).
    NoExpiry,
    /// A completion from a `requestState` may repeat: replaying the final
    /// retry runs the tool (and its side effect) again, for every tool.
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
    /// A foreign `Origin` or `Host` is served as if allowed (DNS rebinding).
    NoOriginCheck,
    /// 2026-07-28 list, read and discover results omit `ttlMs` and `cacheScope`.
    NoCacheHints,
    /// A `tools/call` whose `inputResponses` is not an object or whose
    /// `requestState` is not a string gets HTTP 404 + `-32601`.
    BadShapeNotFound,
    /// 2025-11-25: a call's `elicitation/create` goes only on the
    /// session's GET stream (waiting, up to the elicitation timeout, for
    /// the client to open one), never on the call's own stream.
    ElicitOnGetStream,
    /// TCP_NODELAY off and each body written after its head: replies stall
    /// on Nagle + delayed ACK (~40 ms on loopback).
    NoNodelay,
    /// `deploy` deploys on decline and cancel too, answering as for accept.
    ActOnDecline,
    /// `connect_billing` echoes the API key typed on its page in the result.
    LeakSecret,
    /// `connect_billing` puts the typed API key, in clear, into the
    /// `requestState` payload of one more round after the page.
    SecretInState,
    /// A foreign `Host` is served; a foreign `Origin` still gets 403.
    NoHostCheck,
    /// Accepted form content is not validated against the requested
    /// schema: missing required fields, wrong types, values out of range or
    /// outside the enum are taken as given.
    AcceptInvalidContent,
    /// `connect_billing` puts the contact name typed on its page (not a
    /// secret field), in clear, into the `requestState` payload of one
    /// more round after the page.
    TypedInState,
    /// The principal bound into a `requestState` is not compared with the
    /// caller; sessions and flow pages stay bound to their users.
    IgnoreStatePrincipal,
    /// 2025-11-25: a GET stream opened before `notifications/initialized`
    /// gets an `elicitation/create` at once.
    ElicitBeforeInitialized,
    /// `tools/call` results (2026-07-28 replies, 2025-11-25 final
    /// responses) go through one process-wide slot: overlapping calls get
    /// the last result put there, whoever's it is (responses of one client
    /// sent to another, as in GHSA-345p-7cg4-v4c7).
    CrossTalk,
    /// A 2026-07-28 retry carrying `inputResponses` but no `requestState`
    /// is answered from those answers alone, as if a state had asked for
    /// them (a fresh conversation; earlier rounds are lost). Breaks no rule
    /// by itself: with `accept-tampered-state` it is a server whose state
    /// is not load-bearing, which the fuzzer's tamper controls must tell.
    CompleteWithoutState,
    /// Every completed `tools/call` keeps 128 KiB of memory and one open
    /// descriptor for good (at most 256 MiB and 256 descriptors, so the
    /// machine survives it).
    Leak,
    /// With `--stdio`: a log line goes to stdout (not stderr) before each
    /// `tools/call` reply, as a stray `print()` does.
    StdioNoise,
    /// A `decline` answer makes the whole process exit (status 3), as an
    /// unhandled exception ends a stdio server.
    ExitOnDecline,
}

impl Flaw {
    /// Every flaw, in `--list-flaws` order.
    pub const ALL: [Flaw; 31] = [
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
        Flaw::NoOriginCheck,
        Flaw::NoHostCheck,
        Flaw::NoCacheHints,
        Flaw::BadShapeNotFound,
        Flaw::ElicitOnGetStream,
        Flaw::NoNodelay,
        Flaw::ActOnDecline,
        Flaw::LeakSecret,
        Flaw::SecretInState,
        Flaw::AcceptInvalidContent,
        Flaw::TypedInState,
        Flaw::IgnoreStatePrincipal,
        Flaw::ElicitBeforeInitialized,
        Flaw::CrossTalk,
        Flaw::CompleteWithoutState,
        Flaw::Leak,
        Flaw::StdioNoise,
        Flaw::ExitOnDecline,
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
            Flaw::NoOriginCheck => "no-origin-check",
            Flaw::NoHostCheck => "no-host-check",
            Flaw::NoCacheHints => "no-cache-hints",
            Flaw::BadShapeNotFound => "bad-shape-not-found",
            Flaw::ElicitOnGetStream => "elicit-on-get-stream",
            Flaw::NoNodelay => "no-nodelay",
            Flaw::ActOnDecline => "act-on-decline",
            Flaw::LeakSecret => "leak-secret",
            Flaw::SecretInState => "secret-in-state",
            Flaw::AcceptInvalidContent => "accept-invalid-content",
            Flaw::TypedInState => "typed-in-state",
            Flaw::IgnoreStatePrincipal => "ignore-state-principal",
            Flaw::ElicitBeforeInitialized => "elicit-before-initialized",
            Flaw::CrossTalk => "cross-talk",
            Flaw::CompleteWithoutState => "complete-without-state",
            Flaw::Leak => "leak",
            Flaw::StdioNoise => "stdio-noise",
            Flaw::ExitOnDecline => "exit-on-decline",
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
            Flaw::NoOriginCheck => "§3.2, §4.3, §6.A 19",
            Flaw::NoHostCheck => "§3.2, §4.3 (hardening)",
            Flaw::NoCacheHints => "§4.4a (SEP-2549)",
            Flaw::BadShapeNotFound => "§4.7 S9, §6.B 19",
            Flaw::ElicitOnGetStream => "§3.2, §6.A 16",
            Flaw::NoNodelay => "latency (no spec rule)",
            Flaw::ActOnDecline => "§2.3, §4.10",
            Flaw::LeakSecret => "§3.6 rule 6",
            Flaw::SecretInState => "§3.6 rule 6, §4.7 S7",
            Flaw::AcceptInvalidContent => "§3.6, §4.7 S9",
            Flaw::TypedInState => "§3.6 rule 6, §4.7 S7 (SHOULD)",
            Flaw::IgnoreStatePrincipal => "§4.7 S8a",
            Flaw::ElicitBeforeInitialized => "§3.1, §6.A 2",
            Flaw::CrossTalk => "JSON-RPC 2.0 §5 (a response answers its request)",
            Flaw::CompleteWithoutState => "none (a state not load-bearing)",
            Flaw::Leak => "resources (no spec rule)",
            Flaw::StdioNoise => "stdio transport (stdout)",
            Flaw::ExitOnDecline => "§4.10, stdio transport",
        }
    }

    /// What the server does differently.
    pub fn description(self) -> &'static str {
        match self {
            Flaw::AcceptTamperedState => {
                "a requestState that fails verification is trusted; the request stands in for its claims"
            }
            Flaw::IgnorePrincipal => {
                "states, URL flows and 2025-11-25 sessions are not checked against the calling principal"
            }
            Flaw::IgnoreRequestBinding => {
                "states are not checked against the originating tool and arguments"
            }
            Flaw::NoExpiry => "states are sealed with a far-future expiry (the TTL is ignored)",
            Flaw::ReplayableSideEffect => {
                "a replayed final retry completes (and deploys, deletes, books, connects) again"
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
            Flaw::NoOriginCheck => "a foreign Origin or Host is served as if allowed (no 403)",
            Flaw::NoHostCheck => "a foreign Host is served; a foreign Origin still gets 403",
            Flaw::NoCacheHints => {
                "2026-07-28 list, read and discover results omit ttlMs and cacheScope"
            }
            Flaw::BadShapeNotFound => {
                "a tools/call with non-object inputResponses or non-string requestState gets 404 + -32601"
            }
            Flaw::ElicitOnGetStream => {
                "2025-11-25 elicitation/create goes only on the session's GET stream, waiting (up to the elicitation timeout) for one to open; never on the call's POST stream"
            }
            Flaw::NoNodelay => {
                "TCP_NODELAY off and bodies written after their heads: replies stall ~40 ms"
            }
            Flaw::ActOnDecline => {
                "deploy deploys on decline and cancel too, and answers as for accept"
            }
            Flaw::LeakSecret => "connect_billing echoes the typed API key in its result",
            Flaw::SecretInState => {
                "connect_billing seals the typed API key in clear into one more requestState"
            }
            Flaw::AcceptInvalidContent => {
                "form answers are taken as given, never validated against the requested schema"
            }
            Flaw::TypedInState => {
                "connect_billing seals the contact name typed on its page in clear into one more requestState"
            }
            Flaw::IgnoreStatePrincipal => {
                "states are not checked against the calling principal (sessions and flow pages still are)"
            }
            Flaw::ElicitBeforeInitialized => {
                "a 2025-11-25 GET stream opened before initialized gets an elicitation/create at once"
            }
            Flaw::CrossTalk => {
                "overlapping tools/call requests share one result slot: a call may get another's result"
            }
            Flaw::CompleteWithoutState => {
                "a 2026-07-28 retry with inputResponses and no requestState is answered from the answers alone"
            }
            Flaw::Leak => {
                "each completed tools/call keeps 128 KiB and a descriptor (bounded: 256 MiB, 256 fds)"
            }
            Flaw::StdioNoise => {
                "with --stdio, a log line is written to stdout before each tools/call reply"
            }
            Flaw::ExitOnDecline => "a decline answer makes the process exit with status 3",
        }
    }

    /// What finds it: `check` ids, else `fuzz:`/`load:` and the oracle or
    /// verdict (the check matrix asserts that every check it sees break is
    /// named here).
    pub fn caught_by(self) -> &'static [&'static str] {
        match self {
            Flaw::AcceptTamperedState => &[
                "mrtr-tamper-bit-flip",
                "mrtr-tamper-truncate",
                "mrtr-tamper-extend",
                "mrtr-unsolicited-state",
                "mrtr-oversized-state",
            ],
            Flaw::IgnorePrincipal => &[
                "mrtr-cross-principal",
                "mrtr-url-cross-user",
                "legacy-url-cross-user",
                "legacy-cross-principal-session",
                "legacy-cross-principal-answer",
            ],
            Flaw::IgnoreRequestBinding => {
                &["mrtr-tamper-other-tool", "mrtr-tamper-other-arguments"]
            }
            Flaw::NoExpiry => &["mrtr-state-expiry"],
            Flaw::ReplayableSideEffect => &["mrtr-replay-final-retry", "fuzz:single-use-twice"],
            Flaw::UrlToFormClient => &[
                "mrtr-cap-form-only",
                "mrtr-cap-elicitation-empty",
                "legacy-cap-form-only",
            ],
            Flaw::ElicitWithoutCapability => {
                &["mrtr-cap-none", "mrtr-cap-sampling-only", "legacy-cap-none"]
            }
            Flaw::SecretInForm => &["mrtr-schema-findings", "legacy-schema-findings"],
            Flaw::CrashOnDecline => &[
                "mrtr-decline",
                "mrtr-decline-no-action",
                "legacy-decline",
                "fuzz:server-error",
            ],
            Flaw::HangOnCancel => &["mrtr-cancel", "legacy-cancel", "fuzz:hang"],
            Flaw::MissingResultType => &["mrtr-result-type", "fuzz:result-type"],
            Flaw::InputRequiredOnList => &[
                "mrtr-input-required-scope",
                "fuzz:input-required-out-of-scope",
            ],
            Flaw::LegacyUrlWithoutId => &["legacy-request-shape"],
            Flaw::NoOriginCheck | Flaw::NoHostCheck => {
                &["mrtr-origin-validated", "legacy-origin-validated"]
            }
            Flaw::NoCacheHints => &["mrtr-cache-hints"],
            Flaw::BadShapeNotFound => &[
                "mrtr-input-responses-shape",
                "mrtr-request-state-shape",
                "fuzz:shape-as-unknown-method",
            ],
            Flaw::ElicitOnGetStream => &["legacy-get-stream", "legacy-stream-rules"],
            Flaw::NoNodelay => &["mrtr-tail-stall", "legacy-tail-stall", "load:tail stalls"],
            Flaw::ActOnDecline => &["mrtr-decline-no-action", "legacy-decline-no-action"],
            Flaw::LeakSecret => &[
                "mrtr-url-secret-not-returned",
                "legacy-url-secret-not-returned",
            ],
            Flaw::SecretInState | Flaw::TypedInState => &["mrtr-url-secret-not-returned"],
            Flaw::AcceptInvalidContent => &["mrtr-invalid-content", "legacy-invalid-answers"],
            Flaw::IgnoreStatePrincipal => &["mrtr-cross-principal"],
            Flaw::ElicitBeforeInitialized => &["legacy-no-elicit-before-initialized"],
            Flaw::CrossTalk => &["mrtr-isolation", "legacy-isolation", "load:misrouted"],
            Flaw::CompleteWithoutState => &["fuzz:a note (the state is not load-bearing)"],
            Flaw::Leak => &["load:--soak growth verdict"],
            Flaw::StdioNoise => &["mrtr-stdio-clean-stdout", "legacy-stdio-clean-stdout"],
            Flaw::ExitOnDecline => &[
                "mrtr-stdio-stays-up",
                "legacy-stdio-stays-up",
                "fuzz:process-exited",
            ],
        }
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }

    /// The `--list-flaws` table: name, rule, description, and (indented
    /// below) what catches it.
    pub fn table() -> String {
        let mut out = format!("{:<27} {:<24} {}\n", "FLAW", "RULE", "BEHAVIOUR");
        for f in Flaw::ALL {
            out.push_str(&format!(
                "{:<27} {:<24} {}\n{:<27} caught by: {}\n",
                f.name(),
                f.rule(),
                f.description(),
                "",
                f.caught_by().join(", ")
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
pub struct FlawSet(u32);

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
