//! What one HTTP connection is doing, so the accept loop can close it when
//! it has been idle or half-sent too long, or shed it when the server is
//! full.
//!
//! A connection is in one of four phases:
//!
//! - **head**: bytes of a request head are arriving (or, right after the
//!   accept, nothing has arrived yet). It must become a request within the
//!   header-read timeout, measured from the accept or from the first byte
//!   after an idle spell: a slowloris connection dribbling a header, or an
//!   idle socket that never speaks, is closed then.
//! - **body**: a request was handed over and its body is still arriving.
//!   The body read timeout is the handler's (see `body::read_body`); at the
//!   connection cap the connection may be shed once its body has averaged
//!   less than `min_body_rate` bytes a second for longer than
//!   `body_grace` (a body trickled in to hold the connection), or once no
//!   byte of it has arrived for `body_grace` (a burst, then a stall: its
//!   average alone would hold the connection for as long as the burst
//!   bought).
//! - **busy**: a request is being handled or its response (an SSE stream,
//!   say) is still being written. No connection timeout applies and it is
//!   never shed.
//! - **idle**: the last response is done and nothing new has arrived. The
//!   keep-alive timeout closes it.
//!
//! A busy connection whose response waits on its client (a 2025-11-25
//! `tools/call` stream or GET stream waiting for an answer, see
//! [`Parking`]) is *parked*: like a body still arriving, it is what the
//! accept loop may shed under pressure, from the largest holder first
//! (see `super::accept`); its handler is told ([`Parked::shed`]) so it can
//! end its stream with an error rather than a cut.
//!
//! [`Watched`] (around the socket) notices the first byte of a head;
//! [`Phase::begin`] (when hyper hands a request over), [`Inbound`] (around
//! the request body: counts its bytes, ends the body phase) and the
//! [`Busy`] guard (dropped when the response body ends, or the request is
//! dropped) move between the phases. Every change re-files the connection
//! in its [`Registry`] (see [`super::shed_index`]).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use hyper::body::{Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use super::holder::{Holder, HolderTable, OverShare};
use super::shed_index::{Check, ShedIndex};

const HEAD: u8 = 0;
const BUSY: u8 = 1;
const IDLE: u8 = 2;
const BODY: u8 = 3;

/// How long a connection with a request waiting unread in its socket is
/// spared before it is asked again (see [`Phase::shed_check`]).
pub const UNREAD_SPARE_MS: u64 = 100;

/// The limits that apply to a connection's phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseLimits {
    /// Most time from the accept (or the first byte after an idle spell)
    /// to a complete request head.
    pub header_read: Duration,
    /// Most time a connection may sit idle between requests.
    pub keep_alive: Duration,
    /// How long a request body may arrive at any pace before it can count
    /// as slow.
    pub body_grace: Duration,
    /// Bytes a second a body must average, from its head on, not to count
    /// as slow once `body_grace` is over; a body that stalls for
    /// `body_grace` counts as slow too (0: a body never does).
    pub min_body_rate: u64,
}

/// Every open connection: its phase by id, the sheddable ones in shed
/// order, and who holds how many.
pub struct Conns {
    /// Phases by id, in shed order.
    pub index: ShedIndex<Arc<Phase>>,
    /// Holders and their connections.
    pub holders: HolderTable,
}

impl Conns {
    /// No connection yet; a holder may hold `share` of them.
    pub fn new(share: usize) -> Self {
        Conns {
            index: ShedIndex::default(),
            holders: HolderTable::new(share),
        }
    }
}

/// The connection registry of one server.
pub type Registry = Mutex<Conns>;

/// Locks `reg`, poisoned or not: every update under the lock is a few map
/// operations that leave it consistent.
pub fn lock(reg: &Registry) -> MutexGuard<'_, Conns> {
    reg.lock().unwrap_or_else(|p| p.into_inner())
}

