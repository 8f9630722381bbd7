//! What a stdio target did besides answering: lines on stdout that are not
//! JSON-RPC messages, and every exit of a child with its status and stderr
//! tail. The stdio checks
//! ([`crate::check::stdio`]) and `fuzz`'s crash oracle read it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Lines of noise kept as evidence; the rest are only counted.
const KEPT: usize = 8;
/// Characters kept of each such line.
const LINE_CHARS: usize = 200;

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
}

/// The record of everything the stdio children did outside their replies.
#[derive(Debug, Default)]
pub struct Log {
    noise: Mutex<Vec<String>>,
    noise_count: AtomicU64,
    exits: Mutex<Vec<Exit>>,
    spawned: AtomicU64,
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
    pub fn noise(&self, line: &[u8]) {
        self.noise_count.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut v) = self.noise.lock()
            && v.len() < KEPT
        {
            v.push(clip(&String::from_utf8_lossy(line)));
        }
    }

    /// A child exited.
    pub fn exited(&self, e: Exit) {
        if let Ok(mut v) = self.exits.lock() {
            v.push(e);
        }
    }

    /// A child was started.
    pub fn spawned(&self) {
        self.spawned.fetch_add(1, Ordering::Relaxed);
    }

    /// The first noise lines (clipped).
    pub fn noise_lines(&self) -> Vec<String> {
        self.noise.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// How many noise lines there were.
    pub fn noise_count(&self) -> u64 {
        self.noise_count.load(Ordering::Relaxed)
    }

    /// Every exit so far.
    pub fn exits(&self) -> Vec<Exit> {
        self.exits.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// Exits we did not ask for.
    pub fn crashes(&self) -> Vec<Exit> {
        self.exits().into_iter().filter(|e| !e.expected).collect()
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
        self.spawned.load(Ordering::Relaxed)
    }
}
