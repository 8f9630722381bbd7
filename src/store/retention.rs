//! What a store forgets, and when ([`super::Store::purge`]).
//!
//! - A record, settled or not, `retention` after its expiry: past its
//!   expiry it can no longer change (a pending one reads `Expired`), so
//!   the retention window is how long operators can still look it up.
//! - An audit entry `retention` after it was written (and with it the log
//!   of every purged record).
//! - A one-time claim once its `keep_until_ms` has passed: the caller sets
//!   that to the expiry of the last state that could present the key, so
//!   forgetting it can never let an action run twice.
//!
//! Purging is what keeps a long-running store flat: memory stays at the
//! live set, and SQLite reuses the freed pages (a file created by this
//! version also hands a mostly free file back to the file system, see
//! [`super::SqliteStore`]).

use serde::{Deserialize, Serialize};

/// How much one [`super::Store::purge`] call forgot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Purged {
    /// Records deleted.
    pub records: u64,
    /// Audit entries deleted.
    pub audit: u64,
    /// One-time claims deleted.
    pub claims: u64,
}

impl Purged {
    /// True when nothing was deleted.
    pub fn is_empty(&self) -> bool {
        self.records == 0 && self.audit == 0 && self.claims == 0
    }
}

/// The instant before which (inclusive) records and audit entries are due:
/// `now_ms - retention_ms`, or `None` while nothing can be that old.
pub(crate) fn cutoff(now_ms: u64, retention_ms: u64) -> Option<u64> {
    now_ms.checked_sub(retention_ms)
}
