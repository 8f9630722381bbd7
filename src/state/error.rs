//! Typed errors of the `requestState` layer.
//!
//! [`StateError`] is what opening a token can fail with: exactly one kind per
//! reason, each with a stable [`StateError::kind`] name for metrics and logs.
//! [`KeyError`] and [`ConfigError`] cover loading keys and building a sealer.

use std::path::PathBuf;

/// Why a `requestState` was refused (or could not be sealed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum StateError {
    /// Not canonical unpadded base64url, too short, wrong algorithm byte,
    /// or a claims layout that does not parse.
    #[error("malformed requestState: {0}")]
    Malformed(&'static str),
    /// The envelope version byte is not one this build understands.
    #[error("unsupported requestState envelope version {0}")]
    UnsupportedVersion(u8),
    /// The key id is not (or no longer) in the key ring.
    #[error("requestState sealed with unknown key id {0}")]
    UnknownKey(u32),
    /// The tag did not verify: the token was forged or altered.
    #[error("requestState failed verification (bad tag)")]
    BadTag,
    /// `now` has reached `expires_at` (no clock skew is added).
    #[error("requestState expired")]
    Expired,
    /// `issued_at` is further in the future than the allowed clock skew.
    #[error("requestState not yet valid (issued in the future)")]
    NotYetValid,
    /// `expires_at` lies further ahead than the opening server's state
    /// TTL plus the clock skew: sealed by an instance with a longer TTL, or
    /// with a key that should not be trusted for this lifetime.
    #[error("requestState expires later than this server's state lifetime allows")]
    ExpiryBeyondTtl,
    /// The state was issued to a different principal.
    #[error("requestState bound to a different principal")]
    WrongPrincipal,
    /// The state was issued for a different originating request.
    #[error("requestState bound to a different request")]
    WrongRequest,
    /// The state's nonce was already consumed (single use).
    #[error("requestState already used")]
    Replayed,
    /// The token (or the claims to seal) exceeds the configured size cap.
    #[error("requestState too large")]
    TooLarge,
    /// The request began in another data set of the server's store (its
    /// epoch differs: the store lost its data since, or this instance does
    /// not share the store of the one that issued the state): its
    /// completion may be unknown here, so it cannot complete from this
    /// state; the client starts it again.
    #[error(
        "requestState belongs to another data set of the server's store (the store lost its \
         data, or this instance does not share the issuer's store); start the request again"
    )]
    StoreReset,
}

impl StateError {
    /// Every kind name, in declaration order.
    pub const KINDS: [&'static str; 12] = [
        "malformed",
        "unsupported_version",
        "unknown_key",
        "bad_tag",
        "expired",
        "not_yet_valid",
        "expiry_beyond_ttl",
        "wrong_principal",
        "wrong_request",
        "replayed",
        "too_large",
        "store_reset",
    ];

    /// Stable snake_case name of the kind (no payload), for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            StateError::Malformed(_) => "malformed",
            StateError::UnsupportedVersion(_) => "unsupported_version",
            StateError::UnknownKey(_) => "unknown_key",
            StateError::BadTag => "bad_tag",
            StateError::Expired => "expired",
            StateError::NotYetValid => "not_yet_valid",
            StateError::ExpiryBeyondTtl => "expiry_beyond_ttl",
            StateError::WrongPrincipal => "wrong_principal",
            StateError::WrongRequest => "wrong_request",
            StateError::Replayed => "replayed",
            StateError::TooLarge => "too_large",
            StateError::StoreReset => "store_reset",
        }
    }
}

/// Why a key ring could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The key file could not be read.
    #[error("cannot read key file {path}: {source}")]
    Io {
        /// File that failed.
        path: PathBuf,
        /// Underlying I/O error.
        source: std::io::Error,
    },
    /// The environment variable is unset or not valid UTF-8.
    #[error("environment variable {0} is not set (or not UTF-8)")]
    EnvMissing(String),
    /// No key at all in the input.
    #[error("no key found: expect `kid:base64url(key)` lines or one bare base64url key")]
    Empty,
    /// A line does not follow the format.
    #[error("key line {line}: {reason}")]
    BadLine {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A key is shorter than 32 bytes.
    #[error("key {kid} is {len} bytes; at least 32 bytes are required")]
    TooShort {
        /// Key id of the short key.
        kid: u32,
        /// Its length in bytes.
        len: usize,
    },
    /// The same key id appears twice.
    #[error("key id {0} appears more than once")]
    DuplicateKid(u32),
}

/// Why a sealer could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The codec name is not one of [`crate::state::CodecName::ALL`].
    #[error(
        "unknown codec {0:?}; expected one of hmac-sha256, blake3-keyed, aes-256-gcm, aes-256-gcm-siv, chacha20-poly1305, xchacha20-poly1305"
    )]
    UnknownCodec(String),
    /// The key ring holds no key.
    #[error("key ring is empty")]
    NoKeys,
    /// `max_token_len` is too small to hold any token.
    #[error("max_token_len {0} is too small (minimum 128)")]
    CapTooSmall(usize),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_distinct_and_listed() {
        let all = [
            StateError::Malformed("x"),
            StateError::UnsupportedVersion(9),
            StateError::UnknownKey(3),
            StateError::BadTag,
            StateError::Expired,
            StateError::NotYetValid,
            StateError::ExpiryBeyondTtl,
            StateError::WrongPrincipal,
            StateError::WrongRequest,
            StateError::Replayed,
            StateError::TooLarge,
            StateError::StoreReset,
        ];
        let names: Vec<_> = all.iter().map(|e| e.kind()).collect();
        assert_eq!(names, StateError::KINDS.to_vec());
    }
}
