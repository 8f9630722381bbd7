//! Every oracle, one row each: its name, how bad a finding of it is,
//! which fuzzer judges it (the black-box fuzzer behind `elicitkit fuzz`,
//! the in-process harness, or both), and, in its doc, the rule it judges
//! by. The black-box fuzzer reports findings of these; the harness takes a
//! set of them ([`Oracles`]) as the properties a server must keep.

use crate::findings::Severity;
use serde::Serialize;

/// Declares [`Oracle`] and its facts, one row an oracle, in report order:
/// `Variant: "name", severity, blackbox <judged by the black-box fuzzer>,
/// harness <judged by the harness>;`.
macro_rules! oracles {
    ($(
        $(#[doc = $doc:literal])*
        $oracle:ident: $name:literal, $severity:ident, blackbox $blackbox:literal,
            harness $harness:literal;
    )*) => {
        /// What a reply (or a flow) did wrong.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        pub enum Oracle {
            $($(#[doc = $doc])* #[serde(rename = $name)] $oracle,)*
        }

        impl Oracle {
            /// Every oracle, in report order.
            pub const ALL: [Oracle; [$($name),*].len()] = [$(Oracle::$oracle),*];

            fn row(self) -> &'static Row {
                static ROWS: [Row; Oracle::ALL.len()] = [$(Row {
                    name: $name,
                    severity: Severity::$severity,
                    blackbox: $blackbox,
                    harness: $harness,
                }),*];
                &ROWS[self as usize]
            }
        }
    };
}

/// What one row of `oracles!` says beside the variant.
struct Row {
    name: &'static str,
    severity: Severity,
    blackbox: bool,
    harness: bool,
}

oracles! {
    /// An HTTP 5xx ([`super::transport::judge`]).
    ServerError: "server-error", Must, blackbox true, harness true;
    /// The connection failed mid-request: reset, closed, a cut-off body
    /// ([`super::transport::judge`]).
    ConnectionReset: "connection-reset", Must, blackbox true, harness false;
    /// A reply to a JSON-RPC request that carries no JSON-RPC response (a
    /// success status, or a request that was not mutated at all), or the
    /// response to another id ([`super::transport::not_json_rpc`]).
    NotJsonRpc: "not-json-rpc", Must, blackbox true, harness true;
    /// A body that is not a valid JSON-RPC request (cut short, invalid
    /// UTF-8, a wrong id type, no `jsonrpc`) gets no JSON-RPC error (e.g.
    /// `-32700`, `-32600`) but a plain-text refusal
    /// ([`super::transport::not_json_rpc`]).
    NotJsonRpcOnMalformed: "not-json-rpc-on-malformed", Must, blackbox false, harness true;
    /// No whole reply within the timeout ([`super::transport::judge`]).
    Hang: "hang", Must, blackbox true, harness true;
    /// After a failure, the server no longer answers at all (a liveness
    /// probe after a transport-level finding).
    Unresponsive: "unresponsive", Must, blackbox true, harness false;
    /// The in-process service panicked.
    Panic: "panic", Must, blackbox false, harness true;
    /// A reply breaks a MUST of its 2026-07-28 shape (a result without
    /// `resultType`, duplicate keys, ...), per
    /// [`crate::protocol::validate`].
    IllFormed: "ill-formed", Must, blackbox false, harness true;
    /// A retry with a changed `requestState` (other than re-encoded to the
    /// same bytes) completed where the control (the same answers, no state)
    /// did not ([`super::tamper::judge`]).
    TamperedStateAccepted: "tampered-state-accepted", Must, blackbox true, harness true;
    /// A retry with the other principal's credentials completed where the
    /// control did not ([`super::tamper::judge`]). A MUST where `check`'s
    /// `mrtr-cross-principal` is a SHOULD: that row judges the bare binding
    /// (S8a); this one is filed only where the control shows the state
    /// carries the flow, so another user completed it through this user's
    /// state: unauthorized access to state (§3.6 rule 3, kept in 2026-07-28).
    ForeignPrincipalAccepted: "foreign-principal-accepted", Must, blackbox true, harness true;
    /// A state the server issued for another request (another tool, or
    /// other arguments), presented whole, completed where the control did
    /// not: the state is not bound to its request (S8c, a SHOULD; a
    /// warning) ([`super::tamper::judge`]).
    OtherRequestAccepted: "other-request-accepted", Should, blackbox true, harness true;
    /// A single-use tool's request completed more than once, whatever was
    /// retried (duplicates, older states of it, concurrent copies)
    /// ([`super::replay::judge`]).
    SingleUseTwice: "single-use-twice", Must, blackbox true, harness true;
    /// The same `requestState` and `inputResponses`, sent again, completed
    /// again on a tool not known to be single-use: a warning
    /// ([`super::replay::judge`]; the black-box fuzzer counts only
    /// completions that acted, [`super::effect`]).
    ReplayAccepted: "replay-accepted", Should, blackbox true, harness false;
    /// A 2026-07-28 result without a `resultType`, or with one no extension
    /// was advertised for (§4.4; [`super::reply::result_type_problem`]).
    ResultType: "result-type", Must, blackbox true, harness false;
    /// `input_required` in answer to a method MRTR is not allowed on (S1;
    /// [`super::reply::input_required_out_of_scope`]).
    InputRequiredOutOfScope: "input-required-out-of-scope", Must, blackbox true, harness false;
    /// An input request for an elicitation mode the request's capabilities
    /// did not declare (§2.4, S5), e.g. URL mode to a form-only client
    /// ([`super::capability::undeclared`]).
    UndeclaredMode: "undeclared-mode", Must, blackbox true, harness false;
    /// A `tools/call` whose `inputResponses` or `requestState` has the
    /// wrong JSON type answered with HTTP 404 / `-32601` (taken for an
    /// unknown method) instead of invalid params or a re-prompt (S9;
    /// [`super::reply::shape_reply`]).
    ShapeAsUnknownMethod: "shape-as-unknown-method", Must, blackbox true, harness false;
    /// A stdio server's process exited while the case ran (a crash: the
    /// exit status and stderr tail are the evidence).
    ProcessExited: "process-exited", Must, blackbox true, harness false;
}

impl Oracle {
    /// Stable kebab-case name.
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// How bad a finding of it is: MUST (an error), or SHOULD (a warning).
    pub fn severity(self) -> Severity {
        self.row().severity
    }

    /// Whether the black-box fuzzer judges it (and its summary counts it).
    pub fn blackbox(self) -> bool {
        self.row().blackbox
    }

    /// Whether a liveness probe should follow (the server may have died).
    pub fn transport_level(self) -> bool {
        matches!(
            self,
            Oracle::ServerError | Oracle::ConnectionReset | Oracle::Hang
        )
    }
}

impl std::fmt::Display for Oracle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

const _: () = assert!(Oracle::ALL.len() <= 32, "Oracles holds 32 oracles");

/// A set of oracles: the properties the harness holds a service to (turn
/// off the ones a server deviates from on purpose, to fuzz past them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Oracles(u32);

impl Oracles {
    /// Every oracle the harness judges.
    pub fn all() -> Self {
        Oracle::ALL
            .into_iter()
            .filter(|o| o.row().harness)
            .fold(Oracles::none(), Oracles::with)
    }

    /// None.
    pub fn none() -> Self {
        Oracles(0)
    }

    /// This set without `o`.
    pub fn without(self, o: Oracle) -> Self {
        Oracles(self.0 & !(1 << o as u32))
    }

    /// This set with `o`.
    pub fn with(self, o: Oracle) -> Self {
        Oracles(self.0 | 1 << o as u32)
    }

    /// Whether `o` is judged.
    pub fn has(self, o: Oracle) -> bool {
        self.0 & 1 << o as u32 != 0
    }
}

impl Default for Oracles {
    fn default() -> Self {
        Oracles::all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_serialize_as_named() {
        let mut seen = std::collections::HashSet::new();
        for o in Oracle::ALL {
            assert!(seen.insert(o.name()), "{o}");
            assert_eq!(serde_json::to_value(o).unwrap(), o.name());
            assert!(
                o.blackbox() || Oracles::all().has(o),
                "{o} is judged nowhere"
            );
        }
        assert_eq!(Oracle::ReplayAccepted.severity(), Severity::Should);
        assert!(!Oracles::all().has(Oracle::ConnectionReset));
        let some = Oracles::all().without(Oracle::Hang);
        assert!(!some.has(Oracle::Hang) && some.has(Oracle::Panic));
    }
}
