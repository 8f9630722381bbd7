//! 2025-11-25 sessions: who owns one, what it declared, the elicitations
//! and calls in flight on it, and its standalone GET stream (one per
//! session) for server messages not tied to a request.
//!
//! The table forgets: a session nobody used for the idle timeout (no
//! request, no call in flight, no GET stream open) expires, and each
//! principal holds at most a fixed number of sessions; a new one beyond
//! that replaces the principal's least recently used idle session (and is
//! refused when all of them are in use). At the table's cap, a new session
//! replaces the least recently used idle session of the principal holding
//! the most (when that is more than the newcomer would hold), so a crowd of
//! made-up principals (demo auth takes any token) cannot fill the table
//! for everyone else; only when no larger holder has an idle session is it
//! refused. A session leaving the table,
//! by `DELETE`, expiry or replacement, is [`Session::close`]d: its calls
//! and streams end and their pending elicitations are cancelled.
//!
//! The legacy handler drives these; [`super::app::App`] only holds the map.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{Notify, mpsc, oneshot, watch};

use crate::clock::Clock;
use crate::protocol::capabilities::ElicitModes;
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::sse::encode_event;

/// How many sessions may live, and for how long unused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// A session unused this long expires.
    pub idle: Duration,
    /// Most sessions one principal holds.
    pub per_principal: usize,
    /// Most sessions alive at once; `initialize` beyond it gets 503.
    pub max: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            idle: Duration::from_secs(600),
            per_principal: 32,
            max: 50_000,
        }
    }
}

/// Why `initialize` could not get a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The table holds [`SessionLimits::max`] sessions.
    Full,
    /// The principal holds its maximum and every one of them is in use.
    PrincipalFull,
}

/// What a client answered to one `elicitation/create`: its result, or its
/// JSON-RPC error object.
pub type Answer = Result<Value, Value>;

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One 2025-11-25 session.
pub struct Session {
    /// The principal that initialized it; every later request must match.
    pub(super) principal: String,
    /// The elicitation modes declared in `initialize`.
    pub(super) modes: ElicitModes,
    /// `notifications/initialized` arrived.
    pub(super) initialized: AtomicBool,
    /// Next server request id (`s-N`).
    pub(super) next_id: AtomicU64,
    /// Elicitations waiting for the client's answer, by server request id.
    pub(super) pending: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    /// Calls in flight, woken by `notifications/cancelled`.
    pub(super) calls: Mutex<HashMap<RequestId, Arc<Notify>>>,
    /// Flips to `true` when the session is deleted.
    pub(super) closed: watch::Sender<bool>,
    get_stream: Mutex<Option<mpsc::Sender<String>>>,
    /// Bumped each time a GET stream opens (see [`Session::get_opened`]).
    get_opened: watch::Sender<u64>,
    get_next: AtomicU64,
    /// When a request last named it (ms since the Unix epoch).
    last_used_ms: AtomicU64,
    /// Order of last use among all sessions ([`USE_ORDER`]): breaks ties
    /// of `last_used_ms` (many uses fall in one millisecond), so the least
    /// recently used session is the one replaced.
    last_use: AtomicU64,
}

/// A process-wide counter, bumped on every session use.
static USE_ORDER: AtomicU64 = AtomicU64::new(0);

impl Session {
    /// A fresh session of `principal` that declared `modes`, opened at
    /// `now_ms`.
    pub(super) fn new(principal: String, modes: ElicitModes, now_ms: u64) -> Self {
        let (closed, _) = watch::channel(false);
        Session {
            principal,
            modes,
            initialized: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            calls: Mutex::new(HashMap::new()),
            closed,
            get_stream: Mutex::new(None),
            get_opened: watch::channel(0).0,
            get_next: AtomicU64::new(1),
            last_used_ms: AtomicU64::new(now_ms),
            last_use: AtomicU64::new(USE_ORDER.fetch_add(1, Ordering::Relaxed)),
        }
    }

