//! Who holds a connection, for the connection shares (see `super::accept`):
//! the principal of its requests, the pool of callers without credentials,
//! or nobody yet (no request so far). And the table of who holds how many,
//! with the share no holder may pass and the largest holders in order.
//!
//! A holder is a keyed hash of the principal's name (random per process,
//! so no client can choose a name whose hash collides with another's),
//! worked out once per connection and token ([`Identify`]) and kept in the
//! connection's own state; the table changes only when a connection gets
//! a holder or closes, under the connection registry's lock it shares.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::BuildHasher as _;

use axum::http::{HeaderMap, HeaderValue, header};

/// Who holds a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Holder(u64);

impl Holder {
    /// No request on the connection yet.
    pub const NOBODY: Holder = Holder(0);
    /// The pool of every caller without (valid) credentials.
    pub const UNAUTHENTICATED: Holder = Holder(1);

    /// The raw value (for an atomic).
    pub fn raw(self) -> u64 {
        self.0
    }

    /// From [`Holder::raw`].
    pub fn from_raw(raw: u64) -> Holder {
        Holder(raw)
    }
}

/// The principal a request's head names, if any (`true`: a browser
/// route, where the sign-in cookie counts).
type PrincipalOf = Box<dyn Fn(&HeaderMap, bool) -> Option<String> + Send + Sync>;

/// Works out the holder of a request: the principal its head names (a
/// bearer token; on browser routes the sign-in cookie; the anonymous
/// principal), or the unauthenticated pool.
pub struct Identify {
    keys: std::hash::RandomState,
    principal_of: PrincipalOf,
}

impl Identify {
    /// Holders named by `principal_of(headers, browser_route)`.
    pub fn new(
        principal_of: impl Fn(&HeaderMap, bool) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        Identify {
            keys: std::hash::RandomState::new(),
            principal_of: Box::new(principal_of),
        }
    }

    /// The holder of principal `name`.
    pub fn named(&self, name: &str) -> Holder {
        Holder(self.keys.hash_one(name).max(2))
    }

    /// The holder of a request to `path` with `headers`.
    pub fn of(&self, headers: &HeaderMap, path: &str) -> Holder {
        match (self.principal_of)(headers, !path.starts_with("/mcp")) {
            Some(p) => self.named(&p),
            None => Holder::UNAUTHENTICATED,
        }
    }

    /// [`Identify::of`] through a connection's `cache` of its last
    /// `Authorization` value and holder: a request with the same token as
    /// the last (every request of a client, as a rule) costs a comparison.
    pub fn of_cached(
        &self,
        cache: &mut Option<(HeaderValue, Holder)>,
        headers: &HeaderMap,
        path: &str,
    ) -> Holder {
        let Some(auth) = headers.get(header::AUTHORIZATION) else {
            return self.of(headers, path);
        };
        if let Some((last, holder)) = cache
            && last == auth
        {
            return *holder;
        }
        let holder = self.of(headers, path);
        *cache = Some((auth.clone(), holder));
        holder
    }
}

/// A holder would pass its share: it holds this many connections already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverShare(pub usize);

/// Which connections each holder holds, against one share for each.
#[derive(Debug)]
pub struct HolderTable {
    share: usize,
    conns: HashMap<Holder, HashSet<u64>>,
    /// `(connections held, holder)`, so the largest holders come last.
    order: BTreeSet<(usize, Holder)>,
}

impl HolderTable {
    /// An empty table where no holder (but [`Holder::NOBODY`]) may hold
    /// more than `share` connections.
    pub fn new(share: usize) -> Self {
        HolderTable {
            share: share.max(1),
            conns: HashMap::new(),
            order: BTreeSet::new(),
        }
    }

    fn count(&self, h: Holder) -> usize {
        self.conns.get(&h).map_or(0, HashSet::len)
    }

