//! What one HTTP connection is doing, so the accept loop can close it when
//! it has been idle or half-sent too long, or shed it when the server is
//! full.
//!
//! A connection is in one of three phases:
//!
//! - **head**: bytes of a request head are arriving (or, right after the
//!   accept, nothing has arrived yet). It must become a request within the
//!   header-read timeout, measured from the accept or from the first byte
//!   after an idle spell: a slowloris connection dribbling a header, or an
//!   idle socket that never speaks, is closed then.
//! - **busy**: a request is being handled or its response (an SSE stream,
//!   say) is still being written. No connection timeout applies; the body
//!   read timeout is the handler's (see `body::read_body`).
//! - **idle**: the last response is done and nothing new has arrived. The
//!   keep-alive timeout closes it.
//!
//! [`Watched`] (around the socket) notices the first byte of a head;
//! [`Phase::begin`] (when hyper hands a request over) and the [`Busy`]
//! guard (dropped when the response body ends, or the request is dropped)
//! move between busy and idle.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use hyper::body::{Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

const HEAD: u8 = 0;
const BUSY: u8 = 1;
const IDLE: u8 = 2;

/// The timeouts that apply to a connection's phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseLimits {
    /// Most time from the accept (or the first byte after an idle spell)
    /// to a complete request head.
    pub header_read: Duration,
    /// Most time a connection may sit idle between requests.
    pub keep_alive: Duration,
}

/// The shared phase of one connection.
#[derive(Debug)]
pub struct Phase {
    epoch: Instant,
    phase: AtomicU8,
    /// Milliseconds since `epoch` when the current phase began.
    since_ms: AtomicU64,
    in_flight: AtomicU32,
    /// Asked to go by the accept loop (and not yet gone).
    shedding: AtomicBool,
    /// Woken on every phase change, so the connection task re-reads its deadline.
    pub changed: Notify,
    /// Woken when the accept loop wants this connection gone.
    pub evict: Notify,
}

impl Phase {
    /// A connection accepted now: in the head phase.
    pub fn new(epoch: Instant) -> Self {
        let p = Phase {
            epoch,
            phase: AtomicU8::new(HEAD),
            since_ms: AtomicU64::new(0),
            in_flight: AtomicU32::new(0),
            shedding: AtomicBool::new(false),
            changed: Notify::new(),
            evict: Notify::new(),
        };
        p.since_ms.store(p.now_ms(), Ordering::Relaxed);
        p
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn set(&self, phase: u8) {
        self.since_ms.store(self.now_ms(), Ordering::Relaxed);
        self.phase.store(phase, Ordering::Release);
        self.changed.notify_one();
    }

    /// Bytes arrived: an idle connection starts a request head.
    fn bytes_arrived(&self) {
        if self
            .phase
            .compare_exchange(IDLE, HEAD, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.since_ms.store(self.now_ms(), Ordering::Relaxed);
            self.changed.notify_one();
        }
    }

    /// A request head was parsed and handed to the router.
    pub fn begin(self: &Arc<Self>) -> Busy {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.set(BUSY);
        Busy(self.clone())
    }

    /// True while a request is handled or its response is being written.
    pub fn is_busy(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) > 0
    }

    /// Marks this connection to be shed: true if it was not marked and is
    /// not busy (then its task is woken to go).
    pub fn mark_shed(&self) -> bool {
        if self.is_busy() || self.shedding.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.evict.notify_one();
        true
    }

    /// True once [`Phase::mark_shed`] picked it.
    pub fn is_shedding(&self) -> bool {
        self.shedding.load(Ordering::Acquire)
    }

    /// Clears the mark (it turned busy before it could go).
    pub fn spared(&self) {
        self.shedding.store(false, Ordering::Release);
    }

    /// When the current phase began (for picking the longest-idle victim).
    pub fn since_ms(&self) -> u64 {
        self.since_ms.load(Ordering::Relaxed)
    }

    /// When the current phase runs out (`None`: busy, no limit).
    pub fn deadline(&self, limits: &PhaseLimits) -> Option<Instant> {
        let limit = match self.phase.load(Ordering::Acquire) {
            HEAD => limits.header_read,
            IDLE => limits.keep_alive,
            _ => return None,
        };
        Some(self.epoch + Duration::from_millis(self.since_ms()) + limit)
    }

    /// What the connection is doing, for logs.
    pub fn name(&self) -> &'static str {
        match self.phase.load(Ordering::Acquire) {
            HEAD => "reading a request head",
            IDLE => "idle",
            _ => "busy",
        }
    }
}

/// Held while one request is in flight; dropping it (the response body
/// ended, or the request was abandoned) ends the busy phase.
#[derive(Debug)]
pub struct Busy(Arc<Phase>);

impl Drop for Busy {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.set(IDLE);
        }
    }
}

/// A response body that keeps its request busy until it ends.
pub struct Tracked {
    inner: Body,
    busy: Option<Busy>,
}

impl Tracked {
    /// Wraps `inner`, holding `busy` until the last frame (or the drop).
    pub fn new(inner: Body, busy: Busy) -> Self {
        Tracked {
            inner,
            busy: Some(busy),
        }
    }
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            self.busy = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A socket that tells its [`Phase`] when bytes arrive.
pub struct Watched<S> {
    inner: S,
    phase: Arc<Phase>,
}

impl<S> Watched<S> {
    /// Watches `inner` for `phase`.
    pub fn new(inner: S, phase: Arc<Phase>) -> Self {
        Watched { inner, phase }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.phase.bytes_arrived();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: PhaseLimits = PhaseLimits {
        header_read: Duration::from_secs(10),
        keep_alive: Duration::from_secs(60),
    };

    #[test]
    fn phases_move_head_busy_idle_head() {
        let p = Arc::new(Phase::new(Instant::now()));
        let head = p
            .deadline(&LIMITS)
            .expect("a fresh connection has a deadline");
        assert!(head <= Instant::now() + LIMITS.header_read);
        assert_eq!(p.name(), "reading a request head");
        p.bytes_arrived(); // still the same head: the deadline does not move
        assert_eq!(p.deadline(&LIMITS), Some(head));
        let busy = p.begin();
        assert!(p.is_busy() && p.deadline(&LIMITS).is_none());
        let second = p.begin(); // pipelined
        drop(busy);
        assert!(p.is_busy(), "one request still in flight");
        drop(second);
        assert_eq!(p.name(), "idle");
        let idle = p.deadline(&LIMITS).unwrap();
        assert!(idle > head + Duration::from_secs(40));
        p.bytes_arrived();
        assert_eq!(p.name(), "reading a request head");
        assert!(p.deadline(&LIMITS).unwrap() < idle);
    }
}
