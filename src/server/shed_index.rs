//! The open connections, and an ordered index of those that may be shed
//! at the connection cap, so that picking one costs O(log n) rather than
//! a scan and sort of every connection.
//!
//! Each connection has a *shed key*, a time in milliseconds: the moment
//! it stopped being useful (the start of an idle spell or of a request
//! head), or, for a request body, the earliest moment it can count as
//! slow; `None` while it is busy. The owner updates the key on every
//! phase change; the index keeps `(key, id)` in a `BTreeSet`, so the
//! connection useless the longest is always first.
//!
//! A body's key only moves later as bytes arrive, so it is kept as a lower
//! bound and refreshed lazily: [`ShedIndex::pick`] asks the candidate
//! ([`Check`]) and re-files it when it is not slow after all.

use std::collections::{BTreeSet, HashMap};

/// Most candidates [`ShedIndex::pick`] re-files before it gives up: bounds
/// the work of one accept when many bodies are arriving at just the floor.
const MAX_REFILES: usize = 32;

/// What a candidate says when [`ShedIndex::pick`] is about to shed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Shed it (the candidate has been told to go).
    Go,
    /// Not sheddable before this time (a body that made progress).
    NotBefore(u64),
    /// Busy: not sheddable until its next phase change files it again.
    Never,
}

struct Slot<T> {
    value: T,
    key: Option<u64>,
    /// Picked, and not yet gone or spared: no longer counts against the cap.
    leaving: bool,
}

/// Open connections by id, with the sheddable ones ordered by shed key.
pub struct ShedIndex<T> {
    slots: HashMap<u64, Slot<T>>,
    order: BTreeSet<(u64, u64)>,
    leaving: usize,
}

impl<T> Default for ShedIndex<T> {
    fn default() -> Self {
        ShedIndex {
            slots: HashMap::new(),
            order: BTreeSet::new(),
            leaving: 0,
        }
    }
}

impl<T> ShedIndex<T> {
    /// Adds connection `id` with its first shed key.
    pub fn insert(&mut self, id: u64, value: T, key: Option<u64>) {
        self.remove(id);
        if let Some(k) = key {
            self.order.insert((k, id));
        }
        self.slots.insert(
            id,
            Slot {
                value,
                key,
                leaving: false,
            },
        );
    }

    /// Files `id` under a new shed key (`None`: busy). Unknown ids (a
    /// connection already gone) are ignored.
    pub fn set_key(&mut self, id: u64, key: Option<u64>) {
        let Some(slot) = self.slots.get_mut(&id) else {
            return;
        };
        if let Some(old) = slot.key {
            self.order.remove(&(old, id));
        }
        slot.key = key;
        if let (Some(k), false) = (key, slot.leaving) {
            self.order.insert((k, id));
        }
    }

    /// Forgets connection `id` (it closed).
    pub fn remove(&mut self, id: u64) {
        if let Some(slot) = self.slots.remove(&id) {
            if let Some(k) = slot.key {
                self.order.remove(&(k, id));
            }
            if slot.leaving {
                self.leaving -= 1;
            }
        }
    }

    /// Open connections.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when no connection is open.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Open connections that count against the cap (not picked to leave).
    pub fn staying(&self) -> usize {
        self.slots.len() - self.leaving
    }

    /// Picks the connection with the smallest shed key not after `now`
    /// that `check` agrees to shed, and marks it leaving; `None` when no
    /// key is due (or [`MAX_REFILES`] candidates turned out not to be).
    pub fn pick(&mut self, now: u64, mut check: impl FnMut(&T) -> Check) -> Option<&T> {
        for _ in 0..MAX_REFILES {
            let &(key, id) = self.order.first()?;
            if key > now {
                return None;
            }
            self.order.remove(&(key, id));
            let slot = self.slots.get_mut(&id)?;
            match check(&slot.value) {
                Check::Go => {
                    slot.leaving = true;
                    self.leaving += 1;
                    return self.slots.get(&id).map(|s| &s.value);
                }
                Check::NotBefore(later) => {
                    let later = later.max(now + 1);
                    slot.key = Some(later);
                    self.order.insert((later, id));
                }
                Check::Never => slot.key = None,
            }
        }
        None
    }

    /// Connection `id` and whether it was picked to leave.
    pub fn get(&self, id: u64) -> Option<(&T, bool)> {
        self.slots.get(&id).map(|s| (&s.value, s.leaving))
    }

    /// Marks `id` leaving without a pick (it is shed for another reason
    /// than its key): it no longer counts against the cap.
    pub fn mark_leaving(&mut self, id: u64) {
        let Some(slot) = self.slots.get_mut(&id) else {
            return;
        };
        if slot.leaving {
            return;
        }
        if let Some(k) = slot.key {
            self.order.remove(&(k, id));
        }
        slot.leaving = true;
        self.leaving += 1;
    }

