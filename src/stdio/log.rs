//! What a stdio target did besides answering: lines on stdout that are not
//! JSON-RPC messages, and every exit of a child with its status and stderr
//! tail, each of a [`Kind`] of process (a 2025-11-25 session's own, or one
//! a principal's 2026-07-28 requests share). The stdio checks
//! ([`crate::check::stdio`], each generation's rules over its kind) and
//! `fuzz`'s crash oracle read it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Lines of noise kept as evidence; the rest are only counted.
const KEPT: usize = 8;
/// Characters kept of each such line.
const LINE_CHARS: usize = 200;

/// Which processes: the bridge starts one per 2025-11-25 session, and one
/// each principal's other requests share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    /// Every process.
    #[default]
    All,
    /// The processes of 2025-11-25 sessions (`initialize` starts one).
    Sessions,
    /// The processes shared by a principal's other requests (2026-07-28).
    Shared,
}

impl Kind {
    /// The kind of a process that serves sessions (`session`) or not.
    pub fn of(session: bool) -> Kind {
        if session {
            Kind::Sessions
        } else {
            Kind::Shared
        }
    }

    /// Whether a process of kind `k` is one of these.
    pub fn holds(self, k: Kind) -> bool {
        self == Kind::All || self == k
    }
}

/// One child exit.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Exit {
    /// Its pid.
    pub pid: u32,
    /// How it ended (`exit status: 1`, `signal: 6 (SIGABRT)`).
    pub status: String,
    /// The last bytes it wrote to stderr.
    pub stderr_tail: String,
    /// We stopped it (end of a session, end of the run): no finding.
    pub expected: bool,
    /// Which kind of process it was.
    pub kind: Kind,
}

/// The record of everything the stdio children did outside their replies.
#[derive(Debug, Default)]
pub struct Log {
    /// The first noise lines of each kind of process.
    noise: Mutex<Vec<(Kind, String)>>,
    /// Noise lines of sessions, of shared processes.
    noise_count: [AtomicU64; 2],
    exits: Mutex<Vec<Exit>>,
    /// Processes started: sessions, shared.
    spawned: [AtomicU64; 2],
    /// Sessions that took over an idle process ([`super::warm`]).
    reused: AtomicU64,
}

/// The slot of a process kind in the counters.
fn slot(k: Kind) -> usize {
    usize::from(k == Kind::Shared)
}

/// The sum of the counters `kind` covers.
fn count(c: &[AtomicU64; 2], kind: Kind) -> u64 {
    c.iter()
        .enumerate()
        .filter(|(i, _)| kind == Kind::All || *i == slot(kind))
        .map(|(_, n)| n.load(Ordering::Relaxed))
        .sum()
}

fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(LINE_CHARS).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// The last `n` lines of `text` (a stderr tail), in order.
pub fn last_lines(text: &str, n: usize) -> Vec<&str> {
    let mut v: Vec<&str> = text.lines().rev().take(n).collect();
    v.reverse();
    v
}

impl Exit {
    /// The last `n` lines it wrote to stderr.
    pub fn stderr_last(&self, n: usize) -> Vec<&str> {
        last_lines(&self.stderr_tail, n)
    }
}

impl Log {
    /// A line on stdout that is not a JSON-RPC message.
    pub fn noise(&self, kind: Kind, line: &[u8]) {
        self.noise_count[slot(kind)].fetch_add(1, Ordering::Relaxed);
        if let Ok(mut v) = self.noise.lock()
            && v.iter().filter(|(k, _)| *k == kind).count() < KEPT
        {
            v.push((kind, clip(&String::from_utf8_lossy(line))));
        }
    }

    /// A child exited.
    pub fn exited(&self, e: Exit) {
        if let Ok(mut v) = self.exits.lock() {
            v.push(e);
        }
    }

    /// A child of `kind` was started.
    pub fn spawned(&self, kind: Kind) {
        self.spawned[slot(kind)].fetch_add(1, Ordering::Relaxed);
    }

    /// A session took over an idle process.
    pub fn session_reused(&self) {
        self.reused.fetch_add(1, Ordering::Relaxed);
    }

    /// How many sessions took over an idle process.
    pub fn reuse_count(&self) -> u64 {
        self.reused.load(Ordering::Relaxed)
    }

    /// The first noise lines (clipped).
    pub fn noise_lines(&self) -> Vec<String> {
        self.noise_lines_of(Kind::All)
    }

    /// The first noise lines of processes of `kind`.
    pub fn noise_lines_of(&self, kind: Kind) -> Vec<String> {
        self.noise
            .lock()
            .map(|v| {
                v.iter()
                    .filter(|(k, _)| kind.holds(*k))
                    .map(|(_, l)| l.clone())
                    .take(KEPT)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// How many noise lines there were.
    pub fn noise_count(&self) -> u64 {
        self.noise_count_of(Kind::All)
    }

    /// How many noise lines processes of `kind` wrote.
    pub fn noise_count_of(&self, kind: Kind) -> u64 {
        count(&self.noise_count, kind)
    }

    /// Every exit so far.
    pub fn exits(&self) -> Vec<Exit> {
        self.exits.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// Exits we did not ask for.
    pub fn crashes(&self) -> Vec<Exit> {
        self.crashes_of(Kind::All)
    }

    /// Exits we did not ask for, of processes of `kind`.
    pub fn crashes_of(&self, kind: Kind) -> Vec<Exit> {
        self.exits()
            .into_iter()
            .filter(|e| !e.expected && kind.holds(e.kind))
            .collect()
    }

    /// How many exits we did not ask for (without copying them).
    pub fn crash_count(&self) -> usize {
        self.exits
            .lock()
            .map(|v| v.iter().filter(|e| !e.expected).count())
            .unwrap_or(0)
    }

    /// How many children were started.
    pub fn spawn_count(&self) -> u64 {
        self.spawn_count_of(Kind::All)
    }

    /// How many children of `kind` were started.
    pub fn spawn_count_of(&self, kind: Kind) -> u64 {
        count(&self.spawned, kind)
    }
}
