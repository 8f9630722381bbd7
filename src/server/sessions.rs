//! 2025-11-25 sessions: who owns one, what it declared, the elicitations
//! and calls in flight on it, and its standalone GET stream (one per
//! session) for server messages not tied to a request.
//!
//! The legacy handler drives these; [`super::app::App`] only holds the map.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::{Notify, mpsc, oneshot, watch};

use crate::protocol::capabilities::ElicitModes;
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::sse::encode_event;

/// Most sessions alive at once; `initialize` beyond it gets 503.
pub const MAX_SESSIONS: usize = 50_000;

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
    get_next: AtomicU64,
}

impl Session {
    /// A fresh session of `principal` that declared `modes`.
    pub(super) fn new(principal: String, modes: ElicitModes) -> Self {
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
            get_next: AtomicU64::new(1),
        }
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
        Some(rx)
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

/// All live sessions by id.
#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
}

impl Sessions {
    /// The session with this id.
    pub(super) fn get(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.map).get(id).cloned()
    }

    /// Adds a session; `false` when [`MAX_SESSIONS`] are alive.
    pub(super) fn insert(&self, id: String, s: Arc<Session>) -> bool {
        let mut m = lock(&self.map);
        if m.len() >= MAX_SESSIONS {
            return false;
        }
        m.insert(id, s);
        true
    }

    /// Removes a session.
    pub(super) fn remove(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.map).remove(id)
    }
}

/// A new session id: 128 random bits as hex (visible ASCII).
pub(super) fn new_session_id() -> String {
    let b: [u8; 16] = rand::random();
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_get_stream_per_session_and_it_can_be_reopened() {
        let s = Session::new("a".into(), ElicitModes::default());
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
