//! Lock-free operation counters shared by the backends.

use std::sync::atomic::{AtomicU64, Ordering};

use super::record::Counters;

/// Atomic cells behind [`Counters`].
#[derive(Debug, Default)]
pub(crate) struct CounterCells {
    pub created: AtomicU64,
    pub applied: AtomicU64,
    pub already_done: AtomicU64,
    pub rejected: AtomicU64,
    pub expired: AtomicU64,
    pub claims_won: AtomicU64,
    pub claims_lost: AtomicU64,
    pub purged_records: AtomicU64,
    pub purged_audit: AtomicU64,
    pub purged_claims: AtomicU64,
    pub backend_calls: AtomicU64,
}

impl CounterCells {
    /// Adds `n` to `cell`.
    pub fn add(cell: &AtomicU64, n: u64) {
        cell.fetch_add(n, Ordering::Relaxed);
    }

    /// A point-in-time copy.
    pub fn snapshot(&self) -> Counters {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Counters {
            created: g(&self.created),
            applied: g(&self.applied),
            already_done: g(&self.already_done),
            rejected: g(&self.rejected),
            expired: g(&self.expired),
            claims_won: g(&self.claims_won),
            claims_lost: g(&self.claims_lost),
            purged_records: g(&self.purged_records),
            purged_audit: g(&self.purged_audit),
            purged_claims: g(&self.purged_claims),
            backend_calls: g(&self.backend_calls),
        }
    }

    /// Counts the answer of one `claim` call.
    pub fn count_claim(&self, won: bool) {
        let cell = if won {
            &self.claims_won
        } else {
            &self.claims_lost
        };
        Self::add(cell, 1);
    }

    /// Counts what one `purge` call deleted.
    pub fn count_purge(&self, p: &super::Purged) {
        Self::add(&self.purged_records, p.records);
        Self::add(&self.purged_audit, p.audit);
        Self::add(&self.purged_claims, p.claims);
    }

    /// Counts the answer of one `complete` call.
    pub fn count_completion<T>(&self, r: &Result<super::Completion, T>) {
        match r {
            Ok(super::Completion::Applied(_)) => Self::add(&self.applied, 1),
            Ok(super::Completion::AlreadyDone(_)) => Self::add(&self.already_done, 1),
            Err(_) => Self::add(&self.rejected, 1),
        }
    }
}
