//! The budget of request-body bytes held in memory at once, server-wide
//! and per payer (`--max-body-bytes-in-flight`,
//! `--max-body-bytes-per-principal`), so that many large bodies, or bodies
//! that arrive and then stall, cannot take the server's memory. A payer is
//! a principal, or the pool of every caller without credentials (sign-in
//! forms), which gets one payer's share: the unauthenticated cannot starve
//! the authenticated.
//!
//! It counts the bytes actually received, not the declared
//! `Content-Length` reserved up front: a body trickled in at a byte a
//! second then holds a few bytes of the budget, not the megabyte it
//! announces, so a handful of such bodies cannot lock everyone else out
//! (they cost a connection each, which the cap and the body-rate floor
//! deal with). The declared length is still checked on admission, so a
//! body that cannot fit is refused from its head, before any of it is
//! read; one that outgrows the budget while it arrives (a chunked body, or
//! others filling it meanwhile) is refused then.
//!
//! No payer exceeds its share; the server-wide budget is shared fairly:
//! when a body within its payer's share does not fit because others fill
//! the budget (nine made-up principals under demo auth hold 9 × 8 MiB),
//! the largest body of the payer holding the most is cut off (503, its
//! connection closes) to make room, as long as that payer holds more than
//! the newcomer's would. A refused body's `Retry-After` says when the bytes
//! it waits for free up: when the oldest body holding them reaches
//! `--body-read-timeout` (bodies that finish sooner free them sooner).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// A body did not fit in the budget (503): retry after this long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget {
    /// When the bytes it waits for are freed at the latest.
    pub retry_after: Duration,
}

/// Who pays for a body: a principal, or (`None`) the pool of callers
/// without credentials.
pub type Payer<'a> = Option<&'a str>;

/// The key of the unauthenticated pool: no principal name is empty.
const UNAUTHENTICATED: &str = "";

/// Most bodies cut off to make room for one that is entitled to it.
const MAX_CUTS: usize = 8;

/// How a body is told it was cut off for others.
#[derive(Default)]
struct Cut {
    done: AtomicBool,
    wake: Notify,
}

struct Body {
    bytes: usize,
    admitted: Instant,
    cut: Arc<Cut>,
}

#[derive(Default)]
struct Payers {
    bytes: usize,
    bodies: HashMap<u64, Body>,
}

#[derive(Default)]
struct Used {
    total: usize,
    payers: HashMap<String, Payers>,
    next_id: u64,
}

/// Request-body bytes in flight against their limits.
pub struct BodyBudget {
    total: usize,
    per_payer: usize,
    /// How long a body may hold its bytes at most (`--body-read-timeout`).
    hold: Duration,
    used: Mutex<Used>,
    refused: AtomicU64,
    cut: AtomicU64,
}

