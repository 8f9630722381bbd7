//! Whether a refusal is a rejection *for the reason probed*: a tampered
//! state refused because of a header error, a missing capability or an
//! unknown method is no proof that the state was checked. Shared by the
//! load tool (tamper and replay scenarios) and the checker.

use crate::protocol::codes;
use crate::state::StateError;

/// Reasons that mean "the state failed integrity verification".
pub const INTEGRITY: [&str; 5] = [
    "malformed",
    "bad_tag",
    "unknown_key",
    "unsupported_version",
    "too_large",
];

/// Error codes that say the request was refused before its state was looked
/// at (headers, `_meta`, capabilities, framing): never a state rejection.
pub const UNRELATED_CODES: [i64; 6] = [
    codes::HEADER_MISMATCH,
    codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
    codes::UNSUPPORTED_PROTOCOL_VERSION,
    codes::METHOD_NOT_FOUND,
    codes::INVALID_REQUEST,
    codes::PARSE_ERROR,
];

/// Why a reply does not count as the state refused for the reason probed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotRefused {
    /// Refused with a code about the request's framing ([`UNRELATED_CODES`]).
    #[error("rejected with {code} ({name}), which is about the request's framing, not its state")]
    Framing {
        /// The JSON-RPC error code.
        code: i64,
        /// Its name.
        name: &'static str,
    },
    /// Refused for another state property than the ones probed.
    #[error(
        "rejected with {code} but for reason {reason:?}, not {expected}: the probed property was not what failed"
    )]
    OtherReason {
        /// The JSON-RPC error code.
        code: i64,
        /// The reason the server gave.
        reason: String,
        /// The reasons probed, joined with " / ".
        expected: String,
    },
    /// Not refused at all: what the reply was.
    #[error("answered with {0}")]
    Answered(String),
}

/// Judges a JSON-RPC error `code` / `reason` as a rejection of the state for
/// one of the `expected` reasons. `Ok` says what was seen; `Err` says why it
/// does not count.
pub fn state_rejection(
    code: i64,
    reason: Option<&str>,
    expected: &[&str],
) -> Result<String, NotRefused> {
    if UNRELATED_CODES.contains(&code) {
        return Err(NotRefused::Framing {
            code,
            name: codes::name(code),
        });
    }
    match reason {
        Some(r) if expected.contains(&r) => Ok(format!("rejected with {code}, reason {r:?}")),
        Some(r) if StateError::KINDS.contains(&r) => Err(NotRefused::OtherReason {
            code,
            reason: r.to_owned(),
            expected: expected.join(" / "),
        }),
        Some(r) => Ok(format!(
            "rejected with {code} (server-specific reason {r:?})"
        )),
        None => Ok(format!("rejected with JSON-RPC error {code}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejection_must_be_for_the_probed_reason() {
        assert!(state_rejection(-32602, Some("bad_tag"), &INTEGRITY).is_ok());
        assert!(state_rejection(-32602, None, &INTEGRITY).is_ok());
        assert!(state_rejection(-32602, Some("custom"), &INTEGRITY).is_ok());
        let wrong = state_rejection(-32602, Some("wrong_principal"), &INTEGRITY);
        assert!(wrong.unwrap_err().to_string().contains("wrong_principal"));
        assert!(state_rejection(codes::HEADER_MISMATCH, None, &INTEGRITY).is_err());
        assert!(
            state_rejection(
                codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                None,
                &["expired"]
            )
            .is_err()
        );
    }
}
