//! Answer policies: how the client answers each input request, and what a
//! correct server is expected to do in return.
//!
//! The expectation of each policy is encoded in the flows ([`super::modern`],
//! [`super::legacy`]), so a [`super::outcome::RoundTrip`] says whether the
//! server behaved: `Success`, `ExpectedRejection` or `Unexpected`.

use super::content::InvalidKind;
use crate::state::tamper;
use serde::Serialize;
use std::fmt;

/// A deterministic corruption of an opaque `requestState` string, built on
/// [`crate::state::tamper`]. Mutations that need a base64url token fall back
/// to a text-level change when the state is not one (other servers' states
/// can be anything), and `apply` never returns its input unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Mutation {
    /// Replace the character at `index` (modulo the length) by the next
    /// base64url character: a one-character flip that keeps the alphabet.
    FlipChar {
        /// Position (wraps around).
        index: usize,
    },
    /// Decode the base64url token, flip bit `bit` (wrapping), re-encode.
    FlipDecodedBit {
        /// Bit position in the decoded bytes (wraps around).
        bit: usize,
    },
    /// Drop the last `count` characters (at least one).
    Truncate {
        /// How many characters to drop.
        count: usize,
    },
    /// Append `suffix` (`"A"` when empty).
    Extend {
        /// What to append.
        suffix: String,
    },
    /// Re-encode the same bytes as base64url with `=` padding.
    ReEncodePadded,
    /// Re-encode the same bytes as standard base64 (`+`, `/`, padding).
    ReEncodeStandard,
    /// The state's first `at` decoded bytes followed by the rest of `other`
    /// (e.g. a state issued for another tool call or principal).
    Splice {
        /// The other token.
        other: String,
        /// Split point in decoded bytes.
        at: usize,
    },
    /// Replace the whole state by `with` (garbage, or another flow's state).
    Replace {
        /// The replacement.
        with: String,
    },
}

const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn flip_char(state: &str, index: usize) -> String {
    let chars: Vec<char> = state.chars().collect();
    if chars.is_empty() {
        return "A".into();
    }
    let i = index % chars.len();
    let pos = B64URL
        .iter()
        .position(|&b| char::from(b) == chars[i])
        .unwrap_or(0);
    let replacement = char::from(B64URL[(pos + 1) % B64URL.len()]);
    chars
        .iter()
        .enumerate()
        .map(|(j, &c)| if j == i { replacement } else { c })
        .collect()
}

impl Mutation {
    /// Applies the mutation; the result always differs from the input.
    pub fn apply(&self, state: &str) -> String {
        let out = match self {
            Mutation::FlipChar { index } => flip_char(state, *index),
            Mutation::FlipDecodedBit { bit } => {
                tamper::flip_decoded_bit(state, *bit).unwrap_or_else(|| flip_char(state, bit / 8))
            }
            Mutation::Truncate { count } => {
                let n = state.chars().count();
                let keep = n.saturating_sub((*count).max(1));
                state.chars().take(keep).collect()
            }
            Mutation::Extend { suffix } => {
                let suffix = if suffix.is_empty() { "A" } else { suffix };
                String::from_utf8_lossy(&tamper::extend(state, suffix.as_bytes())).into_owned()
            }
            Mutation::ReEncodePadded => {
                tamper::with_padding(state).unwrap_or_else(|| format!("{state}="))
            }
            Mutation::ReEncodeStandard => {
                tamper::to_standard_base64(state).unwrap_or_else(|| format!("{state}=="))
            }
            Mutation::Splice { other, at } => {
                tamper::splice(state, other, *at).unwrap_or_else(|| other.clone())
            }
            Mutation::Replace { with } => with.clone(),
        };
        if out == state { format!("{out}A") } else { out }
    }

    /// Stable short name (for scenario labels).
    pub fn name(&self) -> &'static str {
        match self {
            Mutation::FlipChar { .. } => "flip_char",
            Mutation::FlipDecodedBit { .. } => "flip_decoded_bit",
            Mutation::Truncate { .. } => "truncate",
            Mutation::Extend { .. } => "extend",
            Mutation::ReEncodePadded => "re_encode_padded",
            Mutation::ReEncodeStandard => "re_encode_standard",
            Mutation::Splice { .. } => "splice",
            Mutation::Replace { .. } => "replace",
        }
    }
}

