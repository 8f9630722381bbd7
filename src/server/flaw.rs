//! Flaw switches: deliberate spec violations the reference server can be
//! started with (`--flaw NAME`), so that every check can be shown to fail.
//! Without flaws the server breaks none of these rules.
//!
//! Each flaw is one row of `flaws!`: its variant, command-line name, the
//! rule it breaks, what the server does, and what catches it (the check
//! matrix holds every `check` id named there to a check that sees it).

use std::fmt;
use std::str::FromStr;

/// Declares [`Flaw`] and its facts, one row a flaw, in `--list-flaws`
/// order.
macro_rules! flaws {
    ($(
        $(#[doc = $doc:literal])*
        $flaw:ident {
            name: $name:literal,
            rule: $rule:literal,
            does: $does:literal,
            caught_by: [$($by:literal),+ $(,)?],
            $(reveal: $reveal:literal,)?
        }
    )*) => {
        /// One deliberate defect. Each changes exactly the behaviour it names.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Flaw {
            $($(#[doc = $doc])* $flaw,)*
        }

        impl Flaw {
            /// Every flaw, in `--list-flaws` order.
            pub const ALL: [Flaw; [$($name),*].len()] = [$(Flaw::$flaw),*];

            fn row(self) -> &'static Row {
                static ROWS: [Row; Flaw::ALL.len()] = [$(Row {
                    name: $name,
                    rule: $rule,
                    does: $does,
                    caught_by: &[$($by),+],
                    reveal: reveal!($($reveal)?),
                }),*];
                &ROWS[self as usize]
            }
        }
    };
}

/// A row's `reveal`, when it has one.
macro_rules! reveal {
    () => {
        None
    };
    ($text:literal) => {
        Some($text)
    };
}

/// What one row of `flaws!` says beside the variant.
struct Row {
    name: &'static str,
    rule: &'static str,
    does: &'static str,
    caught_by: &'static [&'static str],
    reveal: Option<&'static str>,
}