    /// A request named this session at `now_ms`.
    pub(super) fn touch(&self, now_ms: u64) {
        self.last_used_ms.store(now_ms, Ordering::Relaxed);
        self.last_use
            .store(USE_ORDER.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
    }

    /// True while a call is in flight, an elicitation waits or the GET
    /// stream is open: such a session is never idle.
    pub(super) fn in_use(&self) -> bool {
        !lock(&self.calls).is_empty() || !lock(&self.pending).is_empty() || self.has_get_stream()
    }

    fn idle_since(&self, now_ms: u64, idle: Duration) -> bool {
        let last = self.last_used_ms.load(Ordering::Relaxed);
        let idle_ms = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX);
        !self.in_use() && now_ms.saturating_sub(last) >= idle_ms
    }

    /// Ends the session: its calls see it closed (their elicitations are
    /// cancelled), its GET stream ends, waiting answers are dropped.
    pub(super) fn close(&self) {
        self.closed.send_replace(true);
        self.close_get_stream();
        lock(&self.pending).clear();
    }

    /// Opens the session's GET stream: the receiving end of its events, or
    /// `None` when one is already open (a session has at most one).
    pub(super) fn open_get_stream(&self) -> Option<mpsc::Receiver<String>> {
        let mut slot = lock(&self.get_stream);
        if slot.as_ref().is_some_and(|tx| !tx.is_closed()) {
            return None;
        }
        let (tx, rx) = mpsc::channel(16);
        *slot = Some(tx);
        drop(slot);
        self.get_opened.send_modify(|n| *n += 1);
        Some(rx)
    }

    /// Changes each time a GET stream opens: subscribe before looking
    /// with [`Session::has_get_stream`] and no opening is missed.
    pub(super) fn get_opened(&self) -> watch::Receiver<u64> {
        self.get_opened.subscribe()
    }

    /// True while a client holds the GET stream open.
    pub(super) fn has_get_stream(&self) -> bool {
        lock(&self.get_stream)
            .as_ref()
            .is_some_and(|tx| !tx.is_closed())
    }

    /// Sends one message (JSON text) as an event on the GET stream; `false`
    /// when no stream is open or the client went away.
    pub(super) async fn send_on_get_stream(&self, data: &str) -> bool {
        let tx = lock(&self.get_stream).clone();
        let Some(tx) = tx else {
            return false;
        };
        let n = self.get_next.fetch_add(1, Ordering::Relaxed);
        tx.send(encode_event(Some(&format!("g{n}")), data))
            .await
            .is_ok()
    }

    /// Ends the GET stream, if any (the session is going away).
    pub(super) fn close_get_stream(&self) {
        lock(&self.get_stream).take();
    }
}

#[derive(Default)]
struct Table {
    by_id: HashMap<String, Arc<Session>>,
    by_principal: HashMap<String, HashSet<String>>,
}

impl Table {
    fn take(&mut self, id: &str) -> Option<Arc<Session>> {
        let s = self.by_id.remove(id)?;
        if let Some(ids) = self.by_principal.get_mut(&s.principal) {
            ids.remove(id);
            if ids.is_empty() {
                self.by_principal.remove(&s.principal);
            }
        }
        Some(s)
    }
}

/// All live sessions by id.
pub struct Sessions {
    limits: SessionLimits,
    clock: Clock,
    table: Mutex<Table>,
    /// Sessions that expired unused.
    pub expired: AtomicU64,
    /// Sessions replaced at their principal's limit.
    pub replaced: AtomicU64,
    /// Sessions of the largest holder replaced at the table's cap.
    pub shed: AtomicU64,
}