/// Milliseconds from `epoch` to now: the clock of shed keys.
pub fn ms_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The shared phase of one connection.
#[derive(Debug)]
pub struct Phase {
    epoch: Instant,
    limits: PhaseLimits,
    phase: AtomicU8,
    /// Milliseconds since `epoch` when the current phase began.
    since_ms: AtomicU64,
    in_flight: AtomicU32,
    /// Bytes of the request body received in the body phase.
    body_bytes: AtomicU64,
    /// Milliseconds since `epoch` when the body's last bytes arrived (or
    /// its phase began).
    body_last_ms: AtomicU64,
    /// A request body began and has not been read to its end (so far, or
    /// at all: the handler answered without it).
    body_unread: AtomicBool,
    /// The registry this connection is filed in, and its id there.
    filed: Option<(Weak<Registry>, u64)>,
    /// Its [`Holder`] (raw), changed under the registry's lock.
    holder: AtomicU64,
    /// Responses in flight that wait on the client ([`Parking::park`]).
    parked: AtomicU32,
    /// Shed under pressure: its parked handlers end, it closes.
    shed: AtomicBool,
    /// Wakes parked handlers when it is shed.
    shed_wake: Notify,
    /// The socket's descriptor (-1: none known), to see whether a request
    /// is waiting unread in it.
    socket: AtomicI32,
    /// Woken on every phase change, so the connection task re-reads its deadline.
    pub changed: Notify,
    /// Woken when the accept loop wants this connection gone.
    pub evict: Notify,
}

impl Phase {
    /// A connection accepted now, in the head phase, filed nowhere.
    #[cfg(test)]
    pub fn new(epoch: Instant, limits: PhaseLimits) -> Self {
        Self::filed_in(epoch, limits, None)
    }

    fn filed_in(epoch: Instant, limits: PhaseLimits, filed: Option<(Weak<Registry>, u64)>) -> Self {
        Phase {
            epoch,
            limits,
            phase: AtomicU8::new(HEAD),
            since_ms: AtomicU64::new(ms_since(epoch)),
            in_flight: AtomicU32::new(0),
            body_bytes: AtomicU64::new(0),
            body_last_ms: AtomicU64::new(0),
            body_unread: AtomicBool::new(false),
            filed,
            holder: AtomicU64::new(Holder::NOBODY.raw()),
            parked: AtomicU32::new(0),
            shed: AtomicBool::new(false),
            shed_wake: Notify::new(),
            socket: AtomicI32::new(-1),
            changed: Notify::new(),
            evict: Notify::new(),
        }
    }

    /// A connection accepted now, filed in `reg` under `id` (remove it
    /// from there when it closes).
    pub fn open(reg: &Arc<Registry>, id: u64, epoch: Instant, limits: PhaseLimits) -> Arc<Self> {
        let p = Arc::new(Self::filed_in(
            epoch,
            limits,
            Some((Arc::downgrade(reg), id)),
        ));
        let mut c = lock(reg);
        c.index.insert(id, p.clone(), p.shed_key());
        drop(c);
        p
    }

    /// Makes `holder` the holder of this connection (from its next request
    /// on); refused when `holder` holds its share of connections already:
    /// the connection then closes after its refusal, and no longer counts
    /// against the cap. Free (no lock) when it holds the connection already.
    pub fn claim(&self, holder: Holder) -> Result<(), OverShare> {
        if self.holder() == holder {
            return Ok(());
        }
        let Some((reg, id)) = &self.filed else {
            self.holder.store(holder.raw(), Ordering::Relaxed);
            return Ok(());
        };
        let Some(reg) = reg.upgrade() else {
            return Ok(());
        };
        let mut c = lock(&reg);
        if let Err(e) = c.holders.assign(*id, self.holder(), holder) {
            c.index.mark_leaving(*id);
            return Err(e);
        }
        self.holder.store(holder.raw(), Ordering::Relaxed);
        Ok(())
    }

    /// Who holds the connection.
    pub fn holder(&self) -> Holder {
        Holder::from_raw(self.holder.load(Ordering::Relaxed))
    }