flaws! {
    /// A `requestState` that fails verification is trusted anyway: the
    /// request's own principal, tool and arguments stand in for its claims.
    AcceptTamperedState {
        name: "accept-tampered-state",
        rule: "§4.7 S7",
        does: "a requestState that fails verification is trusted; the request stands in for its claims",
        caught_by: [
            "mrtr-tamper-bit-flip",
            "mrtr-tamper-truncate",
            "mrtr-tamper-extend",
            "mrtr-unsolicited-state",
            "mrtr-oversized-state",
        ],
    }
    /// The principal bound into a `requestState` (and a URL flow's owner,
    /// and a 2025-11-25 session's owner) is not compared with the caller.
    IgnorePrincipal {
        name: "ignore-principal",
        rule: "§4.7 S8a, §3.6 rule 5",
        does: "states, URL flows and 2025-11-25 sessions are not checked against the calling principal",
        caught_by: [
            "mrtr-cross-principal",
            "mrtr-url-cross-user",
            "legacy-url-cross-user",
            "legacy-cross-principal-session",
            "legacy-cross-principal-answer",
        ],
    }
    /// The request digest bound into a `requestState` is not compared.
    IgnoreRequestBinding {
        name: "ignore-request-binding",
        rule: "§4.7 S8c",
        does: "states are not checked against the originating tool and arguments",
        caught_by: ["mrtr-tamper-other-tool", "mrtr-tamper-other-arguments"],
        reveal: "check --fail-on warn (S8c is a SHOULD: a plain run warns and exits 0)",
    }
    /// New states are sealed without a usable expiry (far future).
    NoExpiry {
        name: "no-expiry",
        rule: "§4.7 S8b",
        does: "states are sealed with a far-future expiry (the TTL is ignored)",
        caught_by: ["mrtr-state-expiry"],
        reveal: "check --state-lifetime with the state TTL (1s against serve --state-ttl 1s: the check waits 7s), with --fail-on warn (S8b is a SHOULD); a plain run cannot read the expiry inside an encrypted state, and a wait alone cannot tell a long lifetime from none",
    }
    /// A completion from a `requestState` may repeat: replaying the final
    /// retry runs the tool (and its side effect) again, for every tool.
    ReplayableSideEffect {
        name: "replayable-side-effect",
        rule: "§4.7 S8 (single use)",
        does: "a replayed final retry completes (and deploys, deletes, books, connects) again",
        caught_by: ["mrtr-replay-final-retry", "fuzz:single-use-twice"],
    }
    /// `connect_billing` sends URL mode to a form-only client instead of `-32021`.
    UrlToFormClient {
        name: "url-to-form-client",
        rule: "§2.4, §4.7 S5",
        does: "connect_billing sends URL mode to a form-only client",
        caught_by: [
            "mrtr-cap-form-only",
            "mrtr-cap-elicitation-empty",
            "legacy-cap-form-only",
            "fuzz:undeclared-mode",
        ],
    }
    /// Tools elicit even when the client declared no `elicitation` capability.
    ElicitWithoutCapability {
        name: "elicit-without-capability",
        rule: "§2.4, §4.7 S5",
        does: "tools elicit even when the client declared no elicitation capability",
        caught_by: [
            "mrtr-cap-none",
            "mrtr-cap-sampling-only",
            "legacy-cap-none",
            "fuzz:undeclared-mode",
        ],
    }
    /// `connect_billing` asks for the API key in a form field.
    SecretInForm {
        name: "secret-in-form",
        rule: "§3.6 rule 1",
        does: "connect_billing asks for the API key in a form field",
        caught_by: ["mrtr-schema-findings", "legacy-schema-findings"],
    }
    /// A `decline` answer makes the server fail with HTTP 500.
    CrashOnDecline {
        name: "crash-on-decline",
        rule: "§4.10, §6.A 12",
        does: "a decline answer yields HTTP 500",
        caught_by: [
            "mrtr-decline",
            "mrtr-decline-no-action",
            "legacy-decline",
            "fuzz:server-error",
        ],
    }
    /// A `cancel` answer is not answered until the hang limit (60 s) passes.
    HangOnCancel {
        name: "hang-on-cancel",
        rule: "§4.10, §6.B 20",
        does: "a cancel answer is left unanswered for 60 s",
        caught_by: ["mrtr-cancel", "legacy-cancel", "fuzz:hang"],
    }
    /// 2026-07-28 results carry no `resultType`.
    MissingResultType {
        name: "missing-result-type",
        rule: "§4.4",
        does: "2026-07-28 results omit resultType",
        caught_by: ["mrtr-result-type", "fuzz:result-type"],
    }
    /// `tools/list` answers `input_required`.
    InputRequiredOnList {
        name: "input-required-on-list",
        rule: "§4.7 S1",
        does: "tools/list answers input_required",
        caught_by: ["mrtr-input-required-scope", "fuzz:input-required-out-of-scope"],
    }
    /// `prompts/list`, `resources/list` and `resources/templates/list`
    /// answer `input_required`; `tools/list` lists the tools as usual.
    InputRequiredOnOtherLists {
        name: "input-required-on-other-lists",
        rule: "§4.7 S1",
        does: "prompts/list, resources/list and resources/templates/list answer input_required (tools/list lists as usual)",
        caught_by: ["mrtr-input-required-scope", "fuzz:input-required-out-of-scope"],
    }
    /// 2025-11-25 URL-mode `elicitation/create` omits `elicitationId`.
    LegacyUrlWithoutId {
        name: "legacy-url-without-id",
        rule: "§2.1, §6.A 9",
        does: "2025-11-25 URL-mode elicitation/create has no elicitationId",
        caught_by: ["legacy-request-shape"],
    }
    /// A 2025-11-25 client without URL mode that calls a URL tool gets
    /// `-32042` with an empty `data.elicitations` instead of a tool error.
    LegacyUrlRequiredWithoutList {
        name: "legacy-url-required-without-list",
        rule: "§3.4, §6.A 18",
        does: "2025-11-25 -32042 (URL elicitation required) with an empty data.elicitations",
        caught_by: ["legacy-url-required-error"],
    }
    /// A foreign `Origin` or `Host` is served as if allowed (DNS rebinding).
    NoOriginCheck {
        name: "no-origin-check",
        rule: "§3.2, §4.3, §6.A 19",
        does: "a foreign Origin or Host is served as if allowed (no 403)",
        caught_by: ["mrtr-origin-validated", "legacy-origin-validated"],
    }
    /// A foreign `Host` is served; a foreign `Origin` still gets 403.
    NoHostCheck {
        name: "no-host-check",
        rule: "§3.2, §4.3 (hardening)",
        does: "a foreign Host is served; a foreign Origin still gets 403",
        caught_by: ["mrtr-origin-validated", "legacy-origin-validated"],
        reveal: "the INFO row of a plain check, and no exit status: the spec requires Origin validation, Host validation is hardening with no MUST or SHOULD",
    }
    /// 2026-07-28 list, read and discover results omit `ttlMs` and `cacheScope`.
    NoCacheHints {
        name: "no-cache-hints",
        rule: "§4.4a (SEP-2549)",
        does: "2026-07-28 list, read and discover results omit ttlMs and cacheScope",
        caught_by: ["mrtr-cache-hints"],
    }
    /// A `tools/call` whose `inputResponses` is not an object or whose
    /// `requestState` is not a string gets HTTP 404 + `-32601`.
    BadShapeNotFound {
        name: "bad-shape-not-found",
        rule: "§4.7 S9, §6.B 19",
        does: "a tools/call with non-object inputResponses or non-string requestState gets 404 + -32601",
        caught_by: [
            "mrtr-input-responses-shape",
            "mrtr-request-state-shape",
            "fuzz:shape-as-unknown-method",
        ],
    }
    /// 2025-11-25: a call's `elicitation/create` goes only on the
    /// session's GET stream (waiting, up to the elicitation timeout, for
    /// the client to open one), never on the call's own stream.
    ElicitOnGetStream {
        name: "elicit-on-get-stream",
        rule: "§3.2, §6.A 16",
        does: "2025-11-25 elicitation/create goes only on the session's GET stream, waiting (up to the elicitation timeout) for one to open; never on the call's POST stream",
        caught_by: ["legacy-get-stream", "legacy-stream-rules"],
        reveal: "check --fail-on warn (§6.A 16 says elicitations SHOULD travel on the call's stream: a plain run warns and exits 0)",
    }
    /// TCP_NODELAY off and each body written after its head: replies stall
    /// on Nagle + delayed ACK (~40 ms on loopback).
    NoNodelay {
        name: "no-nodelay",
        rule: "latency (no spec rule)",
        does: "TCP_NODELAY off and bodies written after their heads: replies stall ~40 ms",
        caught_by: ["mrtr-tail-stall", "legacy-tail-stall", "load:tail stalls"],
        reveal: "check --fail-on warn (a latency finding, no spec rule: a plain run warns and exits 0)",
    }
    /// `deploy` deploys on decline and cancel too, answering as for accept.
    ActOnDecline {
        name: "act-on-decline",
        rule: "§2.3, §4.10",
        does: "deploy deploys on decline and cancel too, and answers as for accept",
        caught_by: ["mrtr-decline-no-action", "legacy-decline-no-action"],
    }
    /// `connect_billing` echoes the API key typed on its page in the result.
    LeakSecret {
        name: "leak-secret",
        rule: "§3.6 rule 6",
        does: "connect_billing echoes the typed API key in its result",
        caught_by: ["mrtr-url-secret-not-returned", "legacy-url-secret-not-returned"],
    }
    /// `connect_billing` puts the typed API key, in clear, into the
    /// `requestState` payload of one more round after the page.
    SecretInState {
        name: "secret-in-state",
        rule: "§3.6 rule 6, §4.7 S7",
        does: "connect_billing seals the typed API key in clear into one more requestState",
        caught_by: ["mrtr-url-secret-not-returned"],
        reveal: "serve --state-codec hmac-sha256 (integrity only): under the default aes-256-gcm the key is sealed encrypted, and no client can see it in the state",
    }
    /// Accepted form content is not validated against the requested
    /// schema: missing required fields, wrong types, values out of range or
    /// outside the enum are taken as given.
    AcceptInvalidContent {
        name: "accept-invalid-content",
        rule: "§3.6, §4.7 S9",
        does: "form answers are taken as given, never validated against the requested schema",
        caught_by: ["mrtr-invalid-content", "legacy-invalid-answers"],
        reveal: "check --fail-on warn (validating answers is a SHOULD of §4.7 S9: a plain run warns and exits 0)",
    }
    /// `connect_billing` puts the contact name typed on its page (not a
    /// secret field), in clear, into the `requestState` payload of one
    /// more round after the page.
    TypedInState {
        name: "typed-in-state",
        rule: "§3.6 rule 6, §4.7 S7 (SHOULD)",
        does: "connect_billing seals the contact name typed on its page in clear into one more requestState",
        caught_by: ["mrtr-url-secret-not-returned"],
        reveal: "serve --state-codec hmac-sha256 and check --fail-on warn: under the default aes-256-gcm the name is sealed encrypted, and a name (not a secret) in a state is a SHOULD",
    }
    /// `connect_billing`'s page also asks for a six-digit verification code
    /// (`pattern="[0-9]{6}"`, a password field), and the result shows it.
    LeakVerificationCode {
        name: "leak-verification-code",
        rule: "§3.6 rule 6, §4.8",
        does: "connect_billing's page asks for a 6-digit code too, and its result shows that code",
        caught_by: ["mrtr-url-secret-not-returned", "legacy-url-secret-not-returned"],
    }
    /// The principal bound into a `requestState` is not compared with the
    /// caller; sessions and flow pages stay bound to their users.
    IgnoreStatePrincipal {
        name: "ignore-state-principal",
        rule: "§4.7 S8a",
        does: "states are not checked against the calling principal (sessions and flow pages still are)",
        caught_by: ["mrtr-cross-principal"],
        reveal: "check --fail-on warn (S8a is a SHOULD: a plain run warns and exits 0)",
    }
    /// 2025-11-25: a GET stream opened before `notifications/initialized`
    /// gets an `elicitation/create` at once.
    ElicitBeforeInitialized {
        name: "elicit-before-initialized",
        rule: "§3.1, §6.A 2",
        does: "a 2025-11-25 GET stream opened before initialized gets an elicitation/create at once",
        caught_by: ["legacy-no-elicit-before-initialized"],
        reveal: "check --fail-on warn (§3.1 is a SHOULD: a plain run warns and exits 0)",
    }
    /// 2025-11-25: a `tools/call` on a session whose
    /// `notifications/initialized` has not arrived elicits as on an
    /// initialized one (instead of the tool error asking for it).
    ElicitOnUninitializedCall {
        name: "elicit-on-uninitialized-call",
        rule: "§3.1, §6.A 2",
        does: "a 2025-11-25 tools/call before initialized elicits on its stream as usual",
        caught_by: ["legacy-no-elicit-before-initialized"],
        reveal: "check --fail-on warn (§3.1 is a SHOULD NOT: a plain run warns and exits 0)",
    }
    /// A POST body is read as a stream of JSON values and the first is
    /// served: a second message after it is ignored, not refused.
    FirstMessageOfBody {
        name: "first-message-of-body",
        rule: "§3.2 (one JSON-RPC message per POST body)",
        does: "a POST body holding two JSON-RPC messages back to back is served as its first (both generations)",
        caught_by: ["mrtr-one-message-per-body", "legacy-one-message-per-body"],
    }
    /// `tools/call` arguments (both generations) are not checked against
    /// the tool's `inputSchema`: a non-string `service`, `from` or `path`
    /// goes on.
    AcceptWrongTypedArguments {
        name: "accept-wrong-typed-arguments",
        rule: "server/tools security (validate all tool inputs), SEP-1303",
        does: "tools/call arguments of a type the inputSchema forbids are taken as valid (both generations)",
        caught_by: ["mrtr-tool-argument-types", "legacy-tool-argument-types"],
    }
    /// `tools/call` results (2026-07-28 replies, 2025-11-25 final
    /// responses) go through one process-wide slot: overlapping calls get
    /// the last result put there, whoever's it is (responses of one client
    /// sent to another, as in GHSA-345p-7cg4-v4c7).
    CrossTalk {
        name: "cross-talk",
        rule: "JSON-RPC 2.0 §5 (a response answers its request)",
        does: "overlapping tools/call requests share one result slot: a call may get another's result",
        caught_by: ["mrtr-isolation", "legacy-isolation", "load:misrouted"],
    }
    /// A 2026-07-28 retry carrying `inputResponses` but no `requestState`
    /// is answered from those answers alone, as if a state had asked for
    /// them (a fresh conversation; earlier rounds are lost). Breaks no rule
    /// by itself: with `accept-tampered-state` it is a server whose state
    /// is not load-bearing, which the fuzzer's tamper controls must tell.
    CompleteWithoutState {
        name: "complete-without-state",
        rule: "none (a state not load-bearing)",
        does: "a 2026-07-28 retry with inputResponses and no requestState is answered from the answers alone",
        caught_by: ["fuzz:a note (the state is not load-bearing)"],
        reveal: "elicitkit fuzz, as a note: it breaks no rule, so no check can fail on it",
    }
    /// Every completed `tools/call` keeps 128 KiB of memory and one open
    /// descriptor for good (at most 256 MiB and 256 descriptors, so the
    /// machine survives it).
    Leak {
        name: "leak",
        rule: "resources (no spec rule)",
        does: "each completed tools/call keeps 128 KiB and a descriptor (bounded: 256 MiB, 256 fds)",
        caught_by: ["load:--soak growth verdict"],
        reveal: "elicitkit load --soak: memory and descriptors grow only over many calls, which check does not make",
    }
    /// `Mcp-Param-{Name}` headers are not compared with the arguments
    /// they mirror (missing, different or undecodable ones are served).
    IgnoreParamHeaders {
        name: "ignore-param-headers",
        rule: "§4.3 (SEP-2243)",
        does: "Mcp-Param-* headers are never compared with the tool arguments they mirror",
        caught_by: ["mrtr-param-header-validated"],
    }
    /// 2026-07-28 results carry no `_meta` serverInfo.
    NoServerInfo {
        name: "no-server-info",
        rule: "§4.2",
        does: "2026-07-28 results omit _meta io.modelcontextprotocol/serverInfo",
        caught_by: ["mrtr-server-info-meta"],
        reveal: "check --fail-on warn (serverInfo on results is a SHOULD: a plain run warns and exits 0)",
    }
    /// The error for an unknown method carries `"id": null`, as a router
    /// that answers before it reads the body does (over `--stdio` too: the
    /// pipe then gets a response that names no request).
    ErrorIdNull {
        name: "error-id-null",
        rule: "§4.3",
        does: "the -32601 error for an unknown method carries id null instead of the request's",
        caught_by: ["mrtr-error-id-echoed"],
    }
    /// A `tools/call` of a tool the server does not have is answered as a
    /// tool result with `isError`, not as a JSON-RPC error.
    UnknownToolAsResult {
        name: "unknown-tool-as-result",
        rule: "§4.10 (tool errors)",
        does: "a tools/call of an unknown tool is answered as a result with isError: true (both generations)",
        caught_by: ["mrtr-unknown-tool-error", "legacy-unknown-tool-error"],
        reveal: "check --fail-on warn (the rule is pending upstream, conformance PR #508: a plain run warns and exits 0)",
    }
    /// `resources/read` of a URI the server does not serve answers
    /// `contents: []` (SEP-2164 forbids it).
    EmptyUnknownResource {
        name: "empty-unknown-resource",
        rule: "§4.9 (SEP-2164)",
        does: "resources/read of a URI the server does not serve answers empty contents",
        caught_by: ["mrtr-unknown-resource-error"],
    }
    /// The eliciting prompt hands back the `requestState` it was sent
    /// instead of sealing a new one for the next round.
    PromptStateEchoed {
        name: "prompt-state-echoed",
        rule: "§4.6 / §6.B 10",
        does: "the eliciting prompt echoes the requestState it was sent instead of a new one",
        caught_by: ["mrtr-non-tool-prompt-flow"],
    }
    /// The eliciting resource asks again after every valid answer: its
    /// flow never completes.
    ResourceNeverCompletes {
        name: "resource-never-completes",
        rule: "§4.6 / §6.B 10",
        does: "the eliciting resource asks again after every valid answer and never completes",
        caught_by: ["mrtr-non-tool-resource-flow"],
    }
    /// With `--stdio`: a log line goes to stdout (not stderr) before each
    /// `tools/call` reply, as a stray `print()` does.
    StdioNoise {
        name: "stdio-noise",
        rule: "stdio transport (stdout)",
        does: "with --stdio, a log line is written to stdout before each tools/call reply",
        caught_by: ["mrtr-stdio-clean-stdout", "legacy-stdio-clean-stdout"],
        reveal: "check --target stdio -- elicitkit serve --stdio --flaw stdio-noise: only a stdio server has a stdout to keep clean",
    }
    /// A `decline` answer makes the whole process exit (status 3), as an
    /// unhandled exception ends a stdio server.
    ExitOnDecline {
        name: "exit-on-decline",
        rule: "§4.10, stdio transport",
        does: "a decline answer makes the process exit with status 3",
        caught_by: ["mrtr-stdio-stays-up", "legacy-stdio-stays-up", "fuzz:process-exited"],
        reveal: "check --target stdio -- elicitkit serve --stdio --flaw exit-on-decline: only a stdio server is a process check watches",
    }
}