impl BodyBudget {
    /// A budget of `total` bytes, at most `per_payer` of them for one
    /// principal (or for the unauthenticated pool); bodies hold their
    /// bytes at most `hold`.
    pub fn new(total: usize, per_payer: usize, hold: Duration) -> Self {
        BodyBudget {
            total,
            per_payer,
            hold,
            used: Mutex::new(Used::default()),
            refused: AtomicU64::new(0),
            cut: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Used> {
        self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a body of `declared` bytes paid by `payer` when that many
    /// would fit now (cutting off others' bodies to make room, see the
    /// module docs). It holds nothing until [`Held::grow`].
    pub fn admit(&self, payer: Payer<'_>, declared: usize) -> Result<Held<'_>, OverBudget> {
        let key = payer.unwrap_or(UNAUTHENTICATED);
        let mut used = self.lock();
        self.fit(&mut used, key, declared)?;
        used.next_id += 1;
        let id = used.next_id;
        let cut = Arc::new(Cut::default());
        let body = Body {
            bytes: 0,
            admitted: Instant::now(),
            cut: cut.clone(),
        };
        match used.payers.get_mut(key) {
            Some(p) => {
                p.bodies.insert(id, body);
            }
            None => {
                let mut p = Payers::default();
                p.bodies.insert(id, body);
                used.payers.insert(key.to_owned(), p);
            }
        }
        Ok(Held {
            budget: self,
            key: key.to_owned(),
            id,
            cut,
        })
    }

    /// Makes `more` bytes fit for `key`: within its share, and within the
    /// budget once the largest payers' bodies are cut; else refuses.
    fn fit(&self, used: &mut Used, key: &str, more: usize) -> Result<(), OverBudget> {
        let mine = used.payers.get(key).map_or(0, |p| p.bytes);
        if mine.saturating_add(more) > self.per_payer {
            return Err(self.refuse(used, Some(key)));
        }
        for _ in 0..MAX_CUTS {
            if used.total.saturating_add(more) <= self.total {
                return Ok(());
            }
            let largest = used
                .payers
                .iter()
                .filter(|(k, _)| k.as_str() != key)
                .max_by_key(|(_, p)| p.bytes)
                .filter(|(_, p)| p.bytes > mine.saturating_add(more))
                .map(|(k, _)| k.clone());
            let Some(victim) = largest else { break };
            self.cut_largest_body(used, &victim);
        }
        if used.total.saturating_add(more) <= self.total {
            return Ok(());
        }
        Err(self.refuse(used, None))
    }

    /// Cuts off the largest body of payer `key`: its bytes are freed now,
    /// its reader is told (and answers 503).
    fn cut_largest_body(&self, used: &mut Used, key: &str) {
        let Some(p) = used.payers.get_mut(key) else {
            return;
        };
        let Some(id) = p
            .bodies
            .iter()
            .max_by_key(|(_, b)| b.bytes)
            .map(|(id, _)| *id)
        else {
            return;
        };
        if let Some(b) = p.bodies.remove(&id) {
            p.bytes -= b.bytes;
            used.total -= b.bytes;
            b.cut.done.store(true, Ordering::Release);
            b.cut.wake.notify_one();
            self.cut.fetch_add(1, Ordering::Relaxed);
        }
        if p.bodies.is_empty() {
            used.payers.remove(key);
        }
    }

    /// Counts a refusal; its `Retry-After`: when the oldest body of `key`
    /// (its own share full) or of anyone (the budget full) reaches the
    /// hold limit.
    fn refuse(&self, used: &Used, key: Option<&str>) -> OverBudget {
        self.refused.fetch_add(1, Ordering::Relaxed);
        let oldest = match key {
            Some(k) => used
                .payers
                .get(k)
                .and_then(|p| p.bodies.values().map(|b| b.admitted).min()),
            None => used
                .payers
                .values()
                .flat_map(|p| p.bodies.values().map(|b| b.admitted))
                .min(),
        };
        let retry_after = oldest.map_or(Duration::from_secs(1), |t| {
            (t + self.hold).saturating_duration_since(Instant::now())
        });
        OverBudget {
            retry_after: retry_after.max(Duration::from_secs(1)),
        }
    }

    /// Bytes held now, server-wide.
    pub fn in_flight(&self) -> usize {
        self.lock().total
    }

    /// Bodies refused so far, on admission or as they arrived.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Bodies cut off to make room for another payer's.
    pub fn cut(&self) -> u64 {
        self.cut.load(Ordering::Relaxed)
    }
}

/// The bytes one body holds; released when dropped.
pub struct Held<'a> {
    budget: &'a BodyBudget,
    key: String,
    id: u64,
    cut: Arc<Cut>,
}

impl Held<'_> {
    /// Holds `n` more bytes, or refuses if they do not fit (or the body
    /// was cut off for others meanwhile).
    pub fn grow(&mut self, n: usize) -> Result<(), OverBudget> {
        let budget = self.budget;
        let mut used = budget.lock();
        let held = used
            .payers
            .get(&self.key)
            .is_some_and(|p| p.bodies.contains_key(&self.id));
        if !held {
            return Err(budget.refuse(&used, Some(&self.key)));
        }
        budget.fit(&mut used, &self.key, n)?;
        // `fit` never cuts this payer's own bodies, so this one is still there.
        if let Some(p) = used.payers.get_mut(&self.key)
            && let Some(b) = p.bodies.get_mut(&self.id)
        {
            b.bytes += n;
            p.bytes += n;
            used.total += n;
        }
        Ok(())
    }

    /// Resolves once this body was cut off to make room for another
    /// payer's (never, otherwise).
    pub async fn cut_off(&self) {
        while !self.cut.done.load(Ordering::Acquire) {
            self.cut.wake.notified().await;
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if self.cut.done.load(Ordering::Acquire) {
            return;
        }
        let mut used = self.budget.lock();
        let used = &mut *used;
        if let Some(p) = used.payers.get_mut(&self.key) {
            if let Some(b) = p.bodies.remove(&self.id) {
                p.bytes -= b.bytes;
                used.total -= b.bytes;
            }
            if p.bodies.is_empty() {
                used.payers.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOLD: Duration = Duration::from_secs(30);

    #[test]
    fn bodies_fit_server_wide_and_per_payer() {
        let b = BodyBudget::new(100, 60, HOLD);
        let mut a = b.admit(Some("alice"), 50).unwrap();
        a.grow(50).unwrap();
        assert!(b.admit(Some("alice"), 11).is_err(), "alice's 60");
        let mut a2 = b.admit(Some("alice"), 10).unwrap();
        a2.grow(10).unwrap();
        assert!(a2.grow(1).is_err(), "grows past alice's share");
        let mut form = b.admit(None, 30).unwrap();
        form.grow(30).unwrap();
        assert_eq!(b.in_flight(), 90);
        drop(a);
        assert_eq!(b.in_flight(), 40);
        let mut bob = b.admit(Some("bob"), 50).unwrap();
        bob.grow(50).unwrap();
        drop((a2, form, bob));
        assert_eq!(b.in_flight(), 0);
        assert!(b.lock().payers.is_empty(), "no entry left behind");
        assert_eq!(b.refused(), 2);
    }

    #[test]
    fn a_trickling_body_holds_only_what_arrived() {
        let b = BodyBudget::new(1000, 1000, HOLD);
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

    #[tokio::test]
    async fn the_largest_payer_is_cut_for_a_smaller_one_within_its_share() {
        // Nine payers of 100 fill 900; alice (0) needs 10.
        let b = BodyBudget::new(900, 100, HOLD);
        let mut crowd: Vec<Held<'_>> = (0..9)
            .map(|i| {
                let name = ["m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"][i];
                let mut h = b.admit(Some(name), 100).unwrap();
                h.grow(100).unwrap();
                h
            })
            .collect();
        let mut alice = b.admit(Some("alice"), 10).expect("room made for alice");
        alice.grow(10).unwrap();
        assert_eq!((b.in_flight(), b.cut()), (810, 1));
        let victim = crowd
            .iter()
            .position(|h| h.cut.done.load(Ordering::Acquire))
            .expect("one was cut");
        tokio::time::timeout(Duration::from_secs(1), crowd[victim].cut_off())
            .await
            .expect("its reader is told");
        assert!(
            crowd[victim].grow(1).is_err(),
            "a cut body holds nothing more"
        );
        // A payer no smaller than the rest cuts nobody: refused, with the
        // time its own oldest body can hold on for.
        let refused = b.admit(Some("m0"), 100);
        assert!(refused.is_err());
        let wait = refused.err().unwrap().retry_after;
        assert!(wait > Duration::from_secs(25) && wait <= HOLD, "{wait:?}");
        crowd.clear();
        drop(alice);
        assert_eq!(b.in_flight(), 0);
        assert!(b.lock().payers.is_empty());
    }
}
