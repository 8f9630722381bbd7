//! Single use: a [`ReplayGuard`] remembers consumed nonces until their
//! state could no longer open anyway.
//!
//! [`MemoryReplayGuard`] keeps entries in 16 mutex-protected shards, each a
//! map plus a min-heap ordered by expiry; every call first evicts expired
//! entries of its shard, so memory is bounded by (states consumed per
//! second) × TTL. A shared store (SQL, Redis) can implement the
//! same trait later.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::Mutex;

use super::error::StateError;

/// Records nonces of consumed states.
pub trait ReplayGuard: Send + Sync {
    /// `Ok` the first time `nonce` is seen, `Err(Replayed)` afterwards, as
    /// long as `now_ms <= keep_until_ms` (pass `expires_at`: the state
    /// cannot open from then on). Entries may be forgotten after it.
    fn consume(&self, nonce: &[u8; 16], keep_until_ms: u64, now_ms: u64) -> Result<(), StateError>;
}

#[derive(Default)]
struct Shard {
    seen: HashMap<[u8; 16], u64>,
    by_expiry: BinaryHeap<Reverse<(u64, [u8; 16])>>,
}

impl Shard {
    fn evict(&mut self, now_ms: u64) {
        while let Some(Reverse((until, nonce))) = self.by_expiry.peek().copied() {
            if until >= now_ms {
                break;
            }
            self.by_expiry.pop();
            if self.seen.get(&nonce) == Some(&until) {
                self.seen.remove(&nonce);
            }
        }
    }
}

const SHARDS: usize = 16;

/// In-process [`ReplayGuard`]: sharded, expiry-evicting, thread-safe.
pub struct MemoryReplayGuard {
    shards: Vec<Mutex<Shard>>,
    hasher: RandomState,
}

impl Default for MemoryReplayGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MemoryReplayGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryReplayGuard")
            .field("len", &self.len())
            .finish()
    }
}

impl MemoryReplayGuard {
    /// An empty guard.
    pub fn new() -> Self {
        MemoryReplayGuard {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            hasher: RandomState::new(),
        }
    }

    fn shard(&self, nonce: &[u8; 16]) -> &Mutex<Shard> {
        let mut h = self.hasher.build_hasher();
        h.write(nonce);
        &self.shards[(h.finish() as usize) % SHARDS]
    }

    /// Number of nonces currently remembered.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| {
                s.lock()
                    .map_or_else(|p| p.into_inner().seen.len(), |g| g.seen.len())
            })
            .sum()
    }

    /// True when no nonce is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every entry whose `keep_until_ms` is before `now_ms`.
    pub fn evict_expired(&self, now_ms: u64) {
        for s in &self.shards {
            let mut g = s.lock().unwrap_or_else(|p| p.into_inner());
            g.evict(now_ms);
        }
    }
}

impl ReplayGuard for MemoryReplayGuard {
    fn consume(&self, nonce: &[u8; 16], keep_until_ms: u64, now_ms: u64) -> Result<(), StateError> {
        // A poisoned shard still holds valid data: keep using it.
        let mut g = self.shard(nonce).lock().unwrap_or_else(|p| p.into_inner());
        g.evict(now_ms);
        if g.seen.contains_key(nonce) {
            return Err(StateError::Replayed);
        }
        g.seen.insert(*nonce, keep_until_ms);
        g.by_expiry.push(Reverse((keep_until_ms, *nonce)));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn first_ok_then_replayed_then_evicted() {
        let g = MemoryReplayGuard::new();
        let n = [1u8; 16];
        assert_eq!(g.consume(&n, 100, 10), Ok(()));
        assert_eq!(g.consume(&n, 100, 50), Err(StateError::Replayed));
        assert_eq!(g.consume(&n, 100, 100), Err(StateError::Replayed));
        assert_eq!(g.len(), 1);
        g.evict_expired(101);
        assert!(g.is_empty());
    }

    #[test]
    fn memory_stays_bounded_by_expiry() {
        let g = MemoryReplayGuard::new();
        for i in 0..10_000u32 {
            let mut n = [0u8; 16];
            n[..4].copy_from_slice(&i.to_be_bytes());
            // each entry lives 100 ms; time advances 1 ms per consume
            g.consume(&n, u64::from(i) + 100, u64::from(i)).unwrap();
        }
        g.evict_expired(10_000);
        assert!(g.len() <= 101, "len {}", g.len());
    }

    #[test]
    fn concurrent_consumers_get_exactly_one_ok() {
        let g = Arc::new(MemoryReplayGuard::new());
        let oks = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let g = Arc::clone(&g);
                let oks = Arc::clone(&oks);
                std::thread::spawn(move || {
                    for i in 0..500u32 {
                        let mut n = [0u8; 16];
                        n[..4].copy_from_slice(&i.to_be_bytes());
                        if g.consume(&n, 1_000, 0).is_ok() {
                            oks.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(oks.load(Ordering::Relaxed), 500);
        assert_eq!(g.len(), 500);
    }
}