/// How the client answers input requests, and so what it expects back.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum AnswerPolicy {
    /// Form: accept with content valid for the schema. URL: consent, complete
    /// the page as a browser would, then retry. Expected: a complete result.
    #[default]
    AcceptValid,
    /// Form: accept with content that fails the schema in this way. Expected:
    /// a re-prompt, a JSON-RPC error or a tool error result; a successful
    /// complete result is `Unexpected(ContentAccepted)`.
    AcceptInvalid(InvalidKind),
    /// Decline every request. Expected: a complete result (any `isError`) or
    /// a re-prompt; not a JSON-RPC error, not a crash.
    Decline,
    /// Cancel every request. Expected as for `Decline`.
    Cancel,
    /// URL: consent without completing the page. Expected: another
    /// `input_required`; a complete result is a violation.
    UrlConsentOnly,
    /// Corrupt the echoed state on the first retry. Expected: a JSON-RPC
    /// error; a complete result or a re-prompt is `Unexpected(StateAccepted)`.
    TamperState(Mutation),
    /// Finish the flow, then send the last retry again with a new id.
    /// Expected: a JSON-RPC error.
    ReplayState,
    /// Send the first retry with the other principal's credentials.
    /// Expected: a JSON-RPC error (or HTTP 401/403).
    CrossPrincipalReplay,
}

impl AnswerPolicy {
    /// Stable snake_case name (a scenario label).
    pub fn name(&self) -> &'static str {
        match self {
            AnswerPolicy::AcceptValid => "accept_valid",
            AnswerPolicy::AcceptInvalid(_) => "accept_invalid",
            AnswerPolicy::Decline => "decline",
            AnswerPolicy::Cancel => "cancel",
            AnswerPolicy::UrlConsentOnly => "url_consent_only",
            AnswerPolicy::TamperState(_) => "tamper_state",
            AnswerPolicy::ReplayState => "replay_state",
            AnswerPolicy::CrossPrincipalReplay => "cross_principal_replay",
        }
    }
}

impl fmt::Display for AnswerPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mutation_changes_the_state() {
        let s = "rs1.AAAA_bbbb-cccc.dddd";
        let ms = [
            Mutation::FlipChar { index: 0 },
            Mutation::FlipChar { index: 1000 },
            Mutation::Truncate { count: 0 },
            Mutation::Truncate { count: 5 },
            Mutation::Extend {
                suffix: String::new(),
            },
            Mutation::Extend {
                suffix: "xx".into(),
            },
            Mutation::Replace { with: s.into() },
            Mutation::Replace {
                with: "garbage".into(),
            },
            Mutation::FlipDecodedBit { bit: 9 },
            Mutation::ReEncodePadded,
            Mutation::ReEncodeStandard,
            Mutation::Splice {
                other: "QUJDREVGR0g".into(),
                at: 2,
            },
        ];
        for m in ms {
            let out = m.apply(s);
            assert_ne!(out, s, "{m:?}");
        }
        assert_eq!(Mutation::FlipChar { index: 0 }.apply("_"), "A");
        assert_eq!(Mutation::FlipChar { index: 3 }.apply(""), "A");
        assert_eq!(Mutation::Truncate { count: 2 }.apply("abcd"), "ab");
        // base64url-aware mutations on a real token, and their fallbacks.
        let tok = "AQIDBAUGBwgJ"; // 9 bytes, no padding needed
        assert_eq!(
            Mutation::FlipDecodedBit { bit: 0 }.apply(tok),
            "AAIDBAUGBwgJ"
        );
        assert_eq!(
            Mutation::ReEncodePadded.apply("AQID"),
            "AQIDA",
            "no padding to add"
        );
        assert_eq!(Mutation::ReEncodePadded.apply("AQ"), "AQ==");
        assert_eq!(Mutation::ReEncodeStandard.apply("-_8"), "+/8=");
        assert_eq!(Mutation::FlipDecodedBit { bit: 0 }.apply("rs1.x"), "ss1.x");
        assert_eq!(
            Mutation::Splice {
                other: "not base64!".into(),
                at: 1
            }
            .apply(tok),
            "not base64!"
        );
    }

    #[test]
    fn flip_keeps_length_and_is_deterministic() {
        let m = Mutation::FlipChar { index: 7 };
        let s = "héllo-wörld";
        assert_eq!(m.apply(s).chars().count(), s.chars().count());
        assert_eq!(m.apply(s), m.apply(s));
    }
}
