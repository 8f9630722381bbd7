//! Ctrl-C during `check`: the CLI raises the interrupt once, every check
//! still without a verdict ends at once as a skip saying so, and the run
//! returns the partial report (marked interrupted) for the CLI to write.
//! Process-wide, as a signal is.

use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::Notify;

static RAISED: AtomicBool = AtomicBool::new(false);
static WAKE: Notify = Notify::const_new();

/// Interrupts the run (idempotent).
pub fn raise() {
    RAISED.store(true, Ordering::SeqCst);
    WAKE.notify_waiters();
}

/// Whether the run was interrupted.
pub fn raised() -> bool {
    RAISED.load(Ordering::SeqCst)
}

/// Resolves once the run is interrupted.
pub async fn wait() {
    loop {
        let woken = WAKE.notified();
        tokio::pin!(woken);
        // Registered before the flag is read, so a raise in between wakes it.
        woken.as_mut().enable();
        if raised() {
            return;
        }
        woken.await;
    }
}

/// The skip reason of a check the interrupt stopped.
pub const SKIPPED: &str = "interrupted (Ctrl-C) before its verdict";
