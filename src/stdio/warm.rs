//! Warm session processes, for `fuzz` ([`Reuse::Warm`]): starting a
//! process for every 2025-11-25 session is what a stdio client pays, and a
//! fuzz case is a session, so a run spent its time starting interpreters.
//!
//! A session process that ended cleanly (its `DELETE` came with nothing in
//! flight, every line sent to it was answered or read past, and it still
//! runs) waits idle for the next session of the same principal that opens
//! with the same `initialize` params. That session gets the process and,
//! as its `initialize` reply, the reply the process gave to that same
//! request (the id put back); its `notifications/initialized` is not sent
//! again. A process that exited, still had a request in flight, or was
//! sent a line it neither answered nor read past is stopped, never handed
//! on. Over HTTP one server process serves every session too; what a
//! session leaves in the server's state is what it leaves there.

use super::pipe::Pipe;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// How the bridge spends processes on 2025-11-25 sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reuse {
    /// A process per session, as a stdio client starts one (`check`: each
    /// process's own behaviour is the evidence), and a line that is not a
    /// valid request waits [`super::bridge::NULL_ID_WAIT`] for its reply.
    #[default]
    Never,
    /// Sessions reuse idle processes (above), and silence after a line
    /// that is not a valid request is told by a `ping` sent after it
    /// (`fuzz`: thousands of cases).
    Warm,
}

/// Idle processes kept at once (the oldest is stopped beyond this).
pub const MAX_IDLE: usize = 4;

/// How a session opened: what it can be reused for.
#[derive(Debug, Clone)]
struct Opened {
    principal: String,
    /// The `initialize` params the process was started with.
    params: Value,
    /// The process's response to that `initialize`.
    reply: Value,
    /// Reused: its `notifications/initialized` is not sent again.
    skip_initialized: bool,
}

/// The sessions that may be reused, and the idle processes.
#[derive(Default)]
pub struct Warm {
    opened: Mutex<HashMap<String, Opened>>,
    idle: Mutex<VecDeque<(Opened, Arc<Pipe>)>>,
}

/// `msg`'s id replaced by `id`.
fn with_id(msg: &Value, id: &Value) -> Value {
    let mut m = msg.clone();
    m["id"] = id.clone();
    m
}

impl Warm {
    /// An idle process for a session of `principal` opening with
    /// `params`, and the reply to give its `initialize` (whose id is
    /// `id`); exited ones are dropped on the way.
    pub fn take(&self, principal: &str, params: &Value, id: &Value) -> Option<(Arc<Pipe>, Value)> {
        let mut idle = self.idle.lock().ok()?;
        idle.retain(|(_, p)| !p.has_exited());
        let at = idle
            .iter()
            .position(|(o, _)| o.principal == principal && o.params == *params)?;
        let (o, p) = idle.remove(at)?;
        Some((p, with_id(&o.reply, id)))
    }

    /// Session `sid` opened on a fresh process with `params`, answered
    /// `reply` (kept only when it is a result).
    pub fn opened(&self, sid: &str, principal: &str, params: &Value, reply: &Value) {
        if reply.get("result").is_none() {
            return;
        }
        if let Ok(mut m) = self.opened.lock() {
            m.insert(
                sid.to_owned(),
                Opened {
                    principal: principal.to_owned(),
                    params: params.clone(),
                    reply: reply.clone(),
                    skip_initialized: false,
                },
            );
        }
    }

    /// Session `sid` got the idle process of `principal` opened with
    /// `params` (from [`Warm::take`]; `reply` is what it was answered).
    pub fn reopened(&self, sid: &str, principal: &str, params: &Value, reply: &Value) {
        self.opened(sid, principal, params, reply);
        if let Ok(mut m) = self.opened.lock()
            && let Some(o) = m.get_mut(sid)
        {
            o.skip_initialized = true;
        }
    }

    /// Whether session `sid`'s `notifications/initialized` is not to be
    /// sent (its process had one already); true once.
    pub fn skip_initialized(&self, sid: &str) -> bool {
        self.opened
            .lock()
            .ok()
            .and_then(|mut m| {
                m.get_mut(sid)
                    .map(|o| std::mem::replace(&mut o.skip_initialized, false))
            })
            .unwrap_or(false)
    }

    /// Session `sid` ended with its process `pipe`: kept idle when it may
    /// be reused; returns the processes to stop (it, or the oldest idle).
    pub fn release(&self, sid: &str, pipe: Arc<Pipe>) -> Vec<Arc<Pipe>> {
        let opened = self.opened.lock().ok().and_then(|mut m| m.remove(sid));
        let Some(o) = opened.filter(|_| pipe.reusable()) else {
            return vec![pipe];
        };
        let Ok(mut idle) = self.idle.lock() else {
            return vec![pipe];
        };
        idle.push_back((o, pipe));
        let mut out = Vec::new();
        while idle.len() > MAX_IDLE {
            if let Some((_, p)) = idle.pop_front() {
                out.push(p);
            }
        }
        out
    }

    /// Forgets session `sid` (its process is stopped elsewhere).
    pub fn forget(&self, sid: &str) {
        if let Ok(mut m) = self.opened.lock() {
            m.remove(sid);
        }
    }

    /// Every idle process (for the bridge's stop).
    pub fn drain(&self) -> Vec<Arc<Pipe>> {
        self.idle
            .lock()
            .map(|mut v| v.drain(..).map(|(_, p)| p).collect())
            .unwrap_or_default()
    }
}