    /// True when the accept loop may shed it under pressure: a body is
    /// arriving (however fast, grace or not) or a response waits on the
    /// client.
    pub fn sheddable_under_pressure(&self) -> bool {
        self.phase.load(Ordering::Acquire) == BODY || self.parked.load(Ordering::Acquire) > 0
    }

    /// Sheds it under pressure: parked handlers are told to end, and the
    /// connection task to close it once they did (or at once, in the body
    /// phase).
    pub fn shed_under_pressure(&self) {
        self.shed.store(true, Ordering::Release);
        self.shed_wake.notify_waiters();
        self.evict.notify_one();
    }

    /// Shed under pressure ([`Phase::shed_under_pressure`]).
    pub fn is_shed(&self) -> bool {
        self.shed.load(Ordering::Acquire)
    }

    /// Files the connection under its current shed key; the key is read
    /// under the lock, so the last of racing updates files the last state.
    fn refile(&self) {
        if let Some((reg, id)) = &self.filed
            && let Some(reg) = reg.upgrade()
        {
            let mut c = lock(&reg);
            c.index.set_key(*id, self.shed_key());
        }
    }

    fn set(&self, phase: u8) {
        self.since_ms.store(ms_since(self.epoch), Ordering::Relaxed);
        self.phase.store(phase, Ordering::Release);
        self.refile();
        self.changed.notify_one();
    }

    /// Moves from phase `from` to `to`; false if it was not in `from`.
    fn advance(&self, from: u8, to: u8) -> bool {
        if self
            .phase
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        self.since_ms.store(ms_since(self.epoch), Ordering::Relaxed);
        self.refile();
        self.changed.notify_one();
        true
    }

    /// Bytes arrived: an idle connection starts a request head.
    fn bytes_arrived(&self) {
        self.advance(IDLE, HEAD);
    }

    /// A request head was parsed and handed to the router; `has_body`
    /// when a body is still to come (the body phase, unless another
    /// request is in flight).
    pub fn begin(self: &Arc<Self>, has_body: bool) -> Busy {
        let first = self.in_flight.fetch_add(1, Ordering::AcqRel) == 0;
        self.body_unread.store(has_body, Ordering::Relaxed);
        if first && has_body {
            self.body_bytes.store(0, Ordering::Relaxed);
            self.body_last_ms
                .store(ms_since(self.epoch), Ordering::Relaxed);
            self.set(BODY);
        } else {
            self.set(BUSY);
        }
        Busy(self.clone())
    }

    /// `n` more bytes of the request body arrived.
    fn body_read(&self, n: usize) {
        self.body_read_at(n, ms_since(self.epoch));
    }

