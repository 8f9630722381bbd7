//! Ctrl-C and SIGTERM stop a run one way: the run ends, its report is
//! written and marked, and the process exits with the signal's own code
//! (130 for SIGINT, 143 for SIGTERM, the shell's 128 + signal number).
//! Kubernetes stops a pod with SIGTERM, so a load or fuzz run in a Job
//! keeps its report as one stopped at a terminal does.
//!
//! [`listen`] takes both signals for the process (once; later calls do
//! nothing); [`received`] says whether one came. The runs poll it where
//! they already check their stop conditions. A second signal exits at once
//! with the same code, for a run that does not stop soon enough.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

/// A signal that stops a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM (`kill`, Kubernetes, systemd).
    Terminate,
}

impl Signal {
    /// The exit code of a process it stopped: 128 + the signal's number.
    pub fn exit_code(self) -> u8 {
        match self {
            Signal::Interrupt => 130,
            Signal::Terminate => 143,
        }
    }

    /// How a report says the run ended.
    pub fn note(self) -> &'static str {
        match self {
            Signal::Interrupt => "stopped by Ctrl-C (SIGINT)",
            Signal::Terminate => "stopped by SIGTERM",
        }
    }

    fn code(self) -> u8 {
        match self {
            Signal::Interrupt => 1,
            Signal::Terminate => 2,
        }
    }

    fn from_code(c: u8) -> Option<Signal> {
        match c {
            1 => Some(Signal::Interrupt),
            2 => Some(Signal::Terminate),
            _ => None,
        }
    }
}

/// The first signal received (0: none).
static RECEIVED: AtomicU8 = AtomicU8::new(0);

/// Set once the handlers are installed.
static LISTENING: OnceLock<()> = OnceLock::new();

/// The first stopping signal this process received, if any.
pub fn received() -> Option<Signal> {
    Signal::from_code(RECEIVED.load(Ordering::Relaxed))
}

/// Notes `s` as received; a second signal exits at once with its code.
pub fn note(s: Signal) {
    if RECEIVED
        .compare_exchange(0, s.code(), Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
    {
        eprintln!("elicitkit: {} again: exiting now", s.note());
        std::process::exit(i32::from(s.exit_code()));
    }
    eprintln!(
        "elicitkit: {}: stopping and writing the report (again to exit now)",
        s.note()
    );
}

/// Takes SIGINT and SIGTERM for this process from now on (inside a tokio
/// runtime; once per process). Without a runtime, or where the handlers
/// cannot be installed, the signals keep their default action.
pub fn listen() {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    LISTENING.get_or_init(|| {
        use tokio::signal::unix::{SignalKind, signal};
        let _entered = rt.enter();
        for (kind, s) in [
            (SignalKind::interrupt(), Signal::Interrupt),
            (SignalKind::terminate(), Signal::Terminate),
        ] {
            // Registered here and now: a signal that arrives before the
            // task first runs is kept for it.
            let Ok(mut stream) = signal(kind) else {
                continue;
            };
            rt.spawn(async move {
                while stream.recv().await.is_some() {
                    note(s);
                }
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_signal_exits_with_its_own_code() {
        assert_eq!(Signal::Interrupt.exit_code(), 130);
        assert_eq!(Signal::Terminate.exit_code(), 143);
        for s in [Signal::Interrupt, Signal::Terminate] {
            assert_eq!(Signal::from_code(s.code()), Some(s));
        }
        assert_eq!(Signal::from_code(0), None);
    }
}
