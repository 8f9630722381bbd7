//! The live progress line on stderr: rewritten in place every second on a
//! terminal, a plain line every 5 s otherwise (logs get no escapes). Shared
//! by the run watcher and the wait for a synchronized start.

use std::io::{IsTerminal, Write as _};
use std::time::{Duration, Instant};

/// One progress line and when it was last printed.
#[derive(Debug)]
pub struct ProgressLine {
    tty: bool,
    last: Option<Instant>,
    printed: bool,
}

impl ProgressLine {
    /// A line whose first print is due at once (`immediate`) or one
    /// interval from now.
    pub fn new(immediate: bool) -> Self {
        ProgressLine {
            tty: std::io::stderr().is_terminal(),
            last: (!immediate).then(Instant::now),
            printed: false,
        }
    }

    /// Whether a line is due now; if so, it counts as printed now.
    pub fn due(&mut self) -> bool {
        let every = Duration::from_secs(if self.tty { 1 } else { 5 });
        if self.last.is_some_and(|t| t.elapsed() < every) {
            return false;
        }
        self.last = Some(Instant::now());
        true
    }

    /// Prints `line`: over the previous one on a terminal, else on its own.
    pub fn print(&mut self, line: &str) {
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
        self.printed = true;
    }

    /// Ends an in-place line with a newline, so what follows starts clean.
    pub fn finish(&self) {
        if self.printed && self.tty {
            let _ = writeln!(std::io::stderr());
        }
    }
}