    /// `n` more bytes of the request body arrived at `now` ([`ms_since`]).
    fn body_read_at(&self, n: usize, now: u64) {
        self.body_bytes
            .fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Relaxed);
        self.body_last_ms.fetch_max(now, Ordering::Relaxed);
    }

    /// The request body ended (or was dropped unread): busy until the
    /// response is done.
    fn body_done(&self) {
        self.advance(BODY, BUSY);
    }

    /// Whether the body of the request in flight was left unread: its
    /// handler answered without reading to its end (a 401 before the
    /// body, a 413, a 408). The rest of it is still on the wire, so the
    /// connection cannot carry another request.
    pub fn body_unread(&self) -> bool {
        self.body_unread.load(Ordering::Relaxed)
    }

    /// True while a request is in flight (its body, its handling, or its
    /// response).
    pub fn is_busy(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) > 0
    }

    /// True when the connection may go now it was asked to: nothing in
    /// flight, or only a body still arriving.
    pub fn may_leave(&self) -> bool {
        !self.is_busy() || self.phase.load(Ordering::Acquire) == BODY
    }

    /// When this connection became sheddable, in [`ms_since`] time: the
    /// start of its head or idle spell, or the moment its body falls below
    /// the rate floor if no more of it arrives, or has stalled for the
    /// grace, whichever comes first; `None` while busy.
    pub fn shed_key(&self) -> Option<u64> {
        let since = self.since_ms.load(Ordering::Relaxed);
        match self.phase.load(Ordering::Acquire) {
            HEAD | IDLE => Some(since),
            BODY if self.limits.min_body_rate > 0 => {
                let grace = ms(self.limits.body_grace);
                let bytes = self.body_bytes.load(Ordering::Relaxed);
                let earned = bytes.saturating_mul(1000) / self.limits.min_body_rate;
                let below_floor = since.saturating_add(earned.max(grace));
                let stalled = self
                    .body_last_ms
                    .load(Ordering::Relaxed)
                    .saturating_add(grace);
                Some(below_floor.min(stalled))
            }
            _ => None,
        }
    }

    /// The accept loop's question at `now`: shed it (then it is told to
    /// go), not before some later time, or not while busy. A connection
    /// between requests (or not through its first head) with bytes waiting
    /// unread in its socket is not useless: its request is there, the
    /// server has not got to it yet (a busy runtime); it is asked again
    /// [`UNREAD_SPARE_MS`] later.
    pub fn shed_check(&self, now: u64) -> Check {
        match self.shed_key() {
            None => Check::Never,
            Some(k) if k > now => Check::NotBefore(k),
            Some(_) if self.phase.load(Ordering::Acquire) != BODY && self.has_unread_bytes() => {
                Check::NotBefore(now + UNREAD_SPARE_MS)
            }
            Some(_) => {
                self.evict.notify_one();
                Check::Go
            }
        }
    }

    /// Watches socket `fd` for [`Phase::shed_check`] (Unix; elsewhere a
    /// no-op).
    pub fn watch_socket(&self, fd: i32) {
        self.socket.store(fd, Ordering::Relaxed);
    }

    /// True when bytes wait unread in the connection's socket.
    fn has_unread_bytes(&self) -> bool {
        let fd = self.socket.load(Ordering::Relaxed);
        if fd < 0 {
            return false;
        }
        #[cfg(unix)]
        {
            let mut n: libc::c_int = 0;
            // SAFETY: FIONREAD writes one int we own; on a descriptor that
            // is no longer this socket it fails or answers for another,
            // which only delays one shed decision.
            let r = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
            r == 0 && n > 0
        }
        #[cfg(not(unix))]
        {
            false
        }
    }

    /// Asked to go but turned busy first: counts against the cap again.
    pub fn spared(&self) {
        if let Some((reg, id)) = &self.filed
            && let Some(reg) = reg.upgrade()
        {
            lock(&reg).index.spare(*id);
        }
    }

    /// When the current phase runs out (`None`: body or busy, no limit here).
    pub fn deadline(&self) -> Option<Instant> {
        let limit = match self.phase.load(Ordering::Acquire) {
            HEAD => self.limits.header_read,
            IDLE => self.limits.keep_alive,
            _ => return None,
        };
        Some(self.epoch + Duration::from_millis(self.since_ms.load(Ordering::Relaxed)) + limit)
    }

    /// What the connection is doing, for logs.
    pub fn name(&self) -> &'static str {
        match self.phase.load(Ordering::Acquire) {
            HEAD => "reading a request head",
            BODY => "reading a request body",
            IDLE => "idle",
            _ => "busy",
        }
    }
}

/// A handle on its connection that a handler finds in the request's
/// extensions (served by the accept loop; an in-process router has none),
/// to mark a response that waits on the client.
#[derive(Clone)]
pub struct Parking(Arc<Phase>);

impl Parking {
    /// The handle of `phase`'s connection.
    pub fn new(phase: Arc<Phase>) -> Self {
        Parking(phase)
    }

    /// Marks the response as waiting on the client until the guard drops.
    pub fn park(&self) -> Parked {
        self.0.parked.fetch_add(1, Ordering::AcqRel);
        Parked(self.0.clone())
    }
}