impl Sessions {
    /// An empty table with these limits; idleness by `clock`.
    pub fn new(limits: SessionLimits, clock: Clock) -> Self {
        Sessions {
            limits,
            clock,
            table: Mutex::new(Table::default()),
            expired: AtomicU64::new(0),
            replaced: AtomicU64::new(0),
            shed: AtomicU64::new(0),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> SessionLimits {
        self.limits
    }

    /// The live session with this id (one past its idle timeout is gone:
    /// it is closed and removed here, before the sweep gets to it).
    pub(super) fn get(&self, id: &str) -> Option<Arc<Session>> {
        let mut t = lock(&self.table);
        let s = t.by_id.get(id)?.clone();
        let now = self.clock.now_ms();
        if s.idle_since(now, self.limits.idle) {
            t.take(id);
            drop(t);
            s.close();
            self.expired.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        s.touch(now);
        Some(s)
    }

    /// Adds a session. At the principal's limit its least recently used
    /// idle session makes room: it is closed and returned (for the log).
    pub(super) fn insert(
        &self,
        id: String,
        s: Arc<Session>,
    ) -> Result<Option<Arc<Session>>, Refused> {
        let mut t = lock(&self.table);
        let mut replaced = None;
        let held = t.by_principal.get(&s.principal).map_or(0, HashSet::len);
        if held >= self.limits.per_principal {
            let victim = t.by_principal[&s.principal]
                .iter()
                .filter_map(|sid| t.by_id.get(sid).map(|x| (sid, x)))
                .filter(|(_, x)| !x.in_use())
                .min_by_key(|(_, x)| x.last_use.load(Ordering::Relaxed))
                .map(|(sid, _)| sid.clone());
            let Some(victim) = victim else {
                return Err(Refused::PrincipalFull);
            };
            replaced = t.take(&victim);
            if let Some(old) = &replaced {
                old.close();
                self.replaced.fetch_add(1, Ordering::Relaxed);
            }
        }
        if t.by_id.len() >= self.limits.max {
            let mine = t.by_principal.get(&s.principal).map_or(0, HashSet::len);
            let Some(victim) = largest_holders_idle_session(&t, mine + 1) else {
                return Err(Refused::Full);
            };
            if let Some(old) = t.take(&victim) {
                old.close();
                self.shed.fetch_add(1, Ordering::Relaxed);
            }
        }
        t.by_principal
            .entry(s.principal.clone())
            .or_default()
            .insert(id.clone());
        t.by_id.insert(id, s);
        Ok(replaced)
    }

    /// Removes a session.
    pub(super) fn remove(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.table).take(id)
    }

    /// Closes and removes every session idle past the timeout at `now_ms`;
    /// returns how many went.
    pub(super) fn expire(&self, now_ms: u64) -> usize {
        let gone: Vec<Arc<Session>> = {
            let mut t = lock(&self.table);
            let due: Vec<String> = t
                .by_id
                .iter()
                .filter(|(_, s)| s.idle_since(now_ms, self.limits.idle))
                .map(|(id, _)| id.clone())
                .collect();
            due.iter().filter_map(|id| t.take(id)).collect()
        };
        for s in &gone {
            s.close();
        }
        self.expired.fetch_add(gone.len() as u64, Ordering::Relaxed);
        gone.len()
    }

    /// Sessions alive.
    pub(super) fn len(&self) -> usize {
        lock(&self.table).by_id.len()
    }

    /// Sessions `principal` holds.
    #[cfg(test)]
    fn by_principal_len(&self, principal: &str) -> usize {
        lock(&self.table)
            .by_principal
            .get(principal)
            .map_or(0, HashSet::len)
    }
}

/// Most larger holders looked at for an idle session at the table's cap.
const MAX_HOLDERS_TRIED: usize = 16;

/// The least recently used idle session of the principal holding the most
/// sessions, among those holding more than `more_than` and having an idle
/// one (the largest [`MAX_HOLDERS_TRIED`] are looked at).
fn largest_holders_idle_session(t: &Table, more_than: usize) -> Option<String> {
    let mut holders: Vec<&HashSet<String>> = t
        .by_principal
        .values()
        .filter(|ids| ids.len() > more_than)
        .collect();
    holders.sort_unstable_by_key(|ids| std::cmp::Reverse(ids.len()));
    holders.into_iter().take(MAX_HOLDERS_TRIED).find_map(|ids| {
        ids.iter()
            .filter_map(|sid| t.by_id.get(sid).map(|x| (sid, x)))
            .filter(|(_, x)| !x.in_use())
            .min_by_key(|(_, x)| x.last_use.load(Ordering::Relaxed))
            .map(|(sid, _)| sid.clone())
    })
}

/// A new session id: 128 random bits as hex (visible ASCII).
pub(super) fn new_session_id() -> String {
    let b: [u8; 16] = rand::random();
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::now_ms;

    fn limits(per_principal: usize, max: usize) -> SessionLimits {
        SessionLimits {
            idle: Duration::from_secs(600),
            per_principal,
            max,
        }
    }

    fn session(p: &str) -> Arc<Session> {
        Arc::new(Session::new(p.into(), ElicitModes::default(), now_ms()))
    }

    #[test]
    fn a_principal_at_its_limit_replaces_its_least_recently_used_idle_session() {
        let t = Sessions::new(limits(2, 10), Clock::system());
        let a1 = session("alice");
        a1.last_used_ms.store(1, Ordering::Relaxed);
        assert!(t.insert("a1".into(), a1.clone()).unwrap().is_none());
        assert!(t.insert("a2".into(), session("alice")).unwrap().is_none());
        assert!(t.insert("b1".into(), session("bob")).unwrap().is_none());
        let gone = t.insert("a3".into(), session("alice")).unwrap();
        assert!(Arc::ptr_eq(&gone.unwrap(), &a1), "the oldest idle one goes");
        assert!(*a1.closed.borrow(), "and is closed");
        assert!(t.get("a1").is_none() && t.get("a2").is_some() && t.get("b1").is_some());
        // All of alice's sessions busy: refused.
        let _rx2 = t.get("a2").unwrap().open_get_stream().unwrap();
        let _rx3 = t.get("a3").unwrap().open_get_stream().unwrap();
        assert_eq!(
            t.insert("a4".into(), session("alice")).err(),
            Some(Refused::PrincipalFull)
        );
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn the_table_is_capped_and_idle_sessions_expire() {
        let t = Sessions::new(
            SessionLimits {
                idle: Duration::from_millis(100),
                ..limits(5, 2)
            },
            Clock::system(),
        );
        t.insert("1".into(), session("a")).unwrap();
        t.insert("2".into(), session("b")).unwrap();
        assert_eq!(
            t.insert("3".into(), session("c")).err(),
            Some(Refused::Full)
        );
        let busy = t.get("2").unwrap();
        let _rx = busy.open_get_stream().unwrap();
        let now = now_ms() + 1_000;
        assert_eq!(t.expire(now), 1, "the one with a GET stream is in use");
        assert_eq!(t.expired.load(Ordering::Relaxed), 1);
        assert!(t.get("1").is_none() && t.get("2").is_some());
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn at_the_cap_the_largest_holder_makes_room_for_a_smaller_one() {
        let t = Sessions::new(limits(5, 6), Clock::system());
        for i in 0..4 {
            t.insert(format!("m{i}"), session("mallory")).unwrap();
        }
        t.insert("b0".into(), session("bob")).unwrap();
        t.insert("b1".into(), session("bob")).unwrap();
        // Full: alice (0) takes one of mallory's (4), the least recently used.
        t.get("m0");
        assert!(t.insert("a0".into(), session("alice")).unwrap().is_none());
        assert!(t.get("m1").is_none() && t.get("m0").is_some());
        assert_eq!((t.len(), t.shed.load(Ordering::Relaxed)), (6, 1));
        // Mallory's left busy: bob's (2) go next, not alice's (1).
        let _streams: Vec<_> = ["m0", "m2", "m3"]
            .iter()
            .map(|id| t.get(id).unwrap().open_get_stream().unwrap())
            .collect();
        assert!(t.insert("c0".into(), session("carol")).is_ok());
        assert_eq!(t.by_principal_len("bob"), 1);
        // Nobody holds more than two then: a third of mallory's is refused.
        assert_eq!(
            t.insert("m9".into(), session("mallory")).err(),
            Some(Refused::Full)
        );
        assert_eq!(t.len(), 6);
    }

    #[tokio::test]
    async fn one_get_stream_per_session_and_it_can_be_reopened() {
        let s = Session::new("a".into(), ElicitModes::default(), now_ms());
        assert!(!s.has_get_stream());
        assert!(!s.send_on_get_stream("{}").await);
        let mut rx = s.open_get_stream().expect("first stream");
        assert!(s.has_get_stream());
        assert!(s.open_get_stream().is_none(), "a second one is refused");
        assert!(s.send_on_get_stream("{\"x\":1}").await);
        let ev = rx.recv().await.unwrap();
        assert!(ev.contains("id: g1") && ev.contains("{\"x\":1}"), "{ev}");
        drop(rx);
        assert!(!s.has_get_stream());
        let _rx = s.open_get_stream().expect("reopened after the client left");
        s.close_get_stream();
        assert!(!s.has_get_stream());
    }
}
