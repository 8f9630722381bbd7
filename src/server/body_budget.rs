//! The budget of request-body bytes held in memory at once, server-wide
//! and per principal (`--max-body-bytes-in-flight`,
//! `--max-body-bytes-per-principal`), so that many large bodies, or bodies
//! that arrive and then stall, cannot take the server's memory.
//!
//! It counts the bytes actually received, not the declared
//! `Content-Length` reserved up front: a body trickled in at a byte a
//! second then holds a few bytes of the budget, not the megabyte it
//! announces, so a handful of such bodies cannot lock everyone else out
//! (they cost a connection each, which the cap and the body-rate floor
//! deal with). The declared length is still checked on admission, so a
//! body that cannot fit in what is left is refused from its head, before
//! any of it is read; one that outgrows the budget while it arrives (a
//! chunked body, or others filling it meanwhile) is refused then.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// A body did not fit in the budget (503 with `Retry-After`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget;

#[derive(Default)]
struct Used {
    total: usize,
    by_principal: HashMap<String, usize>,
}

/// Request-body bytes in flight against their limits.
pub struct BodyBudget {
    total: usize,
    per_principal: usize,
    used: Mutex<Used>,
    refused: AtomicU64,
}

impl BodyBudget {
    /// A budget of `total` bytes, at most `per_principal` of them for one
    /// principal.
    pub fn new(total: usize, per_principal: usize) -> Self {
        BodyBudget {
            total,
            per_principal,
            used: Mutex::new(Used::default()),
            refused: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Used> {
        self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a body of `declared` bytes for `principal` (`None`: a
    /// request no principal is known for, counted server-wide only) when
    /// that many would fit now. It holds nothing until [`Held::grow`].
    pub fn admit(&self, principal: Option<&str>, declared: usize) -> Result<Held<'_>, OverBudget> {
        let used = self.lock();
        let mine = principal.map_or(0, |p| used.by_principal.get(p).copied().unwrap_or(0));
        if !self.fits(used.total, mine, principal.is_some(), declared) {
            return Err(self.refuse());
        }
        Ok(Held {
            budget: self,
            principal: principal.map(str::to_owned),
            bytes: 0,
        })
    }

    fn refuse(&self) -> OverBudget {
        self.refused.fetch_add(1, Ordering::Relaxed);
        OverBudget
    }

    fn fits(&self, total: usize, mine: usize, counted: bool, more: usize) -> bool {
        total.saturating_add(more) <= self.total
            && (!counted || mine.saturating_add(more) <= self.per_principal)
    }

    /// Bytes held now, server-wide.
    pub fn in_flight(&self) -> usize {
        self.lock().total
    }

    /// Bodies refused so far, on admission or as they arrived.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

/// The bytes one body holds; released when dropped.
pub struct Held<'a> {
    budget: &'a BodyBudget,
    principal: Option<String>,
    bytes: usize,
}

impl Held<'_> {
    /// Holds `n` more bytes, or refuses if they do not fit.
    pub fn grow(&mut self, n: usize) -> Result<(), OverBudget> {
        let mut used = self.budget.lock();
        let mine = self
            .principal
            .as_ref()
            .map_or(0, |p| used.by_principal.get(p).copied().unwrap_or(0));
        if !self
            .budget
            .fits(used.total, mine, self.principal.is_some(), n)
        {
            return Err(self.budget.refuse());
        }
        used.total += n;
        if let Some(p) = &self.principal {
            *used.by_principal.entry(p.clone()).or_default() += n;
        }
        self.bytes += n;
        Ok(())
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if self.bytes == 0 {
            return;
        }
        let mut used = self.budget.lock();
        used.total -= self.bytes;
        if let Some(p) = &self.principal
            && let Some(mine) = used.by_principal.get_mut(p)
        {
            *mine -= self.bytes;
            if *mine == 0 {
                used.by_principal.remove(p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_fit_server_wide_and_per_principal() {
        let b = BodyBudget::new(100, 60);
        let mut a = b.admit(Some("alice"), 50).unwrap();
        a.grow(50).unwrap();
        assert_eq!(
            b.admit(Some("alice"), 11).err(),
            Some(OverBudget),
            "alice's 60"
        );
        let mut a2 = b.admit(Some("alice"), 10).unwrap();
        a2.grow(10).unwrap();
        assert_eq!(a2.grow(1), Err(OverBudget), "grows past alice's share");
        assert!(b.admit(Some("bob"), 41).is_err(), "the server's 100");
        let mut form = b.admit(None, 40).unwrap();
        form.grow(40).unwrap();
        assert_eq!(b.in_flight(), 100);
        drop(a);
        assert_eq!(b.in_flight(), 50);
        let mut bob = b.admit(Some("bob"), 50).unwrap();
        bob.grow(50).unwrap();
        drop((a2, form, bob));
        assert_eq!(b.in_flight(), 0);
        assert!(b.lock().by_principal.is_empty(), "no entry left behind");
        assert_eq!(b.refused(), 3);
    }

    #[test]
    fn a_trickling_body_holds_only_what_arrived() {
        let b = BodyBudget::new(1000, 1000);
        let mut slow: Vec<_> = (0..100)
            .map(|_| b.admit(Some("mallory"), 999).unwrap())
            .collect();
        for h in &mut slow {
            h.grow(1).unwrap();
        }
        assert_eq!(b.in_flight(), 100);
        assert!(b.admit(Some("alice"), 900).is_ok());
        assert!(b.admit(Some("alice"), 901).is_err());
    }
}