    fn refile(&mut self, h: Holder, before: usize) {
        self.order.remove(&(before, h));
        let now = self.count(h);
        if now > 0 {
            self.order.insert((now, h));
        }
    }

    /// Moves connection `id` from `from` to `to`; refused (nothing moves)
    /// when `to` holds its share already.
    pub fn assign(&mut self, id: u64, from: Holder, to: Holder) -> Result<(), OverShare> {
        if from == to {
            return Ok(());
        }
        let held = self.count(to);
        if to != Holder::NOBODY && held >= self.share {
            return Err(OverShare(held));
        }
        self.release(id, from);
        if to != Holder::NOBODY {
            self.conns.entry(to).or_default().insert(id);
            self.refile(to, held);
        }
        Ok(())
    }

    /// Connection `id` of `holder` closed.
    pub fn release(&mut self, id: u64, holder: Holder) {
        if holder == Holder::NOBODY {
            return;
        }
        let before = self.count(holder);
        if let Some(set) = self.conns.get_mut(&holder) {
            set.remove(&id);
            if set.is_empty() {
                self.conns.remove(&holder);
            }
        }
        self.refile(holder, before);
    }

    /// Up to `limit` connections, those of the largest holder first, then
    /// the next largest's, and so on.
    pub fn largest_first(&self, limit: usize) -> Vec<u64> {
        self.order
            .iter()
            .rev()
            .filter_map(|(_, h)| self.conns.get(h))
            .flatten()
            .take(limit)
            .copied()
            .collect()
    }

    /// Holders holding a connection.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// True when nobody holds a connection.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_are_keyed_per_principal_and_cached_per_token() {
        let id = Identify::new(|h: &HeaderMap, _| {
            let v = h.get(header::AUTHORIZATION)?.to_str().ok()?;
            v.strip_prefix("Bearer ").map(str::to_owned)
        });
        let (a, b) = (id.named("alice"), id.named("bob"));
        assert!(a != b && a.raw() >= 2 && b.raw() >= 2);
        let mut h = HeaderMap::new();
        assert_eq!(id.of(&h, "/mcp"), Holder::UNAUTHENTICATED);
        h.insert(header::AUTHORIZATION, "Bearer alice".parse().unwrap());
        let mut cache = None;
        assert_eq!(id.of_cached(&mut cache, &h, "/mcp"), a);
        assert!(cache.is_some());
        h.insert(header::AUTHORIZATION, "Bearer bob".parse().unwrap());
        assert_eq!(id.of_cached(&mut cache, &h, "/mcp"), b, "a new token");
        // Another process keys its hashes differently.
        let other = Identify::new(|_: &HeaderMap, _| None);
        assert_ne!(other.named("alice"), a);
    }

    #[test]
    fn no_holder_passes_its_share_and_the_largest_come_first() {
        let (a, b) = (Holder(10), Holder(20));
        let mut t = HolderTable::new(2);
        t.assign(1, Holder::NOBODY, a).unwrap();
        t.assign(2, Holder::NOBODY, a).unwrap();
        assert_eq!(t.assign(3, Holder::NOBODY, a), Err(OverShare(2)));
        t.assign(3, Holder::NOBODY, b).unwrap();
        assert!(matches!(t.largest_first(5)[..], [1, 2, 3] | [2, 1, 3]));
        // Connection 2 now carries b's token: a holds one, b two.
        t.assign(2, a, b).unwrap();
        assert!(matches!(t.largest_first(5)[..], [2, 3, 1] | [3, 2, 1]));
        assert_eq!(t.largest_first(1).len(), 1);
        assert_eq!(t.assign(4, Holder::NOBODY, b), Err(OverShare(2)));
        t.release(1, a);
        t.release(2, b);
        t.release(3, b);
        assert!(t.is_empty() && t.order.is_empty());
        // Nobody is never counted.
        for id in 0..10 {
            t.assign(id, Holder::NOBODY, Holder::NOBODY).unwrap();
        }
        assert_eq!(t.len(), 0);
    }
}