    /// Clears the leaving mark of `id` (it turned busy before it could go)
    /// and files it under its key again.
    pub fn spare(&mut self, id: u64) {
        let Some(slot) = self.slots.get_mut(&id) else {
            return;
        };
        if !slot.leaving {
            return;
        }
        slot.leaving = false;
        self.leaving -= 1;
        if let Some(k) = slot.key {
            self.order.insert((k, id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection as `pick` sees it: the key it really has now.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct Conn {
        id: u64,
        real: Option<u64>,
    }

    fn check(now: u64) -> impl FnMut(&Conn) -> Check {
        move |c| match c.real {
            None => Check::Never,
            Some(k) if k > now => Check::NotBefore(k),
            Some(_) => Check::Go,
        }
    }

    fn with(conns: &[(u64, Option<u64>, Option<u64>)]) -> ShedIndex<Conn> {
        let mut ix = ShedIndex::default();
        for &(id, filed, real) in conns {
            ix.insert(id, Conn { id, real }, filed);
        }
        ix
    }

    #[test]
    fn picks_the_longest_useless_and_spares_busy_ones() {
        // (id, key filed, key now): 1 busy; 2 idle since 50; 3 idle since
        // 10; 4 a body filed as slow from 5 that has since made progress
        // (slow only from 500); 5 a body slow since 30.
        let mut ix = with(&[
            (1, None, None),
            (2, Some(50), Some(50)),
            (3, Some(10), Some(10)),
            (4, Some(5), Some(500)),
            (5, Some(30), Some(30)),
        ]);
        let order: Vec<u64> = std::iter::from_fn(|| ix.pick(100, check(100)).map(|c| c.id))
            .take(10)
            .collect();
        assert_eq!(
            order,
            [3, 5, 2],
            "oldest first; the busy and the fast body stay"
        );
        assert_eq!((ix.len(), ix.staying()), (5, 2));
        // The fast body was re-filed under its real key and goes once due.
        assert_eq!(ix.pick(499, check(499)), None);
        assert_eq!(ix.pick(500, check(500)).map(|c| c.id), Some(4));
    }

    #[test]
    fn phase_changes_refile_and_leaving_ones_are_not_picked_twice() {
        let mut ix = with(&[(1, Some(10), Some(10)), (2, Some(20), Some(20))]);
        ix.set_key(1, None); // turned busy
        assert_eq!(ix.pick(100, check(100)).map(|c| c.id), Some(2));
        ix.set_key(2, Some(5)); // a late phase change does not re-file it
        assert_eq!(ix.pick(100, check(100)), None);
        ix.spare(2);
        assert_eq!(ix.staying(), 2);
        assert_eq!(ix.pick(100, check(100)).map(|c| c.id), Some(2));
        ix.remove(2);
        ix.set_key(2, Some(1)); // gone: ignored
        assert_eq!((ix.len(), ix.staying()), (1, 1));
        assert_eq!(ix.pick(100, check(100)), None, "only a busy one left");
        assert!(!ix.is_empty());
        ix.remove(1);
        assert!(ix.is_empty());
    }

    #[test]
    fn a_connection_marked_leaving_is_neither_counted_nor_picked() {
        let mut ix = with(&[(1, Some(10), Some(10)), (2, None, None)]);
        ix.mark_leaving(1);
        ix.mark_leaving(2);
        ix.mark_leaving(2);
        assert_eq!((ix.len(), ix.staying()), (2, 0));
        assert_eq!(
            ix.get(2).map(|(c, leaving)| (c.id, leaving)),
            Some((2, true))
        );
        assert_eq!(ix.pick(100, check(100)), None);
        ix.spare(1);
        assert_eq!(ix.pick(100, check(100)).map(|c| c.id), Some(1));
        ix.remove(2);
        assert_eq!(ix.staying(), 0);
        assert!(ix.get(2).is_none());
    }

    #[test]
    fn a_pick_refiles_a_bounded_number_of_candidates() {
        // Many bodies filed as slow that all made progress, then an idle one.
        let mut conns: Vec<_> = (0..100).map(|i| (i, Some(i), Some(1_000 + i))).collect();
        conns.push((500, Some(200), Some(200)));
        let mut ix = with(&conns);
        assert_eq!(ix.pick(300, check(300)), None, "gives up after MAX_REFILES");
        let picked = std::iter::from_fn(|| Some(ix.pick(300, check(300)).map(|c| c.id)))
            .take(5)
            .find_map(|p| p);
        assert_eq!(
            picked,
            Some(500),
            "later accepts get past the re-filed ones"
        );
    }
}
