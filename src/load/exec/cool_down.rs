//! A soak's cool-down: no load for a while, so the target's health samples
//! show whether what grew under load is given back. Ends early on Ctrl-C
//! or SIGTERM ([`crate::interrupt`]) or when the target process is gone.

use super::progress::ProgressLine;
use crate::load::metrics::health;
use std::time::{Duration, Instant};

/// Why a cool-down ended before its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutShort {
    /// Ctrl-C or SIGTERM.
    Interrupted(crate::interrupt::Signal),
    /// The target process exited.
    TargetGone,
}

/// Waits `len` with no load, watching `pid` and the signals four times a second; a progress
/// line on stderr when `progress`.
pub async fn wait(len: Duration, pid: u32, progress: bool, label: &str) -> Result<(), CutShort> {
    let started = Instant::now();
    let mut line = ProgressLine::new(true);
    let result = loop {
        let left = len.saturating_sub(started.elapsed());
        if left.is_zero() {
            break Ok(());
        }
        if let Some(sig) = crate::interrupt::received() {
            break Err(CutShort::Interrupted(sig));
        }
        if !health::alive(pid) {
            break Err(CutShort::TargetGone);
        }
        if progress && line.due() {
            line.print(&format!(
                "{label} cool-down, no load: {:.0}s/{:.0}s",
                started.elapsed().as_secs_f64(),
                len.as_secs_f64()
            ));
        }
        tokio::time::sleep(left.min(Duration::from_millis(250))).await;
    };
    line.finish();
    result
}
