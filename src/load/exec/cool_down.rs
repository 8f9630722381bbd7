//! A soak's cool-down: no load for a while, so the target's health samples
//! show whether what grew under load is given back. Ends early on Ctrl-C
//! or when the target process is gone.

use super::progress::ProgressLine;
use crate::load::metrics::health;
use std::time::{Duration, Instant};

/// Why a cool-down ended before its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutShort {
    /// Ctrl-C.
    Interrupted,
    /// The target process exited.
    TargetGone,
}

/// Waits `len` with no load, watching `pid` twice a second; a progress
/// line on stderr when `progress`.
pub async fn wait(len: Duration, pid: u32, progress: bool, label: &str) -> Result<(), CutShort> {
    let started = Instant::now();
    let mut line = ProgressLine::new(true);
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let result = loop {
        let left = len.saturating_sub(started.elapsed());
        if left.is_zero() {
            break Ok(());
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
        tokio::select! {
            _ = tokio::time::sleep(left.min(Duration::from_millis(500))) => {}
            _ = &mut ctrl_c => break Err(CutShort::Interrupted),
        }
    };
    line.finish();
    result
}
