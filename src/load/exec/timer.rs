//! A sub-millisecond sleep inside the async runtime, for the open model's
//! schedule.
//!
//! tokio's timer wheel rounds every sleep up to the next millisecond, which
//! an open-model run would report as latency the target never caused. On
//! Linux, [`PreciseTimer`] arms a `timerfd` (`CLOCK_MONOTONIC`, nanosecond
//! resolution) and waits for it through the runtime's own epoll, so the
//! schedule needs no thread of its own and no cross-thread wake-up per
//! round trip. Elsewhere it falls back to `tokio::time::sleep_until`
//! (millisecond resolution).

use std::time::Instant;

/// A one-shot timer that can be re-armed for each deadline.
#[derive(Debug)]
pub struct PreciseTimer {
    #[cfg(target_os = "linux")]
    fd: tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>,
    /// Deadline the timer is armed for, if any.
    armed: Option<Instant>,
}

impl PreciseTimer {
    /// A disarmed timer; must be created inside the tokio runtime.
    #[cfg(target_os = "linux")]
    pub fn new() -> std::io::Result<Self> {
        use std::os::fd::FromRawFd;
        // SAFETY: timerfd_create takes no pointers; a non-negative return is
        // a fresh descriptor that only this OwnedFd owns.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is valid and owned by nobody else.
        let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        // SAFETY: an OwnedFd stays open, and keeps returning the same
        // descriptor, until the AsyncFd that owns it is dropped.
        let fd =
            unsafe { tokio::io::unix::AsyncFd::register(owned) }.map_err(|e| e.into_parts().1)?;
        Ok(PreciseTimer { fd, armed: None })
    }

    /// A timer on tokio's millisecond wheel.
    #[cfg(not(target_os = "linux"))]
    pub fn new() -> std::io::Result<Self> {
        Ok(PreciseTimer { armed: None })
    }

    /// Completes at `deadline` (at once if it has passed). Cancel-safe: a
    /// dropped wait leaves the timer armed for the same deadline.
    #[cfg(target_os = "linux")]
    pub async fn sleep_until(&mut self, deadline: Instant) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        loop {
            let now = Instant::now();
            if deadline <= now {
                return Ok(());
            }
            if self.armed != Some(deadline) {
                let left = deadline - now;
                let spec = libc::itimerspec {
                    it_interval: libc::timespec {
                        tv_sec: 0,
                        tv_nsec: 0,
                    },
                    it_value: libc::timespec {
                        tv_sec: left.as_secs() as libc::time_t,
                        // Never zero: a zero value disarms the timer.
                        tv_nsec: left.subsec_nanos().max(1) as libc::c_long,
                    },
                };
                // SAFETY: valid descriptor, pointer to a live itimerspec, no
                // old value requested.
                let rc = unsafe {
                    libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut())
                };
                if rc < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                self.armed = Some(deadline);
            }
            let mut guard = self.fd.readable().await?;
            let fired = guard.try_io(|fd| {
                let mut expirations = [0u8; 8];
                // SAFETY: reads at most 8 bytes into a live 8-byte buffer.
                let n = unsafe { libc::read(fd.as_raw_fd(), expirations.as_mut_ptr().cast(), 8) };
                if n < 0 {
                    Err(std::io::Error::last_os_error())
                } else {
                    Ok(())
                }
            });
            if let Ok(result) = fired {
                result?;
                self.armed = None;
            }
            // Not yet readable (a stale readiness): wait again.
        }
    }

    /// Completes at `deadline`, to the millisecond.
    #[cfg(not(target_os = "linux"))]
    pub async fn sleep_until(&mut self, deadline: Instant) -> std::io::Result<()> {
        self.armed = Some(deadline);
        tokio::time::sleep_until(deadline.into()).await;
        self.armed = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn sleeps_until_the_deadline_and_can_be_rearmed() {
        let mut t = PreciseTimer::new().unwrap();
        for ms in [3u64, 1, 2] {
            let deadline = Instant::now() + Duration::from_millis(ms);
            t.sleep_until(deadline).await.unwrap();
            assert!(Instant::now() >= deadline);
        }
        // A past deadline returns at once; a cancelled wait leaves no
        // stale expiry behind for the next one.
        t.sleep_until(Instant::now()).await.unwrap();
        let far = Instant::now() + Duration::from_secs(60);
        let r = tokio::time::timeout(Duration::from_millis(5), t.sleep_until(far)).await;
        assert!(r.is_err(), "a 60 s sleep ended early");
        let next = Instant::now() + Duration::from_millis(2);
        t.sleep_until(next).await.unwrap();
        assert!(Instant::now() >= next);
    }
}