impl Flaw {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// The spec rule it breaks (spec-digest section and rule).
    pub fn rule(self) -> &'static str {
        self.row().rule
    }

    /// What the server does differently.
    pub fn description(self) -> &'static str {
        self.row().does
    }

    /// What finds it: `check` ids, else `fuzz:`/`load:` and the oracle or
    /// verdict (the check matrix asserts that every check it sees break is
    /// named here).
    pub fn caught_by(self) -> &'static [&'static str] {
        self.row().caught_by
    }

    /// What reveals it when a plain `check` (no flags) exits 0, and why a
    /// plain run cannot; `None` when a plain `check` exits 1 on it (the
    /// check matrix holds both).
    pub fn reveal(self) -> Option<&'static str> {
        self.row().reveal
    }

    /// The `--list-flaws` table: name, rule, description, and (indented
    /// below) what catches it and whether a plain `check` does. Columns
    /// as wide as the longest name and rule (a fixed 27 put the
    /// 29-character names out of line).
    pub fn table() -> String {
        let widest =
            |col: fn(Flaw) -> &'static str| Flaw::ALL.iter().map(|f| col(*f).chars().count()).max();
        let (w, r) = (
            widest(Flaw::name).unwrap_or(0),
            widest(Flaw::rule).unwrap_or(0),
        );
        let mut out = format!("{:<w$} {:<r$} {}\n", "FLAW", "RULE", "BEHAVIOUR");
        for f in Flaw::ALL {
            let plain = match f.reveal() {
                None => "a plain check exits 1".to_owned(),
                Some(how) => format!("a plain check exits 0; revealed by {how}"),
            };
            out.push_str(&format!(
                "{:<w$} {:<r$} {}\n{:<w$} caught by: {}\n{:<w$} {plain}\n",
                f.name(),
                f.rule(),
                f.description(),
                "",
                f.caught_by().join(", "),
                "",
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

/// Words of [`FlawSet`]: as many as the flaws need, one bit a flaw.
const WORDS: usize = Flaw::ALL.len().div_ceil(64);

/// A set of flaws (empty = a correct server).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlawSet([u64; WORDS]);

impl FlawSet {
    /// No flaws.
    pub fn none() -> Self {
        FlawSet([0; WORDS])
    }

    /// Adds a flaw.
    pub fn insert(&mut self, flaw: Flaw) {
        let (word, bit) = Self::at(flaw);
        self.0[word] |= bit;
    }

    /// True when `flaw` is switched on.
    pub fn has(self, flaw: Flaw) -> bool {
        let (word, bit) = Self::at(flaw);
        self.0[word] & bit != 0
    }

    /// True when no flaw is on.
    pub fn is_empty(self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }

    /// The flaws switched on, in [`Flaw::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Flaw> {
        Flaw::ALL.into_iter().filter(move |f| self.has(*f))
    }

    fn at(flaw: Flaw) -> (usize, u64) {
        let i = flaw as usize;
        (i / 64, 1 << (i % 64))
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
    fn the_flaw_table_keeps_its_columns_in_line() {
        let t = Flaw::table();
        let head = t.lines().next().unwrap();
        let (rule_at, text_at) = (head.find("RULE").unwrap(), head.find("BEHAVIOUR").unwrap());
        // Columns are counted in characters (rules hold a two-byte "§").
        let at = |line: &str, what: &str| Some(line[..line.find(what)?].chars().count());
        for f in Flaw::ALL {
            let line = t
                .lines()
                .find(|l| l.split(' ').next() == Some(f.name()))
                .unwrap();
            assert_eq!(at(line, f.rule()), Some(rule_at), "{line}");
            assert_eq!(at(line, f.description()), Some(text_at), "{line}");
        }
    }

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
        let all: FlawSet = Flaw::ALL.into_iter().collect();
        assert_eq!(all.iter().collect::<Vec<_>>(), Flaw::ALL);
    }

    #[test]
    fn table_lists_every_flaw() {
        let t = Flaw::table();
        for f in Flaw::ALL {
            assert!(t.contains(f.name()));
        }
    }
}