/// A response waiting on its client (see [`Parking::park`]).
pub struct Parked(Arc<Phase>);

impl Parked {
    /// Resolves once the connection is shed under pressure: the handler
    /// ends its response (with an error, so the client knows) and the
    /// connection closes.
    pub async fn shed(&self) {
        loop {
            let woken = self.0.shed_wake.notified();
            if self.0.is_shed() {
                return;
            }
            woken.await;
        }
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        self.0.parked.fetch_sub(1, Ordering::AcqRel);
    }
}

/// [`Parked::shed`] of an optional guard (never, without one).
pub async fn shed(parked: Option<&Parked>) {
    match parked {
        Some(p) => p.shed().await,
        None => std::future::pending().await,
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

/// A request body that counts its bytes into its connection's [`Phase`]
/// and ends the body phase when it ends or is dropped unread.
pub struct Inbound<B> {
    inner: B,
    phase: Option<Arc<Phase>>,
}

impl<B> Inbound<B> {
    /// Wraps the body of the request `phase` just began.
    pub fn new(inner: B, phase: Arc<Phase>) -> Self {
        Inbound {
            inner,
            phase: Some(phase),
        }
    }

    fn done(&mut self) {
        if let Some(p) = self.phase.take() {
            p.body_done();
        }
    }

    /// The body was read to its end.
    fn ended(&mut self) {
        if let Some(p) = &self.phase {
            p.body_unread.store(false, Ordering::Relaxed);
        }
        self.done();
    }
}

impl<B> Drop for Inbound<B> {
    fn drop(&mut self) {
        self.done();
    }
}

impl<B: hyper::body::Body<Data = Bytes> + Unpin> hyper::body::Body for Inbound<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(p)) = (frame.data_ref(), &self.phase) {
                    p.body_read(data.len());
                }
                if self.inner.is_end_stream() {
                    self.ended();
                }
            }
            Poll::Ready(None) => self.ended(),
            Poll::Ready(Some(Err(_))) => self.done(),
            Poll::Pending => {}
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
        body_grace: Duration::from_secs(2),
        min_body_rate: 1000,
    };

    #[test]
    fn phases_move_head_busy_idle_head() {
        let p = Arc::new(Phase::new(Instant::now(), LIMITS));
        let head = p.deadline().expect("a fresh connection has a deadline");
        assert!(head <= Instant::now() + LIMITS.header_read);
        assert_eq!(p.name(), "reading a request head");
        p.bytes_arrived(); // still the same head: the deadline does not move
        assert_eq!(p.deadline(), Some(head));
        let busy = p.begin(false);
        assert!(p.is_busy() && p.deadline().is_none() && !p.may_leave());
        assert_eq!(p.shed_key(), None);
        let second = p.begin(true); // pipelined: busy, not a body phase
        assert_eq!(p.name(), "busy");
        drop(busy);
        assert!(p.is_busy(), "one request still in flight");
        drop(second);
        assert_eq!(p.name(), "idle");
        assert!(p.may_leave());
        let idle = p.deadline().unwrap();
        assert!(idle > head + Duration::from_secs(40));
        p.bytes_arrived();
        assert_eq!(p.name(), "reading a request head");
        assert!(p.deadline().unwrap() < idle);
    }

    #[test]
    fn a_body_is_sheddable_once_below_the_rate_floor_after_the_grace() {
        let reg = Arc::new(Registry::new(Conns::new(64)));
        let epoch = Instant::now() - Duration::from_secs(100);
        let p = Phase::open(&reg, 7, epoch, LIMITS);
        let busy = p.begin(true);
        assert_eq!(p.name(), "reading a request body");
        assert!(p.may_leave() && p.deadline().is_none());
        let start = p.since_ms.load(Ordering::Relaxed);
        // Within the grace whatever has arrived.
        assert_eq!(p.shed_key(), Some(start + 2_000));
        assert_eq!(p.shed_check(start + 1_999), Check::NotBefore(start + 2_000));
        // 5,000 bytes at 1,000 B/s buy 5 s from the start; the last of
        // them at 4.5 s keeps the stall rule (2 s of nothing) beyond that.
        p.body_read_at(5_000, start + 4_500);
        assert_eq!(p.shed_key(), Some(start + 5_000));
        // The registry holds the stale key until a pick re-files it.
        let picked = lock(&reg)
            .index
            .pick(start + 4_000, |c| c.shed_check(start + 4_000))
            .is_some();
        assert!(!picked, "not slow yet");
        let mut c = lock(&reg);
        assert!(
            c.index
                .pick(start + 5_000, |c| c.shed_check(start + 5_000))
                .is_some()
        );
        assert_eq!(c.index.staying(), 0);
        drop(c);
        p.spared();
        assert_eq!(lock(&reg).index.staying(), 1);
        // The body ends: busy, not sheddable, however slow it was.
        let mut body = Inbound::new(Body::empty(), p.clone());
        body.done();
        assert_eq!(
            (p.name(), p.shed_key(), p.may_leave()),
            ("busy", None, false)
        );
        assert!(
            lock(&reg)
                .index
                .pick(u64::MAX, |c| c.shed_check(u64::MAX))
                .is_none()
        );
        drop(busy);
        assert_eq!(p.name(), "idle");
        assert!(
            lock(&reg)
                .index
                .pick(u64::MAX, |c| c.shed_check(u64::MAX))
                .is_some()
        );
    }

    #[test]
    fn a_body_that_bursts_then_stalls_is_sheddable_a_grace_after_its_last_byte() {
        let p = Arc::new(Phase::new(
            Instant::now() - Duration::from_secs(100),
            LIMITS,
        ));
        let _busy = p.begin(true);
        let start = p.since_ms.load(Ordering::Relaxed);
        // 900 kB at once would buy 900 s at the floor's 1,000 B/s.
        p.body_read_at(900_000, start + 100);
        assert_eq!(p.shed_key(), Some(start + 2_100));
        assert_eq!(p.shed_check(start + 2_099), Check::NotBefore(start + 2_100));
        assert_eq!(p.shed_check(start + 2_100), Check::Go);
        // More bytes move the stall on; a late, stale clock reading does not
        // move it back.
        p.body_read_at(1, start + 3_000);
        p.body_read_at(1, start + 2_500);
        assert_eq!(p.shed_key(), Some(start + 5_000));
    }

    #[cfg(unix)]
    #[test]
    fn a_connection_with_a_request_waiting_unread_is_not_shed() {
        use std::io::{Read as _, Write as _};
        use std::os::fd::AsRawFd as _;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let p = Arc::new(Phase::new(Instant::now(), LIMITS));
        p.watch_socket(server.as_raw_fd());
        let later = ms_since(p.epoch) + 60_000;
        assert_eq!(p.shed_check(later), Check::Go, "a silent head goes");
        client.write_all(b"GET / HTTP/1.1\r\n").unwrap();
        let deadline = Instant::now() + Duration::from_secs(2);
        while !p.has_unread_bytes() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            p.shed_check(later),
            Check::NotBefore(later + UNREAD_SPARE_MS),
            "its request is waiting"
        );
        let mut buf = [0u8; 64];
        let _ = server.read(&mut buf).unwrap();
        assert_eq!(p.shed_check(later), Check::Go);
    }

    #[test]
    fn a_body_dropped_unread_ends_the_body_phase() {
        let p = Arc::new(Phase::new(Instant::now(), LIMITS));
        let _busy = p.begin(true);
        drop(Inbound::new(Body::empty(), p.clone()));
        assert_eq!(p.name(), "busy");
        let none = PhaseLimits {
            min_body_rate: 0,
            ..LIMITS
        };
        let q = Arc::new(Phase::new(Instant::now(), none));
        let _busy = q.begin(true);
        assert_eq!(q.shed_key(), None, "a zero floor never sheds a body");
    }
}
