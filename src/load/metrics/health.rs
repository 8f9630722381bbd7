//! The target process's health over time, read from `/proc/PID` (Linux):
//! resident memory (`status` `VmRSS`), open descriptors (entries of `fd/`)
//! and threads (`status` `Threads`). A [`Sampler`] takes one reading per
//! report interval from just before the load until it is finished.

use crate::report::HealthSample;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Most samples one run keeps (over a day at 1 s): memory stays bounded.
pub const MAX_SAMPLES: usize = 100_000;

/// One reading of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// Resident memory, bytes.
    pub rss_bytes: u64,
    /// Open file descriptors.
    pub fds: u64,
    /// Threads.
    pub threads: u64,
}

/// Reads process `pid`; `None` when it is gone or `/proc` cannot be read.
pub fn read(pid: u32) -> Option<Reading> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let (rss_kib, threads) = parse_status(&status)?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some(Reading {
        rss_bytes: rss_kib * 1024,
        fds,
        threads,
    })
}

/// `VmRSS` (KiB) and `Threads` from a `/proc/PID/status` text.
pub fn parse_status(status: &str) -> Option<(u64, u64)> {
    let field = |name: &str| {
        status.lines().find_map(|l| {
            l.strip_prefix(name)?
                .strip_prefix(':')?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
    };
    Some((field("VmRSS")?, field("Threads")?))
}

/// Whether process `pid` still runs: its `/proc/PID/stat` exists and does
/// not say zombie or dead. A `stat` that cannot be read for another reason
/// (e.g. this process out of descriptors) is not taken as an exit.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rfind(')')
            .and_then(|at| s[at + 1..].split_whitespace().next())
            .is_none_or(|st| st != "Z" && st != "X"),
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    }
}

/// Whether `/proc/PID` can be read for health (the process exists and is
/// ours to inspect).
pub fn readable(pid: u32) -> bool {
    read(pid).is_some()
}

/// Samples one process once per `interval` on the async runtime until
/// [`Sampler::finish`]; stops by itself when the process is gone or after
/// [`MAX_SAMPLES`].
pub struct Sampler {
    pid: u32,
    started: Instant,
    started_unix: f64,
    samples: Arc<Mutex<Vec<HealthSample>>>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    /// Takes the first reading now and starts the loop (needs a tokio runtime).
    pub fn start(pid: u32, interval: Duration) -> Sampler {
        let interval = interval.max(Duration::from_millis(50));
        let started = Instant::now();
        let started_unix = crate::load::metrics::hlog::unix_seconds(SystemTime::now());
        let samples = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        take(pid, started, &samples);
        let task = {
            let (samples, stop) = (samples.clone(), stop.clone());
            tokio::spawn(async move {
                let mut tick =
                    tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                while !stop.load(Ordering::Relaxed) {
                    tick.tick().await;
                    if stop.load(Ordering::Relaxed) || !take(pid, started, &samples) {
                        break;
                    }
                }
            })
        };
        Sampler {
            pid,
            started,
            started_unix,
            samples,
            stop,
            task,
        }
    }

    /// The process sampled.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// When sampling began, Unix seconds.
    pub fn started_unix(&self) -> f64 {
        self.started_unix
    }

    /// Seconds since sampling began.
    pub fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Stops the loop, takes a last reading, and returns every sample.
    pub async fn finish(self) -> Vec<HealthSample> {
        self.stop.store(true, Ordering::Relaxed);
        self.task.abort();
        let _ = self.task.await;
        take(self.pid, self.started, &self.samples);
        std::mem::take(&mut *self.samples.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Appends one reading; false when the process is gone or the sample cap
/// is reached (a reading that fails while it runs is skipped).
fn take(pid: u32, started: Instant, samples: &Mutex<Vec<HealthSample>>) -> bool {
    let Some(r) = read(pid) else {
        return alive(pid);
    };
    let mut s = samples.lock().unwrap_or_else(|p| p.into_inner());
    if s.len() >= MAX_SAMPLES {
        return false;
    }
    s.push(HealthSample {
        t_s: started.elapsed().as_secs_f64(),
        rss_bytes: r.rss_bytes,
        fds: r.fds,
        threads: r.threads,
    });
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_read() {
        let text = "Name:\telicitkit\nVmPeak:\t  9000 kB\nVmRSS:\t   4321 kB\nThreads:\t7\n";
        assert_eq!(parse_status(text), Some((4321, 7)));
        assert_eq!(parse_status("Name:\tx\nThreads:\t7\n"), None, "no VmRSS");
        assert_eq!(parse_status("VmRSSx:\t1 kB\nThreads:\t2\n"), None);
    }

    #[test]
    fn this_process_reads_as_alive() {
        let r = read(std::process::id()).expect("our own /proc entry");
        assert!(r.rss_bytes > 0 && r.fds >= 3 && r.threads >= 1, "{r:?}");
        assert!(alive(std::process::id()));
        assert!(read(u32::MAX).is_none() && !alive(u32::MAX));
    }
}
