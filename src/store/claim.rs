//! One-time claims: a key taken at most once, together with the outcome of
//! the action it guards, remembered until an instant the caller names (the
//! expiry of the last state that could present it again).
//!
//! Taking the key and recording the outcome are one atomic step, so a
//! second taker always finds the first one's outcome, and with SQLite it
//! survives a crash of the process the moment [`super::Store::claim`]
//! returns.

use serde_json::Value;

use super::StoreError;
use super::record::MAX_FIELD_LEN;

/// `keep_until_ms` of a claim that is never forgotten (SQLite's largest
/// integer).
pub const KEEP_FOREVER: u64 = i64::MAX as u64;

/// A key that was taken before, and what its first taker recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// The outcome stored with the claim (`None` for a bare claim).
    pub outcome: Option<Value>,
}

/// What [`super::Store::claim`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// This call took the key; its outcome is recorded with it: run the
    /// action now.
    Won,
    /// The key was taken earlier: do not run the action again.
    Taken(Taken),
}

impl Claim {
    /// True when this call took the key.
    pub fn is_won(&self) -> bool {
        matches!(self, Claim::Won)
    }
}

/// Validates a claim key: 1 to 1024 bytes.
pub(crate) fn check_key(key: &str) -> Result<(), StoreError> {
    if key.is_empty() || key.len() > MAX_FIELD_LEN {
        return Err(StoreError::InvalidInput {
            field: "claim key",
            reason: "must be 1 to 1024 bytes".into(),
        });
    }
    Ok(())
}
