//! Re-runs of a stdio target's `repro.sh` beside the fuzzing: each starts
//! its own server process behind its own `elicitkit bridge` (about a
//! second of process start-up, which in line cost fuzz over stdio most of
//! its executions), so it runs as a task while the cases go on, at most
//! [`AT_ONCE`] at a time. An HTTP target's re-runs stay in line: they talk
//! to the server being fuzzed, and a re-run beside the cases would change
//! what the cases meet. Every re-run is settled before the summary is
//! written; one cut short by Ctrl-C or SIGTERM is "unknown", saying so.

use super::Finding;
use super::group::Groups;
use super::repro;
use super::rerun;
use super::summary::{Reproduced, Verdict};
use std::path::PathBuf;
use tokio::task::JoinHandle;

/// Re-runs going at once; one more waits for the oldest.
pub const AT_ONCE: usize = 2;

/// What a pending re-run's summary row says until it is settled.
pub const PENDING: &str = "re-running repro.sh";

struct Pending {
    /// The finding's folder name (its summary row's `dir`).
    dir: String,
    fdir: PathBuf,
    finding: Finding,
    task: JoinHandle<Verdict>,
}

/// The re-runs still going.
#[derive(Default)]
pub struct Reruns {
    pending: Vec<Pending>,
}

impl Reruns {
    /// Starts re-running `fdir/repro.sh` for `f`, filed as `dir`, waiting
    /// first for the oldest when [`AT_ONCE`] are going.
    pub async fn start(&mut self, groups: &mut Groups, dir: String, fdir: PathBuf, f: &Finding) {
        while self.pending.len() >= AT_ONCE {
            let p = self.pending.remove(0);
            settle(groups, p, None).await;
        }
        let (d, finding) = (fdir.clone(), f.clone());
        let task = tokio::spawn(async move { rerun::rerun(&d, &finding).await });
        self.pending.push(Pending {
            dir,
            fdir,
            finding: f.clone(),
            task,
        });
    }

    /// Settles the re-runs that have finished, in the order started.
    pub async fn settle_finished(&mut self, groups: &mut Groups) {
        let (done, going) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| p.task.is_finished());
        self.pending = going;
        for p in done {
            settle(groups, p, None).await;
        }
    }

    /// Settles every re-run: waits for each (each is bounded by its own
    /// time limit), or with `cut_short` (the run was interrupted) stops
    /// them and says why.
    pub async fn settle_all(&mut self, groups: &mut Groups, cut_short: Option<&str>) {
        for p in std::mem::take(&mut self.pending) {
            settle(groups, p, cut_short).await;
        }
    }
}

/// Waits for (or stops) one re-run, writes its `finding.json` and puts
/// its verdict on the summary row.
async fn settle(groups: &mut Groups, p: Pending, cut_short: Option<&str>) {
    let verdict = match cut_short {
        Some(why) if !p.task.is_finished() => {
            p.task.abort();
            Verdict::new(
                Reproduced::Unknown,
                format!("the run was {why} before repro.sh's re-run ended"),
            )
        }
        _ => p.task.await.unwrap_or_else(|e| {
            Verdict::new(Reproduced::Unknown, format!("re-running repro.sh: {e}"))
        }),
    };
    if let Err(e) = repro::write_finding(&p.fdir, &p.finding, &verdict) {
        eprintln!("{}: could not write finding.json: {e}", p.fdir.display());
    }
    if let Some(row) = groups.listed.iter_mut().find(|l| l.dir == p.dir) {
        row.rerun = verdict;
    }
}
